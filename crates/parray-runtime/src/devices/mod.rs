//! Layer 1, devices: a CUDA GPU or an emulated one as a value (its context, stream,
//! kernels and launch limits), the process's backend, NVRTC and its caches, and timing on
//! a device. The bottom layer: memory is allocated on a device.

pub mod device;
pub(crate) mod jit;
mod limits;
pub mod tensor_map;
pub mod timing;

pub use crate::device_id::DeviceId;
pub(crate) use device::launch_blocking;
pub use device::{backend, checked_sync_source, checks_sync, cuda_context, Backend, Device};
pub use timing::{time_ms, time_ms_on, Timing};
