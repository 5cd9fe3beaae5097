//! Small launches covering every unsafe path of the emulation (loops and coroutines,
//! shared memory reuse across blocks, divergence and panics that drop pinned coroutines
//! mid-block, atomics), sized to run under Miri:
//! `MIRIFLAGS=-Zmiri-num-cpus=2 cargo +nightly miri test -p parray-runtime --test emulate_miri`.

mod common;

use common::SyncPtr;
use parray_runtime::gpu::emulate::{atomic_add, run_grid, run_grid_sync, EmulateError, GridShape};
use parray_runtime::Access;

const B: usize = 3;
const G: usize = 5;

/// Rotates each block's values through shared memory: thread t outputs the value of
/// thread t+1 of its block; 5 blocks on 2 lanes reuse each lane's shared memory.
#[test]
fn rotate_through_shared_memory() {
    let mut out = vec![0u32; B * G];
    let o = SyncPtr(out.as_mut_ptr());
    run_grid_sync(
        "rotate",
        GridShape::new(G as u32, B as u32),
        |t| async move {
            let s = t.shared_ptr::<u32>(0, B, "S");
            // Registers across a barrier live in the pinned coroutine.
            let (tid, gid) = (t.thread_id(), t.global_id());
            assert_eq!(s.load(tid), 0, "shared memory not reset");
            s.store(tid, gid as u32);
            t.barrier(line!()).await;
            let next = s.load((tid + 1) % B);
            t.barrier(line!()).await;
            s.store(tid, 0);
            // SAFETY: distinct elements of `out`, which outlives the launch.
            unsafe { *o.get().add(gid) = next };
        },
    )
    .unwrap();
    for (g, &v) in out.iter().enumerate() {
        assert_eq!(v as usize, (g / B) * B + (g % B + 1) % B, "thread {g}");
    }

    // The loop strategy sees the same fresh shared memory per block.
    let mut out = vec![0u32; B * G];
    let o = SyncPtr(out.as_mut_ptr());
    run_grid("own", GridShape::new(G as u32, B as u32), move |t| {
        let s = t.shared_ptr::<u32>(0, B, "S");
        assert_eq!(s.load(t.thread_id()), 0, "shared memory not reset");
        s.store(t.thread_id(), t.global_id() as u32);
        // SAFETY: distinct elements of `out`, which outlives the launch.
        unsafe { *o.get().add(t.global_id()) = s.load(t.thread_id()) };
    })
    .unwrap();
    assert!(out.iter().enumerate().all(|(g, &v)| v as usize == g));
}

#[test]
fn failures_drop_pinned_coroutines() {
    // A block whose threads wait at a barrier when one leaves: the waiting coroutines
    // (holding a String across the await) are dropped where they are.
    let err = run_grid_sync(
        "diverge",
        GridShape::new(G as u32, B as u32),
        |t| async move {
            let held = t.thread_id().to_string();
            if t.block_id() == 3 && t.thread_id() == 1 {
                return;
            }
            t.barrier(line!()).await;
            assert_eq!(held, t.thread_id().to_string());
        },
    )
    .unwrap_err();
    assert!(matches!(err, EmulateError::DivergentSync { .. }), "{err}");

    let err = run_grid_sync("cancel", GridShape::new(4, 3), |t| async move {
        let held = t.block_id().to_string();
        t.barrier(line!()).await;
        if t.block_id() == 1 && t.thread_id() == 2 {
            panic!("stop");
        }
        t.barrier(line!()).await;
        assert_eq!(held, t.block_id().to_string());
    })
    .unwrap_err();
    assert!(matches!(err, EmulateError::Panicked { message, .. } if message == "stop"));
}

#[test]
fn atomics_across_lanes() {
    let mut sum = 0.0f64;
    let p = SyncPtr(&mut sum as *mut f64);
    run_grid_sync("sum", GridShape::new(3, 4), |t| async move {
        // SAFETY: `sum` is only accessed atomically during the launch.
        unsafe { atomic_add(p.get(), t.global_id() as f64) };
        t.barrier(line!()).await;
    })
    .unwrap();
    assert_eq!(sum, 66.0);
}
