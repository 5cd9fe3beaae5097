//! Fig 12 of the paper: one GPU thread per element of C. Fig 11's body is unchanged; the
//! matrix type's inner dimensions shrink to 1 and the thread array grows to 1024x1024.

mod common;

use parray::prelude::*;

parray! {
    pub #parray {dmem float [[1024][1]][[1024][1]]} M
    #parray {cuda(float* a, float* b, float* c) [1024][1024]} MY_TA
}

pub fn multiply(a: &Array<M>, b: &Array<M>, c: &mut Array<M>) -> parray::Result<()> {
    detour!(MY_TA(a, b, c) {
        for i in 0..$dim_0_1(M)$ {
            for j in 0..$dim_1_1(M)$ {
                let pa = a + $M[[$tid_0$][i]][0]$;
                let pb = b + $M[0][[$tid_1$][j]]$;
                let mut cvalue = 0.0f32;
                for k in 0..$dim_1(M)$ {
                    cvalue += pa[$M[0][k]$] * pb[$M[k][0]$];
                }
                c[$M[[$tid_0$][i]][[$tid_1$][j]]$] = cvalue;
            }
        }
    })
}

pub fn run() -> parray::Result<common::Run> {
    common::Figure::on::<MY_TA>("fig12 cuda", "[[1024][1]][[1024][1]]").run::<M, M>(multiply)
}

fn main() -> parray::Result<()> {
    common::finish(&run()?);
    Ok(())
}
