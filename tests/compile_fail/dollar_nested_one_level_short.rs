// A type with one top-level group, indexed as if it had two: the message says what was
// meant and how to write it.
use parray::prelude::*;

parray! {
    const P = 4;
    const N = 32;
    paged long [[P][N / P]] X;
    pthd [4] T;
}

fn main() -> parray::Result<()> {
    let mut x = X::create()?;
    detour!(T {
        for k in 0..8 {
            x[$X[[$tid$][k]]$] = 1;
        }
    })
}
