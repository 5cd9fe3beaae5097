//! The cluster FFT of the PPoPP'12 Parray paper: a 3-D complex single-precision FFT of an
//! N x N x N array distributed over the ranks of an MPI job by x-slabs. Each rank
//! transforms its slab along z; then, in chunks of z (`--chunks C` of them), along y, and
//! a `#copy` between two distributed types is the global transpose of the chunk (an
//! all-to-all the types imply), after which each rank transforms its y-slab of the chunk
//! along x. `copy::copy_in_chunks_then` pipelines the three: while one chunk's messages
//! go, the device transforms the next chunk along y and the chunk before along x. The
//! transforms along y write their output where the sent type puts it (the pack of the
//! all-to-all fused into cuFFT's store by a callback the offset compiler writes from the
//! type `PACKED`), and the received type is the layout the transforms along x read and
//! the result's: nothing is packed or unpacked by a pass of its own.
//!
//! Local transforms are cuFFT's on GPUs (rank r on device r mod the devices) and
//! rustfft's on the CPU (the emulation). Rank 0 checks the result against a 3-D FFT
//! computed on its own (rustfft in f64 up to N = 128, cuFFT's own 3-D plan beyond), and
//! on a GPU each size is timed beside cuFFT's 3-D plan of the whole array on one GPU, and
//! beside itself unpipelined (every chunk transformed along y, then the transpose, then
//! the transforms along x). One rank transforms in place, with no transpose.
//!
//! ```text
//! cargo build --release --features parray/mpi --example fft3d
//! mpirun -n 2 target/release/examples/fft3d --n 512 --chunks 4  (one rank: without mpirun)
//! ```

use std::ops::Range;

use parray::copy;
use parray::gpu::cufft::{Direction, FftPlan, Strides};
use parray::gpu::Timing;
use parray::prelude::*;
use parray::{DataType, Device, Float2};
use rustfft::num_complex::Complex;
use rustfft::FftPlanner;

/// The types of one size on one rank: the slab is the whole array, transformed in place.
macro_rules! whole {
    ($($module:ident: $n:literal;)*) => {
        $(whole!(@one $module, $n);)*

        /// The program for `--n` on one rank, if its types are declared.
        fn on_one_rank(args: &Args) -> Option<parray::Result<bool>> {
            match args.n {
                $($n => Some($module::run(args)),)*
                _ => None,
            }
        }
    };
    (@one $module:ident, $n:literal) => {
        // Generic code creates the arrays (`Array::<X>::new`), not `X::create`.
        #[allow(dead_code)]
        mod $module {
            parray::parray! {
                pub mpi [1] P;
                pub dmem float2 [[#P][$n]][$n][$n] X_SLABS;
                // The transforms along x see it as (x, y, z) of one y-slab.
                pub dmem float2 [$n][[#P][$n]][$n] Y_SLABS;
                // All of it on rank 0, for the check.
                pub dmem float2 [1#P][$n][$n][$n] ON_ZERO;
            }

            pub fn run(args: &super::Args) -> parray::Result<bool> {
                super::fft3d_in_place::<X_SLABS, Y_SLABS, ON_ZERO>(args)
            }
        }
    };
}

/// The types of one size on one number of ranks in one number of chunks: the parray part
/// of the program. An element of the array is `(x, y, z)`; with `M = N / R`, `x = x_hi M +
/// xl` (rank `x_hi`'s slab), `y = y_hi M + yl` and, in chunks of `ZC = N / C` planes, `z =
/// c ZC + zc`.
macro_rules! slabs {
    ($($module:ident: $n:literal, $ranks:literal, $chunks:literal;)*) => {
        $(slabs!(@one $module, $n, $ranks, $chunks);)*

        /// The program for `--n` and `--chunks` on `ranks` ranks, if its types are declared.
        fn on_ranks(args: &Args, ranks: usize) -> Option<parray::Result<bool>> {
            match (args.n, ranks, args.chunks) {
                $(($n, $ranks, $chunks) => Some($module::run(args)),)*
                _ => None,
            }
        }
    };
    (@one $module:ident, $n:literal, $ranks:literal, $chunks:literal) => {
        // Generic code creates the arrays (`Array::<X>::new`), not `X::create`.
        #[allow(dead_code)]
        mod $module {
            parray::parray! {
                pub mpi [$ranks] P;
                // Rank r holds x-planes r N/R .. (r + 1) N/R - 1, each N x N (y, z).
                pub dmem float2 [[#P][$n / $ranks]][$n][$n] X_SLABS;
                // Rank r's slab transformed along z, as [z][xl][y]: a chunk of z is one
                // run, of ZC x N/R transforms along y.
                pub dmem float2 [#P][$n][$n / $ranks][$n] Z_FIRST;
                // The transpose, element (c, y_hi, x_hi, xl, zc, yl): rank x_hi sends it
                // as [c][y_hi][xl][zc][yl], rank y_hi receives it as [c][x_hi][xl][zc][yl],
                // its chunk c then (x, zc, yl) for the transforms along x.
                pub dmem float2 [$chunks][$ranks][#P][$n / $ranks][$n / $chunks][$n / $ranks] SENT;
                pub dmem float2 [$chunks][#P][$ranks][$n / $ranks][$n / $chunks][$n / $ranks] RECEIVED;
                // A chunk of a rank's part of SENT, and the order the transforms along y
                // write it in, (zc, xl, y): cuFFT stores through this type.
                pub dmem float2 [$ranks][$n / $ranks][$n / $chunks][$n / $ranks] SENT_CHUNK;
                pub dmem float2 [#SENT_CHUNK_2][#SENT_CHUNK_1][[#SENT_CHUNK_0][#SENT_CHUNK_3]] PACKED;
                // A rank's whole part as one chunk (nothing overlapped).
                pub dmem float2 [$n / $ranks][$n][$n] X_PART;
                // The result all on rank 0, for the check.
                pub dmem float2 [1#P][$chunks][$ranks][$ranks][$n / $ranks][$n / $chunks][$n / $ranks] RECEIVED_ON_ZERO;
            }

            pub fn run(args: &super::Args) -> parray::Result<bool> {
                super::fft3d::<X_SLABS, Z_FIRST, SENT, RECEIVED, SENT_CHUNK, PACKED, X_PART, RECEIVED_ON_ZERO>(args)
            }
        }
    };
}

whole! {
    n32_on_1: 32;
    n512_on_1: 512;
    n1024_on_1: 1024;
}

slabs! {
    n32_on_2_in_4: 32, 2, 4;
    n32_on_2_in_8: 32, 2, 8;
    n32_on_4_in_4: 32, 4, 4;
    n32_on_4_in_8: 32, 4, 8;
    n512_on_2_in_4: 512, 2, 4;
    n512_on_2_in_8: 512, 2, 8;
    n512_on_4_in_4: 512, 4, 4;
    n512_on_4_in_8: 512, 4, 8;
    n1024_on_2_in_4: 1024, 2, 4;
    n1024_on_2_in_8: 1024, 2, 8;
    n1024_on_4_in_4: 1024, 4, 4;
    n1024_on_4_in_8: 1024, 4, 8;
}

/// The command line: `--n N` (32, 512 or 1024), `--chunks C` (of z: 4 or 8, 4 by default)
/// and `--repeats R`.
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

/// The timings of one run: the pipelined transform, the unpipelined one and the transpose
/// alone (in the pipeline's chunks, nothing to overlap), each a median after a warm-up.
struct Times {
    pipelined: Timing,
    serial: Timing,
    transpose: Timing,
}

/// Each rank's clock starts when every rank has its input on its device: otherwise a rank
/// would time its wait for a slower one's upload.
fn all_ready(device: &Device, job: &parray::mpi::Job) -> parray::Result<()> {
    device.synchronize()?;
    job.barrier();
    Ok(())
}

/// The input of rank `rank`'s x-slab: logical `k = (rank * part) * n * n + j` for its
/// element `j`.
fn slab_input(n: usize, part: usize, rank: usize) -> Vec<Float2> {
    (0..part * n * n)
        .map(|j| input((rank * part * n * n + j) as u64))
        .collect()
}

/// The 3-D FFT of the x-slabs `X` on more than one rank: along z into `F` (`[z][xl][y]`),
/// then in chunks of `C` (a chunk of the sent type `S`'s part) along y into `S` through
/// the type `K` (cuFFT's store), the transpose `#copy S to R`, and along x in `R`,
/// pipelined by `copy::copy_in_chunks_then`; timed beside the same in one chunk `W` and
/// the transpose alone; checked on rank 0 through `Z` (`R` all on rank 0). Returns
/// whether the check passed.
#[allow(clippy::type_complexity)]
fn fft3d<X, F, S, R, C, K, W, Z>(args: &Args) -> parray::Result<bool>
where
    X: DataType<Elem = Float2>,
    F: DataType<Elem = Float2>,
    S: DataType<Elem = Float2>,
    R: DataType<Elem = Float2>,
    C: DataType<Elem = Float2>,
    K: DataType<Elem = Float2>,
    W: DataType<Elem = Float2>,
    Z: DataType<Elem = Float2>,
{
    let job = parray::mpi::job()?;
    let (n, ranks) = (args.n, job.size);
    let part = n / ranks;
    let device = Device::nth(job.rank % Device::count()?)?;
    device.make_current();
    let values = slab_input(n, part, job.rank);
    let (mut x, mut z_first, mut received) =
        (Array::<X>::new()?, Array::<F>::new()?, Array::<R>::new()?);
    let contiguous = Strides { stride: 1, dist: n };
    // Along z: each (xl, y) row in, written as [z][xl][y].
    let along_z = Local::new(
        &device,
        n,
        part * n,
        contiguous,
        Out::Strides(Strides {
            stride: part * n,
            dist: 1,
        }),
    )?;
    // Along y, a chunk of ZC planes of [z][xl][y]: written where `K` puts them.
    let chunk = C::size();
    let along_y = Local::new(&device, n, chunk / n, contiguous, Out::typed::<K>())?;
    // Along x, a received chunk [x][zc][yl]: stride ZC M, in place.
    let columns = chunk / n;
    let along_x = Local::new(
        &device,
        n,
        columns,
        Strides {
            stride: columns,
            dist: 1,
        },
        Out::InPlace,
    )?;
    // A range of chunks of the sent part, transformed along y (the transforms of chunk `c`
    // read chunk `c` of `F`'s part, of as many elements); of the received part, along x.
    let produce = |sent: &mut Array<S>, z_first: &Array<F>, range: Range<usize>| {
        range
            .step_by(chunk)
            .try_for_each(|at| along_y.run_into(z_first, at, sent, at))
    };
    let consume = |received: &mut Array<R>, range: Range<usize>| {
        range
            .step_by(chunk)
            .try_for_each(|at| along_x.run_in_place(received, at))
    };
    let step =
        |x: &mut Array<X>, z_first: &mut Array<F>, received: &mut Array<R>, pipelined: bool| {
            along_z.run_into(x, 0, z_first, 0)?;
            // The slab is read: its storage holds the sent chunks.
            let sent = x.as_type_mut::<S>()?;
            let z_first = &*z_first;
            match pipelined {
                true => copy::copy_in_chunks_then::<C, S, R>(
                    sent,
                    received,
                    |s, range| produce(s, z_first, range),
                    consume,
                ),
                false => copy::copy_in_chunks_then::<W, S, R>(
                    sent,
                    received,
                    |s, range| produce(s, z_first, range),
                    consume,
                ),
            }
            .map(|_| ())
        };
    let repeats = if device.is_emulated() {
        1
    } else {
        args.repeats
    };
    let (mut pipelined, mut serial, mut transpose) = (Vec::new(), Vec::new(), Vec::new());
    for _ in 0..repeats + 1 {
        // A fresh input each time (the slab's storage is overwritten), uploaded untimed.
        x.copy_from_slice(&values)?;
        all_ready(&device, &job)?;
        serial.push(parray::gpu::time_ms_on(&device, || {
            step(&mut x, &mut z_first, &mut received, false)
        })?);
        all_ready(&device, &job)?;
        // The transpose alone, in the same chunks (its messages as the pipeline sends them).
        transpose.push(parray::gpu::time_ms_on(&device, || {
            copy::copy_in_chunks::<C, S, R>(x.as_type_mut::<S>()?, &mut received, |_, _| Ok(()))
                .map(|_| ())
        })?);
        x.copy_from_slice(&values)?;
        all_ready(&device, &job)?;
        pipelined.push(parray::gpu::time_ms_on(&device, || {
            step(&mut x, &mut z_first, &mut received, true)
        })?);
    }
    let warm = |t: &[Timing]| median(&t[1.min(t.len() - 1)..]);
    let times = Times {
        pipelined: warm(&pipelined),
        serial: warm(&serial),
        transpose: warm(&transpose),
    };
    // Everything to rank 0, and the check there (of the pipelined run, the last).
    let mut whole = Array::<Z>::new()?;
    copy::copy(&received, &mut whole)?;
    if job.rank != 0 {
        return Ok(true);
    }
    let got = whole.to_vec()?;
    // Element (c, y_hi, x_hi, xl, zc, yl) of the result is (x, y, z) of the FFT.
    let (chunks, zc) = (n * n * n / (ranks * chunk), chunk / (ranks * part * part));
    let mut ordered = vec![Float2::new(0.0, 0.0); got.len()];
    for (k, v) in got.iter().enumerate() {
        let (yl, k) = (k % part, k / part);
        let (z_in, k) = (k % zc, k / zc);
        let (xl, k) = (k % part, k / part);
        let (x_hi, k) = (k % ranks, k / ranks);
        let (y_hi, c) = (k % ranks, k / ranks);
        debug_assert!(c < chunks);
        let (x, y, z) = (x_hi * part + xl, y_hi * part + yl, c * zc + z_in);
        ordered[(x * n + y) * n + z] = *v;
    }
    report(
        &device,
        args,
        &job,
        &ordered,
        &mut whole,
        times,
        Some(chunks),
    )
}

/// The 3-D FFT on one rank: in place, the slab `X` in two dimensions, then along x on it
/// seen as `Y` (`as_type_mut` checks that the storage holds it); no transpose. Checked
/// through `Z`, timed as [`fft3d`] is.
fn fft3d_in_place<X, Y, Z>(args: &Args) -> parray::Result<bool>
where
    X: DataType<Elem = Float2>,
    Y: DataType<Elem = Float2>,
    Z: DataType<Elem = Float2>,
{
    let job = parray::mpi::job()?;
    let n = args.n;
    let device = Device::nth(0)?;
    device.make_current();
    let values = slab_input(n, n, 0);
    let mut x = Array::<X>::new()?;
    let planes = Local::planes(&device, n)?;
    let columns = Local::new(
        &device,
        n,
        n * n,
        Strides {
            stride: n * n,
            dist: 1,
        },
        Out::InPlace,
    )?;
    let repeats = if device.is_emulated() {
        1
    } else {
        args.repeats
    };
    let mut times = Vec::new();
    for _ in 0..repeats + 1 {
        x.copy_from_slice(&values)?;
        all_ready(&device, &job)?;
        times.push(parray::gpu::time_ms_on(&device, || {
            planes.run_in_place(&mut x, 0)?;
            columns.run_in_place(x.as_type_mut::<Y>()?, 0)
        })?);
    }
    let time = median(&times[1.min(times.len() - 1)..]);
    let mut whole = Array::<Z>::new()?;
    copy::copy(x.as_type::<Y>()?, &mut whole)?;
    let got = whole.to_vec()?;
    let times = Times {
        pipelined: time,
        serial: time,
        transpose: Timing { ms: 0.0, ..time },
    };
    report(&device, args, &job, &got, &mut whole, times, None)
}

/// Rank 0's check of `got` (the FFT in (x, y, z) order) and its line of figures; `chunks`
/// of the transpose (`None`: one rank, no transpose). Returns whether the check passed.
fn report<Z: DataType<Elem = Float2>>(
    device: &Device,
    args: &Args,
    job: &parray::mpi::Job,
    got: &[Float2],
    scratch: &mut Array<Z>,
    times: Times,
    chunks: Option<usize>,
) -> parray::Result<bool> {
    let n = args.n;
    let (error, reference, reference_time) = check(device, n, got, scratch, args.repeats)?;
    let flops = 5.0 * (n as f64).powi(3) * 3.0 * (n as f64).log2();
    let Times {
        pipelined: time,
        serial,
        transpose,
    } = times;
    let overlap = match chunks {
        None => "no transpose (one rank: in place)".to_string(),
        Some(chunks) => format!(
            "transpose in {chunks} chunks of z; unpipelined {serial}, the transpose alone in those chunks {transpose} ({:.0}% of it), {:.0}% of that hidden",
            100.0 * transpose.ms / serial.ms,
            100.0 * (serial.ms - time.ms) / transpose.ms,
        ),
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

/// Where local transforms write.
enum Out {
    /// Over their input.
    InPlace,
    /// Into another array, at strides.
    Strides(Strides),
    /// Into another array where a type puts element `o` of their natural order (`o = b *
    /// points + i`): the offset function of the type, and the type for cuFFT's callback.
    Typed(fn(usize) -> usize, TypedPlan),
}

/// Makes a cuFFT plan storing through one type (generic code's way of naming the type).
type TypedPlan = fn(&Device, usize, usize, Strides) -> parray::Result<FftPlan>;

impl Out {
    fn typed<K: DataType<Elem = Float2>>() -> Out {
        Out::Typed(
            |o| {
                // Element `o` of `K`'s natural order: one index per top-level dimension.
                let mut index = vec![0; K::dims().len()];
                let mut rest = o;
                for (i, d) in index.iter_mut().zip(K::dims()).rev() {
                    (*i, rest) = (rest % d, rest / d);
                }
                K::offset_of(&index)
            },
            |device, n, batch, input| FftPlan::many_stored_as::<K>(device, &[n], batch, input),
        )
    }
}

/// The local transforms: cuFFT on a GPU, rustfft on the host under the emulation, one
/// semantics (the emulation writes where `Out` says, as cuFFT's store does).
enum Local {
    Gpu(FftPlan),
    Cpu {
        fft: std::sync::Arc<dyn rustfft::Fft<f32>>,
        dims: Vec<usize>,
        batch: usize,
        input: Strides,
        out: Out,
    },
}

impl Local {
    /// `batch` transforms of length `n` read at `input`, written as `out` says.
    fn new(
        device: &Device,
        n: usize,
        batch: usize,
        input: Strides,
        out: Out,
    ) -> parray::Result<Local> {
        Self::make(device, vec![n], batch, input, out)
    }

    /// The N x N planes of an N^3 array, in place (one rank's first two dimensions).
    fn planes(device: &Device, n: usize) -> parray::Result<Local> {
        let rows = Strides {
            stride: 1,
            dist: n * n,
        };
        Self::make(device, vec![n, n], n, rows, Out::InPlace)
    }

    fn make(
        device: &Device,
        dims: Vec<usize>,
        batch: usize,
        input: Strides,
        out: Out,
    ) -> parray::Result<Local> {
        if device.is_emulated() {
            return Ok(Local::Cpu {
                fft: FftPlanner::new().plan_fft_forward(dims[0]),
                dims,
                batch,
                input,
                out,
            });
        }
        let (stride, dist) = (input.stride, input.dist);
        Ok(Local::Gpu(match out {
            Out::InPlace => FftPlan::many(device, &dims, stride, dist, batch)?,
            Out::Strides(output) => FftPlan::many_into(device, &dims, batch, input, output)?,
            Out::Typed(_, plan) => plan(device, dims[0], batch, input)?,
        }))
    }

    /// The transforms in place on the elements of `a` from offset `at` on.
    fn run_in_place<T: DataType<Elem = Float2>>(
        &self,
        a: &mut Array<T>,
        at: usize,
    ) -> parray::Result<()> {
        match self {
            Local::Gpu(plan) => plan.run_at(a, at, Direction::Forward),
            Local::Cpu { .. } => {
                let v = a.to_vec()?;
                let mut out = v.clone();
                self.on_cpu(&v, at, &mut out, at);
                a.copy_from_slice(&out)
            }
        }
    }

    /// The transforms of the elements of `src` from `at` on, into `dst` from `dst_at` on.
    fn run_into<S: DataType<Elem = Float2>, D: DataType<Elem = Float2>>(
        &self,
        src: &Array<S>,
        at: usize,
        dst: &mut Array<D>,
        dst_at: usize,
    ) -> parray::Result<()> {
        match self {
            Local::Gpu(plan) => plan.run_into(src, at, dst, dst_at, Direction::Forward),
            Local::Cpu { .. } => {
                let mut out = dst.to_vec()?;
                self.on_cpu(&src.to_vec()?, at, &mut out, dst_at);
                dst.copy_from_slice(&out)
            }
        }
    }

    /// The emulation's transforms: from `v` at `at` into `out` at `out_at`.
    fn on_cpu(&self, v: &[Float2], at: usize, out: &mut [Float2], out_at: usize) {
        let Local::Cpu {
            fft,
            dims,
            batch,
            input,
            out: written,
        } = self
        else {
            unreachable!("the emulation's plan")
        };
        let points: usize = dims.iter().product();
        for b in 0..*batch {
            let from = |i: usize| at + b * input.dist + i * input.stride;
            let mut signal: Vec<Complex<f32>> = (0..points)
                .map(|i| Complex::new(v[from(i)].x, v[from(i)].y))
                .collect();
            fft_rows(&mut signal, dims, |line| fft.process(line));
            for (i, c) in signal.into_iter().enumerate() {
                let to = match written {
                    Out::InPlace => from(i),
                    Out::Strides(o) => out_at + b * o.dist + i * o.stride,
                    Out::Typed(offset, _) => out_at + offset(b * points + i),
                };
                out[to] = Float2::new(c.re, c.im);
            }
        }
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
        chunks: value("--chunks", 4).max(1),
        repeats: value("--repeats", 10),
    };
    let job = parray::mpi::job()?;
    let program = match job.size {
        1 => on_one_rank(&args),
        ranks => on_ranks(&args, ranks),
    };
    let Some(ran) = program else {
        eprintln!(
            "fft3d: no types declared for N = {} on {} ranks in {} chunks (N 32, 512 or 1024 on 1, 2 or 4 ranks, in 4 or 8 chunks of z)",
            args.n, job.size, args.chunks
        );
        std::process::exit(2);
    };
    let ok = ran?;
    if job.rank == 0 {
        println!("check: {}", if ok { "ok" } else { "FAILED" });
    }
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
