//! Which backend runs cuda thread arrays, and the one CUDA context of the process.

use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use cudarc::driver::{CudaContext, CudaStream};

use crate::error::{Error, Result};

/// What runs the body of a cuda detour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// NVRTC-compiled kernels on GPU 0.
    Cuda,
    /// The CPU emulation of the grid (`gpu::emulate`).
    Emulate,
}

/// The process's CUDA device 0: its context and the one stream every copy and launch
/// uses, so that they are ordered without events.
pub(crate) struct Cuda {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
}

/// The backend, chosen once per process from `PARRAY_BACKEND` (`cuda`, `emulate`, or
/// unset/`auto`: cuda when a driver and a device are present, else the emulation, said
/// once on stderr).
pub fn backend() -> Result<Backend> {
    static BACKEND: OnceLock<Result<Backend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let choice = std::env::var("PARRAY_BACKEND").unwrap_or_default();
            match choice.as_str() {
                "cuda" => probe()
                    .map(|_| Backend::Cuda)
                    .map_err(|reason| Error::CudaUnavailable {
                        reason: format!("PARRAY_BACKEND=cuda, but {reason}"),
                    }),
                "emulate" => Ok(Backend::Emulate),
                "" | "auto" => Ok(match probe() {
                    Ok(_) => Backend::Cuda,
                    Err(_) => {
                        eprintln!("parray: no CUDA device; cuda thread arrays run on the CPU emulator");
                        Backend::Emulate
                    }
                }),
                _ => Err(Error::BadBackend { value: choice }),
            }
        })
        .clone()
}

/// The context of CUDA device 0, when a driver and a device are present (whatever the
/// backend: pinned memory uses it under the emulation too).
pub fn cuda_context() -> Option<Arc<CudaContext>> {
    cuda().map(|c| c.ctx.clone())
}

/// Device 0 with its stream, created on first use.
pub(crate) fn cuda() -> Option<&'static Cuda> {
    probe().ok()
}

/// Loads the driver and opens device 0, once; the error says why there is no GPU.
fn probe() -> std::result::Result<&'static Cuda, &'static str> {
    static CUDA: OnceLock<std::result::Result<Cuda, String>> = OnceLock::new();
    CUDA.get_or_init(|| {
        // SAFETY: only tries to dlopen the driver library.
        if !unsafe { cudarc::driver::sys::is_culib_present() } {
            return Err("the CUDA driver library (libcuda) could not be loaded".into());
        }
        // cudarc panics when a driver symbol is missing (a driver older than its bindings).
        let ctx = panic::catch_unwind(AssertUnwindSafe(|| CudaContext::new(0)))
            .map_err(|_| "the CUDA driver library lacks a required function".to_string())?
            .map_err(|e| format!("CUDA device 0 could not be opened: {e}"))?;
        // SAFETY: the runtime issues all its work on one stream, so cudarc's per-buffer
        // events (for ordering across streams) are not needed; raw kernel arguments
        // bypass them anyway.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Cuda { ctx, stream })
    })
    .as_ref()
    .map_err(String::as_str)
}
