//! Backend selection. The backend is chosen once per process, so each case that sets
//! `PARRAY_BACKEND` re-runs this test binary as a child with that one test selected.

#[macro_use]
mod common;

#[path = "common/child.rs"]
mod child;

use child::{in_child, is_child};
use parray_runtime::devices::{backend, cuda_context, Backend};
use parray_runtime::{Array, Error};

flat_types! {
    M = Dmem f32 [4];
    P = Paged f32 [4];
    D = Dmem f32 [2];
    PINNED = Pinned f32 [4];
}

#[test]
fn auto_uses_the_gpu_exactly_when_there_is_one() {
    if std::env::var("PARRAY_BACKEND").is_ok_and(|v| v != "auto") {
        eprintln!("skipped: PARRAY_BACKEND is set for this run");
        return;
    }
    let want = if cuda_context().is_some() {
        Backend::Cuda
    } else {
        Backend::Emulate
    };
    assert_eq!(backend().unwrap(), want);
}

#[test]
fn forced_cuda_without_a_gpu_is_a_clear_error() {
    if !is_child() {
        if cuda_context().is_some() {
            eprintln!("skipped: this machine has a CUDA device");
            return;
        }
        in_child("forced_cuda_without_a_gpu_is_a_clear_error", "cuda");
        return;
    }
    let err = backend().unwrap_err();
    assert!(matches!(err, Error::CudaUnavailable { .. }), "{err:?}");
    let msg = err.to_string();
    assert!(
        msg.starts_with("parray: no CUDA driver or device: PARRAY_BACKEND=cuda, but "),
        "{msg}"
    );
    // dmem needs the backend, so it fails the same way; host kinds do not.
    let dmem = Array::<M>::new().unwrap_err();
    assert_eq!(dmem.to_string(), msg);
    Array::<P>::new().unwrap();
}

#[test]
fn forced_emulation_emulates() {
    if !is_child() {
        in_child("forced_emulation_emulates", "emulate");
        return;
    }
    assert_eq!(backend().unwrap(), Backend::Emulate);
    // dmem is host memory under the emulation, whatever the machine.
    let d = Array::<D>::new().unwrap();
    assert_eq!(d.ptr().device_address(), None);
}

#[test]
fn unknown_backend_is_rejected() {
    if !is_child() {
        in_child("unknown_backend_is_rejected", "opencl");
        return;
    }
    let err = backend().unwrap_err();
    assert_eq!(
        err.to_string(),
        "parray: PARRAY_BACKEND=\"opencl\" is not one of cuda, emulate, auto"
    );
}

#[test]
fn fallback_notices_are_said_once() {
    if !is_child() {
        if cuda_context().is_some() {
            eprintln!("skipped: this machine has a CUDA device");
            return;
        }
        let stderr = in_child("fallback_notices_are_said_once", "auto");
        for line in [
            "parray: no CUDA device; cuda thread arrays run on the CPU emulator",
            "parray: no CUDA driver; pinned memory is ordinary host memory",
        ] {
            assert_eq!(stderr.matches(line).count(), 1, "{line:?} in:\n{stderr}");
        }
        return;
    }
    for _ in 0..3 {
        assert_eq!(backend().unwrap(), Backend::Emulate);
        Array::<PINNED>::new().unwrap();
    }
}
