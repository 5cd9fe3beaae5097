// Vector accesses are typed like the rest of a body, on every back end alike: `load4` on
// a pointer to `f64` (there is no 4-lane vector of `f64`) is an error at the method that
// says what exists, a store of another type than the vector an error at the value, and
// arithmetic on a vector of 16-bit elements (which is only moved) an error at the operand.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    dmem double [64] D;
    dmem bf16 [64] B;
    cuda(float* v, double* d, bf16* b) [2][8] CT;
}

fn main() -> parray::Result<()> {
    let (mut v, d, mut b) = (V::create()?, D::create()?, B::create()?);
    detour!(CT(&mut v, &d, &mut b) {
        let w = d.load4($D[$tid$ * 4]$);
        v.store2($V[$tid$ * 2]$, 1.5f32);
        v.store4(0, w);
        let p = b.load2($B[$tid$ * 2]$);
        b.store2($B[$tid$ * 2]$, p * p);
    })?;
    Ok(())
}
