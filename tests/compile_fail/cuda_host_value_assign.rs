// A cuda body receives a host value by value: assigning it would not change the host's.
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    let mut scale = 2.0f32;
    detour!(CT(&mut v) {
        scale *= 2.0f32;
        v[$V[$tid$]$] = scale;
    })?;
    println!("{scale}");
    Ok(())
}
