//! The traits every `parray!` declaration implements: its constants at compile time and
//! its resolved tree at run time.

use parray_core::{DimRef, MemKind, Module};
use parray_runtime::Element;

/// A data type declared with `parray!`.
pub trait DataType: Copy + 'static {
    /// The element type (`float` is `f32`...).
    type Elem: Element;
    /// The declared name.
    const NAME: &'static str;
    /// Where values of this type live (`None` for a pure view).
    const MEM: Option<MemKind>;
    /// Number of elements (`$size(T)$`).
    const SIZE: usize;
    /// Elements of storage a value needs (largest offset plus one).
    const EXTENT: usize;

    /// The resolved declarations this type belongs to: the type as a run-time value.
    fn module() -> &'static Module;

    /// The type's root dimension in [`DataType::module`].
    fn dim() -> DimRef {
        Self::module()
            .lookup(Self::NAME)
            .expect("a declared type resolves")
    }
}

/// The kinds of threads a thread array runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ThreadArrayKind {
    Pthd,
    Cuda,
    Mpi,
}

/// A thread array declared with `parray!`.
pub trait ThreadArray: Copy + 'static {
    const NAME: &'static str;
    /// Number of threads (`$size(T)$`).
    const THREADS: usize;
    const KIND: ThreadArrayKind;

    fn module() -> &'static Module;

    fn dim() -> DimRef {
        Self::module()
            .lookup(Self::NAME)
            .expect("a declared type resolves")
    }
}
