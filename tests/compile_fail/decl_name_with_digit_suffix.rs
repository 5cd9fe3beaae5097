// `M_1` would read as sub-dimension 1 of `M` inside `$...$`.
use parray::prelude::*;

parray! {
    paged float [4][4] M_1;
}

fn main() {}
