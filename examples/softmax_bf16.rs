//! The softmax of each row of a `--rows R --cols C` matrix of `bf16` (8192 x 4096 on a
//! GPU; 64 rows under the emulation or with `--small`), computed in `f32`: a block per row
//! (grid-stride over the rows), the row's maximum and its sum of `exp(x - max)` reduced by
//! shuffles within warps (`examples/common/warp.rs`) and through shared memory across them, then each element written
//! back as `bf16`. The same body over `float` rows (one `macro_rules!` body, only the
//! types differ) moves twice the bytes. Each is checked against an `f64` softmax of the
//! same inputs (within its element's rounding); on a GPU, timed beside the `bf16` kernel
//! written by hand in CUDA C and the driver's copy of the same bytes (the floor: a
//! softmax reads and writes each element once).

mod common;
// Not in `common`, which the examples that include others include twice: the functions'
// companions would be defined twice in one crate.
#[path = "common/warp.rs"]
mod warp;

use parray::bf16;
use parray::prelude::*;
use warp::{warp_max, warp_sum};

parray! {
    const ROWS;
    const COLS;
    const THREADS = 256;
    const WARPS = THREADS / 32;
    dmem bf16 [ROWS][COLS] M;
    dmem float [ROWS][COLS] MF;
    smem float [WARPS] PARTS;
    cuda(bf16* x, bf16* y) [528][THREADS] SOFTMAX;
    cuda(float* x, float* y) [528][THREADS] SOFTMAX_F32;
}

/// The `bf16` kernel by hand.
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
extern "C" __global__ void softmax(const __nv_bfloat16* x, __nv_bfloat16* y, int rows, int cols) {
    __shared__ float parts[8];
    for (int row = blockIdx.x; row < rows; row += gridDim.x) {
        const __nv_bfloat16* in = x + (size_t)row * cols;
        float m = __int_as_float(0xff800000);
        for (int j = threadIdx.x; j < cols; j += 256) m = fmaxf(m, __bfloat162float(in[j]));
        m = block_reduce(m, parts, true);
        float s = 0.0f;
        for (int j = threadIdx.x; j < cols; j += 256) s += expf(__bfloat162float(in[j]) - m);
        s = block_reduce(s, parts, false);
        for (int j = threadIdx.x; j < cols; j += 256)
            y[(size_t)row * cols + j] = __float2bfloat16_rn(expf(__bfloat162float(in[j]) - m) / s);
    }
}
"#;

/// The softmax of each row of `$x` (of the type `$m`) into `$y`, on the grid `$grid`,
/// storing `$elem`: one body for both element types (`$d` is the `$` of the `$...$` forms,
/// which a `macro_rules!` cannot write itself).
macro_rules! softmax_rows {
    ($d:tt $grid:ident, $m:ident, $elem:ident, $x:expr, $y:expr) => {
        detour!($grid($x, $y) {
            let parts = PARTS::create();
            let lane = $d tid_1 $d % 32;
            let warp = $d tid_1 $d / 32;
            let mut row = $d tid_0 $d;
            while row < ROWS {
                // Each loop its own variable, stepped once at its end: the prover's stride loop.
                let mut m = f32::NEG_INFINITY;
                let mut j = $d tid_1 $d;
                while j < COLS {
                    m = m.max(x[$d $m[row][j] $d] as f32);
                    j += THREADS;
                }
                let m = warp_max(m);
                if lane == 0 {
                    parts[warp] = m;
                }
                #sync;
                let mut max = parts[0];
                for w in 1..WARPS {
                    max = max.max(parts[w]);
                }
                #sync;
                let mut s = 0.0f32;
                let mut j = $d tid_1 $d;
                while j < COLS {
                    s += (x[$d $m[row][j] $d] as f32 - max).exp();
                    j += THREADS;
                }
                let s = warp_sum(s);
                if lane == 0 {
                    parts[warp] = s;
                }
                #sync;
                let mut sum = parts[0];
                for w in 1..WARPS {
                    sum += parts[w];
                }
                #sync;
                let mut j = $d tid_1 $d;
                while j < COLS {
                    y[$d $m[row][j] $d] = ((x[$d $m[row][j] $d] as f32 - max).exp() / sum) as $elem;
                    j += THREADS;
                }
                row += $d dim(SOFTMAX_0) $d;
            }
        })
    };
}

fn softmax(x: &Array<M>, y: &mut Array<M>) -> parray::Result<()> {
    softmax_rows!($ SOFTMAX, M, bf16, x, y)
}

fn softmax_f32(x: &Array<MF>, y: &mut Array<MF>) -> parray::Result<()> {
    softmax_rows!($ SOFTMAX_F32, MF, f32, x, y)
}

/// Whether each row of `y` is the softmax of that row of `x` (`cols` wide), within a
/// relative `tolerance` (the element's rounding and `f32`'s `exp`).
fn check(x: &[f64], y: &[f64], cols: usize, tolerance: f64) -> bool {
    x.chunks(cols).zip(y.chunks(cols)).all(|(row, got)| {
        let max = row.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        let sum: f64 = row.iter().map(|v| (v - max).exp()).sum();
        row.iter().zip(got).all(|(v, got)| {
            let want = (v - max).exp() / sum;
            (got - want).abs() <= want * tolerance + 1e-9
        })
    })
}

fn main() -> parray::Result<()> {
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let (rows, cols, note) = common::rows_and_cols(device);
    ROWS.bind(rows)?;
    COLS.bind(cols)?;
    let values: Vec<bf16> = common::random_values(rows * cols, 7)
        .into_iter()
        .map(|v| bf16::from_f32(v * 8.0))
        .collect();
    // The same inputs in both precisions.
    let exact: Vec<f64> = values.iter().map(|v| v.to_f64()).collect();
    let mut x = M::create()?;
    x.copy_from_slice(&values)?;
    let mut y = M::create()?;
    let mut xf = MF::create()?;
    xf.copy_from_slice(&values.iter().map(|v| v.to_f32()).collect::<Vec<_>>())?;
    let mut yf = MF::create()?;

    let parray = common::median_time(repeats, true, || softmax(&x, &mut y))?;
    let got: Vec<f64> = y.to_vec()?.iter().map(|v| v.to_f64()).collect();
    let ok = check(&exact, &got, cols, 2f64.powi(-8));
    let wide = common::median_time(repeats, true, || softmax_f32(&xf, &mut yf))?;
    let got: Vec<f64> = yf.to_vec()?.iter().map(|&v| f64::from(v)).collect();
    let ok_f32 = check(&exact, &got, cols, 1e-5);

    println!("backend: {backend}");
    let bytes = 2 * rows * cols * size_of::<bf16>();
    let what = format!("softmax of {rows} x {cols} bf16{note}");
    common::bf16_beside_f32(&what, parray, wide, ok_f32, bytes);
    if device {
        let hand = common::median_time(repeats, true, || {
            common::raw_kernel(
                "softmax",
                HAND,
                [528, 1, 1],
                [256, 1, 1],
                &[&x, &y, &(rows as i32), &(cols as i32)],
            )
        })?;
        let got: Vec<f64> = y.to_vec()?.iter().map(|v| v.to_f64()).collect();
        let hand_ok = check(&exact, &got, cols, 2f64.powi(-8));
        let copy = common::device_copy_time(&x, &y, bytes / 2)?;
        common::beside_hand_and_copy(parray, hand, hand_ok, copy, bytes);
        let copy_f32 = common::device_copy_time(&xf, &yf, bytes)?;
        println!(
            "  f32: the driver's copy of its bytes {copy_f32} ({:.0} GB/s); parray f32 / copy {:.2}",
            2.0 * bytes as f64 / copy_f32.seconds() / 1e9,
            wide.ms / copy_f32.ms
        );
    }
    common::check(ok && ok_f32);
    Ok(())
}
