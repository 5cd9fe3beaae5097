use parray::prelude::*;

parray! {
    paged float [4][3] A;
}

fn main() {
    let _ = host! { $dim_0_0(A)$ };
}
