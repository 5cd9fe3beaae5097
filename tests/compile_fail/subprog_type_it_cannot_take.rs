// A subprogram tiled by 16 called with a 1000 x 1000 matrix: the error is at the type
// argument, names the type and the constraint, and points at the declaration too.
use parray::prelude::*;

subprog! {
    fn fill<T>(m) {
        parray! {
            const N = dim(T_0);
            cuda(float* m) [N/16][16] TILES;
        }
        detour!(TILES(m) {
            m[$T[$tid_0$][$tid_1$]$] = 1.0f32;
        })
    }
}

parray! {
    dmem float [1000][1000] M;
    dmem float [1024][1024] GOOD;
}

fn main() -> parray::Result<()> {
    let mut good = GOOD::create()?;
    fill!(<GOOD>(&mut good))?;
    let mut m = M::create()?;
    fill!(<M>(&mut m))?;
    fill!(<M, M>(&mut m))?;
    Ok(())
}
