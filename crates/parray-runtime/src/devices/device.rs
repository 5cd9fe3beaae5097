//! Devices as values: a CUDA GPU or an emulated one, each with its own memory, stream,
//! launch limits and kernels, and a current device per thread.
//!
//! The backend ([`backend`]: the kind of the process's devices, chosen once) only picks
//! the process's default devices ([`Device::nth`], [`Device::current`]); a kernel runs on
//! the device its arrays live on, which may be of either kind whatever the backend.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use cudarc::driver::{sys, CudaContext, CudaSlice, CudaStream, DriverError, PinnedHostSlice};
use parray_layout::grid::LaunchLimits;

use crate::device_id::DeviceId;
use crate::devices::jit::Kernels;
use crate::error::{Error, Result};

/// The number of emulated devices when `PARRAY_EMULATED_DEVICES` is unset: two, so that
/// multi-device code is exercised on machines without a GPU.
const DEFAULT_EMULATED_DEVICES: usize = 2;

/// A device that runs cuda thread arrays and holds their dmem: a CUDA GPU, or a device
/// emulated on the CPU (whose memory is host memory and whose kernels run as
/// `exec::emulate` runs them).
///
/// Cheap to clone (an `Arc` inside); two values are equal when they are the same device
/// (kind and ordinal). `Device::cuda(n)` is the same device every time it is asked for.
#[derive(Clone)]
pub struct Device(Kind);

#[derive(Clone)]
enum Kind {
    Cuda(Arc<CudaDevice>),
    Emulated(usize),
}

/// What a GPU keeps for the process: its context, the one stream its copies, launches
/// and timings use (so they are ordered without events), and what is read or compiled
/// once per device.
pub(crate) struct CudaDevice {
    pub(crate) ctx: Arc<CudaContext>,
    pub(crate) stream: Arc<CudaStream>,
    /// The device's launch limits, read on the first launch (`limits.rs`).
    pub(super) limits: OnceLock<std::result::Result<LaunchLimits, String>>,
    /// The kernels loaded into this context (functions belong to a context).
    pub(crate) kernels: Kernels,
    /// The record that kernels with checked accesses write their first fault to, made on
    /// first use (read back by `exec::fault`).
    fault: OnceLock<std::result::Result<Mutex<FaultRecord>, String>>,
    /// The device's cuBLAS handle, made on first use (`cublas::sgemm`).
    pub(crate) blas: OnceLock<std::result::Result<Mutex<cudarc::cublas::CudaBlas>, String>>,
    /// The second stream, made on first use at the highest priority: the copies of a
    /// pipelined `#copy` (`copy::copy_in_chunks`) and NCCL's messages run on it, beside
    /// the work of `stream`, ordered with it by events.
    side: OnceLock<std::result::Result<Arc<CudaStream>, String>>,
    /// The TMA copies' tensor maps of the last launches, kept for the next one over the
    /// same arrays.
    pub(crate) tensor_maps: crate::devices::tensor_map::TensorMaps,
}

impl CudaDevice {
    /// The device's second stream ([`CudaDevice::side`]), made on first use.
    pub(crate) fn side_stream(&self) -> Result<&Arc<CudaStream>> {
        self.side
            .get_or_init(|| {
                // At the highest priority: the copies are a pipeline's critical path, and
                // their kernels (NCCL's, the rows kernel) then take the multiprocessors
                // before the next block of the work they overlap, never after all of it.
                let (_, highest) = cudarc::driver::result::stream::get_priority_range()
                    .map_err(|e| e.to_string())?;
                let side = self
                    .ctx
                    .new_stream_with_priority(highest)
                    .map_err(|e| e.to_string())?;
                side.join(&self.stream).map_err(|e| e.to_string())?;
                Ok(side)
            })
            .as_ref()
            .map_err(|reason| Error::Driver {
                type_name: "#copy",
                operation: "making a second stream",
                reason: reason.clone(),
            })
    }

    /// The device's fault record, held by one launch at a time.
    pub(crate) fn fault_record(&self) -> std::result::Result<MutexGuard<'_, FaultRecord>, String> {
        self.fault
            .get_or_init(|| {
                let fail = |e: DriverError| format!("allocating the fault record: {e}");
                let words = parray_compiler::fault::WORDS;
                let device = self.stream.alloc_zeros::<u64>(words).map_err(fail)?;
                // SAFETY: cached page-locked memory for `words` u64s, written below from the
                // zeroed device record before anything reads it.
                let mut host =
                    unsafe { self.ctx.alloc_pinned_with_flags::<u64>(words, 0) }.map_err(fail)?;
                self.stream.memcpy_dtoh(&device, &mut host).map_err(fail)?;
                self.stream.synchronize().map_err(fail)?;
                Ok(Mutex::new(FaultRecord { device, host }))
            })
            .as_ref()
            .map(|m| m.lock().unwrap_or_else(|e| e.into_inner()))
            .map_err(String::clone)
    }
}

/// Where kernels with checked accesses record their first fault (`exec::fault` reads it),
/// and the page-locked host words it is read back into after each such launch (on the
/// stream, right after the kernel: no second wait).
pub(crate) struct FaultRecord {
    pub(crate) device: CudaSlice<u64>,
    pub(crate) host: PinnedHostSlice<u64>,
}

thread_local! {
    /// The calling thread's current device; `None` until it is first asked for or set.
    static CURRENT: RefCell<Option<Device>> = const { RefCell::new(None) };
}

impl Device {
    /// CUDA device `ordinal` (GPU `ordinal` of the driver's numbering), opened on first
    /// use and the same device afterwards; an error when there is no driver or no such
    /// GPU, whatever the backend.
    pub fn cuda(ordinal: usize) -> Result<Device> {
        open_cuda(ordinal)
            .map(|cuda| Device(Kind::Cuda(cuda)))
            .map_err(|reason| Error::CudaUnavailable { reason })
    }

    /// Emulated device `ordinal`: any ordinal is one, since an emulated device is only a
    /// name for a part of host memory and the CPU runs its kernels.
    pub fn emulated(ordinal: usize) -> Device {
        Device(Kind::Emulated(ordinal))
    }

    /// Device `i` of the process's backend ([`backend`]): GPU `i` under cuda, emulated
    /// device `i` under the emulation; `Error::NoSuchDevice` when `i >= Device::count()`.
    pub fn nth(i: usize) -> Result<Device> {
        let count = Device::count()?;
        let backend = backend()?;
        if i >= count {
            return Err(Error::NoSuchDevice {
                ordinal: i,
                count,
                what: match backend {
                    Backend::Cuda => "GPUs",
                    Backend::Emulate => "emulated devices (PARRAY_EMULATED_DEVICES)",
                },
            });
        }
        match backend {
            Backend::Cuda => Device::cuda(i),
            Backend::Emulate => Ok(Device::emulated(i)),
        }
    }

    /// How many devices the backend has: the GPUs present under cuda; under the
    /// emulation the value of `PARRAY_EMULATED_DEVICES` (a number, 1 or more; 2 when
    /// unset), read once per process.
    pub fn count() -> Result<usize> {
        match backend()? {
            Backend::Cuda => {
                call_driver("the GPUs could not be counted", CudaContext::device_count)
                    .map(|n| usize::try_from(n).unwrap_or(0))
                    .map_err(|reason| Error::CudaUnavailable { reason })
            }
            Backend::Emulate => emulated_count(),
        }
    }

    /// The calling thread's current device: where `Buffer::new` puts dmem and where a
    /// launch without array arguments runs. [`Device::nth`]`(0)` until the thread sets
    /// another ([`Device::make_current`], [`Device::with_current`]).
    pub fn current() -> Result<Device> {
        if let Some(device) = CURRENT.with_borrow(Clone::clone) {
            return Ok(device);
        }
        let device = Device::nth(0)?;
        CURRENT.set(Some(device.clone()));
        Ok(device)
    }

    /// Makes this device the calling thread's current device (other threads keep theirs).
    pub fn make_current(&self) {
        CURRENT.set(Some(self.clone()));
    }

    /// Runs `f` with this device as the calling thread's current device, then restores
    /// the previous one (also when `f` panics).
    pub fn with_current<R>(&self, f: impl FnOnce() -> R) -> R {
        /// Puts the previous current device back when dropped.
        struct Restore(Option<Device>);
        impl Drop for Restore {
            fn drop(&mut self) {
                CURRENT.set(self.0.take());
            }
        }
        let _restore = Restore(CURRENT.replace(Some(self.clone())));
        f()
    }

    /// The device as memory records it.
    pub fn id(&self) -> DeviceId {
        match &self.0 {
            Kind::Cuda(cuda) => DeviceId {
                emulated: false,
                ordinal: cuda.ctx.ordinal(),
            },
            Kind::Emulated(ordinal) => DeviceId {
                emulated: true,
                ordinal: *ordinal,
            },
        }
    }

    /// The device's number among those of its kind.
    pub fn ordinal(&self) -> usize {
        self.id().ordinal
    }

    /// Whether the CPU emulates this device.
    pub fn is_emulated(&self) -> bool {
        matches!(self.0, Kind::Emulated(_))
    }

    /// `cuda:1` or `emulated:0`, for messages.
    pub fn name(&self) -> String {
        self.id().to_string()
    }

    /// How many blocks the device runs side by side, for choosing a grid: a GPU's
    /// multiprocessors, the emulation's CPU threads.
    pub fn multiprocessors(&self) -> Result<usize> {
        use cudarc::driver::sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT;
        match self.context() {
            Some(ctx) => ctx
                .attribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
                .map(|n| n as usize)
                .map_err(|e| Error::driver("the device", "multiprocessor count", e)),
            None => Ok(std::thread::available_parallelism().map_or(1, |n| n.get())),
        }
    }

    /// The CUDA context of a GPU (for driver calls of one's own); `None` when emulated.
    pub fn context(&self) -> Option<&Arc<CudaContext>> {
        self.as_cuda().map(|cuda| &cuda.ctx)
    }

    /// The stream on which the runtime orders a GPU's copies and launches (the context's
    /// default stream); `None` when emulated.
    pub fn stream(&self) -> Option<&Arc<CudaStream>> {
        self.as_cuda().map(|cuda| &cuda.stream)
    }

    /// Waits for the work queued on this device: a detour whose kernel has every access
    /// proved returns once it is queued (SPEC.md 4.2), so a host clock around it, or a
    /// failure while it runs, needs this (or any copy back, which waits too). Immediate on
    /// the emulated device, whose detours return when they are done.
    pub fn synchronize(&self) -> Result<()> {
        match self.as_cuda() {
            Some(cuda) => cuda
                .stream
                .synchronize()
                .map_err(|e| Error::driver("device", "waiting for the queued work", e)),
            None => Ok(()),
        }
    }

    /// The device that `id` names (the one open GPU, or the emulated device).
    pub(crate) fn from_id(id: DeviceId) -> Result<Device> {
        if id.emulated {
            Ok(Device::emulated(id.ordinal))
        } else {
            Device::cuda(id.ordinal)
        }
    }

    /// The GPU's state, for a CUDA device.
    pub(crate) fn as_cuda(&self) -> Option<&CudaDevice> {
        match &self.0 {
            Kind::Cuda(cuda) => Some(cuda),
            Kind::Emulated(_) => None,
        }
    }

    /// The function `kernel` of `source`, compiled by NVRTC for this device (which must
    /// be a GPU). Each (kernel, source) is compiled once per device and process, and once
    /// per machine and architecture through the disk cache (`PARRAY_CACHE_DIR`, else
    /// `$XDG_CACHE_HOME/parray`, else `$HOME/.cache/parray`), whose entries are keyed by
    /// source, architecture and NVRTC version. `PARRAY_DUMP_SOURCE=1` prints each
    /// kernel's source to stderr on its first use on a device.
    pub fn compile(&self, kernel: &str, source: &str) -> Result<cudarc::driver::CudaFunction> {
        Ok(self.gpu(kernel)?.kernels.compile(kernel, source)?.function)
    }

    /// [`Device::compile`] for sources that live as long as the process (the kernels
    /// `detour!` generates): found again by address, so that a launch does not rehash its
    /// source.
    pub fn compile_static(
        &self,
        kernel: &str,
        source: &'static str,
    ) -> Result<cudarc::driver::CudaFunction> {
        Ok(self
            .gpu(kernel)?
            .kernels
            .compile_static(kernel, source)?
            .function)
    }

    /// The GPU this device is, which compiling `kernel` needs.
    fn gpu(&self, kernel: &str) -> Result<&CudaDevice> {
        self.as_cuda().ok_or_else(|| Error::CudaUnavailable {
            reason: format!("kernel {kernel} needs a GPU, and the current device is {self}"),
        })
    }
}

impl PartialEq for Device {
    fn eq(&self, other: &Self) -> bool {
        self.id() == other.id()
    }
}

impl Eq for Device {}

impl fmt::Debug for Device {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Device({})", self.id())
    }
}

impl fmt::Display for Device {
    /// As [`Device::name`].
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.id().fmt(f)
    }
}

/// GPU `ordinal`, opened once per process (a failure is remembered too: the devices of a
/// machine do not change while it runs); the error says why there is no such GPU.
pub(crate) fn open_cuda(ordinal: usize) -> std::result::Result<Arc<CudaDevice>, String> {
    type Opened = HashMap<usize, std::result::Result<Arc<CudaDevice>, String>>;
    static OPENED: OnceLock<Mutex<Opened>> = OnceLock::new();
    // Held while opening: two threads asking for one GPU open it once.
    OPENED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .entry(ordinal)
        .or_insert_with(|| {
            // `CudaContext::new` retains the device's primary context and binds it to
            // this thread; cudarc binds it again in every call made from another thread.
            let ctx = call_driver(
                format_args!("CUDA device {ordinal} could not be opened"),
                || CudaContext::new(ordinal),
            )?;
            // SAFETY: the runtime issues its work on a device on that device's stream, so
            // cudarc's per-buffer events (for ordering across streams) are not needed; the
            // one exception, the side stream of pipelined copies and NCCL, is ordered with
            // it by explicit events where it starts and ends (`distributed::exchange`).
            // Raw kernel arguments bypass cudarc's events anyway.
            unsafe { ctx.disable_event_tracking() };
            let stream = ctx.default_stream();
            Ok(Arc::new(CudaDevice {
                kernels: Kernels::new(ctx.clone()),
                ctx,
                stream,
                limits: OnceLock::new(),
                fault: OnceLock::new(),
                blas: OnceLock::new(),
                side: OnceLock::new(),
                tensor_maps: Default::default(),
            }))
        })
        .clone()
}

/// The GPU of the device some memory is on (`None`: host memory); an error naming the
/// memory's type where that is not a GPU.
pub(crate) fn on_gpu<'d>(device: Option<&'d Device>, type_name: &str) -> Result<&'d CudaDevice> {
    device
        .and_then(Device::as_cuda)
        .ok_or_else(|| Error::CudaUnavailable {
            reason: format!("{type_name} is not on a GPU"),
        })
}

/// Lets the GPUs of two contexts reach each other's memory, both ways, where the hardware
/// can (`cuDeviceCanAccessPeer`): then a peer copy between them goes over the GPUs' link
/// (NVLink or PCIe) instead of through host memory. Once per pair of GPUs in a process;
/// a pair that cannot is left as it is (peer copies still work, staged by the driver).
pub(crate) fn enable_peer_access(
    a: &Arc<CudaContext>,
    b: &Arc<CudaContext>,
) -> std::result::Result<(), DriverError> {
    static ENABLED: OnceLock<Mutex<HashSet<(usize, usize)>>> = OnceLock::new();
    let mut enabled = ENABLED
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    for (from, to) in [(a, b), (b, a)] {
        let pair = (from.ordinal(), to.ordinal());
        if pair.0 == pair.1 || enabled.contains(&pair) {
            continue;
        }
        let mut can = 0;
        // SAFETY: `can` is a valid place for the answer; both are devices of open contexts.
        unsafe { sys::cuDeviceCanAccessPeer(&mut can, from.cu_device(), to.cu_device()) }
            .result()?;
        if can != 0 {
            from.bind_to_thread()?;
            // SAFETY: `from`'s context is current on this thread and `to`'s is a live
            // context (both held by the `Arc`s); the flags must be 0.
            match unsafe { sys::cuCtxEnablePeerAccess(to.cu_ctx(), 0) }.result() {
                Err(DriverError(sys::CUresult::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED))
                | Ok(()) => {}
                Err(e) => return Err(e),
            }
        }
        enabled.insert(pair);
    }
    Ok(())
}

/// Calls the driver through cudarc once its library is known to load, turning cudarc's
/// panic on a missing symbol (a driver older than its bindings) into an error; a driver
/// error is said as `what: error`.
fn call_driver<R>(
    what: impl fmt::Display,
    f: impl FnOnce() -> std::result::Result<R, DriverError>,
) -> std::result::Result<R, String> {
    static PRESENT: OnceLock<bool> = OnceLock::new();
    // SAFETY: only tries to dlopen the driver library.
    if !*PRESENT.get_or_init(|| unsafe { cudarc::driver::sys::is_culib_present() }) {
        return Err("the CUDA driver library (libcuda) could not be loaded".into());
    }
    panic::catch_unwind(AssertUnwindSafe(f))
        .map_err(|_| "the CUDA driver library lacks a required function".to_string())?
        .map_err(|e| format!("{what}: {e}"))
}

/// `PARRAY_EMULATED_DEVICES`, read once per process.
fn emulated_count() -> Result<usize> {
    static COUNT: OnceLock<Result<usize>> = OnceLock::new();
    COUNT
        .get_or_init(|| match std::env::var("PARRAY_EMULATED_DEVICES") {
            Err(_) => Ok(DEFAULT_EMULATED_DEVICES),
            Ok(value) => match value.trim().parse::<usize>() {
                Ok(n) if n > 0 => Ok(n),
                _ => Err(Error::BadEmulatedDevices { value }),
            },
        })
        .clone()
}

/// What runs the body of a cuda detour on the process's default devices
/// ([`Device::nth`], [`Device::current`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    /// NVRTC-compiled kernels on the GPUs.
    Cuda,
    /// The CPU emulation of the grid (`exec::emulate`), on emulated devices.
    Emulate,
}

/// The backend, chosen once per process from `PARRAY_BACKEND` (`cuda`, `emulate`, or
/// unset/`auto`: cuda when a driver and GPU 0 are present, else the emulation, said
/// once on stderr).
pub fn backend() -> Result<Backend> {
    static BACKEND: OnceLock<Result<Backend>> = OnceLock::new();
    BACKEND
        .get_or_init(|| {
            let choice = std::env::var("PARRAY_BACKEND").unwrap_or_default();
            match choice.as_str() {
                "cuda" => {
                    open_cuda(0)
                        .map(|_| Backend::Cuda)
                        .map_err(|reason| Error::CudaUnavailable {
                            reason: format!("PARRAY_BACKEND=cuda, but {reason}"),
                        })
                }
                "emulate" => Ok(Backend::Emulate),
                "" | "auto" => Ok(match open_cuda(0) {
                    Ok(_) => Backend::Cuda,
                    Err(_) => {
                        crate::diag::note(format_args!(
                            "no CUDA device; cuda thread arrays run on the CPU emulator"
                        ));
                        Backend::Emulate
                    }
                }),
                _ => Err(Error::BadBackend { value: choice }),
            }
        })
        .clone()
}

/// Whether the `#sync`s of kernels run on a GPU are checked barriers (`PARRAY_CHECK_SYNC=1`,
/// read once per process; SPEC.md 4.6): a `#sync` that not every thread of a block reaches
/// is then `Error::DivergentSync`, as under the emulation, which always checks.
pub fn checks_sync() -> bool {
    static CHECKS: OnceLock<bool> = OnceLock::new();
    *CHECKS.get_or_init(|| std::env::var_os("PARRAY_CHECK_SYNC").is_some_and(|v| v == "1"))
}

/// Whether a detour waits for its kernel before returning though the kernel has no fault
/// record to read (`CUDA_LAUNCH_BLOCKING=1`, read once per process; SPEC.md 4.2).
pub(crate) fn launch_blocking() -> bool {
    static BLOCKING: OnceLock<bool> = OnceLock::new();
    *BLOCKING.get_or_init(|| std::env::var_os("CUDA_LAUNCH_BLOCKING").is_some_and(|v| v == "1"))
}

/// What NVRTC compiles, under `PARRAY_CHECK_SYNC=1`, for the `source` of a kernel with
/// `#sync`: each `__syncthreads()` a checked barrier (`parray_compiler::fault::checked_sync`).
pub fn checked_sync_source(source: &str) -> String {
    parray_compiler::fault::checked_sync(source)
}

/// The context of GPU 0, when a driver and a GPU are present, whatever the backend: what
/// pins pinned memory when the current device is emulated, and a way to ask whether the
/// machine has a GPU. For a given device, [`Device::context`].
pub fn cuda_context() -> Option<Arc<CudaContext>> {
    Device::cuda(0).ok()?.context().cloned()
}
