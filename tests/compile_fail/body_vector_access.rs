// Vector accesses are typed like the rest of a body, on every back end alike: `load4` on
// a pointer to `f64` (there is no 4-lane vector of `f64`) is an error at the method that
// says what exists, and a store of another type than the vector an error at the value.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    dmem double [64] D;
    cuda(float* v, double* d) [2][8] CT;
}

fn main() -> parray::Result<()> {
    let (mut v, d) = (V::create()?, D::create()?);
    detour!(CT(&mut v, &d) {
        let w = d.load4($D[$tid$ * 4]$);
        v.store2($V[$tid$ * 2]$, 1.5f32);
        v.store4(0, w);
    })?;
    Ok(())
}
