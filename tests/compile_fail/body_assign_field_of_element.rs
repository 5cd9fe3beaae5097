// A field of an element is not a place in a body: write the whole element.
use parray::prelude::*;

parray! {
    dmem float2 [64] V;
    cuda(float2* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(&v) {
        v[$tid$].x = 1.0f32;
    })?;
    Ok(())
}
