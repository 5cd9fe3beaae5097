//! A reusable, poisonable barrier for the threads of a thread array (`#sync`).
//!
//! `std::sync::Barrier` cannot be cancelled: if one thread of an array panics, the others
//! would wait for it forever. This barrier can be *poisoned*: every current and future
//! [`Barrier::wait`] then returns [`Poisoned`] at once, so the array unwinds instead of
//! hanging.

use std::fmt;
use std::sync::{Condvar, Mutex, MutexGuard};

/// The error of [`Barrier::wait`] once the barrier is poisoned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Poisoned;

impl fmt::Display for Poisoned {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("barrier poisoned: a thread of the array panicked")
    }
}

impl std::error::Error for Poisoned {}

/// Mutable state behind the barrier's mutex.
#[derive(Debug)]
struct State {
    /// Threads that arrived in the current generation.
    arrived: usize,
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

    /// Blocks until all `n` threads have arrived, or until the barrier is poisoned.
    ///
    /// Returns `Err(Poisoned)` if the barrier is or becomes poisoned before it opens.
    pub fn wait(&self) -> Result<(), Poisoned> {
        let mut st = self.lock();
        if st.poisoned {
            return Err(Poisoned);
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
            Err(Poisoned)
        }
    }

    /// Poisons the barrier: wakes every waiter with `Err(Poisoned)` and makes later waits
    /// fail immediately. Idempotent.
    pub fn poison(&self) {
        let mut st = self.lock();
        st.poisoned = true;
        drop(st);
        self.cvar.notify_all();
    }

    /// Whether [`Barrier::poison`] has been called.
    pub fn is_poisoned(&self) -> bool {
        self.lock().poisoned
    }

    /// Locks the state, ignoring std's mutex poisoning: the state is always consistent
    /// (no user code runs under the lock), and our own poison flag carries the failure.
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}
