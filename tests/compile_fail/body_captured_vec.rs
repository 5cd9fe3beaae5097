// A detour body indexes parray arrays, not a captured `Vec`: the error is at the access and
// says what to do.
use parray::prelude::*;

parray! {
    paged float [8] OUT;
    pthd [8] T;
}

fn main() -> parray::Result<()> {
    let weights = vec![1.0f32; 8];
    let mut out = OUT::create()?;
    detour!(T {
        out[$OUT[$tid$]$] = weights[$tid$];
    })
}
