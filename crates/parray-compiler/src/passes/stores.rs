//! Writes of the fields of one element kept together. A body that writes a record's
//! fields one by one (`p[i].pos = x; p[i].vel = v + field(x) * k;`) reads as two stores
//! with a computation between; a GPU compiler may keep them apart, and each then writes
//! its own partial 32-byte sectors: on an H200 a particle step so wrote 1.9 times the L2
//! sectors of the same step with its two stores side by side, and took 1.3 times as long.
//! So a field store moves down, past statements that only compute (`let`s that read no
//! memory), to the next store to a field of the same element; and in a run of such
//! stores, the values after the first are computed before it, so the stores are issued
//! together.
//!
//! Post-condition: the body computes what it did. Between a store's old place and its
//! new one nothing reads or writes memory or waits, and a value computed earlier reads no
//! memory, so no access of this thread sees the difference; other threads are ordered
//! with it only by barriers and atomics, which nothing here crosses.

use crate::ir::{Body, Expr, ExprKind, Lit, Loc, Local, LocalId, Stmt};

/// Keep the field stores of one element together, in `body` and every body inside it.
pub fn group_field_stores(body: &mut Body) {
    let mut stmts = std::mem::take(&mut body.stmts);
    group(&mut stmts, &mut body.locals);
    body.stmts = stmts;
}

fn group(stmts: &mut Vec<Stmt>, locals: &mut Vec<Local>) {
    for s in stmts.iter_mut() {
        match s {
            Stmt::If { then, els, .. } => {
                group(then, locals);
                if let Some(els) = els {
                    group(els, locals);
                }
            }
            Stmt::While { body, .. } | Stmt::For { body, .. } | Stmt::Block { body, .. } => {
                group(body, locals)
            }
            Stmt::Vectorised { vector, scalar, .. } => {
                group(vector, locals);
                group(scalar, locals);
            }
            _ => {}
        }
    }
    // Each field store down to the next store to the same element, past `let`s that
    // only compute (`k..after` turned by one).
    let mut k = 0;
    while k < stmts.len() {
        if let Some(place) = field_store(&stmts[k]) {
            let after = stmts[k + 1..]
                .iter()
                .position(|s| !only_computes(s))
                .map_or(stmts.len(), |p| k + 1 + p);
            let next = stmts.get(after).and_then(field_store);
            if after > k + 1 && next.is_some_and(|n| same_element(place, n)) {
                stmts[k..after].rotate_left(1);
                k = after;
                continue;
            }
        }
        k += 1;
    }
    // In each run of stores to one element, the values after the first computed first.
    let mut k = 0;
    while k < stmts.len() {
        let Some(place) = field_store(&stmts[k]) else {
            k += 1;
            continue;
        };
        let run = stmts[k + 1..]
            .iter()
            .take_while(|s| field_store(s).is_some_and(|p| same_element(place, p)))
            .count();
        let mut lets = Vec::new();
        for s in &mut stmts[k + 1..k + 1 + run] {
            let loc = s.loc();
            if let Some(value) = stored_value(s) {
                if !matches!(value.kind, ExprKind::Local(_) | ExprKind::Lit(_)) {
                    lets.push(computed_first(value, loc, locals));
                }
            }
        }
        let moved = lets.len();
        stmts.splice(k..k, lets);
        k += moved + run + 1;
    }
}

/// `let t = value;` (at the store's `loc`) for a new local `t`, which `value` becomes.
fn computed_first(value: &mut Expr, loc: Loc, locals: &mut Vec<Local>) -> Stmt {
    let local = LocalId(locals.len() as u32);
    locals.push(Local {
        name: format!("__parray_field{}", local.0),
        span: value.span,
        mutable: false,
        ty: Some(value.ty),
        param: false,
    });
    let mut read = Expr::new(ExprKind::Local(local), value.span);
    read.ty = value.ty;
    let init = std::mem::replace(value, read);
    Stmt::Let {
        local,
        loc,
        init: Some(init),
    }
}

/// The value a field store writes (`v` of `p[i].vel = v`).
fn stored_value(stmt: &mut Stmt) -> Option<&mut Expr> {
    let Stmt::Expr { expr, .. } = stmt else {
        return None;
    };
    match &mut expr.kind {
        ExprKind::Assign(None, _, value) => Some(value),
        _ => None,
    }
}

/// The element whose field `stmt` writes (`p[i]` of `p[i].pos = x`, or of `p[i].pos.x = y`
/// through a record inside it), if it is such a store.
fn field_store(stmt: &Stmt) -> Option<&Expr> {
    let Stmt::Expr { expr, .. } = stmt else {
        return None;
    };
    let ExprKind::Assign(None, place, value) = &expr.kind else {
        return None;
    };
    let (element, _) = place.element_field()?;
    reads_no_memory(value).then_some(element)
}

/// Whether `stmt` is a `let` whose value reads no memory and changes nothing.
fn only_computes(stmt: &Stmt) -> bool {
    match stmt {
        Stmt::Let { init, .. } => init.as_ref().is_none_or(reads_no_memory),
        _ => false,
    }
}

/// Whether `e` computes on values only: no element read, no assignment, no atomic or
/// shuffle, no call of a host function (functions of the body language compute on their
/// parameters only).
fn reads_no_memory(e: &Expr) -> bool {
    let here = !matches!(
        e.kind,
        ExprKind::Index(..)
            | ExprKind::Vector { .. }
            | ExprKind::Assign(..)
            | ExprKind::Atomic(..)
            | ExprKind::ShflDown { .. }
            | ExprKind::HostCall(..)
            | ExprKind::Capture(_)
    );
    let mut all = here;
    e.for_each_child(&mut |c| all = all && reads_no_memory(c));
    all
}

/// Whether `a` and `b` are the same element: the same array at the same index, written
/// alike from the same locals (which nothing between the two stores assigns: only `let`s
/// are passed).
fn same_element(a: &Expr, b: &Expr) -> bool {
    match (&a.kind, &b.kind) {
        (ExprKind::Index(pa, ia, _), ExprKind::Index(pb, ib, _)) => {
            same_value(pa, pb) && same_value(ia, ib)
        }
        _ => false,
    }
}

/// Whether two index or pointer expressions are written alike (the shapes an element's
/// place takes; anything else counts as different).
fn same_value(a: &Expr, b: &Expr) -> bool {
    match (&a.kind, &b.kind) {
        (ExprKind::Local(x), ExprKind::Local(y)) => x == y,
        (ExprKind::Lit(Lit::Int(x, sx)), ExprKind::Lit(Lit::Int(y, sy))) => x == y && sx == sy,
        (ExprKind::Tid(x), ExprKind::Tid(y)) => x == y,
        (ExprKind::Size(x), ExprKind::Size(y)) => x == y,
        (
            ExprKind::Offset {
                off: oa, args: aa, ..
            },
            ExprKind::Offset {
                off: ob, args: ab, ..
            },
        ) => oa == ob && all_same(aa, ab),
        (
            ExprKind::GenericOffset {
                ty: ta,
                index: xa,
                args: aa,
                ..
            },
            ExprKind::GenericOffset {
                ty: tb,
                index: xb,
                args: ab,
                ..
            },
        ) => ta == tb && xa == xb && all_same(aa, ab),
        (ExprKind::Binary(oa, la, ra), ExprKind::Binary(ob, lb, rb)) => {
            oa == ob && same_value(la, lb) && same_value(ra, rb)
        }
        (ExprKind::Cast(xa, sa), ExprKind::Cast(xb, sb)) => sa == sb && same_value(xa, xb),
        _ => false,
    }
}

fn all_same(a: &[Expr], b: &[Expr]) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(x, y)| same_value(x, y))
}
