//! Layer normalisation of each row of a `--rows R --cols C` matrix of `bf16` (8192 x 4096
//! on a GPU; 64 rows under the emulation or with `--small`), computed in `f32`:
//! `y = (x - mean) / sqrt(var + 1e-5) * gamma + beta`, with `gamma` and `beta` per column
//! in `f32`. A block per row (grid-stride over the rows): the row's sum, then its sum of
//! squared deviations from the mean, each reduced by shuffles within warps (`examples/common/warp.rs`) and through
//! shared memory across them, then each element written back as `bf16`. The same body over
//! `float` rows (one `macro_rules!` body, only the types differ) moves twice the bytes.
//! Each is checked against an `f64` layer norm of the same inputs; on a GPU, timed beside
//! the driver's copy of the same bytes (the floor: the kernel reads each element twice,
//! the second time from cache, and writes it once).

mod common;
// Not in `common`, which the examples that include others include twice: the functions'
// companions would be defined twice in one crate.
#[path = "common/warp.rs"]
mod warp;

use parray::bf16;
use parray::prelude::*;
use warp::warp_sum;

parray! {
    const ROWS;
    const COLS;
    const THREADS = 256;
    const WARPS = THREADS / 32;
    dmem bf16 [ROWS][COLS] M;
    dmem float [ROWS][COLS] MF;
    dmem float [COLS] V;
    smem float [WARPS] PARTS;
    cuda(bf16* x, bf16* y, float* gamma, float* beta) [528][THREADS] NORM;
    cuda(float* x, float* y, float* gamma, float* beta) [528][THREADS] NORM_F32;
}

/// `$grid`'s layer norm of each row of `$x` (of the type `$m`) into `$y`, storing
/// `$elem`: one body for both element types (`$d` is the `$` of the `$...$` forms).
macro_rules! layer_norm_rows {
    ($d:tt $grid:ident, $m:ident, $elem:ident, $x:expr, $y:expr, $gamma:expr, $beta:expr) => {
        detour!($grid($x, $y, $gamma, $beta) {
            let parts = PARTS::create();
            let lane = $d tid_1 $d % 32;
            let warp = $d tid_1 $d / 32;
            let mut row = $d tid_0 $d;
            while row < ROWS {
                let mut s = 0.0f32;
                let mut j = $d tid_1 $d;
                while j < COLS {
                    s += x[$d $m[row][j] $d] as f32;
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
                let mean = sum / COLS as f32;
                // The deviations' squares: two passes, so no cancellation of large means.
                let mut q = 0.0f32;
                let mut j = $d tid_1 $d;
                while j < COLS {
                    let d = x[$d $m[row][j] $d] as f32 - mean;
                    q += d * d;
                    j += THREADS;
                }
                let q = warp_sum(q);
                if lane == 0 {
                    parts[warp] = q;
                }
                #sync;
                let mut squares = parts[0];
                for w in 1..WARPS {
                    squares += parts[w];
                }
                #sync;
                let scale = 1.0f32 / (squares / COLS as f32 + 1e-5).sqrt();
                let mut j = $d tid_1 $d;
                while j < COLS {
                    let d = x[$d $m[row][j] $d] as f32 - mean;
                    y[$d $m[row][j] $d] = (d * scale * gamma[$d V[j] $d] + beta[$d V[j] $d]) as $elem;
                    j += THREADS;
                }
                row += $d dim(NORM_0) $d;
            }
        })
    };
}

fn layer_norm(x: &Array<M>, y: &mut Array<M>, g: &Array<V>, b: &Array<V>) -> parray::Result<()> {
    layer_norm_rows!($ NORM, M, bf16, x, y, g, b)
}

fn layer_norm_f32(
    x: &Array<MF>,
    y: &mut Array<MF>,
    g: &Array<V>,
    b: &Array<V>,
) -> parray::Result<()> {
    layer_norm_rows!($ NORM_F32, MF, f32, x, y, g, b)
}

/// Whether each row of `y` is the layer norm of that row of `x` with `gamma` and `beta`,
/// within `tolerance` relative to the value plus `floor` (the element's rounding, and
/// `f32`'s sums of `cols` terms).
fn check(
    x: &[f64],
    y: &[f64],
    gamma: &[f32],
    beta: &[f32],
    (tolerance, floor): (f64, f64),
) -> bool {
    let cols = gamma.len();
    x.chunks(cols).zip(y.chunks(cols)).all(|(row, got)| {
        let mean = row.iter().sum::<f64>() / cols as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / cols as f64;
        let scale = 1.0 / (var + 1e-5).sqrt();
        row.iter().enumerate().zip(got).all(|((j, v), got)| {
            let want = (v - mean) * scale * f64::from(gamma[j]) + f64::from(beta[j]);
            (got - want).abs() <= want.abs() * tolerance + floor
        })
    })
}

fn main() -> parray::Result<()> {
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let (rows, cols, note) = common::rows_and_cols(device);
    ROWS.bind(rows)?;
    COLS.bind(cols)?;
    // Rows with a mean away from zero (3 + noise), as activations have.
    let values: Vec<bf16> = common::random_values(rows * cols, 5)
        .into_iter()
        .map(|v| bf16::from_f32(3.0 + v * 2.0))
        .collect();
    let exact: Vec<f64> = values.iter().map(|v| v.to_f64()).collect();
    let gamma: Vec<f32> = common::random_values(cols, 6)
        .iter()
        .map(|v| 1.0 + v / 2.0)
        .collect();
    let beta: Vec<f32> = common::random_values(cols, 8)
        .iter()
        .map(|v| v / 4.0)
        .collect();
    let (mut x, mut y) = (M::create()?, M::create()?);
    x.copy_from_slice(&values)?;
    let (mut xf, mut yf) = (MF::create()?, MF::create()?);
    xf.copy_from_slice(&values.iter().map(|v| v.to_f32()).collect::<Vec<_>>())?;
    let (mut g, mut b) = (V::create()?, V::create()?);
    g.copy_from_slice(&gamma)?;
    b.copy_from_slice(&beta)?;

    let parray = common::median_time(repeats, true, || layer_norm(&x, &mut y, &g, &b))?;
    let got: Vec<f64> = y.to_vec()?.iter().map(|v| v.to_f64()).collect();
    // A bf16 result rounds once (2^-9 relative); the f32 sums add a little below that.
    let ok = check(&exact, &got, &gamma, &beta, (2f64.powi(-8), 1e-3));
    let wide = common::median_time(repeats, true, || layer_norm_f32(&xf, &mut yf, &g, &b))?;
    let got: Vec<f64> = yf.to_vec()?.iter().map(|&v| f64::from(v)).collect();
    let ok_f32 = check(&exact, &got, &gamma, &beta, (1e-5, 1e-5));

    println!("backend: {backend}");
    let bytes = 2 * rows * cols * size_of::<bf16>();
    let what = format!("layer norm of {rows} x {cols} bf16{note}");
    common::bf16_beside_f32(&what, parray, wide, ok_f32, bytes);
    if device {
        let copy = common::device_copy_time(&x, &y, bytes / 2)?;
        let copy_f32 = common::device_copy_time(&xf, &yf, bytes)?;
        println!(
            "  the driver's copy of the bytes: bf16 {copy} ({:.0} GB/s), f32 {copy_f32} ({:.0} GB/s); parray / copy: bf16 {:.2}, f32 {:.2}",
            bytes as f64 / copy.seconds() / 1e9,
            2.0 * bytes as f64 / copy_f32.seconds() / 1e9,
            parray.ms / copy.ms,
            wide.ms / copy_f32.ms
        );
    }
    common::check(ok && ok_f32);
    Ok(())
}
