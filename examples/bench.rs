//! GPU performance of the generated kernels beside hand-written ones compiled the same way
//! (NVRTC, the device's own architecture), all measured in this one run: CUDA events,
//! median of 20 repeats after a warm-up. Needs a GPU (`PARRAY_BACKEND` unset or `cuda`).
//!
//! `cargo run --release --example bench`

// Each included figure brings its own copy of `common`, as when it is built alone.
#![allow(clippy::duplicate_mod)]

mod common;
#[allow(dead_code)]
#[path = "fig07_transpose.rs"]
mod fig07;
#[allow(dead_code)]
#[path = "fig13_matmul_gpu.rs"]
mod fig13;
#[allow(dead_code)]
#[path = "fig17_matmul_halves.rs"]
mod fig17;
#[allow(dead_code)]
#[path = "fig18_matmul_strips.rs"]
mod fig18a;
#[allow(dead_code)]
#[path = "fig18_matmul_blocks.rs"]
mod fig18b;
#[allow(dead_code)]
#[path = "fig21_sgemm.rs"]
mod fig21;
// The GEMMs their own examples run, from the examples' library (built once).
use parray_examples::sgemm;

use std::time::Instant;

use parray::gpu::Backend;
use parray::prelude::*;

parray! {
    #parray {cuda() [1][1]} EMPTY
    #parray {dmem float [1024][1024]} ROWMAJOR
    #parray {dmem float [8192][8192]} SQUARE
    #parray {dmem float [[8192/16][16]][[8192/16][16]]} BIG16
    #parray {cuda(float* worki, float* worko) [[8192/16][8192/16]][[16][16]]} CUDA16
    #parray {smem float [16][17]} T16
    #parray {smem float [#T16_0][16#T16_1]} TV16
    #parray {dmem float [[8192/32][32]][[8192/32][32]]} BIG32
    #parray {cuda(float* worki, float* worko) [[8192/32][8192/32]][[32][32]]} CUDA32
    #parray {smem float [32][33]} T32
    #parray {smem float [#T32_0][32#T32_1]} TV32
    #parray {dmem float [2][2][4096][4096]} QUADS_STORE
    #parray {float [[#QUADS_STORE_0][#QUADS_STORE_2]][[#QUADS_STORE_1][#QUADS_STORE_3]]} QUADS
    #parray {float [#SQUARE_1][#SQUARE_0]} SQUARE_T
    #parray {pinned float [8192][8192]} PINNED
}

/// Fig 14 (the CUDA Programming Guide's kernel) on Fig 13's launch shape: a block per row.
const FIG14_ROWS: &str = r#"
extern "C" __global__ void fig14_rows(float* A, float* B, float* C) {
    int row = blockIdx.x;
    int col = threadIdx.x;
    float Cvalue = 0;
    for (int e = 0; e < 1024; ++e)
        Cvalue += A[row * 1024 + e] * B[e * 1024 + col];
    C[row * 1024 + col] = Cvalue;
}
"#;

/// Fig 14 with the guide's 16x16 blocks.
const FIG14_TILES: &str = r#"
extern "C" __global__ void fig14_tiles(float* A, float* B, float* C) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    float Cvalue = 0;
    for (int e = 0; e < 1024; ++e)
        Cvalue += A[row * 1024 + e] * B[e * 1024 + col];
    C[row * 1024 + col] = Cvalue;
}
"#;

/// The usual hand-tuned transpose: 32x32 tiles, 32x8 threads, four rows each.
const TRANSPOSE_HAND: &str = r#"
extern "C" __global__ void transpose_hand(const float* in, float* out) {
    __shared__ float tile[32][33];
    int x = blockIdx.x * 32 + threadIdx.x;
    int y = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) tile[threadIdx.y + j][threadIdx.x] = in[(y + j) * 8192 + x];
    __syncthreads();
    x = blockIdx.y * 32 + threadIdx.x;
    y = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) out[(y + j) * 8192 + x] = tile[threadIdx.x][threadIdx.y + j];
}
"#;

fn transpose16(i: &Array<BIG16>, o: &mut Array<BIG16>) -> parray::Result<()> {
    detour!(CUDA16(i, o) {
        let tile = T16::create();
        tile[$TV16[$tid_1_0$][$tid_1_1$]$] = worki[$BIG16[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
        #sync;
        worko[$BIG16[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$TV16[$tid_1_1$][$tid_1_0$]$];
    })
}

fn transpose32(i: &Array<BIG32>, o: &mut Array<BIG32>) -> parray::Result<()> {
    detour!(CUDA32(i, o) {
        let tile = T32::create();
        tile[$TV32[$tid_1_0$][$tid_1_1$]$] = worki[$BIG32[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
        #sync;
        worko[$BIG32[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$TV32[$tid_1_1$][$tid_1_0$]$];
    })
}

/// Milliseconds on the GPU (bench runs nowhere else: no time here is emulated).
fn ms(f: impl FnMut() -> parray::Result<()>) -> parray::Result<f64> {
    Ok(common::median_time(20, true, f)?.ms)
}

fn main() -> parray::Result<()> {
    if parray::gpu::backend()? != Backend::Cuda {
        println!("bench measures GPU kernels: no CUDA device here, nothing to do");
        return Ok(());
    }
    let n = 1024usize;
    let flop = 2.0 * (n as f64).powi(3);
    println!("== matrix product {n}x{n} (median of 20, CUDA events)");
    println!(
        "{:<34} {:>9} {:>10} {:>8}  check",
        "variant", "ms", "GFLOP/s", "vs fig13"
    );
    let row = |name: &str, t: f64, base: f64, ok: bool| {
        println!(
            "{name:<34} {t:>9.4} {:>10.1} {:>7.1}%  {}",
            flop / t / 1e6,
            100.0 * base / t,
            if ok { "ok" } else { "FAILED" }
        );
    };
    let r13 = fig13::run()?;
    let base = r13.time.ms;
    row("fig13 parray (1024x1024 threads)", base, base, r13.ok);
    // The hand-written kernels on the same row-major data, checked the same way.
    let (mut a, mut b, mut c) = (
        ROWMAJOR::create()?,
        ROWMAJOR::create()?,
        ROWMAJOR::create()?,
    );
    for (name, kernel, source, grid, block) in [
        (
            "fig14 hand, same launch shape",
            "fig14_rows",
            FIG14_ROWS,
            [1024, 1, 1],
            [1024, 1, 1],
        ),
        (
            "fig14 hand, 16x16 blocks",
            "fig14_tiles",
            FIG14_TILES,
            [64, 64, 1],
            [16, 16, 1],
        ),
    ] {
        let run = common::run_matmul(
            common::Variant {
                name,
                threads: n * n,
                layout: "[1024][1024]",
                device: true,
            },
            n,
            |i, j| i * n + j,
            (&mut a, &mut b, &mut c),
            |a, b, c| common::raw_kernel(kernel, source, grid, block, &[a, b, &*c]),
        )?;
        row(name, run.time.ms, base, run.ok);
    }
    // Each included figure has its own `common`, so take the fields out.
    macro_rules! summary {
        ($run:expr) => {{
            let run = $run?;
            (run.variant, run.time.ms, run.ok)
        }};
    }
    for (name, t, ok) in [
        summary!(fig17::run()),
        summary!(fig18a::run()),
        summary!(fig18b::run()),
    ] {
        row(name, t, base, ok);
    }

    let big = 8192usize;
    let bytes = 2.0 * (big * big * 4) as f64;
    println!("\n== transpose {big}x{big} float (bytes read + written over time)");
    let input: Vec<f32> = common::random_values(big * big, 11);
    let (mut i, mut o) = (SQUARE::create()?, SQUARE::create()?);
    i.copy_from_slice(&input)?;
    let copy = common::device_copy_time(&i, &o, big * big * 4)?.ms;
    let transposed = |out: &Array<SQUARE>| -> parray::Result<bool> {
        let v = out.to_vec()?;
        Ok((0..big * big).all(|x| v[x] == input[(x % big) * big + x / big]))
    };
    println!(
        "{:<34} {:>9} {:>10} {:>8}  check",
        "variant", "ms", "GB/s", "vs copy"
    );
    let trow = |name: &str, t: f64, ok: bool| {
        println!(
            "{name:<34} {t:>9.4} {:>10.0} {:>7.1}%  {}",
            bytes / t / 1e6,
            100.0 * copy / t,
            if ok { "ok" } else { "FAILED" }
        );
    };
    trow("device-to-device copy (driver)", copy, true);
    let t = ms(|| {
        common::raw_kernel(
            "transpose_hand",
            TRANSPOSE_HAND,
            [256, 256, 1],
            [32, 8, 1],
            &[&i, &o],
        )
    })?;
    trow("hand transpose 32x8 threads", t, transposed(&o)?);
    let t = ms(|| transpose16(i.as_type()?, o.as_type_mut()?))?;
    trow("fig07 parray, 16x16 tiles", t, transposed(&o)?);
    let t = ms(|| transpose32(i.as_type()?, o.as_type_mut()?))?;
    trow("fig07 parray, 32x32 tiles", t, transposed(&o)?);
    let t = ms(|| fig07::transpose_big(i.as_type()?, o.as_type_mut()?))?;
    trow("fig07 parray, 32x32 tiles, 4 rows", t, transposed(&o)?);
    let t = ms(|| fig07::copy_big(i.as_type()?, o.as_type_mut()?))?;
    trow("parray copy detour", t, o.to_vec()? == input);

    println!("(the first two parray rows are Fig 7's body as printed: one element per thread)");

    println!("\n== #copy {big}x{big} float (bytes read + written over time; the path each takes)");
    println!(
        "{:<34} {:>9} {:>10} {:>8}  check",
        "variant", "ms", "GB/s", "vs copy"
    );
    trow("device-to-device copy (driver)", copy, true);
    let logical = |v: &[f32], at: &dyn Fn(usize, usize) -> usize| {
        (0..big * big).all(|x| v[at(x / big, x % big)] == input[x])
    };
    let mut quads = QUADS_STORE::create()?;
    let mut path = None;
    let t = ms(|| {
        path = Some(i.copy_to(quads.view_mut::<QUADS>())?);
        Ok(())
    })?;
    let ok = logical(&quads.to_vec()?, &|r, c| QUADS::offset([r, c]));
    trow(
        &format!("rows to 2x2 blocks ({:?})", path.expect("ran")),
        t,
        ok,
    );
    let t = ms(|| quads.view::<QUADS>().copy_to(&mut o).map(|_| ()))?;
    trow("2x2 blocks to rows", t, o.to_vec()? == input);
    let t = ms(|| i.copy_to(o.view_mut::<SQUARE_T>()).map(|_| ()))?;
    trow("rows to [#A_1][#A_0] (transposing)", t, transposed(&o)?);
    // Host to device: a contiguous pinned array, beside the driver's copy of its bytes.
    let mut pinned = PINNED::create()?;
    pinned.copy_from_slice(&input)?;
    let h2d_bytes = (big * big * 4) as f64;
    let raw = ms(|| {
        let to = o.ptr_mut().device_address().expect("dmem on a GPU");
        let stream = o.device().and_then(|d| d.stream()).expect("dmem on a GPU");
        // SAFETY: `o` holds the 8192x8192 floats `pinned` holds, on this stream's device.
        unsafe {
            cudarc::driver::result::memcpy_htod_async(to, pinned.as_slice()?, stream.cu_stream())
        }
        .map_err(|e| parray::Error::Driver {
            type_name: "PINNED",
            operation: "raw host-to-device copy",
            reason: e.to_string(),
        })
    })?;
    let t = ms(|| pinned.copy_to(&mut o).map(|_| ()))?;
    println!(
        "{:<34} {raw:>9.4} {:>10.0}",
        "pinned to dmem, raw cuMemcpyHtoD",
        h2d_bytes / raw / 1e6
    );
    println!(
        "{:<34} {t:>9.4} {:>10.0} {:>7.1}%  {}",
        "pinned to dmem, #copy (Bulk)",
        h2d_bytes / t / 1e6,
        100.0 * raw / t,
        if o.to_vec()? == input { "ok" } else { "FAILED" }
    );
    // SGEMM: each example's rows carry cuBLAS's, measured beside them in the same run.
    println!(
        "\n== SGEMM (median of 10, CUDA events; cuBLAS in the same run, default math, no TF32)"
    );
    let fig21_ok = fig21::run()?;
    let tuned_ok = sgemm::run()?;
    if !(fig21_ok && tuned_ok) {
        println!("SGEMM check: FAILED");
    }
    println!(
        "\n== launch overhead (empty kernel, cached; host time per launch + sync, median of 2000)"
    );
    let ctx = parray::gpu::cuda_context().expect("the cuda backend has a context");
    let stream = ctx.default_stream();
    let source: &'static str = parray::kernel_source!(EMPTY() {});
    let name = source
        .split("void ")
        .nth(1)
        .and_then(|s| s.split('(').next())
        .expect("a kernel name");
    let function = parray::Device::current()?.compile_static(name, source)?;
    let per_call = |mut f: Box<dyn FnMut() -> parray::Result<()> + '_>| -> parray::Result<f64> {
        for _ in 0..100 {
            f()?;
        }
        let mut times: Vec<f64> = (0..2000)
            .map(|_| {
                let t = Instant::now();
                f().map(|_| t.elapsed().as_secs_f64() * 1e6)
            })
            .collect::<parray::Result<_>>()?;
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    };
    let raw = per_call(Box::new(|| {
        let cfg = cudarc::driver::LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (1, 1, 1),
            shared_mem_bytes: 0,
        };
        // SAFETY: the kernel takes no parameters.
        let mut builder = stream.launch_builder(&function);
        unsafe { builder.launch(cfg) }
            .and_then(|_| stream.synchronize())
            .map_err(|e| parray::Error::Driver {
                type_name: "EMPTY",
                operation: "raw launch",
                reason: e.to_string(),
            })
    }))?;
    let device = parray::Device::current()?;
    let detour = per_call(Box::new(|| {
        detour!(EMPTY() {})?;
        device.synchronize()
    }))?;
    // A proved kernel's detour returns once it is queued, as a raw launch does.
    let queued = per_call(Box::new(|| detour!(EMPTY() {})))?;
    device.synchronize()?;
    println!("raw cudarc launch + sync: {raw:.2} us");
    println!(
        "parray detour (launch + sync): {detour:.2} us  (+{:.2} us)",
        detour - raw
    );
    println!("parray detour (queued, not waited for): {queued:.2} us");
    Ok(())
}
