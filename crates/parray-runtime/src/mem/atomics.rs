//! CUDA's atomics on the CPU: `atomicAdd` (relaxed, as on a GPU), `atomicExch` and
//! `atomicCAS` (sequentially consistent, so that a lock built of them orders the accesses
//! inside it), for the element types a body may update. pthd threads and the emulation of
//! a grid both use them: they belong to memory, below every kind of thread.

use std::sync::atomic::{AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};

/// Element types of CUDA's `atomicAdd`.
pub trait AtomicAdd: Copy {
    /// The alignment the update needs: that of the atomic type of the same size.
    const ATOMIC_ALIGN: usize;

    /// Adds `v` to `*ptr` atomically and returns the old value.
    ///
    /// # Safety
    /// As [`atomic_add`].
    unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self;
}

macro_rules! atomic_add_int {
    ($($t:ty => $atomic:ty),*) => {$(
        impl AtomicAdd for $t {
            const ATOMIC_ALIGN: usize = align_of::<$atomic>();

            /// Wrapping on overflow, as on a GPU.
            #[inline]
            unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: the caller guarantees a valid, aligned pointer accessed only
                // atomically meanwhile; the atomic type has the integer's size and alignment.
                unsafe { <$atomic>::from_ptr(ptr) }.fetch_add(v, Ordering::Relaxed)
            }
        }
    )*};
}

atomic_add_int!(i32 => AtomicI32, u32 => AtomicU32, i64 => AtomicI64, u64 => AtomicU64);

macro_rules! atomic_add_float {
    ($($t:ty => $atomic:ty),*) => {$(
        impl AtomicAdd for $t {
            const ATOMIC_ALIGN: usize = align_of::<$atomic>();

            /// A compare-and-swap loop on the bits, as CUDA's own emulation of float atomics.
            #[inline]
            unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: the caller guarantees a valid pointer accessed only atomically
                // meanwhile, aligned for the atomic (same size and, on 64-bit targets, same
                // alignment as the float).
                let cell = unsafe { <$atomic>::from_ptr(ptr.cast()) };
                let mut old = cell.load(Ordering::Relaxed);
                loop {
                    let new = (<$t>::from_bits(old) + v).to_bits();
                    let relaxed = Ordering::Relaxed;
                    match cell.compare_exchange_weak(old, new, relaxed, relaxed) {
                        Ok(_) => return <$t>::from_bits(old),
                        Err(current) => old = current,
                    }
                }
            }
        }
    )*};
}

atomic_add_float!(f32 => AtomicU32, f64 => AtomicU64);

/// CUDA's `atomicAdd`: adds `v` to `*ptr` atomically and returns the old value.
///
/// Relaxed ordering, as on a GPU: it orders nothing else; a kernel's results are visible
/// to the host once the launch returns.
///
/// # Safety
/// `ptr` must be valid for reads and writes, aligned to `T::ATOMIC_ALIGN` (that of `T`
/// on 64-bit targets; 8 for `f64`/`u64`/`i64` on some others),
/// and while any thread may be updating it, every access to `*ptr` must go through these
/// atomics.
#[inline]
pub unsafe fn atomic_add<T: AtomicAdd>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded to the caller.
    unsafe { T::atomic_add(ptr, v) }
}

/// Element types of CUDA's `atomicExch` and `atomicCAS` in a body: `int` and `unsigned`.
pub trait AtomicSwap: Copy {
    /// The alignment the update needs: that of the atomic type of the same size.
    const ATOMIC_ALIGN: usize;

    /// Writes `v` to `*ptr` atomically and returns the old value.
    ///
    /// # Safety
    /// As [`atomic_add`].
    unsafe fn atomic_exch(ptr: *mut Self, v: Self) -> Self;

    /// Writes `v` to `*ptr` atomically where it equals `compare`; returns the old value
    /// (equal to `compare` exactly when `v` was written).
    ///
    /// # Safety
    /// As [`atomic_add`].
    unsafe fn atomic_cas(ptr: *mut Self, compare: Self, v: Self) -> Self;
}

macro_rules! atomic_swap {
    ($($t:ty => $atomic:ty),*) => {$(
        impl AtomicSwap for $t {
            const ATOMIC_ALIGN: usize = align_of::<$atomic>();

            #[inline]
            unsafe fn atomic_exch(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: as in `atomic_add`.
                unsafe { <$atomic>::from_ptr(ptr) }.swap(v, Ordering::SeqCst)
            }

            #[inline]
            unsafe fn atomic_cas(ptr: *mut Self, compare: Self, v: Self) -> Self {
                // SAFETY: as in `atomic_add`.
                let cell = unsafe { <$atomic>::from_ptr(ptr) };
                match cell.compare_exchange(compare, v, Ordering::SeqCst, Ordering::SeqCst) {
                    Ok(old) | Err(old) => old,
                }
            }
        }
    )*};
}

atomic_swap!(i32 => AtomicI32, u32 => AtomicU32);

/// [`atomic_add`] for `f32`, the common case.
///
/// # Safety
/// As [`atomic_add`].
#[inline]
pub unsafe fn atomic_add_f32(ptr: *mut f32, v: f32) -> f32 {
    // SAFETY: forwarded to the caller.
    unsafe { f32::atomic_add(ptr, v) }
}
