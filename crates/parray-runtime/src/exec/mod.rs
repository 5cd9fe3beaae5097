//! Layer 4, execution: pthd threads and their `#sync`, the CPU emulation of a grid, and
//! launches on a GPU or under the emulation.

pub mod barrier;
pub mod emulate;
mod fault;
pub mod launch;
pub(crate) mod panics;
pub mod pthd;

pub use parray_core::grid::CudaGrid;
