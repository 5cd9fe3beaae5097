// A function over arrays of `M` does not take an array of another type.
use parray::prelude::*;

parray! {
    paged float [1024][1024] M;
    paged float [16] SMALL;
}

fn clear(a: &mut Array<M>) {
    a.set([0, 0], 0.0);
}

fn main() -> parray::Result<()> {
    let mut small = SMALL::create()?;
    clear(&mut small);
    Ok(())
}
