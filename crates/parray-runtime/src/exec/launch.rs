//! cuda detours: launch the generated kernel on the GPU, or run its CPU emulation.

use std::borrow::Cow;
use std::collections::HashSet;
use std::ffi::c_void;
use std::sync::{Arc, Mutex, OnceLock};

use cudarc::driver::sys::{self, CUfunction_attribute};
use cudarc::driver::{CudaStream, DevicePtr, DevicePtrMut, DriverError};
use parray_compiler::kernels::Kernel;
use parray_layout::grid::CudaGrid;

use crate::devices::device::{CudaDevice, Device, FaultRecord};
use crate::devices::jit;
use crate::error::{DetourSite, Error, Result};
use crate::exec::emulate::{self, BlockThreads, EmulateError, ThreadCtx};
use crate::exec::fault;
use crate::mem::kernel_arg::{KernelArg, KernelValue};

/// Before a cuda detour starts: the host `usize` it reads as `name` fits the body's 32-bit
/// `usize`, which then receives it as a `u32`.
pub fn host_index(value: usize, name: &'static str, site: &'static DetourSite) -> Result<()> {
    match u32::try_from(value) {
        Ok(_) => Ok(()),
        Err(_) => Err(Error::HostIndexTooLarge { site, name, value }),
    }
}

/// One cuda detour, as the code generator describes it.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The `extern "C" __global__` function's name in `source`.
    pub kernel: &'static str,
    /// The generated CUDA C source.
    pub source: Cow<'static, str>,
    /// `<<<grid, block>>>`: blocks per grid and threads per block, `[x, y, z]` each.
    pub shape: CudaGrid,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
    /// The detour in the user's source, for errors.
    pub site: &'static DetourSite,
    /// For a kernel with checked accesses (`emit_c::checked_arrays`), the names of the
    /// arrays its fault record numbers; the launch passes the record after the arguments
    /// and turns a recorded fault into the error an emulated thread's panic gives.
    pub checked: Option<&'static [&'static str]>,
    /// The same kernel in HIP C++ for 64-lane wavefronts (SPEC.md 4.8), which
    /// `PARRAY_DUMP_SOURCE=hip` prints; `None` for a copy's kernel.
    pub hip_source: Option<&'static str>,
    /// The parameters the kernel reads from constant memory (`emit_c`'s `__constant__`
    /// arrays, named as the parameters): each one's position among the arguments and its
    /// name. The launch copies each argument's array into its constant array first.
    pub constants: &'static [(usize, &'static str)],
    /// The body's TMA copies (SPEC 3.9, "TMA copies"), in the order of their map
    /// parameters, which follow every other argument: each map is encoded at the launch
    /// over the array its pointer parameter is given.
    pub tma: Vec<TmaArg>,
}

/// The tensor map of one TMA copy of a kernel, as planned (`parray_layout::tma::plan`)
/// when the body is built or, for a source of run-time sizes, when its kernel is
/// specialised at them: the box's dimensions with their global strides, the swizzle, and
/// whether the source covers past its data (TMA's zeros past the tensor are the copy's).
#[derive(Debug, Clone, Copy)]
pub struct TmaMap {
    pub dims: &'static [parray_layout::tma::TmaDim],
    pub swizzle: parray_layout::Swizzle,
    pub zero_fill: bool,
}

impl TmaMap {
    /// The planner's map for elements of `elem_bytes` bytes.
    pub fn plan(&self, elem_bytes: u64) -> parray_layout::tma::TmaPlan {
        parray_layout::tma::TmaPlan {
            elem_bytes,
            dims: self.dims.to_vec(),
            swizzle: self.swizzle,
            zero_fill: self.zero_fill,
        }
    }

    /// The map of `plan`, kept for the process (a specialised kernel's).
    pub fn leaked(plan: &parray_layout::tma::TmaPlan) -> TmaMap {
        TmaMap {
            dims: Box::leak(plan.dims.clone().into_boxed_slice()),
            swizzle: plan.swizzle,
            zero_fill: plan.zero_fill,
        }
    }
}

/// One TMA copy of a kernel, as the launch encodes its tensor map: its map over the array
/// of the pointer argument `param`, of `len` elements from that pointer on.
#[derive(Debug, Clone)]
pub struct TmaArg {
    /// The pointer parameter's position among the arguments.
    pub param: usize,
    /// The copy's source type, which the errors name.
    pub decl: &'static str,
    pub elem: parray_layout::ElemType,
    pub map: TmaMap,
    /// The elements of the argument's array from its pointer on.
    pub len: u64,
}

impl TmaArg {
    /// The planner's map of the copy.
    pub fn plan(&self) -> parray_layout::tma::TmaPlan {
        self.map.plan(self.elem.size_bytes())
    }

    /// Which copy its maps are for.
    fn site(&self) -> crate::devices::tensor_map::MapSite {
        crate::devices::tensor_map::MapSite {
            dims: (self.map.dims.as_ptr() as usize, self.map.dims.len()),
            swizzle: self.map.swizzle,
            zero_fill: self.map.zero_fill,
            elem: self.elem,
        }
    }

    /// The tensor map over the argument at `address` (`Error::TensorMap` naming the
    /// declaration and the driver's rule it breaks, or the driver's own error).
    pub fn encode(&self, address: u64) -> Result<crate::devices::tensor_map::TensorMap> {
        crate::devices::tensor_map::TensorMapSpec::of(
            self.decl,
            &self.plan(),
            self.elem,
            address,
            self.len,
        )?
        .encode(self.decl)
    }
}

impl Launch {
    /// One of the runtime's kernels that move a copy's elements (`parray_copy`,
    /// `parray_exchange`): no shared memory, no checked accesses, no HIP source, no
    /// parameters in constant memory.
    pub(crate) fn mover(
        kernel: &'static str,
        source: &'static str,
        shape: CudaGrid,
        site: &'static DetourSite,
    ) -> Launch {
        Launch {
            kernel,
            source: source.into(),
            shape,
            shared_bytes: 0,
            site,
            checked: None,
            hip_source: None,
            constants: &[],
            tma: Vec::new(),
        }
    }
}

/// The kernels of one kind the runtime builds for itself, by what they were built for.
pub(crate) type BuiltKernels<K> = OnceLock<Mutex<std::collections::HashMap<K, &'static Kernel>>>;

/// The kernel `key` of `kernels`, built by `make` at its first use and kept for the
/// process, as the sources of detours are; an error where it cannot be built
/// (`parray_compiler::kernels` builds only kernels whose accesses are all proved).
pub(crate) fn built_kernel<K: Eq + std::hash::Hash>(
    kernels: &'static BuiltKernels<K>,
    key: K,
    make: impl FnOnce() -> parray_layout::Result<Kernel>,
) -> Result<&'static Kernel> {
    let mut kernels = kernels
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    if let Some(k) = kernels.get(&key) {
        return Ok(k);
    }
    let kernel: &'static Kernel =
        Box::leak(Box::new(make().map_err(|e| Error::CopyUnsupported {
            reason: e.to_string(),
        })?));
    kernels.insert(key, kernel);
    Ok(kernel)
}

/// `#detour` of a cuda thread array whose body has no `#sync`: runs on the device that
/// its pointer arguments' dmem is on (the calling thread's current device when it has
/// none): on a GPU, launches `launch.kernel` with `args`; on an emulated device, calls
/// `emulated` once for every (block, thread), in plain loops ([`emulate::run_grid`]).
/// Returns when the grid is done, or, on a GPU, once a kernel without a fault record (all
/// its accesses proved) is queued on the device's stream.
///
/// The arguments are checked first, the same way on every device: a pointer that is not
/// dmem is `Error::NotDeviceMemory`, and pointers into two devices' memory are
/// `Error::DeviceMismatch`, before anything runs. A GPU launch is checked against the
/// device's limits, a kernel with a fault record synchronised, and any failure (including
/// a fault inside the kernel) becomes `Error::Launch` naming the kernel and the detour's
/// site; an emulated one reports a panicking thread as `Error::ThreadPanicked`.
///
/// # Safety
/// As for any CUDA launch: `args` must match the kernel's parameters in number and type,
/// and the kernel must stay within the buffers it is given; each argument named in
/// `launch.constants` must hold at least the bytes of its `__constant__` array, which
/// the launch copies from it. The code generator guarantees the first and the last (the
/// detour checks that each array holds the extent of the types its body indexes it as);
/// debug builds check the second only under the emulation.
pub unsafe fn detour_cuda<F>(launch: &Launch, args: &[&dyn KernelArg], emulated: F) -> Result<()>
where
    F: Fn(&ThreadCtx) + Sync,
{
    // SAFETY: forwarded to the caller.
    unsafe {
        check_and_run(launch, args, || {
            emulate::run_grid(launch.kernel, launch.shape, emulated)
        })
    }
}

/// [`detour_cuda`] for a body with `#sync`: the emulation calls `emulated` once per block
/// ([`emulate::run_grid_blocks`]), which runs the block's threads itself, stretch by
/// stretch between its barriers, each stretch a loop over the threads present there
/// ([`BlockThreads`]); a `#sync` that some threads of a block reach and others do not is
/// reported as `Error::DivergentSync`.
///
/// # Safety
/// As [`detour_cuda`].
pub unsafe fn detour_cuda_blocks<F>(
    launch: &Launch,
    args: &[&dyn KernelArg],
    emulated: F,
) -> Result<()>
where
    F: Fn(&BlockThreads) + Sync,
{
    // SAFETY: forwarded to the caller.
    unsafe {
        check_and_run(launch, args, || {
            emulate::run_grid_blocks(launch.kernel, launch.shape, emulated)
        })
    }
}

/// Checks `args`, then runs the launch on their device: a GPU, or `emulate`.
///
/// # Safety
/// As [`detour_cuda`].
unsafe fn check_and_run(
    launch: &Launch,
    args: &[&dyn KernelArg],
    emulate: impl FnOnce() -> std::result::Result<(), EmulateError>,
) -> Result<()> {
    let values = args
        .iter()
        .map(|a| a.kernel_value())
        .collect::<Result<Vec<_>>>()?;
    let device = launch_device(launch, &values)?;
    jit::dump_hip_source(launch.kernel, launch.hip_source);
    match device.as_cuda() {
        None => {
            static DUMPED: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
            let first = DUMPED
                .get_or_init(Default::default)
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(launch.kernel);
            if first {
                jit::dump_source(
                    launch.kernel,
                    &launch.source,
                    " (emulated: the CPU runs the same body)",
                );
            }
            emulate().map_err(|e| emulation_error(launch, e))
        }
        // SAFETY: forwarded to the caller.
        Some(cuda) => unsafe { run_on_gpu(cuda, &cuda.stream, launch, &values) },
    }
}

/// The one device of the pointer arguments (the current device when there are none); a
/// kernel cannot reach another device's memory.
fn launch_device(launch: &Launch, values: &[KernelValue]) -> Result<Device> {
    let mut pointers = values.iter().enumerate().filter_map(|(i, v)| match v {
        KernelValue::Pointer { device, .. } | KernelValue::Fields { device, .. } => {
            Some((i, *device))
        }
        _ => None,
    });
    let Some((first, first_device)) = pointers.next() else {
        return Device::current();
    };
    if let Some((argument, device)) = pointers.find(|&(_, d)| d != first_device) {
        return Err(Error::DeviceMismatch {
            site: launch.site,
            first,
            first_device,
            argument,
            device,
        });
    }
    Device::from_id(first_device)
}

/// A kernel parameter as the driver takes it: the address of its bytes.
fn param<T>(value: &T) -> *mut c_void {
    (value as *const T).cast_mut().cast()
}

/// Launches `kernel` on `stream` as `shape` with `shared_bytes` of dynamic shared memory.
/// A kernel that waits for the grid before it ([`jit::Kernel::follows_previous_grid`]) is
/// launched with programmatic stream serialization, so that its blocks may start as that
/// grid's last ones leave (SPEC 4.2); any other runs after the whole of it.
///
/// # Safety
/// 1. `params` holds, in order, the address of each of the kernel's parameters, each a
///    value of the parameter's type, alive until this returns (the driver copies them).
/// 2. `stream` orders the launch after the work that writes what the kernel reads.
unsafe fn launch_on(
    stream: &CudaStream,
    kernel: &jit::Kernel,
    shape: &CudaGrid,
    shared_bytes: u32,
    params: &mut [*mut c_void],
) -> std::result::Result<(), DriverError> {
    let mut attributes = [sys::CUlaunchAttribute {
        id: sys::CUlaunchAttributeID::CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION,
        pad: [0; 4],
        value: sys::CUlaunchAttributeValue {
            programmaticStreamSerializationAllowed: 1,
        },
    }];
    let (grid, block): ((u32, u32, u32), (u32, u32, u32)) = (shape.grid.into(), shape.block.into());
    let config = sys::CUlaunchConfig {
        gridDimX: grid.0,
        gridDimY: grid.1,
        gridDimZ: grid.2,
        blockDimX: block.0,
        blockDimY: block.1,
        blockDimZ: block.2,
        sharedMemBytes: shared_bytes,
        hStream: stream.cu_stream(),
        attrs: attributes.as_mut_ptr(),
        numAttrs: u32::from(kernel.follows_previous_grid),
    };
    stream.context().bind_to_thread()?;
    // SAFETY: `config` and its attributes outlive the call; the function belongs to the
    // stream's context (it was loaded there); `params` as the caller guarantees (1), and
    // the launch is ordered on `stream` (2).
    unsafe {
        sys::cuLaunchKernelEx(
            &config,
            kernel.function.cu_function(),
            params.as_mut_ptr(),
            std::ptr::null_mut(),
        )
    }
    .result()
}

/// Launches `launch` on `stream`, one of `cuda`'s streams (the device's own, or its side
/// stream for a pipelined copy), behind the work queued there.
///
/// # Safety
/// As [`detour_cuda`], with `stream` ordering the launch after the work that writes its
/// arguments, and before the work that reads what it writes.
pub(crate) unsafe fn run_on_gpu(
    cuda: &CudaDevice,
    stream: &Arc<CudaStream>,
    launch: &Launch,
    values: &[KernelValue],
) -> Result<()> {
    let fail = |message: String| Error::Launch {
        kernel: launch.kernel.to_string(),
        site: launch.site,
        message,
    };
    check_limits(cuda, launch).map_err(fail)?;
    // Under PARRAY_CHECK_SYNC=1, a kernel with `#sync` or a `#wait` on an mbarrier is
    // compiled with checked barriers and waits, which write the fault record.
    let checks_sync = crate::devices::checks_sync()
        && (launch.source.contains("__syncthreads()")
            || launch.source.contains("PARRAY_WAIT_STALLED("));
    let kernel = match &launch.source {
        _ if checks_sync => cuda.kernels.compile(
            launch.kernel,
            &crate::devices::checked_sync_source(&launch.source),
        )?,
        Cow::Borrowed(source) => cuda.kernels.compile_static(launch.kernel, source)?,
        Cow::Owned(source) => cuda.kernels.compile(launch.kernel, source)?,
    };
    let function = &kernel.function;
    // Beyond what a kernel may declare statically, it must opt in to more.
    if u64::from(launch.shared_bytes) > parray_compiler::ir::STATIC_SHARED_BYTES {
        function
            .set_attribute(
                CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                launch.shared_bytes as i32,
            )
            .map_err(|e| {
                fail(format!(
                    "opting in to {} bytes of shared memory: {e}",
                    launch.shared_bytes
                ))
            })?;
    }
    // One launch at a time reads and resets the device's fault record.
    let held = match launch.checked.is_some() || checks_sync {
        true => Some(cuda.fault_record().map_err(fail)?),
        false => None,
    };
    let record = held.as_ref().map(|f| f.device.device_ptr(stream).0);
    // Checked barriers find the record through the module's `parray_sync_fault`.
    if let Some(address) = record.filter(|_| checks_sync) {
        let mut pointer = kernel
            .module
            .get_global("parray_sync_fault", stream)
            .map_err(|e| fail(format!("the checked barriers' record pointer: {e}")))?;
        stream
            .memcpy_htod(&address.to_ne_bytes(), &mut pointer)
            .map_err(|e| fail(format!("pointing the checked barriers at the record: {e}")))?;
    }
    let fault_address = record.filter(|_| launch.checked.is_some());
    // The parameters read from constant memory: each argument's array into the module's
    // `__constant__` array of the parameter's name, on the stream, before the kernel.
    for &(param, symbol) in launch.constants {
        let Some(&KernelValue::Pointer { address, .. }) = values.get(param) else {
            return Err(fail(format!(
                "`{symbol}` is read from constant memory, and its argument is not an array"
            )));
        };
        let mut bank = kernel
            .module
            .get_global(symbol, stream)
            .map_err(|e| fail(format!("the constant array `{symbol}`: {e}")))?;
        let bytes = bank.len();
        let (to, _record) = bank.device_ptr_mut(stream);
        // SAFETY: `address` is the argument's array on this device, which the detour
        // checked holds the extent of the cmem types the body indexes it as (the size of
        // the `__constant__` array, `bytes`), borrowed for the launch; both are ordered on
        // this stream.
        unsafe {
            cudarc::driver::result::memcpy_dtod_async(to, address, bytes, stream.cu_stream())
        }
        .map_err(|e| fail(format!("filling the constant array `{symbol}`: {e}")))?;
    }
    // Each SoA argument's struct of field addresses, alive until the launch has copied it.
    let structs: Vec<Vec<u64>> = values
        .iter()
        .map(|v| match v {
            KernelValue::Fields {
                start,
                index,
                fields,
                ..
            } => fields.addresses(*start, *index),
            _ => Vec::new(),
        })
        .collect();
    // The TMA copies' tensor maps, over the arrays their parameters are given (the last
    // launch's where they are the same).
    let maps = launch
        .tma
        .iter()
        .map(|t| match values.get(t.param) {
            Some(&KernelValue::Pointer { address, .. }) => {
                cuda.tensor_maps
                    .get_or_encode(t.site(), address, t.len, || t.encode(address))
            }
            _ => Err(fail(format!(
                "the TMA copy of `{}` reads an array the kernel is given, and its argument is not one",
                t.decl
            ))),
        })
        .collect::<Result<Vec<_>>>()?;
    // The driver reads each parameter's bytes from its address: the values, an SoA
    // parameter's struct (from its first field), the fault record, then the tensor maps.
    let mut params: Vec<*mut c_void> = values
        .iter()
        .zip(&structs)
        .map(|(value, fields)| match value {
            KernelValue::F32(v) => param(v),
            KernelValue::F64(v) => param(v),
            KernelValue::I32(v) => param(v),
            KernelValue::U32(v) => param(v),
            KernelValue::I64(v) => param(v),
            KernelValue::U64(v) => param(v),
            KernelValue::Pointer { address, .. } => param(address),
            KernelValue::Fields { .. } => param(&fields[0]),
        })
        .chain(fault_address.as_ref().map(param))
        .chain(maps.iter().map(param))
        .collect();
    // SAFETY: the arguments match the kernel (caller's contract): an SoA parameter is the
    // struct of one address per field, which `structs` holds contiguously, in field order;
    // each tensor map (the C's 64-byte aligned `parray_tensor_map`) follows the others;
    // `values`, `structs`, `fault_address` and `maps` outlive the launch, which copies them.
    unsafe {
        launch_on(
            stream,
            &kernel,
            &launch.shape,
            launch.shared_bytes,
            &mut params,
        )
    }
    .map_err(|e| fail(e.to_string()))?;
    let wait = || {
        stream
            .synchronize()
            .map_err(|e| fail(format!("the kernel failed while running: {e}")))
    };
    // A kernel without a fault record (every access proved, no checked barrier) has no
    // fault of its own to report: it runs on behind the host, before whatever the
    // device's one stream gets next, so that launches queue as a library's do. A failure
    // while it runs is the error of the next operation that waits on the device
    // (`CUDA_LAUNCH_BLOCKING=1` waits here, as CUDA's own launches then do).
    let Some(r) = held else {
        return if crate::devices::launch_blocking() {
            wait()
        } else {
            Ok(())
        };
    };
    // A checked kernel's fault record is copied back on the stream right after it: one
    // wait for both.
    let (mut r, names) = (r, launch.checked.unwrap_or(&[]));
    {
        let FaultRecord { device, host } = &mut *r;
        stream
            .memcpy_dtoh(&*device, host)
            .map_err(|e| fail(format!("reading the kernel's fault record: {e}")))?;
    }
    wait()?;
    match fault::take(cuda, &mut r).map_err(fail)? {
        Some(f) => Err(fault::as_error(&f, &launch.shape, launch.site, names)),
        None => Ok(()),
    }
}

/// Refuses, with a readable reason, a configuration the GPU cannot launch.
fn check_limits(cuda: &CudaDevice, launch: &Launch) -> std::result::Result<(), String> {
    launch
        .shape
        .fits(launch.shared_bytes.into(), cuda.limits()?)
}

/// An emulation failure, in the runtime's terms: what the detour at `launch.site` reports.
fn emulation_error(launch: &Launch, e: EmulateError) -> Error {
    let site = launch.site;
    match e {
        EmulateError::Panicked {
            thread,
            at,
            message,
            ..
        } => Error::ThreadPanicked {
            site,
            thread,
            at,
            message,
        },
        EmulateError::DivergentSync {
            line,
            waiting,
            left,
            other_line,
            ..
        } => Error::DivergentSync {
            site,
            line,
            waiting,
            left,
            other_line,
        },
        EmulateError::Race {
            memory,
            array,
            element,
            first,
            second,
            ..
        } => Error::Race {
            site,
            memory,
            array,
            element,
            first,
            second,
        },
        other @ EmulateError::InvalidShape { .. } => Error::Launch {
            kernel: launch.kernel.to_string(),
            site,
            message: other.to_string(),
        },
    }
}
