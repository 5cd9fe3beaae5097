// A type with a reference is artificial: a natural leaf `[4]` has no offsets there.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    float [#A_1][4] B;
}

fn main() {}
