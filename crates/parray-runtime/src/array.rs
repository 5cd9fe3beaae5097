//! `Array<T>`: storage that knows its parray type (layout, element, memory kind). Layer 3
//! (arrays and types): above memory, below execution.
//!
//! `T::create()` gives one; it is freed when dropped (`#destroy`). Host code reads and
//! writes elements by typed index (`a.at([i, j])`, `a.set([i, j], v)`) or by offset
//! (`a[off]`), every access checked; handles into it ([`Ptr`], [`PtrMut`]) borrow it. An
//! array may be looked at as another type that views its storage ([`Array::view`]).

use std::marker::PhantomData;
use std::ops::{Add, Index, IndexMut};

use parray_layout::MemKind;

use crate::devices::Device;
use crate::error::{DetourSite, Error, Result};
use crate::job::extent_here;
use crate::mem::buffer::{Arrangement, Buffer};
use crate::mem::elem::{Element, Vector};
use crate::mem::kernel_arg::{KernelArg, KernelValue};
use crate::mem::ptr::{field_arrays, Access, AccessMut, Ptr, PtrMut};
use crate::types::{DataType, ViewOf};

/// An array of the parray type `T`, owning its storage (`T::extent()` elements of
/// `T::Elem`, zeroed, in `T::MEM` memory).
#[repr(transparent)]
pub struct Array<T: DataType> {
    buf: Buffer<T::Elem>,
    _type: PhantomData<fn() -> T>,
}

/// How an array of `T` keeps its elements.
fn arrangement<T: DataType>() -> Arrangement {
    match T::SOA {
        true => Arrangement::Fields,
        false => Arrangement::Whole,
    }
}

impl<T: DataType> Array<T> {
    /// `#create`: zeroed storage for one value of `T`, dmem on the calling thread's current
    /// device ([`Device::current`]). Views (no memory kind) and `smem` or `rmem` types
    /// (which exist only inside cuda bodies) are refused.
    ///
    /// A type distributed over the ranks of an mpi array gets this rank's part (SPEC.md
    /// 2.13): `Error::RankCount` unless the job runs the array's processes.
    pub fn new() -> Result<Self> {
        let mem = T::MEM.ok_or(Error::ViewNotCreatable { type_name: T::NAME })?;
        Ok(Array {
            buf: Buffer::new(T::NAME, mem, extent_here::<T>()?, arrangement::<T>())?,
            _type: PhantomData,
        })
    }

    /// [`Array::new`] on `device`: dmem goes there (a cuda detour runs on the device of
    /// its arrays).
    pub fn new_on(device: &Device) -> Result<Self> {
        let mem = T::MEM.ok_or(Error::ViewNotCreatable { type_name: T::NAME })?;
        Ok(Array {
            buf: Buffer::new_on(
                T::NAME,
                mem,
                extent_here::<T>()?,
                arrangement::<T>(),
                device,
            )?,
            _type: PhantomData,
        })
    }

    /// The device of a dmem array; `None` for host memory.
    pub fn device(&self) -> Option<&Device> {
        self.buf.device()
    }

    pub(crate) fn buffer(&self) -> &Buffer<T::Elem> {
        &self.buf
    }

    pub(crate) fn buffer_mut(&mut self) -> &mut Buffer<T::Elem> {
        &mut self.buf
    }

    /// The number of elements of storage.
    pub fn extent(&self) -> usize {
        self.buf.extent()
    }

    /// Where the storage lives.
    pub fn mem(&self) -> MemKind {
        self.buf.mem()
    }

    /// The parray type the array was created as.
    pub fn type_name(&self) -> &'static str {
        self.buf.type_name()
    }

    /// Whether the array keeps its records one array per field (`dmem soa Particle [N] Q`,
    /// SPEC 2.3).
    pub fn soa(&self) -> bool {
        self.buf.fields().is_some()
    }

    /// A handle reading element 0, borrowing the array.
    pub fn ptr(&self) -> Ptr<'_, T::Elem> {
        // SAFETY: the buffer's elements live as long as the shared borrow, which keeps
        // every writer away.
        unsafe { Ptr::from_raw_parts(self.buf.raw()) }
    }

    /// A handle reading and writing element 0, borrowing the array exclusively.
    pub fn ptr_mut(&mut self) -> PtrMut<'_, T::Elem> {
        // SAFETY: the buffer's elements live as long as the exclusive borrow, during which
        // every access goes through this handle and its copies, atomically.
        unsafe { PtrMut::from_raw_parts(self.buf.raw()) }
    }

    /// The same storage seen as the type `V`, which views it: a detour or a function that
    /// takes `&Array<V>` then indexes it as `V`.
    ///
    /// # Panics
    /// If `V` declares a memory kind other than the storage's (possible only with a
    /// hand-written `ViewOf`).
    #[track_caller]
    pub fn view<V: ViewOf<T>>(&self) -> &Array<V> {
        self.as_type::<V>().unwrap_or_else(|e| panic!("{e}"))
    }

    /// [`Array::view`], mutably.
    #[track_caller]
    pub fn view_mut<V: ViewOf<T>>(&mut self) -> &mut Array<V> {
        self.as_type_mut::<V>().unwrap_or_else(|e| panic!("{e}"))
    }

    /// The same storage as another type `V` of the same element that it does not view by
    /// declaration (two names for one row-major layout, say): an error unless `V`'s extent
    /// fits in the storage and `V`'s memory kind is the storage's (or `V` is a view).
    pub fn as_type<V: DataType<Elem = T::Elem>>(&self) -> Result<&Array<V>> {
        self.fits::<V>()?;
        // SAFETY: `Array` is `repr(transparent)` over `Buffer<Elem>`, and `V::Elem` is
        // `T::Elem`: the two types have one layout. `V`'s memory kind is the storage's
        // (checked above), which `Array`'s accesses rely on.
        Ok(unsafe { &*(self as *const Array<T>).cast::<Array<V>>() })
    }

    /// [`Array::as_type`], mutably.
    pub fn as_type_mut<V: DataType<Elem = T::Elem>>(&mut self) -> Result<&mut Array<V>> {
        self.fits::<V>()?;
        // SAFETY: as in `as_type`; the exclusive borrow passes to the result.
        Ok(unsafe { &mut *(self as *mut Array<T>).cast::<Array<V>>() })
    }

    /// `V`'s memory kind is the storage's and its extent (this rank's part of it, for a
    /// distributed type) fits.
    fn fits<V: DataType>(&self) -> Result<()> {
        let view_extent = extent_here::<V>()?;
        // A type of its own memory kind keeps its records as the storage does; a view
        // reaches them as they are.
        let soa = self.buf.fields().is_some();
        if V::MEM.is_some_and(|m| m != self.mem() || V::SOA != soa) || view_extent > self.extent() {
            return Err(Error::NotAView {
                type_name: self.type_name(),
                mem: self.mem(),
                extent: self.extent(),
                view: V::NAME,
                view_extent,
            });
        }
        Ok(())
    }

    /// The element at `index` (one index per top-level dimension: `a.at([i, j])` is
    /// `$T[i][j]$`), for host memory. Each index is checked against its dimension; an
    /// array of another length than `T::RANK` is an error when the program is built
    /// ([`DataType::offset`]).
    ///
    /// # Panics
    /// If an index is out of its dimension, or the array is dmem (see [`Array::to_vec`]).
    #[track_caller]
    pub fn at<const N: usize>(&self, index: [usize; N]) -> T::Elem {
        self.ptr().load(T::offset(index))
    }

    /// Writes the element at `index` (see [`Array::at`]).
    #[track_caller]
    pub fn set<const N: usize>(&mut self, index: [usize; N], v: T::Elem) {
        self.ptr_mut().store(T::offset(index), v)
    }

    /// The elements, for host memory (`paged`, `pinned`); dmem is refused under every
    /// backend, so that host code that works under the emulation also works on a GPU.
    pub fn as_slice(&self) -> Result<&[T::Elem]> {
        self.buf.as_slice()
    }

    /// The elements, mutably, for host memory (see [`Array::as_slice`]).
    pub fn as_mut_slice(&mut self) -> Result<&mut [T::Elem]> {
        self.buf.as_mut_slice()
    }

    /// Copies `src` into the array (host to device for dmem); `src.len()` must equal the
    /// extent.
    pub fn copy_from_slice(&mut self, src: &[T::Elem]) -> Result<()> {
        self.buf.copy_from_slice(src)
    }

    /// Copies the elements out (device to host for dmem).
    pub fn to_vec(&self) -> Result<Vec<T::Elem>> {
        self.buf.to_vec()
    }

    /// Sets every element to `v`.
    pub fn fill(&mut self, v: T::Elem) -> Result<()> {
        self.buf.fill(v)
    }

    /// Sets every element to zero, on a GPU without a transfer (the driver's memset).
    pub fn zero(&mut self) -> Result<()> {
        self.buf.zero()
    }
}

impl<T: DataType> Array<T> {
    /// The host address of element `off`, checked; a type declared `paged` or `pinned`
    /// (the array's or the one it views) is host memory, and only the bounds need a check.
    #[inline(always)]
    #[track_caller]
    fn host_element(&self, off: usize) -> *mut T::Elem {
        let raw = self.buf.raw_ref();
        if raw.fields().is_some() {
            field_arrays(self.type_name());
        }
        match T::MEM {
            Some(MemKind::Paged | MemKind::Pinned) => raw.host_element(off),
            _ => raw.at(off),
        }
    }
}

impl<T: DataType> Access<T::Elem> for Array<T> {
    #[inline(always)]
    #[track_caller]
    fn load(&self, off: usize) -> T::Elem {
        self.ptr().load(off)
    }

    #[inline(always)]
    unsafe fn load_unchecked(&self, off: usize) -> T::Elem {
        // SAFETY: forwarded.
        unsafe { self.ptr().load_unchecked(off) }
    }

    #[inline(always)]
    #[track_caller]
    fn load_vector<V: Vector<Lane = T::Elem>>(&self, off: usize) -> V {
        self.ptr().load_vector(off)
    }

    #[inline(always)]
    unsafe fn load_vector_unchecked<V: Vector<Lane = T::Elem>>(&self, off: usize) -> V {
        // SAFETY: forwarded.
        unsafe { self.ptr().load_vector_unchecked(off) }
    }
}

/// An array passed to a kernel: its element 0 (dmem only).
impl<T: DataType> KernelArg for Array<T> {
    fn kernel_value(&self) -> Result<KernelValue> {
        self.ptr().kernel_value()
    }
}

impl<T: DataType> Index<usize> for Array<T> {
    type Output = T::Elem;

    /// The element at offset `off` (host memory; checked in every build).
    #[inline(always)]
    #[track_caller]
    fn index(&self, off: usize) -> &T::Elem {
        let p = self.host_element(off);
        // SAFETY: `at` gives an in-bounds host element; the shared borrow of the array
        // keeps writers away while the reference lives.
        unsafe { &*p }
    }
}

impl<T: DataType> IndexMut<usize> for Array<T> {
    #[inline(always)]
    #[track_caller]
    fn index_mut(&mut self, off: usize) -> &mut T::Elem {
        let p = self.host_element(off);
        // SAFETY: as in `index`; the exclusive borrow makes the reference unique.
        unsafe { &mut *p }
    }
}

/// `a + off` on an array: a read handle, as a C program's `a + off`.
impl<'a, T: DataType> Add<usize> for &'a Array<T> {
    type Output = Ptr<'a, T::Elem>;

    #[inline(always)]
    fn add(self, off: usize) -> Ptr<'a, T::Elem> {
        self.ptr() + off
    }
}

/// `a + off` in a detour body on a captured `&Array` (the body borrows what it captures).
impl<'a, T: DataType> Add<usize> for &&'a Array<T> {
    type Output = Ptr<'a, T::Elem>;

    #[inline(always)]
    fn add(self, off: usize) -> Ptr<'a, T::Elem> {
        self.ptr() + off
    }
}

impl<T: DataType> std::fmt::Debug for Array<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "Array<{}>({} {}, extent {})",
            T::NAME,
            self.mem(),
            <T::Elem as Element>::ELEM,
            self.extent()
        )
    }
}

/// What a detour's generated code asks of the values it is given, by method call (so
/// that `a`, `&a`, `&mut a` and handles all work); not for users.
#[doc(hidden)]
pub mod handles {
    use super::*;

    /// The handle a cuda detour passes for an argument it only reads: a read handle of an
    /// array, or the handle itself. Taken by value (`(a).parray_handle()`, autoref
    /// finding `&Array`), so that `a`, `&a` and `&mut a` all work.
    pub trait Handles<'a, E: Element> {
        type Handle: Copy;
        fn parray_handle(self) -> Self::Handle;
    }

    impl<'a, T: DataType> Handles<'a, T::Elem> for &'a Array<T> {
        type Handle = Ptr<'a, T::Elem>;
        fn parray_handle(self) -> Ptr<'a, T::Elem> {
            self.ptr()
        }
    }

    impl<'a, E: Element> Handles<'a, E> for Ptr<'a, E> {
        type Handle = Ptr<'a, E>;
        fn parray_handle(self) -> Ptr<'a, E> {
            self
        }
    }

    impl<'a, E: Element> Handles<'a, E> for PtrMut<'a, E> {
        type Handle = PtrMut<'a, E>;
        fn parray_handle(self) -> PtrMut<'a, E> {
            self
        }
    }

    /// The handle a detour writes through: the array borrowed exclusively (autoref finds
    /// `&mut Array`; a shared reference is refused by the borrow checker), or a write
    /// handle.
    #[diagnostic::on_unimplemented(
        message = "the detour writes to this `{Self}`, which cannot be written",
        note = "pass an array the detour may write (`&mut a`) or a `PtrMut`"
    )]
    pub trait Writable<'a, E: Element> {
        fn parray_writable(self) -> PtrMut<'a, E>;
    }

    impl<'a, T: DataType> Writable<'a, T::Elem> for &'a mut Array<T> {
        fn parray_writable(self) -> PtrMut<'a, T::Elem> {
            self.ptr_mut()
        }
    }

    impl<'a, E: Element> Writable<'a, E> for PtrMut<'a, E> {
        fn parray_writable(self) -> PtrMut<'a, E> {
            self
        }
    }

    /// The source and the destination of `#copy S(a) to D(b)` in host code, by method
    /// call (autoref finds the array for `b` and `&mut b` alike): an array of `S` (of `D`)
    /// or of a storage type that it views, seen as it (`Array::as_type`: an `Err` where
    /// the storage does not hold the view).
    pub trait CopyEnd<V: DataType> {
        fn parray_copy_source(&self) -> Result<&Array<V>>;
        fn parray_copy_target(&mut self) -> Result<&mut Array<V>>;
    }

    impl<V: DataType, T: DataType> CopyEnd<V> for Array<T>
    where
        V: ViewOf<T>,
    {
        fn parray_copy_source(&self) -> Result<&Array<V>> {
            self.as_type::<V>()
        }

        fn parray_copy_target(&mut self) -> Result<&mut Array<V>> {
            self.as_type_mut::<V>()
        }
    }

    /// A value a detour indexes as the type `M`: an array of a type `M` views, or a
    /// handle (whose remaining elements the detour checks).
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is indexed as the parray type `{M}`, which does not view it",
        note = "pass an array of `{M}` (or of a type `{M}` is declared as a view of)"
    )]
    pub trait IndexedAs<M: DataType> {
        /// Elements from the designated one to the end of the storage.
        fn parray_remaining(&self) -> usize;
        /// Where the storage is, and the type it was created as.
        fn parray_memory(&self) -> (MemKind, &'static str);
    }

    impl<M: DataType, T: DataType> IndexedAs<M> for Array<T>
    where
        M: ViewOf<T>,
    {
        fn parray_remaining(&self) -> usize {
            self.extent()
        }

        fn parray_memory(&self) -> (MemKind, &'static str) {
            (self.mem(), self.type_name())
        }
    }

    impl<M: DataType> IndexedAs<M> for Ptr<'_, M::Elem> {
        fn parray_remaining(&self) -> usize {
            self.remaining()
        }

        fn parray_memory(&self) -> (MemKind, &'static str) {
            (self.mem(), self.type_name())
        }
    }

    impl<M: DataType> IndexedAs<M> for PtrMut<'_, M::Elem> {
        fn parray_remaining(&self) -> usize {
            self.remaining()
        }

        fn parray_memory(&self) -> (MemKind, &'static str) {
            (self.mem(), self.type_name())
        }
    }

    impl<M: DataType, A: IndexedAs<M> + ?Sized> IndexedAs<M> for &A {
        fn parray_remaining(&self) -> usize {
            (**self).parray_remaining()
        }

        fn parray_memory(&self) -> (MemKind, &'static str) {
            (**self).parray_memory()
        }
    }

    impl<M: DataType, A: IndexedAs<M> + ?Sized> IndexedAs<M> for &mut A {
        fn parray_remaining(&self) -> usize {
            (**self).parray_remaining()
        }

        fn parray_memory(&self) -> (MemKind, &'static str) {
            (**self).parray_memory()
        }
    }

    /// Before a pthd detour runs: as [`indexed_as`], and `value` is not dmem, which the
    /// threads (host code) cannot reach: its accesses proved in bounds go unchecked, and
    /// on a GPU the array has no host address.
    pub fn indexed_on_host<M: DataType, A: IndexedAs<M> + ?Sized>(
        value: &A,
        name: &'static str,
        site: &'static DetourSite,
    ) -> Result<()> {
        let (mem, type_name) = value.parray_memory();
        if mem.on_device() {
            return Err(Error::DeviceMemoryOnHost {
                site,
                name,
                type_name,
            });
        }
        indexed_as::<M, A>(value, name, site)
    }

    /// A value a cuda detour passes for a pointer parameter: whether its records are kept
    /// one array per field, which the parameter's declaration must say (`soa Particle*`).
    pub trait Arranged {
        fn parray_soa(&self) -> bool;
        fn parray_type_name(&self) -> &'static str;
    }

    impl<T: DataType> Arranged for Array<T> {
        fn parray_soa(&self) -> bool {
            self.soa()
        }

        fn parray_type_name(&self) -> &'static str {
            self.type_name()
        }
    }

    impl<E: Element> Arranged for Ptr<'_, E> {
        fn parray_soa(&self) -> bool {
            self.soa()
        }

        fn parray_type_name(&self) -> &'static str {
            self.type_name()
        }
    }

    impl<E: Element> Arranged for PtrMut<'_, E> {
        fn parray_soa(&self) -> bool {
            self.soa()
        }

        fn parray_type_name(&self) -> &'static str {
            self.type_name()
        }
    }

    impl<A: Arranged + ?Sized> Arranged for &A {
        fn parray_soa(&self) -> bool {
            (**self).parray_soa()
        }

        fn parray_type_name(&self) -> &'static str {
            (**self).parray_type_name()
        }
    }

    impl<A: Arranged + ?Sized> Arranged for &mut A {
        fn parray_soa(&self) -> bool {
            (**self).parray_soa()
        }

        fn parray_type_name(&self) -> &'static str {
            (**self).parray_type_name()
        }
    }

    /// Before a cuda detour runs: `value`, passed for the pointer parameter `name`, keeps
    /// its records as the parameter says (`soa`: one array per field), for the kernel's C
    /// reaches them so; the emulation refuses what the GPU would misread.
    pub fn arranged<A: Arranged + ?Sized>(
        value: &A,
        soa: bool,
        name: &'static str,
        site: &'static DetourSite,
    ) -> Result<()> {
        match value.parray_soa() == soa {
            true => Ok(()),
            false => Err(Error::Arrangement {
                site,
                name,
                type_name: value.parray_type_name(),
                soa: value.parray_soa(),
            }),
        }
    }

    /// A value a detour accesses by vectors: where it starts in its array.
    pub trait VectorStart {
        /// The offset, in elements, of the designated element from the start of the
        /// array (0 for an array).
        fn parray_start(&self) -> usize;
    }

    impl<T: DataType> VectorStart for Array<T> {
        fn parray_start(&self) -> usize {
            0
        }
    }

    impl<E: Element> VectorStart for Ptr<'_, E> {
        fn parray_start(&self) -> usize {
            self.offset()
        }
    }

    impl<E: Element> VectorStart for PtrMut<'_, E> {
        fn parray_start(&self) -> usize {
            self.offset()
        }
    }

    impl<A: VectorStart + ?Sized> VectorStart for &A {
        fn parray_start(&self) -> usize {
            (**self).parray_start()
        }
    }

    impl<A: VectorStart + ?Sized> VectorStart for &mut A {
        fn parray_start(&self) -> usize {
            (**self).parray_start()
        }
    }

    /// Before a detour runs: the body accesses `value` (the detour's `name`) by vectors of
    /// up to `lanes` elements at offsets from it that are multiples of the lanes (its
    /// accesses proved aligned rely on it, and a GPU checks the others from the
    /// argument's start), so it must start at such a multiple of its array.
    pub fn aligned_for<A: VectorStart + ?Sized>(
        value: &A,
        lanes: usize,
        name: &'static str,
        site: &'static DetourSite,
    ) -> Result<()> {
        let offset = value.parray_start();
        if !offset.is_multiple_of(lanes) {
            return Err(Error::Misaligned {
                site,
                name,
                offset,
                lanes,
            });
        }
        Ok(())
    }

    /// Before a detour runs: `value` (the detour's `name`) is indexed as `M`, so it must
    /// hold `M::indexed_extent()` elements (the accesses proved within `M` rely on it).
    pub fn indexed_as<M: DataType, A: IndexedAs<M> + ?Sized>(
        value: &A,
        name: &'static str,
        site: &'static DetourSite,
    ) -> Result<()> {
        let (have, need) = (value.parray_remaining(), M::indexed_extent());
        if have < need {
            return Err(Error::TooSmall {
                site,
                name,
                indexed_as: M::NAME,
                need,
                have,
            });
        }
        Ok(())
    }
}
