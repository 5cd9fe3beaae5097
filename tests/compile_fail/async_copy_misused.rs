// `#copy async` starts a copy from global memory into shared memory (`cp.async`) in a
// cuda body: other memories, 16-bit elements in rows of an odd length (no vector: moves
// of 2 bytes, under cp.async's 4), a source that is not global memory, a `#wait` without
// a number, and both forms in host code are errors at the offending token.
use parray::prelude::*;

parray! {
    dmem float [4][16] A;
    rmem float [16] R;
    smem float [4][16] S;
    float [16] P;
    dmem bf16 [4][15] H;
    smem bf16 [4][15] HS;
    cuda(float* a, bf16* h) [1][4] G;
    paged float [16] V;
}

fn main() -> parray::Result<()> {
    let (a, h) = (A::create()?, H::create()?);
    detour!(G(&a, &h) {
        let r = R::create();
        #copy async A_1(a + $A[$tid_1$][0]$) to R(r);
        #wait 0;
    })?;
    detour!(G(&a, &h) {
        let s = HS::create();
        #copy async H_1(h + $H[$tid_1$][0]$) to HS_1(s + $HS[$tid_1$][0]$);
        #wait 0;
    })?;
    detour!(G(&a, &h) {
        let s = S::create();
        let t = S::create();
        #copy async P(s + $S[$tid_1$][0]$) to P(t + $S[$tid_1$][0]$);
        #wait 0;
    })?;
    detour!(G(&a, &h) {
        #wait zero;
    })?;
    let (v, mut w) = (V::create()?, V::create()?);
    host! {
        #copy async V(v) to V(w);
        #wait 0;
    }
    Ok(())
}
