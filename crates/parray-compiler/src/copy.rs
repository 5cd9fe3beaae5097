//! `#copy S(a) to D(b)` in a body: element `k` of `a`, an array or pointer of type `S`, goes
//! to element `k` of `b`, of type `D`. The one lowering of it, used by the front end for
//! literal types and by a kernel's specialisation for types whose sizes come at run time,
//! so that both make the same statement. Either side may be a fragment (SPEC 2.14, 3.9):
//! then each thread moves its own registers (`placement`, `fragment_copy`), or, between
//! a shared tile and 16-bit registers where the types allow it, the warp moves them by
//! `ldmatrix` or `stmatrix` (`matrices`).

use std::collections::HashMap;

use parray_layout::{ElemType, Holders, Module, NodeId, NodeKind, Offset, TypeClass};

use crate::CodeSpan;

use crate::ir::{
    move_vector_of, BinOp, Check, CopyEnd, CopyGuard, CopySpec, Expr, ExprKind, Guard, Indexed,
    Stmt,
};

/// Which part of a `#copy` an error is about, for the front end's span.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyPart {
    Src,
    Dst,
    Whole,
}

/// Why a `#copy` cannot be made, and about which part.
#[derive(Debug, Clone)]
pub struct CopyError {
    pub part: CopyPart,
    pub message: String,
}

/// One side as the copy sees it: the type or dimension named, in its module.
struct Side<'m> {
    module: &'m Module,
    size: u64,
    elem: ElemType,
    off: Offset,
    node: NodeId,
    /// The declared type the dimension belongs to.
    type_name: String,
}

fn side<'m>(module: &'m Module, name: &str, part: CopyPart) -> Result<Side<'m>, CopyError> {
    let fail = |message: String| CopyError { part, message };
    let id = parray_layout::ast::Ident {
        name: name.to_string(),
        span: parray_layout::TextSpan::default(),
    };
    let dim = module.resolve(&id).map_err(|e| fail(e.message))?;
    let def = &module.types()[dim.ty];
    let TypeClass::Data { elem, .. } = def.class else {
        return Err(fail(format!(
            "`{name}` is a thread array; `#copy` copies data types"
        )));
    };
    let off = parray_layout::offset_function(module, dim.node, "__parray_k")
        .map_err(|e| fail(e.to_string()))?;
    Ok(Side {
        module,
        size: module.size(dim.node),
        elem,
        off,
        node: dim.node,
        type_name: def.name.clone(),
    })
}

/// The statement of `copy`, its source's type resolved in `src` and its destination's in
/// `dst`: a loop of element moves (straight-line for a thread's few elements, none for
/// one), and for a cuda body, where both layouts move in aligned runs of 4 (or 2)
/// elements, a [`Stmt::Vectorised`] whose vector loop the prover keeps where both sides
/// are aligned. Between a fragment and a tile, each thread's straight-line moves of its own
/// registers (`fragment_copy`).
pub fn lower(copy: &CopySpec, src: &Module, dst: &Module) -> Result<Stmt, CopyError> {
    let s = side(src, &copy.src.ty, CopyPart::Src)?;
    let d = side(dst, &copy.dst.ty, CopyPart::Dst)?;
    let whole = |message: String| CopyError {
        part: CopyPart::Whole,
        message,
    };
    let n = s.size;
    if n != d.size {
        return Err(whole(format!(
            "`#copy` copies element k to element k: `{}` has {n} elements and `{}` has {}",
            copy.src.ty, copy.dst.ty, d.size
        )));
    }
    if s.elem != d.elem {
        return Err(whole(format!(
            "`#copy` copies elements unchanged: `{}` holds {} and `{}` holds {}",
            copy.src.ty, s.elem, copy.dst.ty, d.elem
        )));
    }
    let threads = copy.threads.as_deref();
    match (
        placement(&s, &copy.src.ty, threads).map_err(|message| CopyError {
            part: CopyPart::Src,
            message,
        })?,
        placement(&d, &copy.dst.ty, threads).map_err(|message| CopyError {
            part: CopyPart::Dst,
            message,
        })?,
    ) {
        (None, None) => {}
        (Some(_), Some(_)) => {
            return Err(whole(
                "`#copy` moves a fragment from or to a tile in shared or global memory, not from one fragment to another".to_string(),
            ))
        }
        (Some(regs), None) => return fragment_copy(copy, (&s, &regs), &d, false),
        (None, Some(regs)) => return fragment_copy(copy, (&d, &regs), &s, true),
    }
    // On a GPU, vectors of 4 (or 2) elements, 8 (4, 2) of 16 bits, where both layouts
    // move in aligned runs of them (the remap kernel's rule); `bounds::prove` keeps them
    // where both sides are aligned.
    let widths: Vec<u64> = [8u64, 4, 2]
        .into_iter()
        .filter(|w| move_vector_of(s.elem, *w as u8).is_some())
        .collect();
    let width = match copy.vectors {
        true => parray_layout::common_vector(&s.off, &d.off, n, &widths),
        false => None,
    };
    let by = |side: &Side, w: u64| {
        parray_layout::offset_function_by(side.module, side.node, "__parray_k", w).ok()
    };
    let vector_offsets = width.and_then(|w| Some((w, by(&s, w)?, by(&d, w)?)));
    let span = copy.span;
    let size = |v: u64| Expr::new(ExprKind::Size(v), span);
    // Element (or vector) k of a side; a single move is of element 0, with no loop. An
    // array the body created is indexed in place (it has no pointer of its own), a
    // pointer the same way: `x + e1 + e2` at element k is `x[e1 + e2 + off(k)]`.
    let at_k = |end: &CopyEnd, off: Offset, side: &Side, moves: u64| {
        let (off, k) = match moves {
            1 => {
                let first = Offset {
                    expr: parray_layout::expr::LinearForm::constant(off.expr.eval(&[0])),
                    vars: off.vars,
                };
                (first, size(0))
            }
            _ => (off, Expr::new(ExprKind::Local(copy.k), span)),
        };
        let mut index = Expr::new(
            ExprKind::Offset {
                off,
                args: vec![k],
                of: Indexed::of_type(side.module, &side.type_name),
            },
            span,
        );
        for o in &end.offsets {
            index = Expr::new(
                ExprKind::Binary(BinOp::Add, Box::new(o.clone()), Box::new(index)),
                span,
            );
        }
        (Box::new(end.base.clone()), Box::new(index))
    };
    // A loop of `iterations` moves; short ones (a thread's few elements) become
    // straight-line code, and a single move is no loop at all, unless a guard names its
    // `k`.
    let looped = |iterations: u64, body: Vec<Stmt>, named: bool| match (iterations, named) {
        (1, false) => body,
        _ => vec![Stmt::For {
            var: copy.k,
            start: size(0),
            end: size(iterations),
            inclusive: false,
            unroll: (iterations <= 64).then_some(None),
            body,
            loc: copy.loc,
        }],
    };
    let stmt = |expr: Expr| Stmt::Expr {
        expr,
        loc: copy.loc,
    };
    let element = |(base, index): (Box<Expr>, Box<Expr>)| {
        Box::new(Expr::new(
            ExprKind::Index(base, index, Check::Checked(None)),
            span,
        ))
    };
    let value = element(at_k(&copy.src, s.off.clone(), &s, n));
    let place = element(at_k(&copy.dst, d.off.clone(), &d, n));
    let assign = |place: Box<Expr>, value: Box<Expr>| {
        stmt(Expr::new(ExprKind::Assign(None, place, value), span))
    };
    let moves = |iterations, body| looped(iterations, body, false);
    let unguarded = moves(n, vec![assign(place.clone(), value.clone())]);
    // Vector `v` of each side, `(base, index)`, and its move.
    let vector_ends = vector_offsets.map(|(w, s_by, d_by)| {
        (
            w,
            at_k(&copy.src, s_by, &s, n / w),
            at_k(&copy.dst, d_by, &d, n / w),
        )
    });
    let vector_move = vector_ends
        .clone()
        .map(|(w, src, dst)| assign(vector(dst, w, span), vector(src, w, span)));
    let vector = vector_ends
        .as_ref()
        .zip(vector_move.clone())
        .map(|((w, ..), m)| moves(n / w, vec![m]));
    let Some(g) = &copy.guard else {
        return Ok(match vector {
            Some(vector) => Stmt::Vectorised {
                vector,
                scalar: unguarded,
                guard: None,
                loc: copy.loc,
            },
            None => one(unguarded, copy.loc),
        });
    };
    // The guarded element loop: `k`'s digits, then the move where the guard holds and the
    // fill (if any) where it does not.
    let dims = top_level_sizes(&s);
    let digits = match g.digits.len() {
        1 => vec![(g.digits[0], n)],
        r if r == dims.len() => g.digits.iter().copied().zip(dims.iter().copied()).collect(),
        r => {
            return Err(CopyError {
                part: CopyPart::Src,
                message: format!(
                    "a guard names element k (`|k|`) or its digit in each of the source's top-level dimensions: `{}` has {} (of {}), and this guard names {r}",
                    copy.src.ty,
                    match dims.len() {
                        1 => "one".to_string(),
                        d => d.to_string(),
                    },
                    dims.iter().map(u64::to_string).collect::<Vec<_>>().join(", ")
                ),
            })
        }
    };
    let sizes: Vec<Expr> = dims.iter().map(|&v| size(v)).collect();
    let body = guarded_move(copy, g, &sizes, place, value);
    let guarded = looped(n, body, true);
    let mut at_most = g.pred.clone();
    largest_digits(&mut at_most, &digits);
    // Vector by vector where the tile is not wholly inside: vector `v` is `k`'s index
    // (its loop's variable) or, for a single vector, 0.
    let (per_vector, whole) = match (vector_ends, vector_move) {
        (Some((w, src, dst)), Some(vector_move)) => {
            let v = match n / w {
                1 => None,
                _ => Some(copy.k),
            };
            let lane = |(base, index): &(Box<Expr>, Box<Expr>), l: u64| {
                let index = match l {
                    0 => index.clone(),
                    _ => Box::new(Expr::new(
                        ExprKind::Binary(BinOp::Add, index.clone(), Box::new(size(l))),
                        span,
                    )),
                };
                Box::new(Expr::new(
                    ExprKind::Index(base.clone(), index, Check::Checked(None)),
                    span,
                ))
            };
            let lane_move = |l| assign(lane(&dst, l), lane(&src, l));
            let lane_fill = |l| {
                g.fill
                    .as_ref()
                    .map(|f| assign(lane(&dst, l), Box::new(f.clone())))
            };
            let moves_of = PerVector {
                vector_move,
                lane_move: &lane_move,
                lane_fill: &lane_fill,
                loc: copy.loc,
            };
            let edge = per_vector(&digits, w, v, &g.pred, &moves_of)
                .map(|body| moves(n / w, body))
                .unwrap_or_default();
            let whole = whole_vectors(&digits, w, v, &g.pred, &moves_of).map(|mut whole| {
                whole.moves = moves(n / w, std::mem::take(&mut whole.moves));
                whole.vector = v.map(|v| (v, n / w));
                whole
            });
            (edge, whole)
        }
        _ => (Vec::new(), None),
    };
    Ok(Stmt::Vectorised {
        vector: vector.unwrap_or_else(|| unguarded.clone()),
        scalar: guarded,
        guard: Some(Guard {
            digits,
            pred: g.pred.clone(),
            unguarded,
            at_most,
            per_vector,
            whole,
        }),
        loc: copy.loc,
    })
}

/// An index of a top-level dimension: `constant` plus each thread digit (`$tid_..$`'s path)
/// times its weight.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Affine {
    constant: u64,
    terms: Vec<(String, u64)>,
}

/// Where the registers of a thread's part of a fragment lie (SPEC 2.14, 3.9).
struct Registers {
    /// For each register, its element's index in each top-level dimension, as the thread's
    /// digits make it.
    index: Vec<Vec<Affine>>,
    /// The element (its logical index) of each (thread, register).
    elements: HashMap<(u64, u64), u64>,
}

/// The block's leaves below `node` (`path` its `$tid_..$` path): (path, size, stride).
fn block_leaves(module: &Module, node: NodeId, path: String, out: &mut Vec<(String, u64, u64)>) {
    let n = module.node(node);
    match n.kind {
        NodeKind::Leaf { stride } => out.push((path, n.size, stride)),
        _ => n
            .children
            .iter()
            .enumerate()
            .for_each(|(k, c)| block_leaves(module, *c, format!("{path}_{k}"), out)),
    }
}

/// `None` where `side` is not a fragment; else, for each register of a thread's part, the
/// index of its element in each top-level dimension, found from the type by inverting its
/// map from elements to (thread, register): the fragment's thread leaves are digits of
/// the block, so that a thread's element of register `r` lies at a constant plus a
/// multiple of each digit, which is checked against every element. Refused: a dimension
/// of a fragment (not the whole type), a fragment of another cuda array's block (or
/// outside a cuda body), and one whose elements do not depend on a lane digit (lanes
/// that would hold the same elements).
fn placement(side: &Side, name: &str, threads: Option<&str>) -> Result<Option<Registers>, String> {
    let module = side.module;
    let def = module
        .type_def(&side.type_name)
        .ok_or_else(|| format!("`{}` is not declared", side.type_name))?;
    let Some(dist) = def
        .distribution
        .as_ref()
        .filter(|d| d.holders == Holders::Threads)
    else {
        return Ok(None);
    };
    let over = &dist.over;
    if threads != Some(over.as_str()) {
        return Err(format!(
            "`{name}` is a fragment over the threads of `{over}`'s block: only a cuda body of `{over}` copies it"
        ));
    }
    if side.node != def.root {
        return Err(format!(
            "`{name}` is a dimension of the fragment `{}`: `#copy` moves a whole fragment (each thread its own registers)",
            def.name
        ));
    }
    let part = dist.part;
    let g = module
        .type_def(over)
        .ok_or_else(|| format!("`{over}` is not declared"))?;
    let mut leaves = Vec::new();
    block_leaves(
        module,
        module.node(g.root).children[1],
        "1".into(),
        &mut leaves,
    );
    // Each element's (thread, register), and the element of each.
    let mut at = HashMap::new();
    for k in 0..side.size {
        let o = module.offset_at(side.node, k);
        if at.insert((o / part, o % part), k).is_some() {
            return Err(format!(
                "`{name}` keeps two elements in register {} of thread {}",
                o % part,
                o / part
            ));
        }
    }
    let digit = |h: u64, &(_, size, stride): &(String, u64, u64)| (h / stride) % size;
    let (used, unused): (Vec<_>, Vec<_>) = leaves
        .iter()
        .partition(|l| at.keys().any(|&(h, _)| digit(h, l) != 0));
    if let Some((path, ..)) = unused
        .iter()
        .find(|(_, _, stride)| *stride < u64::from(crate::ir::WARP))
    {
        return Err(format!(
            "`{name}` does not reference `{over}_{path}`, a dimension of a warp's lanes: lanes would hold the same elements, and a `#copy` of a fragment moves each lane's own (only the warps may be left out, each warp then holding its copy)"
        ));
    }
    let holders: u64 = used.iter().map(|(_, size, _)| size).product();
    if holders * part != side.size {
        return Err(format!(
            "`{name}` does not fill the {part} registers of each of its {holders} threads"
        ));
    }
    let dims = top_level_sizes(side);
    let index = |k: u64| digits(&dims, k);
    let not_affine = || {
        format!("`{name}`'s element of a register is not a constant plus multiples of the thread's digits in each dimension; `#copy` of such a fragment is not implemented")
    };
    let mut regs = Vec::with_capacity(part as usize);
    for r in 0..part {
        let first = index(*at.get(&(0, r)).ok_or_else(not_affine)?);
        let mut weights = Vec::new();
        for (path, _, stride) in &used {
            let one = index(*at.get(&(*stride, r)).ok_or_else(not_affine)?);
            let w: Option<Vec<u64>> = one
                .iter()
                .zip(&first)
                .map(|(a, b)| a.checked_sub(*b))
                .collect();
            weights.push((path.clone(), w.ok_or_else(not_affine)?));
        }
        regs.push(
            first
                .iter()
                .enumerate()
                .map(|(d, &constant)| Affine {
                    constant,
                    terms: weights
                        .iter()
                        .filter(|(_, w)| w[d] != 0)
                        .map(|(path, w)| (path.clone(), w[d]))
                        .collect(),
                })
                .collect::<Vec<_>>(),
        );
    }
    // Checked at every element: its index is its register's at its thread's digits.
    for (&(h, r), &k) in &at {
        let want = index(k);
        let got: Vec<u64> = regs[r as usize]
            .iter()
            .map(|a| {
                a.constant
                    + a.terms
                        .iter()
                        .map(|(path, w)| {
                            let l = used.iter().find(|l| &l.0 == path).expect("a used leaf");
                            w * digit(h, l)
                        })
                        .sum::<u64>()
            })
            .collect();
        if got != want {
            return Err(not_affine());
        }
    }
    Ok(Some(Registers {
        index: regs,
        elements: at,
    }))
}

/// The index of element `k` (logical order) in each of the top-level dimensions `dims`,
/// row-major (the last the fastest).
fn digits(dims: &[u64], k: u64) -> Vec<u64> {
    let mut rest = k;
    let mut out: Vec<u64> = dims
        .iter()
        .rev()
        .map(|&d| {
            let i = rest % d;
            rest /= d;
            i
        })
        .collect();
    out.reverse();
    out
}

/// A digit of a warp's lanes that the row address of an `ldmatrix` is a form of: the
/// bits of the thread digit `path` from `shift` on, `size` values (`(tid >> shift) &
/// (size - 1)`, no mask where `!masked`: none of the digit's bits lie above them). The
/// block's lane digits are cut at lane 8 (the rows of a matrix below), at lane 16 (each
/// bit of the matrix's number its own part: matrices 1 and 2 of A are 8 rows and 8
/// columns on) and at the last lane whose address is used.
#[derive(Debug)]
struct LanePart {
    path: String,
    /// The part's value at lane `l` is `(l / stride) % size`.
    stride: u64,
    size: u64,
    shift: u32,
    masked: bool,
}

/// How a warp's `ldmatrix` loads a fragment from a tile, or its `stmatrix` stores it
/// there ([`matrices`]).
#[derive(Debug)]
struct Matrices {
    /// The 8 x 8 matrices, each one 32-bit register (two elements) of every lane: 1, 2
    /// or 4.
    matrices: u64,
    /// `.trans`: a matrix's rows in the tile are its columns in the registers.
    trans: bool,
    /// The tile's offset of the first element of the row lane `l` gives (row `l % 8` of
    /// matrix `l / 8 % matrices`), a form of `parts` (`row.vars` numbers them alike).
    row: Offset,
    parts: Vec<LanePart>,
}

/// Whether the types let a warp's `ldmatrix.sync.aligned.m8n8` make the copy of the tile
/// into the registers `regs` of a fragment of `over`'s block (SPEC 3.9, "Fragments"), and
/// its `stmatrix.sync.aligned.m8n8` the copy back (the two distribute a matrix alike),
/// `off` being the tile's offset of an index in each of its top-level dimensions
/// (`index_function`), and how. They do where:
///
/// - the elements are 16-bit (`bf16`, `half`), 2, 4 or 8 a thread (1, 2 or 4 matrices);
/// - the block is whole warps whose lanes are its last dimensions
///   ([`crate::mma::check_block`]) and the fragment is over the 32 lanes of a warp (each
///   warp its own);
/// - the distribution is the instructions': for each matrix `j` (registers `2 j` and
///   `2 j + 1` of every lane), its element of row `p`, column `c` is in register
///   `2 j + c % 2` of lane `4 p + c / 2` (`.trans`: register `2 j + p % 2` of lane
///   `4 c + p / 2`), and the tile keeps each row's 8 elements at consecutive offsets from
///   a multiple of 8 (16 bytes; a swizzle's XOR of 16-byte chunks keeps rows whole);
/// - the tile's index of each lane's row start is a constant plus multiples of the
///   lane's digits ([`LanePart`]).
///
/// Post-condition: where `Some`, in a warp whose lane `l` gives the address of element
/// `row(l)` of the tile's array (starting at a multiple of 16 bytes), each register of
/// each lane receives from `ldmatrix.x{matrices}{.trans}` the element `regs` places there
/// (and `stmatrix` stores each there), the one [`fragment_copy`]'s per-thread move moves:
/// checked at every lane, register and row, and the row's form against the tile's
/// offsets at every lane.
fn matrices(regs: &Registers, tile: &Side, off: &Offset, over: &str) -> Option<Matrices> {
    let module = tile.module;
    let warp = u64::from(crate::ir::WARP);
    let part = regs.index.len() as u64;
    let matrices = part / 2;
    if !matches!(tile.elem, ElemType::Bf16 | ElemType::Half)
        || !part.is_multiple_of(2)
        || ![1, 2, 4].contains(&matrices)
        || crate::mma::check_block(module, over, crate::mma::Instruction::MmaSync).is_err()
        || regs.elements.len() as u64 != warp * part
        || regs.elements.keys().any(|&(lane, _)| lane >= warp)
    {
        return None;
    }
    let at = |k: u64| module.offset_at(tile.node, k);
    let element = |lane: u64, reg: u64| regs.elements.get(&(lane, reg)).copied();
    // The lane and register of element `c` of row `p` of matrix `j`.
    let holder = |trans: bool, j: u64, p: u64, c: u64| match trans {
        false => (4 * p + c / 2, 2 * j + c % 2),
        true => (4 * c + p / 2, 2 * j + p % 2),
    };
    let trans = [false, true].into_iter().find(|&trans| {
        (0..matrices).all(|j| {
            (0..8).all(|p| {
                let offset = |c| {
                    let (lane, reg) = holder(trans, j, p, c);
                    element(lane, reg).map(at)
                };
                offset(0).is_some_and(|start| {
                    start % 8 == 0 && (1..8).all(|c| offset(c) == Some(start + c))
                })
            })
        })
    })?;
    // The lanes whose addresses are used, and the element each one's row starts at.
    let rows = 8 * matrices;
    let start = |l: u64| {
        let (lane, reg) = holder(trans, l / 8, l % 8, 0);
        element(lane, reg).expect("checked: every element is held")
    };
    let g = module.type_def(over)?;
    let mut leaves = Vec::new();
    block_leaves(
        module,
        module.node(g.root).children[1],
        "1".into(),
        &mut leaves,
    );
    let mut parts = Vec::new();
    for (path, size, stride) in leaves.into_iter().filter(|l| l.2 < warp) {
        let top = (stride * size).min(rows);
        let mut cuts = vec![stride];
        cuts.extend([8, 16].into_iter().filter(|&c| stride < c && c < top));
        cuts.push(top);
        for w in cuts.windows(2).filter(|w| w[0] < w[1]) {
            parts.push(LanePart {
                path: path.clone(),
                stride: w[0],
                size: w[1] / w[0],
                shift: (w[0] / stride).trailing_zeros(),
                masked: w[1] < stride * size,
            });
        }
    }
    let value = |p: &LanePart, l: u64| (l / p.stride) % p.size;
    // The index of each lane's row start: a constant plus a weight of each part.
    let dims = top_level_sizes(tile);
    let index = |l: u64| digits(&dims, start(l));
    let constant = index(0);
    let weights: Vec<Vec<u64>> = parts
        .iter()
        .map(|p| {
            index(p.stride)
                .iter()
                .zip(&constant)
                .map(|(a, b)| a.checked_sub(*b))
                .collect()
        })
        .collect::<Option<_>>()?;
    let affine = (0..rows).all(|l| {
        let got: Vec<u64> = (0..dims.len())
            .map(|d| {
                constant[d]
                    + parts
                        .iter()
                        .zip(&weights)
                        .map(|(p, w)| w[d] * value(p, l))
                        .sum::<u64>()
            })
            .collect();
        got == index(l)
    });
    if !affine {
        return None;
    }
    // The tile's offset at that index, a form of the parts.
    let mut vars = parray_layout::Vars::new();
    let ids: Vec<_> = parts
        .iter()
        .enumerate()
        .map(|(i, p)| vars.bind(&format!("__parray_lane{i}"), p.size - 1))
        .collect();
    let mut with = vec![parray_layout::LinearForm::constant(0); off.vars.len()];
    for (d, c) in constant.iter().enumerate() {
        // An index the offset does not depend on has no variable.
        let Some(id) = off.vars.id(&format!("__parray_i{d}")) else {
            continue;
        };
        with[id.0 as usize] = ids
            .iter()
            .zip(&weights)
            .fold(parray_layout::LinearForm::constant(*c), |form, (id, w)| {
                form.add(&parray_layout::LinearForm::var(*id).scale(w[d]), &vars)
            });
    }
    let row = off.expr.substitute(&with, &vars);
    let exact = (0..rows).all(|l| {
        let values: Vec<u64> = parts.iter().map(|p| value(p, l)).collect();
        row.eval(&values) == at(start(l))
    });
    exact.then_some(Matrices {
        matrices,
        trans,
        row: Offset { expr: row, vars },
        parts,
    })
}

/// The copy between a thread's part of a fragment, its registers `regs` ([`placement`]),
/// and `tile`, a type of the same top-level dimensions (`into`: from the tile into the
/// registers): for each register `r`, straight-line, `f[r] = t[e + $T[i][j]$]` (or the
/// reverse), `i` and `j` its element's index at the thread's digits, so that each thread
/// moves its own elements and no other. In a cuda body, where the element type has vectors
/// of 4 or 2 (8, 4 or 2 of 16-bit elements) and every thread's registers `w q .. w q + w`
/// lie at consecutive offsets of the tile from a multiple of `w` (checked at every
/// element), also as `part / w` vector moves, which the prover keeps where the tile's side
/// is aligned. Between a tile and the registers of 16-bit elements, where [`matrices`] says
/// the types allow, rather the warp's `ldmatrix` (into the registers) or `stmatrix`
/// ([`Stmt::Matrices`], the moves its per-thread form), which the prover keeps where the
/// tile is a shared array and its rows are aligned.
fn fragment_copy(
    copy: &CopySpec,
    (frag, regs): (&Side, &Registers),
    tile: &Side,
    into: bool,
) -> Result<Stmt, CopyError> {
    let (frag_end, tile_end, tile_part) = match into {
        true => (&copy.dst, &copy.src, CopyPart::Src),
        false => (&copy.src, &copy.dst, CopyPart::Dst),
    };
    let fail = |part, message| CopyError { part, message };
    if copy.guard.is_some() {
        return Err(fail(
            CopyPart::Whole,
            "a `#copy` to or from a fragment has no guard: each thread moves all its registers"
                .to_string(),
        ));
    }
    let dims = top_level_sizes(tile);
    let shape = |d: &[u64]| d.iter().map(|x| format!("[{x}]")).collect::<String>();
    if dims != top_level_sizes(frag) {
        return Err(fail(
            tile_part,
            format!(
                "a `#copy` to or from a fragment moves the element of each index of its dimensions: `{}` is {} and `{}` is {}",
                frag_end.ty,
                shape(&top_level_sizes(frag)),
                tile_end.ty,
                shape(&dims)
            ),
        ));
    }
    let module = tile.module;
    let span = copy.span;
    let size = |v: u64| Expr::new(ExprKind::Size(v), span);
    let binary =
        |op, a: Expr, b: Expr| Expr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), span);
    let names: Vec<String> = (0..dims.len()).map(|d| format!("__parray_i{d}")).collect();
    let vars: Vec<&str> = names.iter().map(String::as_str).collect();
    let off = parray_layout::index_function(module, &tile_end.ty, &vars)
        .map_err(|e| fail(tile_part, e.to_string()))?;
    let affine = |a: &Affine| {
        let mut e: Option<Expr> = (a.constant != 0 || a.terms.is_empty()).then(|| size(a.constant));
        for (path, w) in &a.terms {
            let t = Expr::new(ExprKind::Tid(path.clone()), span);
            let t = match w {
                1 => t,
                _ => binary(BinOp::Mul, size(*w), t),
            };
            e = Some(match e {
                None => t,
                Some(e) => binary(BinOp::Add, e, t),
            });
        }
        e.expect("a constant or a term")
    };
    // `(base, index)` of element `index` of a side, and the element there.
    let place = |end: &CopyEnd, index: Expr| {
        let index = end
            .offsets
            .iter()
            .fold(index, |i, o| binary(BinOp::Add, o.clone(), i));
        (Box::new(end.base.clone()), Box::new(index))
    };
    let element = |(base, at): (Box<Expr>, Box<Expr>)| {
        Box::new(Expr::new(
            ExprKind::Index(base, at, Check::Checked(None)),
            span,
        ))
    };
    let tile_at = |index: &[Affine]| {
        Expr::new(
            ExprKind::Offset {
                off: off.clone(),
                args: index.iter().map(affine).collect(),
                of: Indexed::of_type(module, &tile.type_name),
            },
            span,
        )
    };
    let assign = |(to, from): (Box<Expr>, Box<Expr>)| Stmt::Expr {
        expr: Expr::new(ExprKind::Assign(None, to, from), span),
        loc: copy.loc,
    };
    let direction = |t, f| match into {
        true => (f, t),
        false => (t, f),
    };
    let moves: Vec<Stmt> = regs
        .index
        .iter()
        .enumerate()
        .map(|(r, index)| {
            let (t, f) = (
                element(place(tile_end, tile_at(index))),
                element(place(frag_end, size(r as u64))),
            );
            assign(direction(t, f))
        })
        .collect();
    let part = regs.index.len() as u64;
    let runs = |w: u64| {
        let off = |k: u64| module.offset_at(tile.node, k);
        part.is_multiple_of(w)
            && regs.elements.iter().all(|(&(h, r), &k)| {
                let first = off(regs.elements[&(h, r - r % w)]);
                first.is_multiple_of(w) && off(k) == first + r % w
            })
    };
    let width = [8u64, 4, 2]
        .into_iter()
        .find(|&w| copy.vectors && move_vector_of(tile.elem, w as u8).is_some() && runs(w));
    // By `ldmatrix` (`stmatrix`) where the types allow, before a thread's own vectors:
    // one instruction moves the warp's rows.
    let by_rows = match (frag_end.offsets.is_empty(), copy.threads.as_deref()) {
        (true, Some(over)) => matrices(regs, tile, &off, over),
        _ => None,
    };
    let Some(w) = width.filter(|_| by_rows.is_none()) else {
        let Some(l) = by_rows else {
            return Ok(one(moves, copy.loc));
        };
        let lane = |p: &LanePart| {
            let tid = Expr::new(ExprKind::Tid(p.path.clone()), span);
            let shifted = match p.shift {
                0 => tid,
                s => binary(BinOp::Shr, tid, size(u64::from(s))),
            };
            match p.masked {
                true => binary(BinOp::BitAnd, shifted, size(p.size - 1)),
                false => shifted,
            }
        };
        let row = Expr::new(
            ExprKind::Offset {
                off: l.row,
                args: l.parts.iter().map(lane).collect(),
                of: Indexed::of_type(module, &tile.type_name),
            },
            span,
        );
        let (base, at) = place(tile_end, row);
        return Ok(Stmt::Matrices {
            store: !into,
            matrices: l.matrices as u8,
            trans: l.trans,
            regs: frag_end.base.clone(),
            base: *base,
            at: *at,
            scalar: moves,
            loc: copy.loc,
        });
    };
    let vectors = (0..part / w)
        .map(|q| {
            let r = q * w;
            let t = vector(place(tile_end, tile_at(&regs.index[r as usize])), w, span);
            let f = vector(place(frag_end, size(r)), w, span);
            assign(direction(t, f))
        })
        .collect();
    Ok(Stmt::Vectorised {
        vector: vectors,
        scalar: moves,
        guard: None,
        loc: copy.loc,
    })
}

/// The moves of one vector of a guarded copy, for [`per_vector`]: the vector's move, and
/// each lane's move and fill (none without `else FILL`).
struct PerVector<'a> {
    vector_move: Stmt,
    lane_move: &'a dyn Fn(u64) -> Stmt,
    lane_fill: &'a dyn Fn(u64) -> Option<Stmt>,
    loc: crate::ir::Loc,
}

/// A digit of `k` over the lanes of vector `v` (`k = v * w + l`, `l < w`), where the
/// lanes are whole runs of the faster digits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LaneDigit {
    /// `(l / p) % d`: the vector holds whole cycles of it (`p * d` divides `w`), from 0
    /// at the first lane to `d - 1` at the last.
    Lane { p: u64, d: u64 },
    /// `(v / q) % d` (no `% d` for the slowest digit): one value over the vector (`w`
    /// divides `p`, `q = p / w`).
    Whole { q: u64, d: Option<u64> },
    /// `c * (v % m) + l / p` (no `% m` for the slowest digit): `p` divides `w` and `w`
    /// divides `p * d`, so the lanes take `c = w / p` consecutive values of it, within
    /// one cycle (`m = d / c`).
    Part { c: u64, m: Option<u64>, p: u64 },
}

/// How each digit of `k` over `digits` (slowest first, with their sizes) meets the
/// lanes of a vector of `w` elements: `None` where some digit is none of
/// [`LaneDigit`]'s (the product `p` of the sizes of the digits faster than it neither
/// divides `w` nor is a multiple of it, as for sizes `[2][6]` by 4, whose vector of
/// elements 4..8 has digits (0, 4), (0, 5), (1, 0), (1, 1)). Otherwise every digit is
/// ordered over the lanes: its value at lane `l` lies between its values at the first
/// and the last lane, and only grows with `l`.
fn lane_digits(digits: &[(crate::ir::LocalId, u64)], w: u64) -> Option<Vec<LaneDigit>> {
    let mut out = Vec::with_capacity(digits.len());
    let mut p = 1u64;
    for (i, &(_, d)) in digits.iter().enumerate().rev() {
        let slowest = i == 0;
        let whole = p.checked_mul(d)?;
        out.push(if w.is_multiple_of(whole) {
            LaneDigit::Lane { p, d }
        } else if p.is_multiple_of(w) {
            LaneDigit::Whole {
                q: p / w,
                d: (!slowest).then_some(d),
            }
        } else if w.is_multiple_of(p) && whole.is_multiple_of(w) {
            let c = w / p;
            LaneDigit::Part {
                c,
                m: (!slowest).then_some(d / c),
                p,
            }
        } else {
            return None;
        });
        p = whole;
    }
    out.reverse();
    Some(out)
}

/// The value of a digit at lane `l` of vector `v` (the local `v`, or 0 where there is
/// one vector).
fn lane_digit(digit: LaneDigit, v: Option<crate::ir::LocalId>, l: u64, span: CodeSpan) -> Expr {
    let size = |x: u64| Expr::new(ExprKind::Size(x), span);
    let binary =
        |op, a: Expr, b: Expr| Expr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), span);
    let Some(v) = v else {
        // One vector: `v` is 0.
        return size(match digit {
            LaneDigit::Lane { p, d } => (l / p) % d,
            LaneDigit::Whole { .. } => 0,
            LaneDigit::Part { p, .. } => l / p,
        });
    };
    let v = Expr::new(ExprKind::Local(v), span);
    match digit {
        LaneDigit::Lane { p, d } => size((l / p) % d),
        LaneDigit::Whole { q, d } => {
            let quotient = match q {
                1 => v,
                _ => binary(BinOp::Div, v, size(q)),
            };
            match d {
                Some(d) => binary(BinOp::Rem, quotient, size(d)),
                None => quotient,
            }
        }
        LaneDigit::Part { c, m, p } => {
            let cycle = match m {
                Some(m) => binary(BinOp::Rem, v, size(m)),
                None => v,
            };
            let scaled = match c {
                1 => cycle,
                _ => binary(BinOp::Mul, size(c), cycle),
            };
            match l / p {
                0 => scaled,
                o => binary(BinOp::Add, scaled, size(o)),
            }
        }
    }
}

/// `e` with each digit local replaced by its value at lane `l` of vector `v`.
fn at_lane(
    e: &Expr,
    digits: &[(crate::ir::LocalId, u64)],
    lanes: &[LaneDigit],
    v: Option<crate::ir::LocalId>,
    l: u64,
) -> Expr {
    fn replace(e: &mut Expr, with: &[(crate::ir::LocalId, Expr)]) {
        if let ExprKind::Local(id) = e.kind {
            if let Some((_, value)) = with.iter().find(|(d, _)| *d == id) {
                *e = value.clone();
                return;
            }
        }
        e.for_each_child_mut(&mut |c| replace(c, with));
    }
    let with: Vec<_> = digits
        .iter()
        .zip(lanes)
        .map(|(&(id, _), &digit)| (id, lane_digit(digit, v, l, e.span)))
        .collect();
    let mut out = e.clone();
    replace(&mut out, &with);
    out
}

/// The body of a guarded copy's loop over its vectors (`v`, or the one vector where `v`
/// is `None`), for where the guard fails at the digits' largest values (the tile is not
/// wholly inside the data), or `None` where the lanes are not ordered digits of `k`
/// ([`lane_digits`]). With `pred` at lane `l` of vector `v` written `pred(v, l)` and `w`
/// lanes:
///
/// ```text
/// if pred(v, w - 1) { vector move }                      // more than one vector
/// else if pred(v, 0) {
///     move lane 0; for 0 < l < w - 1: if pred(v, l) { move lane l } else { fill lane l }
///     fill lane w - 1
/// } else { fill every lane }
/// ```
///
/// Post-condition, where `pred` grows with the digits (each side of its comparisons less
/// the other has no negative multiple of a digit: `bounds::Facts::grows_with_digits`, as
/// the prover checks before keeping this): every lane `l` is moved where `pred(v, l)`
/// holds and filled (or left as it is, without a fill) where it does not, exactly as the
/// guarded element loop does, and no element is read where `pred` fails. Because each
/// digit's value at a lane lies between its values at the first and the last lane, and
/// `pred` holding at some digits implies it at smaller ones: `pred(v, w - 1)` implies it
/// at every lane, and `pred(v, 0)` failing implies it fails at every lane. With one
/// vector its last lane is the digits' largest values, where the guard is known to fail
/// here, so that test is left out.
/// The vector of `lanes` elements of `base` from `at` (a load, or a place to store), its
/// check left to the prover.
fn vector((base, at): (Box<Expr>, Box<Expr>), lanes: u64, span: CodeSpan) -> Box<Expr> {
    Box::new(Expr::new(
        ExprKind::Vector {
            base,
            at,
            lanes: lanes as u8,
            check: Check::Checked(None),
            method: span,
        },
        span,
    ))
}

fn per_vector(
    digits: &[(crate::ir::LocalId, u64)],
    w: u64,
    v: Option<crate::ir::LocalId>,
    pred: &Expr,
    moves: &PerVector,
) -> Option<Vec<Stmt>> {
    let lanes = lane_digits(digits, w)?;
    let at = |l| at_lane(pred, digits, &lanes, v, l);
    let loc = moves.loc;
    let fill = |l| (moves.lane_fill)(l).into_iter().collect::<Vec<_>>();
    let mut partial = vec![(moves.lane_move)(0)];
    for l in 1..w - 1 {
        partial.push(Stmt::If {
            cond: at(l),
            then: vec![(moves.lane_move)(l)],
            els: (moves.lane_fill)(l).map(|f| vec![f]),
            loc,
        });
    }
    partial.extend(fill(w - 1));
    let outside: Vec<Stmt> = (0..w).flat_map(fill).collect();
    let inside_or_not = Stmt::If {
        cond: at(0),
        then: partial,
        els: (!outside.is_empty()).then_some(outside),
        loc,
    };
    Some(vec![match v {
        None => inside_or_not,
        Some(_) => Stmt::If {
            cond: at(w - 1),
            then: vec![moves.vector_move.clone()],
            els: Some(vec![inside_or_not]),
            loc,
        },
    }])
}

/// The moves of a guarded copy's vectors where each vector lies wholly inside the data
/// or wholly outside it: one test a vector and no lane-by-lane code,
///
/// ```text
/// if pred(v, w - 1) { vector move } else { fill every lane }   // no `else` without a fill
/// ```
///
/// so that C predicates the vector moves rather than branching around them (what a tile
/// at the edge of a matrix whose rows are whole vectors needs, CUTLASS's predicated
/// tiles); `None` where the lanes are not ordered digits of `k` ([`lane_digits`]).
/// Post-condition, where `pred(v, 0)` and `pred(v, w - 1)` agree for every `v` (as
/// `bounds::Facts::lanes_agree` proves of [`WholeVectors::first`] and `last` before the
/// prover keeps this) and `pred` grows with the digits: exactly the guarded element
/// loop's moves and fills, since the lanes between lie between those two.
fn whole_vectors(
    digits: &[(crate::ir::LocalId, u64)],
    w: u64,
    v: Option<crate::ir::LocalId>,
    pred: &Expr,
    moves: &PerVector,
) -> Option<crate::ir::WholeVectors> {
    let lanes = lane_digits(digits, w)?;
    let at = |l| at_lane(pred, digits, &lanes, v, l);
    let fills: Vec<Stmt> = (0..w).flat_map(|l| (moves.lane_fill)(l)).collect();
    Some(crate::ir::WholeVectors {
        first: Box::new(at(0)),
        last: Box::new(at(w - 1)),
        lanes: w,
        vector: None,
        moves: vec![Stmt::If {
            cond: at(w - 1),
            then: vec![moves.vector_move.clone()],
            els: (!fills.is_empty()).then_some(fills),
            loc: moves.loc,
        }],
    })
}

/// `e` with each digit local replaced by its largest value.
fn largest_digits(e: &mut Expr, digits: &[(crate::ir::LocalId, u64)]) {
    if let ExprKind::Local(id) = e.kind {
        if let Some((_, size)) = digits.iter().find(|(d, _)| *d == id) {
            e.kind = ExprKind::Size(size - 1);
        }
    }
    e.for_each_child_mut(&mut |c| largest_digits(c, digits));
}

/// The body of a guarded copy's element loop: the digits of `k` over `sizes` (the
/// source's top-level dimensions) when the guard names them, then the move where the
/// guard holds and the fill (if any) where it does not.
pub fn guarded_move(
    copy: &CopySpec,
    g: &CopyGuard,
    sizes: &[Expr],
    place: Box<Expr>,
    value: Box<Expr>,
) -> Vec<Stmt> {
    let span = copy.span;
    let binary =
        |op, a: Expr, b: Expr| Expr::new(ExprKind::Binary(op, Box::new(a), Box::new(b)), span);
    let mut body = Vec::new();
    if g.digits.len() > 1 {
        // Row-major digits, the last the fastest; the first needs no remainder (k < n).
        let mut weight: Option<Expr> = None;
        for (j, (&local, size_j)) in g.digits.iter().zip(sizes).enumerate().rev() {
            let k = Expr::new(ExprKind::Local(copy.k), span);
            let quotient = match &weight {
                None => k,
                Some(w) => binary(BinOp::Div, k, w.clone()),
            };
            let digit = match j {
                0 => quotient,
                _ => binary(BinOp::Rem, quotient, size_j.clone()),
            };
            body.insert(
                0,
                Stmt::Let {
                    local,
                    init: Some(digit),
                    loc: copy.loc,
                },
            );
            weight = Some(match (weight, &size_j.kind) {
                (None, _) => size_j.clone(),
                (
                    Some(Expr {
                        kind: ExprKind::Size(w),
                        ..
                    }),
                    ExprKind::Size(v),
                ) => Expr::new(ExprKind::Size(w * v), span),
                (Some(w), _) => binary(BinOp::Mul, w, size_j.clone()),
            });
        }
    }
    let assign = |place: Box<Expr>, value: Box<Expr>| Stmt::Expr {
        expr: Expr::new(ExprKind::Assign(None, place, value), span),
        loc: copy.loc,
    };
    body.push(Stmt::If {
        cond: g.pred.clone(),
        then: vec![assign(place.clone(), value)],
        els: g.fill.clone().map(|f| vec![assign(place, Box::new(f))]),
        loc: copy.loc,
    });
    body
}

/// The sizes of the top-level dimensions of a copy's side: its node's children (itself
/// when it is a leaf).
fn top_level_sizes(side: &Side) -> Vec<u64> {
    let node = side.module.node(side.node);
    match node.children.is_empty() {
        true => vec![side.size],
        false => node.children.iter().map(|c| side.module.size(*c)).collect(),
    }
}

/// Statements as one.
fn one(mut stmts: Vec<Stmt>, loc: crate::ir::Loc) -> Stmt {
    match stmts.len() {
        1 => stmts.pop().expect("one statement"),
        _ => Stmt::Block { body: stmts, loc },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ir::LocalId;

    const FRAGMENTS: &str = "
cuda(float* c) [1][[4][8][4]] G
cuda(float* c) [1][[8][4]] H
rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS
bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA
rmem float [[2][#G_1_1]][[#G_1_2][2]] FC
rmem float [[2][#G_1_1]][[2][4]] ROWS_ONLY
rmem float [[2][#H_1_0]][[#H_1_1][2]] FH
rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB
smem bf16 [16][16] AS
smem bf16 [16][24] AP
bf16 [#AP_0][16#AP_1] AP_TILE
smem bf16 [16][20] AQ
bf16 [#AQ_0][16#AQ_1] AQ_TILE
smem bf16 [[2][8]][[8 ^ T_0_1][8]] T
bf16 [#T_0][16#T_1] T_TILE
smem bf16 [16][8] BS
smem bf16 [8][16] BNK
bf16 [#BNK_1][#BNK_0] BT
smem float [16][8] CS
rmem bf16 [[2][#G_1_1]][[#G_1_2][2]] FC16
smem bf16 [8][16] CNM
bf16 [#CNM_1][#CNM_0] CT
rmem half [#G_1_1][[#G_1_2][2]] F8
smem half [8][8] S8
";

    fn placed(name: &str, threads: &str) -> Result<Option<Registers>, String> {
        let module = Module::parse(FRAGMENTS).unwrap_or_else(|e| panic!("{e}"));
        let s = side(&module, name, CopyPart::Src).map_err(|e| e.message)?;
        placement(&s, name, Some(threads))
    }

    /// Each register's element at each thread's digits is the ISA's (A: m = t1 + 8 v1,
    /// k = 2 t0 + v0 + 8 v2 for register v0 + 2 v1 + 4 v2 of lane t0 + 4 t1), for the
    /// thread's digits `G_1_1` (t1) and `G_1_2` (t0); the warp is left out.
    #[test]
    fn a_fragment_places_each_register_at_the_thread_digits() {
        let regs = placed("FA", "G").unwrap().expect("a fragment");
        assert_eq!(regs.index.len(), 8);
        for (v, index) in regs.index.iter().enumerate() {
            let (v0, v1, v2) = (v as u64 % 2, v as u64 / 2 % 2, v as u64 / 4);
            let t1 = |c| Affine {
                constant: c,
                terms: vec![("1_1".to_string(), 1)],
            };
            let t0 = |c| Affine {
                constant: c,
                terms: vec![("1_2".to_string(), 2)],
            };
            assert_eq!(index, &vec![t1(8 * v1), t0(v0 + 8 * v2)], "register {v}");
        }
        assert!(placed("FA_REGS_0", "G")
            .is_err_and(|e| e.contains("a dimension of the fragment `FA_REGS`")));
    }

    /// Refused: a fragment of another cuda array's block (or outside a cuda body), and
    /// one whose elements do not depend on a lane digit.
    #[test]
    fn fragments_of_other_blocks_and_shared_lanes_are_refused() {
        let other = placed("FH", "G").err().expect("another block");
        assert!(
            other.contains("`FH` is a fragment over the threads of `H`'s block"),
            "{other}"
        );
        let shared = placed("ROWS_ONLY", "G").err().expect("t0 left out");
        assert!(shared.contains("does not reference `G_1_2`"), "{shared}");
        let module = Module::parse(FRAGMENTS).unwrap_or_else(|e| panic!("{e}"));
        let s = side(&module, "FC", CopyPart::Src).unwrap_or_else(|e| panic!("{}", e.message));
        assert!(placement(&s, "FC", None).is_err());
    }

    /// [`matrices`] of the fragment `frag` of `G`'s block from the tile `tile`, and the
    /// offset its row form gives each lane; where it is `Some`, checked against the
    /// instruction as the PTX ISA describes it, on the tile's offsets: lane `l` gives the
    /// address of row `l % 8` of matrix `l / 8`, and lane `t` receives in registers `2 i`
    /// and `2 i + 1` the elements `2 (t % 4)` and `2 (t % 4) + 1` of row `t / 4` of
    /// matrix `i` (`.trans`: element `t / 4` of rows `2 (t % 4)` and `2 (t % 4) + 1`),
    /// which must be the elements the fragment's type places there.
    fn by_rows(frag: &str, tile: &str) -> Option<(Matrices, Vec<u64>)> {
        let module = Module::parse(FRAGMENTS).unwrap_or_else(|e| panic!("{e}"));
        let f = side(&module, frag, CopyPart::Dst).unwrap_or_else(|e| panic!("{}", e.message));
        let regs = placement(&f, frag, Some("G")).unwrap().expect("a fragment");
        let t = side(&module, tile, CopyPart::Src).unwrap_or_else(|e| panic!("{}", e.message));
        let off = parray_layout::index_function(&module, tile, &["__parray_i0", "__parray_i1"])
            .unwrap_or_else(|e| panic!("{e}"));
        let l = matrices(&regs, &t, &off, "G")?;
        let rows: Vec<u64> = (0..8 * l.matrices)
            .map(|lane| {
                let values: Vec<u64> = l.parts.iter().map(|p| (lane / p.stride) % p.size).collect();
                l.row.expr.eval(&values)
            })
            .collect();
        for (&(lane, reg), &k) in &regs.elements {
            let (i, e) = (reg / 2, reg % 2);
            let isa = match l.trans {
                false => rows[(8 * i + lane / 4) as usize] + 2 * (lane % 4) + e,
                true => rows[(8 * i + 2 * (lane % 4) + e) as usize] + lane / 4,
            };
            assert_eq!(
                isa,
                module.offset_at(t.node, k),
                "{frag} from {tile}: register {reg} of lane {lane}"
            );
        }
        Some((l, rows))
    }

    /// A's four matrices from a row-major tile (lane `l` gives row `l % 16` at column `8 (l
    /// / 16)`), from rows padded to 48 bytes, and from the 128-byte swizzle, whose rows'
    /// form has no division left; B's two, `.trans` from a k x n tile (lane `l` gives row
    /// `k = l`) and plain from an n x k one seen as k x n.
    #[test]
    fn ldmatrix_applies_where_each_row_is_16_aligned_bytes_in_its_order() {
        let (a, rows) = by_rows("FA", "AS").expect("row-major A");
        assert_eq!((a.matrices, a.trans), (4, false));
        let want: Vec<u64> = (0..32).map(|l| (l % 16) * 16 + (l / 16) * 8).collect();
        assert_eq!(rows, want);
        let paths: Vec<(&str, u64, u64, u32, bool)> = a
            .parts
            .iter()
            .map(|p| (p.path.as_str(), p.stride, p.size, p.shift, p.masked))
            .collect();
        assert_eq!(
            paths,
            [
                ("1_1", 4, 2, 0, true),
                ("1_1", 8, 2, 1, true),
                ("1_1", 16, 2, 2, false),
                ("1_2", 1, 4, 0, false)
            ]
        );
        let (_, rows) = by_rows("FA", "AP_TILE").expect("padded rows");
        let want: Vec<u64> = (0..32).map(|l| (l % 16) * 24 + (l / 16) * 8).collect();
        assert_eq!(rows, want);
        let (t, rows) = by_rows("FA", "T_TILE").expect("swizzled A");
        let want: Vec<u64> = (0..32)
            .map(|l| (l % 16) * 64 + ((l / 16) ^ (l % 8)) * 8)
            .collect();
        assert_eq!(rows, want);
        let text = t.row.expr.to_source(&t.row.vars);
        assert!(!text.contains('/') && !text.contains('%'), "{text}");
        let (b, rows) = by_rows("FB", "BS").expect("k x n B");
        assert_eq!((b.matrices, b.trans), (2, true));
        assert_eq!(rows, (0..16).map(|l| l * 8).collect::<Vec<_>>());
        let (b, rows) = by_rows("FB", "BT").expect("n x k B");
        assert_eq!((b.matrices, b.trans), (2, false));
        let want: Vec<u64> = (0..16).map(|l| (l % 8) * 16 + (l / 8) * 8).collect();
        assert_eq!(rows, want);
    }

    /// A 16-bit accumulator (m = t1 + 8 v1, n = 2 t0 + v0) is two matrices of rows of
    /// m, each lane `l` giving row `m = l` of a row-major m x n tile, and `.trans` to an n
    /// x m tile seen as m x n (lane `l` gives row `n = l % 8` from `m = 8 (l / 8)`).
    #[test]
    fn a_16_bit_accumulator_is_two_matrices() {
        let (c, rows) = by_rows("FC16", "BS").expect("row-major C");
        assert_eq!((c.matrices, c.trans), (2, false));
        assert_eq!(rows, (0..16).map(|l| l * 8).collect::<Vec<_>>());
        let (c, rows) = by_rows("FC16", "CT").expect("n x m C");
        assert_eq!((c.matrices, c.trans), (2, true));
        let want: Vec<u64> = (0..16).map(|l| (l % 8) * 16 + (l / 8) * 8).collect();
        assert_eq!(rows, want);
    }

    /// One matrix of `half`s, a register pair a lane (`.x1`): lane `l` gives row `l % 8`,
    /// its digit `t1` cut at lane 8 (the lanes past it give the first 8 rows again).
    #[test]
    fn one_matrix_is_x1() {
        let (h, rows) = by_rows("F8", "S8").expect("8 x 8 halves");
        assert_eq!((h.matrices, h.trans), (1, false));
        assert_eq!(rows, (0..8).map(|l| l * 8).collect::<Vec<_>>());
        let parts: Vec<(u64, u64, bool)> = h
            .parts
            .iter()
            .map(|p| (p.stride, p.size, p.masked))
            .collect();
        assert_eq!(parts, [(4, 2, true), (1, 4, false)]);
    }

    /// Not where a row is not 16 aligned bytes (rows of 40 bytes), nor for 32-bit elements.
    #[test]
    fn ldmatrix_does_not_apply_elsewhere() {
        assert!(by_rows("FA", "AQ_TILE").is_none());
        assert!(by_rows("FC", "CS").is_none());
    }

    fn sizes(s: &[u64]) -> Vec<(LocalId, u64)> {
        s.iter()
            .enumerate()
            .map(|(i, &d)| (LocalId(i as u32), d))
            .collect()
    }

    /// The lanes of a vector of 4 as digits: the A tile's `[2][4]` (the fast digit whole,
    /// the slow one the vector's index), the C tile's `[2][4][1][4]`, `k` itself (`|e|`
    /// over 8), and `[2][6]`, whose vector of elements 4..8 wraps its fast digit (none).
    #[test]
    fn lane_digits_are_ordered_or_none() {
        use LaneDigit::*;
        assert_eq!(
            lane_digits(&sizes(&[2, 4]), 4),
            Some(vec![Whole { q: 1, d: None }, Lane { p: 1, d: 4 }])
        );
        assert_eq!(
            lane_digits(&sizes(&[2, 4, 1, 4]), 4),
            Some(vec![
                Whole { q: 4, d: None },
                Whole { q: 1, d: Some(4) },
                Lane { p: 4, d: 1 },
                Lane { p: 1, d: 4 },
            ])
        );
        assert_eq!(
            lane_digits(&sizes(&[8]), 4),
            Some(vec![Part {
                c: 4,
                m: None,
                p: 1
            }])
        );
        assert_eq!(lane_digits(&sizes(&[3, 2, 6]), 4), None);
        assert_eq!(
            lane_digits(&sizes(&[3, 6, 2]), 4),
            Some(vec![
                Whole { q: 3, d: None },
                Part {
                    c: 2,
                    m: Some(3),
                    p: 2
                },
                Lane { p: 1, d: 2 },
            ])
        );
    }
}
