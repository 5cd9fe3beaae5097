//! `Buffer<T>`: the untyped storage of one `#create`d array, freed when dropped
//! (`#destroy`); [`crate::Array`] gives it its parray type.

use std::alloc::{self, Layout};
use std::sync::Once;

use cudarc::driver::{sys, CudaSlice, DevicePtr, PinnedHostSlice};
use parray_core::MemKind;

use crate::elem::Element;
use crate::error::{Error, Result};
use crate::gpu::context::{self, Backend};
use crate::ptr::Raw;

/// Host allocations are aligned to a cache line, so that vector loads and the paper's
/// tiled loops never straddle lines at the start of an array.
const HOST_ALIGN: usize = 64;

/// Owned, zero-initialised storage for `extent` elements of one parray type.
pub(crate) struct Buffer<T: Element> {
    /// Element 0; every handle starts from it.
    raw: Raw<T>,
    storage: Storage<T>,
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
    /// Allocates `extent` zeroed elements of `mem` memory for the type `type_name`.
    ///
    /// `Paged` is 64-byte-aligned host memory; `Pinned` is page-locked when a CUDA driver
    /// is present (else host memory, said once on stderr); `Dmem` is GPU memory under the
    /// cuda backend and host memory under the CPU emulation. `Smem`/`Rmem` are rejected:
    /// they exist only inside cuda detour bodies.
    pub(crate) fn new(type_name: &'static str, mem: MemKind, extent: usize) -> Result<Self> {
        // Checked here once: cudarc's allocators would panic on an overflowing size.
        let bytes = extent
            .checked_mul(std::mem::size_of::<T>())
            .filter(|&b| b <= isize::MAX as usize)
            .ok_or_else(|| alloc_error::<T>(type_name, mem, extent, "size overflows".into()))?;
        let fail = |reason: String| alloc_error::<T>(type_name, mem, extent, reason);
        let host = || host::<T>(bytes).ok_or_else(|| fail("out of memory".into()));
        let (base, dev, storage) = match mem {
            MemKind::Paged => host()?,
            MemKind::Pinned => match context::cuda() {
                Some(cuda) if extent > 0 => {
                    // PORTABLE, not cudarc's default WRITECOMBINED: host code reads pinned
                    // arrays, and write-combined memory is uncached for host reads.
                    // SAFETY: zeroed below before any use.
                    let mut slice = unsafe {
                        cuda.ctx
                            .alloc_pinned_with_flags::<T>(extent, sys::CU_MEMHOSTALLOC_PORTABLE)
                    }
                    .map_err(|e| fail(e.to_string()))?;
                    let base = slice.as_mut_ptr().map_err(|e| fail(e.to_string()))?;
                    // SAFETY: `base` points to `extent` elements just allocated.
                    unsafe { base.write_bytes(0, extent) };
                    (base, 0, Storage::Pinned { _owner: slice })
                }
                cuda => {
                    if cuda.is_none() {
                        static SAID: Once = Once::new();
                        SAID.call_once(|| {
                            eprintln!(
                                "parray: no CUDA driver; pinned memory is ordinary host memory"
                            )
                        });
                    }
                    host()?
                }
            },
            MemKind::Dmem => match (context::backend()?, context::cuda()) {
                (Backend::Cuda, Some(cuda)) => {
                    let slice = cuda
                        .stream
                        .alloc_zeros::<T>(extent)
                        .map_err(|e| fail(e.to_string()))?;
                    let dev = slice.device_ptr(&cuda.stream).0;
                    (std::ptr::null_mut(), dev, Storage::Device(slice))
                }
                _ => host()?,
            },
            MemKind::Smem | MemKind::Rmem => return Err(Error::NotCreatable { type_name, mem }),
        };
        Ok(Buffer {
            raw: Raw::new(base, dev, extent, type_name, mem),
            storage,
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
        let base = self.host_base("read")?;
        // SAFETY: `extent` initialised elements owned by `self`.
        Ok(unsafe { std::slice::from_raw_parts(base, self.extent()) })
    }

    /// The elements, mutably, for host memory (see [`Buffer::as_slice`]).
    pub(crate) fn as_mut_slice(&mut self) -> Result<&mut [T]> {
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
        let type_name = self.type_name();
        match &mut self.storage {
            Storage::Device(slice) => device_op(type_name, "host-to-device copy", |stream| {
                stream.memcpy_htod(src, slice)?;
                stream.synchronize()
            }),
            Storage::Host(_) | Storage::Pinned { .. } => {
                // SAFETY: host memory of `extent` elements, exclusively borrowed.
                let dst = unsafe { std::slice::from_raw_parts_mut(self.raw.base_ptr(), src.len()) };
                dst.copy_from_slice(src);
                Ok(())
            }
        }
    }

    /// Copies the elements out (device to host for dmem).
    pub(crate) fn to_vec(&self) -> Result<Vec<T>> {
        match &self.storage {
            Storage::Device(slice) => {
                device_op(self.type_name(), "device-to-host copy", |stream| {
                    let v = stream.clone_dtoh(slice)?;
                    stream.synchronize()?;
                    Ok(v)
                })
            }
            Storage::Host(_) | Storage::Pinned { .. } => {
                // SAFETY: `extent` initialised host elements owned by `self`.
                Ok(
                    unsafe { std::slice::from_raw_parts(self.raw.base_ptr(), self.extent()) }
                        .to_vec(),
                )
            }
        }
    }

    /// Sets every element to `v`.
    pub(crate) fn fill(&mut self, v: T) -> Result<()> {
        match self.storage {
            Storage::Device(_) => self.copy_from_slice(&vec![v; self.extent()]),
            Storage::Host(_) | Storage::Pinned { .. } => {
                // SAFETY: `extent` host elements, exclusively borrowed.
                unsafe { std::slice::from_raw_parts_mut(self.raw.base_ptr(), self.extent()) }
                    .fill(v);
                Ok(())
            }
        }
    }

    fn host_base(&self, operation: &'static str) -> Result<*mut T> {
        if self.mem() == MemKind::Dmem {
            return Err(Error::NotHostMemory {
                type_name: self.type_name(),
                mem: self.mem(),
                operation,
            });
        }
        Ok(self.raw.base_ptr())
    }
}

/// Runs a driver operation on the runtime's stream, naming the buffer in its error.
fn device_op<R>(
    type_name: &'static str,
    operation: &'static str,
    op: impl FnOnce(
        &std::sync::Arc<cudarc::driver::CudaStream>,
    ) -> std::result::Result<R, cudarc::driver::DriverError>,
) -> Result<R> {
    let cuda = context::cuda().ok_or_else(|| Error::CudaUnavailable {
        reason: "a device buffer exists but the CUDA context is gone".into(),
    })?;
    op(&cuda.stream).map_err(|e| Error::Driver {
        type_name,
        operation,
        reason: e.to_string(),
    })
}

/// Zeroed, 64-byte-aligned host memory of `bytes` bytes (a dangling aligned pointer for
/// 0 bytes); `None` when out of memory.
fn host<T: Element>(bytes: usize) -> Option<(*mut T, u64, Storage<T>)> {
    let layout = Layout::from_size_align(bytes, HOST_ALIGN.max(std::mem::align_of::<T>())).ok()?;
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
