// smem and rmem exist only inside cuda detours.
use parray::prelude::*;

parray! {
    pthd [4] T;
    smem float [4][17] S;
}

fn main() -> parray::Result<()> {
    detour!(T {
        let s = S::create();
        s[$S[$tid$][0]$] = 1.0;
    })
}
