//! A panicking emulated thread ends the launch with an error naming it, and never hangs.

use parray_runtime::gpu::emulate::{run_grid, Dim3, EmulateError, GridShape};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` in a thread; fails the test if it takes more than 20 s (a hang).
fn within_20s<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the launch hung (or its harness panicked)")
}

/// Launches `blocks` x `block` threads where thread `bad_thread` of block `bad_block`
/// panics after the first barrier; returns the error and how many threads finished.
fn launch_with_panic(
    uses_barrier: bool,
    blocks: Dim3,
    block: Dim3,
    bad_block: Dim3,
    bad_thread: Dim3,
) -> (EmulateError, usize) {
    within_20s(move || {
        let finished = AtomicUsize::new(0);
        let err = run_grid("faulty", GridShape::new(blocks, block), uses_barrier, |t| {
            if uses_barrier {
                t.sync_block();
            }
            if t.block_idx() == bad_block && t.thread_idx() == bad_thread {
                panic!("boom at {}", t.global_id());
            }
            if uses_barrier {
                t.sync_block();
                t.sync_block();
            }
            finished.fetch_add(1, Ordering::Relaxed);
        })
        .expect_err("a thread panicked, the launch must fail");
        (err, finished.into_inner())
    })
}

#[test]
fn panic_with_barriers_names_block_and_thread() {
    let (blocks, block) = (Dim3::new(4, 2, 1), Dim3::new(8, 4, 1));
    let (bad_block, bad_thread) = (Dim3::new(2, 1, 0), Dim3::new(3, 1, 0));
    let (err, finished) = launch_with_panic(true, blocks, block, bad_block, bad_thread);
    let gid = (2 + 4) * 32 + 3 + 8;
    assert_eq!(
        err,
        EmulateError::Panicked {
            kernel: "faulty",
            block: bad_block,
            thread: bad_thread,
            message: format!("boom at {gid}"),
        }
    );
    let msg = err.to_string();
    for part in ["faulty", "block (2, 1, 0)", "thread (3, 1, 0)", "boom"] {
        assert!(msg.contains(part), "{part:?} missing from {msg:?}");
    }
    // The failing block cannot finish, so not every thread did.
    assert!(finished < blocks.volume() * block.volume());
}

#[test]
fn panic_in_a_1024_thread_block_releases_its_team() {
    let (bad_block, bad_thread) = (Dim3::new(1, 0, 0), Dim3::new(1023, 0, 0));
    let (err, _) = launch_with_panic(
        true,
        Dim3::new(3, 1, 1),
        Dim3::new(1024, 1, 1),
        bad_block,
        bad_thread,
    );
    assert!(
        matches!(err, EmulateError::Panicked { block, thread, .. }
            if block == bad_block && thread == bad_thread),
        "{err}"
    );
}

#[test]
fn panic_without_barriers_names_block_and_thread() {
    let (bad_block, bad_thread) = (Dim3::new(5, 0, 2), Dim3::new(0, 1, 1));
    let (err, finished) = launch_with_panic(
        false,
        Dim3::new(6, 1, 3),
        Dim3::new(2, 2, 2),
        bad_block,
        bad_thread,
    );
    assert!(
        matches!(&err, EmulateError::Panicked { kernel: "faulty", block, thread, message }
            if *block == bad_block && *thread == bad_thread && message.starts_with("boom")),
        "{err}"
    );
    assert!(finished < 18 * 8);
}

#[test]
fn panic_stops_the_remaining_blocks() {
    for uses_barrier in [false, true] {
        let blocks = AtomicUsize::new(0);
        let started = within_20s(move || {
            let r = run_grid("early", GridShape::new(20_000, 32), uses_barrier, |t| {
                if t.thread_id() == 0 {
                    blocks.fetch_add(1, Ordering::Relaxed);
                }
                if t.block_id() == 0 && t.thread_id() == 31 {
                    panic!("first block fails");
                }
            });
            assert!(r.is_err());
            blocks.into_inner()
        });
        assert!(
            started < 20_000,
            "barrier {uses_barrier}: all {started} blocks ran"
        );
    }
}
