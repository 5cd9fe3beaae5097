//! pthd thread arrays: `#detour` runs a body once per CPU thread and returns when all are done.

use std::any::Any;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Mutex;

use crate::barrier::Barrier;
use crate::error::{Error, Result};

/// What a thread of a pthd array knows about itself.
pub struct ThreadCtx<'a> {
    tid: usize,
    nthreads: usize,
    barrier: &'a Barrier,
}

/// The unwind payload of a thread leaving a poisoned `#sync`: not a failure of its own,
/// so the detour reports the thread that panicked first instead.
struct Unwound;

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

    /// `#sync`: waits until every thread of the array has arrived.
    ///
    /// If another thread panicked, this thread unwinds out of the body (silently) instead
    /// of waiting forever; the detour then returns that thread's panic as its error.
    pub fn sync(&self) {
        if self.barrier.wait().is_err() {
            panic::resume_unwind(Box::new(Unwound));
        }
    }
}

/// `#detour`: runs `body` once for each of the `nthreads` threads of the pthd array
/// `array` on scoped OS threads (inline when there is one) and returns when all are done.
///
/// A panicking thread poisons the array's barrier, so that no other thread hangs in
/// `sync`, and becomes `Error::ThreadPanicked` (the first panic, if several).
pub fn detour<F>(array: &'static str, nthreads: usize, body: F) -> Result<()>
where
    F: Fn(&ThreadCtx) + Sync,
{
    let barrier = Barrier::new(nthreads);
    let first_panic = Mutex::new(None);
    let run = |tid: usize| {
        let ctx = ThreadCtx {
            tid,
            nthreads,
            barrier: &barrier,
        };
        if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| body(&ctx))) {
            barrier.poison();
            if !payload.is::<Unwound>() {
                let mut first = first_panic.lock().unwrap_or_else(|e| e.into_inner());
                first.get_or_insert(Error::ThreadPanicked {
                    array,
                    tid,
                    message: panic_message(payload.as_ref()),
                });
            }
        }
    };
    if nthreads == 1 {
        run(0);
    } else {
        std::thread::scope(|s| {
            for tid in 0..nthreads {
                let run = &run;
                s.spawn(move || run(tid));
            }
        });
    }
    match first_panic.into_inner().unwrap_or_else(|e| e.into_inner()) {
        Some(err) => Err(err),
        None => Ok(()),
    }
}

/// The text of a panic payload (`panic!` gives `&str` or `String`).
pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}
