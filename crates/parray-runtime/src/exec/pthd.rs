//! pthd thread arrays: `#detour` runs a body once per CPU thread and returns when all are
//! done. A body's `#sync` waits for its `Team`: the threads here, or the ranks of an mpi
//! job (`distributed::mpi` implements it), so that an mpi body runs the same code and this layer
//! never calls MPI.

use std::sync::Mutex;

use crate::error::{DetourSite, Error, Result, ThreadId};
use crate::exec::barrier::{Barrier, Divergence, SyncError};
use crate::exec::panics::{self, Caught};

/// Whom a body's `#sync` waits for: the threads of a pthd array (here), or the ranks of
/// an mpi job (`distributed::mpi`, which agrees on the line with the other ranks).
pub(crate) trait Team: Sync {
    /// Member `member` has arrived at the `#sync` at `line`; returns when every member
    /// has. `false` when they will not all meet there (one failed, returned from the body,
    /// or waits at another `#sync`): the team has recorded why, and the member leaves the
    /// body quietly (the detour returns the failure).
    fn meet(&self, member: usize, line: u32) -> bool;
}

/// What a thread of a pthd array, or a rank of an mpi array, knows about itself.
pub struct ThreadCtx<'a> {
    tid: usize,
    nthreads: usize,
    team: &'a dyn Team,
}

impl<'a> ThreadCtx<'a> {
    /// Member `tid` of the `nthreads` of `team`.
    pub(crate) fn new(tid: usize, nthreads: usize, team: &'a dyn Team) -> Self {
        ThreadCtx {
            tid,
            nthreads,
            team,
        }
    }

    /// `$tid$`: this thread's flattened index in the array.
    #[inline(always)]
    pub fn tid(&self) -> usize {
        self.tid
    }

    /// The number of threads in the array.
    #[inline(always)]
    pub fn nthreads(&self) -> usize {
        self.nthreads
    }

    /// `#sync` at line `line` of the detour's file: waits until every thread of the array
    /// has arrived at it.
    ///
    /// If another thread failed, or the threads diverged (one returned from the body, or
    /// waits at another line's `#sync`), this thread leaves the body quietly instead of
    /// waiting forever; the detour returns the failure. An mpi body's ranks agree on the
    /// line first, and all leave with the error where they differ.
    pub fn sync(&self, line: u32) {
        if !self.team.meet(self.tid, line) {
            panics::unwind_quietly()
        }
    }
}

/// What the threads of one detour share: their team.
struct Array {
    site: &'static DetourSite,
    barrier: Barrier,
    /// The first failure (a panic or a divergent `#sync`).
    error: Mutex<Option<Error>>,
}

impl Array {
    /// Records `err` unless an earlier failure was recorded.
    fn fail(&self, err: Error) {
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(err);
    }

    fn diverged(&self, d: Divergence) {
        self.fail(Error::DivergentSync {
            site: self.site,
            line: d.line,
            waiting: ThreadId::Pthd { tid: d.waiting },
            left: ThreadId::Pthd { tid: d.left },
            other_line: d.other_line,
        });
    }
}

impl Team for Array {
    fn meet(&self, tid: usize, line: u32) -> bool {
        match self.barrier.wait(tid, line) {
            Ok(()) => true,
            Err(SyncError::Poisoned) => false,
            Err(SyncError::Diverged(d)) => {
                self.diverged(d);
                false
            }
        }
    }
}

/// `#detour`: runs `body` once for each of the `nthreads` threads of the pthd array at
/// `site` on scoped OS threads (inline when there is one) and returns when all are done.
///
/// # Errors
/// The first failure: `Error::ThreadPanicked` for a panicking thread,
/// `Error::DivergentSync` for a `#sync` that not every thread reached, `Error::Spawn` if
/// the OS refused a thread. Each poisons the array's barrier, so no thread hangs in
/// `sync`.
pub fn detour<F>(site: &'static DetourSite, nthreads: usize, body: F) -> Result<()>
where
    F: Fn(&ThreadCtx) + Sync,
{
    let array = Array {
        site,
        barrier: Barrier::new(nthreads),
        error: Mutex::new(None),
    };
    let run = |tid: usize| {
        let ctx = ThreadCtx::new(tid, nthreads, &array);
        match panics::catch(|| body(&ctx)) {
            Ok(()) => {
                if let Err(d) = array.barrier.leave(tid) {
                    array.diverged(d);
                }
            }
            Err(Caught::Quiet) => {}
            Err(Caught::Panicked(p)) => {
                array.fail(Error::ThreadPanicked {
                    site,
                    thread: ThreadId::Pthd { tid },
                    at: p.at,
                    message: p.message,
                });
                array.barrier.poison();
            }
        }
    };
    if nthreads == 1 {
        run(0);
    } else {
        std::thread::scope(|s| {
            for tid in 0..nthreads {
                let run = &run;
                let spawned = std::thread::Builder::new().spawn_scoped(s, move || run(tid));
                if let Err(e) = spawned {
                    array.fail(Error::Spawn {
                        site,
                        tid,
                        reason: e.to_string(),
                    });
                    // Releases the threads already started.
                    array.barrier.poison();
                    break;
                }
            }
        });
    }
    match array.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}
