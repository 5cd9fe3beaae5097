use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(T {
        let f = |x: f32| x * 2.0;
        v[$V[$tid$]$] = f(1.0);
    })
}
