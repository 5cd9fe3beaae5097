//! A GPU's launch limits, read from the driver once per device: what every launch on it
//! is checked against (`LaunchLimits::admits`, the check a declaration gets against CUDA's).

use cudarc::driver::sys::CUdevice_attribute;
use parray_layout::grid::LaunchLimits;

use crate::devices::device::CudaDevice;

impl CudaDevice {
    /// The GPU's launch limits, read on the first launch; the error says why they could
    /// not be read.
    pub(crate) fn limits(&self) -> std::result::Result<&LaunchLimits, String> {
        self.limits
            .get_or_init(|| {
                use CUdevice_attribute::*;
                let get = |a| {
                    self.ctx
                        .attribute(a)
                        .map(|v| v as u64)
                        .map_err(|e| format!("reading the device's limits: {e}"))
                };
                Ok(LaunchLimits {
                    name: "the device",
                    block: [
                        get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                        get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                        get(CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
                    ],
                    block_threads: get(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
                    grid: [
                        get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                        get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                        get(CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
                    ],
                    axis_threads: u64::MAX,
                    shared_bytes: get(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
                })
            })
            .as_ref()
            .map_err(String::clone)
    }
}
