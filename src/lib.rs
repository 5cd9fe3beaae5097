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
pub use parray_macros::{detour, host, kernel_source, parray};
pub use parray_runtime::{
    gpu, Access, Buffer, DetourSite, Double2, Element, Error, Float2, Float4, Int2, Int4, Ptr,
    Result, ThreadId,
};
pub use types::{DataType, ThreadArray, ThreadArrayKind};

/// What a Parray program needs in scope.
pub mod prelude {
    pub use crate::{
        detour, host, kernel_source, parray, Access, Buffer, DataType, Double2, Float2, Float4,
        Int2, Int4, Ptr, ThreadArray,
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

    use crate::{Access, Element, Ptr};

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

    /// The failure of `T::offset`: index `index` of dimension `dim` of `type_name` is not
    /// below the dimension's `size`.
    #[cold]
    #[track_caller]
    pub fn index_out_of_range(type_name: &str, dim: usize, index: usize, size: usize) -> ! {
        panic!("parray: index {index} is out of range for {type_name}_{dim} (size {size})")
    }

    /// `atomic_add(p, v)` in a detour body run on the CPU: adds `v` to `*p` atomically and
    /// returns the old value, as CUDA's `atomicAdd`.
    #[track_caller]
    pub fn atomic_add<T: Element + parray_runtime::gpu::emulate::AtomicAdd>(p: Ptr<T>, v: T) -> T {
        p.atomic_add(v)
    }

    /// `R::create()` of an rmem type in a cuda body: one thread's register array.
    pub struct Registers<T: Element, const N: usize> {
        values: std::cell::UnsafeCell<[T; N]>,
        name: &'static str,
    }

    impl<T: Element, const N: usize> Registers<T, N> {
        #[inline]
        pub fn new(name: &'static str) -> Self {
            Registers {
                values: std::cell::UnsafeCell::new([T::default(); N]),
                name,
            }
        }
    }

    impl<T: Element, const N: usize> Access<T> for Registers<T, N> {
        #[inline(always)]
        #[track_caller]
        fn load(&self, off: usize) -> T {
            self.ptr().load(off)
        }

        #[inline(always)]
        #[track_caller]
        fn store(&self, off: usize, v: T) {
            self.ptr().store(off, v)
        }

        #[inline(always)]
        fn ptr(&self) -> Ptr<T> {
            // SAFETY: the array lives as long as `self`, is owned by one thread (it is not
            // `Sync`), and is reached only through `Access`.
            unsafe { Ptr::from_raw(self.values.get().cast(), N, self.name, crate::MemKind::Rmem) }
        }
    }
}
