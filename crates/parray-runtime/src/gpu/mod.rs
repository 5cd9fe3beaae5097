//! cuda thread arrays: devices and the backend, NVRTC compilation, launches, and the CPU
//! emulation.

pub mod cublas;
pub mod cufft;
pub mod device;
pub mod emulate;
pub mod jit;
pub mod launch;
pub mod timing;

pub use device::{backend, cuda_context, Backend, Device, DeviceId};
pub use launch::{detour_cuda, detour_cuda_blocks, KernelArg, KernelValue, Launch};
pub use timing::{time_ms, time_ms_on};
