// A call of a function is typed against its signature.
use parray::prelude::*;

#[parray::func]
fn axpy(a: f32, x: f32, y: f32) -> f32 {
    a * x + y
}

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        v[$V[$tid$]$] = axpy(2.0f32, $tid$ as f32);
        v[$V[$tid$]$] = axpy(2.0f32, $tid$ as f64, 1.0f32);
    })?;
    Ok(())
}
