// A cuda body sees only its kernel parameters and its own locals: a host scalar is refused.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    let scale = 2.0f32;
    detour!(CT(&v) {
        v[$V[$tid$]$] = scale;
    })?;
    Ok(())
}
