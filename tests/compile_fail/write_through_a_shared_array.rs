// A detour that writes an array borrows it exclusively: an array passed by `&` is read-only,
// and a slice of it cannot be held across the detour.
use parray::prelude::*;

parray! {
    paged float [4] V;
    pthd [4] T;
    dmem float [4] D;
    cuda(float* d) [1][4] G;
}

fn main() -> parray::Result<()> {
    let d = D::create()?;
    let shared = &d;
    detour!(G(shared) {
        d[$D[$tid$]$] = 1.0f32;
    })?;
    let mut v = V::create()?;
    let s = v.as_slice()?;
    detour!(T {
        v[$V[$tid$]$] = 2.0f32;
    })?;
    println!("{}", s[0]);
    Ok(())
}
