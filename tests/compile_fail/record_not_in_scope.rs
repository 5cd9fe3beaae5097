// A record a declaration names must be in scope where the declaration is, as any Rust
// type: an unimported one is an error at its name (rustc's, for the companion macro that
// carries its fields) with the `use` that imports it.
use parray::prelude::*;

mod shapes {
    #[derive(Clone, Copy, Default, parray::Record)]
    #[repr(C)]
    pub struct Particle {
        pos: parray::Float2,
    }
}

parray! {
    dmem Particle [64] P;
}

fn main() {}
