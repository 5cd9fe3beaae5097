use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* a, float* b) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(v) {
        a[$V[$tid$]$] = 1.0;
    })
}
