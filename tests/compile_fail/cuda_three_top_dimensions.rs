// A cuda thread array is a grid and a block: exactly two top-level dimensions.
use parray::prelude::*;

parray! {
    cuda(float* a) [4][8][16] THREE;
}

fn main() {}
