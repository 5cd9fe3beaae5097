//! Seed 000's pitched matrix multiply: 1000 x 1000 matrices of +-1 (`--n N`: N x N, a
//! run-time size; the seed's `MatrixRandBin`) stored with rows padded to a multiple of 128
//! floats (1024), as `cudaMallocPitch` pads them, a block per row of C and 32 threads striding over its columns. The padded storage
//! is a type (`dmem float [N][PITCH] STORE`) and the matrix a view of it (`[#STORE_0]
//! [N #STORE_1]`): the kernel indexes the logical matrix, the offset compiler writes the
//! pitch in, and `#copy` from the dense host matrix is the seed's `cudaMemcpy2D` (the
//! strided path). The product of +-1 matrices is exact in floats: checked exactly against
//! the CPU's. On a GPU, timed beside the seed's kernel compiled the same way.

mod common;

use parray::copy::CopyPath;
use parray::prelude::*;

parray! {
    const N;                        // the matrices' side, from the command line
    // N floats rounded up to 128 (the seed's `((N-1)/128+1)*128`): 1024 for 1000.
    const PITCH = ceil(N / 128) * 128;
    paged float [N][N] DENSE;
    dmem float [N][PITCH] STORE;
    float [#STORE_0][N #STORE_1] M;
    cuda(float* a, float* b, float* c) [N][32] ROWS;
}

fn multiply(a: &Array<STORE>, b: &Array<STORE>, c: &mut Array<STORE>) -> parray::Result<()> {
    detour!(ROWS(a, b, c) {
        let mut j = $tid_1$;
        while j < $dim_1(M)$ {
            let mut sum = 0.0f32;
            for k in 0..$dim_1(M)$ {
                sum += a[$M[$tid_0$][k]$] * b[$M[k][j]$];
            }
            c[$M[$tid_0$][j]$] = sum;
            j += $dim_1(ROWS)$;
        }
    })
}

/// A matrix of +-1, the seed's `MatrixRandBin` (from a fixed xorshift, not `rand()`).
fn random_signs(seed: u64) -> Vec<f32> {
    let mut s = seed;
    (0..host! { $size(DENSE)$ })
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            if s & 1 == 1 {
                1.0
            } else {
                -1.0
            }
        })
        .collect()
}

fn main() -> parray::Result<()> {
    let n = common::size_arg("pitch", 1000);
    N.bind(n)?;
    let (mut ha, mut hb, mut hc) = (DENSE::create()?, DENSE::create()?, DENSE::create()?);
    ha.copy_from_slice(&random_signs(0x9E37_79B9_7F4A_7C15))?;
    hb.copy_from_slice(&random_signs(0xD1B5_4A32_D192_ED03))?;
    let (mut a, mut b, mut c) = (STORE::create()?, STORE::create()?, STORE::create()?);
    let path = ha.copy_to(a.view_mut::<M>())?;
    hb.copy_to(b.view_mut::<M>())?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let parray = common::median_time(repeats, true, || multiply(&a, &b, &mut c))?;
    c.view::<M>().copy_to(&mut hc)?;
    let (x, y) = (ha.as_slice()?, hb.as_slice()?);
    let want: Vec<f32> = (0..n * n)
        .map(|ij| (0..n).map(|k| x[ij / n * n + k] * y[k * n + ij % n]).sum())
        .collect();
    let ok = hc.as_slice()? == want.as_slice();
    let seed = if device {
        c.fill(0.0)?;
        let (pitch, n32) = (host! { $dim_1(STORE)$ } as i32, n as i32);
        let t = common::median_time(repeats, true, || {
            common::raw_kernel(
                "MatrixMul_device",
                common::SEED_000_MATRIX_MUL,
                [n as u32, 1, 1],
                [32, 1, 1],
                &[&a, &pitch, &n32, &n32, &b, &pitch, &n32, &n32, &c, &pitch],
            )
        })?;
        c.view::<M>().copy_to(&mut hc)?;
        Some(t).filter(|_| hc.as_slice().is_ok_and(|h| h == want.as_slice()))
    } else {
        None
    };
    println!("backend: {backend}");
    println!("host to padded rows: {path}");
    let rows = host! { $dim_1(STORE)$ };
    let name = format!("pitch ({n}^2, rows of {rows})");
    common::seed_row(&name, backend, parray, seed, ok);
    common::check(ok && matches!(path, CopyPath::Strided(_)) && (!device || seed.is_some()));
    Ok(())
}
