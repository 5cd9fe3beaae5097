// A subprogram needs a type parameter, and `type` (Fig 21's name) is a Rust keyword.
use parray::prelude::*;

subprog! {
    fn no_types(m) {
        let _ = m;
    }
}

subprog! {
    fn keyword<type>(m) {
        let _ = m;
    }
}

fn main() {}
