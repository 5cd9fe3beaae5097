// A cuda detour's body names the kernel's parameters (`a`), bound to the arguments (`v`).
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* a) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(v) {
        a[$V[$tid$]$] = 1.0;
    })?;
    Ok(())
}
