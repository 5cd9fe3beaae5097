//! A panicking emulated thread ends the launch with an error naming it and the place of
//! the panic, and never hangs.

#[path = "common/timeout.rs"]
mod timeout;

use parray_runtime::exec::emulate::{run_grid, run_grid_blocks, Dim3, EmulateError};
use parray_runtime::exec::CudaGrid;
use parray_runtime::{AccessMut, ThreadId};
use std::sync::atomic::{AtomicUsize, Ordering};
use timeout::within;

/// Where the panic of [`launch_with_panic`] happens.
const PANIC_LINE: u32 = line!() + 16;

/// Launches `blocks` x `block` threads where thread `bad_thread` of block `bad_block`
/// panics (after the first barrier, with `sync`); returns the error and how many threads
/// finished.
fn launch_with_panic(
    sync: bool,
    blocks: Dim3,
    block: Dim3,
    bad_block: Dim3,
    bad_thread: Dim3,
) -> (EmulateError, usize) {
    within(20, move || {
        let finished = AtomicUsize::new(0);
        let check = |t: &parray_runtime::exec::emulate::ThreadCtx| {
            if t.block_idx() == bad_block && t.thread_idx() == bad_thread {
                panic!("boom at {}", t.global_id());
            }
        };
        let shape = CudaGrid::new(blocks.into(), block.into());
        let finished_ref = &finished;
        let err = if sync {
            // Called once per block, as `detour!` runs a body with `#sync`.
            run_grid_blocks("faulty", shape, |b| {
                let present = vec![true; b.len()];
                if !b.sync(line!(), &present) {
                    return;
                }
                for t in 0..b.len() {
                    check(&b.thread(t));
                }
                if !b.sync(line!(), &present) {
                    return;
                }
                if !b.sync(line!(), &present) {
                    return;
                }
                for t in 0..b.len() {
                    b.thread(t);
                    finished_ref.fetch_add(1, Ordering::Relaxed);
                }
            })
        } else {
            run_grid("faulty", shape, |t| {
                check(t);
                finished_ref.fetch_add(1, Ordering::Relaxed);
            })
        }
        .expect_err("a thread panicked, the launch must fail");
        (err, finished.into_inner())
    })
}

/// The `ThreadId` of `thread` in `block` of a `blocks` x `block_dim` grid.
fn cuda_thread(blocks: Dim3, block_dim: Dim3, block: Dim3, thread: Dim3) -> ThreadId {
    let flat = |i: Dim3, d: Dim3| u64::from(i.x + d.x * (i.y + d.y * i.z));
    let per_block = u64::from(block_dim.x * block_dim.y * block_dim.z);
    ThreadId::Cuda {
        tid: flat(block, blocks) * per_block + flat(thread, block_dim),
        block: block.into(),
        thread: thread.into(),
    }
}

#[test]
fn panic_with_barriers_names_block_thread_and_line() {
    let (blocks, block) = (Dim3::new(4, 2, 1), Dim3::new(8, 4, 1));
    let (bad_block, bad_thread) = (Dim3::new(2, 1, 0), Dim3::new(3, 1, 0));
    let (err, finished) = launch_with_panic(true, blocks, block, bad_block, bad_thread);
    let gid = (2 + 4) * 32 + 3 + 8;
    let EmulateError::Panicked {
        kernel,
        thread,
        at,
        message,
    } = &err
    else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(*kernel, "faulty");
    assert_eq!(*thread, cuda_thread(blocks, block, bad_block, bad_thread));
    assert_eq!(*message, format!("boom at {gid}"));
    let at = at.as_deref().expect("the panic's place is known");
    assert!(
        at.starts_with(&format!("{}:{PANIC_LINE}:", file!())),
        "{at} is not line {PANIC_LINE} of {}",
        file!()
    );
    let msg = err.to_string();
    for part in [
        "faulty",
        &format!("thread {gid} (block (2, 1, 0), thread (3, 1, 0)) panicked at {at}"),
        "boom",
    ] {
        assert!(msg.contains(part), "{part:?} missing from {msg:?}");
    }
    // The failing block cannot finish, so not every thread did.
    assert!(finished < 8 * 32);
}

#[test]
fn panic_in_a_1024_thread_block_stops_its_block() {
    let (blocks, block) = (Dim3::new(3, 1, 1), Dim3::new(1024, 1, 1));
    let (bad_block, bad_thread) = (Dim3::new(1, 0, 0), Dim3::new(1023, 0, 0));
    let (err, _) = launch_with_panic(true, blocks, block, bad_block, bad_thread);
    let want = cuda_thread(blocks, block, bad_block, bad_thread);
    assert!(
        matches!(&err, EmulateError::Panicked { thread, .. } if *thread == want),
        "{err}"
    );
}

#[test]
fn panic_without_barriers_names_block_and_thread() {
    let (blocks, block) = (Dim3::new(6, 1, 3), Dim3::new(2, 2, 2));
    let (bad_block, bad_thread) = (Dim3::new(5, 0, 2), Dim3::new(0, 1, 1));
    let (err, finished) = launch_with_panic(false, blocks, block, bad_block, bad_thread);
    let want = cuda_thread(blocks, block, bad_block, bad_thread);
    assert!(
        matches!(&err, EmulateError::Panicked { kernel: "faulty", thread, at: Some(at), message }
            if *thread == want && message.starts_with("boom") && at.contains(file!())),
        "{err}"
    );
    assert!(finished < 18 * 8);
}

#[test]
fn an_out_of_bounds_access_points_at_the_statement() {
    if !cfg!(debug_assertions) {
        eprintln!("skipped: release builds do not check bounds");
        return;
    }
    let line = line!() + 3;
    let err = run_grid("oob", CudaGrid::new([1, 1, 1], [4, 1, 1]), |t| {
        let s = t.shared_ptr::<f32>(0, 4, "S", false);
        s.store(t.thread_id() + 1, 1.0);
    })
    .unwrap_err();
    let EmulateError::Panicked { thread, at, .. } = &err else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(
        thread.to_string(),
        "thread 3 (block (0, 0, 0), thread (3, 0, 0))"
    );
    let at = at.as_deref().unwrap();
    assert!(at.starts_with(&format!("{}:{line}:", file!())), "{at}");
    assert!(
        err.to_string()
            .contains("offset 4 out of bounds for S (extent 4)"),
        "{err}"
    );
}

#[test]
fn panic_stops_the_remaining_blocks() {
    for sync in [false, true] {
        let blocks = AtomicUsize::new(0);
        let started = within(20, move || {
            let shape = CudaGrid::new([20_000, 1, 1], [32, 1, 1]);
            let blocks_ref = &blocks;
            let step = move |t: &parray_runtime::exec::emulate::ThreadCtx| {
                if t.thread_id() == 0 {
                    blocks_ref.fetch_add(1, Ordering::Relaxed);
                }
                if t.block_id() == 0 && t.thread_id() == 31 {
                    panic!("first block fails");
                }
            };
            let r = if sync {
                run_grid_blocks("early", shape, |b| {
                    for t in 0..b.len() {
                        step(&b.thread(t));
                    }
                    assert!(b.sync(line!(), &vec![true; b.len()]));
                })
            } else {
                run_grid("early", shape, step)
            };
            assert!(r.is_err());
            blocks.into_inner()
        });
        assert!(started < 20_000, "sync {sync}: all {started} blocks ran");
    }
}
