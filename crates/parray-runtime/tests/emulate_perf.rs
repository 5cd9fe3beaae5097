//! Prints (does not assert) the emulation's cost per thread; meaningful with `--release`:
//! `cargo test -p parray-runtime --release --test emulate_perf -- --nocapture`.
// The body with a barrier is written in the shape `detour!` generates, which indexes
// per-thread arrays by thread id.
#![allow(clippy::needless_range_loop)]

mod common;

use common::SyncPtr;
use parray_runtime::exec::emulate::{run_grid, run_grid_blocks};
use parray_runtime::exec::CudaGrid;
use std::time::{Duration, Instant};

/// The best of `reps` timings of `f`.
fn best(reps: usize, mut f: impl FnMut()) -> Duration {
    (0..reps)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .min()
        .expect("reps > 0")
}

#[test]
fn time_per_thread() {
    const N: usize = 1024 * 1024;
    let a: Vec<f32> = (0..N).map(|i| (i % 7) as f32).collect();
    let b: Vec<f32> = (0..N).map(|i| (i % 5) as f32).collect();
    let mut c = vec![1.0f32; N];
    let cp = SyncPtr(c.as_mut_ptr());
    let (a, b) = (&a, &b);

    let mut launches = 0;
    let loops = best(20, || {
        launches += 1;
        run_grid("fma", CudaGrid::new([1024, 1, 1], [1024, 1, 1]), |t| {
            let i = t.global_id();
            // SAFETY: one writer per element; `c` outlives the launch.
            unsafe { *cp.get().add(i) = a[i] * b[i] + *cp.get().add(i) };
        })
        .unwrap();
    });
    let expect = |i: usize| launches as f32 * ((i % 7) * (i % 5)) as f32 + 1.0;
    assert!((0..N).all(|i| c[i] == expect(i)), "wrong fma results");

    let serial = best(5, || {
        for ((c, a), b) in c.iter_mut().zip(a).zip(b) {
            *c += a * b;
        }
        std::hint::black_box(&mut c);
    });

    let barrier_threads = 64 * 256;
    let blocks = best(3, || {
        run_grid_blocks("fma_sync", CudaGrid::new([64, 1, 1], [256, 1, 1]), |blk| {
            let n = blk.len();
            let mut i = vec![0; n];
            for t in 0..n {
                i[t] = blk.thread(t).global_id();
            }
            if blk.sync(line!(), &vec![true; n]) {
                for t in 0..n {
                    blk.thread(t);
                    let i = i[t];
                    // SAFETY: one writer per element; `c` outlives the launch.
                    unsafe { *cp.get().add(i) = a[i] * b[i] + *cp.get().add(i) };
                }
            }
        })
        .unwrap();
    });

    let ns = |d: Duration, n: usize| d.as_nanos() as f64 / n as f64;
    println!(
        "emulate: 1024x1024 threads without barriers: {:.2} ms, {:.2} ns/thread \
         (serial loop {:.2} ns/element); 64x256 threads with a barrier: {:.1} ns/thread",
        loops.as_secs_f64() * 1e3,
        ns(loops, N),
        ns(serial, N),
        ns(blocks, barrier_threads),
    );
}
