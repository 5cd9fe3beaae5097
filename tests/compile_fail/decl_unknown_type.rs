// A reference to a type that no `parray!` block in scope declares.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    float [#A_1][#Z_0] B;
}

fn main() {}
