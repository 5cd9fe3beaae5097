//! What the matrix-multiply examples share: inputs, the f64 reference check, timing, and
//! the table row they print. The kernels themselves stay in each figure's file.

#![allow(dead_code)]

pub mod gemm;

use std::time::Instant;

use parray::gpu::Timing;
use parray::{Array, DataType, Result, ThreadArray, ThreadArrayKind};

/// What a matrix-multiply variant is, for its report.
pub struct Variant {
    pub name: &'static str,
    pub threads: usize,
    pub layout: &'static str,
    /// True for cuda thread arrays (timed with CUDA events, repeated on a GPU).
    pub device: bool,
}

/// One measured variant.
pub struct Run {
    pub variant: &'static str,
    pub threads: usize,
    pub layout: &'static str,
    pub backend: &'static str,
    pub time: Timing,
    pub n: usize,
    pub ok: bool,
}

impl Run {
    pub fn gflops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3) / self.time.seconds() / 1e9
    }

    /// The figure examples' own report: time, rate and the check line.
    pub fn report(&self) {
        println!("backend: {}", self.backend);
        println!(
            "{} ({} threads, {}): {}, {:.2} GFLOP/s{}",
            self.variant,
            self.threads,
            self.layout,
            self.time,
            self.gflops(),
            self.time.note()
        );
        println!("check: {}", if self.ok { "ok" } else { "FAILED" });
    }

    pub fn header() {
        println!(
            "{:<24} {:<8} {:>8}  {:<38} {:>21} {:>20}  check",
            "variant", "backend", "threads", "layout", "time (ms)", "GFLOP/s"
        );
    }

    pub fn row(&self) {
        println!(
            "{:<24} {:<8} {:>8}  {:<38} {:>21} {:>20}  {}",
            self.variant,
            self.backend,
            self.threads,
            self.layout,
            cell(self.time.ms, 3, self.time),
            cell(self.gflops(), 2, self.time),
            if self.ok { "ok" } else { "FAILED" }
        );
    }
}

/// Launches a hand-written CUDA kernel: `source` defines `extern "C" __global__ void
/// kernel(...)`, compiled by NVRTC and launched on the arrays' device exactly as parray
/// compiles and launches a detour's kernel (`parray::gpu::Launch`, same caches, same
/// stream): the baseline beside which the examples time their detours. A GPU only (there
/// is nothing to emulate: call it when `backend` says `cuda`).
pub fn raw_kernel(
    kernel: &'static str,
    source: &'static str,
    grid: [u32; 3],
    block: [u32; 3],
    args: &[&dyn parray::gpu::KernelArg],
) -> Result<()> {
    raw_kernel_with(kernel, source, (grid, block), Extras::default(), args)
}

/// What a hand-written kernel's launch may need besides its grid: dynamic shared memory
/// a block (its `extern __shared__` array), and `__constant__` arrays to fill: before it
/// runs, the array passed as argument `i` is copied into the constant array `name` for
/// each `(i, name)` (`cudaMemcpyToSymbol`, as a detour's launch fills its cmem
/// parameters).
#[derive(Default)]
pub struct Extras {
    pub shared_bytes: u32,
    pub constants: &'static [(usize, &'static str)],
}

/// [`raw_kernel`] with [`Extras`].
pub fn raw_kernel_with(
    kernel: &'static str,
    source: &'static str,
    (grid, block): ([u32; 3], [u32; 3]),
    Extras {
        shared_bytes,
        constants,
    }: Extras,
    args: &[&dyn parray::gpu::KernelArg],
) -> Result<()> {
    let launch = parray::gpu::Launch {
        kernel,
        source: std::borrow::Cow::Borrowed(source),
        shape: parray::gpu::CudaGrid::new(grid, block),
        shared_bytes,
        checked: None,
        hip_source: None,
        constants,
        tma: Vec::new(),
        site: &parray::DetourSite {
            array: "hand-written kernel",
            file: file!(),
            line: line!(),
        },
    };
    // SAFETY: each caller passes exactly the arguments its kernel's signature declares,
    // and for each of `constants` an array as large as the constant array it fills.
    unsafe {
        parray::gpu::detour_cuda(&launch, args, |_| {
            unreachable!("a hand-written kernel runs on a GPU only")
        })
    }
}

/// Seed 000's lesson 2 kernel, as it is printed (made `extern "C"`): a block per row of C,
/// threads striding over its columns, rows `a_pitch` floats apart (it indexes `c` by
/// `a_pitch` too). The baseline of `pitch` and of `matmul_steps`' first step.
pub const SEED_000_MATRIX_MUL: &str = r#"
extern "C" __global__ void MatrixMul_device(float *a,int a_pitch,int a_rows,int a_cols,float *b,int b_pitch,int b_rows,int b_cols,float *c,int c_pitch){
    int tix=threadIdx.x;
    int tiy=threadIdx.y;
    int bix=blockIdx.x;
    int biy=blockIdx.y;
    int bdx=blockDim.x;
    int bdy=blockDim.y;
    int gdx=gridDim.x;
    int gdy=gridDim.y;
    int i,k;
    for(i=tix;i<b_cols;i+=bdx){
        float sum=0;
        for(k=0;k<a_cols;k++){
            sum+=a[bix*a_pitch+k]*b[k*b_pitch+i];
        }
        c[bix*a_pitch+i]=sum;
    }
}
"#;

/// A table's cell: `value` (a time in milliseconds or a figure derived from `time`, a
/// rate) with `digits` decimals, and ` (emulated)` after it when `time` is the emulation's.
pub fn cell(value: f64, digits: usize, time: Timing) -> String {
    format!("{value:.digits$}{}", time.note())
}

/// The line of a seed example's table: the detour's time beside the seed's own CUDA
/// kernel's (on a GPU), and its check.
pub fn seed_row(name: &str, backend: &str, parray: Timing, seed: Option<Timing>, ok: bool) {
    let seed = seed.map_or("-".to_string(), |t| t.to_string());
    println!(
        "{name:<34} {backend:<8} parray {:>12}   seed CUDA {seed:>12}   {}",
        parray.to_string(),
        if ok { "ok" } else { "FAILED" }
    );
}

/// The line under a bandwidth-bound example's own figure: the same kernel by hand (`hand`,
/// whose result checked `hand_ok`) and the driver's copy of the bytes (`copy`), each with
/// its rate over the `bytes` the example moves, and parray's time over each.
#[allow(dead_code)] // the examples without a hand-written kernel do not print it
pub fn beside_hand_and_copy(
    parray: Timing,
    hand: Timing,
    hand_ok: bool,
    copy: Timing,
    bytes: usize,
) {
    let rate = |t: Timing| bytes as f64 / t.seconds() / 1e9;
    println!(
        "  by hand in CUDA C {hand} ({:.0} GB/s, check {}); the driver's copy of the bytes {copy} ({:.0} GB/s); parray / hand {:.2}, parray / copy {:.2}",
        rate(hand),
        if hand_ok { "ok" } else { "FAILED" },
        rate(copy),
        parray.ms / hand.ms,
        parray.ms / copy.ms
    );
}

/// The lines of a row-wise example run in `bf16` (`half`, its time) and in `f32` (`full`,
/// whose result checked `full_ok`): each time and rate over the bytes it moves, `bytes`
/// the `bf16` run's (the `f32` one moves twice as many).
#[allow(dead_code)] // the examples not in two precisions do not print it
pub fn bf16_beside_f32(what: &str, half: Timing, full: Timing, full_ok: bool, bytes: usize) {
    let rate = |t: Timing, bytes: usize| bytes as f64 / t.seconds() / 1e9;
    println!(
        "{what}: parray {half}, {:.1} GB/s{}",
        rate(half, bytes),
        half.note()
    );
    println!(
        "  the same body over f32: {full}, {:.1} GB/s{} (check {}); bf16 moves half the bytes in {:.2} of the time",
        rate(full, 2 * bytes),
        full.note(),
        if full_ok { "ok" } else { "FAILED" },
        half.ms / full.ms
    );
}

/// `--n N` from the command line (`default` without it): the size an example binds to its
/// run-time size `N`. A value that is not a positive number exits with its usage.
#[allow(dead_code)] // the examples of fixed sizes do not ask
pub fn size_arg(example: &str, default: usize) -> usize {
    let args: Vec<String> = std::env::args().collect();
    match args.iter().position(|a| a == "--n") {
        Some(k) => args
            .get(k + 1)
            .and_then(|v| v.parse().ok())
            .filter(|&n| n > 0)
            .unwrap_or_else(|| {
                eprintln!("usage: {example} [--n N]  (N a positive size; {default} without it)");
                std::process::exit(2)
            }),
        None => default,
    }
}

/// The `--rows R --cols C` of an example over the rows of a matrix: 8192 x 4096 without
/// them on a GPU; under the emulation (or with `--small`) 64 rows of 4096 by default,
/// which the line it prints says.
#[allow(dead_code)] // the examples not over rows do not ask
pub fn rows_and_cols(on_gpu: bool) -> (usize, usize, &'static str) {
    let small = small() || !on_gpu;
    let default_rows = if small { 64 } else { 8192 };
    let rows = gemm::value("--rows").unwrap_or(default_rows);
    let cols = gemm::value("--cols").unwrap_or(4096);
    let note = match (gemm::value("--rows"), small) {
        (None, true) => " (64 rows, the emulation's default: --rows R to change)",
        _ => "",
    };
    (rows, cols, note)
}

/// Whether the example was asked for its small sizes (`--small`: the CPU emulation in CI).
pub fn small() -> bool {
    std::env::args().any(|a| a == "--small")
}

/// The final line every example prints; a failed check fails the process.
pub fn check(ok: bool) {
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
}

/// The time of a device-to-device copy of `bytes` from `src` to `dst` through the driver
/// (`cuMemcpyDtoDAsync`), median of 20: the bandwidth baseline of the GPU examples.
pub fn device_copy_time<S: DataType, D: DataType>(
    src: &Array<S>,
    dst: &Array<D>,
    bytes: usize,
) -> Result<Timing> {
    let stream = src
        .device()
        .and_then(parray::gpu::Device::stream)
        .expect("only called with dmem on a GPU");
    let (s, d) = (
        src.ptr().device_address().expect("dmem on the GPU"),
        dst.ptr().device_address().expect("dmem on the GPU"),
    );
    let driver_error = |e: cudarc::driver::DriverError| parray::Error::Driver {
        type_name: src.type_name(),
        operation: "device-to-device copy",
        reason: e.to_string(),
    };
    // The raw call below runs in whatever context is bound to this thread: bind src's.
    stream.context().bind_to_thread().map_err(driver_error)?;
    median_time(20, true, || {
        // SAFETY: both buffers hold at least `bytes` bytes of GPU memory (unified
        // addressing tells the driver each one's device).
        unsafe { cudarc::driver::result::memcpy_dtod_async(d, s, bytes, stream.cu_stream()) }
            .map_err(driver_error)
    })
}

/// Deterministic pseudo-random values in [-1, 1) (xorshift64*), a fresh stream per seed.
pub fn random_values(len: usize, seed: u64) -> Vec<f32> {
    let mut s = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            let r = s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40;
            (r as f32 / (1u64 << 24) as f32) * 2.0 - 1.0
        })
        .collect()
}

/// Store the logical n x n matrix `m` into `buf` through the type's offsets.
pub fn store<S: DataType<Elem = f32>>(
    buf: &mut Array<S>,
    n: usize,
    m: &[f32],
    offset: impl Fn(usize, usize) -> usize,
) -> Result<()> {
    let mut host = vec![f32::NAN; buf.extent()];
    for i in 0..n {
        for j in 0..n {
            host[offset(i, j)] = m[i * n + j];
        }
    }
    buf.copy_from_slice(&host)
}

/// Read the logical n x n matrix back out of `buf` through the type's offsets.
pub fn load<S: DataType<Elem = f32>>(
    buf: &Array<S>,
    n: usize,
    offset: impl Fn(usize, usize) -> usize,
) -> Result<Vec<f32>> {
    let host = buf.to_vec()?;
    Ok((0..n * n).map(|x| host[offset(x / n, x % n)]).collect())
}

/// Compare c with the f64 product of a and b on `rows` rows spread over the matrix (every
/// column of each): each element within 1e-5 of the sum of |a_ik * b_kj|, NaN never.
pub fn check_product(n: usize, a: &[f32], b: &[f32], c: &[f32], rows: usize) -> bool {
    let step = (n / rows.max(1)).max(1);
    (0..n).step_by(step).all(|i| {
        (0..n).all(|j| {
            let (mut exact, mut scale) = (0.0f64, 0.0f64);
            for k in 0..n {
                let p = a[i * n + k] as f64 * b[k * n + j] as f64;
                exact += p;
                scale += p.abs();
            }
            let got = c[i * n + j] as f64;
            (got - exact).abs() <= 1e-5 * scale.max(1.0)
        })
    })
}

/// Median of `repeats` timed runs of `f` (after one warm-up run when repeating, and one
/// timed run only when the warm-up took over two seconds): device work by
/// `parray::gpu::time_ms` (CUDA events on a GPU, the host clock under the emulation, whose
/// times say they are emulated), CPU work on the host clock. Device work under half a
/// millisecond is timed in batches of back-to-back runs, after 25 ms of runs that bring
/// the clocks up, a sample their time over their number, so that the gaps between
/// launches do not count (a 25 µs kernel timed alone varies by a fifth from run to run);
/// each batch starts behind a run queued ahead of it, so that neither does the gap before
/// its first launch.
pub fn median_time(
    mut repeats: usize,
    device: bool,
    mut f: impl FnMut() -> Result<()>,
) -> Result<Timing> {
    if repeats > 1 {
        let warm = Instant::now();
        f()?;
        if warm.elapsed().as_secs_f64() > 2.0 {
            repeats = 1;
        }
    }
    let batch = if device && repeats > 1 {
        // The GPU's clocks rise under load: 25 ms of runs first (as Triton's do_bench).
        let (mut warmed, mut once) = (0.0, parray::gpu::time_ms(&mut f)?);
        while !once.emulated && warmed < 25.0 && once.ms < 25.0 {
            warmed += once.ms;
            once = parray::gpu::time_ms(&mut f)?;
        }
        if once.emulated {
            1
        } else {
            (0.5 / once.ms.max(1e-3)).ceil().clamp(1.0, 100.0) as usize
        }
    } else {
        1
    };
    let mut times = Vec::with_capacity(repeats);
    for _ in 0..repeats {
        times.push(if device {
            // One run queued ahead of a batch, so that its start event waits behind that
            // run rather than for the host's first launch (which would count as device time).
            if batch > 1 {
                f()?;
            }
            let t = parray::gpu::time_ms(|| (0..batch).try_for_each(|_| f()))?;
            Timing {
                ms: t.ms / batch as f64,
                ..t
            }
        } else {
            let t = Instant::now();
            f()?;
            Timing {
                ms: t.elapsed().as_secs_f64() * 1e3,
                emulated: false,
            }
        });
    }
    times.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    Ok(times[times.len() / 2])
}

/// The backend a variant runs on, and how many timed repeats it gets there.
pub fn backend(device: bool) -> Result<(&'static str, usize)> {
    if !device {
        return Ok(("cpu", 1));
    }
    Ok(match parray::gpu::backend()? {
        parray::gpu::Backend::Cuda => ("cuda", 20),
        parray::gpu::Backend::Emulate => ("emulate", 1),
    })
}

/// Fill a and b with fresh random matrices, run `multiply` (timed), check c.
pub fn run_matmul<S: DataType<Elem = f32>>(
    v: Variant,
    n: usize,
    offset: impl Fn(usize, usize) -> usize,
    bufs: (&mut Array<S>, &mut Array<S>, &mut Array<S>),
    mut multiply: impl FnMut(&Array<S>, &Array<S>, &mut Array<S>) -> Result<()>,
) -> Result<Run> {
    let (a, b, c) = bufs;
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let (am, bm) = (random_values(n * n, seed), random_values(n * n, seed + 1));
    store(a, n, &am, &offset)?;
    store(b, n, &bm, &offset)?;
    store(c, n, &vec![f32::NAN; n * n], &offset)?;
    let (backend, repeats) = backend(v.device)?;
    let time = median_time(repeats, v.device, || multiply(a, b, c))?;
    let cm = load(c, n, &offset)?;
    let ok = check_product(n, &am, &bm, &cm, 32);
    Ok(Run {
        variant: v.name,
        threads: v.threads,
        layout: v.layout,
        backend,
        time,
        n,
        ok,
    })
}

/// How a figure's matrix product runs: on which threads, stored how.
pub struct Figure {
    pub name: &'static str,
    /// The storage layout as the figure declares it.
    pub layout: &'static str,
    pub threads: usize,
    pub device: bool,
}

impl Figure {
    /// A product run by the thread array `T` (CUDA events and repeats for cuda arrays).
    pub fn on<T: ThreadArray>(name: &'static str, layout: &'static str) -> Self {
        Figure {
            name,
            layout,
            threads: T::threads(),
            device: T::KIND == ThreadArrayKind::Cuda,
        }
    }

    /// The product on the calling thread.
    pub fn serial(name: &'static str, layout: &'static str) -> Self {
        Figure {
            name,
            layout,
            threads: 1,
            device: false,
        }
    }

    /// Run `multiply` on arrays of the storage type `S`, whose elements the logical
    /// matrix type `V` (`V[i][j]`) places, with `V`'s offset function as a run-time value
    /// (the layout table is built from the type's tree, not from `V::offset`).
    pub fn run<V: DataType, S: DataType<Elem = f32>>(
        self,
        multiply: impl FnMut(&Array<S>, &Array<S>, &mut Array<S>) -> Result<()>,
    ) -> Result<Run> {
        let module = V::module();
        let rows = module
            .lookup(&format!("{}_0", V::NAME))
            .expect("a matrix type has rows");
        let n = module.size(rows.node) as usize;
        let off = parray::layout::index_function(module, V::NAME, &["i", "j"])
            .expect("V indexes as a matrix");
        let (i, j) = (off.vars.id("i"), off.vars.id("j"));
        let mut offset = parray::layout::eval::Program::new(&off.expr);
        let mut values = vec![0; off.vars.len()];
        let table: Vec<usize> = (0..n * n)
            .map(|x| {
                for (var, value) in [(i, x / n), (j, x % n)] {
                    if let Some(v) = var {
                        values[v.0 as usize] = value as u64;
                    }
                }
                offset.eval(&values) as usize
            })
            .collect();
        let create = Array::<S>::new;
        let (mut a, mut b, mut c) = (create()?, create()?, create()?);
        run_matmul(
            Variant {
                name: self.name,
                threads: self.threads,
                layout: self.layout,
                device: self.device,
            },
            n,
            |r, col| table[r * n + col],
            (&mut a, &mut b, &mut c),
            multiply,
        )
    }
}

/// Print the figure example's report and fail the process when the check failed.
pub fn finish(run: &Run) {
    run.report();
    if !run.ok {
        std::process::exit(1);
    }
}

/// Where an example writes its image: the argument after `--png`, else `default`.
pub fn png_path(default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == "--png")
        .and_then(|i| args.get(i + 1))
        .map_or(default, String::as_str)
        .to_string()
}

/// A `dim` x `dim` image of RGBA bytes as an 8-bit RGBA PNG.
pub fn write_png(path: &str, dim: usize, rgba: &[u8]) -> Result<()> {
    let fail = |e: &dyn std::fmt::Display| parray::Error::Unsupported {
        what: "writing the PNG",
        reason: format!("{path}: {e}"),
    };
    let file = std::fs::File::create(path).map_err(|e| fail(&e))?;
    let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), dim as u32, dim as u32);
    encoder.set_color(png::ColorType::Rgba);
    encoder.set_depth(png::BitDepth::Eight);
    let mut writer = encoder.write_header().map_err(|e| fail(&e))?;
    writer.write_image_data(rgba).map_err(|e| fail(&e))
}
