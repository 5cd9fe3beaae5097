// An `mbarrier` is touched by no access but the TMA forms (SPEC 3.9, "TMA copies"), and
// a TMA copy reads through a tensor map over an array the kernel is given: an element of
// a barrier read as a value, a copy from a shared array, and one from a pointer to other
// elements are errors at the operand; so are a box the prover does not show aligned or
// inside its shared array, and a barrier it does not show inside its array (TMA writes
// past any run-time check).
use parray::prelude::*;

parray! {
    dmem bf16 [128][128] A;
    bf16 [64#A_0][64#A_1] AT;
    smem bf16 [64][64] ROWS;
    smem mbarrier [2] FULL;
    smem bf16 [192][64] STAGES;
    bf16 [64#STAGES_0][#STAGES_1] STAGE;
    cuda(bf16* a) [1][128] G;
    cuda(float* f) [1][128] F;
}

fn main() -> parray::Result<()> {
    let a = A::create()?;
    detour!(G(&a) {
        let full = FULL::create();
        let x = full[1];
    })?;
    detour!(G(&a) {
        let s = ROWS::create();
        let full = FULL::create();
        #copy async AT(s) to ROWS(s) on FULL(full);
    })?;
    detour!(G(&a) {
        let st = STAGES::create();
        let full = FULL::create();
        let s = ROWS::create();
        #copy async AT(a) to STAGE(st + 8) on FULL(full);
        #copy async AT(a) to ROWS(s + 64) on FULL(full);
    })?;
    detour!(G(&a) {
        let st = STAGES::create();
        let full = FULL::create();
        #copy async AT(a) to STAGE(st + $STAGES[$tid_1$][0]$) on FULL(full + $tid_1$ % 3);
    })?;
    detour!(F(&a) {
        let s = ROWS::create();
        let full = FULL::create();
        #copy async AT(f) to ROWS(s) on FULL(full);
    })?;
    Ok(())
}
