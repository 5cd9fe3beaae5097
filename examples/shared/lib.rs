//! The example programs that other examples run too: the tuned SGEMM subprogram and the
//! tensor-core GEMMs. Each is an example of its own (`examples/sgemm.rs` calls
//! [`sgemm::main`]), and the main example (`matmul`) and `bench` take rows from them: a
//! library, so that their many kernels are compiled once rather than once for every example
//! that runs them (building the examples is most of CI's time).

#[path = "../common/mod.rs"]
pub mod common;
pub mod gemm_bf16;
pub mod sgemm;
