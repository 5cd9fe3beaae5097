// A cuda body cannot call Rust functions (only `atomic_add` and the math methods).
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn twice(x: f32) -> f32 {
    2.0 * x
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(&v) {
        v[$V[$tid$]$] = twice(1.0f32);
    })?;
    Ok(())
}
