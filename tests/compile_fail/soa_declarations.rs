// `soa` keeps a record array one array per field: it is refused, at the word, where
// there is nothing to arrange (a scalar element, constant memory, registers, a view, a
// parameter that is not a pointer), and a body does not create a shared one yet.
use parray::prelude::*;

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    mass: f32,
    id: i32,
}

parray! { dmem soa float [64] A; }
parray! { cmem soa Particle [64] B; }
parray! { rmem soa Particle [4] C; }
parray! { soa Particle [64] D; }
parray! { cuda(soa Particle p) [2][32] E; }

parray! {
    dmem soa Particle [64] Q;
    smem soa Particle [32] TILE;
    cuda(soa Particle* q) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut q = Q::create()?;
    detour!(CT(&mut q) {
        let tile = TILE::create();
        tile[$tid_1$] = q[$tid$];
        #sync;
        q[$tid$] = tile[31 - $tid_1$];
    })?;
    Ok(())
}
