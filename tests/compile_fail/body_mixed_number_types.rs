// Rust converts no number implicitly, on every back end alike: an `i32` plus an `f32` is
// an error at the operator's right operand, with a hint to cast. All such errors of a
// body come together.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v, int n) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(&v, 3) {
        let x = v[$V[$tid$]$];
        v[$V[$tid$]$] = n + x;
        let k = 2;
        v[$V[$tid$]$] = x * k;
    })?;
    Ok(())
}
