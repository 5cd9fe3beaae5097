// `A` has two top-level dimensions, `A_0` and `A_1`: there is no `A_2`.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    float [#A_2][#A_0] B;
}

fn main() {}
