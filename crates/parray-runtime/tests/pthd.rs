//! pthd thread arrays: `detour`, `#sync`, panics, nesting.

#[macro_use]
mod common;

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use parray_runtime::{detour, Access, AccessMut, Array, DetourSite, Error, ThreadId};

const H: usize = 4; // half the side of Fig 10's matrices
const N: usize = 2 * H;

flat_types! {
    V = Paged f32 [2];
    OUT = Paged i32 [6];
    M = Paged f32 [N * N];
}

/// The site of a detour of the array `$array`, at line 1 of this file (a constant, so
/// `&'static`).
macro_rules! site {
    ($array:literal) => {
        &DetourSite {
            array: $array,
            file: file!(),
            line: 1,
        }
    };
}

#[test]
fn every_tid_runs_exactly_once() {
    let hits: Vec<AtomicUsize> = (0..7).map(|_| AtomicUsize::new(0)).collect();
    detour(site!("T"), 7, |t| {
        assert_eq!(t.nthreads(), 7);
        hits[t.tid()].fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert!(hits.iter().all(|h| h.load(Ordering::Relaxed) == 1));
}

#[test]
fn an_empty_array_runs_nothing() {
    detour(site!("EMPTY"), 0, |_| panic!("no thread exists")).unwrap();
}

#[test]
fn one_thread_runs_inline() {
    let caller = std::thread::current().id();
    let mut ran = AtomicUsize::new(0);
    detour(site!("ONE"), 1, |t| {
        assert_eq!(t.tid(), 0);
        assert_eq!(std::thread::current().id(), caller);
        t.sync(line!());
        ran.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(*ran.get_mut(), 1);
}

#[test]
fn sync_separates_phases() {
    const N: usize = 6;
    const PHASES: usize = 20;
    let arrived: Vec<AtomicUsize> = (0..PHASES).map(|_| AtomicUsize::new(0)).collect();
    detour(site!("PHASED"), N, |t| {
        for (phase, count) in arrived.iter().enumerate() {
            if (t.tid() + phase) % N == 0 {
                std::thread::sleep(Duration::from_millis(1)); // a straggler per phase
            }
            count.fetch_add(1, Ordering::SeqCst);
            t.sync(line!());
            assert_eq!(count.load(Ordering::SeqCst), N, "phase {phase}");
        }
    })
    .unwrap();
}

#[test]
fn a_panic_becomes_an_error_naming_the_thread_and_line() {
    let line = line!() + 3;
    let err = detour(site!("MY_TA"), 4, |t| {
        if t.tid() == 2 {
            panic!("bad cell {}", t.tid());
        }
    })
    .unwrap_err();
    let at = format!("{}:{line}:13", file!());
    match &err {
        Error::ThreadPanicked {
            site: s,
            thread,
            at: Some(place),
            message,
        } => {
            assert_eq!(*s, site!("MY_TA"));
            assert_eq!(*thread, ThreadId::Pthd { tid: 2 });
            assert_eq!(
                (place.as_str(), message.as_str()),
                (at.as_str(), "bad cell 2")
            );
        }
        other => panic!("unexpected {other:?}"),
    }
    assert_eq!(
        err.to_string(),
        format!(
            "parray: MY_TA, detour at {}:1: thread 2 panicked at {at}: bad cell 2",
            file!()
        )
    );
}

#[test]
fn an_out_of_bounds_access_points_at_the_statement() {
    let mut v = Array::<V>::new().unwrap();
    let v = v.ptr_mut();
    let line = line!() + 2;
    let err = detour(site!("OOB"), 3, |t| {
        v.store(t.tid(), 1.0);
    })
    .unwrap_err();
    let Error::ThreadPanicked {
        thread,
        at,
        message,
        ..
    } = &err
    else {
        panic!("unexpected {err:?}");
    };
    assert_eq!(*thread, ThreadId::Pthd { tid: 2 });
    assert_eq!(
        at.as_deref(),
        Some(format!("{}:{line}:11", file!()).as_str())
    );
    assert_eq!(message, "parray: offset 2 out of bounds for V (extent 2)");
}

#[test]
fn a_panic_releases_threads_waiting_at_the_barrier() {
    let passed = AtomicUsize::new(0);
    let err = detour(site!("WAITERS"), 4, |t| {
        if t.tid() == 3 {
            std::thread::sleep(Duration::from_millis(50)); // the others are waiting by now
            panic!("late failure");
        }
        t.sync(line!());
        passed.fetch_add(1, Ordering::Relaxed);
    })
    .unwrap_err();
    assert!(
        matches!(&err, Error::ThreadPanicked { thread: ThreadId::Pthd { tid: 3 }, message, .. }
            if message == "late failure"),
        "{err:?}"
    );
    assert_eq!(passed.load(Ordering::Relaxed), 0);
}

#[test]
fn a_panic_also_stops_later_syncs() {
    // Thread 0 panics after the first phase; the others must not hang in the second.
    let err = detour(site!("LATER"), 3, |t| {
        t.sync(line!());
        if t.tid() == 0 {
            panic!("after phase one");
        }
        t.sync(line!());
        t.sync(line!());
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            Error::ThreadPanicked {
                thread: ThreadId::Pthd { tid: 0 },
                ..
            }
        ),
        "{err:?}"
    );
}

#[test]
fn a_pthd_thread_can_detour_again() {
    let mut out = Array::<OUT>::new().unwrap();
    let w = out.ptr_mut();
    detour(site!("OUTER"), 2, |outer| {
        let o = outer.tid();
        detour(site!("INNER"), 3, |inner| {
            inner.sync(line!());
            w.store(o * 3 + inner.tid(), (10 * o + inner.tid()) as i32);
        })
        .unwrap();
        outer.sync(line!());
    })
    .unwrap();
    assert_eq!(out.to_vec().unwrap(), [0, 1, 2, 10, 11, 12]);
}

#[test]
fn an_inner_panic_surfaces_through_the_outer_detour() {
    let err = detour(site!("OUTER"), 2, |outer| {
        let inner = detour(site!("INNER"), 2, |inner| {
            if outer.tid() == 1 && inner.tid() == 0 {
                panic!("deep");
            }
        });
        if let Err(e) = inner {
            panic!("{e}");
        }
    })
    .unwrap_err();
    let Error::ThreadPanicked {
        site: s,
        thread,
        message,
        ..
    } = err
    else {
        panic!("unexpected {err:?}");
    };
    assert_eq!((s, thread), (site!("OUTER"), ThreadId::Pthd { tid: 1 }));
    assert!(
        message.starts_with(&format!(
            "parray: INNER, detour at {}:1: thread 0 panicked at {}:",
            file!(),
            file!()
        )),
        "{message}"
    );
    assert!(message.ends_with(": deep"), "{message}");
}

/// Fig 10: `paged float [[2][n]][[2][n]]` matrix product on `pthd [2][2]`, each thread
/// computing one quarter of C through the shared handles.
#[test]
fn fig10_matrix_product_on_four_threads() {
    let mk = || Array::<M>::new().unwrap();
    let (mut a, mut b, mut c) = (mk(), mk(), mk());
    let av: Vec<f32> = (0..N * N).map(|i| (i % 7) as f32).collect();
    let bv: Vec<f32> = (0..N * N).map(|i| (i % 5) as f32 - 2.0).collect();
    a.copy_from_slice(&av).unwrap();
    b.copy_from_slice(&bv).unwrap();
    let m = |r0: usize, r1: usize, c0: usize, c1: usize| (r0 * H + r1) * N + c0 * H + c1;
    let cw = c.ptr_mut();
    detour(site!("MY_TA"), 4, |t| {
        let (t0, t1) = (t.tid() / 2, t.tid() % 2);
        for i in 0..H {
            for j in 0..H {
                let mut cv = 0.0;
                for k in 0..N {
                    cv += a.load(m(t0, i, k / H, k % H)) * b.load(m(k / H, k % H, t1, j));
                }
                cw.store(m(t0, i, t1, j), cv);
            }
        }
    })
    .unwrap();
    let got = c.to_vec().unwrap();
    for i in 0..N {
        for j in 0..N {
            let want: f32 = (0..N).map(|k| av[i * N + k] * bv[k * N + j]).sum();
            assert_eq!(got[i * N + j], want, "C[{i}][{j}]");
        }
    }
}
