use parray::prelude::*;

parray! {
    paged float [4][4] cuda;
}

fn main() {}
