// A mistake in a subprogram's body is reported once, at its token, however many calls
// instantiate the body (here two, for two types).
use parray::prelude::*;

subprog! {
    fn fill<T>(m) {
        parray! {
            cuda(float* m) [dim(T_0)][dim(T_1)] GRID;
        }
        detour!(GRID(m) {
            let one = 1i32 + 0.5f32;
            m[$T[$tid_0$][$tid_1$]$] = one;
        })
    }
}

parray! {
    dmem float [16][32] A;
    dmem float [32][16] B;
}

fn main() -> parray::Result<()> {
    let mut a = A::create()?;
    let mut b = B::create()?;
    fill!(<A>(&mut a))?;
    fill!(<B>(&mut b))?;
    Ok(())
}
