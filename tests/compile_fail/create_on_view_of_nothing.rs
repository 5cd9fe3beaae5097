// A view of no storage that host code can create (here only smem) says so.
use parray::prelude::*;

parray! {
    smem float [4][3] S;
    float [#S_1][#S_0] V;
}

fn main() {
    let _ = V::create();
}
