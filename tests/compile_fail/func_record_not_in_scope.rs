// A function whose signature names a record asks for the record's companion, as a
// declaration asks for the types it names: a struct without `#[derive(parray::Record)]`
// has none, and neither has a record of another module that was not imported.
mod elsewhere {
    #[derive(Clone, Copy, Default, parray::Record)]
    #[repr(C)]
    pub struct Charge {
        pub q: f32,
    }
}

#[derive(Clone, Copy)]
#[repr(C)]
struct Plain {
    mass: f32,
}

#[parray::func]
fn weight(p: Plain) -> f32 {
    p.mass * 9.75
}

#[parray::func]
fn charge(c: elsewhere::Charge) -> f32 {
    c.q
}

fn main() {}
