// `#[unroll(N)]` takes a number known when the body is compiled: a literal or a size of a
// type with literal sizes, not a value the body computes.
use parray::prelude::*;

parray! {
    dmem float [256] V;
    cuda(float* v, int n) [1][256] G;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(G(&mut v, 4i32) {
        let mut s = 0.0f32;
        #[unroll(n)]
        for j in 0..8 {
            s += j as f32;
        }
        #[unroll($dim(V_0)$ - 256)]
        for j in 0..8 {
            s += j as f32;
        }
        v[$V[$tid_1$]$] = s;
    })
}
