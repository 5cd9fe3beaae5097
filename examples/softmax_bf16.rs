//! The softmax of each row of an 8192 x 4096 matrix of `bf16` (`--small`: its first 64
//! rows), computed in `f32`: a block per row (grid-stride over the rows), the row's maximum
//! and its sum of `exp(x - max)` reduced by shuffles within warps and through shared
//! memory across them, then each element written back as `bf16`. Checked against an `f64`
//! softmax of the same inputs (within `bf16`'s rounding); on a GPU, timed beside the same
//! kernel written by hand in CUDA C and the driver's copy of the same bytes (the floor: a
//! softmax reads and writes each element once).

mod common;

use parray::bf16;
use parray::gpu::Timing;
use parray::prelude::*;

parray! {
    const ROWS = 8192;
    const COLS = 4096;
    const THREADS = 256;
    const WARPS = THREADS / 32;
    dmem bf16 [ROWS][COLS] M;
    smem float [WARPS] PARTS;
    cuda(bf16* x, bf16* y, int rows) [528][THREADS] SOFTMAX;
}

/// The same kernel by hand.
const HAND: &str = r#"
#include <cuda_bf16.h>
__device__ float block_reduce(float v, float* parts, bool is_max) {
    for (int d = 16; d > 0; d /= 2) {
        float o = __shfl_down_sync(0xffffffffu, v, d);
        v = is_max ? fmaxf(v, o) : v + o;
    }
    if (threadIdx.x % 32 == 0) parts[threadIdx.x / 32] = v;
    __syncthreads();
    float r = parts[0];
    for (int w = 1; w < 8; w++) r = is_max ? fmaxf(r, parts[w]) : r + parts[w];
    __syncthreads();
    return r;
}
extern "C" __global__ void softmax(const __nv_bfloat16* x, __nv_bfloat16* y, int rows) {
    __shared__ float parts[8];
    for (int row = blockIdx.x; row < rows; row += gridDim.x) {
        const __nv_bfloat16* in = x + (size_t)row * 4096;
        float m = __int_as_float(0xff800000);
        for (int j = threadIdx.x; j < 4096; j += 256) m = fmaxf(m, __bfloat162float(in[j]));
        m = block_reduce(m, parts, true);
        float s = 0.0f;
        for (int j = threadIdx.x; j < 4096; j += 256) s += expf(__bfloat162float(in[j]) - m);
        s = block_reduce(s, parts, false);
        for (int j = threadIdx.x; j < 4096; j += 256)
            y[(size_t)row * 4096 + j] = __float2bfloat16_rn(expf(__bfloat162float(in[j]) - m) / s);
    }
}
"#;

fn softmax(x: &Array<M>, y: &mut Array<M>, rows: i32) -> parray::Result<()> {
    detour!(SOFTMAX(x, y, rows) {
        let parts = PARTS::create();
        let lane = $tid_1$ % 32;
        let warp = $tid_1$ / 32;
        // At most the matrix's rows: the prover then shows every access in bounds.
        let rows = (rows as usize).min($dim(M_0)$);
        let mut row = $tid_0$;
        while row < rows {
            // Each loop its own variable, stepped once at its end: the prover's stride loop.
            let mut m = f32::NEG_INFINITY;
            let mut j = $tid_1$;
            while j < $dim(M_1)$ {
                m = m.max(x[$M[row][j]$] as f32);
                j += $size(PARTS)$ * 32;
            }
            #[unroll]
            for k in 0..5 {
                m = m.max(shfl_down(m, 16u32 >> k));
            }
            if lane == 0 {
                parts[warp] = m;
            }
            #sync;
            let mut max = parts[0];
            for w in 1..$size(PARTS)$ {
                max = max.max(parts[w]);
            }
            #sync;
            let mut s = 0.0f32;
            let mut j = $tid_1$;
            while j < $dim(M_1)$ {
                s += (x[$M[row][j]$] as f32 - max).exp();
                j += $size(PARTS)$ * 32;
            }
            #[unroll]
            for k in 0..5 {
                s += shfl_down(s, 16u32 >> k);
            }
            if lane == 0 {
                parts[warp] = s;
            }
            #sync;
            let mut sum = parts[0];
            for w in 1..$size(PARTS)$ {
                sum += parts[w];
            }
            #sync;
            let mut j = $tid_1$;
            while j < $dim(M_1)$ {
                y[$M[row][j]$] = ((x[$M[row][j]$] as f32 - max).exp() / sum) as bf16;
                j += $size(PARTS)$ * 32;
            }
            row += $dim(SOFTMAX_0)$;
        }
    })
}

/// Whether each of the first `rows` rows of `y` is the softmax of that row of `x`, within
/// `bf16`'s rounding (a relative 2^-8) and `f32`'s `exp`.
fn check(x: &[bf16], y: &[bf16], rows: usize, cols: usize) -> bool {
    (0..rows).all(|r| {
        let row = &x[r * cols..(r + 1) * cols];
        let max = row
            .iter()
            .map(|v| v.to_f64())
            .fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v.to_f64() - max).exp()).sum();
        row.iter().zip(&y[r * cols..]).all(|(v, got)| {
            let want = (v.to_f64() - max).exp() / sum;
            (got.to_f64() - want).abs() <= want * 2f64.powi(-8) + 1e-9
        })
    })
}

fn main() -> parray::Result<()> {
    let (all_rows, cols) = host! { ($dim(M_0)$, $dim(M_1)$) };
    let rows = if common::small() { 64 } else { all_rows };
    let values: Vec<bf16> = common::random_values(all_rows * cols, 7)
        .into_iter()
        .map(|v| bf16::from_f32(v * 8.0))
        .collect();
    let mut x = M::create()?;
    x.copy_from_slice(&values)?;
    let mut y = M::create()?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let parray = common::median_time(repeats, true, || softmax(&x, &mut y, rows as i32))?;
    let ok = check(&values, &y.to_vec()?, rows, cols);
    println!("backend: {backend}");
    let bytes = 2 * rows * cols * size_of::<bf16>();
    let rate = |t: Timing| bytes as f64 / t.seconds() / 1e9;
    println!(
        "softmax of {rows} x {cols} bf16: parray {parray}, {:.1} GB/s{}",
        rate(parray),
        parray.note()
    );
    if device {
        let hand = common::median_time(repeats, true, || {
            common::raw_kernel(
                "softmax",
                HAND,
                [528, 1, 1],
                [256, 1, 1],
                &[&x, &y, &(rows as i32)],
            )
        })?;
        let hand_ok = check(&values, &y.to_vec()?, rows, cols);
        let copy = common::device_copy_time(&x, &y, bytes / 2)?;
        common::beside_hand_and_copy(parray, hand, hand_ok, copy, bytes);
    }
    common::check(ok);
    Ok(())
}
