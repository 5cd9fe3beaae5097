//! Fig 5 of the paper: a 2x2 array of CPU threads, each printing its flat id and tid_0.

use std::sync::Mutex;

use parray::prelude::*;

parray! {
    #parray {pthd [2][2]} MYTA
}

fn main() -> parray::Result<()> {
    let seen = Mutex::new(Vec::new());
    let log = &seen;
    detour!(MYTA {
        println!("myta {} {}", $tid$, $tid_0$);
        record(log, $tid$, $tid_0$, $tid_1$);
    })?;
    // Independent check: thread t of a [2][2] array has tid_0 = t / 2 and tid_1 = t % 2.
    let mut seen = seen.into_inner().expect("no thread panicked");
    seen.sort();
    let expected: Vec<_> = (0..4).map(|t| (t, t / 2, t % 2)).collect();
    let ok = seen == expected;
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}

fn record(seen: &Mutex<Vec<(usize, usize, usize)>>, tid: usize, tid_0: usize, tid_1: usize) {
    seen.lock()
        .expect("no thread panicked")
        .push((tid, tid_0, tid_1));
}
