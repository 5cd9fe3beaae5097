use parray::prelude::*;

parray! {
    paged float [4][4] 2D;
}

fn main() {}
