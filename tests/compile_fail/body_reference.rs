use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
}

fn take(x: &f32) -> f32 {
    *x
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(T {
        let y = 1.0f32;
        v[$V[$tid$]$] = take(&y);
    })
}
