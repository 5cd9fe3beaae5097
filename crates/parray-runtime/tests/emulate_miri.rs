//! Small launches covering every unsafe path of the emulation (loops and blocks, shared
//! memory reuse across blocks, divergence and panics that leave a block mid-way, atomics),
//! sized to run under Miri:
//! `MIRIFLAGS=-Zmiri-num-cpus=2 cargo +nightly miri test -p parray-runtime --test emulate_miri`.
//!
//! Bodies with barriers are written in the shape `detour!` generates: called once per
//! block, each stretch between barriers a loop over thread ids, each barrier given the
//! mask of the threads that reach it.
// That shape indexes per-thread arrays by thread id and returns after every barrier.
#![allow(clippy::needless_range_loop, clippy::needless_return)]

mod common;

use common::SyncPtr;
use parray_runtime::exec::emulate::{run_grid, run_grid_blocks, EmulateError};
use parray_runtime::exec::CudaGrid;
use parray_runtime::mem::atomics::atomic_add;
use parray_runtime::{Access, AccessMut};

const B: usize = 3;
const G: usize = 5;

/// Rotates each block's values through shared memory: thread t outputs the value of
/// thread t+1 of its block; 5 blocks on 2 lanes reuse each lane's shared memory.
#[test]
fn rotate_through_shared_memory() {
    let mut out = vec![0u32; B * G];
    let o = SyncPtr(out.as_mut_ptr());
    run_grid_blocks(
        "rotate",
        CudaGrid::new([G as u32, 1, 1], [B as u32, 1, 1]),
        |b| {
            let s = b.shared_ptr::<u32>(0, B, "S", false);
            let present = [true; B];
            // Registers across a barrier live in the body's per-thread arrays.
            let (mut tid, mut gid, mut next) = ([0; B], [0; B], [0; B]);
            for t in 0..B {
                let ctx = b.thread(t);
                (tid[t], gid[t]) = (ctx.thread_id(), ctx.global_id());
                assert_eq!(s.load(tid[t]), 0, "shared memory not reset");
                s.store(tid[t], gid[t] as u32);
            }
            if !b.sync(line!(), &present) {
                return;
            }
            for t in 0..B {
                b.thread(t);
                next[t] = s.load((tid[t] + 1) % B);
            }
            if !b.sync(line!(), &present) {
                return;
            }
            for t in 0..B {
                b.thread(t);
                s.store(tid[t], 0);
                // SAFETY: distinct elements of `out`, which outlives the launch.
                unsafe { *o.get().add(gid[t]) = next[t] };
            }
        },
    )
    .unwrap();
    for (g, &v) in out.iter().enumerate() {
        assert_eq!(v as usize, (g / B) * B + (g % B + 1) % B, "thread {g}");
    }

    // The loop strategy sees the same fresh shared memory per block.
    let mut out = vec![0u32; B * G];
    let o = SyncPtr(out.as_mut_ptr());
    run_grid(
        "own",
        CudaGrid::new([G as u32, 1, 1], [B as u32, 1, 1]),
        move |t| {
            let s = t.shared_ptr::<u32>(0, B, "S", false);
            assert_eq!(s.load(t.thread_id()), 0, "shared memory not reset");
            s.store(t.thread_id(), t.global_id() as u32);
            // SAFETY: distinct elements of `out`, which outlives the launch.
            unsafe { *o.get().add(t.global_id()) = s.load(t.thread_id()) };
        },
    )
    .unwrap();
    assert!(out.iter().enumerate().all(|(g, &v)| v as usize == g));
}

#[test]
fn failures_mid_block_drop_the_bodys_arrays() {
    // A block whose threads wait at a barrier when one leaves: the body returns, dropping
    // its per-thread arrays (Strings held across the barrier).
    let err = run_grid_blocks(
        "diverge",
        CudaGrid::new([G as u32, 1, 1], [B as u32, 1, 1]),
        |b| {
            let mut present = [true; B];
            let mut held: [String; B] = Default::default();
            for t in 0..B {
                let ctx = b.thread(t);
                held[t] = ctx.thread_id().to_string();
                if ctx.block_id() == 3 && ctx.thread_id() == 1 {
                    present[t] = false; // return
                }
            }
            if !b.sync(line!(), &present) {
                return;
            }
            for t in 0..B {
                if present[t] {
                    assert_eq!(held[t], b.thread(t).thread_id().to_string());
                }
            }
        },
    )
    .unwrap_err();
    assert!(matches!(err, EmulateError::DivergentSync { .. }), "{err}");

    // A thread that panics between barriers: the body unwinds, dropping the arrays.
    let err = run_grid_blocks("cancel", CudaGrid::new([4, 1, 1], [3, 1, 1]), |b| {
        let present = [true; 3];
        let mut held: [String; 3] = Default::default();
        for t in 0..3 {
            held[t] = b.thread(t).block_id().to_string();
        }
        if !b.sync(line!(), &present) {
            return;
        }
        for t in 0..3 {
            let ctx = b.thread(t);
            if ctx.block_id() == 1 && ctx.thread_id() == 2 {
                panic!("stop");
            }
        }
        if !b.sync(line!(), &present) {
            return;
        }
        for t in 0..3 {
            assert_eq!(held[t], b.thread(t).block_id().to_string());
        }
    })
    .unwrap_err();
    assert!(matches!(err, EmulateError::Panicked { message, .. } if message == "stop"));
}

#[test]
fn atomics_across_lanes() {
    let mut sum = 0.0f64;
    let p = SyncPtr(&mut sum as *mut f64);
    run_grid_blocks("sum", CudaGrid::new([3, 1, 1], [4, 1, 1]), |b| {
        for t in 0..4 {
            // SAFETY: `sum` is only accessed atomically during the launch.
            unsafe { atomic_add(p.get(), b.thread(t).global_id() as f64) };
        }
        if !b.sync(line!(), &[true; 4]) {
            return;
        }
    })
    .unwrap();
    assert_eq!(sum, 66.0);
}
