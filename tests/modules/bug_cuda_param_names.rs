// Should compile and run: a cuda detour's body names the kernel's parameters (`a`), which
// the arguments (`v`) are bound to. Under the CPU emulation the body's `a` is not found
// ("cannot find value `a` in this scope") unless a host variable happens to be named `a`
// too (as in Fig 11, where the arguments and the parameters share their names).
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* a) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(v) {
        a[$V[$tid$]$] = 1.0;
    })?;
    Ok(())
}
