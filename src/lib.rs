//! Parray: array types for heterogeneous parallel programming.
//!
//! Write a kernel once against the logical shape of the data; retarget it to another
//! memory layout or another kind of thread by changing a type. See `SPEC.md` for the
//! language and `examples/` for the paper's figures.
//!
//! ```ignore
//! use parray::prelude::*;
//! parray! { pub paged float [[3][2]][4] A; }
//! ```

pub use parray_core as core;
pub use parray_core::MemKind;
pub use parray_macros::{detour, host, kernel_source, parray};
pub use parray_runtime::{
    copy, generic, gpu, Access, AccessMut, Array, DataType, DetourSite, Device, Double2, Element,
    Error, Float2, Float4, Int2, Int4, Ptr, PtrMut, Result, ThreadArray, ThreadArrayKind, ThreadId,
    ViewOf,
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
#[doc(hidden)]
pub mod __private {
    pub use parray_runtime::gpu::emulate::ThreadCtx as CudaCtx;
    pub use parray_runtime::pthd::{detour as pthd_detour, ThreadCtx as PthdCtx};
    pub use parray_runtime::DetourSite;

    /// An index value of any integer type, as the `usize` offsets are computed in; a
    /// negative index panics (it would otherwise wrap into the array, in any build).
    #[diagnostic::on_unimplemented(
        message = "an index must be an integer, not `{Self}`",
        label = "this index is a `{Self}`",
        note = "convert it where that is what you mean: `x as usize`"
    )]
    pub trait IndexValue: Copy {
        fn to_index(self) -> usize;
    }

    macro_rules! index_value {
        (unsigned $($t:ty),*; signed $($s:ty),*) => {
            $(
                impl IndexValue for $t {
                    #[inline(always)]
                    fn to_index(self) -> usize {
                        self as usize
                    }
                }
            )*
            $(
                impl IndexValue for $s {
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
    index_value!(unsigned usize, u8, u16, u32, u64; signed i8, i16, i32, i64, isize);

    #[cold]
    #[track_caller]
    fn negative_index(i: i64) -> ! {
        panic!("parray: index {i} is negative")
    }

    #[inline(always)]
    #[track_caller]
    pub fn ix<I: IndexValue>(i: I) -> usize {
        i.to_index()
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
        indexed_as, CopyTarget, Handles, IndexedAs, Writable,
    };
    pub use parray_runtime::gpu::emulate::Registers;
}
