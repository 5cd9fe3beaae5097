//! The cost of the interface: one matrix product through `$M[i][k]$` offsets on typed
//! arrays (every access checked) and the same loop with hand-written `i * n + k` on
//! slices (every access checked by Rust), for instruction counts under callgrind:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*multiply_*' \
//!     target/release/examples/matmul_cpu --variant parray
//! ```

mod common;

use parray::prelude::*;

parray! {
    #parray {paged float [256][256]} M
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
        [flag, v] if flag == "--variant" && (v == "parray" || v == "hand") => v.clone(),
        _ => {
            eprintln!("usage: matmul_cpu [--variant parray|hand]");
            std::process::exit(2);
        }
    };
    let n = M::dims()[0];
    let (mut a, mut b, mut c) = (M::create()?, M::create()?, M::create()?);
    let run = common::run_matmul(
        common::Variant {
            name: if variant == "parray" {
                "matmul_cpu parray"
            } else {
                "matmul_cpu hand"
            },
            threads: 1,
            layout: "row-major",
            device: false,
        },
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
    )?;
    common::finish(&run);
    Ok(())
}
