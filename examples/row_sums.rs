//! A program whose size comes from its input: the sums of the rows of an n x n matrix,
//! `n` given by `--n` (default 1000) and bound to the run-time size `N` (SPEC.md 3.1).
//! A fixed grid covers any n with a grid-stride loop. Checked against an f64 sum on the
//! CPU; on the emulation unless a GPU is there.

mod common;

use parray::prelude::*;

parray! {
    const N;                                   // the data's size, from the input
    pub dmem float [N][N] A;
    pub dmem float [N] Y;
    cuda(float* a, float* y) [264][256] GRID;  // a fixed grid; a loop covers any N
}

fn main() -> parray::Result<()> {
    let n = common::size_arg("row_sums", 1000);
    N.bind(n)?;
    let value = |i: usize, j: usize| ((i * 7 + j * 3) % 11) as f32 - 5.0;
    let host: Vec<f32> = (0..n * n).map(|k| value(k / n, k % n)).collect();
    let (mut a, mut y) = (A::create()?, Y::create()?);
    a.copy_from_slice(&host)?;
    // The first launch makes the kernel for this n (and compiles it, or finds it in the
    // disk cache); the second finds it made.
    let mut times = Vec::new();
    for _ in 0..2 {
        times.push(parray::gpu::time_ms(|| {
            detour!(GRID(&a, &mut y) {
                let mut i = $tid$;
                while i < $dim(A_0)$ {
                    let mut s = 0.0f32;
                    for j in 0..$dim(A_1)$ {
                        s += a[$A[i][j]$];
                    }
                    y[$Y[i]$] = s;
                    i += $size(GRID)$;
                }
            })
        })?);
    }
    let got = y.to_vec()?;
    let ok = (0..n).all(|i| {
        let want: f64 = (0..n).map(|j| f64::from(value(i, j))).sum();
        f64::from(got[i]) == want
    });
    println!("row sums of a {n} x {n} matrix (N bound at run time)");
    println!(
        "first launch {:.1}, making the kernel for n (compiled or read from the disk cache); second {:.1}",
        times[0], times[1]
    );
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if ok {
        Ok(())
    } else {
        std::process::exit(1)
    }
}
