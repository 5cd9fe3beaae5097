//! Panics in detour bodies: caught, located at the user's statement, and returned as
//! errors instead of printed.
//!
//! The macros emit every body statement with the user's spans, so the `Location` std
//! gives a panic (bounds checks are `#[track_caller]`) is the user's line. A chaining
//! panic hook, installed once, records that location when the panicking thread is running
//! body code (a thread-local flag set by [`catch`]) and stays quiet: the detour returns the
//! panic as an `Err`. Every other panic goes to the previous hook.

use std::any::Any;
use std::cell::Cell;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this OS thread is running detour body code.
    static IN_BODY: Cell<bool> = const { Cell::new(false) };
    /// `file:line:col` of the last panic in body code on this thread.
    static LOCATION: Cell<Option<String>> = const { Cell::new(None) };
}

/// A panic of body code.
#[derive(Debug)]
pub(crate) struct Panic {
    pub(crate) message: String,
    /// Where it happened, when the hook saw it.
    pub(crate) at: Option<String>,
}

/// How body code ended abnormally.
pub(crate) enum Caught {
    /// It panicked.
    Panicked(Panic),
    /// It left through [`unwind_quietly`]: not a failure of its own.
    Quiet,
}

/// The unwind payload of [`unwind_quietly`].
struct Quiet;

/// Leaves the body without a panic message, because another thread's failure (recorded
/// by then) makes going on pointless: a thread released from a poisoned `#sync`.
pub(crate) fn unwind_quietly() -> ! {
    panic::resume_unwind(Box::new(Quiet))
}

/// Runs `f` as detour body code: a panic in it is caught, not printed, and returned with
/// its message and location.
pub(crate) fn catch<R>(f: impl FnOnce() -> R) -> Result<R, Caught> {
    install_hook();
    let outer = IN_BODY.replace(true);
    LOCATION.take();
    let result = panic::catch_unwind(AssertUnwindSafe(f));
    IN_BODY.set(outer);
    result.map_err(|payload| {
        if payload.is::<Quiet>() {
            Caught::Quiet
        } else {
            Caught::Panicked(Panic {
                message: message(payload.as_ref()),
                at: LOCATION.take(),
            })
        }
    })
}

/// The text of a panic payload (`panic!` gives `&str` or `String`).
fn message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".into())
}

/// Installs the recording hook in front of whatever hook the process had, once.
fn install_hook() {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            // `try_with`: a panic while the thread's locals are being destroyed is not ours.
            if IN_BODY.try_with(Cell::get).unwrap_or(false) {
                let at = info.location().map(|l| l.to_string());
                let _ = LOCATION.try_with(|cell| cell.set(at));
            } else {
                previous(info);
            }
        }));
    });
}
