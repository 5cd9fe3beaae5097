//! Detours generic over data types (`detour!(<T> ...)`) or over types of sizes given at
//! run time: the type arguments a detour is instantiated with, checked against what its
//! body asks of them, and the CUDA kernel of each instantiation, specialised from the body
//! at its first launch and kept for the process (the compiled kernel is cached like any
//! other: in memory, and on disk by its source). Layer 3 (arrays and types).

use std::any::TypeId;
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

#[doc(hidden)]
pub use parray_compiler::ir;
use parray_compiler::kernels::{specialised_kernel, TypeBinding};
use parray_layout::{CudaGrid, Module, ThreadIndex};

use crate::error::{DetourSite, Error, Result};
use crate::types::{DataType, ThreadArray};

/// One type argument of a generic detour: the parameter it binds (`T`), the declared type
/// it is, and what the body asks of it.
#[derive(Clone, Copy)]
pub struct TypeArg {
    alias: &'static str,
    id: TypeId,
    name: &'static str,
    rank: usize,
    extent: fn() -> usize,
    module: fn() -> Result<&'static Module>,
    /// Sizes given at run time (`None`), to be bound before anything runs.
    fixed_size: Option<usize>,
    /// Indices the body's `$T[...]$` forms give (`None`: no such form).
    indices: Option<usize>,
    /// Top-level dimensions the body's `$dim(T_k)$` forms reach (largest `k` plus one).
    dims: usize,
}

impl TypeArg {
    /// `T` bound to the parameter `alias`, whose forms give `indices` indices and reach
    /// `dims` top-level dimensions.
    pub fn of<T: DataType>(alias: &'static str, indices: Option<usize>, dims: usize) -> Self {
        TypeArg {
            alias,
            id: TypeId::of::<T>(),
            name: T::NAME,
            rank: T::RANK,
            extent: T::extent,
            module: T::try_module,
            fixed_size: T::FIXED_SIZE,
            indices,
            dims,
        }
    }

    fn refuse(&self, site: &'static DetourSite, reason: String) -> Error {
        Error::TypeArgument {
            site,
            alias: self.alias,
            type_name: self.name,
            reason,
        }
    }
}

/// Before a generic detour runs: each type argument has the rank its forms index it with,
/// the dimensions they name, and (on a GPU, where offsets are 32-bit) an extent below
/// 2^32.
pub fn check_types(args: &[TypeArg], cuda: bool, site: &'static DetourSite) -> Result<()> {
    for a in args {
        // A type with sizes given at run time: bound, and fitting its declaration.
        if a.fixed_size.is_none() {
            (a.module)()?;
        }
        if let Some(n) = a.indices.filter(|&n| n != a.rank) {
            return Err(a.refuse(
                site,
                format!(
                    "it has {} top-level dimensions, but `${}[...]$` gives {n} indices",
                    a.rank, a.alias
                ),
            ));
        }
        if a.dims > a.rank {
            return Err(a.refuse(
                site,
                format!(
                    "it has {} top-level dimensions, but the body asks for `$dim({}_{})$`",
                    a.rank,
                    a.alias,
                    a.dims - 1
                ),
            ));
        }
        let extent = (a.extent)();
        if cuda && extent as u64 > u64::from(u32::MAX) + 1 {
            return Err(a.refuse(
                site,
                format!(
                    "its extent {extent} exceeds 2^32, and a cuda body computes offsets in 32 bits"
                ),
            ));
        }
    }
    Ok(())
}

/// The CUDA kernel a cuda detour launches: its source, and (for a kernel with checked
/// accesses) the arrays its fault record numbers.
#[derive(Debug, Clone, Copy)]
pub struct KernelSource {
    pub source: &'static str,
    pub checked: Option<&'static [&'static str]>,
    /// The grid it is launched on.
    pub shape: CudaGrid,
    /// For a kernel specialised over a grid sized at run time, its thread indices (in
    /// the order of the body's), which the CPU emulation evaluates as the kernel does;
    /// empty where the body's own are the kernel's.
    pub tids: &'static [ThreadIndex],
    /// The same kernel in HIP C++ (`PARRAY_DUMP_SOURCE=hip`, SPEC.md 4.8).
    pub hip: &'static str,
    /// The bytes of dynamic shared memory it is launched with (its shared arrays'
    /// sizes, at the bound sizes where they are given at run time).
    pub shared_bytes: u32,
    /// Its TMA copies' maps, in the order of their map parameters (SPEC 3.9, "TMA
    /// copies"): planned when the body was built, or at these sizes.
    pub tma: &'static [crate::exec::launch::TmaMap],
}

/// The thread array a cuda detour runs on, as its kernel is specialised: its name and its
/// module (its grid may be sized at run time).
#[derive(Clone, Copy)]
pub struct RuntimeGrid {
    name: &'static str,
    module: fn() -> Result<&'static Module>,
}

impl RuntimeGrid {
    pub fn of<G: ThreadArray>() -> Self {
        RuntimeGrid {
            name: G::NAME,
            module: G::try_module,
        }
    }
}

/// The kernel `kernel` of a cuda detour whose forms wait for their types (a generic
/// detour's, or one over types of sizes given at run time), for the types `args`: the body
/// `lowered` rebuilds goes the whole road with their forms resolved, so its sizes are
/// folded and its accesses proved as far as these numbers allow; each run-time constant
/// it names (`consts`, read when the detour started) is its number. Made once per
/// (detour, kernel name, types, constants) and kept for the process; the compiled kernel
/// is cached like any other (in memory, and on disk by its source).
pub fn specialise(
    lowered: fn() -> ir::Body,
    kernel: &'static str,
    args: &[TypeArg],
    grid: RuntimeGrid,
    consts: &[(&'static str, usize)],
    site: &'static DetourSite,
) -> Result<&'static KernelSource> {
    type Key = (usize, &'static str, Vec<TypeId>, Vec<(&'static str, usize)>);
    static KERNELS: OnceLock<Mutex<HashMap<Key, &'static KernelSource>>> = OnceLock::new();
    // The kernel's name too: an optimised build may fold two detours' identical `lowered`
    // functions into one address, and each launch names its own kernel.
    let key = (
        lowered as usize,
        kernel,
        args.iter().map(|a| a.id).collect(),
        consts.to_vec(),
    );
    let kernels = KERNELS.get_or_init(Default::default);
    if let Some(k) = kernels.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(k);
    }
    let modules = args
        .iter()
        .map(|a| (a.module)())
        .collect::<Result<Vec<_>>>()?;
    let types: Vec<TypeBinding> = args
        .iter()
        .zip(&modules)
        .map(|(a, module)| TypeBinding {
            alias: a.alias,
            name: a.name,
            module,
        })
        .collect();
    let grid = TypeBinding {
        alias: grid.name,
        name: grid.name,
        module: (grid.module)()?,
    };
    let consts: Vec<(&str, u64)> = consts.iter().map(|&(n, v)| (n, v as u64)).collect();
    let made = specialised_kernel(lowered(), &types, &grid, &consts, kernel).map_err(|e| {
        Error::Specialise {
            site,
            types: described(args),
            reason: e.message,
        }
    })?;
    // Kept for the process, as the sources of named detours are: one per instantiation.
    let checked: Option<&'static [&'static str]> = made.checked.map(|names| {
        let names: Vec<&'static str> = names
            .into_iter()
            .map(|n| &*Box::leak(n.into_boxed_str()))
            .collect();
        &*Box::leak(names.into_boxed_slice())
    });
    let made: &'static KernelSource = Box::leak(Box::new(KernelSource {
        source: Box::leak(made.source.into_boxed_str()),
        checked,
        shape: made.grid,
        tids: Box::leak(made.tids.into_boxed_slice()),
        hip: Box::leak(made.hip.into_boxed_str()),
        // At most the GPU's limit (`specialised_kernel` refused more).
        shared_bytes: u32::try_from(made.shared_bytes).unwrap_or(u32::MAX),
        tma: Box::leak(
            made.tma
                .iter()
                .map(crate::exec::launch::TmaMap::leaked)
                .collect::<Vec<_>>()
                .into_boxed_slice(),
        ),
    }));
    kernels
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(key, made);
    Ok(made)
}

/// What a kernel was specialised for, in an error: its type arguments (`T = ROWS`) and
/// the sizes bound at run time (`N = 203`).
fn described(args: &[TypeArg]) -> String {
    let params = args
        .iter()
        .filter(|a| a.alias != a.name)
        .map(|a| format!("{} = {}", a.alias, a.name));
    let sizes = crate::shapes::bound_values()
        .into_iter()
        .map(|(n, v)| format!("{n} = {v}"));
    params.chain(sizes).collect::<Vec<_>>().join(", ")
}
