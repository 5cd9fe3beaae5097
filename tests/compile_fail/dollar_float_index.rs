// Indices are integers.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
}

fn main() {
    let f = 1.5f64;
    let _ = host! { $A[f][0]$ };
}
