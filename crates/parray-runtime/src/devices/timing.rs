//! Timing device work as the device sees it.

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;

use crate::devices::device::Device;
use crate::error::{Error, Result};

/// [`time_ms_on`] the calling thread's current device.
pub fn time_ms(f: impl FnMut() -> Result<()>) -> Result<f64> {
    time_ms_on(&Device::current()?, f)
}

/// Milliseconds that `f` takes on `device`: between CUDA events recorded around it on the
/// device's stream for a GPU (so only that device's work counts), on the host clock for
/// an emulated device.
pub fn time_ms_on(device: &Device, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let Some(stream) = device.stream() else {
        let start = Instant::now();
        f()?;
        return Ok(start.elapsed().as_secs_f64() * 1e3);
    };
    let driver = |operation| move |e| Error::driver("timer", operation, e);
    let start = stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(driver("recording the start event"))?;
    f()?;
    let end = stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(driver("recording the end event"))?;
    end.synchronize()
        .map_err(driver("waiting for the end event"))?;
    let ms = start
        .elapsed_ms(&end)
        .map_err(driver("reading the events"))?;
    Ok(ms as f64)
}
