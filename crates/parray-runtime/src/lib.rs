//! Parray's runtime: memory kinds, thread arrays (pthd, cuda, CPU emulation of cuda) and copies.
//!
//! In layers, bottom to top, each using only those below it:
//!
//! 1. [`devices`]: devices as values (a GPU's context, stream, kernels and limits, or an
//!    emulated device), the backend, NVRTC's caches, timing;
//! 2. [`mem`]: elements, atomics, handles (checked and proved accesses), an array's
//!    storage, kernel arguments;
//! 3. arrays and types: [`array`](mod@array), [`types`], [`generic`], and [`job`] (the rank a
//!    distributed type's part is allocated for);
//! 4. [`exec`]: pthd threads (`#sync` through a team), the CPU emulation of a grid,
//!    launches;
//! 5. [`distributed`]: mpi arrays, their ranks' agreement and messages, NCCL, the GPU
//!    side of an exchange;
//! 6. [`copy`]: `#copy`, whose paths run on the layers below (an exchange on
//!    `distributed`);
//! 7. [`libs`]: cuBLAS and cuFFT.
//!
//! Beside them, for every layer: [`error`], [`device_id`] (which device memory is on, as
//! errors and handles name it) and the notes on stderr.
//!
//! Generated code uses [`Array`] (`#create`/`#destroy`), [`Ptr`], [`PtrMut`], [`Access`]
//! and [`AccessMut`] (element reads and writes), [`detour`] (pthd arrays) and
//! [`exec::launch`] (cuda arrays).

#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod array;
pub mod copy;
pub mod device_id;
pub mod devices;
mod diag;
pub mod distributed;
pub mod error;
pub mod exec;
pub mod generic;
pub mod job;
pub mod libs;
pub mod mem;
pub mod shapes;
pub mod types;

pub use array::Array;
pub use devices::{Device, DeviceId};
pub use error::{DetourSite, Error, RaceAccess, Result, ThreadId};
pub use exec::pthd::{detour, ThreadCtx};
pub use half::{bf16, f16};
pub use mem::elem::{
    Bf16x2, Bf16x4, Bf16x8, Double2, Element, Float, Float2, Float4, Half2, Half4, Half8,
    HasVector2, HasVector4, HasVector8, Int2, Int4, Mbarrier, Num, Vector,
};
pub use mem::ptr::{Access, AccessMut, Ptr, PtrMut};
/// `x as f16` and `x as bf16` of an `f64`, rounded once: what the emulation runs.
pub use parray_compiler::rounding::{bf16_from_f64, f16_from_f64};
pub use shapes::RuntimeSize;
pub use types::{DataType, Offsets, ThreadArray, ThreadArrayKind, ViewOf};
