//! Parray's runtime: memory kinds, thread arrays (pthd, cuda, CPU emulation of cuda) and copies.
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
pub mod types;

pub use array::Array;
pub use devices::{Device, DeviceId};
pub use error::{DetourSite, Error, Result, ThreadId};
pub use exec::pthd::{detour, ThreadCtx};
pub use mem::elem::{Double2, Element, Float2, Float4, HasVector2, HasVector4, Int2, Int4, Vector};
pub use mem::ptr::{Access, AccessMut, Ptr, PtrMut};
pub use types::{DataType, ThreadArray, ThreadArrayKind, ViewOf};
