// Constant memory is read by cuda kernels from their parameters: written, indexed as a
// type of another memory too, or read by CPU threads, it is an error at the array.
use parray::prelude::*;

parray! {
    cmem float [64] TABLE;
    dmem float [64] OUT;
    cuda(float* t, float* out) [2][32] GRID;
    pthd [4] CPU;
}

fn main() -> parray::Result<()> {
    let (mut table, mut out) = (TABLE::create()?, OUT::create()?);
    detour!(GRID(&mut table, &mut out) {
        t[$TABLE[$tid$]$] = 1.0;
    })?;
    detour!(GRID(&table, &mut out) {
        out[$OUT[$tid$]$] = t[$TABLE[$tid$]$] + t[$OUT[$tid$]$];
    })?;
    detour!(CPU {
        let x = table[$TABLE[$tid$]$];
    })
}
