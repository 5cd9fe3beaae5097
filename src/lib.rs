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
    gpu, Access, Buffer, Double2, Element, Error, Float2, Float4, Int2, Int4, Ptr, Result,
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
    pub use parray_runtime::pthd::{detour as pthd_detour, ThreadCtx as PthdCtx};

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

    /// `atomic_add(p, v)` in a detour body run on the CPU: adds `v` to `*p` atomically and
    /// returns the old value, as CUDA's `atomicAdd`.
    #[track_caller]
    pub fn atomic_add<T: Element + parray_runtime::gpu::emulate::AtomicAdd>(p: Ptr<T>, v: T) -> T {
        // Bounds first (debug builds), through the ordinary access path.
        let _ = p.load(0);
        // SAFETY: `p` designates a live element of host memory (checked above in debug
        // builds; the contract of `Ptr` otherwise); every concurrent access to it in the
        // body is atomic, as the CUDA rule for atomics requires.
        unsafe { parray_runtime::gpu::emulate::atomic_add(p.host_address(), v) }
    }

    /// What a cuda body's emulated thread uses: its block barrier and shared arrays.
    pub struct EmuCtx<'a, 'b>(pub &'a parray_runtime::gpu::emulate::ThreadCtx<'b>);

    impl EmuCtx<'_, '_> {
        /// `#sync` in a cuda body: the block's barrier.
        #[inline]
        pub fn sync(&self) {
            self.0.sync_block()
        }

        /// `S::create()` of an smem type: the block's shared array number `slot`.
        #[inline]
        pub fn shared<T: Element>(&self, slot: usize, len: usize, name: &'static str) -> Ptr<T> {
            let array = self.0.shared::<T>(slot, len);
            // SAFETY: the block's shared array lives until the body returns, which ends
            // every use of the handle; accesses follow `Access`'s contract, as on a GPU.
            unsafe { Ptr::from_raw(array.as_ptr(), len, name, crate::MemKind::Smem) }
        }
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
