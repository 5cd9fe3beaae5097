// A `#copy` to or from a fragment moves the element of each index: the tile has the
// fragment's dimensions (here 8 x 16 against the C fragment's 16 x 8).
use parray::prelude::*;

parray! {
    cuda(float* c) [1][[8][4]] G;
    rmem float [[2][#G_1_0]][[#G_1_1][2]] FC;
    smem float [8][16] S;
    dmem float [16][8] C;
}

fn main() -> parray::Result<()> {
    let mut c = C::create()?;
    detour!(G(&mut c) {
        let s = S::create();
        let fc = FC::create();
        #copy S(s) to FC(fc);
    })
}
