// An `mbarrier` lives in a block's shared memory (SPEC 3.9, "TMA copies").
use parray::prelude::*;

parray! {
    dmem mbarrier [4] BARS;
}

fn main() {}
