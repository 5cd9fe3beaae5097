//! Layer 4, execution: pthd threads and their `#sync` (through a team, which mpi ranks
//! also implement), the CPU emulation of a grid, and launches on a GPU or under the
//! emulation, each of one launch shape (`CudaGrid`).

pub mod barrier;
pub mod emulate;
mod fault;
pub mod launch;
pub(crate) mod panics;
pub mod pthd;

pub use parray_layout::grid::CudaGrid;
