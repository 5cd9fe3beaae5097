//! Parray's runtime: memory kinds, thread arrays (pthd, cuda, CPU emulation of cuda) and copies.
//!
//! Generated code uses [`Array`] (`#create`/`#destroy`), [`Ptr`], [`PtrMut`], [`Access`]
//! and [`AccessMut`] (element reads and writes), [`detour`] (pthd arrays) and [`gpu`]
//! (cuda arrays).

#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod array;
pub mod atomics;
pub mod barrier;
mod buffer;
pub mod copy;
mod diag;
pub mod elem;
pub mod error;
pub mod generic;
pub mod gpu;
pub mod mpi;
mod panics;
pub mod pthd;
pub mod ptr;
pub mod types;

pub use array::Array;
pub use elem::{Double2, Element, Float2, Float4, HasVector2, HasVector4, Int2, Int4, Vector};
pub use error::{DetourSite, Error, Result, ThreadId};
pub use gpu::{Device, DeviceId};
pub use pthd::{detour, ThreadCtx};
pub use ptr::{Access, AccessMut, Ptr, PtrMut};
pub use types::{DataType, ThreadArray, ThreadArrayKind, ViewOf};
