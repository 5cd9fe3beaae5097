//! Layer 5, distribution: mpi thread arrays, and `#copy` between types distributed over
//! their ranks.

mod comm;
mod exchange;
pub mod mpi;
mod nccl;
