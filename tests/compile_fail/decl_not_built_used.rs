// A declaration that cannot be built is reported once, at its token, and its name is still
// declared: its uses (a form, a detour, another declaration, a subprogram's call, Rust
// code) compile without an error of their own ("cannot find macro `K`" was one at each).
use parray::prelude::*;

parray! {
    const N = 10;
    dmem float [N / 3][4] K;
    cuda(float* k) [N / 3][4] GRID;
    paged float [4][3] A;
}

parray! {
    paged float [#K_1] ROW;
}

subprog! {
    fn fill<T>(m) -> parray::Result<()> {
        parray! {
            cuda(float* m) [dim(T_0)][dim(T_1)] CELLS;
        }
        detour!(CELLS(m) {
            m[$T[$tid_0$][$tid_1$]$] = 1.0f32;
        })
    }
}

fn main() -> parray::Result<()> {
    let mut k = K::create()?;
    detour!(GRID(&mut k) {
        k[$K[$tid_0$][$tid_1$]$] = 2.0f32;
    })?;
    fill!(<K>(&mut k))?;
    let at = host! { $K[1][2]$ + $A[1][2]$ };
    let row = ROW::create()?;
    println!("{at} {} {}", k.at([1, 2]), row.at([0]));
    Ok(())
}
