//! The kernels the runtime builds for itself, built as IR bodies and written by the one C
//! writer, as a detour's body is: a `#copy` between layouts on a GPU ([`remap_kernel`]),
//! the rows of a 2-D copy there ([`rows_kernel`]),
//! the steps of a copy between distributed types ([`exchange_kernel`]), the store of a
//! cuFFT plan whose output a type lays out ([`fft_store_callback`]), and the kernel of
//! a detour whose forms wait for their types ([`specialised_kernel`]).
//!
//! Each kernel runs over a thread array declared in Parray (its grid, its parameters and
//! its thread indices come from the declaration, as a detour's do), is typed by
//! [`check`](crate::passes::check) and proved by [`bounds`](crate::passes::bounds). Every
//! access of every one of them is proved: a kernel the prover cannot prove is an error
//! here (the launch passes no fault record), never a kernel with unchecked guesses. So the
//! copies get HIP, the prover's guarantee and the body language's index rule (32-bit
//! `usize` offsets) with no template text of their own.

mod build;
mod exchange;
mod fft;
mod remap;
mod specialise;

pub use exchange::{exchange_kernel, ExchangeStep, EXCHANGE_BLOCK};
pub use fft::{fft_store_callback, FftStore};
pub use remap::{remap_kernel, rows_kernel, Rows2d, REMAP_PER_THREAD};
pub use specialise::{specialised_kernel, Specialised, TypeBinding};

use parray_layout::CudaGrid;

/// A kernel the runtime builds: its source, the name of its `__global__` function and the
/// grid it is launched on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kernel {
    pub name: String,
    pub source: String,
    pub grid: CudaGrid,
}
