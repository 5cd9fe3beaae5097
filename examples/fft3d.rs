//! The cluster FFT of the PPoPP'12 Parray paper: a 3-D complex single-precision FFT of an
//! N x N x N array distributed over the ranks of an MPI job by x-slabs. Each rank
//! transforms its x-planes in two dimensions, a `#copy` to the y-slabs is the global
//! transpose (an all-to-all the two types imply), and each rank transforms along x. Local
//! transforms are cuFFT's on GPUs (rank r on device r mod the devices) and rustfft's on
//! the CPU (the emulation). Rank 0 checks the result against a 3-D FFT computed on its
//! own (rustfft in f64 up to N = 128, cuFFT's own 3-D plan beyond), and on a GPU each
//! size is timed beside cuFFT's 3-D plan of the whole array on one GPU.
//!
//! ```text
//! cargo build --release --features parray/mpi --example fft3d
//! mpirun -n 2 target/release/examples/fft3d --n 512     (one rank: without mpirun)
//! ```

use parray::copy;
use parray::gpu::cufft::{Direction, FftPlan};
use parray::gpu::Timing;
use parray::prelude::*;
use parray::{DataType, Device, Float2};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// The types of one size on one number of ranks: the parray part of the program.
macro_rules! slabs {
    ($module:ident, $n:literal, $ranks:literal) => {
        // Generic code creates the arrays (`Array::<X>::new`), not `X::create`.
        #[allow(dead_code)]
        mod $module {
            parray::parray! {
                pub mpi [$ranks] P;
                // Rank r holds x-planes r N/R .. (r + 1) N/R - 1, each N x N (y, z) ...
                pub dmem float2 [[#P][$n / $ranks]][$n][$n] X_SLABS;
                // ... or y-planes: N x N/R x N (x, y, z), after the transpose.
                pub dmem float2 [$n][[#P][$n / $ranks]][$n] Y_SLABS;
                // All of it on rank 0, for the check.
                pub dmem float2 [1#P][$n][$n][$n] ON_ZERO;
            }

            pub fn run(args: &super::Args) -> parray::Result<bool> {
                super::fft3d::<X_SLABS, Y_SLABS, ON_ZERO>(args)
            }
        }
    };
}

slabs!(n32_on_1, 32, 1);
slabs!(n32_on_2, 32, 2);
slabs!(n32_on_4, 32, 4);
slabs!(n512_on_1, 512, 1);
slabs!(n512_on_2, 512, 2);
slabs!(n1024_on_1, 1024, 1);
slabs!(n1024_on_2, 1024, 2);

/// The command line: `--n N` (32, 512 or 1024) and `--repeats R`.
pub struct Args {
    n: usize,
    repeats: usize,
}

/// The input at logical index `k` (x, y, z row-major): a fixed pseudo-random complex
/// value, so that each rank makes its own part and rank 0 the whole.
fn input(k: u64) -> Float2 {
    let mut s = k.wrapping_add(1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    let mut next = || {
        s ^= s >> 31;
        s = s.wrapping_mul(0xBF58_476D_1CE4_E5B9);
        ((s >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    Float2::new(next(), next())
}

/// The 3-D FFT of the array of type `X` (x-slabs), through `Y` (y-slabs); checked on rank
/// 0 through `Z` (all on rank 0). Returns whether the check passed.
fn fft3d<X, Y, Z>(args: &Args) -> parray::Result<bool>
where
    X: DataType<Elem = Float2>,
    Y: DataType<Elem = Float2>,
    Z: DataType<Elem = Float2>,
{
    let job = parray::mpi::job()?;
    let n = args.n;
    let part = n / job.size;
    let device = Device::nth(job.rank % Device::count()?)?;
    device.make_current();
    // Rank r's x-planes: logical k = (r * part) * n * n + j for its element j.
    let values: Vec<Float2> = (0..part * n * n)
        .map(|j| input((job.rank * part * n * n + j) as u64))
        .collect();
    let (mut x, mut y) = (Array::<X>::new()?, Array::<Y>::new()?);
    // The local transforms: the x-planes in two dimensions, the y-slab along x.
    let planes = Local::new(&device, &[n, n], 1, n * n, part)?;
    let columns = Local::new(&device, &[n], part * n, 1, part * n)?;
    let mut transpose_times = Vec::new();
    let mut step = |x: &mut Array<X>| -> parray::Result<()> {
        planes.run(x)?;
        let time = parray::gpu::time_ms_on(&device, || copy::copy(x, &mut y).map(|_| ()))?;
        transpose_times.push(time);
        columns.run(&mut y)
    };
    let repeats = if device.is_emulated() {
        1
    } else {
        args.repeats
    };
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats + 1 {
        // A fresh input each time (the transforms are in place), uploaded untimed.
        x.copy_from_slice(&values)?;
        times.push(parray::gpu::time_ms_on(&device, || step(&mut x))?);
    }
    let time = median(&times[1.min(times.len() - 1)..]);
    let transpose = median(&transpose_times[1.min(transpose_times.len() - 1)..]);
    // Everything to rank 0, and the check there.
    let mut whole = Array::<Z>::new()?;
    copy::copy(&y, &mut whole)?;
    if job.rank != 0 {
        return Ok(true);
    }
    let got = whole.to_vec()?;
    let (error, reference, reference_time) = check(&device, n, &got, &mut whole, args.repeats)?;
    let flops = 5.0 * (n as f64).powi(3) * 3.0 * (n as f64).log2();
    println!(
        "fft3d N={n} ranks={} {}: {time}, {:.1} GFLOP/s{}, transpose {transpose} ({:.0}%); checked against {reference}{}: relative error {error:.2e}",
        job.size,
        if device.is_emulated() { "cpu (emulation)" } else { "gpu" },
        flops / time.ms / 1e6,
        time.note(),
        100.0 * transpose.ms / time.ms,
        reference_time.map_or(String::new(), |r| format!(" ({r}; ours {:.2}x its time)", time.ms / r.ms)),
    );
    Ok(error <= 1e-4)
}

/// The local transforms: cuFFT on a GPU, rustfft on the host under the emulation.
enum Local {
    Gpu(FftPlan),
    Cpu {
        fft: std::sync::Arc<dyn rustfft::Fft<f32>>,
        dims: Vec<usize>,
        stride: usize,
        dist: usize,
        batch: usize,
    },
}

impl Local {
    fn new(
        device: &Device,
        dims: &[usize],
        stride: usize,
        dist: usize,
        batch: usize,
    ) -> parray::Result<Local> {
        if !device.is_emulated() {
            return Ok(Local::Gpu(FftPlan::many(
                device, dims, stride, dist, batch,
            )?));
        }
        Ok(Local::Cpu {
            fft: FftPlanner::new().plan_fft_forward(dims[dims.len() - 1]),
            dims: dims.to_vec(),
            stride,
            dist,
            batch,
        })
    }

    fn run<T: DataType<Elem = Float2>>(&self, a: &mut Array<T>) -> parray::Result<()> {
        let (fft, dims, stride, dist, batch) = match self {
            Local::Gpu(plan) => return plan.run(a, Direction::Forward),
            Local::Cpu {
                fft,
                dims,
                stride,
                dist,
                batch,
            } => (fft, dims, *stride, *dist, *batch),
        };
        let mut v: Vec<Complex<f32>> = a.to_vec()?.iter().map(|c| Complex::new(c.x, c.y)).collect();
        let points: usize = dims.iter().product();
        for b in 0..batch {
            let at = |i: usize| b * dist + i * stride;
            let mut signal: Vec<Complex<f32>> = (0..points).map(|i| v[at(i)]).collect();
            fft_rows(&mut signal, dims, |line| fft.process(line));
            for (i, c) in signal.into_iter().enumerate() {
                v[at(i)] = c;
            }
        }
        a.copy_from_slice(
            &v.iter()
                .map(|c| Float2::new(c.re, c.im))
                .collect::<Vec<_>>(),
        )
    }
}

/// A row-major multi-dimensional transform by one-dimensional ones along each axis (all
/// axes of the same length, which `fft` transforms).
fn fft_rows<T: Copy + Default>(v: &mut [T], dims: &[usize], mut fft: impl FnMut(&mut [T])) {
    let n = dims[0];
    for axis in 0..dims.len() {
        let stride: usize = dims[axis + 1..].iter().product();
        for start in (0..v.len()).filter(|i| (i / stride).is_multiple_of(n)) {
            let mut line: Vec<T> = (0..n).map(|i| v[start + i * stride]).collect();
            fft(&mut line);
            for (i, c) in line.into_iter().enumerate() {
                v[start + i * stride] = c;
            }
        }
    }
}

/// The relative L2 error of `got` against a 3-D FFT of the input made here (in `scratch`,
/// the whole array on this GPU, for cuFFT's), what made it, and its time when it is
/// cuFFT's.
fn check<Z: DataType<Elem = Float2>>(
    device: &Device,
    n: usize,
    got: &[Float2],
    scratch: &mut Array<Z>,
    repeats: usize,
) -> parray::Result<(f64, String, Option<Timing>)> {
    let (want, name, time): (Vec<Complex<f64>>, _, _) = if n <= 128 {
        let mut v: Vec<Complex<f64>> = (0..(n * n * n) as u64)
            .map(input)
            .map(|c| Complex::new(f64::from(c.x), f64::from(c.y)))
            .collect();
        let fft = FftPlanner::new().plan_fft_forward(n);
        fft_rows(&mut v, &[n, n, n], |line| fft.process(line));
        (v, "rustfft 3-D (f64)".to_string(), None)
    } else {
        // cuFFT's own 3-D plan on this GPU: the reference and the baseline.
        let plan = FftPlan::many(device, &[n, n, n], 1, n * n * n, 1)?;
        let input: Vec<Float2> = (0..(n * n * n) as u64).map(input).collect();
        let mut times = Vec::new();
        for _ in 0..repeats + 1 {
            scratch.copy_from_slice(&input)?;
            times.push(parray::gpu::time_ms_on(device, || {
                plan.run(scratch, Direction::Forward)
            })?);
        }
        let v = scratch
            .to_vec()?
            .iter()
            .map(|c| Complex::new(f64::from(c.x), f64::from(c.y)))
            .collect();
        (v, "cuFFT 3-D plan".to_string(), Some(median(&times[1..])))
    };
    let (mut diff, mut norm) = (0.0, 0.0);
    for (g, w) in got.iter().zip(&want) {
        diff += (f64::from(g.x) - w.re).powi(2) + (f64::from(g.y) - w.im).powi(2);
        norm += w.norm_sqr();
    }
    Ok(((diff / norm).sqrt(), name, time))
}

fn median(v: &[Timing]) -> Timing {
    let mut v = v.to_vec();
    v.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    v[v.len() / 2]
}

fn main() -> parray::Result<()> {
    let argv: Vec<String> = std::env::args().collect();
    let value = |flag: &str, default: usize| {
        argv.iter()
            .position(|a| a == flag)
            .and_then(|i| argv.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let args = Args {
        n: value("--n", 32),
        repeats: value("--repeats", 10),
    };
    let job = parray::mpi::job()?;
    let ok = match (args.n, job.size) {
        (32, 1) => n32_on_1::run(&args)?,
        (32, 2) => n32_on_2::run(&args)?,
        (32, 4) => n32_on_4::run(&args)?,
        (512, 1) => n512_on_1::run(&args)?,
        (512, 2) => n512_on_2::run(&args)?,
        (1024, 1) => n1024_on_1::run(&args)?,
        (1024, 2) => n1024_on_2::run(&args)?,
        (n, ranks) => {
            eprintln!("fft3d: no types declared for N = {n} on {ranks} ranks (N 32 on 1, 2 or 4; 512 and 1024 on 1 or 2)");
            std::process::exit(2);
        }
    };
    if job.rank == 0 {
        println!("check: {}", if ok { "ok" } else { "FAILED" });
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
