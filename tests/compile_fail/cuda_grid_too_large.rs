// A grid's y dimension is limited to 65535 blocks.
use parray::prelude::*;

parray! {
    cuda(float* a) [[70000][2]][32] TALL;
}

fn main() {}
