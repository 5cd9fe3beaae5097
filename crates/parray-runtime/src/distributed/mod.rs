//! Layer 5, distribution: mpi thread arrays (their `#sync` a team of ranks), the MPI calls
//! and NCCL between the ranks, and the communication of a `#copy` between types
//! distributed over them, which `copy` hands here.

mod comm;
pub(crate) mod exchange;
pub mod mpi;
mod nccl;
