// A lane of a vector element is not a place in a body: write the whole element (or the
// whole vector field of a record element).
use parray::prelude::*;

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Particle {
    vel: Float2,
    mass: f32,
    id: i32,
}

parray! {
    dmem float2 [64] V;
    cuda(float2* v) [2][32] CT;
    dmem Particle [64] PS;
    cuda(Particle* p) [2][32] PT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(&v) {
        v[$tid$].x = 1.0f32;
    })?;
    let mut p = PS::create()?;
    detour!(PT(&mut p) {
        p[$tid$].vel.x = 1.0f32;
    })?;
    Ok(())
}
