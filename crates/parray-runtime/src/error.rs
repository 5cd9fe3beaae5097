//! The runtime's errors: each says what failed and where (type, kernel, thread, detour).

use std::fmt;

use parray_layout::grid::CudaGrid;
use parray_layout::MemKind;

use crate::device_id::DeviceId;

/// Where a detour is in the user's source. Errors and launches hold it as a
/// `&'static DetourSite` (the macros write a constant, promoted to a static), which keeps
/// `Error` small enough to return by value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DetourSite {
    /// The thread array's name (`MY_TA`).
    pub array: &'static str,
    /// The file of the `detour!`, as `file!()` gives it.
    pub file: &'static str,
    /// The line of the `detour!`.
    pub line: u32,
}

impl fmt::Display for DetourSite {
    /// `MY_TA, detour at src/main.rs:12`: the array and where its detour is.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}, detour at {}:{}", self.array, self.file, self.line)
    }
}

/// One thread of a thread array, as errors name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThreadId {
    /// Thread `tid` of a pthd array.
    Pthd { tid: usize },
    /// Thread `tid` (`$tid$`) of a cuda array, with its `blockIdx` and `threadIdx` (x, y, z).
    Cuda {
        tid: u64,
        block: [u32; 3],
        thread: [u32; 3],
    },
}

impl ThreadId {
    /// Thread `thread_id` of block `block_id` of the launch `grid` (flat ids, x fastest):
    /// the one place that names a cuda thread, for the emulation's errors and for a GPU's
    /// fault record alike.
    pub(crate) fn cuda(grid: &CudaGrid, block_id: u64, thread_id: u64) -> ThreadId {
        ThreadId::Cuda {
            tid: grid.tid(block_id, thread_id),
            block: grid.block_idx(block_id),
            thread: grid.thread_idx(thread_id),
        }
    }

    /// What every thread must reach a `#sync` with: its block (cuda) or its array (pthd).
    fn sync_scope(&self) -> &'static str {
        match self {
            ThreadId::Pthd { .. } => "array",
            ThreadId::Cuda { .. } => "block",
        }
    }
}

impl fmt::Display for ThreadId {
    /// `thread 63`, or `thread 63 (block (0, 0, 0), thread (63, 0, 0))` for cuda.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ThreadId::Pthd { tid } => write!(f, "thread {tid}"),
            ThreadId::Cuda {
                tid,
                block: [bx, by, bz],
                thread: [tx, ty, tz],
            } => write!(
                f,
                "thread {tid} (block ({bx}, {by}, {bz}), thread ({tx}, {ty}, {tz}))"
            ),
        }
    }
}

/// One of the two accesses of a race: its thread, whether it wrote, and where
/// (`file:line` of the user's code).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RaceAccess {
    pub thread: ThreadId,
    pub write: bool,
    pub at: String,
}

/// The explanation of a race on the element `array[element]` of shared or global
/// (`memory`) memory, shared by [`Error`] and the emulator's error.
pub(crate) fn race_message(
    memory: MemKind,
    array: &str,
    element: usize,
    first: &RaceAccess,
    second: &RaceAccess,
) -> String {
    let verb = |a: &RaceAccess| if a.write { "wrote" } else { "read" };
    let accesses = format!(
        "{} {} element {element} of {array} at {}, and {} {} it at {}",
        first.thread,
        verb(first),
        first.at,
        second.thread,
        verb(second),
        second.at
    );
    match memory {
        MemKind::Smem => format!(
            "a race on shared memory: {accesses}, with no `#sync` between them (missing #sync?)"
        ),
        _ => format!(
            "two threads wrote one element of global memory in one launch: {accesses}, and \
             nothing orders the two writes (a `#sync` orders only the threads of one block), \
             so which value is left is anyone's: give each element one writer, or write it \
             with atomics"
        ),
    }
}

/// The explanation of a divergent `#sync`, shared by [`Error`] and the emulator's error;
/// `file` names the barrier's file when known (`src/k.rs:7`, else `line 7`).
pub(crate) fn divergence_message(
    file: Option<&str>,
    line: u32,
    waiting: &ThreadId,
    left: &ThreadId,
    other_line: Option<u32>,
) -> String {
    let at = |line: u32| match file {
        Some(file) => format!("{file}:{line}"),
        None => format!("line {line}"),
    };
    let other = match other_line {
        Some(other) => format!("{left} waits at the #sync at {} instead", at(other)),
        None => format!(
            "{left} did not reach it (it returned, or went another way through a branch or a loop)"
        ),
    };
    format!(
        "{waiting} waits at the #sync at {}, but {other}: a #sync must be reached by every \
         thread of the {}, all at the same #sync",
        at(line),
        waiting.sync_scope()
    )
}

/// ` at src/main.rs:15:9` when the place of a panic is known, else nothing.
pub(crate) fn panic_place(at: &Option<String>) -> String {
    at.as_ref()
        .map(|at| format!(" at {at}"))
        .unwrap_or_default()
}

/// Everything the runtime can fail with. Clone, so that a once-per-process decision
/// (the backend) can hand its failure to every caller. Its `Debug` is its `Display`, so
/// that `fn main() -> parray::Result<()>` reports an error as a sentence (the variant and
/// its fields stay available to `match`).
#[derive(Clone, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An mpi detour or a distributed array in a build without MPI.
    #[error("parray: this program uses an mpi thread array, which needs MPI: build it with parray's `mpi` feature (`--features parray/mpi`, Open MPI installed) and start it with `mpirun -n <processes>`")]
    MpiUnavailable,

    /// The MPI library failed, or a message exceeds what it can count.
    #[error("parray: {what}: {reason}")]
    Mpi { what: String, reason: String },

    /// The job runs another number of ranks than the mpi array has processes.
    #[error("parray: {what}: `{array}` has {processes} processes, but this job runs {running}: start it with `mpirun -n {processes}`")]
    RankCount {
        what: String,
        array: String,
        processes: u64,
        running: usize,
    },

    /// The ranks of a job met at different collective points (SPEC.md 3.12).
    #[error("parray: {what}: rank 0 is at {first}, but rank {rank} is at {other}: every rank must reach the same #sync and #copy of distributed arrays, in the same order")]
    RankDivergence {
        what: String,
        first: String,
        rank: usize,
        other: String,
    },

    /// The allocator (host, pinned or device) refused an allocation.
    #[error("parray: allocating {mem} memory for {type_name} ({bytes} bytes) failed: {reason}")]
    Alloc {
        type_name: &'static str,
        mem: MemKind,
        bytes: usize,
        reason: String,
    },

    /// `Buffer::new` was asked for a kind that host code cannot create.
    #[error("parray: {type_name} is {mem} memory, which exists only inside a cuda detour body")]
    NotCreatable {
        type_name: &'static str,
        mem: MemKind,
    },

    /// `Array::new` of a type without a memory kind: a view has no storage of its own.
    #[error("parray: {type_name} is a view (it has no memory kind); create the type it views and `view` it")]
    ViewNotCreatable { type_name: &'static str },

    /// `Array::as_type` to a type that does not fit the storage.
    #[error("parray: {type_name} ({mem} memory, extent {extent}) cannot be seen as {view} (extent {view_extent}): a view needs the storage's memory kind (and with it its records kept alike, soa or whole) and at most its extent")]
    NotAView {
        type_name: &'static str,
        mem: MemKind,
        extent: usize,
        view: &'static str,
        view_extent: usize,
    },

    /// A run-time size (`const N;`) was bound to a value it cannot take.
    #[error("parray: the run-time size {size} cannot be {value}: {reason}")]
    Shape {
        size: &'static str,
        value: u64,
        reason: String,
    },

    /// A type (or a constant, or a body that names one) with a size given at run time was
    /// used before the size was bound.
    #[error("parray: {type_name} uses the run-time size `{size}`, which is not bound yet: call `{size}.bind(n)?` before using it")]
    Unbound {
        type_name: &'static str,
        size: String,
    },

    /// A type with sizes given at run time cannot take the values they were bound to.
    #[error("parray: {type_name} cannot take {sizes}: in `{declaration}`, {reason}")]
    Declaration {
        type_name: &'static str,
        /// The bound values, `N = 1000`.
        sizes: String,
        /// The declaration that refuses them.
        declaration: String,
        reason: String,
    },

    /// A generic detour was instantiated with a type its body cannot take.
    #[error("parray: {site}: `{alias}` cannot be {type_name}: {reason}")]
    TypeArgument {
        site: &'static DetourSite,
        alias: &'static str,
        type_name: &'static str,
        reason: String,
    },

    /// The kernel of a detour over types known when it runs (type parameters, run-time
    /// sizes) cannot be made for the types it was given.
    #[error("parray: {site}: its kernel cannot be made for {types}: {reason}")]
    Specialise {
        site: &'static DetourSite,
        types: String,
        reason: String,
    },

    /// A detour indexes `name` as a type whose extent exceeds the elements it has.
    #[error("parray: {site}: `{name}` is indexed as {indexed_as} (extent {need}), but only {have} elements remain in it")]
    TooSmall {
        site: &'static DetourSite,
        name: &'static str,
        indexed_as: &'static str,
        need: usize,
        have: usize,
    },

    /// A detour accesses `name` by vectors of `lanes` elements (`p.load4(off)`, or a
    /// `#copy` it vectorised), at offsets from `name` that are multiples of the lanes; but
    /// `name` starts at `offset` of its array, which is not one (a GPU would fault).
    #[error("parray: {site}: `{name}` starts at offset {offset} of its array, but the body accesses it by vectors of {lanes} elements, which must start at a multiple of {lanes}: pass it at such an offset")]
    Misaligned {
        site: &'static DetourSite,
        name: &'static str,
        offset: usize,
        lanes: usize,
    },

    /// A pthd detour indexes `name`, an array of `type_name` in dmem: its threads are host
    /// code, which cannot reach device memory.
    #[error("parray: {site}: `{name}` is {type_name}, dmem memory, which a pthd detour's threads (host code) cannot access: use a cuda detour, or copy it to host memory")]
    DeviceMemoryOnHost {
        site: &'static DetourSite,
        name: &'static str,
        type_name: &'static str,
    },

    /// A `#copy` the runtime cannot do.
    #[error("parray: #copy: {reason}")]
    CopyUnsupported { reason: String },

    /// A TMA copy's tensor map cannot be made for this array (`decl` the copy's source
    /// type): which of the driver's rules it breaks.
    #[error("parray: the TMA tensor map of `{decl}`: {rule}")]
    TensorMap { decl: String, rule: String },

    /// A library call (cuBLAS) cannot take these arrays here.
    #[error("parray: {what}: {reason}")]
    Unsupported { what: &'static str, reason: String },

    /// A detour passes `name` to a cuda parameter whose records are stored as the array's
    /// are not: a `soa` parameter an array of whole records, or the other way round.
    #[error("parray: {site}: `{name}` is {type_name}, whose records are {}, but the parameter `{name}` is declared {}: declare the two alike", if *soa { "kept one array per field (soa)" } else { "whole" }, if *soa { "without `soa`" } else { "`soa`" })]
    Arrangement {
        site: &'static DetourSite,
        name: &'static str,
        type_name: &'static str,
        /// Whether the array's records are kept one array per field.
        soa: bool,
    },

    /// An operation that needs whole records in memory, on a record array kept one array
    /// per field.
    #[error("parray: {type_name} keeps its records one array per field (soa); {operation} needs whole records: use `at`/`set`, `to_vec` or `copy_from_slice`")]
    FieldArrays {
        type_name: &'static str,
        operation: &'static str,
    },

    /// A host-only operation was used on device memory.
    #[error("parray: {type_name} is {mem} memory on the GPU; host code cannot {operation} it")]
    NotHostMemory {
        type_name: &'static str,
        mem: MemKind,
        operation: &'static str,
    },

    /// A cuda kernel was given a pointer that is not GPU memory.
    #[error("parray: kernel argument {type_name} is {mem} memory; a cuda kernel takes dmem")]
    NotDeviceMemory {
        type_name: &'static str,
        mem: MemKind,
    },

    /// A copy between a buffer and a slice of another length.
    #[error("parray: copy of {type_name}: expected {expected} elements, got {got}")]
    SizeMismatch {
        type_name: &'static str,
        expected: usize,
        got: usize,
    },

    /// No usable CUDA driver or device (or NVRTC), when one was required.
    #[error("parray: no CUDA driver or device: {reason}")]
    CudaUnavailable { reason: String },

    /// `PARRAY_BACKEND` holds a value other than `cuda`, `emulate` or `auto`.
    #[error("parray: PARRAY_BACKEND={value:?} is not one of cuda, emulate, auto")]
    BadBackend { value: String },

    /// `PARRAY_EMULATED_DEVICES` holds something other than a number of devices.
    #[error("parray: PARRAY_EMULATED_DEVICES={value:?} is not a number of devices (1 or more)")]
    BadEmulatedDevices { value: String },

    /// `Device::nth` was asked for a device the backend does not have.
    #[error("parray: there is no device {ordinal}: this process has {count} {what}")]
    NoSuchDevice {
        ordinal: usize,
        count: usize,
        /// The backend's devices, in words.
        what: &'static str,
    },

    /// A cuda detour was given pointers into two devices' memory: kernel argument
    /// `argument` is on `device`, argument `first` on `first_device` (counted from 0).
    #[error(
        "parray: {site}: kernel argument {argument} is on {device}, but argument {first} is \
         on {first_device}; the arrays of one launch must be on one device"
    )]
    DeviceMismatch {
        site: &'static DetourSite,
        first: usize,
        first_device: DeviceId,
        argument: usize,
        device: DeviceId,
    },

    /// A CUDA driver call failed outside a kernel launch (copies, synchronisation).
    #[error("parray: CUDA {operation} of {type_name} failed: {reason}")]
    Driver {
        type_name: &'static str,
        operation: &'static str,
        reason: String,
    },

    /// NVRTC rejected a generated kernel.
    #[error(
        "parray: NVRTC failed to compile kernel {kernel}:\n{log}\n--- source ---\n{source_code}"
    )]
    Nvrtc {
        kernel: String,
        log: String,
        source_code: String,
    },

    /// The driver refused a compiled kernel.
    #[error("parray: loading compiled kernel {kernel} failed: {reason}")]
    ModuleLoad { kernel: String, reason: String },

    /// Configuring, launching or running a kernel failed.
    #[error("parray: {site}: launch of kernel {kernel} failed: {message}")]
    Launch {
        kernel: String,
        site: &'static DetourSite,
        message: String,
    },

    /// The operating system refused to start a thread of a pthd array.
    #[error("parray: {site}: cannot start thread {tid}: {reason}")]
    Spawn {
        site: &'static DetourSite,
        tid: usize,
        reason: String,
    },

    /// The body of a detour panicked in one of the array's threads (the first, if
    /// several did); `at` is the `file:line:col` of the panic, the user's statement.
    #[error("parray: {site}: {thread} panicked{}: {message}", panic_place(at))]
    ThreadPanicked {
        site: &'static DetourSite,
        thread: ThreadId,
        at: Option<String>,
        message: String,
    },

    /// A cuda body reads the host `usize` `name`, whose value does not fit the body's
    /// 32-bit `usize` (SPEC 3.5).
    #[error("parray: {site}: the cuda body reads the host value `{name}` = {value}, which does not fit its 32-bit `usize` (at most 4294967295): split the work, or pass it as a `u64` (`let {name} = {name} as u64;` on the host)")]
    HostIndexTooLarge {
        site: &'static DetourSite,
        name: &'static str,
        value: usize,
    },

    /// Not every thread of a block (cuda) or array (pthd) reached the `#sync` at `line`
    /// of the detour's file: `left` returned from the body while `waiting` waited there,
    /// or `left` waits at another `#sync`, at `other_line`.
    #[error("parray: {site}: {}", divergence_message(Some(site.file), *line, waiting, left, *other_line))]
    DivergentSync {
        site: &'static DetourSite,
        line: u32,
        waiting: ThreadId,
        left: ThreadId,
        other_line: Option<u32>,
    },

    /// Two threads accessed element `element` of the array `array` with nothing ordering
    /// them, one of them writing it: in shared memory (`memory` smem), threads of a block
    /// with no `#sync` between; in global memory (dmem), two threads writing it in one
    /// launch. The emulation in a debug build watches both (SPEC 3.5, "Barriers and races").
    #[error("parray: {site}: {}", race_message(*memory, array, *element, first, second))]
    Race {
        site: &'static DetourSite,
        memory: MemKind,
        array: &'static str,
        element: usize,
        first: Box<RaceAccess>,
        second: Box<RaceAccess>,
    },
}

impl Error {
    /// A CUDA driver call's failure: `operation` on an array of `type_name` (or on what a
    /// message names instead: `#copy`, `timer`).
    pub(crate) fn driver(
        type_name: &'static str,
        operation: &'static str,
        e: cudarc::driver::DriverError,
    ) -> Error {
        Error::Driver {
            type_name,
            operation,
            reason: e.to_string(),
        }
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// The runtime's result type.
pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    /// `fn main() -> parray::Result<()>` prints an error with `Debug`: the sentence.
    #[test]
    fn debug_is_the_sentence() {
        let e = Error::BadBackend {
            value: "gpu".into(),
        };
        assert_eq!(
            format!("{e:?}"),
            "parray: PARRAY_BACKEND=\"gpu\" is not one of cuda, emulate, auto"
        );
    }

    /// Clippy's `result_large_err` flags every function returning an `Err` over 128
    /// bytes, users' functions returning `parray::Result` included.
    #[test]
    fn errors_stay_small() {
        assert!(std::mem::size_of::<Error>() <= 128);
    }
}
