//! The kernel of a cuda body whose forms wait for their types: a generic detour's
//! `$T[i][j]$`, `$size(T)$` and `$dim(T_k)$`, and the same forms of a declared type whose
//! sizes are given at run time. Once the types are known (at the detour's first launch),
//! each such form becomes what the offset compiler gives for the declared type, and the
//! body goes the whole road, check, proofs and the C writer, as a body of literal types
//! does at compile time: its sizes are folded and its accesses proved where the numbers
//! allow, and a body of literal types and the same body specialised at those sizes have
//! the same kernel.

use parray_layout::{
    thread_index, CudaGrid, Error, ErrorKind, Module, TextSpan, ThreadKind, TypeClass,
};

use super::build::{refused, typed_and_proved};
use crate::back::c::{self as emit_c, Dialect};
use crate::ir::{Body, Expr, ExprKind, Indexed, PartMut, Stmt};

/// What a form's type name stands for: the declared type `name` of `module`, for the
/// forms of `alias` (a type parameter, or the run-time type itself).
pub struct TypeBinding<'m> {
    pub alias: &'m str,
    pub name: &'m str,
    pub module: &'m Module,
}

/// A specialised kernel: its CUDA source and, where some access stays checked, the arrays
/// its fault record numbers ([`emit_c::checked_arrays`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Specialised {
    pub source: String,
    pub checked: Option<Vec<String>>,
    /// The grid it is launched on: the thread array's at these sizes.
    pub grid: CudaGrid,
}

/// The kernel `kernel` of `body` (lowered, not yet typed) with the forms of each type of
/// `types` resolved. An error where a form does not fit its type (checked before, at the
/// launch: the rank and the dimensions it names) or the prover refuses an access at these
/// sizes.
///
/// Post-condition: no [`ExprKind::GenericOffset`] or [`ExprKind::GenericSize`] is left in
/// the body written, and each of its forms is the declared type's offset function.
///
/// `grid` is the body's thread array: its thread indices are computed at its sizes
/// here (its grid may be sized at run time), and its `$size$` forms resolved with it.
pub fn specialised_kernel(
    mut body: Body,
    types: &[TypeBinding],
    grid: &TypeBinding,
    kernel: &str,
) -> parray_layout::Result<Specialised> {
    let shape = thread_indices(&mut body, grid, kernel)?;
    let types: Vec<&TypeBinding> = types.iter().chain([grid]).collect();
    let mut failed = None;
    let mut resolve = |e: &mut Expr| {
        if failed.is_none() {
            if let Err(err) = resolve_form(e, &types) {
                failed = Some(err);
            }
        }
    };
    for f in &mut body.functions {
        stmts_exprs_mut(&mut f.stmts, &mut resolve);
        if let Some(v) = &mut f.value {
            expr_mut(v, &mut resolve);
        }
    }
    stmts_exprs_mut(&mut body.stmts, &mut resolve);
    if let Some(err) = failed {
        return Err(err);
    }
    let proved = typed_and_proved(body, kernel)?;
    Ok(Specialised {
        source: emit_c::kernel(&proved, kernel, Dialect::Cuda),
        checked: emit_c::checked_arrays(&proved),
        grid: shape,
    })
}

/// The grid of the thread array `g` at its module's sizes, and each thread index of
/// `body` recomputed on it.
fn thread_indices(
    body: &mut Body,
    g: &TypeBinding,
    kernel: &str,
) -> parray_layout::Result<CudaGrid> {
    let def = g
        .module
        .type_def(g.name)
        .ok_or_else(|| refused(kernel, format!("`{}` is not declared", g.name)))?;
    let kind = match &def.class {
        TypeClass::Thread(k @ ThreadKind::Cuda(_)) => k.clone(),
        _ => return Err(refused(kernel, format!("`{}` is not a cuda array", g.name))),
    };
    let root = def.root;
    for (path, index) in &mut body.tids {
        let dim = match path.is_empty() {
            true => g.name.to_string(),
            false => format!("{}_{path}", g.name),
        };
        let node = g
            .module
            .lookup(&dim)
            .map_err(|_| refused(kernel, format!("`{}` has no dimension `{dim}`", g.name)))?
            .node;
        *index = thread_index(g.module, root, &kind, node);
    }
    CudaGrid::of(g.module, root).map_err(|e| refused(kernel, e))
}

/// `e` with its form of one of `types`, if it is one, resolved.
fn resolve_form(e: &mut Expr, types: &[&TypeBinding]) -> parray_layout::Result<()> {
    let binding = |ty: &str| {
        types.iter().find(|t| t.alias == ty).ok_or_else(|| {
            Error::new(
                ErrorKind::Unknown,
                TextSpan::default(),
                format!("no type is given for `{ty}`"),
            )
        })
    };
    match &mut e.kind {
        ExprKind::GenericOffset { ty, args } => {
            let t = binding(ty)?;
            let vars: Vec<String> = (0..args.len()).map(|d| format!("i{d}")).collect();
            let names: Vec<&str> = vars.iter().map(String::as_str).collect();
            let off = parray_layout::index_function(t.module, t.name, &names)?;
            // Read through its pointer, as a type parameter's array is: constant memory
            // is for the types a body names.
            let of = Indexed {
                type_name: t.alias.to_string(),
                constant: false,
                ..Indexed::of_type(t.module, t.name)
            };
            let args = std::mem::take(args);
            e.kind = ExprKind::Offset { off, args, of };
        }
        ExprKind::GenericSize { ty, dim } => {
            let t = binding(ty)?;
            let def = t.module.type_def(t.name).ok_or_else(|| {
                refused("generic", format!("`{}` is not a declared type", t.name))
            })?;
            // A type of one dimension is its own dimension 0.
            let kids = &t.module.node(def.root).children;
            let node = match (dim, kids.is_empty()) {
                (None, _) | (Some(0), true) => def.root,
                (Some(k), _) => *kids.get(*k).ok_or_else(|| {
                    refused(
                        "generic",
                        format!("`{}` has no top-level dimension {k}", t.name),
                    )
                })?,
            };
            e.kind = ExprKind::Size(t.module.size(node));
        }
        _ => {}
    }
    Ok(())
}

/// Applies `f` to every expression of `stmts`, innermost first.
fn stmts_exprs_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for s in stmts {
        s.for_each_part_mut(&mut |part| match part {
            PartMut::Expr(e) => expr_mut(e, f),
            PartMut::Body(b) => stmts_exprs_mut(b, f),
        });
    }
}

fn expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    e.for_each_child_mut(&mut |c| expr_mut(c, f));
    f(e);
}
