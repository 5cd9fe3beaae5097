//! Element types: the Rust side of the type language's `float`, `int`, `float2`, ...

use std::sync::atomic::{AtomicU16, AtomicU32, AtomicU64, AtomicU8, Ordering};

pub use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use parray_layout::{ElemType, Record};

/// A type that can be the element of a parray data type.
///
/// # Safety
/// The layout (size and alignment) must be that of the CUDA C type named by `ELEM`, the
/// all-zero bit pattern must be a valid value (buffers are zero-initialised and shared
/// bit-for-bit with generated kernels), every bit pattern of its size must be a valid
/// value (elements are read word by word), it has no padding, and its alignment is 1, 2,
/// 4, 8 or 16 bytes (see [`load_relaxed`]). `#[derive(parray::Record)]` checks all of
/// this for a record.
pub unsafe trait Element:
    Copy + Send + Sync + Default + 'static + DeviceRepr + ValidAsZeroBits
{
    /// The type-language element this Rust type stands for.
    const ELEM: ElemType;
}

/// One step of a word of each size: from the first pointer into the second.
type WordSteps = (
    unsafe fn(*const u8, *mut u8),
    unsafe fn(*const u16, *mut u16),
    unsafe fn(*const u32, *mut u32),
    unsafe fn(*const u64, *mut u64),
);

/// Moves `bytes` bytes from `from` to `to` in words of `word` bytes (1, 2, 4 or 8), each
/// through the matching `step` (an atomic load or store of one word).
///
/// # Safety
/// `from` and `to` must be valid for `bytes` and aligned to `word`, `bytes` a multiple of
/// `word`, and each `step` safe to call on each pair of word pointers within them.
#[inline(always)]
unsafe fn by_words(from: *const u8, to: *mut u8, bytes: usize, word: usize, step: WordSteps) {
    macro_rules! each {
        ($w:ty, $f:expr) => {
            for k in 0..bytes / size_of::<$w>() {
                // SAFETY: the caller's contract, word by word.
                unsafe { $f((from as *const $w).add(k), (to as *mut $w).add(k)) }
            }
        };
    }
    match word {
        1 => each!(u8, step.0),
        2 => each!(u16, step.1),
        4 => each!(u32, step.2),
        _ => each!(u64, step.3),
    }
}

/// Atomic relaxed loads of one word, from the first pointer into the second.
const LOADS: WordSteps = (
    // SAFETY (each): `by_words`' caller guarantees the pointers.
    |f, t| unsafe { t.write(AtomicU8::from_ptr(f as *mut u8).load(Ordering::Relaxed)) },
    |f, t| unsafe { t.write(AtomicU16::from_ptr(f as *mut u16).load(Ordering::Relaxed)) },
    |f, t| unsafe { t.write(AtomicU32::from_ptr(f as *mut u32).load(Ordering::Relaxed)) },
    |f, t| unsafe { t.write(AtomicU64::from_ptr(f as *mut u64).load(Ordering::Relaxed)) },
);

/// Atomic relaxed stores of one word, from the first pointer into the second.
const STORES: WordSteps = (
    // SAFETY (each): `by_words`' caller guarantees the pointers.
    |f, t| unsafe { AtomicU8::from_ptr(t).store(f.read(), Ordering::Relaxed) },
    |f, t| unsafe { AtomicU16::from_ptr(t).store(f.read(), Ordering::Relaxed) },
    |f, t| unsafe { AtomicU32::from_ptr(t).store(f.read(), Ordering::Relaxed) },
    |f, t| unsafe { AtomicU64::from_ptr(t).store(f.read(), Ordering::Relaxed) },
);

/// Reads the element at `p` with relaxed atomic loads of its words: how writable handles
/// read, so that threads of a detour that race on an element get some value written
/// there (as on a GPU), never undefined behaviour. Every access to an element of `T`
/// moves words of one size ([`ElemType::word_bytes`]), so racing accesses never mix sizes.
///
/// # Safety
/// `p` must be valid for reads and aligned, and every concurrent access to the element
/// must be atomic (through [`store_relaxed`] or an atomic update).
#[inline(always)]
pub(crate) unsafe fn load_relaxed<T: Element>(p: *const T) -> T {
    // SAFETY: the caller's contract; the whole element is its own field at offset 0.
    unsafe { load_field_relaxed(p, 0) }
}

/// Writes `v` at `p` with relaxed atomic stores of its words (see [`load_relaxed`]).
///
/// # Safety
/// As [`load_relaxed`], for writes.
#[inline(always)]
pub(crate) unsafe fn store_relaxed<T: Element>(p: *mut T, v: T) {
    // SAFETY: the caller's contract; the whole element is its own field at offset 0.
    unsafe { store_field_relaxed(p, 0, v) }
}

/// Writes the field `v` at `offset` bytes into the record at `p`, in the record's words.
///
/// # Safety
/// As [`store_relaxed`] for `p`; `offset` is that of a field of type `F` in `T` (so the
/// field's bytes are whole words of `T`'s: [`ElemType::word_bytes`]).
#[inline(always)]
pub(crate) unsafe fn store_field_relaxed<T: Element, F: Element>(p: *mut T, offset: usize, v: F) {
    let word = const { T::ELEM.word_bytes() as usize };
    // SAFETY: the caller's contract; `v` has no padding.
    unsafe {
        let to = p.cast::<u8>().add(offset);
        by_words((&raw const v).cast(), to, size_of::<F>(), word, STORES)
    }
}

/// Reads the field of `F` at `offset` bytes into the record at `p`, in the record's words
/// (see [`load_relaxed`]): only the field's bytes move.
///
/// # Safety
/// As [`load_relaxed`] for `p`; `offset` is that of a field of type `F` in `T` (so the
/// field lies in the record, at whole words, aligned for `F`).
#[inline(always)]
pub(crate) unsafe fn load_field_relaxed<T: Element, F: Element>(p: *const T, offset: usize) -> F {
    let mut out = std::mem::MaybeUninit::<F>::uninit();
    let word = const { T::ELEM.word_bytes() as usize };
    // SAFETY: the caller's contract; each word of `out`, an `F`, is written, and any bits
    // are a value.
    unsafe {
        let from = p.cast::<u8>().add(offset);
        by_words(from, out.as_mut_ptr().cast(), size_of::<F>(), word, LOADS);
        out.assume_init()
    }
}

/// Storage of `extent` records of `T` kept one array per field (SPEC 2.3): the record
/// `r` (`T::ELEM`), and where its field arrays start (each at a multiple of `align`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldArrays {
    pub(crate) record: Record,
    pub(crate) extent: usize,
    pub(crate) align: u64,
}

impl FieldArrays {
    /// Bytes from the storage's start to field `k` of element `index`, and the field's
    /// size.
    #[inline(always)]
    pub(crate) fn at(self, k: usize, index: usize) -> (usize, usize) {
        let size = self.record.def().fields[k].elem.size_bytes() as usize;
        let start = self.record.soa_start(k, self.extent as u64, self.align) as usize;
        (start + index * size, size)
    }

    /// The addresses of the fields of element `index` in the storage at `start`: the
    /// struct a kernel's `soa` parameter is (`Particle_soa`).
    pub(crate) fn addresses(self, start: u64, index: usize) -> Vec<u64> {
        let fields = 0..self.record.def().fields.len();
        fields.map(|k| start + self.at(k, index).0 as u64).collect()
    }
}

/// Reads the bytes of a `V` from `offset` within element `index` of the SoA storage
/// `fields` at `base` (the whole record, or one field of it): each field's part from its
/// array, in `T`'s words (so that racing accesses move words of one size, as
/// [`load_relaxed`]'s do). [`store_fields`] writes them so.
///
/// # Safety
/// `fields.record` must be `T`'s record, `base` valid for reads of the storage's bytes
/// ([`Record::soa_bytes`])
/// and aligned to every field's alignment, `index < fields.extent`, and every concurrent
/// access to the storage atomic; `offset` and the size of `V` name whole words of `T`
/// within it (a field, or the record).
#[inline(always)]
pub(crate) unsafe fn load_fields<T: Element, V: Element>(
    fields: FieldArrays,
    base: *const u8,
    index: usize,
    offset: usize,
) -> V {
    let mut out = std::mem::MaybeUninit::<V>::uninit();
    let to = out.as_mut_ptr().cast::<u8>();
    for (stored, value, bytes) in field_parts(fields, index, offset, size_of::<V>()) {
        // SAFETY: the caller's contract: the field's bytes lie in the storage, aligned for
        // it (a multiple of `align` plus whole fields); the part lies in the field and in
        // `out`, at multiples of the word.
        unsafe {
            by_words(
                base.add(stored),
                to.add(value),
                bytes,
                T::ELEM.word_bytes() as usize,
                LOADS,
            )
        }
    }
    // SAFETY: a record has no padding, so the fields cover every byte of the `V` at `offset`
    // and wrote every byte of `out`; any bits are a value.
    unsafe { out.assume_init() }
}

/// Writes the bytes of `v` from `offset` within a record (the whole record, or one field
/// of it) to element `index` of the SoA storage `fields` at `base`, each field's part to
/// its array, in `T`'s words.
///
/// # Safety
/// As [`load_fields`], for writes; `offset` and the size of `V` name whole words of `T`
/// within it (a field, a part of one, or the record), and `V` has no padding.
#[inline(always)]
pub(crate) unsafe fn store_fields<T: Element, V: Element>(
    fields: FieldArrays,
    base: *mut u8,
    index: usize,
    offset: usize,
    v: V,
) {
    let from = (&raw const v).cast::<u8>();
    for (stored, value, bytes) in field_parts(fields, index, offset, size_of::<V>()) {
        // SAFETY: the caller's contract; the part lies in the field and in `v`, at
        // multiples of the word.
        unsafe {
            by_words(
                from.add(value),
                base.add(stored),
                bytes,
                T::ELEM.word_bytes() as usize,
                STORES,
            )
        }
    }
}

/// The parts of element `index`'s fields that the `len` bytes from `offset` within the
/// record cover: for each field they meet, where the part lies in the SoA storage, where
/// in the value, and its bytes.
#[inline(always)]
fn field_parts(
    fields: FieldArrays,
    index: usize,
    offset: usize,
    len: usize,
) -> impl Iterator<Item = (usize, usize, usize)> {
    (0..fields.record.def().fields.len()).filter_map(move |k| {
        let (at, size) = fields.at(k, index);
        let field = fields.record.field_offset(k) as usize;
        let (lo, hi) = (field.max(offset), (field + size).min(offset + len));
        (lo < hi).then(|| (at + lo - field, lo - offset, hi - lo))
    })
}

macro_rules! scalar_elements {
    ($($rust:ty => $elem:ident),* $(,)?) => {$(
        // SAFETY: Rust's primitive has the size and alignment of the CUDA C scalar.
        unsafe impl Element for $rust {
            const ELEM: ElemType = ElemType::$elem;
        }
    )*};
}

scalar_elements! {
    f32 => Float,
    f64 => Double,
    i32 => Int,
    u32 => Unsigned,
    i8 => Char,
    u8 => UChar,
    i64 => Long,
}

// SAFETY: `half`'s types are `repr(transparent)` over a `u16`, as CUDA's `__half` and
// `__nv_bfloat16` are 2-byte aligned 16-bit values; every bit pattern is a number or a NaN.
unsafe impl Element for half::f16 {
    const ELEM: ElemType = ElemType::Half;
}
// SAFETY: as for `half::f16`.
unsafe impl Element for half::bf16 {
    const ELEM: ElemType = ElemType::Bf16;
}

/// The element of `smem mbarrier [S] FULL;` (SPEC 3.9, "TMA copies"): the 8 bytes of a
/// Hopper mbarrier in shared memory. A body touches it only through the TMA forms; the
/// emulation's state of a barrier is [`crate::mem::mbarrier`]'s model, not these bytes.
#[derive(Clone, Copy, Default, Debug, PartialEq, Eq)]
#[repr(transparent)]
pub struct Mbarrier(pub u64);

// SAFETY: a `u64` of 8 bytes at 8-byte alignment, as the C's `unsigned long long`.
unsafe impl DeviceRepr for Mbarrier {}
// SAFETY: every bit pattern of a `u64`, zero included, is a value.
unsafe impl ValidAsZeroBits for Mbarrier {}
// SAFETY: as above; no padding, alignment 8.
unsafe impl Element for Mbarrier {
    const ELEM: ElemType = ElemType::Mbarrier;
}

/// Lane-wise `+ - * /` of a vector type, with another of its type or with a scalar of its
/// lane type on either side, and their compound assignments: what a body's `p * 2.0` on a
/// `Float4` computes (SPEC.md 3.5, "Vectors"), as the CUDA samples' `helper_math.h`
/// does. Each lane is the scalar operation, so it rounds as the scalar does.
macro_rules! vector_arithmetic {
    ($name:ident, $scalar:ty, $($field:ident),+) => {
        vector_arithmetic!(@op $name, $scalar, Add add AddAssign add_assign +, $($field),+);
        vector_arithmetic!(@op $name, $scalar, Sub sub SubAssign sub_assign -, $($field),+);
        vector_arithmetic!(@op $name, $scalar, Mul mul MulAssign mul_assign *, $($field),+);
        vector_arithmetic!(@op $name, $scalar, Div div DivAssign div_assign /, $($field),+);
    };
    (@op $name:ident, $scalar:ty, $tr:ident $f:ident $tra:ident $fa:ident $op:tt, $($field:ident),+) => {
        impl std::ops::$tr for $name {
            type Output = $name;
            #[inline(always)]
            #[track_caller]
            fn $f(self, o: $name) -> $name {
                $name { $($field: self.$field $op o.$field),+ }
            }
        }
        impl std::ops::$tr<$scalar> for $name {
            type Output = $name;
            #[inline(always)]
            #[track_caller]
            fn $f(self, o: $scalar) -> $name {
                $name { $($field: self.$field $op o),+ }
            }
        }
        impl std::ops::$tr<$name> for $scalar {
            type Output = $name;
            #[inline(always)]
            #[track_caller]
            fn $f(self, o: $name) -> $name {
                $name { $($field: self $op o.$field),+ }
            }
        }
        impl std::ops::$tra for $name {
            #[inline(always)]
            #[track_caller]
            fn $fa(&mut self, o: $name) {
                *self = *self $op o;
            }
        }
        impl std::ops::$tra<$scalar> for $name {
            #[inline(always)]
            #[track_caller]
            fn $fa(&mut self, o: $scalar) {
                *self = *self $op o;
            }
        }
    };
}

macro_rules! vector_elements {
    ($($(#[$doc:meta])* $name:ident($scalar:ty, align $align:literal) { $($field:ident),+ }),* $(,)?) => {$(
        $(#[$doc])*
        #[repr(C, align($align))]
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct $name {
            $(pub $field: $scalar,)+
        }

        impl $name {
            /// Builds the vector from its components, like CUDA's `make_*`.
            #[inline(always)]
            pub const fn new($($field: $scalar),+) -> Self {
                Self { $($field),+ }
            }
        }

        vector_arithmetic!($name, $scalar, $($field),+);

        // SAFETY: repr(C) of plain scalars with CUDA's alignment; no padding, no pointers.
        unsafe impl DeviceRepr for $name {}
        // SAFETY: every field is a number, for which all-zero bits are valid.
        unsafe impl ValidAsZeroBits for $name {}
        // SAFETY: size and alignment equal CUDA's vector type (checked by tests).
        unsafe impl Element for $name {
            const ELEM: ElemType = ElemType::$name;
        }
    )*};
}

/// A vector element (`Float2`, `Float4`, `Double2`, `Int2`, `Int4`, and the 16-bit
/// `Half2`..`Bf16x8` a `#copy` moves) seen as `LANES` consecutive elements of `Lane`:
/// what `load2`/`load4`/`load8` read and `store2`/`store4`/`store8` write
/// (see [`crate::Access::load_vector`]). Sealed: the accesses rely on `LANES` and on
/// [`Vector::from_lanes`] asking for lanes `0..LANES` only.
pub trait Vector: Element + sealed::Sealed {
    /// The element type of one lane.
    type Lane: Element;
    /// The number of lanes (2, 4 or 8).
    const LANES: usize;
    /// The vector whose lane `i` is `lane(i)`, for `i` in `0..LANES`, in that order.
    fn from_lanes(lane: impl FnMut(usize) -> Self::Lane) -> Self;
    /// Lane `i` (`x`, `y`, `z`, `w`), for `i` below `LANES`.
    fn lane(&self, i: usize) -> Self::Lane;
}

mod sealed {
    pub trait Sealed {}
    pub trait Number {}
}

/// A number type of the body language (`i8 u8 i32 u32 i64 u64 usize f32 f64 f16 bf16`):
/// the bound of a generic function of the body language (`#[parray::func] fn sq<T:
/// parray::Num>(x: T) -> T { x * x }`). It gives the plain Rust function what the body
/// language has on every number type: `+ - * / %`, their assignments and comparisons (`%`
/// of floats is Rust's, C's `fmod`). Sealed: a cuda body instantiates such a function at
/// these types only.
pub trait Num:
    Copy
    + PartialOrd
    + std::ops::Add<Output = Self>
    + std::ops::Sub<Output = Self>
    + std::ops::Mul<Output = Self>
    + std::ops::Div<Output = Self>
    + std::ops::Rem<Output = Self>
    + std::ops::AddAssign
    + std::ops::SubAssign
    + std::ops::MulAssign
    + std::ops::DivAssign
    + std::ops::RemAssign
    + sealed::Number
{
    /// `v` as this type, as a body's `v as T` computes it: Rust's `as` (a float rounded to
    /// nearest, an integer wrapped), a half rounded once from `v`'s exact value.
    fn from_i32(v: i32) -> Self;
    /// `v` as this type, as a body's `v as T` computes it: Rust's `as`, which is CUDA's
    /// conversion too (to an integer truncated toward zero and saturated at the type's
    /// ends, NaN to 0; to a float `v` itself or `v as f64`), a half rounded once (to
    /// nearest, ties to even).
    fn from_f32(v: f32) -> Self;
    /// `v` as this type, as [`Num::from_f32`] converts (a half and an `f32` rounded once
    /// from `v`'s exact value).
    fn from_f64(v: f64) -> Self;
    /// This value as an `f32`, as a body's `x as f32` computes it (exact from a half).
    fn to_f32(self) -> f32;
    /// This value as an `f64`, as a body's `x as f64` computes it (exact from a half).
    fn to_f64(self) -> f64;
}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl sealed::Number for $t {}
        impl Num for $t {
            #[inline(always)]
            fn from_i32(v: i32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                v as $t
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                v as $t
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                self as f32
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}

numbers!(i8, u8, i32, u32, i64, u64, usize, f32, f64);

/// `Num` of a half: to `f32` and `f64` exactly, from an `i32` through its exact `f64`
/// value, rounded once (as the body's widening pass converts an integer to a half).
macro_rules! halves {
    ($($t:ident: $from_f64:path;)*) => {$(
        impl sealed::Number for half::$t {}
        impl Num for half::$t {
            #[inline(always)]
            fn from_i32(v: i32) -> Self {
                $from_f64(f64::from(v))
            }
            #[inline(always)]
            fn from_f32(v: f32) -> Self {
                half::$t::from_f32(v)
            }
            #[inline(always)]
            fn from_f64(v: f64) -> Self {
                $from_f64(v)
            }
            #[inline(always)]
            fn to_f32(self) -> f32 {
                half::$t::to_f32(self)
            }
            #[inline(always)]
            fn to_f64(self) -> f64 {
                half::$t::to_f64(self)
            }
        }
    )*};
}

halves! {
    f16: parray_compiler::rounding::f16_from_f64;
    bf16: parray_compiler::rounding::bf16_from_f64;
}

/// A float type of the body language (`f32 f64 f16 bf16`): the bound of a generic
/// function that computes with constants and math (`#[parray::func] fn gelu<T:
/// parray::Float>(x: T) -> T`). Besides [`Num`]'s operators and conversions (a constant
/// is `T::from_f32(0.5)`) it gives the math methods of the body language (SPEC.md,
/// "Functions"); on `f16` and `bf16` a method is the `f32` method, rounded, as a body
/// computes it. Every float is an [`Element`], so that a function takes a pointer to one
/// (`parray::Ptr<'_, T>`). Sealed, as `Num` is.
pub trait Float: Num + Element {
    fn sqrt(self) -> Self;
    fn exp(self) -> Self;
    fn exp2(self) -> Self;
    fn ln(self) -> Self;
    fn log2(self) -> Self;
    fn log10(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn abs(self) -> Self;
    fn floor(self) -> Self;
    fn ceil(self) -> Self;
    fn round(self) -> Self;
    fn trunc(self) -> Self;
    fn recip(self) -> Self;
    fn min(self, other: Self) -> Self;
    fn max(self, other: Self) -> Self;
    fn powf(self, n: Self) -> Self;
    fn powi(self, n: i32) -> Self;
    fn mul_add(self, a: Self, b: Self) -> Self;
}

/// `Float` of a type with the math as inherent methods, through `$wide` (the type
/// itself, or `f32` for a half) and back by `$narrow`.
macro_rules! floats {
    ($($t:ty: $wide:expr, $narrow:expr;)*) => {$(
        impl Float for $t {
            floats!(@unary $wide, $narrow, sqrt exp exp2 ln log2 log10 sin cos tan tanh abs
                floor ceil round trunc recip);
            floats!(@binary $wide, $narrow, min max powf);
            #[inline(always)]
            fn powi(self, n: i32) -> Self {
                $narrow($wide(self).powi(n))
            }
            #[inline(always)]
            fn mul_add(self, a: Self, b: Self) -> Self {
                $narrow($wide(self).mul_add($wide(a), $wide(b)))
            }
        }
    )*};
    (@unary $wide:expr, $narrow:expr, $($m:ident)*) => {$(
        #[inline(always)]
        fn $m(self) -> Self {
            $narrow($wide(self).$m())
        }
    )*};
    (@binary $wide:expr, $narrow:expr, $($m:ident)*) => {$(
        #[inline(always)]
        fn $m(self, other: Self) -> Self {
            $narrow($wide(self).$m($wide(other)))
        }
    )*};
}

floats! {
    f32: |x: f32| x, |x: f32| x;
    f64: |x: f64| x, |x: f64| x;
    half::f16: half::f16::to_f32, half::f16::from_f32;
    half::bf16: half::bf16::to_f32, half::bf16::from_f32;
}

/// An element type with a vector of two lanes: `f32` (`Float2`), `f64` (`Double2`), `i32`
/// (`Int2`), `f16` (`Half2`), `bf16` (`Bf16x2`); what `load2`/`store2` move.
pub trait HasVector2: Element {
    type Vector2: Vector<Lane = Self>;
}

/// An element type with a vector of four lanes: `f32` (`Float4`), `i32` (`Int4`), `f16`
/// (`Half4`), `bf16` (`Bf16x4`); what `load4`/`store4` move.
pub trait HasVector4: Element {
    type Vector4: Vector<Lane = Self>;
}

macro_rules! vectors {
    ($($name:ident($lane:ty, $n:literal) { $($i:literal => $field:ident),+ }),* $(,)?) => {$(
        impl sealed::Sealed for $name {}

        impl Vector for $name {
            type Lane = $lane;
            const LANES: usize = $n;

            #[inline(always)]
            fn from_lanes(mut lane: impl FnMut(usize) -> $lane) -> Self {
                // Struct fields are evaluated in the order written: lane 0 first.
                $name { $($field: lane($i)),+ }
            }

            #[inline(always)]
            fn lane(&self, i: usize) -> $lane {
                match i {
                    $($i => self.$field,)+
                    _ => panic!("parray: lane {i} of a {}", stringify!($name)),
                }
            }
        }
    )*};
}

vectors! {
    Float2(f32, 2) { 0 => x, 1 => y },
    Float4(f32, 4) { 0 => x, 1 => y, 2 => z, 3 => w },
    Double2(f64, 2) { 0 => x, 1 => y },
    Int2(i32, 2) { 0 => x, 1 => y },
    Int4(i32, 4) { 0 => x, 1 => y, 2 => z, 3 => w },
}

impl HasVector2 for f32 {
    type Vector2 = Float2;
}
impl HasVector2 for f64 {
    type Vector2 = Double2;
}
impl HasVector2 for i32 {
    type Vector2 = Int2;
}
impl HasVector4 for f32 {
    type Vector4 = Float4;
}
impl HasVector4 for i32 {
    type Vector4 = Int4;
}

/// An element type with a vector of eight lanes: `f16` (`Half8`), `bf16` (`Bf16x8`); what
/// a `#copy` moves 16 bytes of them by.
pub trait HasVector8: Element {
    type Vector8: Vector<Lane = Self>;
}

macro_rules! move_vectors {
    ($($(#[$doc:meta])* $name:ident($lane:ty, $n:literal, align $align:literal) $has:ident::$assoc:ident),* $(,)?) => {$(
        $(#[$doc])*
        #[repr(C, align($align))]
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct $name {
            pub lanes: [$lane; $n],
        }

        impl sealed::Sealed for $name {}

        impl Vector for $name {
            type Lane = $lane;
            const LANES: usize = $n;

            #[inline(always)]
            fn from_lanes(lane: impl FnMut(usize) -> $lane) -> Self {
                // `from_fn` calls `lane` for 0, 1, ... in order.
                $name { lanes: std::array::from_fn(lane) }
            }

            #[inline(always)]
            fn lane(&self, i: usize) -> $lane {
                self.lanes[i]
            }
        }

        impl $has for $lane {
            type $assoc = $name;
        }

        // SAFETY: repr(C) of plain 16-bit numbers with the alignment of the C struct the
        // generated code declares; no padding, no pointers.
        unsafe impl DeviceRepr for $name {}
        // SAFETY: every lane is a number, for which all-zero bits are valid.
        unsafe impl ValidAsZeroBits for $name {}
        // SAFETY: size and alignment equal the generated C struct's (checked by tests).
        unsafe impl Element for $name {
            const ELEM: ElemType = ElemType::$name;
        }
    )*};
}

move_vectors! {
    /// Two `f16`s moved as one 4-byte access (a `#copy`'s vector; no arithmetic).
    Half2(half::f16, 2, align 4) HasVector2::Vector2,
    /// Four `f16`s moved as one 8-byte access.
    Half4(half::f16, 4, align 8) HasVector4::Vector4,
    /// Eight `f16`s moved as one 16-byte access.
    Half8(half::f16, 8, align 16) HasVector8::Vector8,
    /// Two `bf16`s moved as one 4-byte access (a `#copy`'s vector; no arithmetic).
    Bf16x2(half::bf16, 2, align 4) HasVector2::Vector2,
    /// Four `bf16`s moved as one 8-byte access.
    Bf16x4(half::bf16, 4, align 8) HasVector4::Vector4,
    /// Eight `bf16`s moved as one 16-byte access.
    Bf16x8(half::bf16, 8, align 16) HasVector8::Vector8,
}

vector_elements! {
    /// CUDA's `float2` (8-byte aligned).
    Float2(f32, align 8) { x, y },
    /// CUDA's `float4` (16-byte aligned).
    Float4(f32, align 16) { x, y, z, w },
    /// CUDA's `double2` (16-byte aligned).
    Double2(f64, align 16) { x, y },
    /// CUDA's `int2` (8-byte aligned).
    Int2(i32, align 8) { x, y },
    /// CUDA's `int4` (16-byte aligned).
    Int4(i32, align 16) { x, y, z, w },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check<T: Element + PartialEq + std::fmt::Debug>(v: T) {
        assert!(
            matches!(size_of::<T>(), 1 | 2 | 4 | 8 | 16),
            "{:?}",
            T::ELEM
        );
        assert_eq!(size_of::<T>() as u64, T::ELEM.size_bytes(), "{:?}", T::ELEM);
        assert!(align_of::<T>() >= size_of::<T>().min(8), "{:?}", T::ELEM);
        let mut slot = T::default();
        // SAFETY: a live, aligned local, not shared.
        unsafe {
            store_relaxed(&mut slot, v);
            assert_eq!(load_relaxed(&slot), v);
        }
    }

    /// Every element type meets the word-access part of `Element`'s contract.
    #[test]
    fn elements_are_read_and_written_by_words() {
        check(1.5f32);
        check(-2.25f64);
        check(-7i32);
        check(7u32);
        check(-3i8);
        check(-1i64 << 40);
        check(half::f16::from_f32(-1.5));
        check(half::bf16::from_f32(3.0e38));
        check(Float2::new(1.0, 2.0));
        check(Float4::new(1.0, 2.0, 3.0, 4.0));
        check(Double2::new(1.0, -2.0));
        check(Int2::new(1, -2));
        check(Int4::new(1, -2, 3, -4));
        let h = |x: f32| half::bf16::from_f32(x);
        check(Bf16x8::from_lanes(|i| h(i as f32)));
    }
}
