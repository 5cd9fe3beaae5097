//! A `#sync` that not every thread of a block reaches, one semantics on every backend
//! (SPEC.md 3.5, "No hangs"; 4.6): the emulation always reports it, and a GPU does under
//! `PARRAY_CHECK_SYNC=1`, whose checked barriers write the fault record. Both name the
//! barrier's line, the lowest thread waiting there and the lowest thread not with it.
//! On the GPU machine: `PARRAY_BACKEND=cuda PARRAY_CHECK_SYNC=1 cargo test --test
//! checked_sync` (without `PARRAY_CHECK_SYNC` a GPU runs only the correct body: a
//! divergent `#sync` is undefined behaviour there).

use parray::prelude::*;
use parray::ThreadId;

parray! {
    dmem int [128] OUT;
    smem int [64] S;
    cuda(int* out) [2][64] PAIR;
    cuda(int* out) [1][64] ONE;
}

/// Whether a divergent `#sync` is reported on this backend.
fn reported() -> bool {
    match parray::gpu::backend() {
        Ok(parray::gpu::Backend::Emulate) => true,
        Ok(_) => parray::gpu::checks_sync(),
        Err(e) => panic!("{e}"),
    }
}

fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

/// Thread `t` of block 0 of a 64-thread block.
fn thread(t: u32) -> ThreadId {
    ThreadId::Cuda {
        tid: u64::from(t),
        block: [0, 0, 0],
        thread: [t, 0, 0],
    }
}

/// A correct body with barriers in a loop runs alike with checked barriers: each step
/// reads the neighbours' values of the last.
#[test]
fn a_body_whose_threads_all_meet_runs() -> parray::Result<()> {
    let mut out = OUT::create()?;
    detour!(PAIR(&mut out) {
        let s = S::create();
        let t = $tid_1$;
        s[t] = t as i32;
        #sync;
        for _step in 0..3 {
            let v = s[(t + 1) % 64] + 1;
            #sync;
            s[t] = v;
            #sync;
        }
        out[$tid$] = s[t];
    })?;
    let want: Vec<i32> = (0..128).map(|k| (k % 64 + 3) % 64 + 3).collect();
    assert_eq!(out.to_vec()?, want);
    Ok(())
}

/// Thread 5 returns before the `#sync` the others wait at: the error names the barrier,
/// thread 0 waiting there and thread 5, which left.
#[test]
fn a_thread_that_returns_before_a_sync_is_reported() -> parray::Result<()> {
    if !reported() {
        return Ok(());
    }
    let mut out = OUT::create()?;
    let sync_line = line!() + 6;
    let err = detour!(ONE(&mut out) {
        let t = $tid_1$;
        if t == 5 {
            return;
        }
        #sync;
        out[t] = 1;
    })
    .unwrap_err();
    let parray::Error::DivergentSync {
        line,
        waiting,
        left,
        other_line,
        ..
    } = &err
    else {
        panic!("expected a divergent #sync, got {err}");
    };
    assert_eq!(
        (*line, *waiting, *left, *other_line),
        (sync_line, thread(0), thread(5), None),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains(&format!("tests/checked_sync.rs:{sync_line}")),
        "{err}"
    );
    Ok(())
}

/// Threads 0..16 wait at one `#sync`, the others at another: the error names the first
/// barrier, thread 0 and thread 16. A GPU also sees where thread 16 waits (the emulation
/// sees only that it is not at the first).
#[test]
fn threads_at_two_different_syncs_are_reported() -> parray::Result<()> {
    if !reported() {
        return Ok(());
    }
    let mut out = OUT::create()?;
    let (first, second) = (line!() + 4, line!() + 6);
    let err = detour!(ONE(&mut out) {
        let t = $tid_1$;
        if t < 16 {
            #sync;
        } else {
            #sync;
        }
        out[t] = 1;
    })
    .unwrap_err();
    let parray::Error::DivergentSync {
        line,
        waiting,
        left,
        other_line,
        ..
    } = &err
    else {
        panic!("expected a divergent #sync, got {err}");
    };
    assert_eq!(
        (*line, *waiting, *left),
        (first, thread(0), thread(16)),
        "{err}"
    );
    let other = if emulated() { None } else { Some(second) };
    assert_eq!(*other_line, other, "{err}");
    Ok(())
}

/// What a GPU compiles under `PARRAY_CHECK_SYNC=1`: the kernel's source with the checked
/// barrier's helpers before the kernel, which they leave as it was.
#[test]
fn the_checked_source_keeps_the_kernel() {
    let out = ();
    let source = kernel_source!(ONE(out) {
        let t = $tid_1$;
        #sync;
        out[t] = 1;
    });
    let checked = parray::gpu::checked_sync_source(source);
    let kernel = source.find("extern \"C\" __global__").expect("a kernel");
    assert!(checked.starts_with(&source[..kernel]), "{checked}");
    assert!(checked.ends_with(&source[kernel..]), "{checked}");
    assert!(
        checked.contains("#define __syncthreads() do { if (parray_sync(__LINE__, __LINE__)) return; } while (0)\nextern \"C\" __global__"),
        "{checked}"
    );
}
