// A cuda body names the number types' constants by path; any other path is refused.
use parray::prelude::*;

mod tuning {
    pub const SCALE: f32 = 2.0;
}

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        v[$V[$tid$]$] = f32::consts::PI * tuning::SCALE;
    })?;
    Ok(())
}
