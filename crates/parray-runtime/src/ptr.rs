//! `Ptr<T>`: the paper's raw pointer into a buffer, as a copyable, thread-shareable handle.

use std::fmt;
use std::ops::{Add, AddAssign, Index, IndexMut};

use parray_core::MemKind;

use crate::elem::Element;
use crate::gpu::emulate::{atomic_add, AtomicAdd};
use crate::gpu::DeviceId;

/// Element access shared by owners ([`crate::Buffer`]) and handles ([`Ptr`]), so that a
/// detour body compiles whichever of the two it captured.
///
/// # Data races
/// `store` takes `&self`: the threads of an array write through shared handles, as CUDA
/// threads write through raw pointers. As in CUDA, two threads that touch the same element
/// without an ordering (`#sync`, the end of a detour) where at least one writes is a data
/// race and undefined behaviour; so is holding a slice of a buffer (`as_slice`) while a
/// detour writes to it. Parray programs partition their writes by thread index.
///
/// Atomics are the exception: threads may update an element concurrently when every
/// access to it meanwhile is [`Ptr::atomic_add`], as CUDA's `atomicAdd`.
///
/// # Bounds
/// Debug builds check every access against the buffer's extent and panic like a slice
/// (`parray: offset 1030 out of bounds for M (extent 1024)`); release builds do not.
///
/// # dmem
/// Host code cannot access `dmem` elements: on a GPU they have no host address, and under
/// the CPU emulation (where they are host memory) they are refused the same way, in every
/// build, so that host code that runs here also runs on a GPU. Only the emulated kernel's
/// view of its arguments ([`Ptr::in_kernel`], which cuda detours take of their pointer
/// arguments) reaches them.
pub trait Access<T: Element> {
    /// Reads the element `off` elements past this handle.
    fn load(&self, off: usize) -> T;
    /// Writes the element `off` elements past this handle (see the data-race contract).
    fn store(&self, off: usize, v: T);
    /// A handle to the first element this value designates.
    fn ptr(&self) -> Ptr<T>;
}

/// A pointer into a [`crate::Buffer`]: its base, an element offset, and what is needed to
/// check and report accesses (extent, type name, memory kind).
///
/// A `Ptr` is valid while its buffer lives. It carries no lifetime because the paper's
/// programs pass pointers freely between host code and detours; the detours themselves
/// are scoped (they return only when every thread is done), which is what keeps the
/// handles they capture valid. Using a `Ptr` after its buffer is dropped is undefined
/// behaviour, as with a C pointer after `#destroy`.
#[derive(Clone, Copy)]
pub struct Ptr<T: Element> {
    /// Host address of element 0 of the buffer; null for memory on the GPU.
    base: *mut T,
    /// Device address (`CUdeviceptr`) of element 0 for GPU memory, else 0.
    dev: u64,
    offset: usize,
    extent: usize,
    type_name: &'static str,
    mem: MemKind,
    /// Whether elements may be accessed through `base`: false for dmem (except in an
    /// emulated kernel's view). Invariant: when true, `base` is a host address (not null).
    access: bool,
    /// The device of a buffer's dmem, which launches run on; `None` for other memory.
    pub(crate) device: Option<DeviceId>,
}

// SAFETY: a Ptr is an address; sharing it between threads is the point (see `Access`).
unsafe impl<T: Element> Send for Ptr<T> {}
// SAFETY: as above; element accesses follow the data-race contract of `Access`.
unsafe impl<T: Element> Sync for Ptr<T> {}

impl<T: Element> Ptr<T> {
    /// A handle to element 0 of a buffer (host memory: `base`; GPU memory: null `base`
    /// and the device address `dev`; dmem: on `device`).
    pub(crate) fn new(
        base: *mut T,
        dev: u64,
        extent: usize,
        type_name: &'static str,
        mem: MemKind,
        device: Option<DeviceId>,
    ) -> Self {
        Ptr {
            base,
            dev,
            offset: 0,
            extent,
            type_name,
            mem,
            access: mem != MemKind::Dmem && !base.is_null(),
            device,
        }
    }

    /// This handle as the emulated kernel of a cuda detour sees its argument: dmem becomes
    /// accessible, since under the CPU emulation device memory is host memory. Other
    /// handles are unchanged (launches refuse them as arguments), and so is dmem on a GPU
    /// (no host address). For the code `detour!` generates, once per launch.
    pub fn in_kernel(self) -> Self {
        Ptr {
            access: self.access || !self.base.is_null(),
            ..self
        }
    }

    /// A handle on memory that is not a [`crate::Buffer`]: a block's shared array or a
    /// thread's registers under the CPU emulation of a cuda detour.
    ///
    /// # Safety
    /// `base` must point to `extent` initialised elements that stay valid, and are
    /// accessed only through the `Access` contract, for as long as the handle is used.
    pub unsafe fn from_raw(
        base: *mut T,
        extent: usize,
        type_name: &'static str,
        mem: MemKind,
    ) -> Self {
        Ptr::new(base, 0, extent, type_name, mem, None)
    }

    /// The host address of element 0 of the buffer (null for GPU memory); for the buffer's
    /// own copies, which do not go through element accesses.
    pub(crate) fn base_ptr(&self) -> *mut T {
        self.base
    }

    /// The host address of the designated element; null for memory on the GPU. (Under the
    /// emulation dmem has one, but element accesses through it are refused.)
    pub fn host_address(&self) -> *mut T {
        if self.base.is_null() {
            self.base
        } else {
            self.base.wrapping_add(self.offset)
        }
    }

    /// The offset, in elements, from the start of the buffer.
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// The buffer's extent in elements.
    pub fn extent(&self) -> usize {
        self.extent
    }

    /// The parray type the buffer was created for.
    pub fn type_name(&self) -> &'static str {
        self.type_name
    }

    /// Where the buffer lives.
    pub fn mem(&self) -> MemKind {
        self.mem
    }

    /// The device address of the designated element, for GPU memory; `None` for host
    /// memory (including dmem under the CPU emulation).
    pub fn device_address(&self) -> Option<u64> {
        self.base
            .is_null()
            .then(|| self.dev + (self.offset * std::mem::size_of::<T>()) as u64)
    }

    /// The host address of the element `off` past this handle: refused for dmem (see
    /// [`Access`]), checked against the extent in debug builds.
    #[inline(always)]
    #[track_caller]
    fn at(&self, off: usize) -> *mut T {
        if !self.access {
            self.refuse();
        }
        let index = self.offset + off;
        #[cfg(debug_assertions)]
        if index >= self.extent {
            panic!(
                "parray: offset {index} out of bounds for {} (extent {})",
                self.type_name, self.extent
            );
        }
        // SAFETY: `access` guarantees a host base (invariant of the field); the element is
        // in bounds by the caller's contract (checked above in debug builds).
        unsafe { self.base.add(index) }
    }

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn refuse(&self) -> ! {
        panic!(
            "parray: {} is {} memory on the GPU; host code cannot access it",
            self.type_name, self.mem
        )
    }
}

impl<T: Element + AtomicAdd> Ptr<T> {
    /// CUDA's `atomicAdd(p, v)`: adds `v` to the designated element atomically and returns
    /// the old value (checked like an access).
    ///
    /// # Panics
    /// As an access; also if the element is not aligned for the atomic of its size (only
    /// possible on targets where a 64-bit number is less aligned than its atomic).
    #[track_caller]
    pub fn atomic_add(&self, v: T) -> T {
        let p = self.at(0);
        assert!(
            p.addr().is_multiple_of(T::ATOMIC_ALIGN),
            "parray: atomic_add on an element of {} that is not {}-byte aligned",
            self.type_name,
            T::ATOMIC_ALIGN
        );
        // SAFETY: `at` gives an element of live memory (contract of `Ptr`), aligned for the
        // atomic (checked above); the contract of `Access` makes every concurrent access
        // to it atomic.
        unsafe { atomic_add(p, v) }
    }
}

impl<T: Element> Access<T> for Ptr<T> {
    #[inline(always)]
    #[track_caller]
    fn load(&self, off: usize) -> T {
        // SAFETY: `at` gives an in-bounds element of a live buffer (contract of `Ptr`).
        unsafe { *self.at(off) }
    }

    #[inline(always)]
    #[track_caller]
    fn store(&self, off: usize, v: T) {
        // SAFETY: as in `load`; races are excluded by the contract of `Access`.
        unsafe { *self.at(off) = v }
    }

    #[inline(always)]
    fn ptr(&self) -> Ptr<T> {
        *self
    }
}

impl<T: Element> Index<usize> for Ptr<T> {
    type Output = T;

    #[inline(always)]
    #[track_caller]
    fn index(&self, off: usize) -> &T {
        // SAFETY: as in `load`.
        unsafe { &*self.at(off) }
    }
}

impl<T: Element> IndexMut<usize> for Ptr<T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, off: usize) -> &mut T {
        // SAFETY: as in `store`.
        unsafe { &mut *self.at(off) }
    }
}

impl<T: Element> Add<usize> for Ptr<T> {
    type Output = Ptr<T>;

    /// `p + off`: C pointer arithmetic; bounds are checked at the access, not here.
    #[inline(always)]
    fn add(mut self, off: usize) -> Ptr<T> {
        self += off;
        self
    }
}

/// Detour bodies reach buffers through whatever the closure captured: owners, handles or
/// references to them.
impl<T: Element, A: Access<T> + ?Sized> Access<T> for &A {
    #[inline(always)]
    #[track_caller]
    fn load(&self, off: usize) -> T {
        (**self).load(off)
    }

    #[inline(always)]
    #[track_caller]
    fn store(&self, off: usize, v: T) {
        (**self).store(off, v)
    }

    #[inline(always)]
    fn ptr(&self) -> Ptr<T> {
        (**self).ptr()
    }
}

impl<T: Element> Add<usize> for &&Ptr<T> {
    type Output = Ptr<T>;

    #[inline(always)]
    fn add(self, off: usize) -> Ptr<T> {
        **self + off
    }
}

impl<T: Element> Add<usize> for &Ptr<T> {
    type Output = Ptr<T>;

    /// `&p + off`, as detour bodies write `p + off` on a captured handle.
    #[inline(always)]
    fn add(self, off: usize) -> Ptr<T> {
        *self + off
    }
}

impl<T: Element> AddAssign<usize> for Ptr<T> {
    #[inline(always)]
    fn add_assign(&mut self, off: usize) {
        self.offset += off;
    }
}

impl<T: Element> fmt::Debug for Ptr<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Ptr<{}>({} {} + {} of {})",
            T::ELEM,
            self.mem,
            self.type_name,
            self.offset,
            self.extent
        )
    }
}
