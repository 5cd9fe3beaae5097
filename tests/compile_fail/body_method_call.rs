use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    let w = vec![1.0f32; 4];
    let w = &w;
    detour!(T {
        for x in w.iter() {
            v[$V[$tid$]$] += x;
        }
    })
}
