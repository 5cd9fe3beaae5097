//! The cost of the interface: one matrix product through `$M[i][k]$` offsets on typed
//! arrays (every access checked), the same over a type whose size is given at run time
//! (`$R[i][k]$`, `R` of `[N][N]` with `N` bound to 256: its forms read once where the loop
//! starts, SPEC.md 3.1), and the same loop with hand-written `i * n + k` on slices (every
//! access checked by Rust), for instruction counts under callgrind (parray 0.96 and
//! runtime 0.92 times hand's):
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*multiply_*' \
//!     target/release/examples/matmul_cpu --variant parray|runtime|hand
//! ```

mod common;

use parray::prelude::*;

parray! {
    #parray {paged float [256][256]} M
}

parray! {
    const N;
    paged float [N][N] R;
}

/// The product with Parray offsets (n is M's, 256).
#[inline(never)]
fn multiply_parray(a: &Array<M>, b: &Array<M>, c: &mut Array<M>) {
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

/// The product with the offsets of a type whose size is given at run time.
#[inline(never)]
fn multiply_runtime(a: &Array<R>, b: &Array<R>, c: &mut Array<R>) {
    host! {
        for i in 0..$dim_0(R)$ {
            for j in 0..$dim_1(R)$ {
                let mut cvalue = 0.0f32;
                for k in 0..$dim_1(R)$ {
                    cvalue += a[$R[i][k]$] * b[$R[k][j]$];
                }
                c[$R[i][j]$] = cvalue;
            }
        }
    }
}

/// The same loop with the offsets written by hand, on slices.
#[inline(never)]
fn multiply_hand(n: usize, a: &[f32], b: &[f32], c: &mut [f32]) {
    for i in 0..n {
        for j in 0..n {
            let mut cvalue = 0.0f32;
            for k in 0..n {
                cvalue += a[i * n + k] * b[k * n + j];
            }
            c[i * n + j] = cvalue;
        }
    }
}

fn main() -> parray::Result<()> {
    let variant = match std::env::args().skip(1).collect::<Vec<_>>().as_slice() {
        [] => "parray".to_string(),
        [flag, v] if flag == "--variant" && ["parray", "runtime", "hand"].contains(&v.as_str()) => {
            v.clone()
        }
        _ => {
            eprintln!("usage: matmul_cpu [--variant parray|runtime|hand]");
            std::process::exit(2);
        }
    };
    let n = M::dims()[0];
    N.bind(n)?;
    let info = common::Variant {
        name: match variant.as_str() {
            "parray" => "matmul_cpu parray",
            "runtime" => "matmul_cpu runtime",
            _ => "matmul_cpu hand",
        },
        threads: 1,
        layout: "row-major",
        device: false,
    };
    let run = if variant == "runtime" {
        let (mut a, mut b, mut c) = (R::create()?, R::create()?, R::create()?);
        common::run_matmul(
            info,
            n,
            move |i, j| i * n + j,
            (&mut a, &mut b, &mut c),
            |a, b, c| {
                multiply_runtime(a, b, c);
                Ok(())
            },
        )?
    } else {
        let (mut a, mut b, mut c) = (M::create()?, M::create()?, M::create()?);
        common::run_matmul(
            info,
            n,
            move |i, j| i * n + j,
            (&mut a, &mut b, &mut c),
            |a, b, c| {
                if variant == "parray" {
                    multiply_parray(a, b, c)
                } else {
                    multiply_hand(n, a.as_slice()?, b.as_slice()?, c.as_mut_slice()?)
                }
                Ok(())
            },
        )?
    };
    common::finish(&run);
    Ok(())
}
