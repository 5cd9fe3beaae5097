// A record's fields are read and written by name; a field it does not have is an error
// that lists its fields, and a record is declared in Rust, not in `parray!`.
use parray::prelude::*;

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    mass: f32,
    id: i32,
}

parray! {
    dmem Particle [64] P;
    cuda(Particle* p) [2][32] CT;
}

parray! {
    record Spring { float k; }
}

fn main() -> parray::Result<()> {
    let mut p = P::create()?;
    detour!(CT(&mut p) {
        p[$tid$].velocity = Float2::new(0.0, 1.0);
        p[$tid$].id = 1.5f32;
    })?;
    Ok(())
}
