// A pthd array synchronises as a whole: `#sync_1` and deeper levels are for cuda blocks.
use parray::prelude::*;

parray! {
    pthd [2][2] T;
}

fn main() -> parray::Result<()> {
    detour!(T {
        #sync_7;
    })
}
