//! Fig 17 of the paper: Fig 13's body unchanged on a matrix stored as two 1024x512 halves,
//! each contiguous. Only the declarations change: the storage type A and the view M.

mod common;

use parray::prelude::*;

parray! {
    pub #parray {dmem float [2][1024][512]} A
    #parray {float [#A_1][[#A_0][#A_2]]} M
    #parray {cuda(float* a, float* b, float* c) [1024][1024]} MY_TA
}

pub fn multiply(a: &Array<A>, b: &Array<A>, c: &mut Array<A>) -> parray::Result<()> {
    detour!(MY_TA(a, b, c) {
        let pa = a + $M[$tid_0$][0]$;
        let pb = b + $M[0][$tid_1$]$;
        let mut cvalue = 0.0f32;
        for k in 0..$dim_1(M)$ {
            cvalue += pa[$M[0][k]$] * pb[$M[k][0]$];
        }
        c[$M[$tid_0$][$tid_1$]$] = cvalue;
    })
}

pub fn run() -> parray::Result<common::Run> {
    common::Figure::on::<MY_TA>(
        "fig17 cuda halves",
        "[2][1024][512] as [#A_1][[#A_0][#A_2]]",
    )
    .run::<M, A>(multiply)
}

fn main() -> parray::Result<()> {
    common::finish(&run()?);
    Ok(())
}
