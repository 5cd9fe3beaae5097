// A `parray!` constant is folded into a cuda body; a Rust local of the same name where the
// body is would make the host's meaning differ, and is refused.
use parray::prelude::*;

parray! {
    const N = 64;
    dmem float [N] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    const N: usize = 32;
    detour!(CT(&mut v) {
        v[$V[$tid$]$] = (N - $tid$) as f32;
    })?;
    Ok(())
}
