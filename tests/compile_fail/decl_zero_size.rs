// A dimension of size zero.
use parray::prelude::*;

parray! {
    paged float [4][2 - 2] A;
}

fn main() {}
