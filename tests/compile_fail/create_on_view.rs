// A type without a memory kind is a pure view: its `create()` says to create the storage
// it views and look at it as the view.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    float [#A_1][#A_0] B;
}

fn main() -> parray::Result<()> {
    let b = B::create()?;
    let _ = b.at([0, 0]);
    Ok(())
}
