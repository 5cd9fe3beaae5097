// `soa` keeps a record array one array per field: it is refused, at the word, where
// there is nothing to arrange (a scalar element, constant memory, registers, a view, a
// parameter that is not a pointer).
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

fn main() {}
