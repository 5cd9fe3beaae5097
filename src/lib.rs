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

mod types;

pub use parray_core as core;
pub use parray_core::MemKind;
pub use parray_macros::{detour, host, parray};
pub use parray_runtime::{
    gpu, Access, Buffer, Double2, Element, Error, Float2, Float4, Int2, Int4, Ptr, Result,
};
pub use types::{DataType, ThreadArray, ThreadArrayKind};

/// What a Parray program needs in scope.
pub mod prelude {
    pub use crate::{detour, host, parray, Access, Buffer, DataType, Ptr, ThreadArray};
}

#[doc(hidden)]
pub use parray_macros::__resume;

/// Items the macros' expansions refer to; not part of the API.
#[doc(hidden)]
pub mod __private {
    pub use parray_runtime::pthd::{detour as pthd_detour, ThreadCtx as PthdCtx};

    /// An index value of any integer type, as the `usize` offsets are computed in.
    pub trait IndexValue: Copy {
        fn to_index(self) -> usize;
    }

    macro_rules! index_value {
        ($($t:ty),*) => {$(
            impl IndexValue for $t {
                #[inline(always)]
                fn to_index(self) -> usize {
                    self as usize
                }
            }
        )*};
    }
    index_value!(usize, u8, u16, u32, u64, i8, i16, i32, i64, isize);

    #[inline(always)]
    pub fn ix<I: IndexValue>(i: I) -> usize {
        i.to_index()
    }
}
