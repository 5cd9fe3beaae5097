//! cuFFT, for the local transforms of the cluster FFT (`examples/fft3d.rs`) and as the
//! baseline it is measured against: batched complex single-precision transforms of a dmem
//! array of `float2`, on the array's device and stream, in place or into another array:
//! written with strides, or where a type lays its elements out (the store of the
//! transforms fused with a `#copy`, by an LTO callback that the offset compiler writes).

use std::ffi::{c_char, c_int, c_void};
use std::sync::Arc;

use cudarc::cufft::{result, sys};
use cudarc::driver::CudaStream;

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

/// Where the transforms' elements are: element `i` (row-major over the plan's dimensions)
/// of transform `b` at offset `b * dist + i * stride` (cuFFT's advanced layout with the
/// embedding equal to the dimensions).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strides {
    pub stride: usize,
    pub dist: usize,
}

/// Where a plan writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Output {
    /// Over its input.
    InPlace,
    /// Into another array, by strides or a type; the largest offset written plus one.
    Into { span: usize },
}

/// `batch` transforms of the row-major shape `dims` (one, two or three dimensions).
pub struct FftPlan {
    handle: Handle,
    /// The stream the plan runs on, kept alive as long as the plan.
    _stream: Arc<CudaStream>,
    device: Device,
    /// The largest offset the transforms read, plus one.
    span: usize,
    output: Output,
}

/// A cuFFT plan handle, destroyed with its owner.
struct Handle(sys::cufftHandle);

impl Drop for Handle {
    fn drop(&mut self) {
        // SAFETY: the handle was made by `cufftCreate` and is destroyed once, here.
        let _ = unsafe { result::destroy(self.0) };
    }
}

/// cuFFT's `CUFFT_CB_ST_COMPLEX` (`cufftXtCallbackType`): a store callback of
/// single-precision complex elements.
const STORE_COMPLEX: c_int = 4;

/// `cufftXtSetJITCallback` of CUDA 13 (which cudarc does not bind): the LTO-IR of a
/// callback, the name of its `__device__` function and its caller information.
type SetJitCallback = unsafe extern "C" fn(
    sys::cufftHandle,
    *const c_char,
    *const c_void,
    usize,
    c_int,
    *mut *mut c_void,
) -> sys::cufftResult;

impl FftPlan {
    /// A plan on `device` of transforms in place, each at `stride` and `dist`:
    /// `Error::Unsupported` without a GPU (under the emulation, or without libcufft) or for
    /// sizes beyond cuFFT's 32-bit ones.
    pub fn many(
        device: &Device,
        dims: &[usize],
        stride: usize,
        dist: usize,
        batch: usize,
    ) -> Result<FftPlan> {
        let layout = Strides { stride, dist };
        Self::make(device, dims, batch, (layout, layout), None, Output::InPlace)
    }

    /// A plan of transforms read at `input` and written into another array at `output`
    /// ([`FftPlan::run_into`]).
    pub fn many_into(
        device: &Device,
        dims: &[usize],
        batch: usize,
        input: Strides,
        output: Strides,
    ) -> Result<FftPlan> {
        let span = span(dims, batch, output);
        Self::make(
            device,
            dims,
            batch,
            (input, output),
            None,
            Output::Into { span },
        )
    }

    /// A plan of transforms read at `input` whose output, in its natural order (element
    /// `o = b * points + i` of transform `b`), is stored where the type `O` lays element `o`
    /// out: `#copy` from that order to `O`, fused into the transforms by a store callback
    /// that the offset compiler writes (`kernels::fft_store_callback`) and cuFFT links in
    /// (an LTO callback, compiled by NVRTC). `O` has `batch` times the points of `dims`
    /// elements, fewer than 2^32.
    pub fn many_stored_as<O: DataType<Elem = Float2>>(
        device: &Device,
        dims: &[usize],
        batch: usize,
        input: Strides,
    ) -> Result<FftPlan> {
        let points: usize = dims.iter().product();
        if O::size() != points * batch {
            return Err(unsupported(format!(
                "{} has {} elements, and the plan writes {batch} transforms of {points}",
                O::NAME,
                O::size()
            )));
        }
        let store = parray_compiler::kernels::fft_store_callback(
            "parray_fft_store",
            (O::module(), O::NAME),
        )
        .map_err(|e| unsupported(e.to_string()))?;
        let natural = Strides {
            stride: 1,
            dist: points,
        };
        let output = Output::Into { span: O::extent() };
        Self::make(device, dims, batch, (input, natural), Some(&store), output)
    }

    fn make(
        device: &Device,
        dims: &[usize],
        batch: usize,
        (input, output): (Strides, Strides),
        store: Option<&parray_compiler::kernels::FftStore>,
        written: Output,
    ) -> Result<FftPlan> {
        let cuda = device.as_cuda().ok_or_else(|| {
            unsupported("cuFFT needs a GPU; under the emulation there is none".into())
        })?;
        let positive = [input.stride, output.stride, batch].iter().all(|v| *v > 0);
        if dims.is_empty() || dims.len() > 3 || dims.contains(&0) || !positive {
            return Err(unsupported(format!(
                "a plan has 1 to 3 positive dimensions and a positive batch and strides, not {dims:?} x {batch} ({input:?}, {output:?})"
            )));
        }
        let int = |v: usize| {
            i32::try_from(v).map_err(|_| unsupported(format!("{v} exceeds cuFFT's 32-bit sizes")))
        };
        let mut n: Vec<i32> = dims.iter().map(|d| int(*d)).collect::<Result<_>>()?;
        let (istride, idist, ostride, odist, batch_i) = (
            int(input.stride)?,
            int(input.dist)?,
            int(output.stride)?,
            int(output.dist)?,
            int(batch)?,
        );
        cuda.ctx
            .bind_to_thread()
            .map_err(|e| driver(format!("binding {}: {e}", device.name())))?;
        let handle = Handle(result::create().map_err(|e| driver(format!("creating a plan: {e}")))?);
        // cuFFT reads the callback's LTO-IR and name when it plans, not when they are set:
        // both live until the plan is made.
        let callback = match store {
            Some(store) => Some((
                std::ffi::CString::new(store.name.as_str()).expect("a C name"),
                cuda.kernels.compile_lto(&store.name, &store.source)?,
            )),
            None => None,
        };
        if let (Some(store), Some((name, ir))) = (store, &callback) {
            // SAFETY: libcufft is loaded (the plan was created); the symbol is CUDA 13's
            // `cufftXtSetJITCallback`, of the signature `SetJitCallback` declares.
            let set = unsafe { sys::culib().get::<SetJitCallback>(b"cufftXtSetJITCallback\0") }
                .map_err(|e| unsupported(format!("this cuFFT has no LTO callbacks: {e}")))?;
            let mut info: *mut c_void = std::ptr::null_mut();
            // SAFETY: a plan made but not yet planned, as the call requires; the name and
            // the LTO-IR outlive the call, and the callback takes no caller information.
            unsafe {
                set(
                    handle.0,
                    name.as_ptr(),
                    ir.as_ptr().cast(),
                    ir.len(),
                    STORE_COMPLEX,
                    &mut info,
                )
            }
            .result()
            .map_err(|e| driver(format!("setting the store callback {}: {e}", store.name)))?;
        }
        let sizes = n.as_mut_ptr();
        // SAFETY: `sizes` points at `dims.len()` sizes, alive through the call, which are
        // also the embedding of both sides (read, not written, by cuFFT); the handle is a
        // created plan.
        unsafe {
            result::make_plan_many(
                handle.0,
                n.len() as c_int,
                sizes,
                sizes,
                istride,
                idist,
                sizes,
                ostride,
                odist,
                sys::cufftType::CUFFT_C2C,
                batch_i,
            )
        }
        .map_err(|e| driver(format!("planning {dims:?} x {batch}: {e}")))?;
        // SAFETY: the stream is the device's, alive as long as the plan (held below).
        unsafe { result::set_stream(handle.0, cuda.stream.cu_stream() as _) }
            .map_err(|e| driver(format!("setting the plan's stream: {e}")))?;
        Ok(FftPlan {
            handle,
            _stream: cuda.stream.clone(),
            device: device.clone(),
            span: span(dims, batch, input),
            output: written,
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
        if self.output != Output::InPlace {
            return Err(unsupported(
                "the plan writes into another array: run it with `run_into`".into(),
            ));
        }
        let p = self.address(a, at, self.span)?;
        // SAFETY: `p` is element `at` of a live device array of `float2` on the plan's
        // device, borrowed mutably for the call, holding every offset the plan touches
        // from there (checked by `address`); the plan's stream orders the call after its
        // writes.
        unsafe { self.exec(p, p, direction) }
    }

    /// The transforms of the elements of `src` from offset `at` on, written into `dst`
    /// from offset `dst_at` on (as the plan's output strides or type lay them out); both
    /// on the plan's device, each holding every offset the plan touches in it.
    pub fn run_into<S: DataType<Elem = Float2>, D: DataType<Elem = Float2>>(
        &self,
        src: &Array<S>,
        at: usize,
        dst: &mut Array<D>,
        dst_at: usize,
        direction: Direction,
    ) -> Result<()> {
        let Output::Into { span } = self.output else {
            return Err(unsupported(
                "the plan transforms in place: run it with `run_at`".into(),
            ));
        };
        let from = self.address(src, at, self.span)?;
        let to = self.address(dst, dst_at, span)?;
        // SAFETY: `from` and `to` are elements of two live device arrays of `float2` on
        // the plan's device (distinct: one is borrowed mutably), each holding every offset
        // the plan reads or writes from there (checked by `address`); cuFFT does not write
        // its input of an out-of-place plan of complex elements, and the plan's stream
        // orders the call after their writes.
        unsafe { self.exec(from, to, direction) }
    }

    /// The device address of element `at` of `a`, which must be on the plan's device and
    /// hold `span` elements from there.
    fn address<T: DataType<Elem = Float2>>(
        &self,
        a: &Array<T>,
        at: usize,
        span: usize,
    ) -> Result<u64> {
        if a.device() != Some(&self.device) {
            return Err(unsupported(format!(
                "{} is not on the plan's device ({})",
                T::NAME,
                self.device.name()
            )));
        }
        if at.checked_add(span).is_none_or(|end| a.extent() < end) {
            return Err(unsupported(format!(
                "the plan touches {span} elements from offset {at}, {} holds {}",
                T::NAME,
                a.extent()
            )));
        }
        let base = a
            .ptr()
            .device_address()
            .ok_or_else(|| unsupported(format!("{} is not in GPU memory", T::NAME)))?;
        Ok(base + (at * size_of::<Float2>()) as u64)
    }

    /// # Safety
    /// `from` and `to` are device addresses of `float2` on the plan's device holding what
    /// the plan reads and writes there, not written by anything else until the plan's
    /// stream has run the transforms.
    unsafe fn exec(&self, from: u64, to: u64, direction: Direction) -> Result<()> {
        let direction = match direction {
            Direction::Forward => cudarc::cufft::FftDirection::Forward,
            Direction::Inverse => cudarc::cufft::FftDirection::Inverse,
        } as c_int;
        // SAFETY: as the caller promises.
        unsafe {
            result::exec_c2c(
                self.handle.0,
                from as *mut sys::cufftComplex,
                to as *mut sys::cufftComplex,
                direction,
            )
        }
        .map_err(|e| driver(e.to_string()))
    }
}

/// The largest offset of `batch` transforms of `dims` at `layout`, plus one.
fn span(dims: &[usize], batch: usize, layout: Strides) -> usize {
    let points: usize = dims.iter().product();
    (batch.max(1) - 1) * layout.dist + (points.max(1) - 1) * layout.stride + 1
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
