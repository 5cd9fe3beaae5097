//! Timing device work as the device sees it.

use std::fmt;
use std::time::Instant;

use cudarc::driver::sys::CUevent_flags;

use crate::devices::device::Device;
use crate::error::{Error, Result};

/// A time [`time_ms`] measured: milliseconds, and whether the device was the CPU
/// emulation, whose work is timed on the host clock (the CPU's time for the emulated
/// grid, which says nothing about a GPU's). It shows which: `1.234 ms` for a GPU,
/// `1.234 ms (emulated)` for the emulation (3 decimals, or the format's precision:
/// `{:.1}`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Timing {
    pub ms: f64,
    pub emulated: bool,
}

impl Timing {
    pub fn seconds(self) -> f64 {
        self.ms / 1e3
    }

    /// What follows the number when the time is shown, after its unit: ` (emulated)` for
    /// the emulation's, nothing for a GPU's; for a figure derived from the time (a rate)
    /// to say the same.
    pub fn note(self) -> &'static str {
        if self.emulated {
            " (emulated)"
        } else {
            ""
        }
    }
}

impl fmt::Display for Timing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let digits = f.precision().unwrap_or(3);
        write!(f, "{:.digits$} ms{}", self.ms, self.note())
    }
}

/// [`time_ms_on`] the calling thread's current device.
pub fn time_ms(f: impl FnMut() -> Result<()>) -> Result<Timing> {
    time_ms_on(&Device::current()?, f)
}

/// How long `f` takes on `device`: between CUDA events recorded around it on the device's
/// stream for a GPU (so only that device's work counts), on the host clock for an emulated
/// device (a [`Timing`] that says so).
pub fn time_ms_on(device: &Device, mut f: impl FnMut() -> Result<()>) -> Result<Timing> {
    let Some(stream) = device.stream() else {
        let start = Instant::now();
        f()?;
        return Ok(Timing {
            ms: start.elapsed().as_secs_f64() * 1e3,
            emulated: true,
        });
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
    Ok(Timing {
        ms: ms as f64,
        emulated: false,
    })
}
