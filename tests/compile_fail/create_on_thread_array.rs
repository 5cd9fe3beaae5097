// Thread arrays have no storage: no `create()`.
use parray::prelude::*;

parray! {
    pthd [2][2] MY_TA;
}

fn main() {
    let _ = MY_TA::create();
}
