// A host value's type in a cuda body is the one its uses give it; a host variable of
// another type is rustc's error at the name in the body.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    let scale = 2.0f64;
    detour!(CT(&mut v) {
        v[$V[$tid$]$] = scale * 3.0f32;
    })?;
    Ok(())
}
