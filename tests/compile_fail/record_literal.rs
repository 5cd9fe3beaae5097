// A record built in a cuda body gives each of its fields, typed as declared: a missing
// field, an unknown one and a mistyped one are errors that list the record's fields.
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

fn main() -> parray::Result<()> {
    let mut p = P::create()?;
    detour!(CT(&mut p) {
        p[$tid$] = Particle { pos: Float2::new(0.0, 1.0), mass: 1.0 };
        p[$tid$] = Particle { mass: 1.0, charge: 2.0, ..p[$tid$] };
    })?;
    // Typed once its fields are all there: a separate body.
    detour!(CT(&mut p) {
        p[$tid$] = Particle { pos: Float2::new(0.0, 1.0), mass: 1.5f64, id: 2 };
    })?;
    Ok(())
}
