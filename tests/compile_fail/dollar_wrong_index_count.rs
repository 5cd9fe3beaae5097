use parray::prelude::*;

parray! {
    paged float [4][3] A;
}

fn main() {
    let _ = host! { $A[1][2][0]$ };
}
