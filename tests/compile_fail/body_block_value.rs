use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(T {
        let y = {
            let t = $tid$ as f32 + 1.0;
            t * 2.0
        };
        v[$V[$tid$]$] = y;
    })
}
