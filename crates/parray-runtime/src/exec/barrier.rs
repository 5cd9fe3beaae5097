//! A reusable, poisonable barrier for the threads of a pthd array (`#sync`) that detects
//! divergence.
//!
//! `std::sync::Barrier` cannot be cancelled: if one thread of an array panics, or returns
//! from the body while the others wait, they would wait forever. This barrier can be
//! *poisoned*: every current and future [`Barrier::wait`] then fails at once, so the
//! array unwinds instead of hanging. It poisons itself when the threads diverge: when a
//! thread that has [left](Barrier::leave) can no longer arrive, or when threads wait at
//! `#sync`s of different lines in the same phase.

use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};

/// Threads that did not all reach the same `#sync`: `waiting` waits at the one at `line`,
/// while `left` returned from the body, or waits at the one at `other_line`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Divergence {
    pub line: u32,
    pub waiting: usize,
    pub left: usize,
    pub other_line: Option<u32>,
}

/// Why [`Barrier::wait`] failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncError {
    /// The barrier was poisoned (by a failing thread, or an earlier divergence).
    Poisoned,
    /// This very wait found the threads diverged, and poisoned the barrier.
    Diverged(Divergence),
}

impl fmt::Display for SyncError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SyncError::Poisoned => f.write_str("barrier poisoned: a thread of the array failed"),
            SyncError::Diverged(d) => write!(
                f,
                "thread {} waits at the #sync at line {}, but thread {} {}",
                d.waiting,
                d.line,
                d.left,
                match d.other_line {
                    Some(other) => format!("waits at the #sync at line {other}"),
                    None => "left the body".into(),
                }
            ),
        }
    }
}

impl std::error::Error for SyncError {}

/// Mutable state behind the barrier's mutex.
#[derive(Debug)]
struct State {
    /// Threads that arrived in the current generation.
    arrived: usize,
    /// The line of the current generation's `#sync`, and its first arrival (valid while
    /// `arrived > 0`).
    line: u32,
    first: usize,
    /// The first thread that left the body.
    left: Option<usize>,
    /// Incremented each time the barrier opens; a waiter leaves when it changes.
    generation: u64,
    /// Once set, never cleared: every wait fails.
    poisoned: bool,
}

/// A barrier for `n` threads, reusable across any number of phases.
///
/// Generation-counted: a thread that leaves phase `k` and arrives at phase `k + 1` before
/// a slow thread has woken from phase `k` cannot be confused with it.
#[derive(Debug)]
pub struct Barrier {
    n: usize,
    state: Mutex<State>,
    cvar: Condvar,
}

impl Barrier {
    /// A barrier that opens when `n` threads have called [`Barrier::wait`].
    ///
    /// `n == 0` behaves like `n == 1` (a wait never blocks), as `std::sync::Barrier` does.
    pub fn new(n: usize) -> Self {
        Barrier {
            n: n.max(1),
            state: Mutex::new(State {
                arrived: 0,
                line: 0,
                first: 0,
                left: None,
                generation: 0,
                poisoned: false,
            }),
            cvar: Condvar::new(),
        }
    }

    /// The number of threads the barrier waits for.
    pub fn parties(&self) -> usize {
        self.n
    }

    /// Thread `tid` arrives at the `#sync` at `line`; blocks until all `n` threads have
    /// arrived there.
    ///
    /// # Errors
    /// [`SyncError::Diverged`] (and the barrier is poisoned) if a thread has left or the
    /// phase's first thread waits at another line; [`SyncError::Poisoned`] if the barrier
    /// is or becomes poisoned before it opens.
    pub fn wait(&self, tid: usize, line: u32) -> Result<(), SyncError> {
        let mut st = self.lock();
        if st.poisoned {
            return Err(SyncError::Poisoned);
        }
        let diverged = if let Some(left) = st.left {
            Some(Divergence {
                line,
                waiting: tid,
                left,
                other_line: None,
            })
        } else if st.arrived > 0 && st.line != line {
            Some(Divergence {
                line: st.line,
                waiting: st.first,
                left: tid,
                other_line: Some(line),
            })
        } else {
            None
        };
        if let Some(d) = diverged {
            self.poison_locked(st);
            return Err(SyncError::Diverged(d));
        }
        if st.arrived == 0 {
            (st.line, st.first) = (line, tid);
        }
        st.arrived += 1;
        if st.arrived == self.n {
            st.arrived = 0;
            st.generation = st.generation.wrapping_add(1);
            drop(st);
            self.cvar.notify_all();
            return Ok(());
        }
        let gen = st.generation;
        while st.generation == gen && !st.poisoned {
            st = self.cvar.wait(st).unwrap_or_else(|e| e.into_inner());
        }
        if st.generation != gen {
            // The barrier opened for us, even if it was poisoned right afterwards.
            Ok(())
        } else {
            Err(SyncError::Poisoned)
        }
    }

    /// Thread `tid` returned from the body: it will never arrive again.
    ///
    /// # Errors
    /// The divergence (and the barrier is poisoned) if threads are waiting; once poisoned,
    /// leaving is not an error (the failure is reported already).
    pub fn leave(&self, tid: usize) -> Result<(), Divergence> {
        let mut st = self.lock();
        if st.poisoned {
            return Ok(());
        }
        st.left.get_or_insert(tid);
        if st.arrived == 0 {
            return Ok(());
        }
        let d = Divergence {
            line: st.line,
            waiting: st.first,
            left: tid,
            other_line: None,
        };
        self.poison_locked(st);
        Err(d)
    }

    /// Poisons the barrier: wakes every waiter with `Err(Poisoned)` and makes later waits
    /// fail immediately. Idempotent.
    pub fn poison(&self) {
        self.poison_locked(self.lock());
    }

    /// Whether the barrier is poisoned.
    pub fn is_poisoned(&self) -> bool {
        self.lock().poisoned
    }

    fn poison_locked(&self, mut st: MutexGuard<'_, State>) {
        st.poisoned = true;
        drop(st);
        self.cvar.notify_all();
    }

    /// Locks the state, ignoring std's mutex poisoning: the state is always consistent
    /// (no user code runs under the lock), and our own poison flag carries the failure.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
