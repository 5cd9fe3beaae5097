//! The runtime's errors: each says what failed and where (type, kernel, thread, detour).

use parray_core::MemKind;

/// Everything the runtime can fail with. Clone, so that a once-per-process decision
/// (the backend) can hand its failure to every caller.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Error {
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
    #[error("parray: launch of kernel {kernel} (detour at {location}) failed: {message}")]
    Launch {
        kernel: String,
        location: &'static str,
        message: String,
    },

    /// The body of a detour panicked in one of the array's threads.
    #[error("parray: thread {tid} of {array} panicked: {message}")]
    ThreadPanicked {
        array: &'static str,
        tid: usize,
        message: String,
    },
}

/// The runtime's result type.
pub type Result<T> = std::result::Result<T, Error>;
