//! The tuned SGEMM subprogram written in Parray's types, on any layout and shape, beside
//! cuBLAS: the program is `examples/shared/sgemm.rs`, in the library of the examples whose
//! kernels the main example (`matmul`) and `bench` run too, so that they are built once.
//!
//! `cargo run --release --example sgemm`

fn main() -> parray::Result<()> {
    parray_examples::sgemm::main()
}
