// A pointer borrows its array: the array cannot be dropped while the pointer is in use.
use parray::prelude::*;

parray! {
    paged float [16] B;
}

fn main() -> parray::Result<()> {
    let b = B::create()?;
    let p = &b + 10;
    drop(b);
    let _ = p.load(0);
    Ok(())
}
