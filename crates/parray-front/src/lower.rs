//! The front end of detour bodies: Rust syntax (syn) lowered once into parray-compiler's body
//! IR. Names become locals (or, in a pthd body, captured host variables), `$...$` forms
//! are compiled by parray-layout (each once), and whatever falls outside the subset of
//! SPEC.md ("Detour bodies") is an error at its token. All errors are reported together.

use parray_compiler::copy::CopyPart;
use parray_compiler::ir::{
    AtomicOp, BinOp, Body, Bound, Check, CopyEnd, CopyGuard, CopySpec, Expr, ExprKind, Function,
    Len, Lit, Loc, Local, LocalId, Method, NumberConst, RuntimeIndex, Scalar, Stmt, Target, Ty,
    UnOp, Wgmma, NUMBER_CONSTS,
};
use parray_compiler::passes::check::Typed;
use parray_compiler::CodeSpan;
use parray_layout::{thread_index, ElemType, Holders, MemKind, Param, Record, TypeClass};
use proc_macro2::{Ident, Span, TokenStream};
use quote::ToTokens;
use std::collections::HashMap;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::Token;

use crate::dollar::{CopyForm, Form, Forms, COPY, DOLLAR, MBARRIER, MMA, SETMAXNREG, SYNC, WAIT};

/// Lowers the statements of a detour body run by the thread array of `forms`.
/// `funcs` are the `#[parray::func]` functions a cuda body may call, by the name it calls
/// them by (a pthd body calls Rust functions as Rust does), and `records` the records
/// their signatures may name.
pub fn lower(
    forms: &mut Forms,
    target: Target,
    params: &[Param],
    stmts: &[syn::Stmt],
    body_span: Span,
    funcs: &[(String, syn::ItemFn)],
    records: &[Record],
) -> syn::Result<Lowered> {
    let threads = forms.threads.as_ref().expect("a detour has threads");
    let array = threads.name.clone();
    let mut lw = Lowerer::new(forms, target, funcs, records);
    let params: Vec<(Param, LocalId)> = params
        .iter()
        .map(|p| {
            let ty = Ty::of_param(p);
            let id = lw.declare(&p.name, body_span, true, Some(ty), true);
            (p.clone(), id)
        })
        .collect();
    let mut stmts = lw.stmts(stmts);
    // Each run of `#mma async` is one group, and what may run while groups are in flight
    // is checked over the whole body (a k-loop carries one across its back-edge).
    parray_compiler::mma::commit_groups(&mut stmts);
    if let Err((at, e)) = parray_compiler::mma::check_waits(&stmts, &lw.locals, &lw.accumulators) {
        lw.fail(at.span.proc_macro(), e);
    }
    let tids = {
        let t = lw.forms.threads.as_ref().expect("a detour has threads");
        let module = t.module;
        let kind = match &module.types()[module.lookup(&t.name).expect("declared").ty].class {
            TypeClass::Thread(k) => k.clone(),
            TypeClass::Data { .. } => unreachable!("checked: a thread array"),
        };
        lw.forms
            .tids_used
            .iter()
            .map(|path| {
                let node = lw
                    .forms
                    .tid_node(path, Span::call_site())
                    .expect("checked when used");
                (path.clone(), thread_index(module, t.root, &kind, node))
            })
            .collect()
    };
    if let Some(errors) = crate::errors::in_source_order(lw.errors) {
        return Err(errors);
    }
    let body = Body {
        target,
        array,
        // The body's own file: a detour expanded by another macro (a subprogram's call)
        // has its call site elsewhere.
        file: body_span.file(),
        params,
        captures: lw.captures,
        functions: lw.functions,
        type_params: lw.instance_params,
        locals: lw.locals,
        tids,
        stmts,
        launch_bounds: None,
        tids_at_launch: false,
        constants: Vec::new(),
    };
    Ok(Lowered {
        lowered: body.clone(),
        typed: typed(body)?,
        folded: lw.folded,
    })
}

/// The type check of a lowered body, its diagnostics as errors in source order.
fn typed(body: Body) -> syn::Result<Typed> {
    parray_compiler::passes::check::check(body).map_err(|failed| {
        let errors = failed
            .1
            .into_iter()
            .map(|d| syn::Error::new(d.span.proc_macro(), d.message));
        crate::errors::in_source_order(errors).expect("a failed check has a diagnostic")
    })
}

/// Checks the function `name` of `funcs` (and what it calls) as a cuda body would lower
/// and type it, its forms compiled against `resolved`: the errors a `#[parray::func]` (or
/// `funcs!`) reports where it is defined.
pub fn check_function(
    name: &Ident,
    funcs: &[(String, syn::ItemFn)],
    records: &[Record],
    resolved: &crate::shapes::Resolved,
) -> syn::Result<()> {
    // A run-time type's forms wait for its sizes, as in a body (its numbers here are a
    // probe's).
    let mut forms = Forms::new(&resolved.module, None);
    forms.runtime = resolved.runtime.clone();
    let mut lw = Lowerer::new(&mut forms, Target::Cuda, funcs, records);
    lw.function_index(name);
    if let Some(errors) = crate::errors::in_source_order(lw.errors) {
        return Err(errors);
    }
    let body = Body {
        target: Target::Cuda,
        array: String::new(),
        file: name.span().file(),
        params: Vec::new(),
        captures: Vec::new(),
        functions: lw.functions,
        type_params: lw.instance_params,
        locals: lw.locals,
        tids: Vec::new(),
        stmts: Vec::new(),
        launch_bounds: None,
        tids_at_launch: false,
        constants: Vec::new(),
    };
    typed(body).map(|_| ())
}

/// A lowered, typed body, and the `parray!` constants its cuda body folded.
pub struct Lowered {
    /// The body before its type check: what a body whose forms wait for their types
    /// carries into the program (`parray_compiler::embed`).
    pub lowered: Body,
    pub typed: Typed,
    /// Each name the body folded as the `parray!` constant of that name, with its value.
    pub folded: Vec<(Ident, u64)>,
}

impl Lowered {
    /// Compile-time assertions that each folded name means, where the body is, the
    /// constant it was folded as (not a Rust local or item that shadows it).
    pub fn folded_checks(&self) -> TokenStream {
        self.folded
            .iter()
            .map(|(name, v)| {
                let v = proc_macro2::Literal::u64_unsuffixed(*v);
                let message = format!("`{name}` in this cuda body was folded as the `parray!` constant `{name}` = {v}, but here it names something else: rename one of them");
                quote::quote_spanned!(name.span()=> const _: () = ::core::assert!(#name == #v, #message);)
            })
            .collect()
    }
}

struct Lowerer<'a, 'm> {
    forms: &'a mut Forms<'m>,
    target: Target,
    locals: Vec<Local>,
    /// Names in scope, innermost scope last.
    scopes: Vec<Vec<(String, LocalId)>>,
    errors: Vec<syn::Error>,
    /// Shared arrays created so far (each `create` of an smem type gets the next slot).
    shared_slots: usize,
    /// How many loops enclose the statement being lowered.
    loops: usize,
    /// Host values a cuda body reads: parameters passed by value ([`Body::captures`]).
    captures: Vec<LocalId>,
    /// `parray!` constants a cuda body folded, each once.
    folded: Vec<(Ident, u64)>,
    /// `shfl_down`s so far (each gets the next slot).
    shuffles: usize,
    /// The functions the body may call, and those lowered so far (callees first).
    funcs: &'a [(String, syn::ItemFn)],
    /// The records a function's signature may name (those carried in with it).
    records: &'a [Record],
    functions: Vec<Function>,
    /// The functions being lowered, outermost first (a call of one of them is recursion),
    /// each with the span of the call that entered it.
    lowering: Vec<(String, Span)>,
    /// The type parameters of the generic function being lowered, with their numbers in
    /// the body ([`Ty::Generic`]) and their bounds.
    type_params: Vec<(String, Ty, Bound)>,
    /// The type parameters of the body's instances so far, by number ([`Body::type_params`]).
    instance_params: Vec<(String, Bound)>,
    /// The call of a collective function that stands alone in the statement being lowered
    /// (see [`Lowerer::stand`]), compared by address.
    standing: Option<*const syn::ExprCall>,
    /// The statements an inlined collective function puts before the statement being
    /// lowered: its parameters' `let`s and its body.
    pending: Vec<Stmt>,
    /// The type each wgmma accumulator is named with in its `#mma`s, for the messages of
    /// `mma::check_waits`.
    accumulators: HashMap<LocalId, String>,
    /// TMA copies so far (each gets the next tensor map parameter).
    tma_maps: usize,
}

/// The line of a span, for `#line` directives.
pub(crate) fn loc(span: Span) -> Loc {
    Loc {
        span: span.into(),
        line: span.start().line as u32,
    }
}

/// A placeholder for what failed to lower (its error is already recorded).
fn poison(span: Span) -> Expr {
    Expr::new(ExprKind::Lit(Lit::Int(0, None)), span)
}

impl<'a, 'm> Lowerer<'a, 'm> {
    fn fail(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    fn subset(&mut self, span: Span, what: &str) {
        self.fail(
            span,
            format!("{what} is not part of the detour body subset (SPEC.md, \"Detour bodies\")"),
        );
    }

    /// The names of a rejected `let` pattern, declared anyway (untyped), so that their
    /// uses are not taken for host variables: the one error is the pattern's.
    fn new(
        forms: &'a mut Forms<'m>,
        target: Target,
        funcs: &'a [(String, syn::ItemFn)],
        records: &'a [Record],
    ) -> Self {
        Lowerer {
            forms,
            target,
            locals: Vec::new(),
            scopes: vec![Vec::new()],
            errors: Vec::new(),
            shared_slots: 0,
            tma_maps: 0,
            loops: 0,
            captures: Vec::new(),
            folded: Vec::new(),
            shuffles: 0,
            funcs,
            records,
            functions: Vec::new(),
            lowering: Vec::new(),
            type_params: Vec::new(),
            instance_params: Vec::new(),
            standing: None,
            pending: Vec::new(),
            accumulators: HashMap::new(),
        }
    }

    /// Whether a function is being lowered; if so, `what` is an error at `span`: a
    /// function computes on its parameters and locals only.
    fn in_function(&mut self, span: Span, what: &str) -> bool {
        let Some((f, _)) = self.lowering.last().cloned() else {
            return false;
        };
        self.fail(span, format!("{what} cannot be in a function (`{f}`): a function computes on its parameters (numbers, vectors, records and pointers) and its locals; do this in the detour body and pass the values in"));
        true
    }

    /// The index of the function `name` among the body's, lowered at its first call (its
    /// callees before it); `None` after an error at `name`.
    fn function_index(&mut self, name: &Ident) -> Option<usize> {
        let key = name.to_string();
        let (_, item) = self.funcs.iter().find(|(n, _)| *n == key)?;
        // A generic function is lowered at each call: an instance, typed by that call.
        let generic = !item.sig.generics.params.is_empty();
        if let Some(i) = self
            .functions
            .iter()
            .position(|f| f.name == key && !generic)
        {
            return Some(i);
        }
        let function = self.instance(name)?;
        self.functions.push(function);
        Some(self.functions.len() - 1)
    }

    /// The function `name` lowered anew (fresh locals), as [`Lowerer::function`] lowers
    /// it; `None` after an error at `name` (recursion reported at the call in the cycle).
    fn instance(&mut self, name: &Ident) -> Option<Function> {
        let key = name.to_string();
        if let Some(at) = self.lowering.iter().position(|(f, _)| *f == key) {
            let chain: Vec<&str> = self.lowering[at..]
                .iter()
                .map(|(f, _)| f.as_str())
                .collect();
            // At the call in the cycle's first function, whose tokens are the user's.
            let span = self.lowering.get(at + 1).map_or(name.span(), |(_, s)| *s);
            self.fail(span, format!("`{key}` is called by itself (`{}` -> `{key}`): functions of the body language do not recurse (a GPU thread's stack is small); write it as a loop", chain.join("` -> `")));
            return None;
        }
        let (_, item) = self.funcs.iter().find(|(n, _)| *n == key)?;
        let item = item.clone();
        self.lowering.push((key.clone(), name.span()));
        let function = self.function(&key, &item);
        self.lowering.pop();
        function
    }

    /// Whether the function being lowered innermost is collective (it shuffles).
    fn in_collective(&self) -> Option<String> {
        let (f, _) = self.lowering.last()?;
        crate::func::collective(f, self.funcs).then(|| f.clone())
    }

    /// `e` lowered with `alone` (itself or its assigned value) standing alone where a
    /// shuffle may stand (the value of a `let`, of an assignment or of a function): a call
    /// of a collective function there is inlined, anywhere else refused.
    fn with_standing(&mut self, alone: &syn::Expr, e: &syn::Expr) -> Expr {
        self.standing = match alone {
            syn::Expr::Call(c) => Some(c as *const syn::ExprCall),
            _ => None,
        };
        let lowered = self.expr(e);
        self.standing = None;
        lowered
    }

    /// A call of the collective function `name` standing alone: each parameter a `let` of
    /// its argument, then the function's statements, put before the statement being
    /// lowered ([`Lowerer::pending`]), so that its shuffles are the body's own (one
    /// semantics: the emulation's lockstep and the GPU's warp run the same statements).
    /// Its value, if it has one; `None` after an error.
    fn inline(&mut self, c: &syn::ExprCall, name: &Ident) -> Option<Option<Expr>> {
        let span = c.span();
        // Its statements are the body's, typed by its arguments: no call node to give a
        // turbofish's types to.
        if let syn::Expr::Path(p) = &*c.func {
            if let Some(s) = p.path.segments.first().filter(|s| !s.arguments.is_none()) {
                let at = s.arguments.span();
                self.fail(
                    at,
                    format!("`{name}` shuffles (a collective function, inlined at each call), so its arguments give its types: call it without type arguments, `{name}(..)`"),
                );
                return None;
            }
        }
        let args: Vec<Expr> = c.args.iter().map(|a| self.expr(a)).collect();
        let function = self.instance(name)?;
        if args.len() != function.params.len() {
            let params = function.params.len();
            self.fail(
                span,
                format!("`{name}` takes {params} arguments, {} given", args.len()),
            );
            return None;
        }
        for (p, a) in function.params.iter().zip(args) {
            // A local of the body now, bound by its `let`.
            self.locals[p.0 as usize].param = false;
            self.pending.push(Stmt::Let {
                local: *p,
                init: Some(a),
                loc: loc(span),
            });
        }
        self.pending.extend(function.stmts);
        Some(function.value)
    }

    /// A function's signature and body, in scopes of its own.
    fn function(&mut self, name: &str, item: &syn::ItemFn) -> Option<Function> {
        let sig = &item.sig;
        let span = sig.ident.span();
        if let Some(bad) = sig
            .constness
            .map(|t| t.span)
            .or(sig.asyncness.map(|t| t.span))
            .or(sig.unsafety.map(|t| t.span))
            .or(sig.abi.as_ref().map(|a| a.extern_token.span))
            .or(sig.variadic.as_ref().map(|v| v.dots.spans[0]))
        {
            self.fail(bad, "a function of the body language is a plain `fn` with typed parameters: no `const`, `async`, `unsafe`, `extern` or variadics");
            return None;
        }
        let generics = self.type_params(&sig.generics)?;
        let outer = std::mem::replace(&mut self.scopes, vec![Vec::new()]);
        let loops = std::mem::replace(&mut self.loops, 0);
        let outer_params = std::mem::replace(&mut self.type_params, generics.clone());
        let generics = generics.into_iter().map(|(n, t, _)| (n, t)).collect();
        let (mut params, mut writable) = (Vec::new(), Vec::new());
        for arg in &sig.inputs {
            let syn::FnArg::Typed(arg) = arg else {
                self.fail(
                    arg.span(),
                    "a function of the body language takes no `self`",
                );
                continue;
            };
            let (ident, mutable) = match &*arg.pat {
                syn::Pat::Ident(p) if p.by_ref.is_none() && p.subpat.is_none() => {
                    (p.ident.clone(), p.mutability.is_some())
                }
                other => {
                    self.fail(other.span(), "a parameter is one name: `x: f32`");
                    continue;
                }
            };
            let typed = match self.pointer_type_of(&arg.ty) {
                Some(pointer) => pointer,
                None => match self.value_type_of(&arg.ty) {
                    Some(ty) => Some((ty, false)),
                    None => {
                        self.fail(arg.ty.span(), format!("a parameter of a function of the body language is a number, a vector, a record, a type parameter (bool, i8, u8, i32, u32, i64, u64, usize, f32, f64, f16, bf16, Float2, Float4, Double2, Int2, Int4, a `#[derive(parray::Record)]` struct, T) or a pointer ({POINTERS})"));
                        None
                    }
                },
            };
            let Some((ty, writes)) = typed else {
                // Declared untyped, so that its uses report nothing more.
                self.declare(&ident.to_string(), ident.span(), mutable, None, false);
                continue;
            };
            let id = self.declare(&ident.to_string(), ident.span(), mutable, Some(ty), true);
            params.push(id);
            if writes {
                writable.push(id);
            }
        }
        let ret = match &sig.output {
            syn::ReturnType::Default => Some(Ty::Unit),
            syn::ReturnType::Type(_, t) => {
                let ty = self.value_type_of(t);
                if ty.is_none() {
                    self.fail(
                        t.span(),
                        "a function of the body language returns a number, a vector, a record or a type parameter (or nothing)",
                    );
                }
                ty
            }
        };
        // A function of no value may end in a statement without `;` (an `if`, a call).
        let (stmts, value) = match item.block.stmts.split_last() {
            Some((syn::Stmt::Expr(e, None), rest)) if sig.output != syn::ReturnType::Default => {
                let mut stmts = self.stmts(rest);
                // Its value stands alone: a collective call there is inlined before it.
                let value = self.with_standing(e, e);
                stmts.append(&mut self.pending);
                (stmts, Some(value))
            }
            _ => (self.stmts(&item.block.stmts), None),
        };
        self.scopes = outer;
        self.loops = loops;
        self.type_params = outer_params;
        Some(Function {
            name: name.to_string(),
            span: span.into(),
            generics,
            type_args: Vec::new(),
            params,
            writable,
            ret: ret?,
            stmts,
            value,
        })
    }

    /// A generic function's type parameters, each numbered anew ([`Ty::Generic`]), with
    /// its bound: type parameters bounded by `parray::Element`, `parray::Num` or
    /// `parray::Float` alone, no lifetimes, constants or `where`.
    fn type_params(&mut self, generics: &syn::Generics) -> Option<Vec<(String, Ty, Bound)>> {
        let mut out = Vec::new();
        for p in &generics.params {
            let syn::GenericParam::Type(t) = p else {
                self.fail(p.span(), "a function of the body language is generic over element types only: `fn f<T: parray::Num>(x: T) -> T` (or `T: parray::Element`, `T: parray::Float`)");
                return None;
            };
            let bound = |b: &syn::TypeParamBound| match b {
                syn::TypeParamBound::Trait(t) => t
                    .path
                    .segments
                    .last()
                    .filter(|s| s.arguments.is_none())
                    .and_then(|s| match s.ident.to_string().as_str() {
                        "Element" => Some(Bound::Element),
                        "Num" => Some(Bound::Num),
                        "Float" => Some(Bound::Float),
                        _ => None,
                    }),
                _ => None,
            };
            let bounds: Vec<Option<Bound>> = t.bounds.iter().map(bound).collect();
            let (&[Some(bound)], None) = (bounds.as_slice(), &t.default) else {
                self.fail(t.span(), format!("a type parameter of a function of the body language is bounded by one of `parray::Element` (any element: it moves values), `parray::Num` (a number: the operators too) or `parray::Float` (a float: the math methods too), alone: `{}: parray::Num`", t.ident));
                return None;
            };
            let slot = Ty::Generic(self.instance_params.len() as u32);
            self.instance_params.push((t.ident.to_string(), bound));
            out.push((t.ident.to_string(), slot, bound));
        }
        if let Some(w) = &generics.where_clause {
            self.fail(w.span(), "a function of the body language bounds its type parameters where it names them (`<T: parray::Num>`), with no `where`");
            return None;
        }
        Some(out)
    }

    /// A pointer parameter's type, `parray::Ptr<'_, f32>` (it reads) or
    /// `parray::PtrMut<'_, f32>` (it also writes), and whether it writes: `None` for a type
    /// that is no pointer, `Some(None)` after an error at it (a reference or slice, a
    /// pointer to a type parameter or to something that is no element).
    fn pointer_type_of(&mut self, t: &syn::Type) -> Option<Option<(Ty, bool)>> {
        let p = match t {
            syn::Type::Path(p) if p.qself.is_none() => p,
            syn::Type::Reference(_) | syn::Type::Slice(_) | syn::Type::Ptr(_) => {
                self.fail(t.span(), format!("a function of the body language takes an array as a pointer, {POINTERS}, not a reference, a slice or a raw pointer: a pointer knows its array's extent, so that each access is checked (a GPU's, against the array the body passed)"));
                return Some(None);
            }
            _ => return None,
        };
        let last = p.path.segments.last()?;
        let writes = match last.ident.to_string().as_str() {
            "Ptr" => false,
            "PtrMut" => true,
            _ => return None,
        };
        let elem = match &last.arguments {
            syn::PathArguments::AngleBracketed(a) => {
                let types: Vec<&syn::Type> = a
                    .args
                    .iter()
                    .filter_map(|g| match g {
                        syn::GenericArgument::Type(t) => Some(t),
                        _ => None,
                    })
                    .collect();
                match types.as_slice() {
                    [t] => Some(*t),
                    _ => None,
                }
            }
            _ => None,
        };
        let pointed = elem.and_then(|e| self.value_type_of(e));
        // A type parameter's bound says whether it is an element: `Num` takes `usize`.
        if let Some(Ty::Generic(s)) = pointed {
            let (name, _, bound) = self
                .type_params
                .iter()
                .find(|(_, t, _)| *t == Ty::Generic(s))
                .expect("a type parameter in scope")
                .clone();
            if bound == Bound::Num {
                self.fail(t.span(), format!("a pointer to `{name}` needs `{name}: parray::Element` (any element) or `parray::Float`: `parray::Num` takes `u64` and `usize`, which are no elements"));
                return Some(None);
            }
            return Some(Some((Ty::PtrTo(s), writes)));
        }
        match pointed.and_then(Ty::as_elem) {
            Some(elem) => Some(Some((Ty::Ptr { elem, soa: false }, writes))),
            None => {
                self.fail(t.span(), format!("a pointer parameter points to elements of one element type (a number, a vector, a record or a type parameter bounded by `parray::Element`): {POINTERS}"));
                Some(None)
            }
        }
    }

    /// A written value type: a number, a vector, or a type parameter in scope.
    fn value_type_of(&self, t: &syn::Type) -> Option<Ty> {
        let name = type_name(t)?;
        match self.type_params.iter().find(|(n, _, _)| *n == name) {
            Some((_, ty, _)) => Some(*ty),
            None => value_type(&name).or_else(|| {
                let r = self.records.iter().find(|r| r.name() == name)?;
                Some(Ty::Record(*r))
            }),
        }
    }

    fn declare_rejected(&mut self, pat: &syn::Pat) {
        match pat {
            syn::Pat::Ident(p) => {
                self.declare(&p.ident.to_string(), p.ident.span(), true, None, false);
            }
            syn::Pat::Tuple(t) => t.elems.iter().for_each(|p| self.declare_rejected(p)),
            syn::Pat::TupleStruct(t) => t.elems.iter().for_each(|p| self.declare_rejected(p)),
            syn::Pat::Slice(t) => t.elems.iter().for_each(|p| self.declare_rejected(p)),
            syn::Pat::Struct(t) => t.fields.iter().for_each(|f| self.declare_rejected(&f.pat)),
            syn::Pat::Type(t) => self.declare_rejected(&t.pat),
            syn::Pat::Reference(r) => self.declare_rejected(&r.pat),
            syn::Pat::Paren(p) => self.declare_rejected(&p.pat),
            _ => {}
        }
    }

    fn declare(
        &mut self,
        name: &str,
        span: Span,
        mutable: bool,
        ty: Option<Ty>,
        param: bool,
    ) -> LocalId {
        let id = LocalId(self.locals.len() as u32);
        self.locals.push(Local {
            name: name.to_string(),
            span: span.into(),
            mutable,
            ty,
            param,
        });
        self.scopes
            .last_mut()
            .expect("a scope")
            .push((name.to_string(), id));
        id
    }

    fn lookup(&self, name: &str) -> Option<LocalId> {
        self.scopes
            .iter()
            .rev()
            .find_map(|s| s.iter().rev().find(|(n, _)| n == name).map(|(_, id)| *id))
    }

    fn scoped<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> T {
        self.scopes.push(Vec::new());
        let out = f(self);
        self.scopes.pop();
        out
    }

    fn block(&mut self, b: &syn::Block) -> Vec<Stmt> {
        self.scoped(|this| this.stmts(&b.stmts))
    }

    fn stmts(&mut self, stmts: &[syn::Stmt]) -> Vec<Stmt> {
        let outer = std::mem::take(&mut self.pending);
        let mut out = Vec::new();
        for s in stmts {
            let lowered = self.stmt(s);
            // An inlined collective function's statements go before the statement.
            out.append(&mut self.pending);
            out.extend(lowered);
        }
        self.pending = outer;
        out
    }

    fn stmt(&mut self, s: &syn::Stmt) -> Option<Stmt> {
        match s {
            syn::Stmt::Local(l) => self.local(l),
            syn::Stmt::Item(item) => {
                self.subset(item.span(), "an item (fn, struct, use...)");
                None
            }
            syn::Stmt::Macro(m) => self.macro_stmt(&m.mac),
            syn::Stmt::Expr(e, _) => self.expr_stmt(e),
        }
    }

    fn local(&mut self, l: &syn::Local) -> Option<Stmt> {
        let (ident, mutable, annotated) = match &l.pat {
            syn::Pat::Ident(p) => (p.ident.clone(), p.mutability.is_some(), None),
            syn::Pat::Type(t) => match &*t.pat {
                syn::Pat::Ident(p) => (p.ident.clone(), p.mutability.is_some(), Some(&*t.ty)),
                _ => {
                    self.subset(l.pat.span(), "a `let` pattern other than one name");
                    self.declare_rejected(&t.pat);
                    return None;
                }
            },
            _ => {
                self.subset(l.pat.span(), "a `let` pattern other than one name");
                self.declare_rejected(&l.pat);
                return None;
            }
        };
        let span = l.span();
        if l.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
            self.subset(span, "`let ... else`");
        }
        let init = l.init.as_ref().map(|i| &*i.expr);
        if let Some(syn::Expr::Call(call)) = init {
            if let Some((ty_name, ty_span)) = create_call(call) {
                return self.create(&ident, &ty_name, ty_span, span);
            }
        }
        let ty = annotated.and_then(|t| {
            let found = self.value_type_of(t);
            if found.is_none() {
                self.fail(t.span(), "a type outside the body subset (f32, f64, f16, bf16, i8, i32, u32, i64, u64, usize, bool, Float2, Float4, Double2, Int2, Int4, or a function's type parameter)");
            }
            found
        });
        // The initialiser sees the names before this `let` (Rust's scoping).
        let init = init.map(|e| self.with_standing(e, e));
        let local = self.declare(&ident.to_string(), ident.span(), mutable, ty, false);
        Some(Stmt::Let {
            local,
            init,
            loc: loc(span),
        })
    }

    /// `let s = S::create();` of an smem or rmem type: a shared or register array.
    fn create(
        &mut self,
        ident: &syn::Ident,
        ty_name: &str,
        span: Span,
        stmt: Span,
    ) -> Option<Stmt> {
        if self.in_function(span, "creating an array") {
            return None;
        }
        let module = self.forms.module;
        let Ok(def) = module.lookup(ty_name) else {
            self.fail(span, format!("unknown type `{ty_name}`"));
            return None;
        };
        let TypeClass::Data { mem, elem, soa } = &module.types()[def.ty].class else {
            self.fail(
                span,
                format!("`{ty_name}` is a thread array: a body creates only smem and rmem types"),
            );
            return None;
        };
        let (mem, elem, soa) = (*mem, *elem, *soa);
        match (mem, self.target) {
            (Some(MemKind::Smem | MemKind::Rmem), Target::Cuda) => {}
            (Some(MemKind::Smem | MemKind::Rmem), Target::Pthd) => {
                self.fail(
                    span,
                    format!(
                        "`{ty_name}` is smem/rmem memory, which exists only inside cuda detours"
                    ),
                );
                return None;
            }
            _ => {
                self.fail(span, format!("create `{ty_name}` on the host and hand it to the detour: a detour body creates only smem and rmem types"));
                return None;
            }
        }
        let mem = mem.expect("matched above");
        // A fragment (SPEC 2.14) is created as this thread's part, in a body of the
        // thread array whose block holds it.
        let part = match &module.types()[def.ty].distribution {
            Some(d) if d.holders == Holders::Threads => {
                let here = self.forms.threads.as_ref().map(|t| t.name.as_str());
                if here != Some(d.over.as_str()) {
                    self.fail(
                        span,
                        format!(
                            "`{ty_name}` is a fragment over the threads of `{}`'s block: a detour of `{}` creates it",
                            d.over, d.over
                        ),
                    );
                    return None;
                }
                Some(d.part)
            }
            _ => None,
        };
        let slot = self.shared_slots;
        if mem == MemKind::Smem {
            self.shared_slots += 1;
        }
        // Sized at run time: its extent at the bound sizes, a type argument of the
        // detour (whose kernel is specialised at them).
        let len = match (part, self.forms.is_runtime(ty_name)) {
            (Some(part), _) => Len::Fixed(part),
            (None, true) => {
                self.forms.take_runtime(ty_name, span);
                Len::AtRunTime
            }
            (None, false) => Len::Fixed(module.extent(def.node)),
        };
        let local = self.declare(&ident.to_string(), ident.span(), false, None, false);
        Some(Stmt::Create {
            local,
            type_name: ty_name.to_string(),
            elem,
            mem,
            len,
            soa,
            slot,
            loc: loc(stmt),
        })
    }

    fn macro_stmt(&mut self, mac: &syn::Macro) -> Option<Stmt> {
        let span = mac.span();
        if mac.path.is_ident(DOLLAR) {
            let expr = self.dollar(mac);
            return Some(Stmt::Expr {
                expr,
                loc: loc(span),
            });
        }
        let what = match mac.path.is_ident(MMA) {
            true => "`#mma`".to_string(),
            false => format!("`{}`", macro_name(mac)),
        };
        if self.in_function(span, &what) {
            return None;
        }
        if mac.path.is_ident(SYNC) {
            let level = mac.tokens.to_string();
            let ok = match self.target {
                Target::Pthd => level == "sync",
                Target::Cuda => level == "sync" || level == "sync_1",
            };
            if !ok {
                let msg = match self.target {
                    Target::Pthd => "a pthd body synchronises its array: write `#sync`",
                    Target::Cuda => {
                        "a cuda body synchronises its block: write `#sync` or `#sync_1`"
                    }
                };
                self.fail(span, msg);
            }
            return Some(Stmt::Sync { loc: loc(span) });
        }
        if mac.path.is_ident(COPY) {
            return self.copy(mac);
        }
        if mac.path.is_ident(MBARRIER) {
            return self.mbarrier(mac);
        }
        if mac.path.is_ident(SETMAXNREG) {
            return self.setmaxnreg(mac);
        }
        if mac.path.is_ident(WAIT)
            && mac
                .tokens
                .clone()
                .into_iter()
                .any(|t| matches!(t, proc_macro2::TokenTree::Ident(i) if i == "parity"))
        {
            return self.parity_wait(mac);
        }
        if mac.path.is_ident(WAIT) {
            let Ok(groups) = syn::parse2::<syn::LitInt>(mac.tokens.clone())
                .and_then(|n| n.base10_parse::<u32>())
            else {
                self.fail(span, "expected `#wait N;` (N a number): the thread waits until at most N of its `#copy async`s are in flight (`#wait 0;`: until all have landed)");
                return None;
            };
            return Some(Stmt::Wait {
                groups,
                loc: loc(span),
            });
        }
        if mac.path.is_ident(MMA) {
            return self.mma(mac);
        }
        let name = macro_name(mac);
        if name == "println" || name == "print" {
            return self.print(mac, name == "println");
        }
        self.fail(
            span,
            format!("the macro `{name}!` is not part of the detour body subset (only `println!` and `print!`)"),
        );
        None
    }

    /// The barrier operand `B(b)` of a TMA form (`what`, SPEC 3.9, "TMA copies"): `B` a
    /// type of `mbarrier` elements, `b` lowered (the type check sees that it is a shared
    /// array of them, or one plus an offset). An error at the form or at `B` otherwise.
    fn barrier_operand(&mut self, ty: &Ident, place: TokenStream, what: &str) -> Option<Expr> {
        let name = ty.to_string();
        let module = self.forms.module;
        match module.lookup(&name).map(|d| &module.types()[d.ty].class) {
            Ok(TypeClass::Data {
                elem: ElemType::Mbarrier,
                ..
            }) => {}
            Ok(TypeClass::Data { elem, .. }) => {
                self.fail(ty.span(), format!("{what} names an mbarrier, and `{name}` is a type of {elem}: name a type of barriers, declared `smem mbarrier [S] FULL;` and created in the body (`let full = FULL::create();`)"));
                return None;
            }
            _ => {
                self.fail(ty.span(), format!("{what} names an mbarrier by its type, a shared array of `mbarrier`s (`smem mbarrier [S] FULL;`), and `{name}` is no such type"));
                return None;
            }
        }
        let place = syn::parse2::<syn::Expr>(place)
            .map_err(|e| self.errors.push(e))
            .ok()?;
        Some(self.expr(&place))
    }

    /// Whether the TMA form `what` may be written here: a cuda body's (SPEC 3.9).
    fn tma_target(&mut self, span: Span, what: &str) -> bool {
        if self.target != Target::Cuda {
            self.fail(
                span,
                format!(
                    "{what} is a GPU's (Hopper's TMA and mbarriers): it exists in cuda bodies only"
                ),
            );
        }
        self.target == Target::Cuda
    }

    /// `#mbarrier init B(b) arrivals N;` and `#mbarrier arrive B(b);` (SPEC 3.9).
    fn mbarrier(&mut self, mac: &syn::Macro) -> Option<Stmt> {
        use proc_macro2::TokenTree as T;
        const FORM: &str = "expected `#mbarrier init B(b) arrivals N;` (one thread, before a `#sync`: each phase of the barrier `b` completes with N arrivals and the bytes its TMA copies expect) or `#mbarrier arrive B(b);` (the thread's arrival on the barrier's phase)";
        let span = mac.span();
        if !self.tma_target(span, "`#mbarrier`") {
            return None;
        }
        let tts: Vec<T> = mac.tokens.clone().into_iter().collect();
        match tts.as_slice() {
            [T::Ident(init), T::Ident(b), T::Group(g), T::Ident(arrivals), rest @ ..]
                if init == "init"
                    && arrivals == "arrivals"
                    && g.delimiter() == proc_macro2::Delimiter::Parenthesis
                    && !rest.is_empty() =>
            {
                let bar = self.barrier_operand(b, g.stream(), "`#mbarrier init`")?;
                let n = syn::parse2::<syn::Expr>(rest.iter().cloned().collect())
                    .map_err(|e| self.errors.push(e))
                    .ok()?;
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) = &n
                {
                    let ok = i
                        .base10_parse::<u64>()
                        .is_ok_and(|v| (1..1 << 20).contains(&v));
                    if !ok {
                        self.fail(
                            i.span(),
                            "an mbarrier's phase completes with 1 to 2^20 - 1 arrivals",
                        );
                        return None;
                    }
                }
                let arrivals = self.expr(&n);
                Some(Stmt::MbarrierInit {
                    bar,
                    arrivals,
                    loc: loc(span),
                })
            }
            [T::Ident(arrive), T::Ident(b), T::Group(g)]
                if arrive == "arrive" && g.delimiter() == proc_macro2::Delimiter::Parenthesis =>
            {
                let bar = self.barrier_operand(b, g.stream(), "`#mbarrier arrive`")?;
                Some(Stmt::MbarrierArrive {
                    bar,
                    loc: loc(span),
                })
            }
            _ => {
                self.fail(span, FORM);
                None
            }
        }
    }

    /// `#setmaxnreg inc N;` and `#setmaxnreg dec N;` (SPEC 3.9, "Roles"): N a literal, 24
    /// to 256 and a multiple of 8, as the instruction requires.
    fn setmaxnreg(&mut self, mac: &syn::Macro) -> Option<Stmt> {
        use proc_macro2::TokenTree as T;
        const FORM: &str = "expected `#setmaxnreg inc N;` or `#setmaxnreg dec N;`: the warpgroup's threads raise (a consumer role) or lower (a producer role) their register budget to N, a number from 24 to 256 and a multiple of 8";
        let span = mac.span();
        if !self.tma_target(span, "`#setmaxnreg`") {
            return None;
        }
        let tts: Vec<T> = mac.tokens.clone().into_iter().collect();
        let [T::Ident(how), T::Literal(n)] = tts.as_slice() else {
            self.fail(span, FORM);
            return None;
        };
        let inc = match how.to_string().as_str() {
            "inc" => true,
            "dec" => false,
            _ => {
                self.fail(how.span(), FORM);
                return None;
            }
        };
        let regs = syn::parse2::<syn::LitInt>(T::Literal(n.clone()).into())
            .ok()
            .and_then(|i| i.base10_parse::<u32>().ok())
            .filter(|r| (24..=256).contains(r) && r % 8 == 0);
        let Some(regs) = regs else {
            self.fail(n.span(), FORM);
            return None;
        };
        Some(Stmt::SetMaxNreg {
            inc,
            regs,
            loc: loc(span),
        })
    }

    /// `#wait B(b) parity P;`: the thread waits for the barrier's phase of parity `P`
    /// (SPEC 3.9, "TMA copies").
    fn parity_wait(&mut self, mac: &syn::Macro) -> Option<Stmt> {
        use proc_macro2::TokenTree as T;
        let span = mac.span();
        let tts: Vec<T> = mac.tokens.clone().into_iter().collect();
        match tts.as_slice() {
            [T::Ident(b), T::Group(g), T::Ident(parity), rest @ ..]
                if parity == "parity"
                    && g.delimiter() == proc_macro2::Delimiter::Parenthesis
                    && !rest.is_empty() =>
            {
                if !self.tma_target(span, "`#wait B(b) parity P;`") {
                    return None;
                }
                let bar = self.barrier_operand(b, g.stream(), "`#wait .. parity`")?;
                let p = syn::parse2::<syn::Expr>(rest.iter().cloned().collect())
                    .map_err(|e| self.errors.push(e))
                    .ok()?;
                let parity = self.expr(&p);
                Some(Stmt::MbarrierWait {
                    bar,
                    parity,
                    loc: loc(span),
                })
            }
            _ => {
                self.fail(span, "expected `#wait N;` (N a number: the thread's `#copy async` groups left in flight) or `#wait B(b) parity P;` (the thread waits until the mbarrier `b`'s phase of parity P, 0 or 1, has completed)");
                None
            }
        }
    }

    /// `#copy async S(p) to D(q) on B(b);`: a TMA copy (SPEC 3.9, "TMA copies") of the
    /// box the planner makes of `S` and `D`, from the kernel's pointer parameter `p`
    /// (plus an offset) into shared memory at `q`, completing on the mbarrier `b`.
    fn tma_copy(
        &mut self,
        (src_ty, src): (&Ident, TokenStream),
        (dst_ty, dst): (&Ident, TokenStream),
        (bar_ty, bar): (&Ident, TokenStream),
        span: Span,
    ) -> Option<Stmt> {
        if !self.tma_target(span, "a TMA copy (`#copy async .. on B(b)`)") {
            return None;
        }
        let module = self.forms.module;
        // A source of sizes given at run time is planned at a probe here (its errors are
        // compile errors) and again when the kernel is specialised at the bound sizes; the
        // box is the destination's, of literal sizes.
        let dst_name = dst_ty.to_string();
        if self.forms.is_runtime(crate::resolve::base_name(&dst_name)) {
            self.fail(dst_ty.span(), format!("a TMA copy's box is its destination, whose sizes the kernel's shared memory and its mbarrier's byte count need when the program is built: `{dst_name}` has sizes given at run time; declare the shared tile of literal sizes (its source may have sizes given at run time)"));
            return None;
        }
        let src_name = src_ty.to_string();
        let runtime_src = self.forms.is_runtime(crate::resolve::base_name(&src_name));
        // Both types are bound when the kernel is specialised, as a generic copy's are.
        if runtime_src {
            for ty in [src_ty, dst_ty] {
                let name = ty.to_string();
                let base = crate::resolve::base_name(&name);
                match self.forms.is_runtime(base) {
                    true => self.forms.take_runtime(base, ty.span()),
                    false => self.forms.bind_literal(base, ty.span()),
                }
            }
        }
        let plan = match parray_layout::tma::plan(module, &src_name, &dst_name) {
            Ok(plan) => plan,
            Err(e) => {
                self.fail(dst_ty.span(), format!("`#copy async .. on` copies by TMA, and its planner refuses `{src_ty}` to `{dst_ty}`: {}", e.message));
                return None;
            }
        };
        let elem = module.lookup(&src_ty.to_string()).ok().and_then(|d| {
            match module.types()[d.ty].class {
                TypeClass::Data { elem, .. } => Some(elem),
                _ => None,
            }
        });
        if let Some(e) = elem.filter(|e| {
            !matches!(
                e,
                ElemType::Bf16
                    | ElemType::Half
                    | ElemType::Float
                    | ElemType::Double
                    | ElemType::Int
                    | ElemType::Unsigned
                    | ElemType::Long
                    | ElemType::Char
                    | ElemType::UChar
            )
        }) {
            self.fail(src_ty.span(), format!("TMA copies elements of its data types (bf16, half, float, double, int, unsigned, long, char, uchar), and `{src_ty}`'s are {e}: copy with `#copy async S(p) to D(q);` (`cp.async`)"));
            return None;
        }
        let parse = |this: &mut Self, t: TokenStream| {
            syn::parse2::<syn::Expr>(t)
                .map_err(|e| this.errors.push(e))
                .ok()
        };
        let (src, dst) = (parse(self, src)?, parse(self, dst)?);
        let (base, offsets) = split_offsets(self.expr(&src));
        let param = match base.kind {
            // Its number among the kernel's parameters, which are declared first, in order.
            ExprKind::Local(id) if self.locals[id.0 as usize].param => self.locals[..id.0 as usize]
                .iter()
                .filter(|l| l.param)
                .count(),
            _ => {
                self.fail(base.span.proc_macro(), format!("a TMA copy reads through a tensor map the launch encodes over an array the kernel is given: the source of `{src_ty}` is a pointer parameter of the kernel, or one plus an offset (`a + $A[..]$`)"));
                return None;
            }
        };
        let offset = offsets
            .into_iter()
            .rev()
            .reduce(|acc, o| {
                let at = o.span;
                Expr::new(ExprKind::Binary(BinOp::Add, Box::new(acc), Box::new(o)), at)
            })
            .unwrap_or_else(|| Expr::new(ExprKind::Size(0), span));
        let dst = self.expr(&dst);
        let bar = self.barrier_operand(bar_ty, bar, "`#copy async .. on`")?;
        let map = self.tma_maps;
        self.tma_maps += 1;
        Some(Stmt::Tma {
            src: base,
            offset: Box::new(offset),
            dst,
            bar: Box::new(bar),
            tma: Box::new(parray_compiler::ir::Tma {
                src_ty: src_ty.to_string(),
                dst_ty: dst_ty.to_string(),
                param,
                box_elems: plan.box_bytes() / plan.elem_bytes,
                elem_bytes: plan.elem_bytes,
                swizzle: plan.swizzle,
                plan: (!runtime_src).then_some(plan),
                map,
            }),
            loc: loc(span),
        })
    }

    /// `#mma D(d) += A(a) * B(b)`: the warp's `mma.sync.aligned.m16n8k16.row.col` over the
    /// fragments `d`, `a`, `b` (arrays the body created), or, where A and B are tiles in
    /// shared memory (`a`, `b` pointers into them), the warpgroup's wgmma m64nNk16; the
    /// types `D`, `A`, `B` are checked here against the instruction's layouts and matrix
    /// descriptors (SPEC 3.5, "MMA").
    fn mma(&mut self, mac: &syn::Macro) -> Option<Stmt> {
        use proc_macro2::TokenTree as T;
        let span = mac.span();
        let tts: Vec<T> = mac.tokens.clone().into_iter().collect();
        let punct = |t: &T, c: char| matches!(t, T::Punct(p) if p.as_char() == c);
        let operand = |ty: &T, place: &T| match (ty, place) {
            (T::Ident(ty), T::Group(g)) if g.delimiter() == proc_macro2::Delimiter::Parenthesis => {
                Some((ty.clone(), g.stream()))
            }
            _ => None,
        };
        // `#mma async ...`: a wgmma that completes at a `#mma wait N D(d);`.
        let word = |t: Option<&T>, w: &str| matches!(t, Some(T::Ident(i)) if i == w);
        let (asynchronous, wait) = (word(tts.first(), "async"), word(tts.first(), "wait"));
        let form = &tts[usize::from(asynchronous || wait)..];
        if wait {
            const WAIT_FORM: &str = "expected `#mma wait N D(d);` (N a number): the warpgroup waits until at most N of its groups of asynchronous wgmmas (each run of `#mma async` is one) are in flight, `#mma wait 0 D(d);` until all are complete, `d` their accumulator of type D";
            let groups = match form.first() {
                Some(T::Literal(n)) => syn::parse2::<syn::LitInt>(n.to_token_stream())
                    .and_then(|n| n.base10_parse::<u32>())
                    .ok(),
                _ => None,
            };
            return match (groups, &form[form.len().min(1)..]) {
                (Some(groups), [d, dp]) => match operand(d, dp) {
                    Some(d) => self.mma_wait(d, groups, span),
                    None => {
                        self.fail(span, WAIT_FORM);
                        None
                    }
                },
                _ => {
                    self.fail(span, WAIT_FORM);
                    None
                }
            };
        }
        let parsed = match form {
            [d, dp, plus, eq, a, ap, star, b, bp]
                if punct(plus, '+') && punct(eq, '=') && punct(star, '*') =>
            {
                operand(d, dp).zip(operand(a, ap)).zip(operand(b, bp))
            }
            _ => None,
        };
        let Some(((d, a), b)) = parsed else {
            self.fail(span, "expected `#mma D(d) += A(a) * B(b);`: the warp's mma.sync m16n8k16, d[m][n] += sum over k of a[m][k] * b[k][n], where `a`, `b` and `d` are arrays created by `A::create()`, `B::create()`, `D::create()` of the fragment types A (16 x 16, bf16 or half), B (16 x 8) and D (16 x 8, float); or, A and B shared tiles (`a`, `b` pointers into shared arrays), the warpgroup's wgmma m64nNk16 into D (64 x N, float)");
            return None;
        };
        if self.target != Target::Cuda {
            self.fail(
                span,
                "`#mma` is executed by the 32 lanes of a GPU warp: it exists in cuda bodies only",
            );
            return None;
        }
        let threads = self.forms.threads.as_ref()?.name.clone();
        let module = self.forms.module;
        use parray_compiler::mma::{self as mma, Instruction, Operand};
        for ty in [&d, &a, &b] {
            let name = ty.0.to_string();
            if self
                .forms
                .generics
                .iter()
                .any(|g| g.name == crate::resolve::base_name(&name))
            {
                self.fail(
                    ty.0.span(),
                    format!(
                        "`#mma` names declared fragment types, not the type parameter `{name}`"
                    ),
                );
                return None;
            }
        }
        // Register fragments make an mma.sync, shared tiles a wgmma (N from D's type).
        let instr = match mma::is_tile(module, &a.0.to_string()) {
            false => Instruction::MmaSync,
            true => match mma::wgmma_of(module, &d.0.to_string()) {
                Ok(i) => i,
                Err(e) => {
                    self.fail(d.0.span(), e);
                    return None;
                }
            },
        };
        if let Err(e) = mma::check_block(module, &threads, instr) {
            self.fail(span, e);
            return None;
        }
        if asynchronous && instr == Instruction::MmaSync {
            self.fail(span, "`#mma async` is a wgmma's (A and B tiles in shared memory): an mma.sync completes where it is");
            return None;
        }
        let mut elems = Vec::new();
        let mut places = Vec::new();
        let mut tiles = Vec::new();
        let d_type = d.0.to_string();
        for ((ty, place), op) in [(a, Operand::A), (b, Operand::B), (d, Operand::D)] {
            let name = ty.to_string();
            let checked = match (instr, op) {
                (Instruction::Wgmma { .. }, Operand::A | Operand::B) => {
                    mma::descriptor(module, &name, op, instr).map(|(desc, elem, offsets)| {
                        tiles.push((desc, offsets));
                        elem
                    })
                }
                _ => mma::check_operand(module, &threads, &name, op, instr),
            };
            match checked {
                Ok(elem) => elems.push((ty.span(), elem)),
                Err(e) => {
                    self.fail(ty.span(), e);
                    return None;
                }
            }
            let place = syn::parse2::<syn::Expr>(place)
                .map_err(|e| self.errors.push(e))
                .ok()?;
            let at = place.span();
            let e = self.expr(&place);
            // A wgmma's tiles are pointers into shared arrays (the type check says so).
            let tile = matches!(instr, Instruction::Wgmma { .. }) && op != Operand::D;
            if !tile && !matches!(e.kind, ExprKind::Local(_)) {
                self.fail(at, format!("an operand of `#mma` is the thread's array of the fragment, created in the body (`let x = {name}::create();`)"));
                return None;
            }
            places.push(e);
        }
        let (a_elem, b_elem) = (elems[0].1, elems[1].1);
        if a_elem != b_elem {
            self.fail(
                elems[1].0,
                format!(
                    "A and B have one element type: A's is `{}`, B's `{}`",
                    a_elem.c_name(),
                    b_elem.c_name()
                ),
            );
            return None;
        }
        let input = Scalar::of_elem(a_elem).expect("checked: bf16, half or float");
        let [a, b, d]: [Expr; 3] = places.try_into().expect("three operands");
        if let (Instruction::Wgmma { .. }, ExprKind::Local(id)) = (instr, &d.kind) {
            self.accumulators.entry(*id).or_insert(d_type);
        }
        let wgmma = match (instr, <[_; 2]>::try_from(tiles)) {
            (Instruction::Wgmma { n }, Ok([(da, ao), (db, bo)])) => Some(Box::new(Wgmma {
                n: n as u32,
                a: da,
                b: db,
                a_offsets: ao,
                b_offsets: bo,
                wait: !asynchronous,
            })),
            _ => None,
        };
        Some(Stmt::Mma {
            input,
            a,
            b,
            d,
            wgmma,
            loc: loc(span),
        })
    }

    /// `#mma wait N D(d);`: the warpgroup's wait until at most `groups` of its groups of
    /// asynchronous wgmmas into `d` are in flight, whose type `D` is checked as their
    /// accumulator (SPEC 3.5, "MMA").
    fn mma_wait(
        &mut self,
        (ty, place): (Ident, TokenStream),
        groups: u32,
        span: Span,
    ) -> Option<Stmt> {
        use parray_compiler::mma::{self as mma, Operand};
        if self.target != Target::Cuda {
            self.fail(
                span,
                "`#mma wait` waits for a GPU warpgroup's wgmmas: it exists in cuda bodies only",
            );
            return None;
        }
        let threads = self.forms.threads.as_ref()?.name.clone();
        let module = self.forms.module;
        let name = ty.to_string();
        let checked = mma::wgmma_of(module, &name).and_then(|instr| {
            mma::check_block(module, &threads, instr)?;
            mma::check_operand(module, &threads, &name, Operand::D, instr)?;
            Ok(instr)
        });
        let n = match checked {
            Ok(mma::Instruction::Wgmma { n }) => n,
            Ok(mma::Instruction::MmaSync) => unreachable!("wgmma_of makes a wgmma"),
            Err(e) => {
                self.fail(ty.span(), e);
                return None;
            }
        };
        let place = syn::parse2::<syn::Expr>(place)
            .map_err(|e| self.errors.push(e))
            .ok()?;
        let at = place.span();
        let d = self.expr(&place);
        let ExprKind::Local(id) = d.kind else {
            self.fail(at, format!("`#mma wait` names the thread's array of the accumulator, created in the body (`let x = {name}::create();`)"));
            return None;
        };
        self.accumulators.entry(id).or_insert(name);
        Some(Stmt::MmaWait {
            d,
            regs: (n / 2) as u32,
            groups,
            loc: loc(span),
        })
    }

    /// `#copy S(p) to D(q)`: element `k` of `S` at `p` goes to element `k` of `D` at `q`,
    /// for every `k` in logical order; desugared here into the body's own statements (a
    /// loop, unrolled when short, of `q[$D[k]$] = p[$S[k]$]`), so every back end, the type
    /// check and the bounds proofs treat it as the body they already know.
    fn copy(&mut self, mac: &syn::Macro) -> Option<Stmt> {
        let span = mac.span();
        let CopyForm {
            asynchronous,
            src_ty,
            src,
            dst_ty,
            dst,
            guard,
            on,
        } = match CopyForm::parse(mac) {
            Ok(form) => form,
            Err(e) => {
                self.errors.push(e);
                return None;
            }
        };
        if let Some((bar_ty, bar)) = on {
            return self.tma_copy((&src_ty, src), (&dst_ty, dst), (&bar_ty, bar), span);
        }
        for ty in [&src_ty, &dst_ty] {
            let name = ty.to_string();
            if self
                .forms
                .generics
                .iter()
                .any(|g| !g.runtime && g.name == crate::resolve::base_name(&name))
            {
                self.fail(ty.span(), format!("`#copy` of the type parameter `{name}` is not implemented yet: copy between declared types"));
                return None;
            }
        }
        let sixteen = match asynchronous.is_some() && self.target == Target::Cuda {
            true => self.async_sides(&src_ty, &dst_ty)?,
            false => false,
        };
        let (src, dst) = (
            syn::parse2::<syn::Expr>(src)
                .map_err(|e| self.errors.push(e))
                .ok()?,
            syn::parse2::<syn::Expr>(dst)
                .map_err(|e| self.errors.push(e))
                .ok()?,
        );
        let (src, dst) = (
            split_offsets(self.expr(&src)),
            split_offsets(self.expr(&dst)),
        );
        let end = |ty: &Ident, (base, offsets): (Expr, Vec<Expr>)| CopyEnd {
            ty: ty.to_string(),
            base,
            offsets,
        };
        let (src, dst) = (end(&src_ty, src), end(&dst_ty, dst));
        let made = self.scoped(|this| {
            // `|k|` names the copy's own index; `|i, j|` its digits.
            let (k, guard) = match guard {
                None => (this.declare("__parray_k", span, false, None, false), None),
                Some(g) => {
                    let digits: Vec<_> = g
                        .names
                        .iter()
                        .map(|n| this.declare(&n.to_string(), n.span(), false, None, false))
                        .collect();
                    let k = match digits.as_slice() {
                        [k] => *k,
                        _ => this.declare("__parray_k", span, false, None, false),
                    };
                    let pred = this.expr(&g.pred);
                    let fill = g.fill.as_ref().map(|f| this.expr(f));
                    (k, Some(Box::new(CopyGuard { digits, pred, fill })))
                }
            };
            let copy = CopySpec {
                src,
                dst,
                k,
                vectors: this.target == Target::Cuda,
                guard,
                threads: match this.target {
                    Target::Cuda => this.forms.threads.as_ref().map(|t| t.name.clone()),
                    _ => None,
                },
                span: span.into(),
                loc: loc(span),
            };
            // Made here for literal types; for types of sizes given at run time, made
            // here at the probe (so that its errors are compile errors) and again at the
            // bound sizes by the kernel's specialisation.
            let module = this.forms.module;
            let made = match parray_compiler::copy::lower(&copy, module, module) {
                Ok(made) => made,
                Err(e) => {
                    let at = match e.part {
                        CopyPart::Src => src_ty.span(),
                        CopyPart::Dst => dst_ty.span(),
                        CopyPart::Whole => span,
                    };
                    this.fail(at, e.message);
                    return None;
                }
            };
            // A fragment's copy (SPEC 3.9) names the thread's digits.
            let fragment = [&copy.src.ty, &copy.dst.ty].into_iter().any(|ty| {
                module.lookup(ty).is_ok_and(|d| {
                    module.types()[d.ty]
                        .distribution
                        .as_ref()
                        .is_some_and(|d| d.holders == Holders::Threads)
                })
            });
            let mut tids = Vec::new();
            parray_compiler::ir::visit_exprs([&made], &mut |e| {
                if let ExprKind::Tid(path) = &e.kind {
                    tids.push(path.clone());
                }
            });
            for path in &tids {
                if let Err(e) = this.forms.use_tid(path, span) {
                    this.errors.push(e);
                    return None;
                }
            }
            if !this.forms.is_runtime(&copy.src.ty) && !this.forms.is_runtime(&copy.dst.ty) {
                return Some(made);
            }
            if fragment {
                this.fail(span, "a `#copy` to or from a fragment moves a tile of sizes known when the program is built");
                return None;
            }
            let scalar = this.generic_copy(&copy, [&src_ty, &dst_ty])?;
            Some(Stmt::GenericCopy {
                copy: Box::new(copy),
                scalar,
                loc: loc(span),
            })
        })?;
        // 16-bit elements go by `cp.async`s of vectors (4 bytes at least): a copy whose
        // types have no runs of them in common has nothing to give it. Sizes given at run
        // time are known when the kernel is specialised, where a 2-byte move is made at
        // once (SPEC 3.9).
        let mut vectors = matches!(made, Stmt::GenericCopy { .. });
        parray_compiler::ir::visit_exprs([&made], &mut |e| {
            vectors |= matches!(e.kind, ExprKind::Vector { .. })
        });
        if sixteen && !vectors {
            self.fail(src_ty.span(), format!("`#copy async` moves 16-bit elements in vectors of 2, 4 or 8 (`cp.async` moves 4, 8 or 16 bytes), and `{src_ty}` and `{dst_ty}` have no aligned runs of 2 elements in common: lay both out with rows of a multiple of 8 elements (16 bytes), or copy without `async`"));
            return None;
        }
        Some(match asynchronous {
            Some(_) => Stmt::Async {
                body: vec![made],
                loc: loc(span),
            },
            None => made,
        })
    }

    /// The sides of a cuda body's `#copy async` (SPEC 3.9, "Asynchronous copies"): from
    /// global memory into shared memory, elements of 4, 8 or 16 bytes (the sizes a
    /// `cp.async` moves) or of 2, moved in vectors; an error at the side's type otherwise.
    /// Whether the elements are of 2 bytes.
    fn async_sides(&mut self, src: &Ident, dst: &Ident) -> Option<bool> {
        let mut sixteen = false;
        let module = self.forms.module;
        for (ty, want) in [(src, MemKind::Dmem), (dst, MemKind::Smem)] {
            let name = ty.to_string();
            let Ok(d) = module.lookup(&name) else {
                // Not a type of this module: the copy's own check says so.
                continue;
            };
            let TypeClass::Data { mem, elem, .. } = module.types()[d.ty].class else {
                continue;
            };
            if mem.is_some_and(|m| m != want) {
                let (side, what) = match want {
                    MemKind::Dmem => ("source", "global memory (dmem)"),
                    _ => (
                        "destination",
                        "shared memory (smem, an array the body created)",
                    ),
                };
                self.fail(ty.span(), format!("`#copy async` copies from global memory into shared memory (`cp.async`): its {side} `{name}` must be a type of {what}; copy without `async` between other memories"));
                return None;
            }
            sixteen |= elem.size_bytes() == 2;
            let refused = match elem {
                ElemType::Record(_) => Some(format!("`{name}`'s elements are records")),
                _ if !matches!(elem.size_bytes(), 2 | 4 | 8 | 16) => Some(format!(
                    "`{name}`'s `{}` is {} bytes",
                    elem.keyword(),
                    elem.size_bytes()
                )),
                _ => None,
            };
            if let Some(why) = refused {
                self.fail(ty.span(), format!("`#copy async` moves numbers or vectors of 4, 8 or 16 bytes (`cp.async`'s sizes; 16-bit elements in vectors of them), and {why}: copy without `async`, or declare the types with elements of those sizes"));
                return None;
            }
        }
        Some(sixteen)
    }

    /// The element loop of a `#copy` whose types are resolved when the program runs
    /// ([`Stmt::GenericCopy`]): `D(b)[k] = S(a)[k]` for `k` below the source's size, each
    /// side's element `k` a generic form. Both types are bound when the kernel is
    /// specialised.
    fn generic_copy(&mut self, copy: &CopySpec, types: [&Ident; 2]) -> Option<Vec<Stmt>> {
        let span = copy.span;
        for ty in types {
            let name = ty.to_string();
            let base = crate::resolve::base_name(&name);
            match self.forms.is_runtime(base) {
                true => self.forms.take_runtime(base, ty.span()),
                false => self.forms.bind_literal(base, ty.span()),
            }
        }
        let k = || Expr::new(ExprKind::Local(copy.k), span);
        let element = |end: &CopyEnd| {
            let index = RuntimeIndex {
                text: format!("{}[__parray_k]", end.ty),
                vars: vec!["__parray_k".to_string()],
            };
            let ty = crate::resolve::base_name(&end.ty).to_string();
            let ie = parray_layout::parse_index_expr(&index.text).ok();
            let sizes = ie.and_then(|ie| self.forms.form_sizes(&ty, &ie, &index.vars));
            let mut at = Expr::new(
                ExprKind::GenericOffset {
                    ty,
                    index,
                    args: vec![k()],
                    sizes,
                },
                span,
            );
            for o in &end.offsets {
                at = Expr::new(
                    ExprKind::Binary(BinOp::Add, Box::new(o.clone()), Box::new(at)),
                    span,
                );
            }
            Box::new(Expr::new(
                ExprKind::Index(
                    Box::new(end.base.clone()),
                    Box::new(at),
                    Check::Checked(None),
                ),
                span,
            ))
        };
        let src = parray_layout::DimPath::split(&copy.src.ty);
        let n = Expr::new(
            ExprKind::GenericSize {
                ty: src.name.to_string(),
                path: src.children.clone(),
                size: self.forms.dim_size(src.name, &src.children),
            },
            span,
        );
        let (place, value) = (element(&copy.dst), element(&copy.src));
        let body = match &copy.guard {
            None => vec![Stmt::Expr {
                expr: Expr::new(ExprKind::Assign(None, place, value), span),
                loc: copy.loc,
            }],
            Some(g) => {
                // The source's top-level dimensions, as generic sizes.
                let node = self.forms.module.lookup(&copy.src.ty).ok()?.node;
                let rank = self.forms.module.node(node).children.len().max(1);
                let sizes: Vec<Expr> = (0..rank)
                    .map(|j| {
                        let path = match self.forms.module.node(node).children.is_empty() {
                            true => src.children.clone(),
                            false => [src.children.clone(), vec![j]].concat(),
                        };
                        Expr::new(
                            ExprKind::GenericSize {
                                ty: src.name.to_string(),
                                size: self.forms.dim_size(src.name, &path),
                                path,
                            },
                            span,
                        )
                    })
                    .collect();
                parray_compiler::copy::guarded_move(copy, g, &sizes, place, value)
            }
        };
        Some(vec![Stmt::For {
            var: copy.k,
            start: Expr::new(ExprKind::Size(0), span),
            end: n,
            inclusive: false,
            unroll: None,
            body,
            loc: copy.loc,
        }])
    }

    /// `println!("a {} b {}", x, y)`: plain `{}` placeholders, one meaning everywhere.
    fn print(&mut self, mac: &syn::Macro, newline: bool) -> Option<Stmt> {
        let span = mac.span();
        let Ok(args) = mac.parse_body_with(Punctuated::<syn::Expr, Token![,]>::parse_terminated)
        else {
            self.fail(
                span,
                "expected a format string and comma-separated arguments",
            );
            return None;
        };
        let mut args = args.into_iter();
        let Some(syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Str(fmt),
            ..
        })) = args.next()
        else {
            self.fail(span, "expected a format string");
            return None;
        };
        let mut pieces = vec![String::new()];
        let text = fmt.value();
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            match (c, chars.peek()) {
                ('{', Some('{')) | ('}', Some('}')) => {
                    chars.next();
                    pieces.last_mut().expect("a piece").push(c);
                }
                ('{', Some('}')) => {
                    chars.next();
                    pieces.push(String::new());
                }
                ('{' | '}', _) => {
                    self.fail(
                        fmt.span(),
                        "a detour body's format strings use plain `{}` placeholders only",
                    );
                    return None;
                }
                _ => pieces.last_mut().expect("a piece").push(c),
            }
        }
        let args: Vec<Expr> = args.map(|a| self.expr(&a)).collect();
        if args.len() + 1 != pieces.len() {
            self.fail(
                span,
                format!(
                    "{} placeholders but {} arguments",
                    pieces.len() - 1,
                    args.len()
                ),
            );
            return None;
        }
        Some(Stmt::Print {
            pieces,
            args,
            newline,
            loc: loc(span),
        })
    }

    fn expr_stmt(&mut self, e: &syn::Expr) -> Option<Stmt> {
        let span = e.span();
        Some(match e {
            syn::Expr::If(i) => self.if_stmt(i),
            syn::Expr::While(w) => {
                if w.label.is_some() {
                    self.subset(span, "a loop label");
                }
                let cond = self.expr(&w.cond);
                self.loops += 1;
                let body = self.block(&w.body);
                self.loops -= 1;
                Stmt::While {
                    cond,
                    body,
                    loc: loc(span),
                }
            }
            syn::Expr::ForLoop(f) => return self.for_loop(f),
            syn::Expr::Block(b) if b.label.is_none() => Stmt::Block {
                body: self.block(&b.block),
                loc: loc(span),
            },
            syn::Expr::Break(b) if b.label.is_none() && b.expr.is_none() => {
                self.in_loop(span, "break");
                Stmt::Break { loc: loc(span) }
            }
            syn::Expr::Continue(c) if c.label.is_none() => {
                self.in_loop(span, "continue");
                Stmt::Continue { loc: loc(span) }
            }
            syn::Expr::Return(r) if r.expr.is_none() => {
                if let Some(f) = self.in_collective() {
                    self.fail(span, format!("`return` cannot be in a collective function (`{f}` shuffles, and a cuda body inlines it at each call, where `return` would end the body): give it one exit, its last expression"));
                }
                Stmt::Return { loc: loc(span) }
            }
            syn::Expr::Macro(m) => return self.macro_stmt(&m.mac),
            // A collective function called as a statement: its statements, and its value's.
            syn::Expr::Call(c) if self.is_collective(c) => {
                let name = self.callee(c)?;
                let value = self.inline(c, &name)??;
                Stmt::Expr {
                    expr: value,
                    loc: loc(span),
                }
            }
            _ => {
                // The value of an assignment stands alone (`v = f(x);`, `s += f(x);`).
                let alone = match e {
                    syn::Expr::Assign(a) => &a.right,
                    syn::Expr::Binary(b) if binop(&b.op).1 => &b.right,
                    e => e,
                };
                Stmt::Expr {
                    expr: self.with_standing(alone, e),
                    loc: loc(span),
                }
            }
        })
    }

    fn in_loop(&mut self, span: Span, what: &str) {
        if self.loops == 0 {
            self.fail(span, format!("`{what}` outside a loop"));
        }
    }

    fn if_stmt(&mut self, i: &syn::ExprIf) -> Stmt {
        let cond = self.expr(&i.cond);
        let then = self.block(&i.then_branch);
        let els = i.else_branch.as_ref().map(|(_, e)| match &**e {
            syn::Expr::If(next) => vec![self.if_stmt(next)],
            syn::Expr::Block(b) => self.block(&b.block),
            other => {
                self.fail(other.span(), "unexpected `else` branch");
                Vec::new()
            }
        });
        let at = loc(i.span());
        // A condition known at compile time (`$cnt(T)$`, a literal) keeps one branch; both
        // were checked.
        match known_condition(&cond) {
            Some(true) => Stmt::Block {
                body: then,
                loc: at,
            },
            Some(false) => Stmt::Block {
                body: els.unwrap_or_default(),
                loc: at,
            },
            None => Stmt::If {
                cond,
                then,
                els,
                loc: at,
            },
        }
    }

    fn for_loop(&mut self, f: &syn::ExprForLoop) -> Option<Stmt> {
        let span = f.span();
        if f.label.is_some() {
            self.subset(span, "a loop label");
        }
        let mut unroll = None;
        for attr in &f.attrs {
            if !attr.path().is_ident("unroll") {
                self.fail(
                    attr.span(),
                    "the only attribute of a detour body is `#[unroll]`",
                );
                continue;
            }
            unroll = match &attr.meta {
                syn::Meta::Path(_) => Some(None),
                // A number, or one the body's types give (`#[unroll($dim(T_3)$)]`): a tile
                // type can carry how far its loop is unrolled.
                syn::Meta::List(l) => match syn::parse2::<syn::Expr>(l.tokens.clone()) {
                    Ok(e) => {
                        let factor = self.expr(&e);
                        match unroll_factor(&factor) {
                            Some(n) => Some(Some(n)),
                            None => {
                                self.fail(
                                    l.tokens.span(),
                                    "`#[unroll(N)]` takes a number from 1 to 2^32 - 1 known when the body is compiled: a literal, or `$dim(T_k)$` or `$size(T)$` of a type with literal sizes, or arithmetic of those",
                                );
                                None
                            }
                        }
                    }
                    Err(_) => {
                        self.fail(attr.span(), "write `#[unroll]` or `#[unroll(N)]`");
                        None
                    }
                },
                syn::Meta::NameValue(_) => {
                    self.fail(attr.span(), "write `#[unroll]` or `#[unroll(N)]`");
                    None
                }
            };
        }
        let syn::Pat::Ident(var) = &*f.pat else {
            self.subset(f.pat.span(), "a `for` pattern other than one name");
            return None;
        };
        let syn::Expr::Range(r) = &*f.expr else {
            self.subset(
                f.expr.span(),
                "a `for` loop over something other than a range `a..b`",
            );
            // Its own problems too (`w.iter()`), all at once.
            self.expr(&f.expr);
            return None;
        };
        let (Some(start), Some(end)) = (&r.start, &r.end) else {
            self.fail(r.span(), "a `for` range needs both bounds");
            return None;
        };
        let (start, end) = (self.expr(start), self.expr(end));
        self.loops += 1;
        let (v, body) = self.scoped(|this| {
            let v = this.declare(&var.ident.to_string(), var.ident.span(), false, None, false);
            (v, this.block(&f.body))
        });
        self.loops -= 1;
        Some(Stmt::For {
            var: v,
            start,
            end,
            inclusive: matches!(r.limits, syn::RangeLimits::Closed(_)),
            unroll,
            body,
            loc: loc(span),
        })
    }

    /// Whether `id` names a constant given at run time (`const N;`) or computed from such
    /// (`const M = N / 16;`): a body reads it when its detour starts, and a kernel made at
    /// the bound sizes has it as a number.
    fn runtime_const(&self, id: &Ident) -> bool {
        let name = id.to_string();
        self.forms.is_runtime(&name) && self.forms.module.constant(&name).is_some()
    }

    /// A name a cuda body reads that is none of its locals: a `parray!` constant the
    /// declarations in scope know, folded (so offsets and proofs see its value), or a host
    /// value, passed by value as a parameter after the declared ones.
    fn host_value(&mut self, id: &Ident) -> Expr {
        let name = id.to_string();
        if let Some((f, _)) = self.lowering.last().cloned() {
            self.fail(id.span(), format!("`{name}` is not a parameter or a local of `{f}`: a function sees only those (and the number types' constants); pass it in as a parameter"));
            return poison(id.span());
        }
        if let Some(v) = self.forms.module.constant(&name) {
            if !self.folded.iter().any(|(n, _)| *n == name) {
                self.folded.push((id.clone(), v));
            }
            let lit = Lit::Int(u128::from(v), Some(Scalar::Usize));
            return Expr::new(ExprKind::Lit(lit), id.span());
        }
        // Declared once, in the body's outermost scope, where every later use finds it.
        let local = LocalId(self.locals.len() as u32);
        self.locals.push(Local {
            name: name.clone(),
            span: id.span().into(),
            mutable: false,
            ty: None,
            param: true,
        });
        self.scopes[0].push((name, local));
        self.captures.push(local);
        Expr::new(ExprKind::Local(local), id.span())
    }

    fn boxed(&mut self, e: &syn::Expr) -> Box<Expr> {
        Box::new(self.expr(e))
    }

    fn expr(&mut self, e: &syn::Expr) -> Expr {
        let span = e.span();
        let kind = match e {
            syn::Expr::Lit(l) => match self.lit(&l.lit) {
                Some(l) => ExprKind::Lit(l),
                None => return poison(span),
            },
            syn::Expr::Path(p) if p.qself.is_none() => match p.path.get_ident() {
                Some(id) => match self.lookup(&id.to_string()) {
                    Some(local) => ExprKind::Local(local),
                    None if self.lowering.is_empty() && self.runtime_const(id) => {
                        let name = id.to_string();
                        let value = self.forms.sizes.constant(&name).cloned();
                        ExprKind::RuntimeConst { name, value }
                    }
                    None if self.target == Target::Cuda => return self.host_value(id),
                    None => ExprKind::Capture(id.to_string()),
                },
                None => {
                    let segments = segments(&p.path);
                    let path: Vec<&str> = segments.iter().map(String::as_str).collect();
                    if let Some(c) = NumberConst::parse(&path) {
                        ExprKind::NumberConst(c)
                    } else if self.target == Target::Pthd {
                        ExprKind::Capture(quote::quote!(#p).to_string())
                    } else {
                        let last = segments.last().expect("a path has a segment");
                        self.fail(span, format!("a cuda body reads a host value by a single name, passed by value (`use {};` before the detour, then `{last}`), and names the constants of the number types: {}", segments.join("::"), NUMBER_CONSTS));
                        return poison(span);
                    }
                }
            },
            syn::Expr::Paren(p) => return self.expr(&p.expr),
            syn::Expr::Group(g) => return self.expr(&g.expr),
            syn::Expr::Unary(u) => match u.op {
                syn::UnOp::Neg(_) => ExprKind::Unary(UnOp::Neg, self.boxed(&u.expr)),
                syn::UnOp::Not(_) => ExprKind::Unary(UnOp::Not, self.boxed(&u.expr)),
                _ => {
                    self.subset(span, "a dereference `*`");
                    return poison(span);
                }
            },
            syn::Expr::Binary(b) => {
                let (l, r) = (self.boxed(&b.left), self.boxed(&b.right));
                match binop(&b.op) {
                    (Some(op), false) => ExprKind::Binary(op, l, r),
                    (Some(op), true) => self.assign(Some(op), l, r),
                    (None, _) => {
                        self.subset(span, "this operator");
                        return poison(span);
                    }
                }
            }
            syn::Expr::Assign(a) => {
                let (l, r) = (self.boxed(&a.left), self.boxed(&a.right));
                self.assign(None, l, r)
            }
            syn::Expr::Cast(c) => {
                let inner = self.boxed(&c.expr);
                match type_name(&c.ty).as_deref().and_then(Scalar::from_rust_name) {
                    Some(s) => ExprKind::Cast(inner, s),
                    None => {
                        self.fail(c.ty.span(), "a cast to a type outside the body subset (f32, f64, i8, i32, u32, i64, u64, usize, bool)");
                        return poison(span);
                    }
                }
            }
            syn::Expr::Index(ix) => ExprKind::Index(
                self.boxed(&ix.expr),
                self.boxed(&ix.index),
                Check::Checked(None),
            ),
            syn::Expr::Field(f) => match &f.member {
                syn::Member::Named(n) => ExprKind::Field(self.boxed(&f.base), n.to_string()),
                syn::Member::Unnamed(_) => {
                    self.subset(f.member.span(), "a tuple field (a vector's lanes are `.x`, `.y`, `.z`, `.w`; a record's fields have names)");
                    return poison(span);
                }
            },
            syn::Expr::MethodCall(m) if vector_method(&m.method.to_string()).is_some() => {
                match self.vector_call(m) {
                    Some(k) => k,
                    None => return poison(span),
                }
            }
            syn::Expr::MethodCall(m) if conversion(&m.method).is_some() => {
                let to = conversion(&m.method).expect("checked");
                if !m.args.is_empty() || m.turbofish.is_some() {
                    self.fail(
                        m.method.span(),
                        format!("`{}` takes no arguments: `x.{}()`", m.method, m.method),
                    );
                    return poison(span);
                }
                ExprKind::Convert(self.boxed(&m.receiver), Ty::Scalar(to), None)
            }
            syn::Expr::MethodCall(m) => match Method::from_rust_name(&m.method.to_string()) {
                Some(method) if m.turbofish.is_none() => {
                    let recv = self.boxed(&m.receiver);
                    let args = m.args.iter().map(|a| self.expr(a)).collect();
                    ExprKind::Method(method, recv, args)
                }
                _ => {
                    let all: Vec<&str> = Method::all().map(Method::rust_name).collect();
                    self.fail(m.method.span(), format!("the method `{}` is not part of the detour body subset (math methods: {})", m.method, all.join(", ")));
                    return poison(span);
                }
            },
            syn::Expr::Call(c) => match self.call(c) {
                Some(k) => k,
                None => return poison(span),
            },
            syn::Expr::Macro(m) if m.mac.path.is_ident(DOLLAR) => return self.dollar(&m.mac),
            syn::Expr::If(i) => match self.select(i) {
                Some(k) => k,
                None => return poison(span),
            },
            syn::Expr::Struct(s) => match self.record_literal(s) {
                Some(k) => k,
                None => return poison(span),
            },
            other => {
                let what = match other {
                    syn::Expr::Array(_) => "an array literal",
                    syn::Expr::Async(_) | syn::Expr::Await(_) => "async code",
                    syn::Expr::Block(_) => "a block used as a value (write its statements before this one, and its value where the block is)",
                    syn::Expr::Closure(_) => "a closure",
                    syn::Expr::Const(_) => "a const block",
                    syn::Expr::Let(_) => "`let` in a condition",
                    syn::Expr::Loop(_) => "`loop` (use `while`)",
                    syn::Expr::Match(_) => "`match` (use `if`/`else`)",
                    syn::Expr::Reference(_) => "a reference `&`",
                    syn::Expr::Repeat(_) => "an array repeat expression",
                    syn::Expr::Try(_) | syn::Expr::TryBlock(_) => "the `?` operator",
                    syn::Expr::Tuple(_) => "a tuple",
                    syn::Expr::Unsafe(_) => "an `unsafe` block",
                    syn::Expr::Range(_) => "a range outside a `for` loop",
                    syn::Expr::Return(_) => "`return` with a value",
                    syn::Expr::Macro(_) => "a macro in an expression (`println!` is a statement)",
                    _ => "this expression",
                };
                self.subset(span, what);
                return poison(span);
            }
        };
        Expr::new(kind, span)
    }

    /// `Particle { pos: p, mass: 1.0, ..q[i] }`: a record value. A cuda body's names a
    /// record by its name and gives each of its fields once, or takes the rest from a base
    /// that is a local or an element (read field by field, as `b.f`); a pthd body's is
    /// Rust's, for rustc to check.
    fn record_literal(&mut self, s: &syn::ExprStruct) -> Option<ExprKind> {
        let path = &s.path;
        let mut fields: Vec<(String, Expr)> = Vec::new();
        for f in &s.fields {
            let syn::Member::Named(name) = &f.member else {
                self.subset(f.member.span(), "a tuple struct's field");
                return None;
            };
            fields.push((name.to_string(), self.expr(&f.expr)));
        }
        if self.target == Target::Pthd {
            return Some(ExprKind::MakeRecord {
                record: None,
                path: quote::quote!(#path).to_string(),
                fields,
                base: s.rest.as_ref().map(|b| self.boxed(b)),
            });
        }
        let name = match (&s.qself, path.get_ident()) {
            (None, Some(id)) => id.to_string(),
            _ => {
                self.fail(path.span(), "a cuda body names a record by its name alone (`Particle { .. }`, the struct imported with `use`)");
                return None;
            }
        };
        let Some(r) = self.records.iter().find(|r| r.name() == name).copied() else {
            self.fail(path.span(), format!("`{name}` is not a record: a cuda body builds the values of `#[derive(parray::Record)]` structs (`Particle {{ pos: p, mass: 1.0 }}`)"));
            return None;
        };
        let shown = parray_compiler::passes::check::record_shown(r);
        let mut ok = true;
        for (k, f) in s.fields.iter().enumerate() {
            let given = &fields[k].0;
            if r.field(given).is_none() {
                self.fail(
                    f.member.span(),
                    format!("`{name}` has no field `{given}` (its fields: {shown})"),
                );
                ok = false;
            } else if fields[..k].iter().any(|(n, _)| n == given) {
                self.fail(
                    f.member.span(),
                    format!("the field `{given}` is given twice"),
                );
                ok = false;
            }
        }
        let missing: Vec<&str> = r
            .def()
            .fields
            .iter()
            .map(|f| f.name)
            .filter(|m| !fields.iter().any(|(n, _)| n == m))
            .collect();
        match &s.rest {
            None if !missing.is_empty() => {
                let list: Vec<String> = missing.iter().map(|m| format!("`{m}`")).collect();
                let (s_, them) = match missing.len() {
                    1 => ("", "it"),
                    _ => ("s", "them"),
                };
                self.fail(path.span(), format!("missing field{s_} {} in this `{name}` (its fields: {shown}): give {them}, or take the rest from a record with `..q[i]`", list.join(", ")));
                return None;
            }
            None => {}
            Some(b) => {
                let base = self.expr(b);
                let simple = match &base.kind {
                    ExprKind::Local(_) => true,
                    ExprKind::Index(a, _, _) => matches!(a.kind, ExprKind::Local(_)),
                    _ => false,
                };
                if !simple {
                    self.fail(b.span(), "the base of a record literal in a cuda body is a local or an element (`..r`, `..q[i]`): bind it to a local first (`let r = ...;`)");
                    return None;
                }
                for m in missing {
                    let field = ExprKind::Field(Box::new(base.clone()), m.to_string());
                    fields.push((m.to_string(), Expr::new(field, b.span())));
                }
            }
        }
        ok.then_some(ExprKind::MakeRecord {
            record: Some(r),
            path: name,
            fields,
            base: None,
        })
    }

    /// `p.load4(off)`, `p.store4(off, v)` (and the 2-lane ones): a vector access.
    fn vector_call(&mut self, m: &syn::ExprMethodCall) -> Option<ExprKind> {
        let name = m.method.to_string();
        let (store, lanes) = vector_method(&name).expect("a vector method");
        if m.turbofish.is_some() {
            self.fail(
                m.method.span(),
                format!(
                    "`{name}` takes no type arguments: the vector type follows from the elements"
                ),
            );
            return None;
        }
        let args: Vec<&syn::Expr> = m.args.iter().collect();
        let want = if store { 2 } else { 1 };
        if args.len() != want {
            let usage = if store {
                format!("two arguments, the offset of the first element and the vector: `p.{name}(off, v)`")
            } else {
                format!("one argument, the offset of the first element: `p.{name}(off)`")
            };
            self.fail(
                m.method.span(),
                format!("`{name}` takes {usage}; {} given", args.len()),
            );
            return None;
        }
        let access = Expr::new(
            ExprKind::Vector {
                base: self.boxed(&m.receiver),
                at: self.boxed(args[0]),
                lanes,
                check: Check::Checked(None),
                method: m.method.span().into(),
            },
            m.span(),
        );
        if store {
            let value = self.boxed(args[1]);
            Some(ExprKind::Assign(None, Box::new(access), value))
        } else {
            Some(access.kind)
        }
    }

    fn assign(&mut self, op: Option<BinOp>, place: Box<Expr>, value: Box<Expr>) -> ExprKind {
        match &place.kind {
            ExprKind::Local(_) | ExprKind::Index(..) => {}
            ExprKind::Vector { lanes, method, .. } => {
                self.fail(
                    method.proc_macro(),
                    format!("a vector load cannot be assigned to: write `p.store{lanes}(off, v)`"),
                );
            }
            // A field of an element is a record's (the type check refuses a vector's), a
            // field of a record inside it too (`p[i].pos.x`).
            ExprKind::Field(..) if field_of_place(&place) => {}
            ExprKind::Capture(name) => {
                self.fail(place.span.proc_macro(), format!("a pthd body cannot assign to the host variable `{name}` (every thread runs the body): write through an array, `out[$tid$] = ...`, or use `atomic_add`"));
            }
            _ => {
                self.fail(place.span.proc_macro(), "this cannot be assigned to: assign a local, an element `a[i]` (a vector whole: `a[i] = Float2::new(x, y)`), a field of a local, or a field of a record element (`p[i].vel = v`)");
            }
        }
        ExprKind::Assign(op, place, value)
    }

    fn call(&mut self, c: &syn::ExprCall) -> Option<ExprKind> {
        let span = c.span();
        let syn::Expr::Path(p) = &*c.func else {
            self.subset(span, "a call of something other than a name");
            return None;
        };
        let segs = segments(&p.path);
        let args: Vec<&syn::Expr> = c.args.iter().collect();
        match segs
            .iter()
            .map(String::as_str)
            .collect::<Vec<_>>()
            .as_slice()
        {
            [f @ ("atomic_add" | "atomic_exch" | "atomic_cas")]
                if self.in_function(span, &format!("`{f}`")) =>
            {
                None
            }
            [f] if self.is_collective(c) => {
                if self.standing.take() != Some(c as *const syn::ExprCall) {
                    self.fail(span, format!("`{f}` shuffles (a collective function: the 32 lanes of a warp run it together), so its call stands alone, as a shuffle's statement does: the value of a `let`, of an assignment or of a function, or a statement (`let v = {f}(x);`, then use `v`)"));
                    return None;
                }
                let name = self.callee(c)?;
                match self.inline(c, &name)? {
                    Some(value) => Some(value.kind),
                    None => {
                        self.fail(
                            span,
                            format!("`{f}` returns nothing: call it as a statement, `{f}(..);`"),
                        );
                        None
                    }
                }
            }
            [f] if self.target == Target::Cuda && self.funcs.iter().any(|(n, _)| n == f) => {
                let segment = &p.path.segments[0];
                let index = self.function_index(&segment.ident);
                let args = args.iter().map(|a| self.expr(a)).collect();
                let index = index?;
                self.functions[index].type_args = self.type_args(&segment.arguments, index)?;
                Some(ExprKind::Call(index, args, Vec::new()))
            }
            [f @ ("atomic_add" | "atomic_exch" | "atomic_cas")] => {
                let op = [AtomicOp::Add, AtomicOp::Exch, AtomicOp::Cas]
                    .into_iter()
                    .find(|op| op.rust_name() == *f)
                    .expect("one of the three");
                if args.len() != op.arity() + 1 {
                    let form = match op {
                        AtomicOp::Add => "atomic_add(p, value)",
                        AtomicOp::Exch => "atomic_exch(p, value)",
                        AtomicOp::Cas => "atomic_cas(p, compare, value)",
                    };
                    self.fail(span, format!("`{f}` takes {} arguments: `{form}`, with `p` a pointer to the element (`a + off`)", op.arity() + 1));
                    return None;
                }
                Some(ExprKind::Atomic(
                    op,
                    self.boxed(args[0]),
                    args[1..].iter().map(|a| self.expr(a)).collect(),
                    Check::Checked(None),
                ))
            }
            ["shfl_down"] => {
                if args.len() != 2 {
                    self.fail(span, "`shfl_down` takes two arguments: `shfl_down(value, delta)`, the value of the lane `delta` above this one in its warp");
                    return None;
                }
                let slot = self.shuffles;
                self.shuffles += 1;
                Some(ExprKind::ShflDown {
                    value: self.boxed(args[0]),
                    delta: self.boxed(args[1]),
                    slot,
                })
            }
            // `parray::Num`'s conversions to a type parameter, each Rust's `v as T`.
            [t, from @ ("from_i32" | "from_f32" | "from_f64")]
                if self.type_params.iter().any(|(n, _, _)| n == t) =>
            {
                let (_, ty, bound) = self.type_params.iter().find(|(n, _, _)| n == t)?.clone();
                if bound == Bound::Element {
                    self.fail(span, format!("`{t}::{from}` needs `{t}: parray::Num` (a number type), not `parray::Element`"));
                    return None;
                }
                let source = [Scalar::I32, Scalar::F32, Scalar::F64]
                    .into_iter()
                    .find(|s| *from == format!("from_{}", s.rust_name()))
                    .expect("one of the three");
                if args.len() != 1 {
                    let (what, example) = (
                        source.rust_name(),
                        if source.is_int() { "n" } else { "0.5" },
                    );
                    self.fail(
                        span,
                        format!("`{t}::{from}` takes one argument, an `{what}`: `{t}::{from}({example})`"),
                    );
                    return None;
                }
                Some(ExprKind::Convert(self.boxed(args[0]), ty, Some(source)))
            }
            [v, "new"] if vector_elem(v).is_some() => {
                let e = vector_elem(v).expect("checked");
                Some(ExprKind::MakeVector(
                    e,
                    args.iter().map(|a| self.expr(a)).collect(),
                ))
            }
            [_, "create"] if args.is_empty() => {
                self.fail(
                    span,
                    "bind a created array to a name: `let s = S::create();`",
                );
                None
            }
            _ if self.target == Target::Pthd => {
                let f = &c.func;
                let args = args.iter().map(|a| self.expr(a)).collect();
                Some(ExprKind::HostCall(quote::quote!(#f).to_string(), args))
            }
            _ => {
                self.fail(c.func.span(), "calls to Rust functions cannot run on the GPU: a cuda body may call `atomic_add(ptr, value)`, `atomic_exch(ptr, value)`, `atomic_cas(ptr, compare, value)`, `shfl_down(value, delta)`, `Float2::new(x, y)` (and the other vector types) and the math methods");
                None
            }
        }
    }

    /// The types a call's turbofish gives the type parameters of the function
    /// `self.functions[index]` (`f::<bf16>(n)`, `g::<T>(x)` in a generic function, `_`
    /// for one the arguments type), as Rust takes them: all of them or none; `None`
    /// after an error at them.
    fn type_args(
        &mut self,
        arguments: &syn::PathArguments,
        index: usize,
    ) -> Option<Vec<Option<(Ty, CodeSpan)>>> {
        let function = &self.functions[index];
        let (name, params) = (function.name.clone(), function.generics.len());
        let wanted: Vec<String> = function.generics.iter().map(|(n, _)| n.clone()).collect();
        let given = match arguments {
            syn::PathArguments::None => return Some(vec![None; params]),
            syn::PathArguments::AngleBracketed(a) => a,
            // Not an expression's path (`Fn(A) -> B`): syn parses it, rustc refuses it.
            syn::PathArguments::Parenthesized(p) => {
                self.fail(
                    p.span(),
                    format!("type arguments are given in a turbofish: `{name}::<f32>(..)`"),
                );
                return None;
            }
        };
        if given.args.len() != params {
            let takes = match params {
                0 => format!("`{name}` is not generic: call it without type arguments, `{name}(..)`"),
                _ => format!("`{name}` takes {params} type argument{} (`{}`), {} given: give each, or none and let the arguments type them", if params == 1 { "" } else { "s" }, wanted.join("`, `"), given.args.len()),
            };
            // At the first type too many, or at the turbofish when too few are given.
            let at = given
                .args
                .iter()
                .nth(params)
                .map_or(given.span(), |a| a.span());
            self.fail(at, takes);
            return None;
        }
        let mut out = Vec::new();
        for (arg, param) in given.args.iter().zip(&wanted) {
            let typed = match arg {
                syn::GenericArgument::Type(syn::Type::Infer(_)) => Some(None),
                syn::GenericArgument::Type(t) => {
                    self.value_type_of(t).map(|ty| Some((ty, t.span().into())))
                }
                _ => None,
            };
            match typed {
                Some(t) => out.push(t),
                None => {
                    self.fail(arg.span(), format!("the type argument `{param}` of `{name}` is a number type (i8, u8, i32, u32, i64, u64, usize, f32, f64, f16, bf16), a vector, a record, a type parameter in scope or `_`: `{name}::<f32>(..)`"));
                    return None;
                }
            }
        }
        Some(out)
    }

    /// Whether `c` calls a collective function of the body language in a cuda body.
    fn is_collective(&self, c: &syn::ExprCall) -> bool {
        self.target == Target::Cuda
            && self
                .callee(c)
                .is_some_and(|f| crate::func::collective(&f.to_string(), self.funcs))
    }

    /// The name `c` calls, a single identifier (with its type arguments, if any).
    fn callee(&self, c: &syn::ExprCall) -> Option<Ident> {
        crate::func::callee(&c.func).cloned()
    }

    /// `if c { a } else { b }` as a value.
    fn select(&mut self, i: &syn::ExprIf) -> Option<ExprKind> {
        let cond = self.boxed(&i.cond);
        let then = self.value_block(&i.then_branch)?;
        let other = match i.else_branch.as_ref().map(|(_, e)| &**e) {
            Some(syn::Expr::Block(b)) => self.value_block(&b.block)?,
            Some(syn::Expr::If(n)) => Expr::new(self.select(n)?, n.span()),
            _ => {
                self.fail(i.span(), "an `if` used as a value needs an `else`");
                return None;
            }
        };
        Some(match known_condition(&cond) {
            Some(true) => then.kind,
            Some(false) => other.kind,
            None => ExprKind::Select(cond, Box::new(then), Box::new(other)),
        })
    }

    fn value_block(&mut self, b: &syn::Block) -> Option<Expr> {
        match b.stmts.as_slice() {
            [syn::Stmt::Expr(e, None)] => Some(self.expr(e)),
            _ => {
                self.fail(
                    b.span(),
                    "an `if` used as a value needs one expression in each branch",
                );
                None
            }
        }
    }

    fn lit(&mut self, l: &syn::Lit) -> Option<Lit> {
        let suffix = |this: &mut Self, s: &str, span: Span| -> Option<Option<Scalar>> {
            if s.is_empty() {
                return Some(None);
            }
            match Scalar::from_rust_name(s).filter(|t| *t != Scalar::Bool) {
                Some(t) => Some(Some(t)),
                None => {
                    this.fail(span, format!("the suffix `{s}` is outside the body subset"));
                    None
                }
            }
        };
        match l {
            syn::Lit::Int(i) => {
                let s = suffix(self, i.suffix(), i.span())?;
                if s.is_some_and(Scalar::is_float) {
                    return Some(Lit::Float(i.base10_digits().to_string(), s));
                }
                match i.base10_parse::<u128>() {
                    Ok(v) => Some(Lit::Int(v, s)),
                    Err(e) => {
                        self.errors.push(e);
                        None
                    }
                }
            }
            syn::Lit::Float(f) => {
                let s = suffix(self, f.suffix(), f.span())?;
                Some(Lit::Float(f.base10_digits().to_string(), s))
            }
            syn::Lit::Bool(b) => Some(Lit::Bool(b.value)),
            other => {
                self.subset(other.span(), "this literal");
                None
            }
        }
    }

    /// A `$...$` form: compiled by parray-layout once, its index expressions lowered (in a
    /// function of `funcs!` as in a body: its `$tid$`, which has no meaning there, is
    /// refused where the function is written).
    fn dollar(&mut self, mac: &syn::Macro) -> Expr {
        let span = mac.span();
        // In a function, a run-time type is named where the body calls it (outermost).
        let call = self.lowering.first().map(|(_, at)| *at);
        self.forms.named_at = call;
        let form = self.forms.form(mac.tokens.clone(), span);
        self.forms.named_at = None;
        let form = match form {
            Ok(f) => f,
            Err(e) => {
                self.errors.push(e);
                return poison(span);
            }
        };
        if let Form::Offset { off, .. } = &form {
            if self.target == Target::Cuda && off.expr.max(&off.vars) > u64::from(u32::MAX) {
                self.fail(
                    span,
                    "this offset can exceed 2^32 - 1: index arithmetic in a cuda body is 32-bit",
                );
                return poison(span);
            }
        }
        let mut lowered = form.lower(span, &mut |e| self.expr(e));
        if let (Some(call), ExprKind::GenericOffset { .. } | ExprKind::GenericSize { .. }) =
            (call, &lowered.kind)
        {
            lowered.span = call.into();
        }
        lowered
    }
}

/// The value of an `#[unroll(N)]` factor: integer literals and sizes of types with
/// literal sizes, and their exact arithmetic ([`BinOp::exact`]); none where it is not
/// such a number, or is 0 or past `u32`.
fn unroll_factor(e: &Expr) -> Option<u32> {
    fn value(e: &Expr) -> Option<u128> {
        match &e.kind {
            ExprKind::Lit(Lit::Int(n, _)) => Some(*n),
            ExprKind::Size(n) => Some(u128::from(*n)),
            ExprKind::Binary(op, l, r) => op.exact(value(l)?, value(r)?),
            _ => None,
        }
    }
    value(e)
        .and_then(|n| u32::try_from(n).ok())
        .filter(|&n| n > 0)
}

/// Whether `e` is a field of a local or an element, through fields (`q.vel.x`,
/// `p[i].pos.x`): a place an assignment may write.
fn field_of_place(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Field(base, _) => field_of_place(base),
        ExprKind::Local(_) | ExprKind::Index(..) => true,
        _ => false,
    }
}

/// How a function of the body language writes its pointer parameters' types.
const POINTERS: &str =
    "`parray::Ptr<'_, f32>` to read, `parray::PtrMut<'_, f32>` to read and write";

/// A binary operator, and whether it is a compound assignment (`+=`).
fn binop(op: &syn::BinOp) -> (Option<BinOp>, bool) {
    use syn::BinOp as S;
    let (op, assign) = match op {
        S::Add(_) => (BinOp::Add, false),
        S::Sub(_) => (BinOp::Sub, false),
        S::Mul(_) => (BinOp::Mul, false),
        S::Div(_) => (BinOp::Div, false),
        S::Rem(_) => (BinOp::Rem, false),
        S::And(_) => (BinOp::And, false),
        S::Or(_) => (BinOp::Or, false),
        S::BitXor(_) => (BinOp::BitXor, false),
        S::BitAnd(_) => (BinOp::BitAnd, false),
        S::BitOr(_) => (BinOp::BitOr, false),
        S::Shl(_) => (BinOp::Shl, false),
        S::Shr(_) => (BinOp::Shr, false),
        S::Eq(_) => (BinOp::Eq, false),
        S::Lt(_) => (BinOp::Lt, false),
        S::Le(_) => (BinOp::Le, false),
        S::Ne(_) => (BinOp::Ne, false),
        S::Ge(_) => (BinOp::Ge, false),
        S::Gt(_) => (BinOp::Gt, false),
        S::AddAssign(_) => (BinOp::Add, true),
        S::SubAssign(_) => (BinOp::Sub, true),
        S::MulAssign(_) => (BinOp::Mul, true),
        S::DivAssign(_) => (BinOp::Div, true),
        S::RemAssign(_) => (BinOp::Rem, true),
        S::BitXorAssign(_) => (BinOp::BitXor, true),
        S::BitAndAssign(_) => (BinOp::BitAnd, true),
        S::BitOrAssign(_) => (BinOp::BitOr, true),
        S::ShlAssign(_) => (BinOp::Shl, true),
        S::ShrAssign(_) => (BinOp::Shr, true),
        _ => return (None, false),
    };
    (Some(op), assign)
}

/// `x + e1 + e2` as `x` and the offsets `[e1, e2]`.
fn split_offsets(mut base: Expr) -> (Expr, Vec<Expr>) {
    let mut offsets = Vec::new();
    while let ExprKind::Binary(BinOp::Add, l, r) = base.kind {
        offsets.push(*r);
        base = *l;
    }
    (base, offsets)
}

/// `load2`, `load4`, `store2`, `store4`: whether it stores, and its lanes.
fn vector_method(name: &str) -> Option<(bool, u8)> {
    match name {
        "load2" => Some((false, 2)),
        "load4" => Some((false, 4)),
        "store2" => Some((true, 2)),
        "store4" => Some((true, 4)),
        _ => None,
    }
}

/// `to_f32`, `to_f64` (`parray::Num`'s conversions, and a half's own): the type they
/// convert to.
fn conversion(name: &Ident) -> Option<Scalar> {
    match name.to_string().as_str() {
        "to_f32" => Some(Scalar::F32),
        "to_f64" => Some(Scalar::F64),
        _ => None,
    }
}

/// A path's segments as names (`f32::consts::PI`: `["f32", "consts", "PI"]`).
fn segments(path: &syn::Path) -> Vec<String> {
    path.segments.iter().map(|s| s.ident.to_string()).collect()
}

/// The last segment of a macro's path (`println` for `std::println!`).
pub fn macro_name(mac: &syn::Macro) -> String {
    mac.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

/// `S::create()` with no arguments: the type's name.
pub fn create_call(call: &syn::ExprCall) -> Option<(String, Span)> {
    let syn::Expr::Path(p) = &*call.func else {
        return None;
    };
    let segs: Vec<_> = p.path.segments.iter().collect();
    match segs.as_slice() {
        [ty, f] if f.ident == "create" && call.args.is_empty() => {
            Some((ty.ident.to_string(), ty.ident.span()))
        }
        _ => None,
    }
}

fn type_name(t: &syn::Type) -> Option<String> {
    match t {
        syn::Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().map(|s| s.ident.to_string())
        }
        _ => None,
    }
}

/// The vector element type named `Float2`, `Int4`, ...
fn vector_elem(name: &str) -> Option<ElemType> {
    ElemType::ALL
        .into_iter()
        .find(|e| Scalar::of_elem(*e).is_none() && e.rust_type() == name)
}

/// A scalar or a vector type by its name.
fn value_type(name: &str) -> Option<Ty> {
    Scalar::from_rust_name(name)
        .map(Ty::Scalar)
        .or_else(|| vector_elem(name).map(Ty::Vector))
}

/// The value of a condition known at compile time: a `bool` literal or `$cnt(T)$`.
fn known_condition(cond: &Expr) -> Option<bool> {
    match cond.kind {
        ExprKind::Lit(Lit::Bool(b)) | ExprKind::Cnt(b) => Some(b),
        _ => None,
    }
}
