use parray::prelude::*;

parray! {
    paged float [4] V;
}

fn main() {
    let _ = host! { $V[1] + 1 };
}
