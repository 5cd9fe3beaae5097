//! pthd thread arrays: `#detour` runs a body once per CPU thread and returns when all are done.

use std::sync::Mutex;

use crate::error::{DetourSite, Error, Result, ThreadId};
use crate::exec::barrier::{Barrier, Divergence, SyncError};
use crate::exec::panics::{self, Caught};

/// What a thread of a pthd array, or a rank of an mpi array, knows about itself.
pub struct ThreadCtx<'a> {
    tid: usize,
    nthreads: usize,
    team: Team<'a>,
}

/// Whom a body's `#sync` waits for.
enum Team<'a> {
    /// The threads of a pthd array.
    Threads(&'a Array),
    /// The ranks of an mpi job, at the detour `site`; the first failure of a `#sync`.
    Ranks {
        site: &'static DetourSite,
        error: Mutex<Option<Error>>,
    },
}

/// What the threads of one detour share.
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

impl ThreadCtx<'_> {
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
    /// line first (`crate::dist::mpi::agree`), and all leave with the error where they differ.
    pub fn sync(&self, line: u32) {
        let array = match &self.team {
            Team::Threads(array) => array,
            Team::Ranks { site, error } => {
                if let Err(e) = crate::dist::mpi::agree(
                    crate::dist::mpi::Point::Sync { line },
                    &site.to_string(),
                ) {
                    *error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                    panics::unwind_quietly()
                }
                return;
            }
        };
        match array.barrier.wait(self.tid, line) {
            Ok(()) => {}
            Err(SyncError::Poisoned) => panics::unwind_quietly(),
            Err(SyncError::Diverged(d)) => {
                array.diverged(d);
                panics::unwind_quietly()
            }
        }
    }

    /// Rank `rank` of a job of `nranks`, running the body of the mpi detour at `site`.
    pub(crate) fn rank(rank: usize, nranks: usize, site: &'static DetourSite) -> Self {
        ThreadCtx {
            tid: rank,
            nthreads: nranks,
            team: Team::Ranks {
                site,
                error: Mutex::new(None),
            },
        }
    }

    /// The failure a rank's `#sync` recorded before leaving the body quietly.
    pub(crate) fn take_error(&self) -> Option<Error> {
        match &self.team {
            Team::Ranks { error, .. } => error.lock().unwrap_or_else(|e| e.into_inner()).take(),
            Team::Threads(_) => None,
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
        let ctx = ThreadCtx {
            tid,
            nthreads,
            team: Team::Threads(&array),
        };
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
