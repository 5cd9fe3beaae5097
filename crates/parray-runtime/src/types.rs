//! The traits every `parray!` declaration implements: its constants and offset function at
//! compile time, its resolved tree at run time, and which types view which storage. Layer
//! 3 (arrays and types).

use parray_layout::{DimRef, Distribution, MemKind, Module};

use crate::mem::elem::Element;

/// A data type declared with `parray!`.
pub trait DataType: Copy + 'static {
    /// The element type (`float` is `f32`...).
    type Elem: Element;
    /// One index per top-level dimension: `[usize; RANK]`.
    type Index: Copy;
    /// The declared name.
    const NAME: &'static str;
    /// Where values of this type live (`None` for a pure view).
    const MEM: Option<MemKind>;
    /// The number of top-level dimensions.
    const RANK: usize;

    /// The number of elements when it is known at compile time (`None` for a type with
    /// sizes given at run time), for checks made when a function is instantiated.
    const FIXED_SIZE: Option<usize>;

    /// Number of elements (`$size(T)$`).
    fn size() -> usize;
    /// Elements of storage a value needs (largest offset plus one).
    fn extent() -> usize;
    /// The size of each top-level dimension (`$dim(T_0)$`, ...).
    fn dims() -> &'static [usize];

    /// Elements an array indexed as this type must hold (the proofs of a body rely on
    /// it): its extent, or for a type whose pieces cover data past its end, the data's
    /// (SPEC 2.4), which its accesses past the end are guarded against.
    fn indexed_extent() -> usize {
        let covers = Self::module().type_def(Self::NAME).and_then(|d| d.covers);
        covers.map_or(Self::extent(), |c| Self::extent().min(c as usize))
    }

    /// The offset of the element with one index per top-level dimension (`$T[i][j]$`), the
    /// offset compiler's simplified expression; each index is checked against its
    /// dimension's size in every build (a panic naming the type and the dimension).
    fn offset(index: Self::Index) -> usize;

    /// [`DataType::offset`] from a slice of `RANK` indices, for code generic over the
    /// type (`$T[i][j]$` with `T` a type parameter); a slice of another length panics.
    fn offset_of(index: &[usize]) -> usize;

    /// The resolved declarations this type belongs to: the type as a run-time value. For a
    /// type with sizes given at run time, built from the bound sizes at its first use: a
    /// panic if they are not bound or do not fit it (ask [`DataType::try_module`] first).
    fn module() -> &'static Module;

    /// [`DataType::module`], or why a type with sizes given at run time has none yet
    /// (`Error::Unbound`, `Error::Declaration`). Arrays and detours ask it before anything
    /// else.
    fn try_module() -> crate::Result<&'static Module> {
        Ok(Self::module())
    }

    /// The type's root dimension in [`DataType::module`].
    fn dim() -> DimRef {
        Self::module()
            .lookup(Self::NAME)
            .expect("a declared type resolves")
    }

    /// Whether the type is distributed over the ranks of an mpi array (SPEC.md 2.13).
    const DISTRIBUTED: bool = false;

    /// How the type's elements are spread over the ranks of an mpi array, if they are
    /// (SPEC.md 2.13): each rank's array holds its part.
    fn distribution() -> Option<&'static Distribution> {
        if !Self::DISTRIBUTED {
            return None;
        }
        let module = Self::module();
        module.type_def(Self::NAME)?.distribution.as_ref()
    }
}

/// `Self` views the storage of an array of type `S`: an `Array<S>` may be indexed as
/// `Self` (by a detour's `$Self[...]$`, or through [`crate::Array::view`]).
///
/// Every type views itself; `parray!` implements it for a type that refers to the
/// dimensions of another (`#parray {float [#A_1][[#A_0][#A_2]]} M` views `A`) when the
/// elements are the same, the memory kinds agree and the view's extent fits in the
/// storage's. It is a statement of intent checked by the compiler, not a safety
/// condition: every access is checked against (or proved within) the array's actual
/// extent.
#[diagnostic::on_unimplemented(
    message = "an array of `{S}` cannot be indexed as `{Self}`",
    label = "indexed as `{Self}` here",
    note = "index an array of `{Self}`, or declare `{Self}` as a view of `{S}` (a type built from `{S}`'s dimensions, such as `[#{S}_0][#{S}_1]`) with the same element, memory kind and an extent that fits"
)]
pub trait ViewOf<S: DataType>: DataType<Elem = S::Elem> {}

/// Every type views its own storage.
impl<T: DataType> ViewOf<T> for T {}

/// The kinds of threads a thread array runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ThreadArrayKind {
    Pthd,
    Cuda,
    Mpi,
}

/// A thread array declared with `parray!`.
pub trait ThreadArray: Copy + 'static {
    const NAME: &'static str;
    const KIND: ThreadArrayKind;

    fn module() -> &'static Module;

    /// The module, or why there is none: for an array whose grid is sized at run time, its
    /// sizes not bound or refused by the declaration (as [`DataType::try_module`]).
    fn try_module() -> crate::Result<&'static Module> {
        Ok(Self::module())
    }

    /// Number of threads (`$size(T)$`).
    fn threads() -> usize {
        Self::module().size(Self::dim().node) as usize
    }

    /// The size of top-level dimension `k` (`$dim(T_k)$`: blocks, threads per block).
    fn dim_size(k: usize) -> usize {
        let m = Self::module();
        m.size(m.node(Self::dim().node).children[k]) as usize
    }

    fn dim() -> DimRef {
        Self::module()
            .lookup(Self::NAME)
            .expect("a declared type resolves")
    }
}

/// The failure of `T::offset`: index `index` of dimension `dim` of `type_name` is not
/// below the dimension's `size`.
#[cold]
#[track_caller]
pub fn index_out_of_range(type_name: &str, dim: usize, index: usize, size: usize) -> ! {
    panic!("parray: index {index} is out of range for {type_name}_{dim} (size {size})")
}

/// `T::offset_of` with a slice of the wrong length.
#[cold]
#[track_caller]
pub fn wrong_rank(type_name: &str, rank: usize, given: usize) -> ! {
    panic!("parray: {type_name} has {rank} top-level dimensions, but {given} indices were given")
}
