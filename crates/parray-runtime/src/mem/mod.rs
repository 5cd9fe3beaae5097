//! Layer 2, memory: the element types, CPU atomics, handles into storage (checked and
//! proved accesses), the storage of one array (host memory, pinned, or dmem on a device),
//! and kernel arguments.

pub mod atomics;
pub(crate) mod buffer;
pub mod elem;
pub(crate) mod in_flight;
pub mod kernel_arg;
pub mod mbarrier;
pub mod ptr;
pub(crate) mod watch;
