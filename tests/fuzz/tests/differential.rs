//! Each generated body (build.rs) runs on pthd threads and on a cuda grid (the GPU under
//! `PARRAY_BACKEND=cuda`, else the CPU emulation), and its CUDA C runs on host threads
//! (tests/host_c/mod.rs); every output must be what the independent evaluator computed.
//! A failure prints the body so that it can be minimised by hand.

// The generated bodies assign what they may not read, may return early, and may hold
// constant overflow or division by zero where no thread goes (the evaluator rejects only
// what a thread executes).
#![allow(
    unused_assignments,
    unused_variables,
    unused_mut,
    unreachable_code,
    unused_braces,
    double_negations,
    unconditional_panic,
    arithmetic_overflow,
    dead_code,
    unused_comparisons,
    clippy::all
)]

use parray::prelude::*;
use parray_fuzz::Case;

mod host_c;

include!(concat!(env!("OUT_DIR"), "/bodies.rs"));

/// How many failing bodies a report prints in full.
const SHOWN: usize = 5;

/// Fails once with every failure's summary and the first few bodies in full.
fn report(what: &str, failures: Vec<(usize, String)>) {
    if failures.is_empty() {
        return;
    }
    let mut text = format!(
        "{} of {} bodies failed on {what}: {:?}\n",
        failures.len(),
        CASES.len(),
        failures.iter().map(|f| f.0).collect::<Vec<_>>()
    );
    for (i, why) in failures.iter().take(SHOWN) {
        let c = &CASES[*i];
        text += &format!(
            "\n--- body {i} ({} blocks x {} threads, {} out): {why}\nparray! {{\n{}}}\n{}",
            c.blocks, c.threads, c.elem, c.decls, c.text
        );
    }
    panic!("{text}");
}

/// The first element where `got` differs from `expected`, as a message.
pub fn mismatch(got: &[i64], expected: &[i64]) -> Option<String> {
    if got.len() != expected.len() {
        return Some(format!(
            "{} outputs, expected {}",
            got.len(),
            expected.len()
        ));
    }
    let bad: Vec<usize> = (0..got.len()).filter(|&i| got[i] != expected[i]).collect();
    let i = *bad.first()?;
    Some(format!(
        "out[{i}] = {}, expected {} ({} elements differ)",
        got[i],
        expected[i],
        bad.len()
    ))
}

fn run_all(
    run: impl Fn(&Case) -> Option<(parray::Result<Vec<i64>>, &'static [i64])>,
) -> Vec<(usize, String)> {
    let mut failures = Vec::new();
    for c in CASES {
        let Some((got, expected)) = run(c) else {
            continue;
        };
        let why = match got {
            Err(e) => Some(format!("error: {e}")),
            Ok(got) => mismatch(&got, expected),
        };
        if let Some(why) = why {
            failures.push((c.index, why));
        }
    }
    failures
}

#[test]
fn pthd_threads_compute_what_the_evaluator_does() {
    let failures = run_all(|c| Some((c.pthd?(), c.expected_pthd?)));
    report("pthd threads", failures);
}

#[test]
fn cuda_grids_compute_what_the_evaluator_does() {
    let failures = run_all(|c| Some(((c.cuda)(), c.expected_cuda)));
    let backend = match parray::gpu::backend() {
        Ok(b) => format!("{b:?}"),
        Err(e) => format!("no backend: {e}"),
    };
    report(&format!("cuda grids ({backend})"), failures);
}

#[test]
fn the_cuda_c_on_host_threads_computes_what_the_evaluator_does() {
    let Some(failures) = host_c::run(CASES) else {
        return;
    };
    report("the CUDA C on host threads", failures);
}
