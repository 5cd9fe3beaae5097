//! The CPU emulation of a CUDA grid: indices, coverage, shared memory, barriers, errors.
//!
//! Bodies with barriers are written in the shape `detour!` generates: called once per
//! block, each stretch between barriers a loop over thread ids, each barrier given the
//! mask of the threads that reach it.
// That shape indexes per-thread arrays by thread id and returns after every barrier.
#![allow(clippy::needless_range_loop, clippy::needless_return)]

mod common;
#[path = "common/timeout.rs"]
mod timeout;

use common::SyncPtr;
use parray_runtime::exec::emulate::{
    run_grid, run_grid_blocks, Dim3, EmulateError, ThreadCtx, MAX_SHARED_BYTES,
};
use parray_runtime::exec::CudaGrid;
use parray_runtime::{Access, AccessMut, Float2};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use timeout::within;

/// Whether every index accessor of `t` agrees with an independent computation.
fn indices_agree(t: &ThreadCtx, [gx, gy, gz]: [u32; 3], [bx, by, bz]: [u32; 3]) -> bool {
    let (b, th) = (t.block_idx(), t.thread_idx());
    let in_range = b.x < gx && b.y < gy && b.z < gz && th.x < bx && th.y < by && th.z < bz;
    let block_id = (b.x + gx * (b.y + gy * b.z)) as usize;
    let thread_id = (th.x + bx * (th.y + by * th.z)) as usize;
    let per_block = (bx * by * bz) as usize;
    in_range
        && t.block_id() == block_id
        && t.thread_id() == thread_id
        && t.global_id() == block_id * per_block + thread_id
        && t.grid_dim() == Dim3::new(gx, gy, gz)
        && t.block_dim() == Dim3::new(bx, by, bz)
}

/// Runs a kernel recording, for each global thread, how often it ran and whether every
/// index accessor agreed; returns the counts. With `sync`, the body runs once per block and
/// meets its block at two barriers around the count.
fn coverage(grid: [u32; 3], block: [u32; 3], sync: bool) -> Vec<u32> {
    let shape = CudaGrid::new(grid, block);
    let threads = grid.iter().chain(&block).product::<u32>() as usize;
    let counts: Vec<AtomicU32> = (0..threads).map(|_| AtomicU32::new(0)).collect();
    let bad = AtomicUsize::new(0);
    let (counts_ref, bad_ref) = (&counts, &bad);
    let count = move |t: &ThreadCtx| {
        if indices_agree(t, grid, block) {
            counts_ref[t.global_id()].fetch_add(1, Ordering::Relaxed);
        } else {
            bad_ref.fetch_add(1, Ordering::Relaxed);
        }
    };
    if sync {
        run_grid_blocks("coverage", shape, |b| {
            let present = vec![true; b.len()];
            if !b.sync(line!(), &present) {
                return;
            }
            for t in 0..b.len() {
                count(&b.thread(t));
            }
            if !b.sync(line!(), &present) {
                return;
            }
        })
    } else {
        run_grid("coverage", shape, count)
    }
    .unwrap();
    assert_eq!(bad.into_inner(), 0, "index accessors disagree");
    counts.into_iter().map(AtomicU32::into_inner).collect()
}

#[test]
fn every_thread_runs_exactly_once() {
    within(60, || {
        for sync in [false, true] {
            for (grid, block) in [
                ([3, 2, 1], [4, 2, 2]),
                ([2, 3, 4], [3, 1, 5]),
                ([1, 1, 1], [1, 1, 1]),
                ([5, 1, 1], [1, 1, 1]),
                ([7, 1, 3], [32, 1, 1]),
                ([1000, 7, 1], [3, 1, 1]),
            ] {
                let counts = coverage(grid, block, sync);
                assert!(
                    counts.iter().all(|&c| c == 1),
                    "grid {grid:?} block {block:?} sync {sync}: {:?}",
                    counts.iter().enumerate().find(|(_, &c)| c != 1)
                );
            }
        }
    });
}

#[test]
fn shapes_convert_and_display() {
    assert_eq!(Dim3::from(7), Dim3::new(7, 1, 1));
    assert_eq!(Dim3::from([1, 2, 3]), Dim3::new(1, 2, 3));
    assert_eq!(<[u32; 3]>::from(Dim3::new(1, 2, 3)), [1, 2, 3]);
    assert_eq!(Dim3::new(1, 2, 3).to_string(), "(1, 2, 3)");
    // A launch shape is named as CUDA's launch syntax writes it.
    let err = run_grid("wide", CudaGrid::new([2, 3, 1], [2048, 1, 1]), |_| {}).unwrap_err();
    let prefix = "kernel `wide`: invalid launch configuration <<<(2, 3, 1), (2048, 1, 1)>>>: ";
    assert!(err.to_string().starts_with(prefix), "{err}");
}

/// A tree reduction in shared memory with a barrier per step: each block sums
/// `block_id * n + t` over its `n` threads.
fn block_sums(blocks: u32, n: u32) -> Vec<u64> {
    let mut out = vec![u64::MAX; blocks as usize];
    let outp = SyncPtr(out.as_mut_ptr());
    let pow2 = n.next_power_of_two() as usize;
    run_grid_blocks("reduce", CudaGrid::new([blocks, 1, 1], [n, 1, 1]), |b| {
        let s = b.shared_ptr::<i64>(0, n as usize, "S", false);
        let n = n as usize;
        let present = vec![true; n];
        // Each thread's registers that live across barriers.
        let (mut tid, mut stride) = (vec![0; n], vec![0; n]);
        for t in 0..n {
            let ctx = b.thread(t);
            tid[t] = ctx.thread_id();
            s.store(tid[t], (ctx.block_id() * n + tid[t]) as i64);
        }
        if !b.sync(line!(), &present) {
            return;
        }
        for t in 0..n {
            b.thread(t);
            stride[t] = pow2 / 2;
        }
        // `while stride > 0 { ..; #sync; stride /= 2 }`: the loop's mask is the threads
        // still in it.
        let mut looping = present.clone();
        loop {
            for t in 0..n {
                if looping[t] {
                    b.thread(t);
                    looping[t] = stride[t] > 0;
                }
                if looping[t] && tid[t] < stride[t] && tid[t] + stride[t] < n {
                    s.store(tid[t], s.load(tid[t]) + s.load(tid[t] + stride[t]));
                }
            }
            if !looping.contains(&true) {
                break;
            }
            if !b.sync(line!(), &looping) {
                return;
            }
            for t in 0..n {
                if looping[t] {
                    b.thread(t);
                    stride[t] /= 2;
                }
            }
        }
        for t in 0..n {
            let ctx = b.thread(t);
            if tid[t] == 0 {
                // SAFETY: one writer per block, distinct elements; `out` outlives the launch.
                unsafe { *outp.get().add(ctx.block_id()) = s.load(0) as u64 };
            }
        }
    })
    .unwrap();
    out
}

#[test]
fn shared_memory_block_reduction() {
    within(120, || {
        for (blocks, n) in [(6u32, 256u32), (5, 96), (4, 1024), (3, 1)] {
            let sums = block_sums(blocks, n);
            let (nn, tri) = (n as u64, n as u64 * (n as u64 - 1) / 2);
            for (b, &s) in sums.iter().enumerate() {
                assert_eq!(s, b as u64 * nn * nn + tri, "block {b} of {blocks}x{n}");
            }
        }
    });
}

#[test]
fn transpose_through_padded_tile() {
    // Fig 7 at 64x64: DATA [[64/16][16]][[64/16][16]], tile A = smem [16][17],
    // B = [#A_0][16#A_1]; tid_0_0 = blockIdx.y, tid_0_1 = blockIdx.x, likewise for threads.
    within(60, || {
        const N: usize = 64;
        let input: Vec<Float2> = (0..N * N)
            .map(|i| Float2::new(i as f32, -(i as f32)))
            .collect();
        let mut output = vec![Float2::new(f32::NAN, f32::NAN); N * N];
        let (wi, wo) = (
            SyncPtr(input.as_ptr().cast_mut()),
            SyncPtr(output.as_mut_ptr()),
        );
        let data =
            |i0: u32, i1: u32, j0: u32, j1: u32| ((i0 * 16 + i1) * 64 + j0 * 16 + j1) as usize;
        let b = |i: u32, j: u32| (i * 17 + j) as usize;
        let shape = CudaGrid::new([4, 4, 1], [16, 16, 1]);
        run_grid_blocks("transpose", shape, |blk| {
            let tile = blk.shared_ptr::<Float2>(0, 16 * 17, "A", false);
            let present = vec![true; blk.len()];
            for t in 0..blk.len() {
                let t = blk.thread(t);
                let (b0, b1) = (t.block_idx().y, t.block_idx().x);
                let (t0, t1) = (t.thread_idx().y, t.thread_idx().x);
                // SAFETY: reads this thread's own input element; `input` outlives the launch.
                tile.store(b(t0, t1), unsafe { *wi.get().add(data(b0, t0, b1, t1)) });
            }
            if !blk.sync(line!(), &present) {
                return;
            }
            for t in 0..blk.len() {
                let t = blk.thread(t);
                let (b0, b1) = (t.block_idx().y, t.block_idx().x);
                let (t0, t1) = (t.thread_idx().y, t.thread_idx().x);
                // SAFETY: output elements are distinct per thread; `output` outlives the
                // launch.
                unsafe { *wo.get().add(data(b1, t0, b0, t1)) = tile.load(b(t1, t0)) };
            }
        })
        .unwrap();
        for i in 0..N {
            for j in 0..N {
                assert_eq!(output[j * N + i], input[i * N + j], "element ({i}, {j})");
            }
        }
    });
}

/// Checks that each block sees its own, freshly zeroed shared arrays (two slots, two
/// types), with more blocks than cores so that memory is reused between blocks.
fn shared_is_per_block(sync: bool) {
    const BLOCKS: u32 = 24;
    const N: usize = 64;
    let bad = AtomicUsize::new(0);
    let ran = AtomicUsize::new(0);
    let (bad, ran) = (&bad, &ran);
    let shape = CudaGrid::new([BLOCKS, 1, 1], [N as u32, 1, 1]);
    let tag = |t: &ThreadCtx, tid: usize| t.block_id() as u32 * 1000 + tid as u32;
    // Before any barrier: each thread checks and writes its own elements.
    let first = move |t: &ThreadCtx| {
        let ints = t.shared_ptr::<u32>(0, N, "I", false);
        let floats = t.shared_ptr::<f64>(3, 1 + N, "F", false);
        let tid = t.thread_id();
        if ints.load(tid) != 0 || floats.load(tid + 1) != 0.0 {
            bad.fetch_add(1, Ordering::Relaxed);
        }
        ints.store(tid, tag(t, tid));
        floats.store(tid + 1, f64::from(tag(t, tid)));
        ran.fetch_add(1, Ordering::Relaxed);
    };
    if sync {
        run_grid_blocks("per_block", shape, |b| {
            let present = vec![true; N];
            for t in 0..N {
                first(&b.thread(t));
            }
            if !b.sync(line!(), &present) {
                return;
            }
            // The block's arrays, as every thread of it sees them.
            let ints = b.shared_ptr::<u32>(0, N, "I", false);
            let floats = b.shared_ptr::<f64>(3, 1 + N, "F", false);
            for t in 0..N {
                let t = b.thread(t);
                let other = (t.thread_id() + 1) % N;
                let want = tag(&t, other);
                if ints.load(other) != want || floats.load(other + 1) != f64::from(want) {
                    bad.fetch_add(1, Ordering::Relaxed);
                }
            }
        })
    } else {
        run_grid("per_block", shape, |t| {
            first(t);
        })
    }
    .unwrap();
    assert_eq!(bad.load(Ordering::Relaxed), 0);
    assert_eq!(ran.load(Ordering::Relaxed), BLOCKS as usize * N);
}

#[test]
fn shared_memory_is_distinct_and_zeroed_per_block() {
    within(60, || {
        shared_is_per_block(true);
        shared_is_per_block(false);
    });
}

#[test]
fn one_thread_blocks_may_sync() {
    let sum = AtomicUsize::new(0);
    let sum_ref = &sum;
    run_grid_blocks("solo", CudaGrid::new([100, 1, 1], [1, 1, 1]), |b| {
        let present = [true];
        if !b.sync(line!(), &present) {
            return;
        }
        sum_ref.fetch_add(b.thread(0).global_id(), Ordering::Relaxed);
        if !b.sync(line!(), &present) {
            return;
        }
    })
    .unwrap();
    assert_eq!(sum.into_inner(), 99 * 100 / 2);
}

#[test]
fn invalid_shapes_are_rejected_like_cuda() {
    for (grid, block) in [
        ([0, 1, 1], [1, 1, 1]),
        ([1, 1, 1], [1, 0, 1]),
        ([1, 70000, 1], [1, 1, 1]),
        ([1, 1, 1], [1025, 1, 1]),
        ([1, 1, 1], [1, 1, 65]),
        ([1, 1, 1], [32, 32, 2]),
    ] {
        let shape = CudaGrid::new(grid, block);
        let loops = run_grid("bad", shape, |_| panic!("must not run"));
        let blocks = run_grid_blocks("bad", shape, |_| panic!("must not run"));
        for r in [loops, blocks] {
            match r {
                Err(EmulateError::InvalidShape {
                    kernel, shape: s, ..
                }) => {
                    assert_eq!((kernel, s), ("bad", shape));
                }
                other => panic!("{shape:?}: expected InvalidShape, got {other:?}"),
            }
        }
    }
}

/// Runs a kernel that is expected to fail, returning its error's message.
fn failure(shape: CudaGrid, body: fn(&ThreadCtx)) -> String {
    within(20, move || {
        run_grid("oops", shape, body)
            .expect_err("kernel should fail")
            .to_string()
    })
}

#[test]
fn misuse_is_reported_not_undefined() {
    // One slot used with two lengths.
    let msg = failure(CudaGrid::new([1, 1, 1], [2, 1, 1]), |t| {
        let _ = t.shared_ptr::<f32>(0, 8 + t.thread_id(), "S", false);
    });
    assert!(msg.contains("shared slot 0"), "{msg}");
    // More shared memory than a CUDA block may have.
    let msg = failure(CudaGrid::new([1, 1, 1], [1, 1, 1]), |t| {
        let _ = t.shared_ptr::<i8>(0, MAX_SHARED_BYTES / 2, "A", false);
        let _ = t.shared_ptr::<i8>(1, MAX_SHARED_BYTES / 2 + 1, "B", false);
    });
    assert!(msg.contains("over the GPU limit"), "{msg}");
    // Out-of-bounds shared access (checked in debug builds, as every access).
    if cfg!(debug_assertions) {
        let msg = failure(CudaGrid::new([1, 1, 1], [1, 1, 1]), |t| {
            t.shared_ptr::<i32>(0, 4, "S4", false).store(4, 1);
        });
        assert!(msg.contains("out of bounds for S4"), "{msg}");
    }
    // A barrier's mask has one entry per thread of the block.
    let err = within(20, || {
        run_grid_blocks("mask", CudaGrid::new([2, 1, 1], [3, 1, 1]), |b| {
            if !b.sync(line!(), &[true; 2]) {
                return;
            }
        })
        .unwrap_err()
    });
    assert!(
        matches!(
            &err,
            EmulateError::Panicked {
                kernel: "mask",
                message,
                ..
            } if message.contains("one entry per thread of the block")
        ),
        "{err}"
    );
}
