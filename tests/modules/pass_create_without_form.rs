// `S::create()` in a cuda body, where no `$...$` form names `S` (declared in another block).
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

// In a block of its own: V's and CT's companions do not carry it.
parray! {
    smem float [4][17] S;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(v) {
        let s = S::create();
        v[$V[$tid$]$] = 1.0;
    })?;
    Ok(())
}
