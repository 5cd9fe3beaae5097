// `p.load2(off)` takes the offset and `p.store2(off, v)` the offset and the vector; a
// vector load is not a place (store through `store2`/`store4`).
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][8] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        let p = v.load2();
        v.store4($V[$tid$ * 4]$);
        v.load4(0) = v.load4(4);
    })?;
    Ok(())
}
