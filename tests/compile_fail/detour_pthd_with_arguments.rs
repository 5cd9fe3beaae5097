// A pthd body captures host variables: no argument list.
use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(T(v) {
        v[$V[$tid$]$] = 1.0;
    })
}
