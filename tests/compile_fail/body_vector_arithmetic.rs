// Vector values take `+ - * /` lane by lane, with a vector of their type or a scalar of
// their lane type: a comparison of vectors, a vector of another type, a lane of another
// type and a scalar that would hold a vector are errors at the token, saying what exists.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    dmem int [64] I;
    cuda(float* v, int* i) [2][8] CT;
}

fn main() -> parray::Result<()> {
    let (mut v, i) = (V::create()?, I::create()?);
    detour!(CT(&mut v, &i) {
        let p = v.load4($V[$tid$ * 4]$);
        let q = i.load4($I[$tid$ * 4]$);
        let less = p < p;
        let mixed = p + q;
        let lane = p * 2i32;
        let mut s = 1.0f32;
        s += p;
        v.store4($V[$tid$ * 4]$, p);
    })?;
    Ok(())
}
