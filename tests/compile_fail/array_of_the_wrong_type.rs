// A detour that indexes an array as `M` takes an array of `M` (or of a type `M` views),
// not 16 floats that happen to be there.
use parray::prelude::*;

parray! {
    dmem float [1024][1024] M;
    dmem float [16] SMALL;
    cuda(float* a) [1024][1024] TA;
}

fn main() -> parray::Result<()> {
    let mut small = SMALL::create()?;
    detour!(TA(&mut small) {
        a[$M[$tid_0$][$tid_1$]$] = 1.0f32;
    })
}
