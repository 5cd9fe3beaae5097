//! The cluster FFT of the PPoPP'12 Parray paper: a 3-D complex single-precision FFT of an
//! N x N x N array distributed over the ranks of an MPI job by x-slabs. Each rank
//! transforms its x-planes in two dimensions, a `#copy` to the y-slabs is the global
//! transpose (an all-to-all the two types imply), and each rank transforms along x. The
//! transpose is pipelined with the plane transforms: `copy::copy_in_chunks` takes the
//! slab in chunks of the type `X_CHUNK` (`--chunks C` of them), and each chunk's
//! messages go while the next chunk's planes are transformed. Local transforms are
//! cuFFT's on GPUs (rank r on device r mod the devices) and rustfft's on the CPU (the
//! emulation). Rank 0 checks the result against a 3-D FFT computed on its own (rustfft
//! in f64 up to N = 128, cuFFT's own 3-D plan beyond), and on a GPU each size is timed
//! beside cuFFT's 3-D plan of the whole array on one GPU, and beside itself with the
//! whole slab as one chunk (nothing overlapped).
//!
//! ```text
//! cargo build --release --features parray/mpi --example fft3d
//! mpirun -n 2 target/release/examples/fft3d --n 512 --chunks 8  (one rank: without mpirun)
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
                // The chunks of the pipelined transpose: PLANES x-planes of a slab ...
                const PLANES;
                pub dmem float2 [PLANES][$n][$n] X_CHUNK;
                // ... or the whole slab as one chunk (transforms, then the transpose).
                pub dmem float2 [$n / $ranks][$n][$n] X_PART;
            }

            pub fn run(args: &super::Args) -> parray::Result<bool> {
                PLANES.bind($n / $ranks / args.chunks.min($n / $ranks))?;
                super::fft3d::<X_SLABS, Y_SLABS, ON_ZERO, X_CHUNK, X_PART>(args)
            }
        }
    };
}

slabs!(n32_on_1, 32, 1);
slabs!(n32_on_2, 32, 2);
slabs!(n32_on_4, 32, 4);
slabs!(n512_on_1, 512, 1);
slabs!(n512_on_2, 512, 2);
slabs!(n512_on_4, 512, 4);
slabs!(n1024_on_1, 1024, 1);
slabs!(n1024_on_2, 1024, 2);
slabs!(n1024_on_4, 1024, 4);

/// The command line: `--n N` (32, 512 or 1024), `--chunks C` (of each slab, a divisor of
/// N / ranks) and `--repeats R`.
pub struct Args {
    n: usize,
    chunks: usize,
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

/// The 3-D FFT of the array of type `X` (x-slabs), through `Y` (y-slabs), its transpose
/// pipelined in chunks of `C` (and, timed beside it, in one chunk `W`, the whole part);
/// checked on rank 0 through `Z` (all on rank 0). Returns whether the check passed.
fn fft3d<X, Y, Z, C, W>(args: &Args) -> parray::Result<bool>
where
    X: DataType<Elem = Float2>,
    Y: DataType<Elem = Float2>,
    Z: DataType<Elem = Float2>,
    C: DataType<Elem = Float2>,
    W: DataType<Elem = Float2>,
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
    // The local transforms: a chunk's x-planes (or the whole slab's) in two dimensions,
    // the y-slab along x.
    let plane_transforms = |planes: usize| Local::new(&device, &[n, n], 1, n * n, planes);
    let (chunk, whole) = (
        plane_transforms(C::size() / (n * n))?,
        plane_transforms(part)?,
    );
    let columns = Local::new(&device, &[n], part * n, 1, part * n)?;
    // One 3-D transform, its transpose in chunks of `K`: the time of the whole, and of
    // the transpose alone when it is one chunk (then nothing overlaps it).
    let mut transpose_times = Vec::new();
    // On one rank both types are the row-major (x, y, z): the transpose moves nothing,
    // and the transforms along x run on x seen as Y (`as_type_mut` checks that the storage
    // holds it). On more, the transpose is pipelined with the plane transforms.
    let in_place = job.size == 1;
    let step = |x: &mut Array<X>, y: &mut Array<Y>, pipelined: bool| -> parray::Result<()> {
        if pipelined && in_place {
            whole.run(x, 0)?;
            return columns.run(x.as_type_mut::<Y>()?, 0);
        }
        if pipelined {
            copy::copy_in_chunks::<C, X, Y>(x, y, |x, at| chunk.run(x, at.start))?;
        } else {
            copy::copy_in_chunks::<W, X, Y>(x, y, |x, _| whole.run(x, 0))?;
        }
        columns.run(y, 0)
    };
    let repeats = if device.is_emulated() {
        1
    } else {
        args.repeats
    };
    let (mut times, mut serial_times) = (Vec::new(), Vec::new());
    // Each rank's clock starts when every rank has its input on its device: otherwise a
    // rank would time its wait for a slower one's upload.
    let all_ready = || -> parray::Result<()> {
        device.synchronize()?;
        job.barrier();
        Ok(())
    };
    for _ in 0..repeats + 1 {
        // A fresh input each time (the transforms are in place), uploaded untimed.
        x.copy_from_slice(&values)?;
        all_ready()?;
        serial_times.push(parray::gpu::time_ms_on(&device, || {
            step(&mut x, &mut y, false)
        })?);
        x.copy_from_slice(&values)?;
        whole.run(&mut x, 0)?;
        all_ready()?;
        let time = parray::gpu::time_ms_on(&device, || copy::copy(&x, &mut y).map(|_| ()))?;
        transpose_times.push(time);
        x.copy_from_slice(&values)?;
        all_ready()?;
        times.push(parray::gpu::time_ms_on(&device, || {
            step(&mut x, &mut y, true)
        })?);
    }
    let warm = |t: &[Timing]| median(&t[1.min(t.len() - 1)..]);
    let (time, serial, transpose) = (warm(&times), warm(&serial_times), warm(&transpose_times));
    // Everything to rank 0, and the check there (of the pipelined run, the last).
    let mut whole_array = Array::<Z>::new()?;
    copy::copy(
        if in_place { x.as_type::<Y>()? } else { &y },
        &mut whole_array,
    )?;
    if job.rank != 0 {
        return Ok(true);
    }
    let got = whole_array.to_vec()?;
    let (error, reference, reference_time) =
        check(&device, n, &got, &mut whole_array, args.repeats)?;
    let flops = 5.0 * (n as f64).powi(3) * 3.0 * (n as f64).log2();
    let overlap = if in_place {
        format!("no transpose (one rank: Y is X); with the transpose {serial}, of it the copy {transpose}")
    } else {
        format!(
            "transpose in {} chunks; in one chunk {serial}, of it the transpose {transpose} ({:.0}%), {:.0}% of that hidden",
            part * n * n / C::size(),
            100.0 * transpose.ms / serial.ms,
            100.0 * (serial.ms - time.ms) / transpose.ms,
        )
    };
    println!(
        "fft3d N={n} ranks={} {}: {time}, {:.1} GFLOP/s{}, {overlap}; checked against {reference}{}: relative error {error:.2e}",
        job.size,
        if device.is_emulated() { "cpu (emulation)" } else { "gpu" },
        flops / time.ms / 1e6,
        time.note(),
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

    /// The transforms, on the elements of `a` from offset `at` on.
    fn run<T: DataType<Elem = Float2>>(&self, a: &mut Array<T>, at: usize) -> parray::Result<()> {
        let (fft, dims, stride, dist, batch) = match self {
            Local::Gpu(plan) => return plan.run_at(a, at, Direction::Forward),
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
            let at = |i: usize| at + b * dist + i * stride;
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
        chunks: value("--chunks", 8).max(1),
        repeats: value("--repeats", 10),
    };
    let job = parray::mpi::job()?;
    let ok = match (args.n, job.size) {
        (32, 1) => n32_on_1::run(&args)?,
        (32, 2) => n32_on_2::run(&args)?,
        (32, 4) => n32_on_4::run(&args)?,
        (512, 1) => n512_on_1::run(&args)?,
        (512, 2) => n512_on_2::run(&args)?,
        (512, 4) => n512_on_4::run(&args)?,
        (1024, 1) => n1024_on_1::run(&args)?,
        (1024, 2) => n1024_on_2::run(&args)?,
        (1024, 4) => n1024_on_4::run(&args)?,
        (n, ranks) => {
            eprintln!("fft3d: no types declared for N = {n} on {ranks} ranks (N 32, 512 or 1024 on 1, 2 or 4)");
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
