//! Layer 7, vendor libraries on dmem arrays: cuBLAS and cuFFT.

pub mod cublas;
pub mod cufft;
