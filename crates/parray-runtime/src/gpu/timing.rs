//! Timing device work as the device sees it.

use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;

use super::context::{backend, cuda, Backend};
use crate::error::{Error, Result};

/// Milliseconds that `f` takes: between CUDA events recorded around it on the runtime's
/// stream when the backend is cuda, on the host clock under the emulation.
pub fn time_ms(mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    if backend()? == Backend::Emulate {
        let start = Instant::now();
        f()?;
        return Ok(start.elapsed().as_secs_f64() * 1e3);
    }
    let cuda = cuda().ok_or_else(|| Error::CudaUnavailable {
        reason: "the cuda backend lost its device".into(),
    })?;
    let driver = |operation: &'static str| {
        move |e: cudarc::driver::DriverError| Error::Driver {
            type_name: "timer",
            operation,
            reason: e.to_string(),
        }
    };
    let start = cuda
        .stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(driver("recording the start event"))?;
    f()?;
    let end = cuda
        .stream
        .record_event(Some(CUevent_flags::CU_EVENT_DEFAULT))
        .map_err(driver("recording the end event"))?;
    end.synchronize()
        .map_err(driver("waiting for the end event"))?;
    let ms = start
        .elapsed_ms(&end)
        .map_err(driver("reading the events"))?;
    Ok(ms as f64)
}
