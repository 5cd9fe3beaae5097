//! Tests of the poisonable thread-array barrier.

use parray_runtime::barrier::{Barrier, Poisoned};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` in a thread and fails the test if it does not finish within `secs` seconds.
fn with_timeout<F: FnOnce() + Send + 'static>(secs: u64, f: F) {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(()) => h.join().unwrap(),
        Err(mpsc::RecvTimeoutError::Disconnected) => {
            // The closure panicked: surface its panic.
            if let Err(e) = h.join() {
                std::panic::resume_unwind(e);
            }
        }
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after {secs} s (hang)"),
    }
}

#[test]
fn phases_stay_ordered() {
    with_timeout(60, || {
        const THREADS: usize = 16;
        const PHASES: usize = 500;
        let barrier = Barrier::new(THREADS);
        let counter = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    for phase in 0..PHASES {
                        counter.fetch_add(1, Ordering::SeqCst);
                        barrier.wait().unwrap();
                        // Everyone has incremented for this phase, nobody for the next.
                        assert_eq!(counter.load(Ordering::SeqCst), (phase + 1) * THREADS);
                        barrier.wait().unwrap();
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), THREADS * PHASES);
    });
}

#[test]
fn one_thread_never_blocks() {
    with_timeout(10, || {
        let b = Barrier::new(1);
        for _ in 0..1_000 {
            b.wait().unwrap();
        }
        let z = Barrier::new(0);
        z.wait().unwrap();
        assert_eq!(z.parties(), 1);
    });
}

#[test]
fn poison_wakes_waiters() {
    with_timeout(20, || {
        const WAITERS: usize = 7;
        let b = Barrier::new(WAITERS + 1);
        let woke = AtomicUsize::new(0);
        thread::scope(|s| {
            for _ in 0..WAITERS {
                s.spawn(|| {
                    assert_eq!(b.wait(), Err(Poisoned));
                    woke.fetch_add(1, Ordering::SeqCst);
                });
            }
            // Give the waiters time to block; correctness does not depend on it.
            thread::sleep(Duration::from_millis(100));
            assert!(!b.is_poisoned());
            b.poison();
        });
        assert_eq!(woke.into_inner(), WAITERS);
        assert!(b.is_poisoned());
        // Later waits fail at once, and poisoning again is harmless.
        assert_eq!(b.wait(), Err(Poisoned));
        b.poison();
        assert!(b.is_poisoned());
    });
}

#[test]
fn panicking_thread_does_not_hang_the_others() {
    with_timeout(20, || {
        const THREADS: usize = 8;
        let b = Barrier::new(THREADS);
        let errors = AtomicUsize::new(0);
        thread::scope(|s| {
            for t in 0..THREADS {
                let (b, errors) = (&b, &errors);
                s.spawn(move || {
                    let r = std::panic::catch_unwind(|| {
                        b.wait().unwrap();
                        if t == 3 {
                            panic!("thread 3 fails in phase 1");
                        }
                        b.wait()
                    });
                    match r {
                        Ok(Ok(())) => unreachable!("phase 1 cannot complete"),
                        Ok(Err(Poisoned)) => {
                            errors.fetch_add(1, Ordering::SeqCst);
                        }
                        Err(_) => b.poison(),
                    }
                });
            }
        });
        assert_eq!(errors.into_inner(), THREADS - 1);
    });
}

#[test]
fn poisoned_displays_its_reason() {
    assert_eq!(
        Poisoned.to_string(),
        "barrier poisoned: a thread of the array panicked"
    );
}
