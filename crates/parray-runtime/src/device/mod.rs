//! Layer 1, devices: a CUDA GPU or an emulated one as a value (its context, stream and
//! kernels), the process's backend, NVRTC and its caches, and timing on a device.

pub mod device;
pub mod jit;
pub mod timing;

pub use device::{backend, cuda_context, Backend, Device, DeviceId};
pub use timing::{time_ms, time_ms_on};
