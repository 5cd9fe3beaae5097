// Only `let mut` locals may be assigned, in the kernel as in Rust.
use parray::prelude::*;

parray! {
    dmem int [64] V;
    cuda(int* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(CT(&v) {
        let k = 1;
        k = 2;
        v[$tid$] = k;
    })?;
    Ok(())
}
