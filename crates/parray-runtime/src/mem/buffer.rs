//! `Buffer<T>`: the untyped storage of one `#create`d array, freed when dropped
//! (`#destroy`); [`crate::Array`] gives it its parray type.

use std::alloc::{self, Layout};
use std::sync::Once;

use cudarc::driver::{sys, CudaSlice, DevicePtr, DevicePtrMut, PinnedHostSlice};
use parray_layout::kinds::SOA_ALIGN;
use parray_layout::{ElemType, MemKind};

use crate::devices::device::{cuda_context, on_gpu, CudaDevice, Device};
use crate::error::{Error, Result};
use crate::mem::elem::{load_fields, store_fields, Element, FieldArrays};
use crate::mem::ptr::Raw;

/// Host allocations are aligned to a cache line, so that vector loads and the paper's
/// tiled loops never straddle lines at the start of an array.
const HOST_ALIGN: usize = 64;

/// How a buffer keeps its elements: whole, one after another, or (a record array's, SPEC
/// 2.3) one array per field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Arrangement {
    Whole,
    Fields,
}

/// Owned, zero-initialised storage for `extent` elements of one parray type.
pub(crate) struct Buffer<T: Element> {
    /// Element 0; every handle starts from it.
    raw: Raw<T>,
    /// Elements of storage: the extent, or those the field arrays of SoA storage take.
    len: usize,
    storage: Storage<T>,
    /// The device of dmem ([`Buffer::device`]); `None` for host memory.
    device: Option<Device>,
}

// SAFETY: the buffer owns its elements as a `Vec` does: moving it to another thread moves
// the ownership, and through `&Buffer` elements are only read.
unsafe impl<T: Element> Send for Buffer<T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for Buffer<T> {}

/// Who frees the memory.
enum Storage<T> {
    /// `std::alloc` memory with this layout (nothing to free when the size is 0).
    Host(Layout),
    /// Page-locked memory from the CUDA driver, held to be freed on drop.
    Pinned { _owner: PinnedHostSlice<T> },
    /// GPU global memory.
    Device(CudaSlice<T>),
}

impl<T: Element> Buffer<T> {
    /// Allocates `extent` zeroed elements of `mem` memory for the type `type_name`, dmem
    /// on the calling thread's current device ([`Device::current`]).
    ///
    /// `Paged` is 64-byte-aligned host memory; `Pinned` is page-locked when a CUDA driver
    /// is present (else host memory, said once on stderr); `Dmem` is GPU memory on a GPU
    /// and host memory on an emulated device. `Smem`/`Rmem` are rejected: they exist only
    /// inside cuda detour bodies.
    pub(crate) fn new(
        type_name: &'static str,
        mem: MemKind,
        extent: usize,
        arrangement: Arrangement,
    ) -> Result<Self> {
        let device = match mem {
            MemKind::Dmem | MemKind::Cmem => Some(Device::current()?),
            // Host memory is on no device; pinned memory only prefers the current one.
            MemKind::Pinned => Device::current().ok(),
            MemKind::Paged | MemKind::Smem | MemKind::Rmem => None,
        };
        Self::allocate(type_name, mem, extent, arrangement, device)
    }

    /// [`Buffer::new`] on `device`: dmem goes there, and pinned memory is pinned through
    /// its context when it is a GPU (the memory is usable from every device either way).
    pub(crate) fn new_on(
        type_name: &'static str,
        mem: MemKind,
        extent: usize,
        arrangement: Arrangement,
        device: &Device,
    ) -> Result<Self> {
        Self::allocate(type_name, mem, extent, arrangement, Some(device.clone()))
    }

    /// The device of dmem; `None` for host memory (`paged`, `pinned`).
    pub(crate) fn device(&self) -> Option<&Device> {
        self.device.as_ref()
    }

    fn allocate(
        type_name: &'static str,
        mem: MemKind,
        extent: usize,
        arrangement: Arrangement,
        device: Option<Device>,
    ) -> Result<Self> {
        let fail = |reason: String| alloc_error::<T>(type_name, mem, extent, reason);
        // Checked here once: cudarc's allocators would panic on an overflowing size.
        let overflow = || fail("size overflows".into());
        let bytes = match (arrangement, T::ELEM) {
            (Arrangement::Fields, ElemType::Record(r)) => {
                let end = u128::from(r.field_bytes()) * extent as u128
                    + u128::from(mem.soa_align()) * r.def().fields.len() as u128;
                // Within `u64` (checked), the arrays' arithmetic cannot overflow.
                u64::try_from(end).map_err(|_| overflow())?;
                r.soa_bytes(extent as u64, mem.soa_align())
                    .next_multiple_of(size_of::<T>() as u64)
            }
            _ => (extent as u64)
                .checked_mul(size_of::<T>() as u64)
                .ok_or_else(overflow)?,
        };
        let bytes = usize::try_from(bytes)
            .ok()
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(overflow)?;
        // Elements of storage: the extent, or as many as the field arrays' bytes take.
        let len = bytes / size_of::<T>().max(1);
        let align = match arrangement {
            Arrangement::Whole => HOST_ALIGN,
            Arrangement::Fields => SOA_ALIGN as usize,
        };
        let host = || host::<T>(bytes, align).ok_or_else(|| fail("out of memory".into()));
        let (base, dev, storage) = match mem {
            MemKind::Paged => host()?,
            // The device's context when it is a GPU, else GPU 0's when there is one.
            MemKind::Pinned => match device
                .as_ref()
                .and_then(Device::context)
                .cloned()
                .or_else(cuda_context)
            {
                Some(ctx) if len > 0 => {
                    // PORTABLE (usable from every context), not cudarc's default
                    // WRITECOMBINED: host code reads pinned arrays, and write-combined
                    // memory is uncached for host reads.
                    // SAFETY: zeroed below before any use.
                    let mut slice = unsafe {
                        ctx.alloc_pinned_with_flags::<T>(len, sys::CU_MEMHOSTALLOC_PORTABLE)
                    }
                    .map_err(|e| fail(e.to_string()))?;
                    let base = slice.as_mut_ptr().map_err(|e| fail(e.to_string()))?;
                    // SAFETY: `base` points to `len` elements just allocated.
                    unsafe { base.write_bytes(0, len) };
                    (base, 0, Storage::Pinned { _owner: slice })
                }
                ctx => {
                    if ctx.is_none() {
                        static SAID: Once = Once::new();
                        SAID.call_once(|| {
                            crate::diag::note(format_args!(
                                "no CUDA driver; pinned memory is ordinary host memory"
                            ))
                        });
                    }
                    host()?
                }
            },
            MemKind::Dmem | MemKind::Cmem => match device.as_ref().and_then(Device::stream) {
                Some(stream) => {
                    let slice = stream
                        .alloc_zeros::<T>(len)
                        .map_err(|e| fail(e.to_string()))?;
                    let dev = slice.device_ptr(stream).0;
                    (std::ptr::null_mut(), dev, Storage::Device(slice))
                }
                // An emulated device's memory is the host's.
                None => host()?,
            },
            MemKind::Smem | MemKind::Rmem => return Err(Error::NotCreatable { type_name, mem }),
        };
        // Only dmem and cmem are on a device.
        let device = device.filter(|_| mem.on_device());
        Ok(Buffer {
            raw: Raw::new(
                base,
                dev,
                extent,
                type_name,
                mem,
                device.as_ref().map(Device::id),
                arrangement == Arrangement::Fields,
            ),
            len,
            storage,
            device,
        })
    }

    /// The number of elements.
    pub(crate) fn extent(&self) -> usize {
        self.raw.extent()
    }

    /// Where the storage lives.
    pub(crate) fn mem(&self) -> MemKind {
        self.raw.mem()
    }

    /// The parray type the buffer was created for.
    pub(crate) fn type_name(&self) -> &'static str {
        self.raw.type_name()
    }

    /// The elements, for host memory (`paged`, `pinned`); dmem is refused under every
    /// backend, so that host code that works under the emulation also works on a GPU.
    pub(crate) fn as_slice(&self) -> Result<&[T]> {
        self.whole("a slice of its elements")?;
        let base = self.host_base("read")?;
        // SAFETY: `extent` initialised elements owned by `self`.
        Ok(unsafe { std::slice::from_raw_parts(base, self.extent()) })
    }

    /// The elements, mutably, for host memory (see [`Buffer::as_slice`]).
    pub(crate) fn as_mut_slice(&mut self) -> Result<&mut [T]> {
        self.whole("a slice of its elements")?;
        let base = self.host_base("write")?;
        // SAFETY: as in `as_slice`, and `&mut self` excludes other borrows.
        Ok(unsafe { std::slice::from_raw_parts_mut(base, self.extent()) })
    }

    /// Copies `src` into the buffer (host to device for dmem); `src.len()` must equal the
    /// extent.
    pub(crate) fn copy_from_slice(&mut self, src: &[T]) -> Result<()> {
        if src.len() != self.extent() {
            return Err(Error::SizeMismatch {
                type_name: self.type_name(),
                expected: self.extent(),
                got: src.len(),
            });
        }
        let Some(fields) = self.raw.fields() else {
            return self.copy_prefix_from_slice(src);
        };
        // The storage's bytes, each record's fields put into their arrays, in one copy.
        let mut storage = vec![T::default(); self.len];
        for (i, v) in src.iter().enumerate() {
            // SAFETY: `storage` is the `len` elements that hold the field arrays of
            // `extent` records (`allocate`), aligned as the buffer is for every field;
            // `i` is below the extent, and `storage` is this function's alone.
            unsafe { store_fields::<T, T>(fields, storage.as_mut_ptr().cast(), i, 0, *v) }
        }
        self.copy_prefix_from_slice(&storage)
    }

    /// Copies `src` into the first `src.len()` elements of storage (at most all of it).
    pub(crate) fn copy_prefix_from_slice(&mut self, src: &[T]) -> Result<()> {
        assert!(src.len() <= self.len, "a prefix of the buffer");
        let type_name = self.type_name();
        match &mut self.storage {
            Storage::Device(slice) => {
                let stream = slice.stream().clone();
                device_op(type_name, "host-to-device copy", || {
                    stream.memcpy_htod(src, &mut slice.slice_mut(..src.len()))?;
                    stream.synchronize()
                })
            }
            Storage::Host(_) | Storage::Pinned { .. } => {
                // SAFETY: host memory of `len` elements, exclusively borrowed.
                let dst = unsafe { std::slice::from_raw_parts_mut(self.raw.base_ptr(), src.len()) };
                dst.copy_from_slice(src);
                Ok(())
            }
        }
    }

    /// The first `n` elements of `src`, in one copy of the right kind: from host memory,
    /// from a GPU to host memory, or within one GPU.
    pub(crate) fn copy_prefix_from(&mut self, src: &Buffer<T>, n: usize) -> Result<()> {
        match (src.device_slice(), self.device_slice().is_some()) {
            (None, _) => self.copy_prefix_from_slice(&src.host_elements()?[..n]),
            (Some(_), false) => {
                let values = src.to_vec()?;
                self.host_elements_mut()?[..n].copy_from_slice(&values[..n]);
                Ok(())
            }
            (Some(from), true) => {
                let cuda = same_gpu(src, self)?;
                let to = self.device_slice_mut().expect("checked: on a GPU");
                let fail = |e| Error::driver(src.type_name(), "device-to-device copy", e);
                cuda.stream
                    .memcpy_dtod(&from.slice(..n), &mut to.slice_mut(..n))
                    .map_err(fail)?;
                cuda.stream.synchronize().map_err(fail)
            }
        }
    }

    /// Copies the elements out (device to host for dmem); SoA storage's records gathered
    /// from their fields.
    pub(crate) fn to_vec(&self) -> Result<Vec<T>> {
        let storage = match &self.storage {
            Storage::Device(slice) => device_op(self.type_name(), "device-to-host copy", || {
                let stream = slice.stream();
                let v = stream.clone_dtoh(slice)?;
                stream.synchronize()?;
                Ok(v)
            })?,
            Storage::Host(_) | Storage::Pinned { .. } => {
                // SAFETY: `len` initialised host elements owned by `self`.
                unsafe { std::slice::from_raw_parts(self.raw.base_ptr(), self.len) }.to_vec()
            }
        };
        Ok(match self.raw.fields() {
            None => storage,
            Some(fields) => (0..self.extent())
                // SAFETY: `storage` is a copy of the `len` elements holding the field
                // arrays of `extent` records, aligned for every field (a `Vec<T>`, and the
                // arrays at multiples of the alignment from its start); ours alone.
                .map(|i| unsafe { load_fields::<T, T>(fields, storage.as_ptr().cast(), i, 0) })
                .collect(),
        })
    }

    /// Sets every element to `v`.
    pub(crate) fn fill(&mut self, v: T) -> Result<()> {
        match (&self.storage, self.raw.fields()) {
            (Storage::Device(_), _) | (_, Some(_)) => self.copy_from_slice(&vec![v; self.extent()]),
            (Storage::Host(_) | Storage::Pinned { .. }, None) => {
                // SAFETY: `extent` host elements, exclusively borrowed.
                unsafe { std::slice::from_raw_parts_mut(self.raw.base_ptr(), self.extent()) }
                    .fill(v);
                Ok(())
            }
        }
    }

    /// Sets every element to zero bits (each element type's zero), on a GPU by the
    /// driver's memset, ordered on the buffer's stream.
    pub(crate) fn zero(&mut self) -> Result<()> {
        let type_name = self.type_name();
        match &mut self.storage {
            Storage::Device(slice) => {
                let stream = slice.stream().clone();
                device_op(type_name, "memset", || stream.memset_zeros(slice))
            }
            Storage::Host(_) | Storage::Pinned { .. } => {
                // SAFETY: `len` host elements, exclusively borrowed; zero bits are a
                // value of every element type (`ValidAsZeroBits`).
                unsafe { self.raw.base_ptr().write_bytes(0, self.len) };
                Ok(())
            }
        }
    }

    /// The elements wherever they are host memory, the emulation's dmem included: for the
    /// runtime's own copies, which stand for the device there.
    pub(crate) fn host_elements(&self) -> Result<&[T]> {
        self.whole("copy on the host")?;
        let base = self.emulated_or_host_base()?;
        // SAFETY: `extent` initialised host elements owned by `self`, shared.
        Ok(unsafe { std::slice::from_raw_parts(base, self.extent()) })
    }

    /// [`Buffer::host_elements`], mutably.
    pub(crate) fn host_elements_mut(&mut self) -> Result<&mut [T]> {
        self.whole("copy on the host")?;
        let base = self.emulated_or_host_base()?;
        // SAFETY: as above, and `&mut self` excludes other borrows.
        Ok(unsafe { std::slice::from_raw_parts_mut(base, self.extent()) })
    }

    /// The storage's bytes wherever they are host memory, the emulation's dmem included
    /// (SoA storage's field arrays as they lie): for the runtime's own copies.
    pub(crate) fn host_bytes(&self) -> Result<&[u8]> {
        let base = self.emulated_or_host_base()?;
        // SAFETY: `len` initialised host elements owned by `self`, shared; an element has
        // no padding (`Element`), so each of its bytes is initialised.
        Ok(unsafe { std::slice::from_raw_parts(base.cast(), self.bytes()) })
    }

    /// [`Buffer::host_bytes`], mutably.
    pub(crate) fn host_bytes_mut(&mut self) -> Result<&mut [u8]> {
        let base = self.emulated_or_host_base()?;
        // SAFETY: as above, and `&mut self` excludes other borrows; any bytes written
        // make elements (`Element`: every bit pattern is a value).
        Ok(unsafe { std::slice::from_raw_parts_mut(base.cast(), self.bytes()) })
    }

    /// The bytes of storage.
    pub(crate) fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }

    /// Where the field arrays of SoA storage are; `None` for whole elements.
    pub(crate) fn fields(&self) -> Option<FieldArrays> {
        self.raw.fields()
    }

    /// An error for `operation` on SoA storage, which needs whole elements in memory.
    fn whole(&self, operation: &'static str) -> Result<()> {
        match self.raw.fields() {
            None => Ok(()),
            Some(_) => Err(Error::FieldArrays {
                type_name: self.type_name(),
                operation,
            }),
        }
    }

    fn emulated_or_host_base(&self) -> Result<*mut T> {
        match self.storage {
            Storage::Device(_) => Err(Error::NotHostMemory {
                type_name: self.type_name(),
                mem: self.mem(),
                operation: "copy on the host",
            }),
            Storage::Host(_) | Storage::Pinned { .. } => Ok(self.raw.base_ptr()),
        }
    }

    fn host_base(&self, operation: &'static str) -> Result<*mut T> {
        if self.mem().on_device() {
            return Err(Error::NotHostMemory {
                type_name: self.type_name(),
                mem: self.mem(),
                operation,
            });
        }
        Ok(self.raw.base_ptr())
    }
}

/// Runs a driver operation on a GPU buffer, naming the buffer in its error. The
/// operations use the stream the memory was allocated on: its device's stream.
fn device_op<R>(
    type_name: &'static str,
    operation: &'static str,
    op: impl FnOnce() -> std::result::Result<R, cudarc::driver::DriverError>,
) -> Result<R> {
    op().map_err(|e| Error::driver(type_name, operation, e))
}

/// Zeroed host memory of `bytes` bytes aligned to `align` (a dangling aligned pointer for
/// 0 bytes); `None` when out of memory.
fn host<T: Element>(bytes: usize, align: usize) -> Option<(*mut T, u64, Storage<T>)> {
    let layout = Layout::from_size_align(bytes, align.max(std::mem::align_of::<T>())).ok()?;
    let base = if bytes == 0 {
        std::ptr::without_provenance_mut(layout.align())
    } else {
        // SAFETY: the layout has a non-zero size.
        let p = unsafe { alloc::alloc_zeroed(layout) };
        if p.is_null() {
            return None;
        }
        p
    };
    Some((base.cast(), 0, Storage::Host(layout)))
}

/// The GPU both buffers are on.
pub(crate) fn same_gpu<'b, T: Element>(s: &'b Buffer<T>, d: &Buffer<T>) -> Result<&'b CudaDevice> {
    let (sd, dd) = (s.device(), d.device());
    match (sd, dd) {
        (Some(a), Some(b)) if a == b => on_gpu(sd, s.type_name()),
        (Some(a), Some(b)) => Err(Error::CopyUnsupported {
            reason: format!(
                "{} is on {} and {} on {}: not one GPU",
                s.type_name(),
                a.name(),
                d.type_name(),
                b.name()
            ),
        }),
        _ => on_gpu(sd, s.type_name()),
    }
}

fn alloc_error<T>(type_name: &'static str, mem: MemKind, extent: usize, reason: String) -> Error {
    Error::Alloc {
        type_name,
        mem,
        bytes: extent.saturating_mul(std::mem::size_of::<T>()),
        reason,
    }
}

impl<T: Element> Drop for Buffer<T> {
    fn drop(&mut self) {
        if let Storage::Host(layout) = self.storage {
            if layout.size() > 0 {
                // SAFETY: allocated in `host` with this very layout.
                unsafe { alloc::dealloc(self.raw.base_ptr().cast(), layout) };
            }
        }
        // Pinned and device storage free themselves when the field is dropped.
    }
}

impl<T: Element> Buffer<T> {
    /// Element 0, for the array's handles.
    pub(crate) fn raw(&self) -> Raw<T> {
        self.raw
    }

    /// The GPU memory of a dmem buffer on a GPU (`None` for host memory, and for dmem
    /// under the emulation, which is host memory).
    pub(crate) fn device_slice(&self) -> Option<&CudaSlice<T>> {
        match &self.storage {
            Storage::Device(slice) => Some(slice),
            Storage::Host(_) | Storage::Pinned { .. } => None,
        }
    }

    /// [`Buffer::device_slice`], mutably.
    pub(crate) fn device_slice_mut(&mut self) -> Option<&mut CudaSlice<T>> {
        match &mut self.storage {
            Storage::Device(slice) => Some(slice),
            Storage::Host(_) | Storage::Pinned { .. } => None,
        }
    }

    /// The device address of element 0 of a buffer on the GPU `cuda`.
    ///
    /// # Panics
    /// If the buffer is not GPU memory (a copy's plan checked it is).
    pub(crate) fn device_address(&self, cuda: &CudaDevice) -> u64 {
        self.device_slice()
            .expect("on a GPU (checked by the plan)")
            .device_ptr(&cuda.stream)
            .0
    }

    /// [`Buffer::device_address`], for a buffer the device writes.
    pub(crate) fn device_address_mut(&mut self, cuda: &CudaDevice) -> u64 {
        self.device_slice_mut()
            .expect("on a GPU (checked by the plan)")
            .device_ptr_mut(&cuda.stream)
            .0
    }

    /// Element 0, borrowed (for accesses that need no handle).
    #[inline(always)]
    pub(crate) fn raw_ref(&self) -> &Raw<T> {
        &self.raw
    }
}

impl<T: Element> std::fmt::Debug for Buffer<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Buffer<{}>({} {}, extent {})",
            T::ELEM,
            self.mem(),
            self.type_name(),
            self.extent()
        )
    }
}
