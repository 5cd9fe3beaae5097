//! Fails a test that hangs.

use std::sync::mpsc;
use std::thread;
use std::time::Duration;

/// Runs `f` in a thread and returns its result; fails the test if it takes more than
/// `secs` seconds (a hang), and passes on its panic if it panics.
pub fn within<R: Send + 'static>(secs: u64, f: impl FnOnce() -> R + Send + 'static) -> R {
    let (tx, rx) = mpsc::channel();
    let h = thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(r) => {
            h.join().unwrap();
            r
        }
        Err(mpsc::RecvTimeoutError::Disconnected) => match h.join() {
            Err(e) => std::panic::resume_unwind(e),
            Ok(()) => unreachable!("the thread sent no result yet did not panic"),
        },
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("timed out after {secs} s (hang)"),
    }
}
