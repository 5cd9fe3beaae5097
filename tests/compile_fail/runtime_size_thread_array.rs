// A cuda array's grid may be sized at run time (of any number of dimensions, held to
// CUDA's limits when the sizes are bound), its block not: the error says what may be given
// at run time. A pthd array's threads are a number.
use parray::prelude::*;

parray! {
    const N;
    cuda(float* a) [ceil(N / 64)][64] FINE;
    cuda(float* a) [64][N] WIDE;
    pthd [N] TEAM;
    cuda(float* a) [[ceil(N / 16)][ceil(N / 16)]][[16][16]] SQUARE;
}

fn main() -> parray::Result<()> {
    N.bind(1000)?;
    let a = parray::Array::<V>::new()?;
    detour!(FINE(&a) {});
    detour!(SQUARE(&a) {});
    Ok(())
}

parray! {
    dmem float [N] V;
}
