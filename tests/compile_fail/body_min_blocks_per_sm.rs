// `#![min_blocks_per_sm(N)]` bounds a cuda kernel's registers: not for pthd bodies, and
// the only inner attribute a body takes.
use parray::prelude::*;

parray! {
    pthd [4] T;
    dmem float [256] V;
    cuda(float* v) [1][256] G;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(T {
        #![min_blocks_per_sm(2)]
        let _ = $tid$;
    })?;
    detour!(G(&mut v) {
        #![min_blocks_per_sm(0)]
        v[$V[$tid_1$]$] = 1.0;
    })?;
    detour!(G(&mut v) {
        #![launch_bounds(256)]
        v[$V[$tid_1$]$] = 1.0;
    })
}
