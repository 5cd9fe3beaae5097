// `#copy` in a detour body moves element k to element k: both sides have as many elements.
use parray::prelude::*;

parray! {
    dmem float [4][8] A;
    smem float [4][4] S;
    cuda(float* a) [1][4] G;
}

fn main() -> parray::Result<()> {
    let a = A::create()?;
    detour!(G(&a) {
        let s = S::create();
        #copy A_1(a + $A[$tid$][0]$) to S_1(s + $S[$tid$][0]$);
    })
}
