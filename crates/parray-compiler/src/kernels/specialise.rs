//! The kernel of a cuda body whose forms wait for their types: a generic detour's
//! `$T[i][j]$`, `$size(T)$` and `$dim(T_k)$`, and the same forms of a declared type whose
//! sizes are given at run time. Once the types are known (at the detour's first launch),
//! each such form becomes what the offset compiler gives for the declared type, and the
//! body goes the whole road, check, proofs and the C writer, as a body of literal types
//! does at compile time: its sizes are folded and its accesses proved where the numbers
//! allow, and a body of literal types and the same body specialised at those sizes have
//! the same kernel.

use parray_layout::expr::Vars;
use parray_layout::{
    thread_index, CudaGrid, DimPath, Error, ErrorKind, Module, TextSpan, ThreadIndex, ThreadKind,
    TypeClass,
};

use super::build::{refused, typed_and_proved};
use crate::back::c::{self as emit_c, Dialect};
use crate::ir::{
    Body, CopySpec, Expr, ExprKind, Indexed, Len, Lit, PartMut, Scalar, Stmt, MAX_REGISTER_BYTES,
};
use parray_layout::grid::CUDA;
use parray_layout::kinds::MemKind;

/// What a form's type name stands for: the declared type `name` of `module`, for the
/// forms of `alias` (a type parameter, or the run-time type itself).
pub struct TypeBinding<'m> {
    pub alias: &'m str,
    pub name: &'m str,
    pub module: &'m Module,
}

/// A specialised kernel: its CUDA source and, where some access stays checked, the arrays
/// its fault record numbers ([`emit_c::checked_arrays`]).
#[derive(Debug, Clone)]
pub struct Specialised {
    pub source: String,
    pub checked: Option<Vec<String>>,
    /// The grid it is launched on: the thread array's at these sizes.
    pub grid: CudaGrid,
    /// Its thread indices at these sizes, in the order of the body's `tids` (what the
    /// CPU emulation of a body with [`Body::tids_at_launch`] evaluates).
    pub tids: Vec<ThreadIndex>,
    /// The same kernel in HIP C++ ([`emit_c::hip_kernel`]).
    pub hip: String,
    /// The bytes of dynamic shared memory it is launched with
    /// ([`Body::dynamic_shared_bytes`]).
    pub shared_bytes: u64,
    /// Its TMA copies' maps, in the order of their map parameters: those the front end
    /// planned, and those of sources of run-time sizes planned here at these sizes.
    pub tma: Vec<parray_layout::tma::TmaPlan>,
}

/// The kernel `kernel` of `body` (lowered, not yet typed) with the forms of each type of
/// `types` resolved. An error where a form does not fit its type (checked before, at the
/// launch: the rank and the dimensions it names) or the prover refuses an access at these
/// sizes.
///
/// Post-condition: no [`ExprKind::GenericOffset`], [`ExprKind::GenericSize`] or
/// [`ExprKind::RuntimeConst`] is left in the body written, each of its forms is the
/// declared type's offset function, and each run-time constant its value in `consts`.
///
/// `grid` is the body's thread array: its thread indices are computed at its sizes
/// here (its grid may be sized at run time), and its `$size$` forms resolved with it.
pub fn specialised_kernel(
    mut body: Body,
    types: &[TypeBinding],
    grid: &TypeBinding,
    consts: &[(&str, u64)],
    kernel: &str,
) -> parray_layout::Result<Specialised> {
    let shape = thread_indices(&mut body, grid, kernel)?;
    let types: Vec<&TypeBinding> = types.iter().chain([grid]).collect();
    // A thread index's largest value, as the front end bounds it in a literal form.
    let tid_max = |path: &str| {
        let dim = match path.is_empty() {
            true => grid.name.to_string(),
            false => format!("{}_{path}", grid.name),
        };
        let node = grid.module.lookup(&dim).ok()?.node;
        Some(grid.module.size(node) - 1)
    };
    let mut failed = None;
    copies_mut(&mut body.stmts, &mut |copy| {
        let made = lower_copy(copy, &types);
        if let (Err(err), None) = (&made, &failed) {
            failed = Some(err.clone());
        }
        made.ok()
    });
    let mut resolve = |e: &mut Expr| {
        if failed.is_none() {
            if let Err(err) = resolve_form(e, &types, consts, &tid_max) {
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
    created_lens(&mut body.stmts, &types, kernel)?;
    plan_tma(&mut body.stmts, &types, kernel)?;
    let shared = body.shared_layout().1;
    if shared > CUDA.shared_bytes {
        let arrays = created_arrays(&body.stmts, MemKind::Smem).join(", ");
        return Err(refused(
            kernel,
            format!(
                "its shared arrays ({arrays}) need {shared} bytes of shared memory a block, and a GPU has at most {}",
                CUDA.shared_bytes
            ),
        ));
    }
    let tids = body.tids.iter().map(|(_, t)| t.clone()).collect();
    let tma = body
        .tma_copies()
        .iter()
        .map(|t| t.planned().clone())
        .collect();
    let proved = typed_and_proved(body, kernel)?;
    Ok(Specialised {
        tma,
        shared_bytes: proved.body().dynamic_shared_bytes(),
        source: emit_c::kernel(&proved, kernel, Dialect::Cuda),
        checked: emit_c::checked_arrays(&proved),
        hip: emit_c::hip_kernel(&proved, kernel, &shape),
        grid: shape,
        tids,
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

/// The binding of the form type `ty` among `types`.
fn binding<'t, 'm>(
    types: &[&'t TypeBinding<'m>],
    ty: &str,
) -> parray_layout::Result<&'t TypeBinding<'m>> {
    types
        .iter()
        .copied()
        .find(|t| t.alias == ty)
        .ok_or_else(|| {
            Error::new(
                ErrorKind::Unknown,
                TextSpan::default(),
                format!("no type is given for `{ty}`"),
            )
        })
}

/// `written` (`T`, `T_1_0`, `T[i][j]`), a name or form of the type `t.alias`, for the
/// declared type it stands for.
fn declared(t: &TypeBinding, written: &str) -> String {
    format!("{}{}", t.name, &written[t.alias.len()..])
}

/// `e` with its form of one of `types`, if it is one, resolved: the offset compiler's
/// form for the declared type, as the front end makes it for a literal type.
fn resolve_form(
    e: &mut Expr,
    types: &[&TypeBinding],
    consts: &[(&str, u64)],
    tid_max: &dyn Fn(&str) -> Option<u64>,
) -> parray_layout::Result<()> {
    match &mut e.kind {
        ExprKind::RuntimeConst { name, .. } => {
            let &(_, v) = consts.iter().find(|(n, _)| n == name).ok_or_else(|| {
                refused(
                    "generic",
                    format!("the run-time constant `{name}` has no value"),
                )
            })?;
            e.kind = ExprKind::Lit(Lit::Int(u128::from(v), Some(Scalar::Usize)));
        }
        ExprKind::GenericOffset {
            ty, index, args, ..
        } => {
            let t = binding(types, ty)?;
            let mut ie = parray_layout::parse_index_expr(&index.text)?;
            ie.target.name = declared(t, &ie.target.name);
            // The variables in the order of the arguments, thread indices with their
            // ranges (the front end's order, so the same offset comes out).
            let mut vars = Vars::new();
            for (name, arg) in index.vars.iter().zip(args.iter()) {
                let max = match &arg.kind {
                    ExprKind::Tid(path) => tid_max(path).unwrap_or(u64::MAX),
                    _ => u64::MAX,
                };
                vars.bind(name, max);
            }
            let off = parray_layout::compile_with(t.module, &ie, vars)?;
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
        ExprKind::GenericSize { ty, path, .. } => {
            let t = binding(types, ty)?;
            let def = t.module.type_def(t.name).ok_or_else(|| {
                refused("generic", format!("`{}` is not a declared type", t.name))
            })?;
            // A type of one dimension is its own dimension 0.
            let leaf = t.module.node(def.root).children.is_empty();
            let node = match path.as_slice() {
                [] | [0] if leaf => def.root,
                _ => {
                    let dim = path
                        .iter()
                        .fold(t.name.to_string(), |d, k| format!("{d}_{k}"));
                    t.module
                        .lookup(&dim)
                        .map_err(|_| {
                            refused("generic", format!("`{}` has no dimension `{dim}`", t.name))
                        })?
                        .node
                }
            };
            e.kind = ExprKind::Size(t.module.size(node));
        }
        _ => {}
    }
    Ok(())
}

/// Each array `stmts` create of a type sized at run time ([`Len::AtRunTime`]) given its
/// type's extent at the bound sizes; an error where a register array's bytes are past
/// [`MAX_REGISTER_BYTES`] (a GPU would keep it in local memory, not in registers).
fn created_lens(
    stmts: &mut [Stmt],
    types: &[&TypeBinding],
    kernel: &str,
) -> parray_layout::Result<()> {
    for s in stmts {
        if let Stmt::Create {
            type_name,
            elem,
            mem,
            len: len @ Len::AtRunTime,
            ..
        } = s
        {
            let t = binding(types, type_name)?;
            let node = t
                .module
                .lookup(t.name)
                .map_err(|_| refused(kernel, format!("`{}` is not declared", t.name)))?
                .node;
            let extent = t.module.extent(node);
            *len = Len::Fixed(extent);
            let bytes = extent * elem.size_bytes();
            if *mem == MemKind::Rmem && bytes > MAX_REGISTER_BYTES {
                return Err(refused(
                    kernel,
                    format!(
                        "the register array `{type_name}` has {extent} {} ({bytes} bytes), more than a thread's registers hold ({MAX_REGISTER_BYTES} bytes: 255 registers of 4 bytes); make it smem, or its sizes smaller",
                        elem.rust_type()
                    ),
                ));
            }
        }
        let mut inner = Ok(());
        s.for_each_part_mut(&mut |part| {
            if let (PartMut::Body(b), Ok(())) = (part, &inner) {
                inner = created_lens(b, types, kernel);
            }
        });
        inner?;
    }
    Ok(())
}

/// The arrays of memory `mem` that `stmts` create, as `TILE (768 f32)`.
fn created_arrays(stmts: &[Stmt], mem: MemKind) -> Vec<String> {
    let mut out = Vec::new();
    crate::ir::visit_stmts(stmts, &mut |s| {
        if let Stmt::Create {
            type_name,
            elem,
            mem: m,
            len: Len::Fixed(n),
            ..
        } = s
        {
            if *m == mem {
                out.push(format!("`{type_name}` of {n} {}", elem.rust_type()));
            }
        }
    });
    out
}

/// The copy `copy` makes at the bound sizes of its types (`crate::copy::lower`).
fn lower_copy(copy: &CopySpec, types: &[&TypeBinding]) -> parray_layout::Result<Stmt> {
    let mut copy = copy.clone();
    let module = |end: &mut crate::ir::CopyEnd| {
        let t = binding(types, DimPath::split(&end.ty).name)?;
        end.ty = declared(t, &end.ty);
        Ok::<_, Error>(t.module)
    };
    let (src, dst) = (module(&mut copy.src)?, module(&mut copy.dst)?);
    crate::copy::lower(&copy, src, dst).map_err(|e| {
        let what = format!("`#copy {}(..) to {}(..)`", copy.src.ty, copy.dst.ty);
        Error::new(
            ErrorKind::Size,
            TextSpan::default(),
            format!("{what}: {}", e.message),
        )
    })
}

/// Replaces each [`Stmt::GenericCopy`] of `stmts`, at any depth, by what `made` gives for
/// it (left as it is where that is `None`).
fn copies_mut(stmts: &mut [Stmt], made: &mut dyn FnMut(&CopySpec) -> Option<Stmt>) {
    for s in stmts {
        if let Stmt::GenericCopy { copy, .. } = s {
            if let Some(m) = made(copy) {
                *s = m;
            }
            continue;
        }
        s.for_each_part_mut(&mut |part| {
            if let PartMut::Body(b) = part {
                copies_mut(b, made);
            }
        });
    }
}

/// Plans each TMA copy whose source has sizes given at run time (the front end planned
/// those of literal sizes, and this one at a probe, for its errors), at the bound sizes:
/// the planner of the copy's two types, each in its module.
fn plan_tma(stmts: &mut [Stmt], types: &[&TypeBinding], kernel: &str) -> parray_layout::Result<()> {
    for s in stmts {
        if let Stmt::Tma { tma, .. } = s {
            if tma.plan.is_none() {
                let (src, dst) = (binding(types, &tma.src_ty)?, binding(types, &tma.dst_ty)?);
                let plan = parray_layout::tma::plan_between(
                    (src.module, &declared(src, &tma.src_ty)),
                    (dst.module, &declared(dst, &tma.dst_ty)),
                )
                .map_err(|e| {
                    refused(
                        kernel,
                        format!(
                            "the TMA copy of `{}` to `{}` at these sizes: {}",
                            tma.src_ty, tma.dst_ty, e.message
                        ),
                    )
                })?;
                tma.plan = Some(plan);
            }
            continue;
        }
        let mut failed = None;
        s.for_each_part_mut(&mut |part| {
            if let (PartMut::Body(b), None) = (part, &failed) {
                failed = plan_tma(b, types, kernel).err();
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
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
