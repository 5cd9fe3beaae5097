//! What a GPU refuses, the emulation refuses: host code indexing dmem, and host memory as
//! a kernel argument. Each case runs in a child with `PARRAY_BACKEND=emulate` (the backend
//! is chosen once per process).

#[macro_use]
mod common;

#[path = "common/child.rs"]
mod child;

use std::panic;
use std::sync::atomic::{AtomicUsize, Ordering};

use child::{in_child, in_child_with, is_child};
use parray_runtime::devices::{backend, Backend};
use parray_runtime::exec::launch::{detour_cuda, detour_cuda_blocks, Launch};
use parray_runtime::exec::CudaGrid;
use parray_runtime::{Access, AccessMut, Array, DataType, DetourSite, Error};

flat_types! {
    D = Dmem f32 [4];
    D64 = Dmem f32 [64];
    H = Paged f32 [64];
    HP = Pinned f32 [64];
}

/// The message of host code touching dmem, on a GPU and under the emulation alike.
const REFUSED: &str = "parray: D is dmem memory on the GPU; host code cannot access it";
const REFUSED64: &str = "parray: D64 is dmem memory on the GPU; host code cannot access it";

fn launch(block: u32) -> Launch {
    Launch {
        kernel: "k",
        source: "".into(),
        shape: CudaGrid::new([2, 1, 1], [block, 1, 1]),
        shared_bytes: 0,
        checked: None,
        hip_source: None,
        constants: &[],
        tma: Vec::new(),
        site: &DetourSite {
            array: "CT",
            file: "tests/one_meaning.rs",
            line: 1,
        },
    }
}

/// The message of the panic of `f`, which must panic.
fn panic_message(f: impl FnOnce() + panic::UnwindSafe) -> String {
    let payload = panic::catch_unwind(f).expect_err("must panic");
    payload
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_else(|| payload.downcast_ref::<&str>().unwrap().to_string())
}

#[test]
fn host_code_cannot_index_emulated_dmem() {
    if !is_child() {
        in_child("host_code_cannot_index_emulated_dmem", "emulate");
        return;
    }
    assert_eq!(backend().unwrap(), Backend::Emulate);
    let mut d = Array::<D>::new().unwrap();
    d.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(
        panic_message(|| {
            d.load(0);
        }),
        REFUSED
    );
    assert_eq!(
        panic_message(|| {
            let _ = d[1];
        }),
        REFUSED
    );
    let p = d.ptr() + 1;
    assert_eq!(
        panic_message(|| {
            p.load(1);
        }),
        REFUSED
    );
    let mut d = panic::AssertUnwindSafe(d);
    let w = d.ptr_mut() + 1;
    assert_eq!(panic_message(|| w.store(0, 5.0)), REFUSED);
    assert_eq!(
        panic_message(|| {
            w.atomic_add(0, 1.0);
        }),
        REFUSED
    );
    assert!(matches!(d.as_slice(), Err(Error::NotHostMemory { .. })));
    // Copies are the way in and out, and they saw no write.
    assert_eq!(d.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
}

#[test]
fn only_the_kernels_view_of_an_argument_reaches_dmem() {
    if !is_child() {
        in_child(
            "only_the_kernels_view_of_an_argument_reaches_dmem",
            "emulate",
        );
        return;
    }
    let mut d = Array::<D64>::new().unwrap();
    let p = d.ptr_mut();
    // SAFETY: one dmem argument, as the closure uses it, within its extent.
    unsafe {
        detour_cuda(&launch(32), &[&p], |t| {
            let a = p.in_kernel();
            a.store(t.global_id(), t.global_id() as f32);
        })
    }
    .unwrap();
    assert_eq!(
        d.to_vec().unwrap(),
        (0..64).map(|i| i as f32).collect::<Vec<_>>()
    );
    // A body that uses a dmem pointer without the kernel's view fails as on a GPU.
    let p = d.ptr_mut();
    // SAFETY: as above.
    let err = unsafe {
        detour_cuda(&launch(32), &[&p], |t| {
            p.store(t.global_id(), 0.0);
        })
    }
    .unwrap_err();
    assert!(
        matches!(&err, Error::ThreadPanicked { message, .. } if message == REFUSED64),
        "{err:?}"
    );
}

#[test]
fn host_memory_arguments_are_refused_before_running() {
    if !is_child() {
        in_child(
            "host_memory_arguments_are_refused_before_running",
            "emulate",
        );
        return;
    }
    let ran = AtomicUsize::new(0);
    refused::<H>(&ran);
    refused::<HP>(&ran);
    assert_eq!(ran.into_inner(), 0);
}

/// A launch with an argument of the host type `T` is refused before running.
fn refused<T: DataType<Elem = f32>>(ran: &AtomicUsize) {
    {
        let mem = T::MEM.unwrap();
        let h = Array::<T>::new().unwrap();
        let d = Array::<D64>::new().unwrap();
        let n = 64usize;
        // SAFETY: the launch is refused before anything runs.
        let errs = unsafe {
            [
                detour_cuda(&launch(32), &[&d, &h, &n], |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                }),
                detour_cuda_blocks(&launch(32), &[&h.ptr()], |_| {
                    ran.fetch_add(1, Ordering::Relaxed);
                }),
            ]
        };
        for err in errs {
            let err = err.unwrap_err();
            assert!(
                matches!(err, Error::NotDeviceMemory { type_name, mem: m } if m == mem && type_name == T::NAME),
                "{err:?}"
            );
            assert_eq!(
                err.to_string(),
                format!(
                    "parray: kernel argument {} is {mem} memory; a cuda kernel takes dmem",
                    T::NAME
                )
            );
        }
    }
}

/// `PARRAY_DUMP_SOURCE=1` shows the kernel under the emulation too, once, saying that the
/// CPU runs the same body.
#[test]
fn dumped_sources_under_the_emulation() {
    if !is_child() {
        let stderr = in_child_with(
            "dumped_sources_under_the_emulation",
            "emulate",
            &[("PARRAY_DUMP_SOURCE", "1")],
        );
        let line = "parray: source of kernel k (emulated: the CPU runs the same body):";
        assert_eq!(stderr.matches(line).count(), 1, "{stderr}");
        assert!(stderr.contains("__global__ void k()"), "{stderr}");
        return;
    }
    let mut launch = launch(32);
    launch.source = "extern \"C\" __global__ void k() {}".into();
    for _ in 0..2 {
        // SAFETY: no arguments; the emulation runs the closure only.
        unsafe { detour_cuda(&launch, &[], |_| {}) }.unwrap();
    }
}
