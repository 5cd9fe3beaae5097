// A thread array's sizes are numbers (for now): one sized by a run-time size is an error
// that says how to cover run-time data with a fixed grid.
use parray::prelude::*;

parray! {
    const N;
    cuda(float* a) [N][64] GRID;
}

fn main() {}
