//! Half precision computed in `f32`: after the type check, every operation on `f16` or
//! `bf16` values becomes the same operation on their `f32` values, rounded back to the half
//! type (to nearest, ties to even) where its result is a half.
//!
//! So the back ends see halves only in storage, literals and three conversions (half to
//! `f32`, `f32` to half, `f64` to half), which each writes exactly. The result is the
//! correctly rounded half operation for `+ - * /` (an `f32` holds the exact product of two
//! halves, and 24 bits >= 2 x 11 + 2 make the double rounding of a sum or quotient
//! harmless), as `half::f16`'s operators and CUDA's `__hadd_rn`-family compute it. A method
//! (`exp`, `sqrt`, `mul_add`, ...) is its `f32` method, rounded.

use crate::ir::{Body, Diag, Expr, ExprKind, Lit, Method, PartMut, Scalar, Stmt, Ty, UnOp};
use crate::rounding;

/// Rewrites the typed `body` (its functions too) so that no operation takes a half
/// operand; reports the compound assignments it cannot rewrite.
pub(crate) fn widen(body: &mut Body) -> Vec<Diag> {
    let mut diags = Vec::new();
    for f in &mut body.functions {
        stmts(&mut f.stmts, &mut diags);
        if let Some(v) = &mut f.value {
            expr(v, &mut diags);
        }
    }
    stmts(&mut body.stmts, &mut diags);
    diags
}

fn stmts(list: &mut [Stmt], diags: &mut Vec<Diag>) {
    for s in list {
        s.for_each_part_mut(&mut |part| match part {
            PartMut::Expr(e) => expr(e, diags),
            PartMut::Body(b) => stmts(b, diags),
        });
        // Both back ends print an `f32` as they print an `f32`.
        if let Stmt::Print { args, .. } = s {
            for a in args.iter_mut().filter(|a| half(a.ty).is_some()) {
                to_f32(a);
            }
        }
    }
}

/// The half type of `t`, if it is one.
fn half(t: Ty) -> Option<Scalar> {
    t.scalar().filter(|s| s.is_half())
}

fn expr(e: &mut Expr, diags: &mut Vec<Diag>) {
    e.for_each_child_mut(&mut |c| expr(c, diags));
    let result = half(e.ty);
    match &mut e.kind {
        ExprKind::Binary(op, l, r) if half(l.ty).is_some() => {
            to_f32(l);
            to_f32(r);
            if !op.is_comparison() {
                round_to(e, result);
            }
        }
        ExprKind::Unary(UnOp::Neg, x) if half(x.ty).is_some() => {
            to_f32(x);
            round_to(e, result);
        }
        ExprKind::Method(m, recv, args) if half(recv.ty).is_some() => {
            let m = *m;
            to_f32(recv);
            for a in args.iter_mut().filter(|_| m != Method::Powi) {
                to_f32(a);
            }
            round_to(e, result);
        }
        // `h as f16` of an `f16`: no conversion at all.
        ExprKind::Cast(x, to) if to.is_half() && x.ty == Ty::Scalar(*to) => {
            *e = std::mem::replace(&mut **x, dummy());
        }
        ExprKind::Cast(x, to) => {
            let (from, to) = (x.ty.scalar(), *to);
            match (from.filter(|s| s.is_half()), to.is_half()) {
                // A conversion of the back ends, or none.
                (Some(_), _) if to == Scalar::F32 => {}
                (_, true) if matches!(from, Some(Scalar::F32 | Scalar::F64)) => {}
                _ if from == Some(to) => {}
                // From a half: exact in `f32`, then `f32`'s cast (to another half too).
                (Some(_), _) => to_f32(x),
                // To a half from an integer (or a host value): exact in `f64` up to 2^53,
                // and 53 bits round an `i64` once more without harm.
                (None, true) => cast(x, Scalar::F64),
                (None, false) => {}
            }
        }
        ExprKind::Assign(Some(_), place, _) if half(place.ty).is_some() => {
            compound_assign(e, diags)
        }
        _ => {}
    }
}

/// `place op= value` on a half place becomes `place = ((place as f32) op (value as f32))
/// as half`, which reads the place twice: so it may not update anything itself.
fn compound_assign(e: &mut Expr, diags: &mut Vec<Diag>) {
    let ExprKind::Assign(op @ Some(_), place, value) = &mut e.kind else {
        unreachable!("a compound assignment")
    };
    if let Some(span) = side_effect(place) {
        diags.push(Diag::new(
            span,
            "a compound assignment to a half reads it and writes it back through `f32`, so its place may not update anything itself: compute the index first (`let k = ...;`)",
        ));
        return;
    }
    let h = half(place.ty).expect("a half place");
    let mut read = (**place).clone();
    to_f32(&mut read);
    to_f32(value);
    let span = value.span;
    let operand = std::mem::replace(value, Box::new(dummy()));
    let mut result = Expr::new(
        ExprKind::Binary(op.take().expect("compound"), Box::new(read), operand),
        span,
    );
    result.ty = Ty::Scalar(Scalar::F32);
    cast(&mut result, h);
    **value = result;
}

/// `e`, an operation now on `f32`s, computed in `f32` and rounded to `result` (its half
/// type).
fn round_to(e: &mut Expr, result: Option<Scalar>) {
    if let Some(h) = result {
        e.ty = Ty::Scalar(Scalar::F32);
        cast(e, h);
    }
}

/// `x` read as an `f32`: a half literal becomes the `f32` literal of its value (exact).
fn to_f32(x: &mut Expr) {
    if let (ExprKind::Lit(Lit::Float(digits, _)), Some(h)) = (&x.kind, half(x.ty)) {
        if let Some(bits) = rounding::literal_bits(digits, h) {
            x.kind = ExprKind::Lit(Lit::Float(
                format!("{:?}", rounding::value(bits, h)),
                Some(Scalar::F32),
            ));
            x.ty = Ty::Scalar(Scalar::F32);
            return;
        }
    }
    cast(x, Scalar::F32);
}

/// Replaces `x` by `x as to`.
fn cast(x: &mut Expr, to: Scalar) {
    let span = x.span;
    let inner = std::mem::replace(x, dummy());
    *x = Expr::new(ExprKind::Cast(Box::new(inner), to), span);
    x.ty = Ty::Scalar(to);
}

/// A placeholder while a node moves.
fn dummy() -> Expr {
    Expr::new(
        ExprKind::Lit(Lit::Bool(false)),
        crate::CodeSpan::call_site(),
    )
}

/// The span of an update (an assignment, atomic or shuffle) or a call inside `e`.
fn side_effect(e: &Expr) -> Option<crate::CodeSpan> {
    if matches!(
        e.kind,
        ExprKind::Assign(..)
            | ExprKind::Atomic(..)
            | ExprKind::ShflDown { .. }
            | ExprKind::HostCall(..)
    ) {
        return Some(e.span);
    }
    let mut found = None;
    e.for_each_child(&mut |c| found = found.or_else(|| side_effect(c)));
    found
}
