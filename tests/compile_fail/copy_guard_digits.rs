// A guarded `#copy` names element k (`|k|`) or its digits over the source's dimensions:
// `A_1` has one dimension of 8, so `|i, j|` is a mistake; and `#copy` between host arrays
// has no guard.
use parray::prelude::*;

parray! {
    dmem float [4][8] A;
    rmem float [8] R;
    paged float [4][8] H;
    cuda(float* a) [1][4] G;
}

fn main() -> parray::Result<()> {
    let a = A::create()?;
    detour!(G(&a) {
        let r = R::create();
        #copy A_1(a + $A[$tid$][0]$) to R(r) if |i, j| i + j < 7 else 0.0;
    })?;
    let (h, mut g) = (H::create()?, H::create()?);
    host! {
        #copy H(h) to H(g) if |k| k < 3;
    };
    Ok(())
}
