//! Parray: array types for heterogeneous parallel programming.
//!
//! Write a kernel once against the logical shape of the data; retarget it to another
//! memory layout or another kind of thread by changing a type. See `SPEC.md` for the
//! language and `examples/` for the paper's figures.
//!
//! ```
//! use parray::prelude::*;
//!
//! parray! {
//!     pub paged float [[3][2]][4] A;        // Fig 1: 6 rows of 4, the rows split 3 x 2
//! }
//!
//! fn main() -> parray::Result<()> {
//!     let a = A::create()?;
//!     assert_eq!(a.extent(), 24);
//!     assert_eq!(A::offset([5, 1]), 21);   // row 5, column 1
//!     Ok(())
//! }
//! ```
//!
//! The README's example (`examples/readme.rs`) is a whole program: create, fill, detour,
//! read back, check.

pub use parray_core as core;
pub use parray_core::MemKind;

/// Declares data types and thread arrays in the paper's notation. Each becomes a unit
/// struct with its constants and offset function (`DataType`/`ThreadArray`), `create()`
/// for the types with storage, and what the other macros need to find it (SPEC.md 3.1).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged float [4][3] A;          // 4 rows of 3, row-major
///     pub float [#A_1][#A_0] AT;         // the same storage, seen transposed (a view)
///     pub pthd [2] TWO;                  // a thread array of 2 CPU threads
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;
///     a.set([1, 2], 5.0);
///     assert_eq!(a.view::<AT>().at([2, 1]), 5.0);
///     assert_eq!((A::offset([1, 2]), AT::offset([2, 1])), (5, 5));
///     assert_eq!(TWO::THREADS, 2);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_macros::parray;

/// Runs a body on every thread of a thread array: CPU threads for `pthd` (the body
/// captures what it uses), a CUDA grid for `cuda(...)` (the arguments bind to the
/// declared parameters; the CPU emulation runs it where there is no GPU). Returns
/// `parray::Result<()>` when every thread is done (SPEC.md 3.5, chapter 4). A body is a
/// subset of Rust with the paper's forms: `$...$`, `#sync`, `#copy S(p) to D(q);`, and
/// `atomic_add(p + off, v)` (CUDA's `atomicAdd`, on every back end; a form of the body,
/// nothing to import).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged int [8] OUT;
///     pub pthd [8] T;
///     pub dmem int [64] D;
///     pub cuda(int* d, int k) [2][32] G;
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut out = OUT::create()?;
///     detour!(T {
///         out[$OUT[$tid$]$] = ($tid$ * 10) as i32;     // each thread writes its element
///     })?;
///     assert_eq!(out.to_vec()?, vec![0, 10, 20, 30, 40, 50, 60, 70]);
///
///     let mut d = D::create()?;
///     detour!(G(&mut d, 7) {
///         d[$D[$tid$]$] = k + $tid$ as i32;            // a GPU thread per element
///     })?;
///     assert_eq!(d.to_vec()?[63], 70);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_macros::detour;

/// Host code in which the paper's `$...$` forms are compiled (offsets, sizes); otherwise
/// ordinary Rust (SPEC.md 3.3). `host!(<T> ...)` is generic over a type parameter.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub paged float [[2][3]][4] M; }
///
/// fn main() {
///     let (rows, off) = host! { ($dim_0(M)$, $M[[1][2]][3]$) };
///     assert_eq!((rows, off), (6, 23));
/// }
/// ```
#[doc(inline)]
pub use parray_macros::host;

/// The CUDA C a cuda `detour!` generates for the same input, as a `&'static str` (the
/// arguments are checked to exist, as a detour's would be; their values do not matter).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub dmem float [1024][1024] M;
///     pub cuda(float* c) [1024][1024] TA;
/// }
///
/// fn main() {
///     let c = ();
///     let source = kernel_source!(TA(c) {
///         c[$M[$tid_0$][$tid_1$]$] = 1.0f32;
///     });
///     assert!(source.contains("c[tid_0 * 1024 + tid_1] = 1.0f;"), "{source}");
/// }
/// ```
#[doc(inline)]
pub use parray_macros::kernel_source;
pub use parray_runtime::{
    copy, generic, gpu, Access, AccessMut, Array, DataType, DetourSite, Device, Double2, Element,
    Error, Float2, Float4, HasVector2, HasVector4, Int2, Int4, Ptr, PtrMut, Result, ThreadArray,
    ThreadArrayKind, ThreadId, Vector, ViewOf,
};

/// What a Parray program needs in scope.
pub mod prelude {
    pub use crate::{
        detour, host, kernel_source, parray, Access, AccessMut, Array, DataType, Double2, Float2,
        Float4, Int2, Int4, Ptr, PtrMut, ThreadArray, ViewOf,
    };
}

#[doc(hidden)]
pub use parray_macros::__resume;

/// Items the macros' expansions refer to; not part of the API.
/// The integers a `$T[...]$` form accepts as an index: every primitive integer, converted
/// to the `usize` offsets are computed in. A negative index panics (it would otherwise wrap
/// into the array, in any build); a float is a compile error that says to convert it.
#[diagnostic::on_unimplemented(
    message = "an index must be an integer, not `{Self}`",
    label = "this index is a `{Self}`",
    note = "convert it where that is what you mean: `x as usize`"
)]
pub trait IndexInteger: Copy {
    /// The index as a `usize`.
    fn to_index(self) -> usize;
}

macro_rules! index_integer {
    (unsigned $($t:ty),*; signed $($s:ty),*) => {
        $(
            impl IndexInteger for $t {
                #[inline(always)]
                fn to_index(self) -> usize {
                    self as usize
                }
            }
        )*
        $(
            impl IndexInteger for $s {
                #[inline(always)]
                #[track_caller]
                fn to_index(self) -> usize {
                    if self < 0 {
                        negative_index(self as i64);
                    }
                    self as usize
                }
            }
        )*
    };
}
index_integer!(unsigned usize, u8, u16, u32, u64; signed i8, i16, i32, i64, isize);

#[cold]
#[track_caller]
fn negative_index(i: i64) -> ! {
    panic!("parray: index {i} is negative")
}

#[doc(hidden)]
pub mod __private {
    pub use parray_runtime::gpu::emulate::ThreadCtx as CudaCtx;
    pub use parray_runtime::pthd::{detour as pthd_detour, ThreadCtx as PthdCtx};
    pub use parray_runtime::DetourSite;

    use crate::IndexInteger;

    #[inline(always)]
    #[track_caller]
    pub fn ix<I: IndexInteger>(i: I) -> usize {
        i.to_index()
    }

    /// An index of a `$T[...]$` form, which debug builds check against its own dimension
    /// (of `size` elements) of the type `ty`: the access checks the final offset only, and
    /// `A[1][3]` on `[4][3]` is a valid offset (`A[2][0]`'s).
    #[inline(always)]
    #[track_caller]
    pub fn ix_in<I: IndexInteger>(i: I, size: u64, ty: &'static str) -> usize {
        index_in(i.to_index(), size, ty)
    }

    /// [`ix_in`] for an index the body typed (`usize`, or `u32` under the emulation).
    #[inline(always)]
    #[track_caller]
    pub fn index_in<I: Copy + TryInto<u64>>(i: I, size: u64, ty: &'static str) -> I {
        #[cfg(debug_assertions)]
        if let Ok(v) = i.try_into() {
            if v >= size {
                outside_dimension(v, size, ty);
            }
        }
        let _ = (size, ty);
        i
    }

    #[cold]
    #[track_caller]
    #[cfg(debug_assertions)]
    fn outside_dimension(i: u64, size: u64, ty: &str) -> ! {
        panic!("parray: index {i} is out of range for a dimension of {ty} (size {size}); debug builds check each index")
    }

    /// An offset or size of a type parameter in an emulated cuda body, whose `usize` is
    /// 32 bits like the kernel's (the launch checked the type's extent fits).
    #[inline(always)]
    pub fn index32(v: usize) -> u32 {
        v as u32
    }

    /// The failure of `T::offset`: index `index` of dimension `dim` of `type_name` is not
    /// below the dimension's `size`.
    #[cold]
    #[track_caller]
    pub fn index_out_of_range(type_name: &str, dim: usize, index: usize, size: usize) -> ! {
        panic!("parray: index {index} is out of range for {type_name}_{dim} (size {size})")
    }

    /// `T::offset_of` with a slice of the wrong length.
    #[cold]
    #[track_caller]
    pub fn wrong_rank(type_name: &str, rank: usize, given: usize) -> ! {
        panic!(
            "parray: {type_name} has {rank} top-level dimensions, but {given} indices were given"
        )
    }

    /// `T::offset` of a type whose offset expression is past the offset compiler's limits.
    #[cold]
    #[track_caller]
    pub fn offset_too_complex(type_name: &str) -> ! {
        panic!("parray: the offset function of {type_name} is past the offset compiler's limits")
    }

    pub use parray_runtime::array::handles::{
        aligned_for, indexed_as, indexed_on_host, CopyTarget, Handles, IndexedAs, VectorStart,
        Writable,
    };
    pub use parray_runtime::gpu::emulate::Registers;
}
