// A run-time type's forms give one index per top-level dimension (for now): a nested
// index is an error at its brackets.
use parray::prelude::*;

parray! {
    const N;
    paged float [[N][2]][N] M;
}

fn main() {
    let i = 1usize;
    let _ = host! { $M[[i][1]][0]$ };
}
