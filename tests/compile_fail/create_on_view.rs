// A type without a memory kind is a pure view: no `create()`.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    float [#A_1][#A_0] B;
}

fn main() {
    let _ = B::create();
}
