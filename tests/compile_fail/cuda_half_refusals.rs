// Halves are stored, loaded and computed in f32; an atomic add or a shuffle of one is
// refused (the message lists what each takes), and so is a compound assignment whose place
// updates something (it reads the place and writes it back).
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
        atomic_add(h + t, h[t]);
        let v = shfl_down(h[t], 1u32);
        h[atomic_add(k + t, 1) as usize] += v;
    })?;
    Ok(())
}
