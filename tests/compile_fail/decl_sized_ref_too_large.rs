// `n#R` takes a prefix of R: n must not exceed |R| = 3.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    float [#A_0][5#A_1] B;
}

fn main() {}
