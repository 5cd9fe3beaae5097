//! Fig 13 of the paper: Fig 12 with the size-1 dimensions and the i/j loops dropped; one
//! GPU thread per element of C, row-major storage.

mod common;

use parray::prelude::*;

parray! {
    pub #parray {dmem float [1024][1024]} M
    #parray {cuda(float* a, float* b, float* c) [1024][1024]} MY_TA
}

pub fn multiply(a: &Array<M>, b: &Array<M>, c: &mut Array<M>) -> parray::Result<()> {
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
    common::Figure::on::<MY_TA>("fig13 cuda", "[1024][1024]").run::<M, M>(multiply)
}

fn main() -> parray::Result<()> {
    common::finish(&run()?);
    Ok(())
}
