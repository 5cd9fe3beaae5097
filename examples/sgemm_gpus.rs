//! The tuned SGEMM split over two GPUs: `C = A B` for row-major N x N matrices, a `pthd`
//! thread per GPU. Thread t creates its part on its own device (`create_on`): its N/2 rows
//! of A, all of B and its N/2 rows of C, and runs the tuned subprogram of
//! `examples/shared/sgemm.rs` there, its (N/2) x N x N instance. The inputs are made on
//! the host (pinned), each part uploaded by `#copy` from the host array of its rows, and
//! each part of C gathered back by `#copy` into the host array of its rows.
//!
//! The table: the subprogram on one GPU for the whole product, on both GPUs, cuBLAS on one
//! GPU, each the median of the timed repeats after a warm-up (CUDA events on each GPU;
//! two GPUs count the slower of the two in each repeat): compute only, the data resident,
//! and again with the host-to-device uploads of A and B included. Every result is checked
//! against an f64 CPU product on sampled entries (all of them at small N).
//!
//! `PARRAY_BACKEND=cuda target/release/examples/sgemm_gpus` on a machine with two GPUs
//! (N = 16384; `--n 8192` too); under the emulation two emulated devices and N = 512
//! (`--small`), in CI.

mod common;

use std::sync::Mutex;

use common::gemm::relative_error;
use parray::gpu::{time_ms_on, Backend, Timing};
use parray::prelude::*;
use parray::{Array, DataType, Device, ThreadArray};
// The subprogram from the examples' library, where `examples/sgemm.rs` runs it too.
use parray_examples::sgemm::{self, T128X256, UNSPLIT};

/// The GPUs the product is split over (a compile-time size: the parts' types depend on it).
const G: usize = 2;

/// The largest relative error (Frobenius, over the sampled entries) a result may have.
const TOLERANCE: f64 = 1e-4;

parray! {
    // A thread per GPU.
    pub pthd [2] GPUS;
}

/// Runs `f(t)` on thread t of `GPUS`, one thread per device, all at once; the first error
/// any of them returned.
fn on_each(f: &(dyn Fn(usize) -> parray::Result<()> + Sync)) -> parray::Result<()> {
    assert_eq!(<GPUS as ThreadArray>::threads(), G, "a thread per GPU");
    let errors = Mutex::new(Vec::new());
    let errors_ref = &errors;
    detour!(GPUS {
        on_thread(f, $tid$, errors_ref);
    })?;
    let errors = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    errors.into_iter().next().map_or(Ok(()), Err)
}

fn on_thread(
    f: &(dyn Fn(usize) -> parray::Result<()> + Sync),
    t: usize,
    errors: &Mutex<Vec<parray::Error>>,
) {
    if let Err(e) = f(t) {
        errors.lock().unwrap_or_else(|e| e.into_inner()).push(e);
    }
}

/// The median of `repeats` runs of `round` (each giving its time), after a warm-up run
/// (module loads, kernel compilation).
fn median_round(
    repeats: usize,
    mut round: impl FnMut() -> parray::Result<Timing>,
) -> parray::Result<Timing> {
    round()?;
    let mut times = (0..repeats.max(1))
        .map(|_| round())
        .collect::<parray::Result<Vec<Timing>>>()?;
    times.sort_by(|a, b| a.ms.total_cmp(&b.ms));
    Ok(times[times.len() / 2])
}

/// One round on every device at once: `f(t)` gives device t's time; the round lasts as
/// long as the slowest.
fn slowest(f: &(dyn Fn(usize) -> parray::Result<Timing> + Sync)) -> parray::Result<Timing> {
    let times = Mutex::new(Vec::with_capacity(G));
    on_each(&|t| {
        let time = f(t)?;
        times.lock().unwrap_or_else(|e| e.into_inner()).push(time);
        Ok(())
    })?;
    let times = times.into_inner().unwrap_or_else(|e| e.into_inner());
    Ok(times
        .into_iter()
        .max_by(|a, b| a.ms.total_cmp(&b.ms))
        .expect("a time from each device"))
}

/// The random inputs, row-major, and the entries of C the check computes in f64.
struct Inputs {
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    /// `(i, j, c_ij)`.
    samples: Vec<(usize, usize, f64)>,
}

impl Inputs {
    fn new(n: usize) -> Inputs {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let (a, b) = (
            common::random_values(n * n, seed),
            common::random_values(n * n, seed + 1),
        );
        // Every entry at small N; else 128 rows by 128 columns spread over the matrix
        // (both halves, every tile position), each computed in f64.
        let picks: Vec<usize> = if n <= 1024 {
            (0..n).collect()
        } else {
            (0..128).map(|r| (r * (n / 128) + r * 37) % n).collect()
        };
        let samples = picks
            .iter()
            .flat_map(|&i| picks.iter().map(move |&j| (i, j)))
            .map(|(i, j)| {
                let dot = (0..n)
                    .map(|k| f64::from(a[i * n + k]) * f64::from(b[k * n + j]))
                    .sum();
                (i, j, dot)
            })
            .collect();
        Inputs { n, a, b, samples }
    }

    /// The relative error of C, read entry by entry through `c(i, j)`.
    fn error(&self, c: impl Fn(usize, usize) -> f32) -> f64 {
        let got: Vec<f32> = self.samples.iter().map(|&(i, j, _)| c(i, j)).collect();
        let want: Vec<f64> = self.samples.iter().map(|s| s.2).collect();
        relative_error(&got, &want)
    }
}

/// One line of the table.
struct Row {
    run: String,
    time: Timing,
    error: f64,
}

/// The runs of one size N, as the subprogram's instances for it.
macro_rules! split {
    ($module:ident, $n:literal) => {
        #[allow(dead_code)] // each size declares what every size may use
        mod $module {
            use super::*;

            const _: () = assert!(
                $n % (128 * G) == 0,
                "N must be a multiple of 128 x G: each GPU's N/G rows are whole 128-row tiles"
            );

            parray! {
                const N = $n;
                // Whole matrices on the host and on one device.
                pub pinned float [N][N] H;
                pub dmem float [N][N] WHOLE;
                // A GPU's rows of A or C (N/2 of them: G = 2), on the host and on its device.
                pub pinned float [N/2][N] HOST_ROWS;
                pub dmem float [N/2][N] ROWS;
            }

            const _: () = assert!(
                matches!(
                    (<ROWS as DataType>::FIXED_SIZE, <WHOLE as DataType>::FIXED_SIZE),
                    (Some(rows), Some(whole)) if rows * G == whole
                ),
                "a GPU's rows are N/G of N"
            );

            /// What thread t keeps on its device between rounds, and its rows of C on the
            /// host.
            struct Part {
                a: Array<ROWS>,
                b: Array<WHOLE>,
                c: Array<ROWS>,
                host_c: Array<HOST_ROWS>,
            }

            /// The table's rows for N: cuBLAS (on a GPU), the subprogram on one device and
            /// on G, each compute only and with the uploads.
            pub(crate) fn rows(devices: &[Device; G], repeats: usize) -> parray::Result<Vec<Row>> {
                let inputs = Inputs::new($n);
                let n = inputs.n;
                let part = n / G;
                let mut rows = Vec::new();

                // The inputs on the host: whole, and A by each GPU's rows.
                let (mut ha, mut hb, mut hc) = (H::create()?, H::create()?, H::create()?);
                ha.as_mut_slice()?.copy_from_slice(&inputs.a);
                hb.as_mut_slice()?.copy_from_slice(&inputs.b);
                let mut ha_rows = Vec::with_capacity(G);
                for t in 0..G {
                    let mut rows_t = HOST_ROWS::create()?;
                    rows_t
                        .as_mut_slice()?
                        .copy_from_slice(&inputs.a[t * part * n..(t + 1) * part * n]);
                    ha_rows.push(rows_t);
                }

                // One GPU, the whole product: cuBLAS, then the subprogram.
                {
                    let device = &devices[0];
                    let (mut a, mut b, mut c) = (
                        WHOLE::create_on(device)?,
                        WHOLE::create_on(device)?,
                        WHOLE::create_on(device)?,
                    );
                    ha.copy_to(&mut a)?;
                    hb.copy_to(&mut b)?;
                    let checked = |c: &Array<WHOLE>, hc: &mut Array<H>| {
                        c.copy_to(hc)?;
                        let hc = hc.as_slice()?;
                        parray::Result::Ok(inputs.error(|i, j| hc[i * n + j]))
                    };
                    if !device.is_emulated() {
                        c.fill(f32::NAN)?;
                        let time = median_round(repeats, || {
                            time_ms_on(device, || parray::gpu::cublas::sgemm(&a, &b, &mut c))
                        })?;
                        let error = checked(&c, &mut hc)?;
                        rows.push(Row { run: "cuBLAS, 1 GPU".into(), time, error });
                    }
                    // C poisoned, the product, C checked: cuBLAS, the subprogram, and the
                    // subprogram with the uploads.
                    c.fill(f32::NAN)?;
                    let time = median_round(repeats, || {
                        time_ms_on(device, || sgemm::sgemm!(<WHOLE, WHOLE, WHOLE, UNSPLIT, T128X256>(&a, &b, &mut c)))
                    })?;
                    let error = checked(&c, &mut hc)?;
                    rows.push(Row { run: "tuned, 1 GPU".into(), time, error });
                    c.fill(f32::NAN)?;
                    let time = median_round(repeats, || {
                        time_ms_on(device, || {
                            ha.copy_to(&mut a)?;
                            hb.copy_to(&mut b)?;
                            sgemm::sgemm!(<WHOLE, WHOLE, WHOLE, UNSPLIT, T128X256>(&a, &b, &mut c))
                        })
                    })?;
                    let error = checked(&c, &mut hc)?;
                    rows.push(Row { run: "tuned, 1 GPU, with upload".into(), time, error });
                }

                // G GPUs: thread t creates its part on device t and uploads it by `#copy`.
                let parts: Vec<Mutex<Option<Part>>> = (0..G).map(|_| Mutex::new(None)).collect();
                let lock = |t: usize| parts[t].lock().unwrap_or_else(|e| e.into_inner());
                on_each(&|t| {
                    let device = &devices[t];
                    let mut p = Part {
                        a: ROWS::create_on(device)?,
                        b: WHOLE::create_on(device)?,
                        c: ROWS::create_on(device)?,
                        host_c: HOST_ROWS::create()?,
                    };
                    ha_rows[t].copy_to(&mut p.a)?;
                    hb.copy_to(&mut p.b)?;
                    p.c.fill(f32::NAN)?;
                    *lock(t) = Some(p);
                    Ok(())
                })?;
                let multiply = |p: &mut Part| sgemm::sgemm!(<ROWS, WHOLE, ROWS, UNSPLIT, T128X256>(&p.a, &p.b, &mut p.c));
                // Each GPU's rows of C back into the host's by `#copy`, checked, and C
                // poisoned again.
                let checked = || {
                    on_each(&|t| {
                        let mut slot = lock(t);
                        let p = slot.as_mut().expect("made above");
                        p.c.copy_to(&mut p.host_c)?;
                        p.c.fill(f32::NAN)
                    })?;
                    let slots: Vec<_> = (0..G).map(lock).collect();
                    let host_c = slots
                        .iter()
                        .map(|s| s.as_ref().expect("made above").host_c.as_slice())
                        .collect::<parray::Result<Vec<&[f32]>>>()?;
                    parray::Result::Ok(inputs.error(|i, j| host_c[i / part][(i % part) * n + j]))
                };
                let time = median_round(repeats, || {
                    slowest(&|t| {
                        let mut slot = lock(t);
                        let p = slot.as_mut().expect("made above");
                        time_ms_on(&devices[t], || multiply(p))
                    })
                })?;
                let gpus = format!("tuned, {G} GPUs");
                rows.push(Row { run: gpus.clone(), time, error: checked()? });
                let time = median_round(repeats, || {
                    slowest(&|t| {
                        let mut slot = lock(t);
                        let p = slot.as_mut().expect("made above");
                        time_ms_on(&devices[t], || {
                            ha_rows[t].copy_to(&mut p.a)?;
                            hb.copy_to(&mut p.b)?;
                            multiply(p)
                        })
                    })
                })?;
                rows.push(Row { run: format!("{gpus}, with upload"), time, error: checked()? });
                Ok(rows)
            }
        }
    };
}

split!(n512, 512);
split!(n8192, 8192);
split!(n16384, 16384);

/// The sizes compiled in, and the one the emulation runs.
const SIZES: &[usize] = &[512, 8192, 16384];
const SMALL: usize = 512;

/// The G devices: the backend's first G GPUs, or G emulated devices under the emulation.
fn devices() -> parray::Result<Result<[Device; G], String>> {
    let count = Device::count()?;
    if parray::gpu::backend()? == Backend::Cuda && count < G {
        return Ok(Err(format!(
            "the product is split over {G} GPUs, and this machine has {count} \
             (PARRAY_BACKEND=emulate runs it on {G} emulated devices)"
        )));
    }
    Ok(Ok(match (Device::nth(0), Device::nth(1)) {
        (Ok(a), Ok(b)) => [a, b],
        // Fewer emulated devices than G (PARRAY_EMULATED_DEVICES=1): G of them anyway.
        _ => [Device::emulated(0), Device::emulated(1)],
    }))
}

/// A usage error: said on stderr, exit status 2.
fn fail(message: String) -> ! {
    eprintln!("sgemm_gpus: {message}");
    std::process::exit(2)
}

fn main() -> parray::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let backend = parray::gpu::backend()?;
    let n = if args.iter().any(|a| a == "--small") {
        SMALL
    } else {
        common::gemm::sizes(&[16384], &[SMALL])?[0]
    };
    if !SIZES.contains(&n) {
        fail(format!(
            "N is one of {SIZES:?} (the sizes compiled in: each a multiple of 128 x {G}, so \
             that each GPU's N/{G} rows are whole 128-row tiles of the subprogram)"
        ));
    }
    let devices = match devices()? {
        Ok(devices) => devices,
        Err(message) => fail(message),
    };
    let repeats = common::gemm::repeats()?.max(5);
    println!("command: {}", args.join(" "));
    println!(
        "backend: {backend:?}; devices: {}, {} (G = {G}); N = {n}; median of {repeats} after a warm-up",
        devices[0], devices[1]
    );
    let rows = match n {
        512 => n512::rows(&devices, repeats)?,
        8192 => n8192::rows(&devices, repeats)?,
        _ => n16384::rows(&devices, repeats)?,
    };
    let one_gpu = |name: &str| rows.iter().find(|r| r.run == name).map(|r| r.time.ms);
    println!(
        "{:>6}  {:<28} {:>21} {:>20} {:>9}  check (relative error vs f64 CPU, sampled)",
        "N", "run", "time (ms)", "TFLOP/s", "speedup"
    );
    let flops = 2.0 * (n as f64).powi(3);
    for row in &rows {
        let base = if row.run.ends_with("with upload") {
            one_gpu("tuned, 1 GPU, with upload")
        } else {
            one_gpu("tuned, 1 GPU")
        };
        let speedup = base.map_or("-".into(), |b| format!("{:.2}x", b / row.time.ms));
        let ok = row.error <= TOLERANCE;
        println!(
            "{n:>6}  {:<28} {:>21} {:>20} {:>9}  {} ({:.1e})",
            row.run,
            common::cell(row.time.ms, 3, row.time),
            common::cell(flops / row.time.seconds() / 1e12, 2, row.time),
            if row.run.starts_with("cuBLAS") {
                "-".into()
            } else {
                speedup
            },
            if ok { "ok" } else { "FAILED" },
            row.error
        );
    }
    common::check(rows.iter().all(|r| r.error <= TOLERANCE));
    Ok(())
}
