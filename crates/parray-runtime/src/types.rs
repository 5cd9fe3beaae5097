//! The traits every `parray!` declaration implements: its constants and offset function at
//! compile time, its resolved tree at run time, and which types view which storage. Layer
//! 3 (arrays and types).

use parray_layout::{DimRef, Distribution, MemKind, Module};

use crate::mem::elem::Element;

/// A data type declared with `parray!`.
pub trait DataType: Copy + 'static {
    /// The element type (`float` is `f32`...).
    type Elem: Element;
    /// The declared name.
    const NAME: &'static str;
    /// Where values of this type live (`None` for a pure view).
    const MEM: Option<MemKind>;
    /// The number of top-level dimensions.
    const RANK: usize;
    /// Whether an array of this type keeps its records one array per field (`dmem soa
    /// Particle [N] Q`, SPEC 2.3); its offsets are those of whole records all the same.
    const SOA: bool = false;

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

    /// The offset of the element with one index per top-level dimension (`$T[i][j]$` is
    /// `T::offset([i, j])`), the offset compiler's simplified expression; each index is
    /// checked against its dimension's size in every build (a panic naming the type and the
    /// dimension). Code generic over the type writes it the same way (`T::offset([i, j])`
    /// with `T: DataType`); an array of another length than the type's [`DataType::RANK`]
    /// is an error when the program is built (where the function is instantiated with the
    /// type).
    #[inline]
    #[track_caller]
    fn offset<const N: usize>(index: [usize; N]) -> usize {
        const {
            assert!(
                N == Self::RANK,
                "`T::offset([...])` and `a.at([...])` take one index per top-level dimension of `T` (`T::RANK` of them)"
            )
        };
        Self::offset_of(&index)
    }

    /// [`DataType::offset`] from a slice of `RANK` indices (what `$T[i][j]$` is with `T` a
    /// type parameter); a slice of another length panics.
    fn offset_of(index: &[usize]) -> usize;

    /// The sizes and offset function as one value, read where a loop of a body starts
    /// (SPEC.md 3.1): [`FixedOffsets`] (the functions above, folded) for literal sizes, the
    /// bound numbers for sizes given at run time.
    type Offsets: Offsets;

    /// [`DataType::Offsets`]: a panic if the type's sizes are not bound, as
    /// [`DataType::module`].
    fn offsets() -> Self::Offsets;

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

/// A data type's sizes and its offset function with one index per top-level dimension,
/// as one value ([`DataType::offsets`]): what the `$size(T)$`, `$dim(T_k)$` and
/// `$T[i][j]$` forms in a loop evaluate.
pub trait Offsets: Copy {
    /// [`DataType::size`].
    fn size(self) -> usize;
    /// The size of top-level dimension `k` ([`DataType::dims`]).
    fn dim(self, k: usize) -> usize;
    /// [`DataType::offset_of`], each index checked against its dimension.
    fn offset_of(self, index: &[usize]) -> usize;
    /// Whether the offset is a sum of multiples of the indices (a strided layout, no
    /// digits): a loop is written twice, once for that case, which the optimiser then
    /// knows (SPEC.md 3.1, "Sizes given at run time").
    fn is_strided(self) -> bool;
}

/// The [`Offsets`] of a type with literal sizes: its own functions, whose numbers the
/// compiler folds.
pub struct FixedOffsets<T>(std::marker::PhantomData<T>);

impl<T> FixedOffsets<T> {
    #[inline(always)]
    pub const fn new() -> Self {
        FixedOffsets(std::marker::PhantomData)
    }
}

impl<T> Default for FixedOffsets<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> Clone for FixedOffsets<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for FixedOffsets<T> {}

impl<T: DataType> Offsets for FixedOffsets<T> {
    #[inline(always)]
    fn size(self) -> usize {
        T::size()
    }

    #[inline(always)]
    fn dim(self, k: usize) -> usize {
        T::dims()[k]
    }

    #[inline(always)]
    #[track_caller]
    fn offset_of(self, index: &[usize]) -> usize {
        T::offset_of(index)
    }

    /// The folded offset is what it is: nothing to specialise.
    #[inline(always)]
    fn is_strided(self) -> bool {
        true
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

/// What `parray!` declares under the name of a declaration it could not build, whose
/// error it reports at the declaration: a data type of elements `E` and `RANK` top-level
/// dimensions (`E = ()` for a thread array), so that the Rust code that uses the name
/// compiles without an error of its own. A program with such a name has that error, so
/// none of this is ever run.
pub struct NotBuilt<E, const RANK: usize>(std::marker::PhantomData<E>);

impl<E, const RANK: usize> Clone for NotBuilt<E, RANK> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<E, const RANK: usize> Copy for NotBuilt<E, RANK> {}

const NOT_BUILT: &str = "a declaration that was not built is never run";

impl<E: Element, const RANK: usize> NotBuilt<E, RANK> {
    /// What a declared type's `create` is.
    pub fn create() -> crate::Result<crate::Array<Self>> {
        unreachable!("{NOT_BUILT}")
    }

    /// What a declared type's `create_on` is.
    pub fn create_on(_: &crate::Device) -> crate::Result<crate::Array<Self>> {
        unreachable!("{NOT_BUILT}")
    }
}

impl<E: Element, const RANK: usize> DataType for NotBuilt<E, RANK> {
    type Elem = E;
    const NAME: &'static str = "";
    const MEM: Option<MemKind> = None;
    const RANK: usize = RANK;
    const FIXED_SIZE: Option<usize> = None;
    type Offsets = FixedOffsets<Self>;

    fn size() -> usize {
        unreachable!("{NOT_BUILT}")
    }

    fn extent() -> usize {
        unreachable!("{NOT_BUILT}")
    }

    fn dims() -> &'static [usize] {
        unreachable!("{NOT_BUILT}")
    }

    fn offset_of(_: &[usize]) -> usize {
        unreachable!("{NOT_BUILT}")
    }

    fn offsets() -> Self::Offsets {
        unreachable!("{NOT_BUILT}")
    }

    fn module() -> &'static Module {
        unreachable!("{NOT_BUILT}")
    }
}

impl<const RANK: usize> ThreadArray for NotBuilt<(), RANK> {
    const NAME: &'static str = "";
    const KIND: ThreadArrayKind = ThreadArrayKind::Pthd;

    fn module() -> &'static Module {
        unreachable!("{NOT_BUILT}")
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
