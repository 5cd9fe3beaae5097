// `#[parray::func]` cannot take a `$...$` form: rustc parses the function before the
// attribute sees it, and `$` is no Rust expression. `parray::funcs!` takes them.
use parray::prelude::*;

parray! {
    dmem float [4][8] M;
}

#[parray::func]
fn element(a: parray::Ptr<'_, f32>, i: usize, j: usize) -> f32 {
    a[$M[i][j]$]
}

fn main() {}
