//! What a kernel receives: each argument as the driver takes it, a handle's element as
//! its device address (or, on an emulated device, its host address) and a scalar as
//! itself; anything but dmem is refused as a pointer, under every backend.

use crate::device_id::DeviceId;
use crate::error::{Error, Result};
use crate::mem::elem::{Element, FieldArrays};
use crate::mem::ptr::{Ptr, PtrMut};

/// A kernel argument as the driver receives it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum KernelValue {
    F32(f32),
    F64(f64),
    I32(i32),
    U32(u32),
    I64(i64),
    /// Also `usize`.
    U64(u64),
    /// An element of dmem: its address on `device` (under the emulation, a host address).
    Pointer {
        address: u64,
        device: DeviceId,
    },
    /// An element of a record array kept one array per field (SPEC 2.3) on `device`: its
    /// storage's start, the element and where the fields are; the kernel receives the
    /// struct of the element's fields' addresses (`Particle_soa`).
    Fields {
        start: u64,
        index: usize,
        fields: FieldArrays,
        device: DeviceId,
    },
}

/// What can be passed to a generated kernel: dmem buffers and pointers (as device
/// addresses) and scalars.
pub trait KernelArg {
    /// The value the kernel receives; an error for anything but dmem, under every backend.
    fn kernel_value(&self) -> Result<KernelValue>;
}

macro_rules! handle_args {
    ($($handle:ident),*) => {$(
        impl<T: Element> KernelArg for $handle<'_, T> {
            fn kernel_value(&self) -> Result<KernelValue> {
                // Only arrays' dmem has a device (not the emulator's shared memory).
                let device = match self.device() {
                    Some(device) if self.mem().on_device() => device,
                    _ => {
                        return Err(Error::NotDeviceMemory {
                            type_name: self.type_name(),
                            mem: self.mem(),
                        })
                    }
                };
                if let Some((start, index, fields)) = self.kernel_fields() {
                    return Ok(KernelValue::Fields { start, index, fields, device });
                }
                // On an emulated device the device is the host: its addresses are host
                // addresses.
                let address = self
                    .device_address()
                    .unwrap_or(self.host_address().addr() as u64);
                Ok(KernelValue::Pointer { address, device })
            }
        }
    )*};
}

handle_args!(Ptr, PtrMut);

macro_rules! scalar_args {
    ($($t:ty => $variant:ident as $as:ty),* $(,)?) => {$(
        impl KernelArg for $t {
            fn kernel_value(&self) -> Result<KernelValue> {
                Ok(KernelValue::$variant(*self as $as))
            }
        }
    )*};
}

scalar_args! {
    f32 => F32 as f32,
    f64 => F64 as f64,
    i32 => I32 as i32,
    u32 => U32 as u32,
    i64 => I64 as i64,
    u64 => U64 as u64,
    usize => U64 as u64,
}
