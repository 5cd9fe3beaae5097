//! Type inference and checking of a body, with Rust's rules: every expression gets one
//! type, operands of an arithmetic operator have the same type (no implicit conversion),
//! an unsuffixed literal takes its type from its use (`let mut t = 0.0; t += x as f64;`
//! makes `t` an `f64`) and defaults to `i32` or `f64`. Both back ends print the types this
//! pass decides, so the Rust and the CUDA C of a body compute in the same types.
//!
//! Post-condition of [`check`] returning `Ok`: every [`Expr::ty`] and every
//! [`crate::ir::Local::ty`] is a concrete type (no [`Ty::Infer`], no [`Ty::Generic`]),
//! and each generic function has one instance per types, named by them (`sq_f32`).
//!
//! A generic function's instance (one per call) is checked as Rust checks the generic
//! function: its type parameters are rigid there (a literal or another type is not `T`);
//! the body's calls then give each instance its types.

use crate::CodeSpan;

use crate::ir::{
    lane, lane_scalar, lanes, move_vector_of, visit_expr_mut, visit_exprs_mut, AtomicOp, BinOp,
    Body, Bound, Diag, Expr, ExprKind, Function, Len, Lit, LocalId, Method, Part, PartMut, Scalar,
    Stmt, Ty, UnOp, MMA_K, MMA_M, MMA_N, WARP,
};
use parray_layout::kinds::{ElemType, MemKind, Record};

/// A body [`check`] typed: every expression and local has a concrete type. Only
/// `check` makes one.
#[derive(Debug, Clone)]
pub struct Typed(Body);

impl Typed {
    pub fn body(&self) -> &Body {
        &self.0
    }

    /// Asks for `__launch_bounds__` ([`Body::launch_bounds`]), which no pass reads.
    /// The body, for the pass that turns it into the next typed result.
    pub(crate) fn into_body(self) -> Body {
        self.0
    }

    pub fn set_launch_bounds(&mut self, bounds: Option<(u32, u32)>) {
        self.0.launch_bounds = bounds;
    }

    /// [`Body::tids_at_launch`].
    pub fn set_tids_at_launch(&mut self) {
        self.0.tids_at_launch = true;
    }
}

/// Infers and checks the types of `body`; all problems are reported together (with the
/// body as far as it was typed, for messages that read it).
pub fn check(mut body: Body) -> Result<Typed, Box<(Body, Vec<Diag>)>> {
    // The type parameters of generic instances are the first inference variables.
    let (slots, bounds): (Vec<String>, Vec<Bound>) = body.type_params.iter().cloned().unzip();
    let mut cx = Checker {
        target: body.target,
        body_locals: body.locals.iter().map(|l| l.ty.map(open)).collect(),
        vars: Vec::new(),
        diags: Vec::new(),
        signatures: body
            .functions
            .iter()
            .map(|f| {
                let declared: Vec<Ty> = f
                    .params
                    .iter()
                    .map(|p| body.local(*p).ty.expect("declared"))
                    .collect();
                let type_args = f
                    .generics
                    .iter()
                    .zip(&f.type_args)
                    .filter_map(|((name, param), given)| {
                        let (ty, span) = given.as_ref()?;
                        Some((name.clone(), open(*param), open(*ty), *span))
                    })
                    .collect();
                Signature {
                    name: f.name.clone(),
                    shown: declared.iter().map(|t| shown(*t, &slots)).collect(),
                    params: declared.into_iter().map(open).collect(),
                    ret: open(f.ret),
                    type_args,
                }
            })
            .collect(),
        rigid: Vec::new(),
        slots,
    };
    for bound in bounds {
        cx.fresh(match bound {
            Bound::Element => Kind::Element,
            Bound::Num => Kind::Num,
            Bound::Float => Kind::FloatParam,
        });
    }
    // Each function on its own: its parameters' and its value's types are declared.
    let mut functions = std::mem::take(&mut body.functions);
    for f in &mut functions {
        cx.rigid = f.generics.iter().map(|(_, t)| slot(*t)).collect();
        cx.stmts(&mut f.stmts, &body);
        match &mut f.value {
            Some(v) => {
                let t = cx.expr(v, &body);
                let what = format!(
                    "the value of `{}`, declared `{}`",
                    f.name,
                    shown(f.ret, &cx.slots)
                );
                cx.unify(open(f.ret), t, v.span, &what);
            }
            None if f.ret != Ty::Unit => cx.fail(
                f.span,
                format!(
                    "`{}` returns `{}`: end it with the value, as its last expression (no `;`)",
                    f.name,
                    shown(f.ret, &cx.slots)
                ),
            ),
            None => {}
        }
        cx.rigid.clear();
    }
    // A host value takes the type its uses give it (any number or vector).
    for id in &body.captures {
        cx.body_locals[id.0 as usize] = Some(cx.fresh(Kind::Any));
    }
    let mut stmts = std::mem::take(&mut body.stmts);
    cx.stmts(&mut stmts, &body);
    for id in &body.captures {
        let local = body.local(*id);
        let (name, span) = (local.name.clone(), local.span);
        match cx.body_locals[id.0 as usize].map(|t| cx.resolve(t)) {
            Some(Ty::Scalar(
                Scalar::I32
                | Scalar::U32
                | Scalar::I64
                | Scalar::U64
                | Scalar::Usize
                | Scalar::F32
                | Scalar::F64
                | Scalar::F16
                | Scalar::Bf16,
            ))
            | Some(Ty::Host)
            | None => {}
            Some(Ty::Infer(v)) => {
                let example = match cx.vars[v as usize].kind {
                    Kind::Int => "usize",
                    Kind::Float => "f32",
                    Kind::Any | Kind::Element | Kind::Num | Kind::FloatParam => "f32",
                };
                cx.fail(span, format!("the body does not fix the type of the host value `{name}` (a cast or a literal does not): say it where the body first reads it, `let {name}: {example} = {name};` with the type the host's `{name}` has"));
            }
            Some(t) => cx.fail(span, format!("the host value `{name}` is used as `{t}`: a cuda body receives host values by value as numbers (i32, u32, i64, u64, usize, f32, f64, f16, bf16); convert it on the host first (`let {name} = {name} as i32;`)")),
        }
    }
    // Resolve and apply the final types.
    for (local, ty) in body.locals.iter_mut().zip(cx.body_locals.clone()) {
        local.ty = ty.map(|t| cx.finish_ty(t));
    }
    cx.finish_stmts(&mut stmts, &body);
    for f in &mut functions {
        cx.finish_stmts(&mut f.stmts, &body);
        if let Some(v) = &mut f.value {
            cx.finish_expr(v);
        }
        f.ret = cx.finish_ty(open(f.ret));
        for (_, t) in &mut f.generics {
            *t = cx.finish_ty(open(*t));
        }
    }
    body.stmts = stmts;
    body.functions = functions;
    one_instance_each(&mut body);
    if cx.diags.is_empty() {
        cx.diags = super::widen::widen(&mut body);
        super::stores::group_field_stores(&mut body);
    }
    if cx.diags.is_empty() {
        Ok(Typed(body))
    } else {
        Err(Box::new((body, cx.diags)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Int,
    Float,
    /// A number or vector of any type (a host value a cuda body reads).
    Any,
    /// An element of any type (a number but `bool`, `u64` and `usize`, a vector, a
    /// record): a type parameter bounded by `parray::Element`.
    Element,
    /// A number of any type but `bool`: a type parameter (`T: parray::Num`).
    Num,
    /// A float of any type: a type parameter bounded by `parray::Float`.
    FloatParam,
}

/// Whether a variable of this kind is a type parameter's.
fn is_param(kind: Kind) -> bool {
    param_bound(kind).is_some()
}

/// The bound of a type parameter's variable of this kind.
fn param_bound(kind: Kind) -> Option<Bound> {
    match kind {
        Kind::Element => Some(Bound::Element),
        Kind::Num => Some(Bound::Num),
        Kind::FloatParam => Some(Bound::Float),
        _ => None,
    }
}

/// A declared type as the check sees it: a type parameter is its inference variable.
fn open(t: Ty) -> Ty {
    match t {
        Ty::Generic(s) => Ty::Infer(s),
        t => t,
    }
}

/// The inference variable of a type parameter.
fn slot(t: Ty) -> u32 {
    match t {
        Ty::Generic(s) => s,
        _ => unreachable!("a type parameter before the check"),
    }
}

/// A declared type as the user wrote it (a type parameter by its name).
fn shown(t: Ty, slots: &[String]) -> String {
    match t {
        Ty::Generic(s) => slots[s as usize].clone(),
        Ty::PtrTo(s) => format!("a pointer to {}", slots[s as usize]),
        t => t.to_string(),
    }
}

/// Keeps the first instance of each generic function and types, names it by them
/// (`sq_f32`), and makes every call of a later one call it. The first comes before any
/// other, so callees still come before their callers.
fn one_instance_each(body: &mut Body) {
    let mut kept: Vec<Function> = Vec::new();
    let mut to: Vec<usize> = Vec::new();
    for f in std::mem::take(&mut body.functions) {
        let same = |k: &Function| k.name == f.name && k.generics == f.generics;
        match kept.iter().position(same) {
            Some(k) if !f.generics.is_empty() => to.push(k),
            _ => {
                to.push(kept.len());
                kept.push(f);
            }
        }
    }
    let mut renumber = |e: &mut Expr| {
        if let ExprKind::Call(f, _, _) = &mut e.kind {
            *f = to[*f];
        }
    };
    visit_exprs_mut(&mut body.stmts, &mut renumber);
    for f in &mut kept {
        visit_exprs_mut(&mut f.stmts, &mut renumber);
        if let Some(v) = &mut f.value {
            visit_expr_mut(v, &mut renumber);
        }
    }
    for f in kept.iter_mut().filter(|f| !f.generics.is_empty()) {
        let types: Vec<String> = f.generics.iter().map(|(_, t)| t.to_string()).collect();
        f.name = format!("{}_{}", f.name, types.join("_"));
    }
    body.functions = kept;
}

/// An inference variable: a union-find node, its kind, and its type once known.
struct Var {
    parent: u32,
    kind: Kind,
    bound: Option<Ty>,
}

/// What a call of a function needs of it.
struct Signature {
    name: String,
    params: Vec<Ty>,
    /// The parameters' types as declared, for messages.
    shown: Vec<String>,
    ret: Ty,
    /// The types its call gives its type parameters by turbofish: each parameter's name,
    /// its variable and the type given, at the span of the type written.
    type_args: Vec<(String, Ty, Ty, CodeSpan)>,
}

struct Checker {
    target: crate::ir::Target,
    /// The body's functions', by index.
    signatures: Vec<Signature>,
    /// The locals' types as inference goes (`None`: not yet declared).
    body_locals: Vec<Option<Ty>>,
    vars: Vec<Var>,
    diags: Vec<Diag>,
    /// The type parameters' names, by their inference variable (the first ones).
    slots: Vec<String>,
    /// The type parameters of the generic instance being checked: no other type unifies
    /// with them (Rust's check of the generic function).
    rigid: Vec<u32>,
}

impl Checker {
    fn fail(&mut self, span: CodeSpan, msg: impl Into<String>) {
        self.diags.push(Diag::new(span, msg));
    }

    fn fresh(&mut self, kind: Kind) -> Ty {
        let id = self.vars.len() as u32;
        self.vars.push(Var {
            parent: id,
            kind,
            bound: None,
        });
        Ty::Infer(id)
    }

    fn root(&mut self, mut v: u32) -> u32 {
        while self.vars[v as usize].parent != v {
            let p = self.vars[v as usize].parent;
            self.vars[v as usize].parent = self.vars[p as usize].parent;
            v = p;
        }
        v
    }

    /// The type as far as it is known now (a pointer to a type parameter whose element is
    /// known is a pointer to that element).
    fn resolve(&mut self, t: Ty) -> Ty {
        match t {
            Ty::Infer(v) => {
                let r = self.root(v);
                self.vars[r as usize].bound.unwrap_or(Ty::Infer(r))
            }
            Ty::PtrTo(v) => match self.resolve(Ty::Infer(v)) {
                Ty::Infer(r) => Ty::PtrTo(r),
                known => match known.as_elem() {
                    Some(elem) => Ty::Ptr { elem, soa: false },
                    // Not an element: its error was reported where it was bound.
                    None => Ty::Host,
                },
            },
            t => t,
        }
    }

    fn kind_accepts(kind: Kind, t: Ty) -> bool {
        match (kind, t) {
            (_, Ty::Host) => true,
            (Kind::Any, t) => matches!(t, Ty::Scalar(_) | Ty::Vector(_)),
            (Kind::Int, Ty::Scalar(s)) => s.is_int(),
            (Kind::Float, Ty::Scalar(s)) => s.is_float(),
            (Kind::Element, t) => t.as_elem().is_some(),
            (Kind::Num, Ty::Scalar(s)) => s != Scalar::Bool,
            (Kind::FloatParam, Ty::Scalar(s)) => s.is_float(),
            _ => false,
        }
    }

    /// Makes `a` and `b` the same type; `what` says where, for the error.
    fn unify(&mut self, a: Ty, b: Ty, span: CodeSpan, what: &str) -> Ty {
        let (a, b) = (self.resolve(a), self.resolve(b));
        match (a, b) {
            _ if a == b => a,
            (Ty::Infer(x), Ty::Infer(y)) => {
                // A type parameter stays the root (what joins it is it): a root of kind
                // `Num` is a type parameter's variable, which names it.
                let rank =
                    |v: u32, cx: &Self| (cx.rigid.contains(&v), is_param(cx.vars[v as usize].kind));
                let (x, y) = match rank(y, self) > rank(x, self) {
                    true => (y, x),
                    false => (x, y),
                };
                let (kx, ky) = (self.vars[x as usize].kind, self.vars[y as usize].kind);
                // A `T: Num` may stand where a `U: Float` is asked only if it is one (and a
                // `T: Element` where a `U: Num` is).
                let narrower = matches!(
                    (param_bound(kx), param_bound(ky)),
                    (Some(bx), Some(by)) if bx < by
                );
                if self.rigid.contains(&x) && (self.rigid.contains(&y) || !is_param(ky) || narrower)
                {
                    let t = &self.slots[x as usize];
                    let help = match ky {
                        Kind::Float if kx != Kind::Element => format!("write `{t}::from_f32(..)` of it"),
                        Kind::Int if kx != Kind::Element => format!("write `{t}::from_i32(..)` of it"),
                        _ => format!("pass the value in as a parameter of type `{t}`, or write the function for one type"),
                    };
                    let other = match ky {
                        Kind::Int => "an integer literal".to_string(),
                        Kind::Float => "a float literal".to_string(),
                        Kind::Element | Kind::Num | Kind::FloatParam => {
                            format!("`{}`", self.slots[y as usize])
                        }
                        Kind::Any => "a value of another type".to_string(),
                    };
                    let wider = param_bound(ky).map_or("", |b| b.trait_name());
                    let other = match narrower && !self.rigid.contains(&y) {
                        true => format!("the type parameter `{t}` (bounded by `{}`) where a `{wider}` is expected", param_bound(kx).map_or("", |b| b.trait_name())),
                        false => format!("{other} where the type parameter `{t}` is expected"),
                    };
                    let help = match narrower && !self.rigid.contains(&y) {
                        true => format!("bound `{t}` by `{wider}`"),
                        false => help,
                    };
                    self.fail(span, format!("mismatched types in {what}: {other} (Rust converts nothing to a type parameter): {help}"));
                    return Ty::Host;
                }
                let kind = match (kx, ky) {
                    (Kind::Any, k)
                    | (k, Kind::Any)
                    | (Kind::Element, k)
                    | (k, Kind::Element)
                    | (Kind::Num, k)
                    | (k, Kind::Num) => k,
                    (Kind::FloatParam, Kind::Float) | (Kind::Float, Kind::FloatParam) => {
                        Kind::Float
                    }
                    (k, l) if k == l => k,
                    (Kind::FloatParam, _) | (_, Kind::FloatParam) => {
                        let p = &self.slots[if kx == Kind::FloatParam { x } else { y } as usize];
                        self.fail(span, format!("mismatched types in {what}: an integer where the type parameter `{p}` is expected, a float type (`parray::Float`: f32, f64, f16, bf16)"));
                        return Ty::Host;
                    }
                    _ => {
                        self.fail(span, format!("mismatched types in {what}: an integer and a float (Rust converts no number implicitly: write a cast, such as `as f32`)"));
                        // Reported once: the rest of the expression checks against anything.
                        return Ty::Host;
                    }
                };
                self.vars[x as usize].kind = kind;
                self.vars[y as usize].parent = x;
                Ty::Infer(x)
            }
            (Ty::Infer(x), t) | (t, Ty::Infer(x)) if self.rigid.contains(&x) && t != Ty::Host => {
                let p = &self.slots[x as usize];
                self.fail(span, format!("mismatched types in {what}: `{t}` where the type parameter `{p}` is expected (a generic function computes on `{p}` alone)"));
                Ty::Host
            }
            (Ty::Infer(x), t) | (t, Ty::Infer(x)) => {
                let kind = self.vars[x as usize].kind;
                if Self::kind_accepts(kind, t) {
                    self.vars[x as usize].bound = Some(t);
                    t
                } else {
                    let lit = match kind {
                        Kind::Int => "an integer",
                        Kind::Float => "a float",
                        Kind::Any => "a host value",
                        Kind::Element => {
                            let p = &self.slots[x as usize];
                            self.fail(span, format!("mismatched types in {what}: `{t}` where the type parameter `{p}` is expected, an element type (`parray::Element`: i8, u8, i32, u32, i64, f32, f64, f16, bf16, a vector or a record)"));
                            return Ty::Host;
                        }
                        Kind::Num => {
                            let p = &self.slots[x as usize];
                            self.fail(span, format!("mismatched types in {what}: `{t}` where the type parameter `{p}` is expected, a number type (`parray::Num`: i8, u8, i32, u32, i64, u64, usize, f32, f64, f16, bf16)"));
                            return Ty::Host;
                        }
                        Kind::FloatParam => {
                            let p = &self.slots[x as usize];
                            self.fail(span, format!("mismatched types in {what}: `{t}` where the type parameter `{p}` is expected, a float type (`parray::Float`: f32, f64, f16, bf16)"));
                            return Ty::Host;
                        }
                    };
                    self.fail(
                        span,
                        format!(
                            "mismatched types in {what}: {lit} where `{t}` is expected (write a literal of that type, or a cast)"
                        ),
                    );
                    Ty::Host
                }
            }
            (Ty::Host, _) | (_, Ty::Host) => Ty::Host,
            // Pointers to type parameters: their elements are the same type.
            (Ty::PtrTo(x), Ty::PtrTo(y)) => {
                match self.unify(Ty::Infer(x), Ty::Infer(y), span, what) {
                    Ty::Host => Ty::Host,
                    _ => self.resolve(Ty::PtrTo(x)),
                }
            }
            (Ty::PtrTo(x), Ty::Ptr { elem, soa: false })
            | (Ty::Ptr { elem, soa: false }, Ty::PtrTo(x)) => {
                match self.unify(Ty::Infer(x), Ty::of_elem(elem), span, what) {
                    Ty::Host => Ty::Host,
                    _ => Ty::Ptr { elem, soa: false },
                }
            }
            _ => {
                self.fail(
                    span,
                    format!("mismatched types in {what}: `{a}` and `{b}` (Rust converts no number implicitly: write a cast, such as `as {a}`)"),
                );
                Ty::Host
            }
        }
    }

    /// Whether `t` is a type parameter bounded by `parray::Element` alone, which moves
    /// values and has no operators, methods, fields or conversions: then `what` on it (a
    /// `field` of it, or an operation) is an error at `span`.
    fn refuse_element(&mut self, t: Ty, span: CodeSpan, what: &str, field: bool) -> bool {
        let Ty::Infer(v) = self.resolve(t) else {
            return false;
        };
        if !self.rigid.contains(&v) || self.vars[v as usize].kind != Kind::Element {
            return false;
        }
        let p = self.slots[v as usize].clone();
        let help = match field {
            true => "a field is its record's: write the function for the record",
            false => "bound it by `parray::Num` for the operators and conversions, or write the function for one type",
        };
        self.fail(span, format!("{what} is not defined for the type parameter `{p}` (`parray::Element` moves, loads and stores values alone): {help}"));
        true
    }

    fn local_ty(&mut self, id: LocalId, span: CodeSpan, name: &str) -> Ty {
        match self.body_locals[id.0 as usize] {
            Some(t) => t,
            None => {
                self.fail(span, format!("`{name}` is used before it has a value"));
                Ty::Host
            }
        }
    }

    fn stmts(&mut self, stmts: &mut [Stmt], body: &Body) {
        for s in stmts {
            self.stmt(s, body);
        }
    }

    fn stmt(&mut self, s: &mut Stmt, body: &Body) {
        match s {
            Stmt::Let { local, init, loc } => {
                let declared = self.body_locals[local.0 as usize];
                match (init, declared) {
                    (Some(e), Some(t)) => {
                        let v = self.expr(e, body);
                        self.unify(t, v, e.span, "this `let`");
                    }
                    (Some(e), None) => {
                        let v = self.expr(e, body);
                        if v == Ty::Unit {
                            self.fail(e.span, "this expression has no value to bind");
                        }
                        if matches!(v, Ty::Array { .. }) {
                            self.fail(
                                e.span,
                                "an array created in a body keeps its one name: index it directly",
                            );
                        }
                        self.body_locals[local.0 as usize] = Some(v);
                    }
                    (None, Some(_)) => {}
                    (None, None) => self.fail(
                        loc.span,
                        "a `let` without a value needs a type: `let x: f32;`",
                    ),
                }
            }
            Stmt::Create {
                local,
                elem,
                mem,
                len,
                soa,
                ..
            } => {
                self.body_locals[local.0 as usize] = Some(Ty::Array {
                    elem: *elem,
                    mem: *mem,
                    len: *len,
                    soa: *soa,
                });
            }
            Stmt::Expr { expr, .. } => {
                self.expr(expr, body);
            }
            Stmt::If {
                cond, then, els, ..
            } => {
                self.condition(cond, body);
                self.stmts(then, body);
                if let Some(e) = els {
                    self.stmts(e, body);
                }
            }
            Stmt::While { cond, body: b, .. } => {
                self.condition(cond, body);
                self.stmts(b, body);
            }
            Stmt::For {
                var,
                start,
                end,
                body: b,
                ..
            } => {
                let (s, e) = (self.expr(start, body), self.expr(end, body));
                let t = self.unify(s, e, end.span, "the bounds of this range");
                self.body_locals[var.0 as usize] = Some(t);
                self.stmts(b, body);
            }
            Stmt::Block { body: b, .. } => self.stmts(b, body),
            Stmt::Async { body: b, .. } => {
                self.stmts(b, body);
                if body.target == crate::ir::Target::Cuda {
                    self.async_bases(b);
                }
            }
            Stmt::Vectorised {
                vector,
                scalar,
                guard,
                ..
            } => {
                self.stmts(vector, body);
                self.stmts(scalar, body);
                // The guard's copy in `scalar` reports its mistakes; these are for the
                // prover.
                if let Some(g) = guard {
                    let reported = self.diags.len();
                    self.condition(&mut g.pred, body);
                    self.stmts(&mut g.unguarded, body);
                    self.condition(&mut g.at_most, body);
                    self.stmts(&mut g.per_vector, body);
                    if let Some(w) = &mut g.whole {
                        // Its loop gives the vector's variable its type first.
                        self.stmts(&mut w.moves, body);
                        self.condition(&mut w.first, body);
                        self.condition(&mut w.last, body);
                    }
                    self.diags.truncate(reported);
                }
            }
            // Its element loop holds every expression of the copy.
            Stmt::GenericCopy { scalar, .. } => self.stmts(scalar, body),
            // Its moves report the copy's mistakes; the rows' address reaches the same
            // arrays, at an offset of the lane's digits.
            Stmt::Matrices {
                regs,
                base,
                at,
                scalar,
                ..
            } => {
                self.stmts(scalar, body);
                let reported = self.diags.len();
                self.expr(regs, body);
                self.expr(base, body);
                let t = self.expr(at, body);
                self.unify(Ty::USIZE, t, at.span, "this offset");
                self.diags.truncate(reported);
            }
            Stmt::Print { args, .. } => {
                for a in args {
                    self.expr(a, body);
                }
            }
            Stmt::Mma {
                input,
                a,
                b,
                d,
                wgmma: Some(w),
                ..
            } => {
                for (e, what) in [(a, "A"), (b, "B")] {
                    let t = self.expr(e, body);
                    let shared = matches!(array_root(e).ty, Ty::Array { elem: x, mem: MemKind::Smem, soa: false, .. } if Scalar::of_elem(x) == Some(*input));
                    let ok = shared && matches!(t, Ty::Array { .. } | Ty::Ptr { .. });
                    if !ok {
                        self.fail(e.span, format!("{what} of a wgmma is a tile in shared memory: a shared array the body created (`let s = T::create();`), or one plus an offset, of `{}`, not `{t}`", input.rust_name()));
                    }
                }
                let part = u64::from(w.n) / 2;
                let t = self.expr(d, body);
                let ok = matches!(t, Ty::Array { elem: x, mem: MemKind::Rmem, len: Len::Fixed(l), soa: false } if Scalar::of_elem(x) == Some(Scalar::F32) && l == part);
                if !ok {
                    self.fail(d.span, format!("D of a wgmma is a thread's {part} registers of its accumulator type (an array that type's `create()` made), not `{t}`"));
                }
            }
            Stmt::MmaWait { d, regs, .. } => {
                let t = self.expr(d, body);
                let ok = matches!(t, Ty::Array { elem: x, mem: MemKind::Rmem, len: Len::Fixed(l), soa: false } if Scalar::of_elem(x) == Some(Scalar::F32) && l == u64::from(*regs));
                if !ok {
                    self.fail(d.span, format!("`#mma wait` names the accumulator of its asynchronous wgmmas, a thread's {regs} registers, not `{t}`"));
                }
            }
            Stmt::Mma { input, a, b, d, .. } => {
                let input = *input;
                let want = [
                    (a, input, MMA_M * MMA_K, "A"),
                    (b, input, MMA_K * MMA_N, "B"),
                    (d, Scalar::F32, MMA_M * MMA_N, "D"),
                ];
                for (e, elem, n, what) in want {
                    let part = (n / WARP as usize) as u64;
                    let t = self.expr(e, body);
                    let ok = matches!(t, Ty::Array { elem: x, mem: MemKind::Rmem, len: Len::Fixed(l), soa: false } if Scalar::of_elem(x) == Some(elem) && l == part);
                    if !ok {
                        self.fail(e.span, format!("{what} of `#mma` is a lane's {part} registers of its fragment type (an array that type's `create()` made), not `{t}`"));
                    }
                }
            }
            Stmt::Tma {
                src,
                offset,
                dst,
                bar,
                tma,
                ..
            } => {
                let t = self.expr(src, body);
                match self.resolve(t) {
                    Ty::Ptr { soa: false, elem } if elem.size_bytes() == tma.elem_bytes => {}
                    Ty::Ptr { soa: false, elem } => self.fail(src.span, format!("a TMA copy of `{}` moves elements of {} bytes, and its source points to {elem}: copy from a pointer to `{}`'s elements", tma.src_ty, tma.elem_bytes, tma.src_ty)),
                    _ => self.fail(src.span, format!("a TMA copy reads its box from global memory through a tensor map over an array the kernel is given: the source of `{}` is a pointer parameter of the kernel (plus an offset), not `{}`", tma.src_ty, shown(t, &self.slots))),
                }
                let t = self.expr(offset, body);
                self.unify(Ty::USIZE, t, offset.span, "this offset");
                let t = self.expr(dst, body);
                let shared = matches!(array_root(dst).ty, Ty::Array { mem: MemKind::Smem, soa: false, elem, .. } if elem.size_bytes() == tma.elem_bytes);
                if !shared || !matches!(t, Ty::Array { .. } | Ty::Ptr { .. }) {
                    self.fail(dst.span, format!("a TMA copy writes its box into shared memory: the destination of `{}` is a shared array the body created (`let s = T::create();`), or one plus an offset, not `{}`", tma.dst_ty, shown(t, &self.slots)));
                }
                self.barrier(bar, body, "`#copy async .. on`");
            }
            Stmt::MbarrierInit { bar, arrivals, .. } => {
                self.barrier(bar, body, "`#mbarrier init`");
                let t = self.expr(arrivals, body);
                self.unify(Ty::USIZE, t, arrivals.span, "the arrivals of a phase");
            }
            Stmt::MbarrierArrive { bar, .. } => self.barrier(bar, body, "`#mbarrier arrive`"),
            Stmt::MbarrierWait { bar, parity, .. } => {
                self.barrier(bar, body, "`#wait .. parity`");
                let t = self.expr(parity, body);
                self.unify(Ty::USIZE, t, parity.span, "a phase's parity (0 or 1)");
            }
            Stmt::Sync { .. }
            | Stmt::Wait { .. }
            | Stmt::MmaCommit { .. }
            | Stmt::SetMaxNreg { .. }
            | Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Return { .. } => {}
        }
    }

    /// The barrier operand of a TMA form (`what`): an mbarrier of a shared array of
    /// `mbarrier`s the body created, or one plus an offset (SPEC 3.9, "TMA copies").
    fn barrier(&mut self, bar: &mut Expr, body: &Body, what: &str) {
        let t = self.expr(bar, body);
        let ok = matches!(
            array_root(bar).ty,
            Ty::Array {
                elem: ElemType::Mbarrier,
                mem: MemKind::Smem,
                ..
            }
        ) && matches!(t, Ty::Array { .. } | Ty::Ptr { .. });
        if !ok {
            self.fail(bar.span, format!("{what} names an mbarrier: an element of a shared array of `mbarrier`s the body created (`smem mbarrier [S] FULL;`, `let full = FULL::create();`), as `FULL(full + i)`, not `{}`", shown(t, &self.slots)));
        }
    }

    /// A cuda body's `#copy async` (SPEC 3.9) moves from global memory, through a pointer,
    /// into a shared array the body created: `cp.async`'s two sides. Its moves are its
    /// assignments whose value is a load (the others are its fills).
    fn async_bases(&mut self, stmts: &[Stmt]) {
        // Each move's destination and source array (`None`: not a local's), and where.
        let mut moves = Vec::new();
        crate::ir::visit_exprs(stmts, &mut |e| {
            let ExprKind::Assign(None, place, value) = &e.kind else {
                return;
            };
            let base = |e: &Expr| match &e.kind {
                ExprKind::Index(b, ..) | ExprKind::Vector { base: b, .. } => match b.kind {
                    ExprKind::Local(id) => Some((Some(id), b.span)),
                    _ => Some((None, b.span)),
                },
                _ => None,
            };
            if let Some(dst) = base(place) {
                moves.push((dst, base(value)));
            }
        });
        let mut ty = |id: Option<LocalId>| {
            let t = id.and_then(|id| self.body_locals[id.0 as usize]);
            t.map(|t| self.resolve(t))
        };
        let mut wrong = None;
        for ((dst, at), src) in moves {
            if !matches!(
                ty(dst),
                Some(Ty::Array {
                    mem: MemKind::Smem,
                    ..
                })
            ) {
                wrong = Some((at, "its destination must be a shared array the body created (`let s = S::create();` of an smem type)"));
            }
            if let Some((src, at)) = src {
                if !matches!(ty(src), Some(Ty::Ptr { .. })) {
                    wrong = Some((
                        at,
                        "its source must be global memory, a pointer the kernel is given",
                    ));
                }
            }
        }
        // One error a copy: its moves all have the same two sides.
        if let Some((at, why)) = wrong {
            self.fail(at, format!("`#copy async` copies from global memory into shared memory (`cp.async`): {why}; copy without `async` otherwise"));
        }
    }

    fn condition(&mut self, cond: &mut Expr, body: &Body) {
        let t = self.expr(cond, body);
        self.unify(Ty::BOOL, t, cond.span, "this condition");
    }

    fn expr(&mut self, e: &mut Expr, body: &Body) -> Ty {
        if matches!(e.kind, ExprKind::Vector { .. }) {
            return self.vector(e, body, false);
        }
        let span = e.span;
        let ty = match &mut e.kind {
            ExprKind::Lit(Lit::Int(_, Some(s)) | Lit::Float(_, Some(s))) => Ty::Scalar(*s),
            ExprKind::Lit(Lit::Int(_, None)) => self.fresh(Kind::Int),
            ExprKind::Lit(Lit::Float(_, None)) => self.fresh(Kind::Float),
            ExprKind::Lit(Lit::Bool(_)) => Ty::BOOL,
            ExprKind::NumberConst(c) => Ty::Scalar(c.ty),
            ExprKind::Local(id) => {
                let name = body.local(*id).name.clone();
                self.local_ty(*id, span, &name)
            }
            ExprKind::Capture(_) => Ty::Host,
            ExprKind::HostCall(_, args) => {
                // rustc types the arguments of a Rust function.
                for a in args {
                    let t = self.expr(a, body);
                    self.unify(Ty::Host, t, a.span, "an argument");
                }
                Ty::Host
            }
            ExprKind::Tid(_)
            | ExprKind::Size(_)
            | ExprKind::GenericSize { .. }
            | ExprKind::RuntimeConst { .. } => Ty::USIZE,
            ExprKind::Cnt(_) => Ty::BOOL,
            ExprKind::Offset { args, .. } | ExprKind::GenericOffset { args, .. } => {
                for a in args {
                    let t = self.expr(a, body);
                    self.require_int(t, a.span, "an index");
                }
                Ty::USIZE
            }
            ExprKind::Unary(op, x) => {
                let t = self.expr(x, body);
                if *op == UnOp::Not && self.resolve(t) == Ty::BOOL {
                    Ty::BOOL
                } else if self.refuse_element(t, x.span, "`-` or `!`", false) {
                    Ty::Host
                } else {
                    self.require_number(t, x.span, "an operand of `-` or `!`");
                    t
                }
            }
            ExprKind::Binary(op, l, r) => {
                let op = *op;
                let (tl, tr) = (self.expr(l, body), self.expr(r, body));
                self.binary(op, tl, tr, l.span, r.span, span)
            }
            ExprKind::Assign(op, place, value) => {
                let tp = if matches!(place.kind, ExprKind::Vector { .. }) {
                    self.vector(place, body, true)
                } else {
                    self.expr(place, body)
                };
                let tv = self.expr(value, body);
                if let ExprKind::Field(element, _) = &place.kind {
                    let of = self.resolve(element.ty);
                    // The element under the fields of records inside it, if it is one.
                    let mut root = &**element;
                    while let ExprKind::Field(base, _) = &root.kind {
                        root = base;
                    }
                    let (what, place_text) = match &element.kind {
                        ExprKind::Field(..) => ("a vector field of an element", "p[i].f"),
                        _ => ("a vector element", "a[i]"),
                    };
                    if matches!(root.kind, ExprKind::Index(..)) && matches!(of, Ty::Vector(_)) {
                        self.fail(place.span, format!("{what} is assigned whole: `{place_text} = {of}::new(...)` (or through a local: `let mut v = {place_text}; v.x = ...; {place_text} = v;`)"));
                    }
                }
                let stored = match (tp, &place.kind) {
                    (Ty::Vector(v), ExprKind::Vector { lanes, .. }) => Some((v, *lanes)),
                    (_, ExprKind::Vector { .. }) => Some((ElemType::Float, 0)),
                    _ => None,
                };
                if let ExprKind::Local(id) = place.kind {
                    let local = body.local(id);
                    if body.captures.contains(&id) {
                        self.fail(
                            place.span,
                            format!(
                                "cannot assign to the host value `{0}`: a cuda body receives it by value, and the host's `{0}` would not change; copy it into a local first (`let mut {0} = {0};`), or write results to an array",
                                local.name
                            ),
                        );
                    } else if !local.mutable {
                        self.fail(
                            place.span,
                            format!(
                                "cannot assign to `{}`: declare it `let mut {}`",
                                local.name, local.name
                            ),
                        );
                    }
                }
                match (op, stored) {
                    // `store2`/`store4` (the lowering makes no compound assignment of them).
                    (_, Some((v, lanes))) => {
                        let t = self.resolve(tv);
                        if lanes > 0 && t != tp && t != Ty::Host {
                            self.fail(
                                value.span,
                                format!(
                                    "`store{lanes}` here stores a `{v}` (`{v}::new(...)`, or a `load{lanes}`), not `{t}`",
                                    v = v.rust_type()
                                ),
                            );
                        }
                    }
                    (Some(op), None) => {
                        let t = self.binary(*op, tp, tv, place.span, value.span, span);
                        // `s += v`: a scalar cannot hold the vector `s + v`.
                        let (t, tp) = (self.resolve(t), self.resolve(tp));
                        if matches!(t, Ty::Vector(_)) && !matches!(tp, Ty::Vector(_) | Ty::Host) {
                            let message =
                                format!("`{}=` would store a `{t}` in a `{tp}`", op.symbol());
                            self.fail(value.span, message);
                        }
                    }
                    (None, None) => {
                        self.unify(tp, tv, value.span, "this assignment");
                    }
                }
                Ty::Unit
            }
            ExprKind::Cast(x, s) => {
                let t = self.expr(x, body);
                let t = self.resolve(t);
                if !self.refuse_element(t, x.span, "`as`", false)
                    && !matches!(t, Ty::Scalar(_) | Ty::Infer(_) | Ty::Host)
                {
                    self.fail(
                        x.span,
                        format!("`{t}` cannot be cast to `{}`", s.rust_name()),
                    );
                }
                Ty::Scalar(*s)
            }
            ExprKind::Convert(x, t, Some(from)) => {
                let tx = self.expr(x, body);
                let p = shown(*t, &self.slots);
                let what = format!("the argument of `{p}::from_{}`", from.rust_name());
                self.unify(Ty::Scalar(*from), tx, x.span, &what);
                open(*t)
            }
            ExprKind::Convert(x, t, None) => {
                let tx = self.expr(x, body);
                let tx = self.resolve(tx);
                let what = format!("`to_{t}`");
                if !self.refuse_element(tx, x.span, &what, false)
                    && !matches!(tx, Ty::Scalar(s) if s != Scalar::Bool)
                    && !matches!(tx, Ty::Infer(_) | Ty::Host)
                {
                    self.fail(
                        x.span,
                        format!(
                            "`to_{t}` converts a number (or a value of a type parameter), not `{}`",
                            shown(tx, &self.slots)
                        ),
                    );
                }
                *t
            }
            ExprKind::Index(base, ix, _) => {
                let tb = self.expr(base, body);
                let ti = self.expr(ix, body);
                self.unify(Ty::USIZE, ti, ix.span, "this index (indices are `usize`)");
                match self.resolve(tb) {
                    Ty::Ptr {
                        elem: ElemType::Mbarrier,
                        ..
                    }
                    | Ty::Array {
                        elem: ElemType::Mbarrier,
                        ..
                    } => {
                        self.fail(base.span, "an `mbarrier` is touched by no access but the forms `#mbarrier init B(b) arrivals N;`, `#copy async S(p) to D(q) on B(b);`, `#wait B(b) parity P;` and `#mbarrier arrive B(b);` (SPEC 3.9, \"TMA copies\")");
                        Ty::Host
                    }
                    Ty::Ptr { elem: el, .. } | Ty::Array { elem: el, .. } => Ty::of_elem(el),
                    Ty::PtrTo(v) => Ty::Infer(v),
                    Ty::Host => Ty::Host,
                    t => {
                        self.fail(
                            base.span,
                            format!("`{t}` cannot be indexed: only arrays and pointers can"),
                        );
                        Ty::Host
                    }
                }
            }
            ExprKind::Vector { .. } => unreachable!("typed by `vector` above"),
            ExprKind::Field(base, name) => {
                let tb = self.expr(base, body);
                let what = format!("the field `.{name}`");
                match self.resolve(tb) {
                    t if self.refuse_element(t, base.span, &what, true) => Ty::Host,
                    Ty::Vector(v) if lane(name).is_some_and(|l| l < lanes(v)) => {
                        Ty::Scalar(lane_scalar(v))
                    }
                    Ty::Record(r) if r.field(name).is_some() => {
                        Ty::of_elem(r.field(name).expect("checked").1.elem)
                    }
                    Ty::Host => Ty::Host,
                    t => {
                        let fields = match t {
                            Ty::Record(r) => {
                                let names: Vec<&str> =
                                    r.def().fields.iter().map(|f| f.name).collect();
                                format!(" (its fields: {})", names.join(", "))
                            }
                            _ => String::new(),
                        };
                        self.fail(span, format!("`{t}` has no field `{name}`{fields}"));
                        Ty::Host
                    }
                }
            }
            ExprKind::Method(m, recv, args) => {
                let m = *m;
                let tr = self.expr(recv, body);
                let tr = self.resolve(tr);
                let ok = match tr {
                    Ty::Host => true,
                    Ty::Scalar(s) => s.is_float() || (m.on_ints() && s.is_int()),
                    Ty::Infer(v) => self.vars[v as usize].kind == Kind::FloatParam,
                    _ => false,
                };
                // `parray::Num` has no methods; `parray::Float` has them all.
                let param = match tr {
                    Ty::Infer(v)
                        if self.rigid.contains(&v) && self.vars[v as usize].kind == Kind::Num =>
                    {
                        Some(self.slots[v as usize].clone())
                    }
                    _ => None,
                };
                let what = format!("`{}`", m.rust_name());
                if self.refuse_element(tr, recv.span, &what, false) {
                    // Reported: an element type parameter has no methods.
                } else if let Some(p) = param {
                    self.fail(recv.span, format!("`{}` is not a method of the type parameter `{p}` (`parray::Num` has the operators alone): bound it by `parray::Float` for the math methods", m.rust_name()));
                } else if !ok && matches!(tr, Ty::Infer(_)) {
                    self.fail(recv.span, format!("can't call `{}` on a number of ambiguous type: give it a suffix (`2.0f32`) or a typed `let`", m.rust_name()));
                } else if !ok {
                    self.fail(
                        recv.span,
                        format!("`{}` is not a method of `{tr}`", m.rust_name()),
                    );
                }
                if args.len() != m.arity() {
                    self.fail(
                        span,
                        format!("`{}` takes {} argument(s)", m.rust_name(), m.arity()),
                    );
                }
                for a in args.iter_mut() {
                    let ta = self.expr(a, body);
                    let want = if m == Method::Powi {
                        Ty::Scalar(Scalar::I32)
                    } else {
                        tr
                    };
                    self.unify(want, ta, a.span, "this argument");
                }
                tr
            }
            ExprKind::Atomic(op, p, args, _) => {
                let op = *op;
                let tp = self.expr(p, body);
                let targs: Vec<Ty> = args.iter_mut().map(|a| self.expr(a, body)).collect();
                let what = format!("this `{}`", op.rust_name());
                let allowed = |s: Scalar| match op {
                    AtomicOp::Add => {
                        s.is_int() && !matches!(s, Scalar::I8 | Scalar::U8)
                            || s.is_float() && !s.is_half()
                    }
                    AtomicOp::Exch | AtomicOp::Cas => matches!(s, Scalar::I32 | Scalar::U32),
                };
                match self.resolve(tp) {
                    Ty::Ptr { elem: el, .. } if Scalar::of_elem(el).is_some_and(allowed) => {
                        let t = Ty::of_elem(el);
                        for (a, ta) in args.iter().zip(targs) {
                            self.unify(t, ta, a.span, &what);
                        }
                        t
                    }
                    // A captured array's elements are rustc's to type: so are the operands
                    // (an unsuffixed literal takes the element type, as in a cuda body).
                    Ty::Host => {
                        for (a, ta) in args.iter().zip(targs) {
                            self.unify(Ty::Host, ta, a.span, &what);
                        }
                        Ty::Host
                    }
                    Ty::Ptr { elem: el, .. }
                        if Scalar::of_elem(el).is_some_and(Scalar::is_half) =>
                    {
                        self.fail(p.span, format!("`{}` does not update halves: accumulate in an `f32` (a `float` array) and convert once (`sum as {}`)", op.rust_name(), el.rust_type()));
                        Ty::Host
                    }
                    t => {
                        let elems = match op {
                            AtomicOp::Add => "int, unsigned, long, float or double",
                            AtomicOp::Exch | AtomicOp::Cas => "int or unsigned",
                        };
                        self.fail(p.span, format!("`{}` takes a pointer to {elems} elements, not `{t}` (write `p + offset`)", op.rust_name()));
                        Ty::Host
                    }
                }
            }
            ExprKind::ShflDown { value, delta, .. } => {
                if self.target == crate::ir::Target::Pthd {
                    self.fail(span, "`shfl_down` exchanges values among the 32 lanes of a GPU warp: it exists in cuda bodies only");
                }
                for operand in [&**value, &**delta] {
                    if let Some(bad) = impure(operand) {
                        self.fail(bad, "the operands of a `shfl_down` are read by every lane before the exchange: they may not assign, update atomically or shuffle");
                    }
                }
                let tv = self.expr(value, body);
                let td = self.expr(delta, body);
                self.unify(
                    Ty::Scalar(Scalar::U32),
                    td,
                    delta.span,
                    "the delta of this `shfl_down`",
                );
                tv
            }
            ExprKind::Call(f, args, _) => {
                let (mut params, ret) = {
                    let sig = &self.signatures[*f];
                    (sig.params.clone(), sig.ret)
                };
                // The turbofish first, so that the arguments are checked against its types;
                // a type it gives wrongly is the one error of the call (as rustc's is).
                let before = self.diags.len();
                for (name, param, given, at) in self.signatures[*f].type_args.clone() {
                    let what = format!(
                        "the type argument `{name}` of `{}`",
                        self.signatures[*f].name
                    );
                    self.unify(param, given, at, &what);
                }
                if self.diags.len() > before {
                    params = vec![Ty::Host; params.len()];
                }
                if args.len() != params.len() {
                    let sig = &self.signatures[*f];
                    let message = format!(
                        "`{}` takes {} arguments ({}), {} given",
                        sig.name,
                        params.len(),
                        sig.shown.join(", "),
                        args.len()
                    );
                    self.fail(span, message);
                }
                for (a, p) in args.iter_mut().zip(params) {
                    let ta = self.expr(a, body);
                    self.unify(p, ta, a.span, "this argument");
                }
                // A call with a wrong argument has no type to report more errors against.
                match self.diags.len() > before {
                    true => Ty::Host,
                    false => ret,
                }
            }
            ExprKind::MakeVector(v, args) => {
                let v = *v;
                if args.len() != lanes(v) as usize {
                    self.fail(
                        span,
                        format!("`{}::new` takes {} values", v.rust_type(), lanes(v)),
                    );
                }
                for a in args.iter_mut() {
                    let ta = self.expr(a, body);
                    self.unify(Ty::Scalar(lane_scalar(v)), ta, a.span, "this component");
                }
                Ty::Vector(v)
            }
            ExprKind::Select(c, a, b) => {
                self.condition(c, body);
                let (ta, tb) = (self.expr(a, body), self.expr(b, body));
                self.unify(ta, tb, b.span, "the branches of this `if`")
            }
            // The lowering gave each field of a record once; a pthd body's struct is
            // rustc's to check.
            ExprKind::MakeRecord {
                record,
                fields,
                base,
                ..
            } => {
                let record = *record;
                for (name, a) in fields.iter_mut() {
                    let ta = self.expr(a, body);
                    let Some(r) = record else {
                        self.unify(Ty::Host, ta, a.span, "a field");
                        continue;
                    };
                    let Some((_, f)) = r.field(name) else {
                        continue;
                    };
                    let what = format!("the field `{name}` of `{}`", record_shown(r));
                    self.unify(Ty::of_elem(f.elem), ta, a.span, &what);
                }
                if let Some(b) = base {
                    let tb = self.expr(b, body);
                    self.unify(Ty::Host, tb, b.span, "the base of a struct literal");
                }
                record.map_or(Ty::Host, Ty::Record)
            }
        };
        e.ty = ty;
        ty
    }

    /// `p.load4(off)` (`store`: the place of `p.store4(off, v)`): the vector of `lanes`
    /// elements of `p`'s element type, where the body subset has one.
    fn vector(&mut self, e: &mut Expr, body: &Body, store: bool) -> Ty {
        let ExprKind::Vector {
            base,
            at,
            lanes,
            method,
            ..
        } = &mut e.kind
        else {
            unreachable!("called on a vector access")
        };
        let (lanes, method) = (*lanes, *method);
        let tb = self.expr(base, body);
        let ti = self.expr(at, body);
        self.unify(Ty::USIZE, ti, at.span, "this offset (offsets are `usize`)");
        let name = format!("{}{lanes}", if store { "store" } else { "load" });
        let ty = match self.resolve(tb) {
            Ty::Ptr { elem: el, .. } | Ty::Array { elem: el, .. } => {
                match move_vector_of(el, lanes) {
                    Some(v) => Ty::Vector(v),
                    None => {
                        let verb = if store { "writes" } else { "reads" };
                        self.fail(
                        method,
                        format!(
                            "`{name}` {verb} {lanes} elements as one vector, and `{}` has no vector of {lanes}: `load4`/`store4` take pointers to f32 (`Float4`), i32 (`Int4`), f16 and bf16, `load2`/`store2` pointers to f32 (`Float2`), f64 (`Double2`), i32 (`Int2`), f16 and bf16",
                            Ty::of_elem(el)
                        ),
                    );
                        Ty::Host
                    }
                }
            }
            Ty::Host => Ty::Host,
            t => {
                self.fail(
                    base.span,
                    format!(
                        "`{t}` has no `{name}`: only arrays and pointers are accessed by vectors"
                    ),
                );
                Ty::Host
            }
        };
        e.ty = ty;
        ty
    }

    fn binary(
        &mut self,
        op: BinOp,
        tl: Ty,
        tr: Ty,
        ls: CodeSpan,
        rs: CodeSpan,
        span: CodeSpan,
    ) -> Ty {
        let _ = span;
        if op.is_logical() {
            self.unify(Ty::BOOL, tl, ls, "this operand of `&&`/`||`");
            self.unify(Ty::BOOL, tr, rs, "this operand of `&&`/`||`");
            return Ty::BOOL;
        }
        if op.is_shift() {
            self.require_int(tl, ls, "a shifted value");
            self.require_int(tr, rs, "a shift amount");
            return tl;
        }
        if op == BinOp::Add {
            // A pointer moved, or into the block's shared array (`atomic_add(s + k, 1)`).
            let moved = match self.resolve(tl) {
                t @ (Ty::Ptr { .. } | Ty::PtrTo(_)) => Some(t),
                Ty::Array {
                    elem,
                    mem: MemKind::Smem,
                    soa,
                    ..
                } => Some(Ty::Ptr { elem, soa }),
                _ => None,
            };
            if let Some(t) = moved {
                self.unify(Ty::USIZE, tr, rs, "a pointer offset (`usize`)");
                return t;
            }
        }
        if let Some(t) = self.vector_binary(op, tl, tr, ls, rs) {
            return t;
        }
        let t = self.unify(tl, tr, rs, &format!("this `{}`", op.symbol()));
        if self.refuse_element(t, ls, &format!("`{}`", op.symbol()), false) {
            return Ty::Host;
        }
        if op.is_comparison() {
            return Ty::BOOL;
        }
        match self.resolve(t) {
            Ty::Scalar(Scalar::Bool)
                if matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) => {}
            Ty::Scalar(s) if s != Scalar::Bool => {
                if s.is_float() && matches!(op, BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor) {
                    self.fail(
                        ls,
                        format!("`{}` is for integers, not `{}`", op.symbol(), s.rust_name()),
                    );
                }
            }
            Ty::Infer(_) | Ty::Host => {}
            other => self.fail(
                ls,
                format!("`{}` is not defined for `{other}`", op.symbol()),
            ),
        }
        t
    }

    /// `l op r` where an operand is a vector (`Float4`...): lane by lane, for `+ - * /`,
    /// with a vector of the same type or a scalar of its lane type on either side (SPEC
    /// 3.5, "Vectors"). `None` when neither operand is a vector.
    fn vector_binary(
        &mut self,
        op: BinOp,
        tl: Ty,
        tr: Ty,
        ls: CodeSpan,
        rs: CodeSpan,
    ) -> Option<Ty> {
        let (a, b) = (self.resolve(tl), self.resolve(tr));
        let v = match (a, b) {
            (Ty::Vector(v), _) | (_, Ty::Vector(v)) => v,
            _ => return None,
        };
        let name = v.rust_type();
        // A vector of 16-bit elements has no arithmetic in C: it is moved, not computed.
        if lanes(v) == 0 {
            self.fail(
                ls,
                format!(
                    "`{name}` is only moved (`q.store4(j, p.load4(i))`): compute on its elements (`p[i] {} q[j]`)",
                    op.symbol()
                ),
            );
            return Some(Ty::Host);
        }
        if !matches!(op, BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Div) {
            self.fail(
                ls,
                format!(
                    "`{}` is not defined for `{name}`: vectors take `+ - * /`, lane by lane (compare or combine lanes by name: `v.x {} w.x`)",
                    op.symbol(),
                    op.symbol()
                ),
            );
            return Some(Ty::Host);
        }
        let lane = Ty::Scalar(crate::ir::lane_scalar(v));
        let what = format!(
            "this `{}` with a `{name}` (a `{name}`, or a `{lane}` for every lane)",
            op.symbol()
        );
        match (a, b) {
            (Ty::Vector(x), Ty::Vector(y)) if x != y => {
                self.fail(rs, format!("mismatched types in {what}: `{a}` and `{b}`"));
            }
            (Ty::Vector(_), Ty::Vector(_)) => {}
            (Ty::Vector(_), other) => {
                self.unify(lane, other, rs, &what);
            }
            (other, _) => {
                self.unify(lane, other, ls, &what);
            }
        }
        Some(Ty::Vector(v))
    }

    fn require_int(&mut self, t: Ty, span: CodeSpan, what: &str) {
        match self.resolve(t) {
            Ty::Scalar(s) if s.is_int() => {}
            Ty::Host => {}
            Ty::Infer(v) if self.vars[v as usize].kind == Kind::Int => {}
            other => self.fail(span, format!("{what} must be an integer, not `{other}`")),
        }
    }

    fn require_number(&mut self, t: Ty, span: CodeSpan, what: &str) {
        match self.resolve(t) {
            Ty::Scalar(s) if s != Scalar::Bool => {}
            Ty::Infer(_) | Ty::Host => {}
            other => self.fail(span, format!("{what} must be a number, not `{other}`")),
        }
    }

    /// The final type: inference variables take their binding, or their default.
    fn finish_ty(&mut self, t: Ty) -> Ty {
        match self.resolve(t) {
            // A type parameter no call fixes (a generic function's own check): as below.
            Ty::PtrTo(v) => match self.finish_ty(Ty::Infer(v)).as_elem() {
                Some(elem) => Ty::Ptr { elem, soa: false },
                None => Ty::Host,
            },
            Ty::Infer(v) => match self.vars[v as usize].kind {
                Kind::Int => Ty::Scalar(Scalar::I32),
                Kind::Float => Ty::Scalar(Scalar::F64),
                // Reported by `check` (a host value whose type the body does not fix).
                Kind::Any => Ty::Host,
                // A type parameter no call fixes: a generic function's own check.
                Kind::Element | Kind::Num | Kind::FloatParam => Ty::Scalar(Scalar::F32),
            },
            t => t,
        }
    }

    fn finish_stmts(&mut self, stmts: &mut [Stmt], body: &Body) {
        for s in stmts {
            s.for_each_part_mut(&mut |part| match part {
                PartMut::Expr(e) => self.finish_expr(e),
                PartMut::Body(b) => self.finish_stmts(b, body),
            });
            // What needs the final types of a statement's parts.
            match s {
                Stmt::For { var, end, .. } => match body.local(*var).ty {
                    Some(Ty::Scalar(s)) if s.is_int() => {}
                    Some(Ty::Host) | None => {}
                    Some(t) => self.fail(
                        end.span,
                        format!("a `for` range must be of integers, not `{t}`"),
                    ),
                },
                Stmt::Print { args, .. } => {
                    for a in args.iter() {
                        if !matches!(a.ty, Ty::Scalar(_) | Ty::Host) {
                            self.fail(
                                a.span,
                                format!(
                                    "`{}` cannot be printed with `{{}}`: print its components",
                                    a.ty
                                ),
                            );
                        }
                    }
                }
                _ => {}
            }
            // A shuffle is a statement's value, exchanged before the statement runs: not a
            // condition, a bound or a printed value (evaluated per thread at block level).
            if !matches!(s, Stmt::Let { .. } | Stmt::Expr { .. }) {
                s.for_each_part(&mut |part| {
                    if let Part::Expr(e) = part {
                        if let Some(span) = shuffle_in(e) {
                            self.fail(span, "a `shfl_down` may stand in a `let` or an expression statement only (`let v = shfl_down(x, d);`, `s += shfl_down(s, d);`): bind it before the condition");
                        }
                    }
                });
            }
        }
    }

    fn finish_expr(&mut self, e: &mut Expr) {
        e.ty = self.finish_ty(e.ty);
        if let (ExprKind::Lit(Lit::Int(v, _)), Ty::Scalar(s)) = (&e.kind, e.ty) {
            if s.is_int() && !fits(*v, s, self.target) {
                self.fail(
                    e.span,
                    format!("the literal {v} does not fit in `{}`", s.rust_name()),
                );
            }
        }
        e.for_each_child_mut(&mut |c| self.finish_expr(c));
        if let Some(v) = folded(e, self.target) {
            e.kind = ExprKind::Lit(v);
        }
        if let ExprKind::Convert(x, ..) = &mut e.kind {
            let x = std::mem::replace(&mut **x, Expr::new(ExprKind::Lit(Lit::Bool(false)), e.span));
            *e = converted(x, e.ty, e.span);
        }
        if let ExprKind::ShflDown { value, .. } = &e.kind {
            let moved = match e.ty {
                Ty::Scalar(s) => {
                    !matches!(s, Scalar::Bool | Scalar::I8 | Scalar::U8) && !s.is_half()
                }
                _ => matches!(e.ty, Ty::Host | Ty::Unit),
            };
            if !moved {
                self.fail(
                    value.span,
                    format!("`shfl_down` moves 32- and 64-bit numbers (i32, u32, i64, u64, f32, f64), not `{}`{}", e.ty, if matches!(e.ty, Ty::Scalar(s) if s.is_half()) { ": shuffle it as an `f32` (`shfl_down(x as f32, d)`)" } else { "" }),
                );
            }
        }
        if let ExprKind::Unary(UnOp::Neg, x) = &e.kind {
            if let Ty::Scalar(s) = x.ty {
                if s.is_int() && !s.is_signed() {
                    self.fail(
                        e.span,
                        format!("cannot negate an unsigned `{}`", s.rust_name()),
                    );
                }
            }
        }
    }
}

/// `a op b` of two integer literals as the literal it is, where that is exact at its
/// type (no negative or wrapping value, no division by zero; an operation that wraps is
/// left to wrap as the back ends compute it): a `parray!` constant folded into a body
/// makes such products (`128 * Q` with `Q` = 2), and a kernel then says `256`.
fn folded(e: &Expr, target: crate::ir::Target) -> Option<Lit> {
    let ExprKind::Binary(op, l, r) = &e.kind else {
        return None;
    };
    let (ExprKind::Lit(Lit::Int(a, _)), ExprKind::Lit(Lit::Int(b, _)), Ty::Scalar(s)) =
        (&l.kind, &r.kind, e.ty)
    else {
        return None;
    };
    let v = op.exact(*a, *b)?;
    (s.is_int() && fits(v, s, target)).then_some(Lit::Int(v, Some(s)))
}

/// A conversion at the instance's type `to`: `x` itself at its own type, an `f32` literal
/// converted to a float folded (its value, written exactly, which the back ends round to
/// `to` once, as `from_f32` does), else a cast (Rust's `as`: to an integer, truncated and
/// saturated on every back end).
fn converted(x: Expr, to: Ty, span: CodeSpan) -> Expr {
    let Ty::Scalar(s) = to else {
        // An error was reported: the type check fails.
        return x;
    };
    if x.ty == to {
        return x;
    }
    // Only an `f32`'s digits parse to its value as an `f32`: an `f64` literal's value
    // written as digits and rounded again could round twice.
    let folded = match &x.kind {
        ExprKind::Lit(Lit::Float(digits, _)) if x.ty == Ty::Scalar(Scalar::F32) => {
            digits.replace('_', "").parse::<f32>().ok()
        }
        _ => None,
    };
    let mut out = match folded {
        Some(v) if s.is_float() => Expr::new(
            ExprKind::Lit(Lit::Float(format!("{:?}", f64::from(v)), Some(s))),
            span,
        ),
        _ => Expr::new(ExprKind::Cast(Box::new(x), s), span),
    };
    out.ty = to;
    out
}

/// Whether the literal `v` fits in the integer type `s` (in a cuda body `usize` is 32 bits).
fn fits(v: u128, s: Scalar, target: crate::ir::Target) -> bool {
    let max: u128 = match s {
        Scalar::I8 => i8::MAX as u128,
        Scalar::U8 => u8::MAX as u128,
        Scalar::I32 => i32::MAX as u128,
        Scalar::Usize if target == crate::ir::Target::Pthd => usize::MAX as u128,
        Scalar::U32 | Scalar::Usize => u32::MAX as u128,
        Scalar::I64 => i64::MAX as u128,
        Scalar::U64 => u64::MAX as u128,
        _ => return true,
    };
    v <= max
}

/// The span of an assignment, atomic update or shuffle inside `e`, if it has one.
fn impure(e: &Expr) -> Option<CodeSpan> {
    if matches!(
        e.kind,
        ExprKind::Assign(..) | ExprKind::Atomic(..) | ExprKind::ShflDown { .. }
    ) {
        return Some(e.span);
    }
    let mut found = None;
    e.for_each_child(&mut |c| found = found.or_else(|| impure(c)));
    found
}

/// The span of a shuffle in `e`, if it has one.
fn shuffle_in(e: &Expr) -> Option<CodeSpan> {
    if matches!(e.kind, ExprKind::ShflDown { .. }) {
        return Some(e.span);
    }
    let mut found = None;
    e.for_each_child(&mut |c| found = found.or_else(|| shuffle_in(c)));
    found
}

/// The element type a pointer or array expression designates.
pub fn elem_of(t: Ty) -> Option<ElemType> {
    match t {
        Ty::Ptr { elem: e, .. } | Ty::Array { elem: e, .. } => Some(e),
        _ => None,
    }
}

/// A record with its fields' types, as Rust writes the struct:
/// `Particle { pos: Float2, vel: Float2, mass: f32 }`.
pub fn record_shown(r: Record) -> String {
    let fields: Vec<String> = r
        .def()
        .fields
        .iter()
        .map(|f| format!("{}: {}", f.name, f.elem.rust_type()))
        .collect();
    format!("{} {{ {} }}", r.name(), fields.join(", "))
}

/// The array under the offsets added to it (`s + $T[0][16]$`: `s`).
fn array_root(e: &Expr) -> &Expr {
    match &e.kind {
        ExprKind::Binary(BinOp::Add, l, _) => array_root(l),
        _ => e,
    }
}
