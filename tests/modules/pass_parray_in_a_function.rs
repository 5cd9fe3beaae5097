// `parray!` inside a function compiles without warnings (its companion macros are exported
// from there, which rustc would otherwise warn about).
#![deny(warnings)]

use parray::prelude::*;

fn main() {
    parray! { paged float [4] A; }
    let n = host! { $size(A)$ };
    assert_eq!(n, 4);
}
