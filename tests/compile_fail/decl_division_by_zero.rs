use parray::prelude::*;

parray! {
    const N = 4;
    paged float [8 / (N - 4)] A;
}

fn main() {}
