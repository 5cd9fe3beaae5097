//! The tensor-core GEMMs (bf16, f16 and TF32) written in Parray's types, beside cuBLAS: the
//! program is `examples/shared/gemm_bf16.rs`, in the library of the examples whose kernels
//! the main example (`matmul`) runs too, so that they are built once. Its documentation
//! there lists the options (`--tile`, `--elem`, `--layout`, `--m --n --k`, `--source`).
//!
//! `cargo run --release --example gemm_bf16`

fn main() -> parray::Result<()> {
    parray_examples::gemm_bf16::main()
}
