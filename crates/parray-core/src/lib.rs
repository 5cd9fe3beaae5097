//! Parray's type language: parser, dimension trees, offset algebra and code emitters.

pub mod kinds;

pub use kinds::{ElemType, MemKind, Param, ThreadKind};
