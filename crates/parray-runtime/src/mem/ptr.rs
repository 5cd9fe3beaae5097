//! Handles into an array: [`Ptr`] reads, [`PtrMut`] reads and writes; both borrow the
//! array they point into, so that no handle outlives its storage.
//!
//! # Why two handles
//! A detour's threads share their handles, as CUDA threads share raw pointers. A handle
//! that only reads borrows its array shared (`&Array`): nothing writes the array while it
//! lives, so its loads are plain loads. A handle that writes borrows its array exclusively
//! (`&mut Array`), and every access through it is a relaxed atomic access of the
//! element's words: two threads that write one element without an ordering (`#sync`, the
//! end of the detour) leave one of the values, as on a GPU, and never undefined behaviour.
//! On x86 and ARM such accesses are ordinary loads and stores.
//!
//! # Bounds
//! Every access is checked against the array's extent, in every build, and panics like a
//! slice (`parray: offset 1030 out of bounds for M (extent 1024)`). Generated detour code
//! skips the check (`*_unchecked`) only where the offset compiler proved the access in
//! range for every thread and loop iteration, and the detour checked the array's extent
//! before starting.
//!
//! # Vectors
//! `load2`/`load4` read two or four consecutive elements as one vector (`Float4` of
//! `f32`...), `store2`/`store4` write them, as a GPU moves a `float4`: besides the bounds of
//! every lane, the first lane's offset from the start of the array must be a multiple of
//! the lanes (a GPU faults on a misaligned vector; parray aligns every allocation for
//! every vector type), checked in every build with the messages a GPU kernel's fault
//! record gives (`parray: offset 6 of out is not aligned for a float4 access (a multiple
//! of 4)`, `parray: offsets 4..8 out of bounds for a (extent 6) in a float4 access`). On
//! the CPU the lanes are moved one element at a time.
//!
//! # dmem
//! Host code cannot access `dmem` elements: on a GPU they have no host address, and under
//! the CPU emulation (where they are host memory) they are refused the same way, so that
//! host code that runs here also runs on a GPU. Only the emulated kernel's view of its
//! arguments ([`Ptr::in_kernel`], which cuda detours take of their pointer arguments)
//! reaches them.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Add, AddAssign};
use std::panic::Location;
use std::ptr::NonNull;

use parray_layout::{ElemType, MemKind};

use crate::device_id::DeviceId;
use crate::mem::atomics::{AtomicAdd, AtomicSwap};
use crate::mem::elem::{
    load_field_relaxed, load_fields, load_relaxed, store_field_relaxed, store_fields,
    store_relaxed, Element, FieldArrays, HasVector2, HasVector4, HasVector8, Vector,
};
use crate::mem::in_flight::Held;
use crate::mem::watch::{self, Clock, Watch};

/// What both handles hold: where element 0 of the array is, which element they designate,
/// and what is needed to check and report accesses.
#[derive(Clone, Copy)]
pub(crate) struct Raw<T: Element> {
    /// Host address of element 0 of the array; null for memory on the GPU.
    base: *mut T,
    /// Device address (`CUdeviceptr`) of element 0 for GPU memory, else 0.
    dev: u64,
    offset: usize,
    extent: usize,
    type_name: &'static str,
    mem: MemKind,
    /// Whether elements may be accessed through `base`: false for dmem (except in an
    /// emulated kernel's view). Invariant: when true, `base` is a host address (not null)
    /// of `extent` initialised elements, valid while the handle's borrow lasts.
    access: bool,
    /// The device of a buffer's dmem, which launches run on; `None` for other memory.
    pub(crate) device: Option<DeviceId>,
    /// The records are kept one array per field (SPEC 2.3): element `i`'s field `k` is at
    /// `soa_start(k) + i * size_k` bytes from `base` ([`FieldArrays`]), not in `base[i]`.
    /// Only a record array's can be. Invariant: when true, `base` holds the storage's
    /// bytes (`Record::soa_bytes` of `extent` records in `mem`), aligned to 16.
    soa: bool,
    /// What the race detector watches of the handle's accesses (debug builds).
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
    watch: Option<Watched>,
}

/// How the race detector watches a handle's accesses.
#[derive(Clone, Copy)]
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
enum Watched {
    /// An emulated block's shared array: the marks of its words and the block's clock
    /// ([`Raw::watched`]), which outlive the handle, as the storage does.
    Shared(NonNull<Watch>, NonNull<Clock>),
    /// An emulated kernel's dmem argument: its writes, in the launch's marks of global
    /// memory, through the clock of the lane that runs the writing thread.
    Global,
}

// A handle caught in a panic stays usable: a mark is one `Cell` written whole, and the
// emulation stops the launch at a panic, before any access could read a mark again.
impl std::panic::UnwindSafe for Watched {}
impl std::panic::RefUnwindSafe for Watched {}

impl<T: Element> Raw<T> {
    /// Element 0 of an array (host memory: `base`; GPU memory: null `base` and the device
    /// address `dev`).
    pub(crate) fn new(
        base: *mut T,
        dev: u64,
        extent: usize,
        type_name: &'static str,
        mem: MemKind,
        device: Option<DeviceId>,
        soa: bool,
    ) -> Self {
        Raw {
            base,
            dev,
            offset: 0,
            extent,
            type_name,
            mem,
            access: !mem.on_device() && !base.is_null(),
            device,
            soa,
            watch: None,
        }
    }

    /// Where the field arrays of SoA storage are; `None` for whole elements.
    #[inline(always)]
    pub(crate) fn fields(&self) -> Option<FieldArrays> {
        match T::ELEM {
            ElemType::Record(record) if self.soa => Some(FieldArrays {
                record,
                extent: self.extent,
                align: self.mem.soa_align(),
            }),
            _ => None,
        }
    }

    /// Reads element `index` of the array: plainly (`plain`, a read handle's array, which
    /// nothing writes), else atomically ([`load_relaxed`]); SoA storage field by field.
    ///
    /// # Safety
    /// The handle must allow access and `index` must be below the extent; with `plain`,
    /// nothing may write the array concurrently, else every concurrent access is atomic.
    #[inline(always)]
    unsafe fn read(&self, index: usize, plain: bool) -> T {
        match plain && self.fields().is_none() {
            // SAFETY: the caller's contract, and `Raw`'s invariant: `base` holds `extent`
            // elements.
            true => unsafe { *self.base.add(index) },
            // SAFETY: forwarded: the whole element, from its offset 0.
            false => unsafe { self.read_part(index, 0) },
        }
    }

    /// Reads `V`, the bytes from `offset` of element `index` (the element, or a field of a
    /// record: [`field_offset`]), atomically ([`load_field_relaxed`]); from SoA storage
    /// each field's part from its array. What [`Raw::write`] writes, read back.
    ///
    /// # Safety
    /// As [`Raw::read`] without `plain`; `offset` and `V` name whole words of `T` within it.
    #[inline(always)]
    unsafe fn read_part<V: Element>(&self, index: usize, offset: usize) -> V {
        // SAFETY (each): the caller's contract, and `Raw`'s invariants: `base` holds
        // `extent` elements, or SoA storage of `extent` records.
        match self.fields() {
            Some(fields) => unsafe { load_fields::<T, V>(fields, self.base.cast(), index, offset) },
            None => unsafe { load_field_relaxed(self.base.add(index), offset) },
        }
    }

    /// Writes `v`, the bytes from `offset` of element `index` (the element, or a field of
    /// a record: [`field_offset`]), atomically ([`store_field_relaxed`]); to SoA storage
    /// each field's part to its array.
    ///
    /// # Safety
    /// As [`Raw::read`] without `plain`; `offset` and `V` name whole words of `T` within it.
    #[inline(always)]
    unsafe fn write<V: Element>(&self, index: usize, offset: usize, v: V) {
        // SAFETY (each): as in `read`, and the caller's contract for `offset`.
        match self.fields() {
            Some(fields) => unsafe {
                store_fields::<T, V>(fields, self.base.cast(), index, offset, v)
            },
            None => unsafe { store_field_relaxed(self.base.add(index), offset, v) },
        }
    }

    /// The same handle, its accesses noted in `watch` at the times of `clock` (debug
    /// builds).
    ///
    /// # Safety
    /// `watch` and `clock` must outlive every copy of the handle and be used by one OS
    /// thread only (their `Cell`s are not `Sync`). (`Watch::note` skips elements it has
    /// no marks for: a watch of fewer elements misses races, it reads nothing out of
    /// bounds.)
    pub(crate) unsafe fn watched(self, watch: &Watch, clock: &Clock) -> Self {
        Raw {
            watch: Some(Watched::Shared(NonNull::from(watch), NonNull::from(clock))),
            ..self
        }
    }

    /// Notes an access of the `lanes` elements `off` past this handle (in bounds) for the
    /// race detector, where it watches the array.
    #[inline(always)]
    #[track_caller]
    fn note(&self, off: usize, lanes: usize, write: bool) {
        let per_element = const { watch::words_of::<T>() };
        self.note_words(
            (self.offset + off) * per_element,
            lanes * per_element,
            write,
        );
    }

    /// Notes an access of the field of `F` at `offset` bytes into the element `off` past
    /// this handle (in bounds): only its words, as a GPU moves only its bytes.
    #[inline(always)]
    #[track_caller]
    fn note_field<F: Element>(&self, off: usize, offset: usize, write: bool) {
        let (per_element, word) = const { (watch::words_of::<T>(), T::ELEM.word_bytes() as usize) };
        self.note_words(
            (self.offset + off) * per_element + offset / word,
            size_of::<F>() / word,
            write,
        );
    }

    /// Notes an access of the `count` words from `first` of the array (in bounds) for the
    /// race detector, where it watches the array.
    #[inline(always)]
    #[track_caller]
    fn note_words(&self, first: usize, count: usize, write: bool) {
        self.note_words_at(first, count, write, Location::caller());
    }

    /// [`Raw::note_words`] of an access at `at`. An access that a `#copy async` in flight
    /// forbids (SPEC 3.9: its destination's elements, a write of its source) panics,
    /// saying what to wait for.
    #[inline(always)]
    #[track_caller]
    fn note_words_at(
        &self,
        first: usize,
        count: usize,
        write: bool,
        at: &'static Location<'static>,
    ) {
        #[cfg(debug_assertions)]
        match self.watch {
            Some(Watched::Shared(watch, clock)) => {
                // SAFETY: both outlive the handle and stay on this OS thread (`watched`).
                let (watch, clock) = unsafe { (watch.as_ref(), clock.as_ref()) };
                let words = ((first, count), const { watch::words_of::<T>() });
                let held = clock.copies.check_shared(
                    std::ptr::from_ref(watch).addr(),
                    words,
                    write,
                    clock.thread(),
                );
                if let Some(message) = held {
                    panic!("{message}");
                }
                // A tile an asynchronous wgmma reads is not written before it completes.
                if write {
                    let watched = std::ptr::from_ref(watch).addr();
                    if let Some(message) =
                        clock
                            .wgmmas
                            .check_write(watched, (first, count), clock.thread())
                    {
                        panic!("{message}");
                    }
                }
                watch.note(clock, first, count, write, at);
            }
            Some(Watched::Global) => {
                let per_element = const { watch::words_of::<T>() };
                let source = crate::mem::in_flight::Source {
                    array: self.type_name,
                    addr: self.base.addr(),
                    words: (first, count),
                    per_element,
                };
                let mut refused = None;
                watch::with_lane(|clock| {
                    refused = clock.copies.check_global(source, write, clock.thread());
                });
                if let Some(message) = refused {
                    panic!("{message}");
                }
                if write {
                    watch::note_global_write(
                        self.type_name,
                        (self.base.addr(), self.extent * per_element, per_element),
                        first,
                        count,
                        at,
                    )
                }
            }
            None => {}
        }
        #[cfg(not(debug_assertions))]
        let _ = (first, count, write, at);
    }

    /// Where this is a shared array of an emulated block and its thread is issuing a
    /// `#copy async` (SPEC 3.9): holds `store`, of the `lanes` elements `off` past this
    /// handle, until the thread's `#wait` retires the copy, and says so (the caller then
    /// stores nothing).
    #[inline(always)]
    #[track_caller]
    fn held(&self, off: usize, lanes: usize, store: impl FnOnce() + 'static) -> bool {
        let Some(Watched::Shared(watch, clock)) = self.watch else {
            return false;
        };
        // SAFETY: the clock outlives the handle and stays on this OS thread (`watched`).
        let clock = unsafe { clock.as_ref() };
        if !clock.copies.issuing() {
            return false;
        }
        let per_element = const { watch::words_of::<T>() };
        let words = ((self.offset + off) * per_element, lanes * per_element);
        // A GPU's copy may write the element any time from here to the wait: the race
        // detector sees the write at both.
        self.note_words(words.0, words.1, true);
        let raw = *self;
        let land = move |at| {
            raw.note_words_at(words.0, words.1, true, at);
            store();
        };
        let held = Held {
            array: self.type_name,
            watch: watch.as_ptr().addr(),
            element: self.offset + off,
            words,
            at: Location::caller(),
            land: Box::new(land),
        };
        clock.copies.hold(clock.thread(), clock.tid(), held);
        true
    }

    /// Where this is an emulated block's shared array (debug builds): warpgroup
    /// `warpgroup`'s asynchronous wgmma, issued at `at`, reads the elements `offsets` past
    /// this handle until its group completes ([`crate::mem::in_flight::Wgmmas`]).
    pub(crate) fn note_tile_read(
        &self,
        warpgroup: usize,
        offsets: &[u32],
        at: &'static Location<'static>,
    ) {
        #[cfg(debug_assertions)]
        if let Some(Watched::Shared(watch, clock)) = self.watch {
            // SAFETY: the clock outlives the handle and stays on this OS thread (`watched`).
            let clock = unsafe { clock.as_ref() };
            let array = (
                self.type_name,
                watch.as_ptr().addr(),
                watch::words_of::<T>(),
            );
            let elements = offsets.iter().map(|&o| self.offset + o as usize);
            clock.wgmmas.issue(warpgroup, array, elements, at);
        }
        #[cfg(not(debug_assertions))]
        let _ = (warpgroup, offsets, at);
    }

    pub(crate) fn base_ptr(&self) -> *mut T {
        self.base
    }

    pub(crate) fn extent(&self) -> usize {
        self.extent
    }

    pub(crate) fn type_name(&self) -> &'static str {
        self.type_name
    }

    pub(crate) fn mem(&self) -> MemKind {
        self.mem
    }

    /// The host address of the element `off` past this handle: refused for dmem, checked
    /// against the extent.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn at(&self, off: usize) -> *mut T {
        self.base.wrapping_add(self.index(off))
    }

    /// The index in the array of the element `off` past this handle: refused for dmem,
    /// checked against the extent.
    #[inline(always)]
    #[track_caller]
    fn index(&self, off: usize) -> usize {
        if !self.access {
            self.refuse();
        }
        match self.offset.checked_add(off) {
            Some(index) if index < self.extent => index,
            _ => self.out_of_bounds(off),
        }
    }

    /// The host address of lane 0 of the vector `V` at the element `off` past this handle:
    /// refused for dmem; every lane checked against the extent, and the first one's offset
    /// from the start of the array to be a multiple of the lanes (as a GPU needs).
    #[inline(always)]
    #[track_caller]
    pub(crate) fn at_vector<V: Vector<Lane = T>>(&self, off: usize) -> *mut T {
        if !self.access {
            self.refuse();
        }
        match self.offset.checked_add(off) {
            Some(index) if index < self.extent && self.extent - index >= V::LANES => {
                if !index.is_multiple_of(V::LANES) {
                    misaligned(V::ELEM, index, self.type_name);
                }
                self.base.wrapping_add(index)
            }
            _ => vector_out_of_bounds(
                V::ELEM,
                self.offset as u128 + off as u128,
                self.type_name,
                self.extent,
            ),
        }
    }

    /// Element `off` of an array's own handle (offset 0) in memory known to be on the
    /// host: only the bounds need a check.
    #[inline(always)]
    #[track_caller]
    pub(crate) fn host_element(&self, off: usize) -> *mut T {
        debug_assert!(self.access && self.offset == 0);
        if off < self.extent {
            self.base.wrapping_add(off)
        } else {
            self.out_of_bounds(off)
        }
    }

    /// [`Raw::index`] without the checks.
    ///
    /// # Safety
    /// The handle must allow access and `offset + off` must be below the extent.
    #[inline(always)]
    #[track_caller]
    unsafe fn index_unchecked(&self, off: usize) -> usize {
        // The proof that licensed this access, tested: debug builds check it anyway.
        #[cfg(debug_assertions)]
        if self
            .offset
            .checked_add(off)
            .is_none_or(|i| i >= self.extent)
        {
            proved_out_of_bounds(
                self.offset as u128 + off as u128,
                self.type_name,
                self.extent,
            );
        }
        self.offset + off
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

    #[cold]
    #[inline(never)]
    #[track_caller]
    fn out_of_bounds(&self, off: usize) -> ! {
        panic!(
            "{}",
            out_of_bounds_message(
                self.offset as u128 + off as u128,
                self.type_name,
                self.extent
            )
        )
    }

    fn in_kernel(self) -> Self {
        // Host memory holding an emulated device's dmem: its writes are watched.
        let global = cfg!(debug_assertions) && self.mem == MemKind::Dmem && !self.base.is_null();
        Raw {
            access: self.access || !self.base.is_null(),
            watch: if global {
                Some(Watched::Global)
            } else {
                self.watch
            },
            ..self
        }
    }

    fn device(&self) -> Option<DeviceId> {
        self.device
    }

    /// Bytes from element 0 to the designated element: to its first field, for SoA
    /// storage.
    fn offset_bytes(&self) -> usize {
        match self.fields() {
            Some(fields) => fields.at(0, self.offset).0,
            None => self.offset * size_of::<T>(),
        }
    }

    fn device_address(&self) -> Option<u64> {
        self.base
            .is_null()
            .then(|| self.dev + self.offset_bytes() as u64)
    }

    fn host_address(&self) -> *mut T {
        if self.base.is_null() {
            self.base
        } else {
            self.base.wrapping_byte_add(self.offset_bytes())
        }
    }

    fn fmt(&self, kind: &str, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{kind}<{}>({} {} + {} of {})",
            T::ELEM,
            self.mem,
            self.type_name,
            self.offset,
            self.extent
        )
    }
}

/// The message of an element access at `offset` of the array `name` past its `extent`: the
/// panic of a CPU access, and a GPU kernel's fault report.
/// An access generated unchecked, because `parray_compiler::passes::bounds` proved it in range,
/// that is not: a bug of the proof, which debug builds report before touching memory.
#[cold]
#[track_caller]
#[cfg(debug_assertions)]
pub(crate) fn proved_out_of_bounds(offset: u128, name: &str, extent: usize) -> ! {
    panic!(
        "parray: an access the bounds analysis proved in range is not: {} (a bug in parray_compiler::passes::bounds)",
        out_of_bounds_message(offset, name, extent)
    )
}

pub(crate) fn out_of_bounds_message(offset: u128, name: &str, extent: usize) -> String {
    format!("parray: offset {offset} out of bounds for {name} (extent {extent})")
}

/// The message of a vector access (`vector`: `Float4`, ...) whose lanes from `offset` are
/// not all within the `extent` of the array `name`.
pub(crate) fn vector_out_of_bounds_message(
    vector: ElemType,
    offset: u128,
    name: &str,
    extent: usize,
) -> String {
    let lanes = parray_compiler::ir::lanes(vector);
    format!(
        "parray: offsets {offset}..{} out of bounds for {name} (extent {extent}) in a {} access",
        offset + u128::from(lanes),
        vector.keyword()
    )
}

/// The message of a vector access at `offset` of the array `name`, which is not a multiple
/// of its lanes.
pub(crate) fn misaligned_message(vector: ElemType, offset: u128, name: &str) -> String {
    format!(
        "parray: offset {offset} of {name} is not aligned for a {} access (a multiple of {})",
        vector.keyword(),
        parray_compiler::ir::lanes(vector)
    )
}

#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn vector_out_of_bounds(vector: ElemType, offset: u128, name: &str, extent: usize) -> ! {
    panic!(
        "{}",
        vector_out_of_bounds_message(vector, offset, name, extent)
    )
}

/// A reference to an element of `type_name`, whose records are kept one array per field.
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn field_arrays(type_name: &str) -> ! {
    panic!("parray: {type_name} keeps its records one array per field (soa): there is no whole record to reference; read and write it with `at`/`set` or `load`/`store`")
}

#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn misaligned(vector: ElemType, offset: usize, name: &str) -> ! {
    panic!("{}", misaligned_message(vector, offset as u128, name))
}

/// The byte offset in `T` of the field `field` projects to, found on a local value (the
/// optimiser folds it to a number): a projection to anything but whole words of `T`
/// (`ElemType::word_bytes`) within it, of `F`'s alignment, panics.
#[inline(always)]
#[track_caller]
fn field_offset<T: Element, F: Element>(field: fn(&mut T) -> &mut F) -> usize {
    let word = const { T::ELEM.word_bytes() as usize };
    let mut probe = T::default();
    let base = (&raw mut probe).addr();
    let offset = (field(&mut probe) as *mut F).addr().wrapping_sub(base);
    assert!(
        offset
            .checked_add(size_of::<F>())
            .is_some_and(|end| end <= size_of::<T>())
            && offset.is_multiple_of(align_of::<F>())
            && offset.is_multiple_of(word)
            && size_of::<F>().is_multiple_of(word),
        "parray: `store_field` writes a field of {}, not a part of one",
        T::ELEM
    );
    offset
}

/// A handle that an emulated kernel's function of the body language reads through (a
/// `parray::Ptr` parameter): a read handle or a write one, as the kernel's argument is
/// (written by the kernel or not). For the code `detour!` generates.
#[doc(hidden)]
pub trait Pointer<T: Element>:
    Access<T> + Copy + Add<usize, Output = Self> + AddAssign<usize>
{
}

impl<T: Element> Pointer<T> for Ptr<'_, T> {}

impl<T: Element> Pointer<T> for PtrMut<'_, T> {}

/// Reading elements, through an array or a handle: what a detour body's `x[off]` calls.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be indexed in a detour body",
    label = "indexed here",
    note = "a detour body indexes parray arrays and their handles: create the data as an array (`V::create()`, then `copy_from_slice`) and index that"
)]
pub trait Access<T: Element> {
    /// The element `off` elements past this handle (checked; see the module docs).
    fn load(&self, off: usize) -> T;

    /// [`Access::load`] without the bounds check.
    ///
    /// # Safety
    /// The element must be in bounds and host-accessible: generated code calls this only
    /// where the offset compiler proved the offset below an extent the detour checked.
    unsafe fn load_unchecked(&self, off: usize) -> T;

    /// One field of the record `off` elements past this handle (checked): a body's
    /// `p[i].vel`, `field` naming it (`|e| &mut e.vel`). A watched shared or global array
    /// notes the field's words alone, as a GPU reads only its bytes.
    #[inline(always)]
    #[track_caller]
    fn load_field<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F) -> F {
        *field(&mut self.load(off))
    }

    /// [`Access::load_field`] without the bounds check.
    ///
    /// # Safety
    /// As [`Access::load_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn load_field_unchecked<F: Element>(
        &self,
        off: usize,
        field: fn(&mut T) -> &mut F,
    ) -> F {
        // SAFETY: forwarded.
        *field(&mut unsafe { self.load_unchecked(off) })
    }

    /// The vector `V` of the `V::LANES` elements from the one `off` past this handle
    /// (`Float4` of four `f32` elements): as a GPU reads a `float4`. Checked in every build
    /// like [`Access::load`]: every lane within the extent, and the first lane's offset from
    /// the start of the array a multiple of the lanes (a GPU faults on a misaligned
    /// vector; parray's allocations are aligned for every vector type).
    fn load_vector<V: Vector<Lane = T>>(&self, off: usize) -> V;

    /// [`Access::load_vector`] without the checks.
    ///
    /// # Safety
    /// Every lane must be in bounds and host-accessible, as for
    /// [`Access::load_unchecked`]: generated code calls this only where the offset
    /// compiler proved the lanes below an extent the detour checked.
    #[inline(always)]
    #[track_caller]
    unsafe fn load_vector_unchecked<V: Vector<Lane = T>>(&self, off: usize) -> V {
        // SAFETY: each lane is in bounds and accessible by the caller's contract.
        V::from_lanes(|i| unsafe { self.load_unchecked(off + i) })
    }

    /// Two elements from `off` as one vector (`Float2` of `f32`, `Double2` of `f64`,
    /// `Int2` of `i32`): `p.load2(off)` in a detour body, CUDA's `float2` load. `off`
    /// must be even from the start of the array (see [`Access::load_vector`]).
    #[inline(always)]
    #[track_caller]
    fn load2(&self, off: usize) -> T::Vector2
    where
        T: HasVector2,
    {
        self.load_vector(off)
    }

    /// Four elements from `off` as one vector (`Float4` of `f32`, `Int4` of `i32`):
    /// `p.load4(off)`, CUDA's `float4` load. `off` must be a multiple of 4 from the start
    /// of the array (see [`Access::load_vector`]).
    #[inline(always)]
    #[track_caller]
    fn load4(&self, off: usize) -> T::Vector4
    where
        T: HasVector4,
    {
        self.load_vector(off)
    }

    /// Eight elements from `off` as one vector (`Bf16x8` of `bf16`): a `#copy`'s
    /// 16-byte move of 16-bit elements. `off` must be a multiple of 8 from the start of
    /// the array (see [`Access::load_vector`]).
    #[inline(always)]
    #[track_caller]
    fn load8(&self, off: usize) -> T::Vector8
    where
        T: HasVector8,
    {
        self.load_vector(off)
    }

    /// [`Access::load8`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn load8_unchecked(&self, off: usize) -> T::Vector8
    where
        T: HasVector8,
    {
        // SAFETY: forwarded.
        unsafe { self.load_vector_unchecked(off) }
    }

    /// [`Access::load2`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn load2_unchecked(&self, off: usize) -> T::Vector2
    where
        T: HasVector2,
    {
        // SAFETY: forwarded.
        unsafe { self.load_vector_unchecked(off) }
    }

    /// [`Access::load4`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn load4_unchecked(&self, off: usize) -> T::Vector4
    where
        T: HasVector4,
    {
        // SAFETY: forwarded.
        unsafe { self.load_vector_unchecked(off) }
    }
}

/// Writing elements: what a detour body's `x[off] = v` calls.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be written in a detour body",
    label = "written here",
    note = "a detour writes through an array it borrows mutably (`&mut a`) or a `PtrMut`"
)]
pub trait AccessMut<T: Element>: Access<T> {
    /// Writes the element `off` elements past this handle (checked).
    fn store(&self, off: usize, v: T);

    /// [`AccessMut::store`] without the bounds check.
    ///
    /// # Safety
    /// As [`Access::load_unchecked`].
    unsafe fn store_unchecked(&self, off: usize, v: T);

    /// Writes one field of the record `off` elements past this handle (checked): a body's
    /// `p[i].vel = v`. `field` names it (`|e| &mut e.vel`). Shared arrays write the field
    /// alone, as a GPU does, so threads may write different fields of one element; a
    /// thread's own registers read the element and write it back.
    #[inline(always)]
    #[track_caller]
    fn store_field<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F, v: F) {
        let mut e = self.load(off);
        *field(&mut e) = v;
        self.store(off, e)
    }

    /// [`AccessMut::store_field`] without the bounds check.
    ///
    /// # Safety
    /// As [`Access::load_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn store_field_unchecked<F: Element>(
        &self,
        off: usize,
        field: fn(&mut T) -> &mut F,
        v: F,
    ) {
        // SAFETY: forwarded.
        let mut e = unsafe { self.load_unchecked(off) };
        *field(&mut e) = v;
        // SAFETY: forwarded.
        unsafe { self.store_unchecked(off, e) }
    }

    /// CUDA's `atomicAdd`: adds `v` to the element `off` past this handle atomically and
    /// returns the old value (checked like an access).
    fn atomic_add(&self, off: usize, v: T) -> T
    where
        T: AtomicAdd;

    /// CUDA's `atomicExch`: writes `v` to the element `off` past this handle atomically
    /// and returns the old value (checked like an access; relaxed, as on a GPU).
    fn atomic_exch(&self, off: usize, v: T) -> T
    where
        T: AtomicSwap;

    /// CUDA's `atomicCAS`: writes `v` to the element `off` past this handle where it
    /// equals `compare`, atomically, and returns the old value (checked like an access;
    /// relaxed, as on a GPU).
    fn atomic_cas(&self, off: usize, compare: T, v: T) -> T
    where
        T: AtomicSwap;

    /// Writes the lanes of `v` to the `V::LANES` elements from the one `off` past this
    /// handle, checked as [`Access::load_vector`] is.
    fn store_vector<V: Vector<Lane = T>>(&self, off: usize, v: V);

    /// [`AccessMut::store_vector`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn store_vector_unchecked<V: Vector<Lane = T>>(&self, off: usize, v: V) {
        for i in 0..V::LANES {
            // SAFETY: each lane is in bounds and accessible by the caller's contract.
            unsafe { self.store_unchecked(off + i, v.lane(i)) }
        }
    }

    /// `p.store2(off, v)`: the two lanes of `v` to the elements from `off` (even from
    /// the start of the array; see [`Access::load_vector`]).
    #[inline(always)]
    #[track_caller]
    fn store2(&self, off: usize, v: T::Vector2)
    where
        T: HasVector2,
    {
        self.store_vector(off, v)
    }

    /// `p.store4(off, v)`: the four lanes of `v` to the elements from `off` (a multiple
    /// of 4 from the start of the array; see [`Access::load_vector`]).
    #[inline(always)]
    #[track_caller]
    fn store4(&self, off: usize, v: T::Vector4)
    where
        T: HasVector4,
    {
        self.store_vector(off, v)
    }

    /// `p.store8(off, v)`: the eight lanes of `v` to the elements from `off` (a multiple
    /// of 8 from the start of the array; see [`Access::load_vector`]).
    #[inline(always)]
    #[track_caller]
    fn store8(&self, off: usize, v: T::Vector8)
    where
        T: HasVector8,
    {
        self.store_vector(off, v)
    }

    /// [`AccessMut::store8`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn store8_unchecked(&self, off: usize, v: T::Vector8)
    where
        T: HasVector8,
    {
        // SAFETY: forwarded.
        unsafe { self.store_vector_unchecked(off, v) }
    }

    /// [`AccessMut::store2`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn store2_unchecked(&self, off: usize, v: T::Vector2)
    where
        T: HasVector2,
    {
        // SAFETY: forwarded.
        unsafe { self.store_vector_unchecked(off, v) }
    }

    /// [`AccessMut::store4`] without the checks.
    ///
    /// # Safety
    /// As [`Access::load_vector_unchecked`].
    #[inline(always)]
    #[track_caller]
    unsafe fn store4_unchecked(&self, off: usize, v: T::Vector4)
    where
        T: HasVector4,
    {
        // SAFETY: forwarded.
        unsafe { self.store_vector_unchecked(off, v) }
    }
}

/// A handle that reads an array: element `offset` of it, borrowed for `'a`.
#[derive(Clone, Copy)]
pub struct Ptr<'a, T: Element> {
    raw: Raw<T>,
    _array: PhantomData<&'a [T]>,
}

/// A handle that reads and writes an array, which it borrows exclusively for `'a`; it is
/// `Copy` so that a detour's threads can share it (see the module docs).
#[derive(Clone, Copy)]
pub struct PtrMut<'a, T: Element> {
    raw: Raw<T>,
    _array: PhantomData<&'a mut [T]>,
}

// SAFETY: a read handle is a shared borrow of elements that nothing writes while it lives.
unsafe impl<T: Element> Send for Ptr<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for Ptr<'_, T> {}
// SAFETY: every access through a write handle is atomic (see the module docs), and the
// exclusive borrow keeps every other access to the array away while it lives.
unsafe impl<T: Element> Send for PtrMut<'_, T> {}
// SAFETY: as above.
unsafe impl<T: Element> Sync for PtrMut<'_, T> {}

macro_rules! handle_common {
    ($name:ident) => {
        impl<'a, T: Element> $name<'a, T> {
            /// # Safety
            /// `raw` must designate memory valid for `'a`, accessed as the handle's kind
            /// requires (see the module docs).
            pub(crate) unsafe fn from_raw_parts(raw: Raw<T>) -> Self {
                $name {
                    raw,
                    _array: PhantomData,
                }
            }

            /// This handle as the emulated kernel of a cuda detour sees its argument: dmem
            /// becomes accessible, since under the CPU emulation device memory is host
            /// memory. Other handles are unchanged (launches refuse them as arguments), and
            /// so is dmem on a GPU (no host address). For the code `detour!` generates.
            pub fn in_kernel(self) -> Self {
                $name {
                    raw: self.raw.in_kernel(),
                    _array: PhantomData,
                }
            }

            /// This handle as the kernel parameter `name`: the errors of its accesses name
            /// the parameter (`parray: offset 4 out of bounds for out (extent 4)`), as a GPU
            /// kernel's fault record does. For the emulated kernels `detour!` generates.
            pub fn as_parameter(self, name: &'static str) -> Self {
                $name {
                    raw: Raw {
                        type_name: name,
                        ..self.raw
                    },
                    _array: PhantomData,
                }
            }

            /// The host address of the designated element (of its first field, for a
            /// record array kept one array per field); null for memory on the GPU.
            pub fn host_address(&self) -> *mut T {
                self.raw.host_address()
            }

            /// The device of the array's dmem, which launches run on; `None` for other
            /// memory.
            pub fn device(&self) -> Option<DeviceId> {
                self.raw.device()
            }

            /// The device address of the designated element (of its first field, for a
            /// record array kept one array per field), for GPU memory; `None` for host
            /// memory (including dmem under the CPU emulation).
            pub fn device_address(&self) -> Option<u64> {
                self.raw.device_address()
            }

            /// Whether the array keeps its records one array per field (`dmem soa Particle
            /// [N] Q`, SPEC 2.3).
            pub fn soa(&self) -> bool {
                self.raw.fields().is_some()
            }

            /// For a record array kept one array per field: where its storage starts (on
            /// its GPU, or on an emulated device the host), the designated element, and
            /// where the fields' arrays are; what a kernel's `soa` parameter is made of.
            pub(crate) fn kernel_fields(&self) -> Option<(u64, usize, FieldArrays)> {
                let fields = self.raw.fields()?;
                let start = match self.raw.base.is_null() {
                    true => self.raw.dev,
                    false => self.raw.base.addr() as u64,
                };
                Some((start, self.raw.offset, fields))
            }

            /// The offset, in elements, from the start of the array.
            pub fn offset(&self) -> usize {
                self.raw.offset
            }

            /// The array's extent in elements.
            pub fn extent(&self) -> usize {
                self.raw.extent
            }

            /// Elements from the designated one to the end of the array.
            pub fn remaining(&self) -> usize {
                self.raw.extent.saturating_sub(self.raw.offset)
            }

            /// The parray type the array was created for.
            pub fn type_name(&self) -> &'static str {
                self.raw.type_name
            }

            /// Where the array lives.
            pub fn mem(&self) -> MemKind {
                self.raw.mem
            }
        }

        impl<'a, T: Element> Add<usize> for $name<'a, T> {
            type Output = $name<'a, T>;

            /// `p + off`: C pointer arithmetic; bounds are checked at the access.
            #[inline(always)]
            fn add(mut self, off: usize) -> Self {
                self += off;
                self
            }
        }

        impl<'a, T: Element> Add<usize> for &$name<'a, T> {
            type Output = $name<'a, T>;

            /// `&p + off`, as detour bodies write `p + off` on a captured handle.
            #[inline(always)]
            fn add(self, off: usize) -> $name<'a, T> {
                *self + off
            }
        }

        impl<'a, T: Element> Add<usize> for &&$name<'a, T> {
            type Output = $name<'a, T>;

            #[inline(always)]
            fn add(self, off: usize) -> $name<'a, T> {
                **self + off
            }
        }

        impl<T: Element> AddAssign<usize> for $name<'_, T> {
            #[inline(always)]
            fn add_assign(&mut self, off: usize) {
                self.raw.offset = self.raw.offset.wrapping_add(off);
            }
        }

        impl<T: Element> fmt::Debug for $name<'_, T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.raw.fmt(stringify!($name), f)
            }
        }
    };
}

handle_common!(Ptr);

impl<T: Element> PtrMut<'_, T> {
    /// The crate's view of the handle.
    pub(crate) fn raw(&self) -> &Raw<T> {
        &self.raw
    }
}
handle_common!(PtrMut);

impl<T: Element> Access<T> for Ptr<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn load(&self, off: usize) -> T {
        let index = self.raw.index(off);
        // SAFETY: `index` gives an in-bounds element of the borrowed array, which nothing
        // writes while this handle lives.
        unsafe { self.raw.read(index, true) }
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn load_unchecked(&self, off: usize) -> T {
        // SAFETY: in bounds and accessible by the caller's contract; unwritten as above.
        unsafe { self.raw.read(self.raw.index_unchecked(off), true) }
    }

    #[inline(always)]
    #[track_caller]
    fn load_vector<V: Vector<Lane = T>>(&self, off: usize) -> V {
        let p = self.raw.at_vector::<V>(off);
        // SAFETY: `at_vector` checked that the `V::LANES` elements from `p` are in bounds
        // of the borrowed array, which nothing writes while this handle lives.
        V::from_lanes(|i| unsafe { *p.add(i) })
    }
}

impl<T: Element> Access<T> for PtrMut<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn load(&self, off: usize) -> T {
        let index = self.raw.index(off);
        self.raw.note(off, 1, false);
        // SAFETY: `index` gives an in-bounds element of the exclusively borrowed array,
        // accessed only atomically while this handle lives.
        unsafe { self.raw.read(index, false) }
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn load_unchecked(&self, off: usize) -> T {
        // SAFETY: in bounds by the caller's contract; atomic as above.
        let index = unsafe { self.raw.index_unchecked(off) };
        self.raw.note(off, 1, false);
        // SAFETY: as above.
        unsafe { self.raw.read(index, false) }
    }

    #[inline(always)]
    #[track_caller]
    fn load_field<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F) -> F {
        let (index, offset) = (self.raw.index(off), field_offset(field));
        self.raw.note_field::<F>(off, offset, false);
        // SAFETY: as in `load`, and `offset` is a field's of type `F`.
        unsafe { self.raw.read_part(index, offset) }
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn load_field_unchecked<F: Element>(
        &self,
        off: usize,
        field: fn(&mut T) -> &mut F,
    ) -> F {
        // SAFETY: as in `load_unchecked`.
        let index = unsafe { self.raw.index_unchecked(off) };
        let offset = field_offset(field);
        self.raw.note_field::<F>(off, offset, false);
        // SAFETY: as above, and `offset` is a field's of type `F`.
        unsafe { self.raw.read_part(index, offset) }
    }

    #[inline(always)]
    #[track_caller]
    fn load_vector<V: Vector<Lane = T>>(&self, off: usize) -> V {
        let p = self.raw.at_vector::<V>(off);
        self.raw.note(off, V::LANES, false);
        // SAFETY: `at_vector` checked the lanes in bounds; each is an aligned element of
        // the exclusively borrowed array, accessed only atomically while this handle lives.
        V::from_lanes(|i| unsafe { load_relaxed(p.add(i)) })
    }
}

impl<T: Element> AccessMut<T> for PtrMut<'_, T> {
    #[inline(always)]
    #[track_caller]
    fn store(&self, off: usize, v: T) {
        let index = self.raw.index(off);
        let raw = self.raw;
        // SAFETY: as below; a held store is made while the block's storage lives.
        if self
            .raw
            .held(off, 1, move || unsafe { raw.write(index, 0, v) })
        {
            return;
        }
        self.raw.note(off, 1, true);
        // SAFETY: as in `load`; the whole element from its offset 0.
        unsafe { self.raw.write(index, 0, v) }
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn store_unchecked(&self, off: usize, v: T) {
        // SAFETY: as in `load_unchecked`.
        let index = unsafe { self.raw.index_unchecked(off) };
        let raw = self.raw;
        // SAFETY: as below; a held store is made while the block's storage lives.
        if self
            .raw
            .held(off, 1, move || unsafe { raw.write(index, 0, v) })
        {
            return;
        }
        self.raw.note(off, 1, true);
        // SAFETY: as above.
        unsafe { self.raw.write(index, 0, v) }
    }

    #[inline(always)]
    #[track_caller]
    fn store_field<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F, v: F) {
        let index = self.raw.index(off);
        let offset = field_offset(field);
        self.raw.note_field::<F>(off, offset, true);
        // SAFETY: as in `load`, and `offset` is a field's of type `F`.
        unsafe { self.raw.write(index, offset, v) }
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn store_field_unchecked<F: Element>(
        &self,
        off: usize,
        field: fn(&mut T) -> &mut F,
        v: F,
    ) {
        // SAFETY: as in `load_unchecked`.
        let index = unsafe { self.raw.index_unchecked(off) };
        let offset = field_offset(field);
        self.raw.note_field::<F>(off, offset, true);
        // SAFETY: as above, and `offset` is a field's of type `F`.
        unsafe { self.raw.write(index, offset, v) }
    }

    #[track_caller]
    fn atomic_add(&self, off: usize, v: T) -> T
    where
        T: AtomicAdd,
    {
        let p = self.raw.at(off);
        assert!(
            p.addr().is_multiple_of(T::ATOMIC_ALIGN),
            "parray: atomic_add on an element of {} that is not {}-byte aligned",
            self.raw.type_name,
            T::ATOMIC_ALIGN
        );
        // SAFETY: an aligned in-bounds element, every access to which is atomic while
        // this handle lives.
        unsafe { crate::mem::atomics::atomic_add(p, v) }
    }

    #[track_caller]
    fn atomic_exch(&self, off: usize, v: T) -> T
    where
        T: AtomicSwap,
    {
        let p = self.raw.at(off);
        assert!(
            p.addr().is_multiple_of(T::ATOMIC_ALIGN),
            "parray: atomic_exch on an element of {} that is not {}-byte aligned",
            self.raw.type_name,
            T::ATOMIC_ALIGN
        );
        watch::fenced();
        // SAFETY: as in `atomic_add`.
        unsafe { T::atomic_exch(p, v) }
    }

    #[track_caller]
    fn atomic_cas(&self, off: usize, compare: T, v: T) -> T
    where
        T: AtomicSwap,
    {
        let p = self.raw.at(off);
        assert!(
            p.addr().is_multiple_of(T::ATOMIC_ALIGN),
            "parray: atomic_cas on an element of {} that is not {}-byte aligned",
            self.raw.type_name,
            T::ATOMIC_ALIGN
        );
        watch::fenced();
        // SAFETY: as in `atomic_add`.
        unsafe { T::atomic_cas(p, compare, v) }
    }

    #[inline(always)]
    #[track_caller]
    fn store_vector<V: Vector<Lane = T>>(&self, off: usize, v: V) {
        let p = self.raw.at_vector::<V>(off);
        let store = move || {
            for i in 0..V::LANES {
                // SAFETY: as below; a held store is made while the block's storage lives.
                unsafe { store_relaxed(p.add(i), v.lane(i)) }
            }
        };
        if self.raw.held(off, V::LANES, store) {
            return;
        }
        self.raw.note(off, V::LANES, true);
        for i in 0..V::LANES {
            // SAFETY: as in `load_vector`.
            unsafe { store_relaxed(p.add(i), v.lane(i)) }
        }
    }
}

/// Detour bodies reach arrays through whatever the closure captured: owners, handles or
/// references to them.
macro_rules! forward_access {
    ($($r:ty),*) => {$(
        impl<T: Element, A: Access<T> + ?Sized> Access<T> for $r {
            #[inline(always)]
            #[track_caller]
            fn load(&self, off: usize) -> T {
                (**self).load(off)
            }

            #[inline(always)]

            #[track_caller]
            unsafe fn load_unchecked(&self, off: usize) -> T {
                // SAFETY: forwarded.
                unsafe { (**self).load_unchecked(off) }
            }

            #[inline(always)]
            #[track_caller]
            fn load_field<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F) -> F {
                (**self).load_field(off, field)
            }

            #[inline(always)]
            #[track_caller]
            unsafe fn load_field_unchecked<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F) -> F {
                // SAFETY: forwarded.
                unsafe { (**self).load_field_unchecked(off, field) }
            }

            #[inline(always)]
            #[track_caller]
            fn load_vector<V: Vector<Lane = T>>(&self, off: usize) -> V {
                (**self).load_vector(off)
            }

            #[inline(always)]

            #[track_caller]
            unsafe fn load_vector_unchecked<V: Vector<Lane = T>>(&self, off: usize) -> V {
                // SAFETY: forwarded.
                unsafe { (**self).load_vector_unchecked(off) }
            }
        }
    )*};
}

forward_access!(&A, &mut A);

impl<T: Element, A: AccessMut<T> + ?Sized> AccessMut<T> for &A {
    #[inline(always)]
    #[track_caller]
    fn store(&self, off: usize, v: T) {
        (**self).store(off, v)
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn store_unchecked(&self, off: usize, v: T) {
        // SAFETY: forwarded.
        unsafe { (**self).store_unchecked(off, v) }
    }

    #[inline(always)]
    #[track_caller]
    fn store_field<F: Element>(&self, off: usize, field: fn(&mut T) -> &mut F, v: F) {
        (**self).store_field(off, field, v)
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn store_field_unchecked<F: Element>(
        &self,
        off: usize,
        field: fn(&mut T) -> &mut F,
        v: F,
    ) {
        // SAFETY: forwarded.
        unsafe { (**self).store_field_unchecked(off, field, v) }
    }

    #[track_caller]
    fn atomic_add(&self, off: usize, v: T) -> T
    where
        T: AtomicAdd,
    {
        (**self).atomic_add(off, v)
    }

    #[track_caller]
    fn atomic_exch(&self, off: usize, v: T) -> T
    where
        T: AtomicSwap,
    {
        (**self).atomic_exch(off, v)
    }

    #[track_caller]
    fn atomic_cas(&self, off: usize, compare: T, v: T) -> T
    where
        T: AtomicSwap,
    {
        (**self).atomic_cas(off, compare, v)
    }

    #[inline(always)]
    #[track_caller]
    fn store_vector<V: Vector<Lane = T>>(&self, off: usize, v: V) {
        (**self).store_vector(off, v)
    }

    #[inline(always)]
    #[track_caller]
    unsafe fn store_vector_unchecked<V: Vector<Lane = T>>(&self, off: usize, v: V) {
        // SAFETY: forwarded.
        unsafe { (**self).store_vector_unchecked(off, v) }
    }
}
