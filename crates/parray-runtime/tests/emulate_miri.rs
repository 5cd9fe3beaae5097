//! Small launches covering every unsafe path of the emulation (team and loop strategies,
//! shared memory reuse across blocks, cancellation, atomics), sized to run under Miri:
//! `MIRIFLAGS=-Zmiri-num-cpus=2 cargo +nightly miri test -p parray-runtime --test emulate_miri`.

mod common;

use common::SyncPtr;
use parray_runtime::gpu::emulate::{atomic_add, run_grid, EmulateError, GridShape};

/// Rotates each block's values through shared memory: thread t outputs the value of
/// thread t+1 of its block; 5 blocks on 2 lanes reuse both shared buffers of each team.
fn rotate(uses_barrier: bool) {
    const B: usize = 3;
    const G: usize = 5;
    let mut out = vec![0u32; B * G];
    let o = SyncPtr(out.as_mut_ptr());
    run_grid(
        "rotate",
        GridShape::new(G as u32, B as u32),
        uses_barrier,
        move |t| {
            let s = t.shared::<u32>(0, B);
            let (tid, gid) = (t.thread_id(), t.global_id());
            // SAFETY: own element before the barrier; any element after it (no more writes).
            unsafe {
                assert_eq!(s.read(tid), 0, "shared memory not reset");
                s.write(tid, gid as u32);
            }
            if uses_barrier {
                t.sync_block();
                let next = t.block_id() * B + (tid + 1) % B;
                // SAFETY: after the barrier nobody writes `s`; `out` elements are distinct.
                unsafe { *o.get().add(gid) = s.read((tid + 1) % B) * 100 + next as u32 % 100 };
            } else {
                // SAFETY: distinct elements of `out`; own element of `s`.
                unsafe { *o.get().add(gid) = s.read(tid) };
            }
        },
    )
    .unwrap();
    for (g, &v) in out.iter().enumerate() {
        let want = if uses_barrier {
            let next = (g / B) * B + (g % B + 1) % B;
            next as u32 * 100 + next as u32 % 100
        } else {
            g as u32
        };
        assert_eq!(v, want, "thread {g}");
    }
}

#[test]
fn rotate_through_shared_memory() {
    rotate(true);
    rotate(false);
}

#[test]
fn cancellation_and_atomics() {
    let mut sum = 0.0f64;
    let p = SyncPtr(&mut sum as *mut f64);
    run_grid("sum", GridShape::new(3, 4), true, move |t| {
        // SAFETY: `sum` is only accessed atomically during the launch.
        unsafe { atomic_add(p.get(), t.global_id() as f64) };
        t.sync_block();
    })
    .unwrap();
    assert_eq!(sum, 66.0);

    let err = run_grid("cancel", GridShape::new(4, 3), true, |t| {
        if t.block_id() == 1 && t.thread_id() == 2 {
            panic!("stop");
        }
        t.sync_block();
    })
    .unwrap_err();
    assert!(matches!(err, EmulateError::Panicked { message, .. } if message == "stop"));
}
