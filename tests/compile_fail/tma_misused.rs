// TMA copies and mbarriers (SPEC 3.9, "TMA copies") are errors at the offending token: a
// tile the planner refuses (its rule named), a barrier of a type that is not of
// `mbarrier`s (in each form), a phase of no arrivals, a malformed `#mbarrier`, `on`
// without `async`, a guarded TMA copy, and the forms in a pthd body and in host code.
use parray::prelude::*;

parray! {
    dmem bf16 [128][128] A;
    bf16 [64#A_0][64#A_1] AT;
    smem bf16 [64][64] ROWS;
    smem bf16 [64][72] PADDED;
    bf16 [#PADDED_0][64#PADDED_1] PT;
    smem mbarrier [2] FULL;
    cuda(bf16* a) [1][128] G;
    pthd [4] P;
}

fn main() -> parray::Result<()> {
    let a = A::create()?;
    detour!(G(&a) {
        let s = PADDED::create();
        let full = FULL::create();
        #copy async AT(a) to PT(s) on FULL(full);
    })?;
    detour!(G(&a) {
        let s = ROWS::create();
        let t = ROWS::create();
        #copy async AT(a) to ROWS(s) on ROWS(t);
        #wait ROWS(t) parity 0;
        #mbarrier arrive ROWS(t);
    })?;
    detour!(G(&a) {
        let full = FULL::create();
        #mbarrier init FULL(full) arrivals 0;
        #mbarrier wait FULL(full);
    })?;
    detour!(G(&a) {
        let s = ROWS::create();
        let full = FULL::create();
        #copy AT(a) to ROWS(s) on FULL(full);
        #copy async AT(a) to ROWS(s) on FULL(full) if |i, j| i < j;
    })?;
    detour!(P {
        #mbarrier arrive FULL(full);
    })?;
    let full = ();
    host! {
        #mbarrier arrive FULL(full);
    }
    Ok(())
}
