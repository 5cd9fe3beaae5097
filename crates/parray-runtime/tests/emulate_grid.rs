//! The CPU emulation of a CUDA grid: indices, coverage, shared memory, barriers, errors.

mod common;

use common::SyncPtr;
use parray_runtime::gpu::emulate::{run_grid, Dim3, EmulateError, GridShape, MAX_SHARED_BYTES};
use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` in a thread; fails the test if it takes more than `secs` seconds (a hang).
fn with_timeout<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(r) => {
            h.join().unwrap();
            r
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(e) => std::panic::resume_unwind(e),
            Ok(()) => unreachable!("the thread sent no result yet did not panic"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after {secs} s (hang)"),
    }
}

/// Runs a kernel recording, for each global thread, how often it ran and whether every
/// index accessor agreed with an independent computation; returns the counts.
fn coverage(grid: [u32; 3], block: [u32; 3], uses_barrier: bool) -> Vec<u32> {
    let shape = GridShape::new(grid, block);
    let [gx, gy, gz] = grid;
    let [bx, by, bz] = block;
    let threads = (gx * gy * gz * bx * by * bz) as usize;
    let counts: Vec<AtomicU32> = (0..threads).map(|_| AtomicU32::new(0)).collect();
    let bad = AtomicUsize::new(0);
    run_grid("coverage", shape, uses_barrier, |t| {
        let (b, th) = (t.block_idx(), t.thread_idx());
        let in_range = b.x < gx && b.y < gy && b.z < gz && th.x < bx && th.y < by && th.z < bz;
        let block_id = (b.x + gx * (b.y + gy * b.z)) as usize;
        let thread_id = (th.x + bx * (th.y + by * th.z)) as usize;
        let per_block = (bx * by * bz) as usize;
        let ok = in_range
            && t.block_id() == block_id
            && t.thread_id() == thread_id
            && t.global_id() == block_id * per_block + thread_id
            && t.grid_dim() == Dim3::new(gx, gy, gz)
            && t.block_dim() == Dim3::new(bx, by, bz);
        if !ok {
            bad.fetch_add(1, Ordering::Relaxed);
            return;
        }
        if uses_barrier {
            t.sync_block();
        }
        counts[block_id * per_block + thread_id].fetch_add(1, Ordering::Relaxed);
        if uses_barrier {
            t.sync_block();
        }
    })
    .unwrap();
    assert_eq!(bad.into_inner(), 0, "index accessors disagree");
    counts.into_iter().map(AtomicU32::into_inner).collect()
}

#[test]
fn every_thread_runs_exactly_once() {
    with_timeout(60, || {
        for uses_barrier in [false, true] {
            for (grid, block) in [
                ([3, 2, 1], [4, 2, 2]),
                ([2, 3, 4], [3, 1, 5]),
                ([1, 1, 1], [1, 1, 1]),
                ([5, 1, 1], [1, 1, 1]),
                ([7, 1, 3], [32, 1, 1]),
                ([1000, 7, 1], [3, 1, 1]),
            ] {
                let counts = coverage(grid, block, uses_barrier);
                assert!(
                    counts.iter().all(|&c| c == 1),
                    "grid {grid:?} block {block:?} barrier {uses_barrier}: {:?}",
                    counts.iter().enumerate().find(|(_, &c)| c != 1)
                );
            }
        }
    });
}

#[test]
fn dim3_flattening_is_x_fastest() {
    let dims = Dim3::new(4, 2, 3);
    let mut id = 0;
    for z in 0..3 {
        for y in 0..2 {
            for x in 0..4 {
                let d = Dim3::new(x, y, z);
                assert_eq!(d.flatten(dims), id);
                assert_eq!(Dim3::unflatten(id, dims), d);
                id += 1;
            }
        }
    }
    assert_eq!(dims.volume(), 24);
    assert_eq!(Dim3::from(7), Dim3::new(7, 1, 1));
    assert_eq!(Dim3::from([1, 2, 3]), Dim3::new(1, 2, 3));
    assert_eq!(Dim3::new(1, 2, 3).to_string(), "(1, 2, 3)");
    let shape = GridShape::new([2, 3, 1], 64);
    assert_eq!((shape.num_blocks(), shape.block_threads()), (6, 64));
    assert_eq!(shape.to_string(), "<<<(2, 3, 1), (64, 1, 1)>>>");
}

/// A tree reduction in shared memory with a barrier per step: each block sums
/// `block_id * n + t` over its `n` threads.
fn block_sums(blocks: u32, n: u32) -> Vec<u64> {
    let mut out = vec![u64::MAX; blocks as usize];
    let outp = SyncPtr(out.as_mut_ptr());
    let pow2 = n.next_power_of_two() as usize;
    run_grid("reduce", GridShape::new(blocks, n), true, move |t| {
        let s = t.shared::<u64>(0, n as usize);
        let (tid, n) = (t.thread_id(), n as usize);
        // SAFETY: each thread writes its own element before the first barrier.
        unsafe { s.write(tid, (t.block_id() * n + tid) as u64) };
        t.sync_block();
        let mut stride = pow2 / 2;
        while stride > 0 {
            if tid < stride && tid + stride < n {
                // SAFETY: in this step, thread tid alone touches elements tid and tid+stride
                // (tid < stride), and steps are separated by barriers.
                unsafe { s.write(tid, s.read(tid) + s.read(tid + stride)) };
            }
            t.sync_block();
            stride /= 2;
        }
        if tid == 0 {
            // SAFETY: one writer per block, distinct elements; `out` outlives the launch.
            unsafe { *outp.get().add(t.block_id()) = s.read(0) };
        }
    })
    .unwrap();
    out
}

#[test]
fn shared_memory_block_reduction() {
    with_timeout(120, || {
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
    with_timeout(60, || {
        const N: usize = 64;
        let input: Vec<[f32; 2]> = (0..N * N).map(|i| [i as f32, -(i as f32)]).collect();
        let mut output = vec![[f32::NAN; 2]; N * N];
        let (wi, wo) = (
            SyncPtr(input.as_ptr().cast_mut()),
            SyncPtr(output.as_mut_ptr()),
        );
        let data =
            |i0: u32, i1: u32, j0: u32, j1: u32| ((i0 * 16 + i1) * 64 + j0 * 16 + j1) as usize;
        let b = |i: u32, j: u32| (i * 17 + j) as usize;
        let shape = GridShape::new([4, 4, 1], [16, 16, 1]);
        run_grid("transpose", shape, true, move |t| {
            let tile = t.shared::<[f32; 2]>(0, 16 * 17);
            let (b0, b1) = (t.block_idx().y, t.block_idx().x);
            let (t0, t1) = (t.thread_idx().y, t.thread_idx().x);
            // SAFETY: every thread writes a distinct tile element and reads its own input
            // element; the launch ends before `input` is dropped.
            unsafe { tile.write(b(t0, t1), *wi.get().add(data(b0, t0, b1, t1))) };
            t.sync_block();
            // SAFETY: the tile is only read after the barrier; output elements are distinct.
            unsafe { *wo.get().add(data(b1, t0, b0, t1)) = tile.read(b(t1, t0)) };
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
fn shared_is_per_block(uses_barrier: bool) {
    const BLOCKS: u32 = 24;
    const N: u32 = 64;
    let bad = AtomicUsize::new(0);
    let ran = AtomicUsize::new(0);
    run_grid("per_block", GridShape::new(BLOCKS, N), uses_barrier, |t| {
        let ints = t.shared::<u32>(0, N as usize);
        let floats = t.shared::<f64>(3, 1 + N as usize);
        let tid = t.thread_id();
        let tag = t.block_id() as u32 * 1000 + tid as u32;
        // SAFETY: each thread touches only its own elements before the barrier.
        unsafe {
            if ints.read(tid) != 0 || floats.read(tid + 1) != 0.0 {
                bad.fetch_add(1, Ordering::Relaxed);
            }
            ints.write(tid, tag);
            floats.write(tid + 1, f64::from(tag));
        }
        if uses_barrier {
            t.sync_block();
            let other = (tid + 1) % N as usize;
            let want = t.block_id() as u32 * 1000 + other as u32;
            // SAFETY: after the barrier nobody writes; reading a neighbour's element is safe.
            let (i, f) = unsafe { (ints.read(other), floats.read(other + 1)) };
            if i != want || f != f64::from(want) {
                bad.fetch_add(1, Ordering::Relaxed);
            }
        }
        ran.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(bad.into_inner(), 0);
    assert_eq!(ran.into_inner(), (BLOCKS * N) as usize);
}

#[test]
fn shared_memory_is_distinct_and_zeroed_per_block() {
    with_timeout(60, || {
        shared_is_per_block(true);
        shared_is_per_block(false);
    });
}

#[test]
fn one_thread_blocks_may_sync() {
    // A barrier-using body whose blocks have one thread needs no team: syncs are no-ops.
    let sum = AtomicUsize::new(0);
    run_grid("solo", GridShape::new(100, 1), true, |t| {
        t.sync_block();
        sum.fetch_add(t.global_id(), Ordering::Relaxed);
        t.sync_block();
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
        let shape = GridShape::new(grid, block);
        let r = run_grid("bad", shape, false, |_| panic!("must not run"));
        match r {
            Err(EmulateError::InvalidShape {
                kernel, shape: s, ..
            }) => {
                assert_eq!((kernel, s), ("bad", shape));
            }
            other => panic!("{shape}: expected InvalidShape, got {other:?}"),
        }
    }
}

/// Runs a kernel that is expected to fail, returning its error's message.
fn failure(
    shape: GridShape,
    uses_barrier: bool,
    body: fn(&parray_runtime::gpu::emulate::ThreadCtx),
) -> String {
    with_timeout(20, move || {
        run_grid("oops", shape, uses_barrier, body)
            .expect_err("kernel should fail")
            .to_string()
    })
}

#[test]
fn misuse_is_reported_not_undefined() {
    // A sync in a launch declared without barriers.
    let msg = failure(GridShape::new(2, 4), false, |t| t.sync_block());
    assert!(msg.contains("uses_barrier == false"), "{msg}");
    // One slot used with two lengths.
    let msg = failure(GridShape::new(1, 2), true, |t| {
        let _ = t.shared::<f32>(0, 8 + t.thread_id());
    });
    assert!(msg.contains("shared slot 0"), "{msg}");
    // More shared memory than a CUDA block may have.
    let msg = failure(GridShape::new(1, 1), false, |t| {
        let _ = t.shared::<u8>(0, MAX_SHARED_BYTES / 2);
        let _ = t.shared::<u8>(1, MAX_SHARED_BYTES / 2 + 1);
    });
    assert!(msg.contains("over the GPU limit"), "{msg}");
    // Out-of-bounds shared access.
    let msg = failure(GridShape::new(1, 1), false, |t| {
        // SAFETY: one thread; the index is checked (and fails).
        unsafe { t.shared::<i32>(0, 4).write(4, 1) };
    });
    assert!(msg.contains("out of bounds"), "{msg}");
}
