//! cuFFT, for the local transforms of the cluster FFT (`examples/fft3d.rs`) and as the
//! baseline it is measured against: batched complex single-precision transforms in place
//! on a dmem array of `float2`, on the array's device and stream.

use cudarc::cufft::{result, sys, CudaFft, FftDirection};

use crate::array::Array;
use crate::devices::Device;
use crate::error::{Error, Result};
use crate::mem::elem::Float2;
use crate::types::DataType;

/// Which way a transform goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// `X[f] = sum_t x[t] e^(-2 pi i f t / n)`.
    Forward,
    /// The same with `+`, unnormalised.
    Inverse,
}

/// `batch` transforms of the row-major shape `dims` (one, two or three dimensions),
/// element `i` (row-major over `dims`) of transform `b` at offset `b * dist + i * stride`
/// of the array: cuFFT's advanced layout with the embedding equal to `dims`.
pub struct FftPlan {
    fft: CudaFft,
    device: Device,
    /// The largest offset a transform touches, plus one.
    span: usize,
}

impl FftPlan {
    /// A plan on `device`: `Error::Unsupported` without a GPU (under the emulation, or
    /// without libcufft) or for sizes beyond cuFFT's 32-bit ones.
    pub fn many(
        device: &Device,
        dims: &[usize],
        stride: usize,
        dist: usize,
        batch: usize,
    ) -> Result<FftPlan> {
        let cuda = device.as_cuda().ok_or_else(|| {
            unsupported("cuFFT needs a GPU; under the emulation there is none".into())
        })?;
        if dims.is_empty() || dims.len() > 3 || dims.contains(&0) || batch == 0 || stride == 0 {
            return Err(unsupported(format!(
                "a plan has 1 to 3 positive dimensions and a positive batch and stride, not {dims:?} x {batch} (stride {stride})"
            )));
        }
        let int = |v: usize| {
            i32::try_from(v).map_err(|_| unsupported(format!("{v} exceeds cuFFT's 32-bit sizes")))
        };
        let n: Vec<i32> = dims.iter().map(|d| int(*d)).collect::<Result<_>>()?;
        let points: usize = dims.iter().product();
        let span = (batch - 1) * dist + (points - 1) * stride + 1;
        let fft = CudaFft::plan_many(
            &n,
            Some(&n),
            int(stride)?,
            int(dist)?,
            Some(&n),
            int(stride)?,
            int(dist)?,
            sys::cufftType::CUFFT_C2C,
            int(batch)?,
            cuda.stream.clone(),
        )
        .map_err(|e| driver(format!("planning {dims:?} x {batch}: {e}")))?;
        Ok(FftPlan {
            fft,
            device: device.clone(),
            span,
        })
    }

    /// The transforms, in place on `a`, which must be on the plan's device and hold every
    /// offset they touch.
    pub fn run<T: DataType<Elem = Float2>>(
        &self,
        a: &mut Array<T>,
        direction: Direction,
    ) -> Result<()> {
        self.run_at(a, 0, direction)
    }

    /// The transforms, in place on the elements of `a` from offset `at` on (the plan's
    /// offsets counted from there: a chunk of a pipelined `#copy`, say), which must hold
    /// every offset they touch.
    pub fn run_at<T: DataType<Elem = Float2>>(
        &self,
        a: &mut Array<T>,
        at: usize,
        direction: Direction,
    ) -> Result<()> {
        if a.device() != Some(&self.device) {
            return Err(unsupported(format!(
                "{} is not on the plan's device ({})",
                T::NAME,
                self.device.name()
            )));
        }
        if at.checked_add(self.span).is_none_or(|end| a.extent() < end) {
            return Err(unsupported(format!(
                "the plan touches {} elements from offset {at}, {} holds {}",
                self.span,
                T::NAME,
                a.extent()
            )));
        }
        let p = a
            .ptr_mut()
            .device_address()
            .ok_or_else(|| unsupported(format!("{} is not in GPU memory", T::NAME)))?
            + (at * size_of::<Float2>()) as u64;
        let direction = match direction {
            Direction::Forward => FftDirection::Forward,
            Direction::Inverse => FftDirection::Inverse,
        } as std::ffi::c_int;
        // SAFETY: `p` is element `at` of a live device array of `float2` (cuFFT's complex)
        // on the plan's device, borrowed mutably for the call, holding every offset the
        // plan touches from there (checked above); the plan's stream orders the call after
        // its writes.
        unsafe {
            result::exec_c2c(
                self.fft.handle(),
                p as *mut sys::cufftComplex,
                p as *mut sys::cufftComplex,
                direction,
            )
        }
        .map_err(|e| driver(e.to_string()))
    }
}

fn unsupported(reason: String) -> Error {
    Error::Unsupported {
        what: "cuFFT",
        reason,
    }
}

fn driver(reason: String) -> Error {
    Error::Driver {
        type_name: "cuFFT",
        operation: "C2C transform",
        reason,
    }
}
