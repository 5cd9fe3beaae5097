//! Which device some memory is on, as a plain value: what handles, kernel arguments and
//! errors carry, below every use of a device itself.

use std::fmt;

/// Which device some memory is on, as a `Copy` value: what a [`crate::Ptr`] (itself
/// `Copy`) carries instead of a [`Device`](crate::Device).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeviceId {
    pub(crate) emulated: bool,
    pub(crate) ordinal: usize,
}

impl DeviceId {
    /// The device's number among those of its kind.
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// Whether the device is emulated on the CPU.
    pub fn is_emulated(&self) -> bool {
        self.emulated
    }
}

impl fmt::Display for DeviceId {
    /// `cuda:1` or `emulated:0`, as messages name devices.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = if self.emulated { "emulated" } else { "cuda" };
        write!(f, "{kind}:{}", self.ordinal)
    }
}
