// Only `println!` and `print!` may appear in a detour body (a nested `detour!` included:
// call a function that detours instead).
use parray::prelude::*;

parray! {
    pthd [4] T;
}

fn main() -> parray::Result<()> {
    detour!(T {
        assert!($tid$ < 4);
    })
}
