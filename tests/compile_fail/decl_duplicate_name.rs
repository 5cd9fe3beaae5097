use parray::prelude::*;

parray! {
    paged float [4] A;
    paged int [8] A;
}

fn main() {}
