//! The cost of the interface: one matrix product through `$M[i][k]$` offsets and the same
//! loop with hand-written `i * n + k`, for instruction counts under callgrind:
//!
//! ```text
//! valgrind --tool=callgrind --toggle-collect='*multiply_*' \
//!     target/release/examples/matmul_cpu --variant parray --n 256
//! ```

mod common;

use parray::prelude::*;

parray! {
    #parray {paged float [256][256]} M
}

/// The product with Parray offsets (n is M's, 256).
#[inline(never)]
fn multiply_parray(a: &Buffer<f32>, b: &Buffer<f32>, c: &mut Buffer<f32>) {
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

/// The same loop with the offsets written by hand.
#[inline(never)]
fn multiply_hand(n: usize, a: &Buffer<f32>, b: &Buffer<f32>, c: &mut Buffer<f32>) {
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
    let mut variant = String::from("parray");
    let mut n = 256usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--variant", Some(v)) if v == "parray" || v == "hand" => variant = v,
            ("--n", Some(v)) => n = v.parse().unwrap_or(0),
            _ => {
                eprintln!("usage: matmul_cpu --variant parray|hand --n N");
                std::process::exit(2);
            }
        }
    }
    let declared = host! { $dim_0(M)$ };
    if variant == "parray" && n != declared {
        eprintln!(
            "error: --variant parray is compiled for n = {declared} (the type M); got --n {n}"
        );
        std::process::exit(2);
    }
    let (mut a, mut b, mut c) = (M::create()?, M::create()?, M::create()?);
    if variant == "hand" {
        let extent = n * n;
        a = parray::Buffer::new("hand", parray::MemKind::Paged, extent)?;
        b = parray::Buffer::new("hand", parray::MemKind::Paged, extent)?;
        c = parray::Buffer::new("hand", parray::MemKind::Paged, extent)?;
    }
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
                multiply_hand(n, a, b, c)
            }
            Ok(())
        },
    )?;
    common::finish(&run);
    Ok(())
}
