// A `let` the subset rejects is reported once; its names are not then taken for host
// variables where they are used.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        let (x, y) = (1.0f32, 2.0f32);
        v[$V[$tid$]$] = x + y;
    })
}
