//! cuda detours. Tests without `#[ignore]` run on the backend at hand (the CPU emulation
//! on a machine without a GPU); the ignored ones need a GPU:
//! `PARRAY_BACKEND=cuda cargo test -p parray-runtime --test cuda -- --include-ignored`.

#[macro_use]
mod common;

use parray_runtime::devices::{backend, Backend};
use parray_runtime::exec::launch::{detour_cuda, Launch};
use parray_runtime::exec::CudaGrid;
use parray_runtime::{Array, DataType, DetourSite, Error, Ptr, PtrMut, Result, ThreadId};

flat_types! {
    V1000 = Dmem f32 [1000];
    V300 = Dmem f32 [300];
    V4 = Dmem f32 [4];
    V2 = Dmem f32 [2];
    V8 = Dmem f32 [8];
    H = Pinned f32 [4];
}

fn launch(kernel: &'static str, source: String, grid: u32, block: u32) -> Launch {
    Launch {
        kernel,
        source: source.into(),
        shape: CudaGrid::new([grid, 1, 1], [block, 1, 1]),
        shared_bytes: 0,
        checked: None,
        hip_source: None,
        constants: &[],
        tma: Vec::new(),
        site: SITE,
    }
}

/// The site every launch of these tests claims.
const SITE: &DetourSite = &DetourSite {
    array: "TA",
    file: "tests/cuda.rs",
    line: 1,
};

fn dmem<T: DataType<Elem = f32>>(values: &[f32]) -> Array<T> {
    let mut b = Array::new().unwrap();
    b.copy_from_slice(values).unwrap();
    b
}

/// `c[i] = a[i] + b[i]` for `i < n`, in blocks of `block` threads.
fn vector_add(a: Ptr<f32>, b: Ptr<f32>, c: PtrMut<f32>, n: usize, block: u32) -> Result<()> {
    common::vector_add(SITE, block, [a, b], c, n, &Default::default())
}

fn ramp(n: usize, step: f32) -> Vec<f32> {
    (0..n).map(|i| step * i as f32).collect()
}

#[test]
fn vector_add_runs_on_the_backend() {
    const N: usize = 1000;
    let (a, b, mut c) = (
        dmem::<V1000>(&ramp(N, 1.0)),
        dmem::<V1000>(&ramp(N, 0.5)),
        dmem::<V1000>(&[0.0; N]),
    );
    vector_add(a.ptr(), b.ptr(), c.ptr_mut(), N, 128).unwrap();
    assert_eq!(c.to_vec().unwrap(), ramp(N, 1.5));
}

#[test]
fn kernels_receive_pointer_offsets() {
    const N: usize = 300;
    let (a, b, mut c) = (
        dmem::<V300>(&ramp(N, 1.0)),
        dmem::<V300>(&ramp(N, 2.0)),
        dmem::<V300>(&[-1.0; N]),
    );
    // c[100 + i] = a[10 + i] + b[i] for i < 150
    vector_add(&a + 10, b.ptr(), c.ptr_mut() + 100, 150, 64).unwrap();
    let got = c.to_vec().unwrap();
    for (i, &v) in got.iter().enumerate() {
        let want = if (100..250).contains(&i) {
            (i - 90) as f32 + 2.0 * (i - 100) as f32
        } else {
            -1.0
        };
        assert_eq!(v, want, "c[{i}]");
    }
}

#[test]
fn impossible_blocks_are_refused_with_the_detour_site() {
    let (a, b, mut c) = (
        dmem::<V4>(&[0.0; 4]),
        dmem::<V4>(&[0.0; 4]),
        dmem::<V4>(&[0.0; 4]),
    );
    let err = vector_add(a.ptr(), b.ptr(), c.ptr_mut(), 4096, 2048).unwrap_err();
    assert!(
        matches!(&err, Error::Launch { kernel, site: SITE, .. } if kernel == "vadd"),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.starts_with("parray: TA, detour at tests/cuda.rs:1: launch of kernel vadd failed"),
        "{msg}"
    );
    assert!(msg.contains("2048"), "{msg}");
}

#[test]
fn an_emulated_panic_names_the_thread_and_the_line() {
    if backend().unwrap() != Backend::Emulate {
        eprintln!("skipped: the emulation is not the backend here");
        return;
    }
    let l = launch("boom", String::new(), 3, 32);
    let line = line!() + 5;
    // SAFETY: no arguments; the emulation runs the closure only.
    let err = unsafe {
        detour_cuda(&l, &[], |t| {
            if t.block_id() == 2 && t.thread_id() == 5 {
                panic!("emulated failure");
            }
        })
    }
    .unwrap_err();
    let at = format!("{}:{line}:17", file!());
    assert!(
        matches!(&err, Error::ThreadPanicked { site: SITE, thread, at: Some(a), .. }
            if *thread == ThreadId::Cuda { tid: 69, block: [2, 0, 0], thread: [5, 0, 0] }
                && *a == at),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!(
            "parray: TA, detour at tests/cuda.rs:1: thread 69 (block (2, 0, 0), thread (5, 0, 0)) \
             panicked at {at}: emulated failure"
        )
    );
}

fn gpu() {
    assert_eq!(
        backend().unwrap(),
        Backend::Cuda,
        "run the ignored tests with PARRAY_BACKEND=cuda on a machine with a GPU"
    );
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_buffers_are_device_memory() {
    gpu();
    let mut d = dmem::<V2>(&[1.0, 2.0]);
    let base = d.ptr().device_address().expect("dmem has a device address");
    assert_eq!((d.ptr() + 1).device_address(), Some(base + 4));
    assert!(matches!(d.as_slice(), Err(Error::NotHostMemory { .. })));
    // Host memory cannot be a kernel argument.
    let (host, other) = (Array::<H>::new().unwrap(), dmem::<V2>(&[0.0; 2]));
    let err = vector_add(host.ptr(), other.ptr(), d.ptr_mut(), 2, 32).unwrap_err();
    assert_eq!(
        err.to_string(),
        "parray: kernel argument H is pinned memory; a cuda kernel takes dmem"
    );
}

/// Two kernels of one `'static` source: each launch runs the kernel it names (the cache of
/// static sources once gave the first compiled for both).
#[test]
#[ignore = "needs a GPU"]
fn gpu_one_static_source_holds_two_kernels() {
    gpu();
    const TWO: &str = "extern \"C\" __global__ void set_one(float* x) { x[threadIdx.x] = 1.0f; }\n\
                       extern \"C\" __global__ void set_two(float* x) { x[threadIdx.x] = 2.0f; }\n";
    let mut x = dmem::<V4>(&[0.0; 4]);
    for (kernel, value) in [("set_one", 1.0), ("set_two", 2.0), ("set_one", 1.0)] {
        let l = Launch {
            source: std::borrow::Cow::Borrowed(TWO),
            ..launch(kernel, String::new(), 1, 4)
        };
        // SAFETY: both kernels take one float pointer with 4 elements.
        unsafe { detour_cuda(&l, &[&x.ptr_mut()], |_| unreachable!()) }.unwrap();
        assert_eq!(x.to_vec().unwrap(), vec![value; 4], "{kernel}");
    }
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_nvrtc_errors_carry_the_log_and_source() {
    gpu();
    let source = "extern \"C\" __global__ void broken() { undeclared = 1; }";
    let l = launch("broken", source.into(), 1, 1);
    // SAFETY: the kernel never compiles.
    let err = unsafe { detour_cuda(&l, &[], |_| {}) }.unwrap_err();
    let Error::Nvrtc {
        kernel,
        log,
        source_code,
    } = &err
    else {
        panic!("unexpected {err:?}");
    };
    assert_eq!((kernel.as_str(), source_code.as_str()), ("broken", source));
    assert!(log.contains("undeclared"), "{log}");
}

#[test]
#[ignore = "needs a GPU"]
fn gpu_kernels_are_cached_on_disk() {
    gpu();
    let dir = std::env::var_os("PARRAY_CACHE_DIR")
        .map(std::path::PathBuf::from)
        .expect("set PARRAY_CACHE_DIR for this test");
    // A kernel no earlier run compiled: the pid makes its name unique.
    let name: &'static str = Box::leak(format!("vadd_{}", std::process::id()).into_boxed_str());
    let (a, c) = (dmem::<V8>(&[1.0; 8]), dmem::<V8>(&[0.0; 8]));
    let n = 8usize;
    let l = launch(name, common::VADD.replace("vadd", name), 1, 8);
    for _ in 0..2 {
        // SAFETY: the arguments match the kernel's parameters.
        unsafe { detour_cuda(&l, &[&a, &a, &c, &n], |_| unreachable!()) }.unwrap();
    }
    assert_eq!(c.to_vec().unwrap(), [2.0; 8]);
    let entries: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .filter(|text| text.contains(&format!(".entry {name}")))
        .collect();
    assert_eq!(entries.len(), 1, "one entry for {name} in {dir:?}");
    assert!(
        entries[0].starts_with("parray-ptx-v1 "),
        "{}",
        &entries[0][..40]
    );
}
