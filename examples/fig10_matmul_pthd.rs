//! Fig 10 of the paper: the same product on a 2x2 array of CPU threads, each computing a
//! quarter of C. The matrix type splits rows and columns in halves, `[[2][512]][[2][512]]`.

mod common;

use parray::prelude::*;

parray! {
    pub #parray {paged float [[2][512]][[2][512]]} M
    #parray {pthd [2][2]} MY_TA
}

/// The paper's detour, unchanged but for Rust syntax.
pub fn multiply(a: &Array<M>, b: &Array<M>, c: &mut Array<M>) -> parray::Result<()> {
    detour!(MY_TA {
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
    common::Figure::on::<MY_TA>("fig10 pthd", "[[2][512]][[2][512]]").run::<M, M>(multiply)
}

fn main() -> parray::Result<()> {
    common::finish(&run()?);
    Ok(())
}
