// A compound assignment to a half reads the place and writes it back through f32: a place
// that updates something itself (here an atomic in the index) is refused at that update.
use parray::prelude::*;

parray! {
    dmem half [64] H;
    dmem int [64] K;
    cuda(half* h, int* k) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let (mut h, mut k) = (H::create()?, K::create()?);
    detour!(CT(&mut h, &mut k) {
        let t = $tid$;
        h[atomic_add(k + t, 1) as usize % 64] += 1.0;
    })?;
    Ok(())
}
