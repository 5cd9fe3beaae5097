//! cuBLAS, the vendor library the GEMM examples and `bench` check against and measure
//! beside: `C = A * B` on row-major dmem arrays of `f32`, `bf16` or `f16` elements,
//! accumulated in f32 (TF32 tensor cores only where asked), on the arrays' device and
//! stream.

use std::ffi::c_void;
use std::sync::Mutex;

use cudarc::cublas::{result, sys, CudaBlas};

use crate::array::Array;
use crate::devices::Device;
use crate::error::{Error, Result};
use crate::types::DataType;

/// An element type cuBLAS's GEMM takes, as its `cudaDataType`.
pub trait GemmElem: Copy {
    const DATA_TYPE: sys::cudaDataType;
}

impl GemmElem for f32 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_32F;
}

impl GemmElem for half::bf16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16BF;
}

impl GemmElem for half::f16 {
    const DATA_TYPE: sys::cudaDataType = sys::cudaDataType::CUDA_R_16F;
}

/// How cuBLAS may compute an f32 product (bf16 and f16 inputs are multiplied exactly and
/// accumulated in f32 either way).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Math {
    /// f32 arithmetic: no tensor cores for f32 inputs.
    F32,
    /// f32 inputs rounded to TF32 on the tensor cores, accumulated in f32.
    Tf32,
}

/// `c = a * b` for row-major `a` (m x k), `b` (k x n) and `c` (m x n) of `f32`, by
/// cuBLAS's SGEMM (no TF32): [`gemm`] with [`Math::F32`].
pub fn sgemm<A, B, C>(a: &Array<A>, b: &Array<B>, c: &mut Array<C>) -> Result<()>
where
    A: DataType<Elem = f32>,
    B: DataType<Elem = f32>,
    C: DataType<Elem = f32>,
{
    gemm(a, b, c, Math::F32)
}

/// `c = a * b` for row-major `a` (m x k), `b` (k x n) and `c` (m x n) by cuBLAS's
/// `cublasGemmEx`: `a` and `b` of one element type (`f32`, `bf16` or `f16`), `c` of any
/// of them, accumulated in f32 (`math` says whether f32 inputs may use TF32).
///
/// Each type must have two top-level dimensions and be contiguous in row-major order (the
/// layouts cuBLAS can take), and all three arrays must be on one GPU: anything else is
/// [`Error::Unsupported`]. Under the emulation there is no cuBLAS: an error too (check
/// against a CPU product there).
pub fn gemm<A, B, C>(a: &Array<A>, b: &Array<B>, c: &mut Array<C>, math: Math) -> Result<()>
where
    A: DataType,
    A::Elem: GemmElem,
    B: DataType<Elem = A::Elem>,
    C: DataType,
    C::Elem: GemmElem,
{
    let shape = |name: &'static str, dims: &[usize], module: &parray_layout::Module| {
        let root = module
            .type_def(name)
            .map(|d| d.root)
            .ok_or_else(|| unsupported(format!("`{name}` is not a declared type")))?;
        let contiguous = module.is_contiguous(root).unwrap_or(false);
        match dims {
            [rows, cols] if contiguous => Ok((*rows, *cols)),
            _ => Err(unsupported(format!(
                "cuBLAS takes row-major matrices: `{name}` is not a contiguous two-dimensional type"
            ))),
        }
    };
    let (m, k) = shape(A::NAME, A::dims(), A::module())?;
    let (k2, n) = shape(B::NAME, B::dims(), B::module())?;
    let (m2, n2) = shape(C::NAME, C::dims(), C::module())?;
    if k != k2 || m != m2 || n != n2 {
        return Err(unsupported(format!(
            "shapes do not multiply: {} is {m}x{k}, {} is {k2}x{n}, {} is {m2}x{n2}",
            A::NAME,
            B::NAME,
            C::NAME
        )));
    }
    let device = one_gpu(&[a.device(), b.device(), c.device()])?;
    let cuda = device.as_cuda().ok_or_else(|| {
        unsupported("cuBLAS needs a GPU; under the emulation there is none".into())
    })?;
    let addr = |p: Option<u64>, name: &str| {
        p.ok_or_else(|| unsupported(format!("`{name}` is not in GPU memory")))
    };
    let pa = addr(a.ptr().device_address(), A::NAME)?;
    let pb = addr(b.ptr().device_address(), B::NAME)?;
    let pc = addr(c.ptr_mut().device_address(), C::NAME)?;
    let int = |v: usize| {
        i32::try_from(v).map_err(|_| unsupported(format!("{v} exceeds cuBLAS's 32-bit sizes")))
    };
    let (mi, ni, ki) = (int(m)?, int(n)?, int(k)?);
    let blas = cuda
        .blas
        .get_or_init(|| {
            CudaBlas::new(cuda.stream.clone())
                .map(Mutex::new)
                .map_err(|e| format!("creating a cuBLAS handle: {e}"))
        })
        .as_ref()
        .map_err(|e| driver(e.clone()))?;
    let blas = blas.lock().unwrap_or_else(|e| e.into_inner());
    let (alpha, beta) = (1.0f32, 0.0f32);
    let compute = match math {
        Math::Tf32 if A::Elem::DATA_TYPE == sys::cudaDataType::CUDA_R_32F => {
            sys::cublasComputeType_t::CUBLAS_COMPUTE_32F_FAST_TF32
        }
        _ => sys::cublasComputeType_t::CUBLAS_COMPUTE_32F,
    };
    cuda.ctx
        .bind_to_thread()
        .map_err(|e| driver(e.to_string()))?;
    // Row-major C = A B is column-major C^T = B^T A^T: cuBLAS multiplies B (n x k, ld n)
    // by A (k x m, ld k) into C (n x m, ld n), with no transposition.
    // SAFETY: the three addresses are the starts of live device arrays of the sizes the
    // shapes state (checked above against the types, whose extents the arrays hold), of
    // the element types named beside them (`GemmElem`), on the device whose stream the
    // handle uses; `c` is borrowed mutably for the call and the inputs immutably, and the
    // stream orders the call after their writes. `alpha` and `beta` are f32, as the f32
    // compute types take them, and live across the call.
    unsafe {
        result::gemm_ex(
            *blas.handle(),
            sys::cublasOperation_t::CUBLAS_OP_N,
            sys::cublasOperation_t::CUBLAS_OP_N,
            ni,
            mi,
            ki,
            (&alpha as *const f32).cast::<c_void>(),
            pb as *const c_void,
            B::Elem::DATA_TYPE,
            ni,
            pa as *const c_void,
            A::Elem::DATA_TYPE,
            ki,
            (&beta as *const f32).cast::<c_void>(),
            pc as *mut c_void,
            C::Elem::DATA_TYPE,
            ni,
            compute,
            sys::cublasGemmAlgo_t::CUBLAS_GEMM_DEFAULT,
        )
    }
    .map_err(|e| driver(e.to_string()))
}

/// The one device all the arrays are on.
fn one_gpu(devices: &[Option<&Device>]) -> Result<Device> {
    let mut found: Option<&Device> = None;
    for d in devices.iter().flatten() {
        match found {
            Some(f) if f.id() != d.id() => {
                return Err(unsupported(format!(
                    "the arrays are on two devices ({} and {})",
                    f.name(),
                    d.name()
                )))
            }
            _ => found = Some(d),
        }
    }
    found
        .cloned()
        .ok_or_else(|| unsupported("the arrays are not in device memory".into()))
}

fn unsupported(reason: String) -> Error {
    Error::Unsupported {
        what: "cuBLAS GEMM",
        reason,
    }
}

fn driver(reason: String) -> Error {
    Error::Driver {
        type_name: "cuBLAS",
        operation: "GEMM",
        reason,
    }
}
