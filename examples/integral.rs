//! Seed 003's integral of sin^2(2x) cos^2(x) over [0, 40000 pi] by the midpoint rule, in
//! double precision, in the seed's five versions: (1) every thread `atomic_add`s its term
//! to the result; (2) to a shared sum per block, added once per block; (3) a warp sum by
//! `shfl_down` first, one shared atomic per warp; (4) the same over a grid-stride loop;
//! (5) two passes: a warp sum per block into an array, then one warp sums the array.
//! The five share one `term`, a function of the body language (`#[parray::func]`).
//! Each result is checked within 1e-12 (relative) of the closed form F(ub) - F(lb) (at
//! fewer than 4 points a period of the integrand, of the same sum on the CPU), but
//! version 1's: its 10^6 terms are added one after another into one double, whose
//! rounding alone (about 10^-16 of 3 * 10^4 per addition) leaves it near 5e-12; it is
//! checked within 1e-10 (that of a sequential sum of 10^6 terms). The
//! seed's 64-lane wavefronts are CUDA's 32-lane warps here (five shuffles, not six).
//! Versions 1-3 run one thread per point at the seed's first N = 10^6; 4 and 5 at the
//! seed's N = 10^8 (`--small`: 10^6). `--n N` runs all five at N points, a run-time size
//! (versions 1-3 then launch ceil(N / 256) blocks). On a GPU each is timed beside the
//! seed's kernel.

mod common;

use parray::prelude::*;

parray! {
    const PARTS = 31250;
    const POINTS;
    dmem double [1] RESULT;
    dmem double [PARTS] PARTIAL;
    smem double [1] SHARED;
    // Versions 1-3: one thread per point (3907 blocks cover 10^6).
    cuda(double* integral, double lb, int n, double dx) [ceil(POINTS / 256)][256] PER_POINT;
    // Version 4: a grid-stride loop.
    cuda(double* integral, double lb, int n, double dx) [1024][256] STRIDE;
    // Version 5: one warp per block, a sum per block; then one warp sums them.
    cuda(double* res_warp, double lb, int n, double dx) [PARTS][32] WARPS;
    cuda(double* res_warp, double* integral) [1][32] SUM;
}

/// The seed's kernels, in CUDA (its `__shfl_down(v, d, 64)` is `__shfl_down_sync` over
/// CUDA's 32 lanes, so five steps).
const SEED: &str = r#"
__device__ double term(double lb, int i, double dx) {
    double x = lb + (i + 0.5) * dx;
    double s = sin(2 * x); s *= s;
    double c = cos(x); c *= c;
    return s * c * dx;
}
extern "C" __global__ void v1(double* Integral, double lb, int N, double dx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) atomicAdd(Integral, term(lb, i, dx));
}
extern "C" __global__ void v2(double* Integral, double lb, int N, double dx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int tid = threadIdx.x;
    __shared__ double tmp_sh;
    if (tid == 0) tmp_sh = 0.0;
    __syncthreads();
    if (i < N) atomicAdd(&tmp_sh, term(lb, i, dx));
    __syncthreads();
    if (tid == 0) atomicAdd(Integral, tmp_sh);
}
extern "C" __global__ void v3(double* Integral, double lb, int N, double dx) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int tid = threadIdx.x;
    double tmp = 0.0;
    __shared__ double tmp_sh;
    if (tid == 0) tmp_sh = 0.0;
    __syncthreads();
    if (i < N) tmp += term(lb, i, dx);
    for (int delta = 16; delta > 0; delta /= 2) tmp += __shfl_down_sync(0xffffffffu, tmp, delta);
    if (tid % 32 == 0) atomicAdd(&tmp_sh, tmp);
    __syncthreads();
    if (tid == 0) atomicAdd(Integral, tmp_sh);
}
extern "C" __global__ void v4(double* Integral, double lb, int N, double dx) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    int tid = threadIdx.x;
    double tmp = 0.0;
    __shared__ double tmp_sh;
    if (tid == 0) tmp_sh = 0.0;
    __syncthreads();
    for (int i = index; i < N; i += stride) tmp += term(lb, i, dx);
    for (int delta = 16; delta > 0; delta /= 2) tmp += __shfl_down_sync(0xffffffffu, tmp, delta);
    if (tid % 32 == 0) atomicAdd(&tmp_sh, tmp);
    __syncthreads();
    if (tid == 0) atomicAdd(Integral, tmp_sh);
}
extern "C" __global__ void v5(double* res_warp, double lb, int N, double dx) {
    int index = blockIdx.x * blockDim.x + threadIdx.x;
    int stride = gridDim.x * blockDim.x;
    double tmp = 0.0;
    for (int i = index; i < N; i += stride) tmp += term(lb, i, dx);
    for (int delta = 16; delta > 0; delta /= 2) tmp += __shfl_down_sync(0xffffffffu, tmp, delta);
    if (threadIdx.x == 0) res_warp[blockIdx.x] = tmp;
}
extern "C" __global__ void v5_sum(double* res_warp, int numBlocks, double* Integral) {
    double tmp = 0.0;
    for (int i = threadIdx.x; i < numBlocks; i += 32) tmp += res_warp[i];
    for (int delta = 16; delta > 0; delta /= 2) tmp += __shfl_down_sync(0xffffffffu, tmp, delta);
    if (threadIdx.x == 0) *Integral = tmp;
}
"#;

/// The seed's `term`: the midpoint rule's term of point `i`, one function for the five
/// versions (a `__device__` function on the GPU).
#[parray::func]
fn term(lb: f64, i: usize, dx: f64) -> f64 {
    let x = lb + (i as f64 + 0.5) * dx;
    let s = (2.0 * x).sin();
    let c = x.cos();
    s * s * (c * c) * dx
}

type Args<'a> = (&'a mut Array<RESULT>, f64, i32, f64);

fn v1((r, lb, n, dx): Args) -> parray::Result<()> {
    detour!(PER_POINT(r, lb, n, dx) {
        let i = $tid$;
        if i < n as usize {
            atomic_add(integral + $RESULT[0]$, term(lb, i, dx));
        }
    })
}

fn v2((r, lb, n, dx): Args) -> parray::Result<()> {
    detour!(PER_POINT(r, lb, n, dx) {
        let sum = SHARED::create();
        if $tid_1$ == 0 {
            sum[0] = 0.0;
        }
        #sync;
        let i = $tid$;
        if i < n as usize {
            atomic_add(sum + 0, term(lb, i, dx));
        }
        #sync;
        if $tid_1$ == 0 {
            atomic_add(integral + $RESULT[0]$, sum[0]);
        }
    })
}

fn v3((r, lb, n, dx): Args) -> parray::Result<()> {
    detour!(PER_POINT(r, lb, n, dx) {
        let sum = SHARED::create();
        if $tid_1$ == 0 {
            sum[0] = 0.0;
        }
        #sync;
        let mut tmp = 0.0f64;
        let i = $tid$;
        if i < n as usize {
            tmp = term(lb, i, dx);
        }
        let mut delta = 16u32;
        while delta > 0 {
            tmp += shfl_down(tmp, delta);
            delta /= 2;
        }
        if $tid_1$ % 32 == 0 {
            atomic_add(sum + 0, tmp);
        }
        #sync;
        if $tid_1$ == 0 {
            atomic_add(integral + $RESULT[0]$, sum[0]);
        }
    })
}

fn v4((r, lb, n, dx): Args) -> parray::Result<()> {
    detour!(STRIDE(r, lb, n, dx) {
        let sum = SHARED::create();
        if $tid_1$ == 0 {
            sum[0] = 0.0;
        }
        #sync;
        let mut tmp = 0.0f64;
        let mut i = $tid$;
        while i < n as usize {
            tmp += term(lb, i, dx);
            i += $size(STRIDE)$;
        }
        let mut delta = 16u32;
        while delta > 0 {
            tmp += shfl_down(tmp, delta);
            delta /= 2;
        }
        if $tid_1$ % 32 == 0 {
            atomic_add(sum + 0, tmp);
        }
        #sync;
        if $tid_1$ == 0 {
            atomic_add(integral + $RESULT[0]$, sum[0]);
        }
    })
}

fn v5((r, lb, n, dx): Args, parts: &mut Array<PARTIAL>) -> parray::Result<()> {
    detour!(WARPS(&mut *parts, lb, n, dx) {
        let mut tmp = 0.0f64;
        let mut i = $tid$;
        while i < n as usize {
            tmp += term(lb, i, dx);
            i += $size(WARPS)$;
        }
        let mut delta = 16u32;
        while delta > 0 {
            tmp += shfl_down(tmp, delta);
            delta /= 2;
        }
        if $tid_1$ == 0 {
            res_warp[$PARTIAL[$tid_0$]$] = tmp;
        }
    })?;
    detour!(SUM(&*parts, r) {
        let mut tmp = 0.0f64;
        let mut i = $tid_1$;
        while i < $size(PARTIAL)$ {
            tmp += res_warp[$PARTIAL[i]$];
            i += 32;
        }
        let mut delta = 16u32;
        while delta > 0 {
            tmp += shfl_down(tmp, delta);
            delta /= 2;
        }
        if $tid_1$ == 0 {
            integral[$RESULT[0]$] = tmp;
        }
    })
}

/// The antiderivative the seed checks against.
fn antiderivative(x: f64) -> f64 {
    x / 4.0 + (2.0 * x).sin() / 16.0 - (4.0 * x).sin() / 16.0 - (6.0 * x).sin() / 48.0
}

/// What `n` midpoints over `[lb, ub]` (40000 periods of the integrand, pi) sum to: the
/// integral where a period has at least 4 points (the rule is then exact for the
/// integrand's harmonics, up to e^{6ix}), else the same sum on the CPU, compensated (fewer
/// points alias the harmonics).
fn reference(lb: f64, ub: f64, n: i32) -> f64 {
    if n >= 4 * 40000 {
        return antiderivative(ub) - antiderivative(lb);
    }
    let dx = (ub - lb) / f64::from(n);
    let (mut sum, mut lost) = (0.0f64, 0.0f64);
    for i in 0..n {
        let x = lb + (f64::from(i) + 0.5) * dx;
        let term = (2.0 * x).sin().powi(2) * x.cos().powi(2) * dx;
        // Neumaier's summation.
        let t = sum + term;
        lost += match sum.abs() >= term.abs() {
            true => (sum - t) + term,
            false => (term - t) + sum,
        };
        sum = t;
    }
    sum + lost
}

fn main() -> parray::Result<()> {
    let (lb, ub) = (0.0, 40000.0 * std::f64::consts::PI);
    let one = common::size_arg("integral", 1_000_000);
    let big = match common::small() || std::env::args().any(|a| a == "--n") {
        true => one,
        false => 100_000_000,
    };
    POINTS.bind(one)?;
    // The argument `n` is an `int`, as in the seed.
    let (one, big) = match (i32::try_from(one), i32::try_from(big)) {
        (Ok(one), Ok(big)) => (one, big),
        _ => {
            eprintln!("integral: N is at most 2^31 - 1 (the seed's `int N`)");
            std::process::exit(2);
        }
    };
    let (mut result, mut parts) = (RESULT::create()?, PARTIAL::create()?);
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    println!("backend: {backend}");
    let mut all = true;
    for version in 1..=5 {
        let n: i32 = if version <= 3 { one } else { big };
        let dx = (ub - lb) / n as f64;
        let exact = reference(lb, ub, n);
        let parray = common::median_time(repeats, true, || {
            result.fill(0.0)?;
            let args = (&mut result, lb, n, dx);
            match version {
                1 => v1(args),
                2 => v2(args),
                3 => v3(args),
                4 => v4(args),
                _ => v5(args, &mut parts),
            }
        })?;
        let got = result.to_vec()?[0];
        let tolerance = if version == 1 { 1e-10 } else { 1e-12 };
        let ok = ((got - exact) / exact).abs() <= tolerance;
        let seed = if device {
            let blocks = (n as u32).div_ceil(256);
            let t = common::median_time(repeats, true, || {
                result.fill(0.0)?;
                let run = |k, grid, block, args: &[&dyn parray::gpu::KernelArg]| {
                    common::raw_kernel(k, SEED, [grid, 1, 1], [block, 1, 1], args)
                };
                match version {
                    1 => run("v1", blocks, 256, &[&result, &lb, &n, &dx]),
                    2 => run("v2", blocks, 256, &[&result, &lb, &n, &dx]),
                    3 => run("v3", blocks, 256, &[&result, &lb, &n, &dx]),
                    4 => run("v4", 1024, 256, &[&result, &lb, &n, &dx]),
                    _ => {
                        run("v5", 31250, 32, &[&parts, &lb, &n, &dx])?;
                        let count = 31250i32;
                        run("v5_sum", 1, 32, &[&parts, &count, &result])
                    }
                }
            })?;
            // The seed's kernels are the baseline: their sums round in their own order, so
            // the bound is looser; a launch that went wrong fails the check.
            let seed_value = result.to_vec()?[0];
            let seed_error = ((seed_value - exact) / exact).abs();
            if seed_error > 1e-9 {
                println!("  the seed kernel gave {seed_value:.11}");
                all = false;
            }
            Some(t)
        } else {
            None
        };
        common::seed_row(
            &format!("integral v{version} (N = {n})"),
            backend,
            parray,
            seed,
            ok,
        );
        println!("  numeric {got:.11}, reference {exact:.11}");
        all &= ok;
    }
    common::check(all);
    Ok(())
}
