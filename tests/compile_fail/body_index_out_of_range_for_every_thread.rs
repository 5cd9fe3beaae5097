// An index that no thread can keep inside its dimension is a compile error: the ranges of
// thread indices and loop variables are known when the detour is compiled.
use parray::prelude::*;

parray! {
    dmem float [1024] VEC;
    cuda(float* v) [4][256] CT;
}

fn main() -> parray::Result<()> {
    let mut v = VEC::create()?;
    detour!(CT(&mut v) {
        v[$VEC[$tid$ + 1024]$] = 1.0f32;
    })
}
