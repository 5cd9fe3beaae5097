//! Tests of the poisonable thread-array barrier.

#[path = "common/timeout.rs"]
mod timeout;

use parray_runtime::exec::barrier::{Barrier, Divergence, SyncError};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread;
use std::time::Duration;
use timeout::within;

/// The line every thread of these tests waits at.
const LINE: u32 = 7;

#[test]
fn phases_stay_ordered() {
    within(60, || {
        const THREADS: usize = 16;
        const PHASES: usize = 500;
        let barrier = Barrier::new(THREADS);
        let counter = AtomicUsize::new(0);
        thread::scope(|s| {
            for t in 0..THREADS {
                let (barrier, counter) = (&barrier, &counter);
                s.spawn(move || {
                    for phase in 0..PHASES {
                        counter.fetch_add(1, Ordering::SeqCst);
                        barrier.wait(t, LINE).unwrap();
                        // Everyone has incremented for this phase, nobody for the next.
                        assert_eq!(counter.load(Ordering::SeqCst), (phase + 1) * THREADS);
                        barrier.wait(t, LINE + 1).unwrap();
                    }
                });
            }
        });
        assert_eq!(counter.into_inner(), THREADS * PHASES);
    });
}

#[test]
fn one_thread_never_blocks() {
    within(10, || {
        let b = Barrier::new(1);
        for line in 0..1_000 {
            b.wait(0, line).unwrap();
        }
        let z = Barrier::new(0);
        z.wait(0, LINE).unwrap();
        assert_eq!(z.parties(), 1);
    });
}

#[test]
fn poison_wakes_waiters() {
    within(20, || {
        const WAITERS: usize = 7;
        let b = Barrier::new(WAITERS + 1);
        let woke = AtomicUsize::new(0);
        thread::scope(|s| {
            for t in 0..WAITERS {
                let (b, woke) = (&b, &woke);
                s.spawn(move || {
                    assert_eq!(b.wait(t, LINE), Err(SyncError::Poisoned));
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
        assert_eq!(b.wait(0, LINE), Err(SyncError::Poisoned));
        assert_eq!(b.leave(0), Ok(()));
        b.poison();
        assert!(b.is_poisoned());
    });
}

#[test]
fn panicking_thread_does_not_hang_the_others() {
    within(20, || {
        const THREADS: usize = 8;
        let b = Barrier::new(THREADS);
        let errors = AtomicUsize::new(0);
        thread::scope(|s| {
            for t in 0..THREADS {
                let (b, errors) = (&b, &errors);
                s.spawn(move || {
                    let r = std::panic::catch_unwind(|| {
                        b.wait(t, LINE).unwrap();
                        if t == 3 {
                            panic!("thread 3 fails in phase 1");
                        }
                        b.wait(t, LINE)
                    });
                    match r {
                        Ok(Ok(())) => unreachable!("phase 1 cannot complete"),
                        Ok(Err(e @ SyncError::Diverged(_))) => unreachable!("{e}"),
                        Ok(Err(SyncError::Poisoned)) => {
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
fn a_thread_that_leaves_releases_the_waiters() {
    within(20, || {
        let b = Barrier::new(4);
        let (left, waits): (Result<(), Divergence>, Vec<SyncError>) = thread::scope(|s| {
            let waiters: Vec<_> = (0..3)
                .map(|t| {
                    let b = &b;
                    s.spawn(move || b.wait(t, LINE).unwrap_err())
                })
                .collect();
            // Lets the waiters block first, usually; either order is a divergence.
            thread::sleep(Duration::from_millis(50));
            let left = b.leave(3);
            (
                left,
                waiters.into_iter().map(|w| w.join().unwrap()).collect(),
            )
        });
        // Exactly one call found the divergence; it poisoned the barrier for the others.
        let mut found: Vec<Divergence> = left.err().into_iter().collect();
        for e in waits {
            match e {
                SyncError::Diverged(d) => found.push(d),
                SyncError::Poisoned => {}
            }
        }
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].line, found[0].left, found[0].other_line),
            (LINE, 3, None)
        );
        assert!(b.is_poisoned());
    });
}

#[test]
fn arriving_after_a_thread_left_is_a_divergence() {
    let b = Barrier::new(3);
    assert_eq!(b.leave(2), Ok(()));
    assert_eq!(
        b.wait(0, LINE),
        Err(SyncError::Diverged(Divergence {
            line: LINE,
            waiting: 0,
            left: 2,
            other_line: None,
        }))
    );
    assert_eq!(b.wait(1, LINE), Err(SyncError::Poisoned));
}

#[test]
fn two_lines_in_one_phase_are_a_divergence() {
    within(20, || {
        let b = Barrier::new(2);
        thread::scope(|s| {
            let first = s.spawn(|| b.wait(0, LINE));
            thread::sleep(Duration::from_millis(50));
            let second = b.wait(1, LINE + 3);
            let first = first.join().unwrap();
            // Whoever arrived first set the phase's line.
            let d = match (first, second) {
                (Err(SyncError::Poisoned), Err(SyncError::Diverged(d)))
                | (Err(SyncError::Diverged(d)), Err(SyncError::Poisoned)) => d,
                other => panic!("unexpected {other:?}"),
            };
            let line_of = |t: usize| if t == 0 { LINE } else { LINE + 3 };
            assert_eq!(
                (d.line, d.other_line),
                (line_of(d.waiting), Some(line_of(d.left)))
            );
        });
    });
}

#[test]
fn sync_errors_display_their_reason() {
    assert_eq!(
        SyncError::Poisoned.to_string(),
        "barrier poisoned: a thread of the array failed"
    );
    let d = Divergence {
        line: 4,
        waiting: 1,
        left: 2,
        other_line: Some(9),
    };
    assert_eq!(
        SyncError::Diverged(d).to_string(),
        "thread 1 waits at the #sync at line 4, but thread 2 waits at the #sync at line 9"
    );
}
