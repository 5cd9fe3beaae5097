//! Fig 8 of the paper: matrix multiplication on one CPU thread, row-major 1024x1024.

mod common;

use parray::prelude::*;

parray! {
    pub #parray {paged float [1024][1024]} M
}

/// The paper's loop nest, unchanged but for Rust syntax.
pub fn multiply(a: &Array<M>, b: &Array<M>, c: &mut Array<M>) {
    host! {
        for i in 0..$dim_0(M)$ {
            for j in 0..$dim_1(M)$ {
                let mut cvalue = 0.0f32;
                for k in 0..$dim_1(M)$ {
                    cvalue += a[$M[i][k]$] * b[$M[k][j]$];
                }
                c[$M[i][j]$] = cvalue;
            }
        }
    }
}

pub fn run() -> parray::Result<common::Run> {
    common::Figure::serial("fig08 serial", "[1024][1024]").run::<M, M>(|a, b, c| {
        multiply(a, b, c);
        Ok(())
    })
}

fn main() -> parray::Result<()> {
    common::finish(&run()?);
    Ok(())
}
