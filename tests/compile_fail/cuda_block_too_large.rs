// A cuda block of 2048 threads: CUDA allows at most 1024.
use parray::prelude::*;

parray! {
    cuda(float* a) [4][[32][64]] BIG_BLOCKS;
}

fn main() {}
