//! A `#sync` that not every thread reaches (threads that return early, or wait at another
//! `#sync`) is an error, reported promptly, under the emulation of cuda arrays and for
//! pthd arrays alike: never a hang.
//!
//! The emulated bodies are written in the shape `detour!` generates for a body with
//! `#sync`: called once per block, each stretch between barriers a loop over thread ids,
//! each barrier given the mask of the threads that reach it.
// That shape indexes per-thread arrays by thread id and returns after every barrier.
#![allow(clippy::needless_range_loop, clippy::needless_return)]

#[path = "common/timeout.rs"]
mod timeout;

use std::time::Duration;

use parray_runtime::devices::{backend, Backend};
use parray_runtime::exec::emulate::{run_grid_blocks, EmulateError};
use parray_runtime::exec::launch::{detour_cuda_blocks, Launch};
use parray_runtime::exec::CudaGrid;
use parray_runtime::{detour, DetourSite, Error, ThreadId};
use timeout::within;

/// How long a divergent launch may take: it is reported, not waited out.
const PROMPT_SECS: u64 = 2;

const SITE: &DetourSite = &DetourSite {
    array: "TA",
    file: file!(),
    line: 1,
};

/// Thread `thread` of block `block` of a one-dimensional grid of `per_block`-thread blocks.
fn cuda(block: u32, thread: u32, per_block: u32) -> ThreadId {
    ThreadId::Cuda {
        tid: u64::from(block * per_block + thread),
        block: [block, 0, 0],
        thread: [thread, 0, 0],
    }
}

#[test]
fn emulated_barrier_reached_by_some_threads_only() {
    let line = line!() + 10;
    let err = within(PROMPT_SECS, move || {
        // One block: with several, which block reports first depends on the schedule.
        run_grid_blocks("partial", CudaGrid::new([1, 1, 1], [32, 1, 1]), |b| {
            let n = b.len();
            // `if tid < 5 { #sync }`: the barrier's mask is the threads that take the branch.
            let mut then = vec![false; n];
            for t in 0..n {
                then[t] = b.thread(t).thread_id() < 5;
            }
            if !b.sync(line!(), &then) {
                return;
            }
            // The others rejoin here and leave the body.
        })
        .unwrap_err()
    });
    assert_eq!(
        err,
        EmulateError::DivergentSync {
            kernel: "partial",
            line,
            waiting: cuda(0, 0, 32),
            left: cuda(0, 5, 32),
            other_line: None,
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&format!(
            "thread 0 (block (0, 0, 0), thread (0, 0, 0)) waits at the #sync at line {line}, \
             but thread 5 (block (0, 0, 0), thread (5, 0, 0)) did not reach it (it returned, or went another way through a branch or a loop)"
        )),
        "{msg}"
    );
    assert!(
        msg.contains("must be reached by every thread of the block"),
        "{msg}"
    );
}

#[test]
fn emulated_early_return_in_a_later_block_and_phase() {
    let line = line!() + 18;
    let err = within(PROMPT_SECS, move || {
        run_grid_blocks("early", CudaGrid::new([6, 1, 1], [16, 1, 1]), |b| {
            let n = b.len();
            let mut present = vec![true; n];
            if !b.sync(line!(), &present) {
                return;
            }
            for t in 0..n {
                if !present[t] {
                    continue;
                }
                let ctx = b.thread(t);
                if ctx.block_id() == 4 && ctx.thread_id() == 9 {
                    present[t] = false; // return
                }
            }
            for _ in 0..3 {
                if !b.sync(line!(), &present) {
                    return;
                }
            }
        })
        .unwrap_err()
    });
    assert_eq!(
        err,
        EmulateError::DivergentSync {
            kernel: "early",
            line,
            waiting: cuda(4, 0, 16),
            left: cuda(4, 9, 16),
            other_line: None,
        }
    );
}

#[test]
fn emulated_threads_at_two_different_barriers() {
    let even = line!() + 12;
    let err = within(PROMPT_SECS, move || {
        // One block: with several, which block reports first depends on the schedule.
        run_grid_blocks("split", CudaGrid::new([1, 1, 1], [8, 1, 1]), |b| {
            let n = b.len();
            // `if tid % 2 == 0 { #sync } else { #sync }`: each branch's barrier has the
            // mask of the threads that take the branch, so the first one already sees
            // some threads absent.
            let mut then = vec![false; n];
            for t in 0..n {
                then[t] = b.thread(t).thread_id() % 2 == 0;
            }
            if !b.sync(line!(), &then) {
                return;
            }
            let otherwise: Vec<bool> = then.iter().map(|t| !t).collect();
            if !b.sync(line!(), &otherwise) {
                return;
            }
            // Both branches rejoin here.
        })
        .unwrap_err()
    });
    // A mask tells who is absent, not where it went: `other_line` is unknown.
    assert_eq!(
        err,
        EmulateError::DivergentSync {
            kernel: "split",
            line: even,
            waiting: cuda(0, 0, 8),
            left: cuda(0, 1, 8),
            other_line: None,
        }
    );
    assert!(
        err.to_string().contains(&format!(
            "thread 0 (block (0, 0, 0), thread (0, 0, 0)) waits at the #sync at line {even}, \
             but thread 1 (block (0, 0, 0), thread (1, 0, 0))"
        )),
        "{err}"
    );
}

#[test]
fn a_divergent_cuda_detour_names_its_site() {
    if backend().unwrap() != Backend::Emulate {
        eprintln!("skipped: the emulation is not the backend here");
        return;
    }
    let launch = Launch {
        kernel: "partial",
        source: "".into(),
        shape: CudaGrid::new([1, 1, 1], [4, 1, 1]),
        shared_bytes: 0,
        checked: None,
        hip_source: None,
        constants: &[],
        tma: Vec::new(),
        site: &DetourSite {
            array: "CT",
            file: "src/k.rs",
            line: 3,
        },
    };
    // SAFETY: no arguments; the emulation runs the closure only.
    let err = unsafe {
        detour_cuda_blocks(&launch, &[], |b| {
            let n = b.len();
            let mut then = vec![false; n];
            for t in 0..n {
                then[t] = b.thread(t).thread_id() != 2;
            }
            if !b.sync(7, &then) {
                return;
            }
            // The others rejoin here and leave the body.
        })
    }
    .unwrap_err();
    assert!(
        matches!(err, Error::DivergentSync { site, line: 7, .. } if site == launch.site),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "parray: CT, detour at src/k.rs:3: thread 0 (block (0, 0, 0), thread (0, 0, 0)) \
         waits at the #sync at src/k.rs:7, but thread 2 (block (0, 0, 0), thread (2, 0, 0)) \
         did not reach it (it returned, or went another way through a branch or a loop): a #sync must be reached by every thread of the \
         block, all at the same #sync"
    );
}

/// Runs a pthd detour of `n` threads that must fail with a divergent `#sync`; returns
/// `(line, waiting, left, other_line)`.
fn pthd_divergence(
    n: usize,
    body: impl Fn(&parray_runtime::ThreadCtx) + Sync + Send + 'static,
) -> (u32, usize, usize, Option<u32>) {
    let err = within(PROMPT_SECS, move || detour(SITE, n, body).unwrap_err());
    let msg = err.to_string();
    assert!(
        msg.starts_with(&format!("parray: TA, detour at {}:1: ", file!())),
        "{msg}"
    );
    assert!(
        msg.contains("must be reached by every thread of the array"),
        "{msg}"
    );
    match err {
        Error::DivergentSync {
            site,
            line,
            waiting: ThreadId::Pthd { tid: waiting },
            left: ThreadId::Pthd { tid: left },
            other_line,
        } if site == SITE => (line, waiting, left, other_line),
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn pthd_barrier_reached_by_some_threads_only() {
    let line = line!() + 3;
    let (l, waiting, left, other) = pthd_divergence(4, |t| {
        if t.tid() < 2 {
            t.sync(line!());
        }
    });
    assert_eq!((l, other), (line, None));
    assert!(waiting < 2 && left >= 2, "waiting {waiting}, left {left}");
}

#[test]
fn pthd_thread_that_left_before_the_others_arrive() {
    let line = line!() + 6;
    let (l, waiting, left, other) = pthd_divergence(5, |t| {
        if t.tid() == 3 {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
        t.sync(line!());
    });
    assert_eq!((l, left, other), (line, 3, None));
    assert_ne!(waiting, 3);
}

#[test]
fn pthd_threads_at_two_different_barriers() {
    let even = line!() + 3;
    let (line, waiting, left, other) = pthd_divergence(6, |t| {
        if t.tid() % 2 == 0 {
            t.sync(line!());
        } else {
            t.sync(line!());
        }
    });
    let other = other.expect("two lines");
    // Whichever line the phase's first thread arrived at is the barrier's.
    let line_of = |tid: usize| {
        if tid.is_multiple_of(2) {
            even
        } else {
            even + 2
        }
    };
    assert_eq!((line, other), (line_of(waiting), line_of(left)));
    assert_ne!(line, other);
}

#[test]
fn pthd_divergence_after_good_phases() {
    let line = line!() + 6;
    let (l, waiting, left, _) = pthd_divergence(3, |t| {
        for _ in 0..10 {
            t.sync(line!());
        }
        if t.tid() != 1 {
            t.sync(line!());
        }
    });
    assert_eq!((l, left), (line, 1));
    assert_ne!(waiting, 1);
}
