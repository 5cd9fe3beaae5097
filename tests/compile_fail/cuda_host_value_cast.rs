// A cuda body receives a host value by value, typed by its uses; a cast does not fix the
// type (the kernel's parameter needs one), and the error says how to.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    let scale = 2.0f64;
    detour!(CT(&mut v) {
        v[$V[$tid$]$] = scale as f32;
    })?;
    Ok(())
}
