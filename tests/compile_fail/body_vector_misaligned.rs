// A vector access whose first element is at one offset for every thread, not a multiple
// of its lanes, would fault on every run: a compile error at its method.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][8] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        let p = v + 4;
        let w = p.load4(2);
        v.store2($V[$tid$ * 2]$, Float2::new(w.x, w.y));
    })?;
    Ok(())
}
