use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(T {
        let x = match $tid$ {
            0 => 1.0,
            _ => 2.0,
        };
        v[$V[$tid$]$] = x;
    })
}
