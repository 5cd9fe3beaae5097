//! Layer 6, `#copy` on the host: element `k` of an array of type `S` goes to element `k` of
//! an array of type `D`, in logical order, whatever the two layouts and memory kinds.
//!
//! The path follows from the two types and where the arrays live ([`CopyPath`]): one bulk
//! copy when both types are contiguous in logical order (`off(k) == k`), the element loop
//! on the host when both arrays are in host memory (the emulation's dmem included), a
//! remap kernel (`d[D(k)] = s[S(k)]`, both offset functions folded by the offset compiler)
//! when both are on one GPU, across the bus one transfer beside a host-side pack or
//! scatter, or a device-side remap through a staging array when the device side is not
//! contiguous, and between two GPUs one peer copy, with a remap into or out of contiguous
//! staging arrays on either side that is not contiguous. SPEC.md section 3.9 lists the
//! cases. Between types distributed over an mpi job's ranks the copy is communication,
//! which `distributed::mpi` carries out (SPEC.md 3.12).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::{CudaSlice, DevicePtr, DevicePtrMut};
use parray_compiler::back::c::Dialect;
use parray_compiler::kernels::{Kernel, Rows2d};
use parray_layout::eval::Program;
use parray_layout::ElemType;

use crate::array::Array;
use crate::devices::device::{enable_peer_access, on_gpu, CudaDevice};
use crate::devices::Device;
use crate::distributed::{exchange, mpi};
use crate::error::{DetourSite, Error, Result};
use crate::exec::launch::{built_kernel, run_on_gpu, BuiltKernels, Launch};
use crate::mem::buffer::{same_gpu, Buffer};
use crate::mem::elem::{Element, FieldArrays};
use crate::mem::kernel_arg::KernelValue;
use crate::types::DataType;

pub use parray_layout::copy::{CopyPath, Place, Strided};
pub use parray_layout::Rows;

/// The flat offset function of a type: element `k` is at `off(k)`; `None` when that is
/// `k` itself (contiguous in logical order).
fn flat<T: DataType>() -> Result<Option<Program>> {
    let (n, off) = parray_layout::copy::flat_offsets(T::module(), T::NAME).map_err(|e| {
        Error::CopyUnsupported {
            reason: format!("the offset function of {}: {e}", T::NAME),
        }
    })?;
    Ok((!parray_layout::copy::in_order(n, &off)).then(|| Program::new(&off.expr)))
}

/// The path a copy from an array of `S` to one of `D` takes, given where each lives (host
/// memory or a GPU): `parray_layout::copy::plan`.
///
/// Decided once per pair of types and places in a process: the decision may walk every
/// element (a copy between distributed types that are not one-digit natural types), and
/// a program repeats its copies.
pub fn plan<S: DataType, D: DataType<Elem = S::Elem>>(
    src_at: Place,
    dst_at: Place,
) -> Result<CopyPath> {
    type Plans = HashMap<(TypeId, TypeId, Place, Place), CopyPath>;
    static PLANS: OnceLock<Mutex<Plans>> = OnceLock::new();
    let key = (TypeId::of::<S>(), TypeId::of::<D>(), src_at, dst_at);
    let plans = PLANS.get_or_init(Default::default);
    if let Some(path) = plans.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(*path);
    }
    let path = parray_layout::copy::plan(
        (S::module(), S::NAME, src_at),
        (D::module(), D::NAME, dst_at),
    )
    .map_err(|e| Error::CopyUnsupported {
        reason: e.to_string(),
    })?;
    plans
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, path);
    Ok(path)
}

/// `#copy S(src) to D(dst)`: element `k` of `src` goes to element `k` of `dst`, for every
/// `k` in logical order. The types have the same number of elements (checked when the
/// function is instantiated) and the same element; the arrays may be in any memory and
/// layout. Returns the path taken.
#[track_caller]
pub fn copy<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
) -> Result<CopyPath> {
    const {
        if let (Some(s), Some(d)) = (S::FIXED_SIZE, D::FIXED_SIZE) {
            assert!(
                s == d,
                "`#copy` copies element k to element k: the two types must have as many elements"
            )
        }
    };
    // Sizes given at run time are compared when the copy runs.
    if S::size() != D::size() {
        return Err(Error::CopyUnsupported {
            reason: format!(
                "{} has {} elements and {} has {}: `#copy` copies element k to element k",
                S::NAME,
                S::size(),
                D::NAME,
                D::size()
            ),
        });
    }
    let site = site(std::panic::Location::caller());
    let (s, d) = (src.buffer(), dst.buffer_mut());
    let path = plan::<S, D>(place(s), place(d))?;
    let (s_off, d_off) = (flat::<S>()?, flat::<D>()?);
    let n = S::size();
    let typed = Layout::Typed;
    match path {
        CopyPath::Bulk => d.copy_prefix_from(s, n)?,
        CopyPath::Strided(rows) => strided(s, d, rows, site)?,
        CopyPath::Fields => fields(s, d, n, site)?,
        CopyPath::ThroughHost => {
            let (from, mut to) = (s.to_vec()?, d.to_vec()?);
            remap_on_host(&from, &mut to, n, s_off, d_off);
            d.copy_from_slice(&to)?;
        }
        CopyPath::HostLoop => {
            let (from, to) = (s.host_elements()?, d.host_elements_mut()?);
            remap_on_host(from, to, n, s_off, d_off);
        }
        CopyPath::DeviceRemap => {
            let cuda = same_gpu(s, d)?;
            let (from, to) = (s.device_address(cuda), d.device_address_mut(cuda));
            remap_on_device::<S, D>(cuda, (from, typed), (to, typed), site)?;
        }
        CopyPath::PackAndUpload => {
            let mut staging = vec![S::Elem::default(); n];
            remap_on_host(s.host_elements()?, &mut staging, n, s_off, None);
            d.copy_prefix_from_slice(&staging)?;
        }
        CopyPath::UploadAndRemap => {
            let device = d.device().cloned();
            let cuda = on_gpu(device.as_ref(), d.type_name())?;
            let staging = cuda
                .stream
                .clone_htod(s.host_elements()?)
                .map_err(|e| Error::driver(S::NAME, "host-to-device copy", e))?;
            let from = staging.device_ptr(&cuda.stream).0;
            let to = d.device_address_mut(cuda);
            remap_on_device::<S, D>(cuda, (from, typed), (to, typed), site)?;
        }
        CopyPath::DownloadAndScatter => {
            let staging = s.to_vec()?;
            remap_on_host(&staging, d.host_elements_mut()?, n, None, d_off);
        }
        CopyPath::Exchange(collective) => mpi::copy(src, dst, collective, site)?,
        CopyPath::RemapAndDownload => {
            let cuda = on_gpu(s.device(), s.type_name())?;
            let staging = remap_to_staging::<S, D>(s, cuda, site)?;
            let values = cuda
                .stream
                .clone_dtoh(&staging)
                .map_err(|e| Error::driver(S::NAME, "device-to-host copy", e))?;
            remap_on_host(&values, d.host_elements_mut()?, n, None, d_off);
        }
        CopyPath::PeerBulk => {
            let from = s.device_slice().expect("on a GPU (checked by the plan)");
            let to = d
                .device_slice_mut()
                .expect("on a GPU (checked by the plan)");
            peer_copy(&from.slice(..n), &mut to.slice_mut(..n), S::NAME)?;
        }
        CopyPath::PeerRemap => {
            // The source's elements in logical order on its GPU: its own storage when it is
            // contiguous (its first `n` elements), else a staging array remapped into.
            let remapped = match s_off {
                Some(_) => {
                    let s_cuda = on_gpu(s.device(), S::NAME)?;
                    Some(remap_to_staging::<S, D>(s, s_cuda, site)?)
                }
                None => None,
            };
            let from = match &remapped {
                Some(staging) => staging.slice(..n),
                None => s
                    .device_slice()
                    .expect("on a GPU (checked by the plan)")
                    .slice(..n),
            };
            if d_off.is_none() {
                let to = d
                    .device_slice_mut()
                    .expect("on a GPU (checked by the plan)");
                peer_copy(&from, &mut to.slice_mut(..n), S::NAME)?;
            } else {
                // Into a staging array on the destination's GPU, then remapped from there.
                let device = d.device().cloned();
                let d_cuda = on_gpu(device.as_ref(), D::NAME)?;
                let mut staging = alloc_staging::<S::Elem>(d_cuda, n, D::NAME)?;
                peer_copy(&from, &mut staging, S::NAME)?;
                let from = (staging.device_ptr(&d_cuda.stream).0, Layout::Contiguous);
                let to = (d.device_address_mut(d_cuda), typed);
                remap_on_device::<S, D>(d_cuda, from, to, site)?;
            }
        }
    }
    Ok(path)
}

/// `#copy S(src) to D(dst)` ([`copy`]) in chunks of `C`, pipelined with the work that
/// produces the source: for each run of `C::size()` elements of this rank's part of the
/// source (its whole storage when the type is not distributed), in order,
/// `produce(src, chunk)` queues the work that makes those elements (a cuFFT plan, a
/// detour), then the copy of that chunk is queued on the device's side stream, where it
/// overlaps the producing of the next. When this returns the copy is complete, as
/// [`copy`]'s is.
///
/// The result is always that of producing every chunk, then copying; that is what runs
/// where chunks cannot overlap: on the host and under the emulation, and on GPUs for paths
/// other than a copy in logical order on one GPU (`Bulk`, or one rank's part) and an
/// all-to-all between distributed types whose runs NCCL moves straight from part to part
/// (SPEC.md 3.12). `produce` must write only its chunk's elements of `src`: the copies of
/// the chunks before it may still be reading theirs.
///
/// # Errors
/// Those of [`copy`]; `Error::CopyUnsupported` when `C`'s elements do not divide the
/// source's part; the first error of `produce` (on every rank of a job: the others get
/// `Error::RankDivergence` naming the rank that failed, rather than waiting for it).
#[track_caller]
pub fn copy_in_chunks<C: DataType, S: DataType, D: DataType<Elem = S::Elem>>(
    src: &mut Array<S>,
    dst: &mut Array<D>,
    produce: impl FnMut(&mut Array<S>, std::ops::Range<usize>) -> Result<()>,
) -> Result<CopyPath> {
    copy_in_chunks_then::<C, S, D>(src, dst, produce, |_, _| Ok(()))
}

/// [`copy_in_chunks`] with a consumer: once chunk `i`'s copy has arrived, `consume(dst,
/// chunk)` queues the work that reads what it delivered (`chunk` is the range of the
/// source's part that [`copy_in_chunks`] gave `produce`), on the device's stream after it
/// has produced chunk `i + 1`, so that the consumer of one chunk, the producer of the next
/// and the copies of both overlap. Where chunks do not overlap, every chunk is produced,
/// copied, then consumed, in order: the same result. `consume` must read only what the
/// chunks copied so far delivered and write only that of `dst`: later chunks' copies may
/// be writing theirs. In a job the ranks agree after each consumer as after each producer.
///
/// # Errors
/// Those of [`copy_in_chunks`], and the first error of `consume` (as `produce`'s).
#[track_caller]
pub fn copy_in_chunks_then<C: DataType, S: DataType, D: DataType<Elem = S::Elem>>(
    src: &mut Array<S>,
    dst: &mut Array<D>,
    mut produce: impl FnMut(&mut Array<S>, std::ops::Range<usize>) -> Result<()>,
    mut consume: impl FnMut(&mut Array<D>, std::ops::Range<usize>) -> Result<()>,
) -> Result<CopyPath> {
    let part = S::distribution().map_or(S::size(), |d| d.part as usize);
    let chunk = C::size();
    if chunk == 0 || !part.is_multiple_of(chunk) {
        return Err(Error::CopyUnsupported {
            reason: format!(
                "{} has {chunk} elements, which do not divide {}'s part of {part}: a pipelined `#copy` moves whole chunks",
                C::NAME,
                S::NAME
            ),
        });
    }
    let chunks = (0..part).step_by(chunk).map(|at| at..at + chunk);
    let site = site(std::panic::Location::caller());
    let (s, d) = (src.buffer(), dst.buffer());
    let path = plan::<S, D>(place(s), place(d))?;
    match path {
        CopyPath::Exchange(collective) => {
            let work = (&mut produce as _, &mut consume as _);
            mpi::copy_in_chunks(src, dst, (collective, site), chunks, work)?;
        }
        CopyPath::Bulk if s.device_slice().is_some() && d.device_slice().is_some() => {
            let device = src.device().expect("on a GPU (checked above)").clone();
            exchange::on_side_stream(&device, || {
                let mut behind = exchange::Behind::default();
                for chunk in chunks {
                    produce(src, chunk.clone())?;
                    exchange::queue_in_place(src, dst, chunk.clone())?;
                    behind.queued(dst, chunk, &mut consume)?;
                }
                behind.finish(dst, &mut consume)
            })?;
        }
        _ => {
            for chunk in chunks.clone() {
                produce(src, chunk)?;
            }
            copy(src, dst)?;
            for chunk in chunks {
                consume(dst, chunk)?;
            }
        }
    }
    Ok(path)
}

impl<S: DataType> Array<S> {
    /// `#copy S(self) to D(dst)`: element `k` of this array goes to element `k` of `dst`,
    /// in logical order, across layouts and memory kinds ([`copy`]).
    #[track_caller]
    pub fn copy_to<D: DataType<Elem = S::Elem>>(&self, dst: &mut Array<D>) -> Result<CopyPath> {
        copy(self, dst)
    }
}

/// Where a buffer is, for the plan: its GPU, or host memory (the emulation's dmem too).
fn place<T: Element>(b: &Buffer<T>) -> Place {
    match (b.device_slice(), b.device()) {
        (Some(_), Some(device)) => Place::Gpu(device.ordinal()),
        _ => Place::Host,
    }
}

/// Row `r < rows.height` of `rows.src.width` elements from `rows.src.start + r *
/// rows.src.pitch` to `rows.dst.start + r * rows.dst.pitch` ([`copy_2d`] in elements).
fn strided<T: Element>(
    s: &Buffer<T>,
    d: &mut Buffer<T>,
    rows: Strided,
    site: &'static DetourSite,
) -> Result<()> {
    let bytes = |r: Rows| {
        let b = size_of::<T>() as u64;
        Rows {
            start: r.start * b,
            width: r.width * b,
            pitch: r.pitch * b,
        }
    };
    copy_2d(s, d, (bytes(rows.src), bytes(rows.dst)), rows.height, site)
}

/// Element `k` of `n` from an array of whole records to one of field arrays (SoA, SPEC
/// 2.3), or between two such, both in logical order: per field, a row per element, the
/// field's bytes wide, from its offset in a whole record (the pitch the record's) or its
/// array (the pitch the field's).
fn fields<T: Element>(
    s: &Buffer<T>,
    d: &mut Buffer<T>,
    n: usize,
    site: &'static DetourSite,
) -> Result<()> {
    let ElemType::Record(record) = T::ELEM else {
        return Err(Error::CopyUnsupported {
            reason: format!("{} is not a record, whose fields could be copied", T::ELEM),
        });
    };
    let side = |at: Option<FieldArrays>, k: usize| {
        let field = record.def().fields[k].elem.size_bytes();
        match at {
            None => Rows {
                start: record.field_offset(k),
                width: field,
                pitch: record.size_bytes(),
            },
            Some(a) => Rows {
                start: a.record.soa_start(k, a.extent as u64, a.align),
                width: field,
                pitch: field,
            },
        }
    };
    for k in 0..record.def().fields.len() {
        copy_2d(
            s,
            d,
            (side(s.fields(), k), side(d.fields(), k)),
            n as u64,
            site,
        )?;
    }
    Ok(())
}

/// Row `r < height` of `src.width` bytes from `src.start + r * src.pitch` bytes of the
/// storage of `s` to `dst.start + r * dst.pitch` of `d`'s: a `memcpy` per row between
/// host arrays, else one `cuMemcpy2DAsync` (or, on one GPU, one kernel) on the GPU's
/// stream, complete when this returns.
fn copy_2d<T: Element>(
    s: &Buffer<T>,
    d: &mut Buffer<T>,
    rows: (Rows, Rows),
    height: u64,
    site: &'static DetourSite,
) -> Result<()> {
    if let Some(device) = queue_2d(s, d, rows, height, None, site)? {
        on_gpu(Some(&device), s.type_name())?
            .stream
            .synchronize()
            .map_err(|e| Error::driver(s.type_name(), "2-D strided copy", e))?;
    }
    Ok(())
}

/// [`copy_2d`]'s rows, queued on `stream` (the GPU's own stream when `None`) and not
/// waited for when a side is on a GPU: returns that GPU, whose `stream` the caller must
/// synchronise before `d` is read or either array is dropped or written. Between two
/// arrays on one GPU, at least [`KERNEL_ROWS_BYTES`] of rows move by a kernel
/// ([`rows_on_device`]), as the copy `site`'s launch.
pub(crate) fn queue_2d<T: Element>(
    s: &Buffer<T>,
    d: &mut Buffer<T>,
    (src, dst): (Rows, Rows),
    height: u64,
    stream: Option<&Arc<cudarc::driver::CudaStream>>,
    site: &'static DetourSite,
) -> Result<Option<Device>> {
    let n = height * src.width;
    let (s_end, d_end) = (src.end(n) as usize, dst.end(n) as usize);
    if s_end > s.bytes() || d_end > d.bytes() {
        return Err(Error::CopyUnsupported {
            reason: format!(
                "rows reaching byte {s_end} and {d_end}, past {} ({} bytes) or {} ({} bytes)",
                s.type_name(),
                s.bytes(),
                d.type_name(),
                d.bytes()
            ),
        });
    }
    let (width, height) = (src.width as usize, height as usize);
    let at = |side: Rows, r: usize| side.start as usize + r * side.pitch as usize;
    // The GPU of the side (or sides) in device memory; none: both in host memory.
    let gpu = |b: &Buffer<T>| b.device_slice().and(b.device()).cloned();
    let Some(device) = gpu(s).or_else(|| gpu(d)) else {
        let (from, to) = (s.host_bytes()?, d.host_bytes_mut()?);
        for r in 0..height {
            let (i, j) = (at(src, r), at(dst, r));
            to[j..j + width].copy_from_slice(&from[i..i + width]);
        }
        return Ok(None);
    };
    let cuda = on_gpu(Some(&device), s.type_name())?;
    let on = stream.unwrap_or(&cuda.stream);
    let rows_fit = |r: Rows| height == 1 || r.pitch >= r.width;
    if s.device_slice().is_some()
        && d.device_slice().is_some()
        && s.device() == d.device()
        && width * height >= KERNEL_ROWS_BYTES
        && rows_fit(src)
        && rows_fit(dst)
    {
        let (from, to) = (s.device_address(cuda), d.device_address_mut(cuda));
        rows_on_device(cuda, on, (from, src), (to, dst), height as u64, site)?;
        return Ok(Some(device));
    }
    use cudarc::driver::sys::{self, CUmemorytype};
    let mut op = sys::CUDA_MEMCPY2D {
        srcXInBytes: src.start as usize,
        srcPitch: src.pitch as usize,
        dstXInBytes: dst.start as usize,
        dstPitch: dst.pitch as usize,
        WidthInBytes: width,
        Height: height,
        srcY: 0,
        dstY: 0,
        srcMemoryType: CUmemorytype::CU_MEMORYTYPE_HOST,
        dstMemoryType: CUmemorytype::CU_MEMORYTYPE_HOST,
        srcHost: std::ptr::null(),
        dstHost: std::ptr::null_mut(),
        srcDevice: 0,
        dstDevice: 0,
        srcArray: std::ptr::null_mut(),
        dstArray: std::ptr::null_mut(),
    };
    if s.device_slice().is_some() {
        op.srcMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
        op.srcDevice = s.device_address(cuda);
    } else {
        op.srcHost = s.host_bytes()?.as_ptr().cast();
    }
    if d.device_slice().is_some() {
        op.dstMemoryType = CUmemorytype::CU_MEMORYTYPE_DEVICE;
        op.dstDevice = d.device_address_mut(cuda);
    } else {
        op.dstHost = d.host_bytes_mut()?.as_mut_ptr().cast();
    }
    let fail = |e| Error::driver(s.type_name(), "2-D strided copy", e);
    cuda.stream.context().bind_to_thread().map_err(fail)?;
    // SAFETY: each side is a live array (a device one on `cuda`'s GPU, whose stream `on`
    // orders the copy after the work queued on it, or after the events the caller
    // recorded there) holding every element the rows reach (checked against the extents
    // above); the caller synchronises `on` before the arrays are read, written or dropped
    // (the contract above).
    unsafe { sys::cuMemcpy2DAsync_v2(&op, on.cu_stream()) }
        .result()
        .map_err(fail)?;
    Ok(Some(device))
}

/// Bytes of rows from which a copy between two arrays on one GPU goes by a kernel: the
/// copy engines move 2-D copies there at about 60% of a kernel's rate (2 GiB in rows of
/// 4 MiB on an H200: 2.56 ms, a copy kernel 1.51 ms), and beside NCCL's messages they
/// slowed those from 6.1 to 8.9 ms (a kernel to 7.2), while below a MiB their latency is
/// what counts, and a kernel's first compile would cost more than the copy.
const KERNEL_ROWS_BYTES: usize = 1 << 20;

/// `height` rows between two arrays on `cuda`'s GPU (at device addresses `from` and `to`)
/// by the rows kernel for their shape (`kernels::rows_kernel`, one per shape, in the
/// widest word that their starts, widths and pitches are multiples of), queued on `on`.
fn rows_on_device(
    cuda: &CudaDevice,
    on: &Arc<cudarc::driver::CudaStream>,
    (from, src): (u64, Rows),
    (to, dst): (u64, Rows),
    height: u64,
    site: &'static DetourSite,
) -> Result<()> {
    let (from, to) = (from + src.start, to + dst.start);
    let bytes = [from, to, src.width, src.pitch, dst.pitch];
    let (word, elem) = [
        (16, ElemType::Int4),
        (8, ElemType::Int2),
        (4, ElemType::Int),
        (1, ElemType::UChar),
    ]
    .into_iter()
    .find(|(w, _)| bytes.iter().all(|b| b % w == 0))
    .expect("every count of bytes is a multiple of 1");
    // One row has no pitch to keep: the kernel for its width serves it.
    let pitch = |r: Rows| match height {
        1 => r.width / word,
        _ => r.pitch / word,
    };
    let rows = Rows2d {
        word: elem,
        height,
        width: src.width / word,
        src_pitch: pitch(src),
        dst_pitch: pitch(dst),
    };
    static KERNELS: BuiltKernels<Rows2d> = OnceLock::new();
    let kernel = built_kernel(&KERNELS, rows, || {
        parray_compiler::kernels::rows_kernel("parray_rows", rows, Dialect::Cuda)
    })?;
    let launch = Launch::mover("parray_rows", &kernel.source, kernel.grid, site);
    // SAFETY: `parray_rows(W* s, W* d)` takes two device addresses on `cuda`'s GPU, each
    // the start of a side's rows in a live array that holds them to the end of their last
    // row (the caller checked both extents), aligned to the word `W` (chosen above to
    // divide them); the kernel's every access is proved within its side's type, which ends
    // where that last row does (`Rows2d::module`). The sides are distinct arrays (a `&`
    // and a `&mut`); `on` orders the launch after their producers, and the caller
    // synchronises it before they are used again.
    unsafe {
        run_on_gpu(
            cuda,
            on,
            &launch,
            &[KernelValue::U64(from), KernelValue::U64(to)],
        )
    }
}

/// `from` (on one GPU) into `to` (on another), complete when this returns: one
/// `cuMemcpyPeerAsync` on the destination's stream, after the work the source's stream
/// has queued, with peer access between the two GPUs enabled where they have it.
fn peer_copy<T: Element>(
    from: &impl DevicePtr<T>,
    to: &mut impl DevicePtrMut<T>,
    type_name: &'static str,
) -> Result<()> {
    let stream = to.stream().clone();
    let fail = |e| Error::driver(type_name, "peer copy between GPUs", e);
    enable_peer_access(from.stream().context(), stream.context()).map_err(fail)?;
    // The source's kernels may still be running (a detour returns once they are queued)
    // and the two streams do not order each other (cudarc's events are off: one stream a
    // device): wait for them, then `cuMemcpyPeerAsync` on the destination's stream.
    from.stream().synchronize().map_err(fail)?;
    stream.memcpy_dtod(from, to).map_err(fail)?;
    stream.synchronize().map_err(fail)
}

/// Staging memory for `n` elements on a GPU.
fn alloc_staging<T: Element>(
    cuda: &CudaDevice,
    n: usize,
    type_name: &'static str,
) -> Result<CudaSlice<T>> {
    cuda.stream
        .alloc_zeros(n)
        .map_err(|e| Error::driver(type_name, "allocating a staging array", e))
}

/// The elements of `s` (an array of `S` on the GPU `cuda`) in logical order, remapped
/// into a new staging array there.
fn remap_to_staging<S: DataType, D: DataType<Elem = S::Elem>>(
    s: &Buffer<S::Elem>,
    cuda: &CudaDevice,
    site: &'static DetourSite,
) -> Result<CudaSlice<S::Elem>> {
    let mut staging = alloc_staging::<S::Elem>(cuda, S::size(), S::NAME)?;
    let from = s.device_address(cuda);
    let to = staging.device_ptr_mut(&cuda.stream).0;
    remap_on_device::<S, D>(cuda, (from, Layout::Typed), (to, Layout::Contiguous), site)?;
    Ok(staging)
}

/// `to[d(k)] = from[s(k)]` for `k < n` (`None`: the identity).
fn remap_on_host<T: Copy>(
    from: &[T],
    to: &mut [T],
    n: usize,
    mut s: Option<Program>,
    mut d: Option<Program>,
) {
    for k in 0..n {
        let at = |p: &mut Option<Program>| p.as_mut().map_or(k, |p| p.eval(&[k as u64]) as usize);
        let (i, j) = (at(&mut s), at(&mut d));
        to[j] = from[i];
    }
}

/// How a remap kernel reads or writes one side: as the side's type lays it out, or as `n`
/// contiguous elements (a staging array).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Layout {
    Typed,
    Contiguous,
}

/// The GPU kernel moving element `k` of `S` (at `from`) to element `k` of `D` (at `to`),
/// either side read or written in contiguous order instead where its [`Layout`] says so.
fn remap_on_device<S: DataType, D: DataType<Elem = S::Elem>>(
    cuda: &CudaDevice,
    (from, s_layout): (u64, Layout),
    (to, d_layout): (u64, Layout),
    site: &'static DetourSite,
) -> Result<()> {
    let kernel = remap_kernel::<S, D>((s_layout, d_layout), || {
        let elem = <S::Elem as Element>::ELEM;
        let flat =
            parray_layout::Module::parse(&format!("#parray {{{elem} [{}]}} FLAT", S::size()))?;
        let side = |layout, typed| match layout {
            Layout::Typed => typed,
            Layout::Contiguous => (&flat, "FLAT"),
        };
        parray_compiler::kernels::remap_kernel(
            "parray_copy",
            elem,
            side(s_layout, (S::module(), S::NAME)),
            side(d_layout, (D::module(), D::NAME)),
            Dialect::Cuda,
        )
    })?;
    let launch = Launch::mover("parray_copy", &kernel.source, kernel.grid, site);
    // SAFETY: `parray_copy(T* s, T* d)` takes these two device addresses, of arrays on
    // that device (a `#copy`'s source and destination, or a staging array; distinct, so
    // that the copy reads what it was given), each holding the extent of its side's type (or `n` elements for a
    // contiguous staging array): the extents the kernel's every access is proved within
    // (`kernels::remap_kernel` builds no kernel otherwise).
    unsafe {
        run_on_gpu(
            cuda,
            &cuda.stream,
            &launch,
            &[KernelValue::U64(from), KernelValue::U64(to)],
        )
    }
}

/// The remap kernel for `(S, D)` with these layouts: one per pair of types and layouts.
fn remap_kernel<S: 'static, D: 'static>(
    layouts: (Layout, Layout),
    make: impl FnOnce() -> parray_layout::Result<Kernel>,
) -> Result<&'static Kernel> {
    static KERNELS: BuiltKernels<(TypeId, TypeId, (Layout, Layout))> = OnceLock::new();
    built_kernel(
        &KERNELS,
        (TypeId::of::<S>(), TypeId::of::<D>(), layouts),
        make,
    )
}

/// The copy's call site, as launches and their errors name it (one per call site).
fn site(at: &'static std::panic::Location<'static>) -> &'static DetourSite {
    static SITES: OnceLock<Mutex<HashMap<(&'static str, u32), &'static DetourSite>>> =
        OnceLock::new();
    SITES
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry((at.file(), at.line()))
        .or_insert_with(|| {
            Box::leak(Box::new(DetourSite {
                array: "#copy",
                file: at.file(),
                line: at.line(),
            }))
        })
}
