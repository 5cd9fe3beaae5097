//! Parray's body compiler: one typed IR for every body a program runs, the passes that
//! type and prove it, and the back ends that write it.
//!
//! The road is ordered by types: the front end lowers a body into [`ir::Body`];
//! [`passes::check`] returns a [`ir::Typed`] body; [`passes::bounds::prove`] returns a
//! [`ir::Proved`] one (the body and its proofs, made nowhere else); the back ends take a
//! `&Proved`: [`back::c`] writes CUDA C and HIP C++, `back::rust` (feature `rust`) writes
//! the Rust of pthd threads and of the CPU emulation. [`kernels`] builds the runtime's own
//! kernels (copies, a generic detour's prelude) as IR bodies through the same road. [`fault`] is the record a checked
//! kernel writes and the launch reads, defined once for both.

// Library code reports through errors, not stdout or stderr.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod back;
pub mod copy;
#[cfg(feature = "rust")]
pub mod embed;
pub mod fault;
pub mod ir;
pub mod kernels;
pub mod mma;
mod number_const;
pub mod passes;
pub mod rounding;
mod span;

pub use span::CodeSpan;

#[cfg(test)]
mod tests;
