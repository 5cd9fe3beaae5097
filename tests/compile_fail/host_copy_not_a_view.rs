// A host `#copy` into an array of a type the named destination type does not view: the
// error names both types and says how to declare the view.
use parray::prelude::*;

parray! {
    paged float [4][8] A;
    paged float [8][4] B;
    paged float [32] FLAT;
}

fn main() -> parray::Result<()> {
    let (a, mut flat) = (A::create()?, FLAT::create()?);
    host! {
        #copy A(a) to B(flat);
    }
    Ok(())
}
