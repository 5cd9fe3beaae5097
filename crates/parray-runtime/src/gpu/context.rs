//! Which backend runs cuda thread arrays by default: the kind of the process's devices.

use std::sync::{Arc, OnceLock};

use cudarc::driver::CudaContext;

use crate::error::{Error, Result};
use crate::gpu::device::{open_cuda, Device};

/// What runs the body of a cuda detour on the process's default devices
/// ([`Device::nth`], [`Device::current`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// NVRTC-compiled kernels on the GPUs.
    Cuda,
    /// The CPU emulation of the grid (`gpu::emulate`), on emulated devices.
    Emulate,
}

/// The backend, chosen once per process from `PARRAY_BACKEND` (`cuda`, `emulate`, or
/// unset/`auto`: cuda when a driver and GPU 0 are present, else the emulation, said
/// once on stderr).
pub fn backend() -> Result<Backend> {
    static BACKEND: OnceLock<Result<Backend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let choice = std::env::var("PARRAY_BACKEND").unwrap_or_default();
            match choice.as_str() {
                "cuda" => open_cuda(0)
                    .map(|_| Backend::Cuda)
                    .map_err(|reason| Error::CudaUnavailable {
                        reason: format!("PARRAY_BACKEND=cuda, but {reason}"),
                    }),
                "emulate" => Ok(Backend::Emulate),
                "" | "auto" => Ok(match open_cuda(0) {
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

/// The context of GPU 0, when a driver and a GPU are present, whatever the backend: what
/// pins pinned memory when the current device is emulated, and a way to ask whether the
/// machine has a GPU. For a given device, [`Device::context`].
pub fn cuda_context() -> Option<Arc<CudaContext>> {
    Device::cuda(0).ok()?.context().cloned()
}
