use parray::prelude::*;

parray! {
    dmem float [64] D;
    cuda(float* d) [1][64] G;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        atomic_cas(d + $tid$, 0.0f32, 1.0f32);
    })
}
