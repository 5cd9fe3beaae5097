//! Bodies of `detour!` and `host!`: `$...$` forms compiled, and, in detours, the body
//! checked against the documented subset of Rust (SPEC.md, "Detour bodies") and its
//! element accesses turned into the runtime's `Access` calls, which every thread may use.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{parse_quote, BinOp, Expr, Stmt, Token};

use crate::dollar::{Atom, Form, Forms, DOLLAR, SYNC};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Ordinary host code: only the `$...$` forms change.
    Host,
    /// A pthd detour body: the subset, shared element accesses, `#sync`.
    Pthd,
    /// A cuda detour body run by the CPU emulation: as `Pthd`, plus shared and register
    /// arrays created in the body.
    Emulate,
}

/// Methods a detour body may call on numbers (they exist in CUDA's math library too).
pub const MATH_METHODS: &[&str] = &[
    "sqrt", "exp", "ln", "log2", "log10", "sin", "cos", "tan", "abs", "min", "max", "mul_add",
    "powf", "powi", "floor", "ceil", "round", "trunc", "tanh", "exp2", "recip",
];

/// Macros a detour body may use.
pub const PRINT_MACROS: &[&str] = &["println", "print"];

pub struct Translator<'a, 'm> {
    pub forms: &'a mut Forms<'m>,
    pub mode: Mode,
    pub errors: Vec<syn::Error>,
    /// Whether the body uses `#sync`.
    pub syncs: bool,
    /// Shared arrays created so far (each `create` of an smem type gets the next slot).
    shared_slots: usize,
}

impl<'a, 'm> Translator<'a, 'm> {
    pub fn new(forms: &'a mut Forms<'m>, mode: Mode) -> Self {
        Translator {
            forms,
            mode,
            errors: Vec::new(),
            syncs: false,
            shared_slots: 0,
        }
    }

    /// Translate a list of statements; all errors are reported together.
    pub fn translate(&mut self, stmts: &mut [Stmt]) -> syn::Result<()> {
        for s in stmts.iter_mut() {
            self.visit_stmt_mut(s);
        }
        let mut errors = std::mem::take(&mut self.errors).into_iter();
        match errors.next() {
            None => Ok(()),
            Some(mut first) => {
                errors.for_each(|e| first.combine(e));
                Err(first)
            }
        }
    }

    fn fail(&mut self, span: Span, msg: impl std::fmt::Display) {
        self.errors.push(syn::Error::new(span, msg));
    }

    fn dollar(&mut self, tokens: TokenStream, span: Span) -> Expr {
        let form = match self.forms.form(tokens, span) {
            Ok(f) => f,
            Err(e) => {
                self.errors.push(e);
                return parse_quote!(0usize);
            }
        };
        // Index expressions are body code too: translate them first.
        let form = match form {
            Form::Offset { off, atoms } => Form::Offset {
                off,
                atoms: atoms
                    .into_iter()
                    .map(|(n, a)| match a {
                        Atom::Expr(mut e) => {
                            self.visit_expr_mut(&mut e);
                            (n, Atom::Expr(e))
                        }
                        tid => (n, tid),
                    })
                    .collect(),
            },
            other => other,
        };
        syn::parse2(Forms::rust(form, span)).expect("a compiled form parses")
    }

    fn sync(&mut self, span: Span) -> Expr {
        if self.mode == Mode::Host {
            self.fail(span, "`#sync` is a barrier among the threads of a detour; it has no meaning in host code");
        }
        self.syncs = true;
        parse_quote!(__parray_ctx.sync())
    }

    /// Placeholders and printing macros; returns the replacement, if any.
    fn macro_expr(&mut self, mac: &mut syn::Macro) -> Option<Expr> {
        let span = mac.span();
        if mac.path.is_ident(DOLLAR) {
            return Some(self.dollar(mac.tokens.clone(), span));
        }
        if mac.path.is_ident(SYNC) {
            return Some(self.sync(span));
        }
        let name = macro_name(mac);
        if self.mode != Mode::Host && !PRINT_MACROS.contains(&name.as_str()) {
            self.fail(span, format!("the macro `{name}!` is not part of the detour body subset (only `println!` and `print!`)"));
            return None;
        }
        // Arguments of a format-like macro: translate each expression after the format string.
        if let Ok(mut args) = mac.parse_body_with(Punctuated::<Expr, Token![,]>::parse_terminated) {
            for a in args.iter_mut() {
                self.visit_expr_mut(a);
            }
            mac.tokens = quote!(#args);
        } else if mac.tokens.to_string().contains(DOLLAR) {
            self.fail(
                span,
                format!("`$...$` inside `{name}!` needs comma-separated expressions"),
            );
        }
        None
    }

    /// `S::create()` inside a detour: a block's shared array or a thread's registers.
    fn create(&mut self, ty: &str, span: Span) -> Option<Expr> {
        let module = self.forms.module;
        let Ok(dim) = module.lookup(ty) else {
            self.fail(span, format!("unknown type `{ty}`"));
            return None;
        };
        let parray_core::TypeClass::Data { mem, elem } = &module.types()[dim.ty].class else {
            self.fail(
                span,
                format!("`{ty}` is a thread array: only data types are created"),
            );
            return None;
        };
        let (elem, extent) = (
            crate::decl::elem_tokens(*elem),
            module.extent(dim.node) as usize,
        );
        match (mem, self.mode) {
            (Some(parray_core::MemKind::Smem), Mode::Emulate) => {
                let slot = self.shared_slots;
                self.shared_slots += 1;
                Some(parse_quote_spanned(
                    span,
                    quote!(__parray_ctx.shared::<#elem>(#slot, #extent, #ty)),
                ))
            }
            (Some(parray_core::MemKind::Rmem), Mode::Emulate) => Some(parse_quote_spanned(
                span,
                quote!(::parray::__private::Registers::<#elem, #extent>::new(#ty)),
            )),
            (Some(parray_core::MemKind::Smem | parray_core::MemKind::Rmem), _) => {
                self.fail(
                    span,
                    format!("`{ty}` is smem/rmem memory, which exists only inside cuda detours"),
                );
                None
            }
            _ => {
                self.fail(span, format!("create `{ty}` on the host and hand it to the detour: a detour body creates only smem and rmem types"));
                None
            }
        }
    }

    /// Reject what falls outside the detour subset (it must also compile to CUDA C).
    fn check_subset(&mut self, e: &Expr) {
        let what = match e {
            Expr::Array(_) => "an array literal",
            Expr::Async(_) | Expr::Await(_) => "async code",
            Expr::Closure(_) => "a closure",
            Expr::Const(_) => "a const block",
            Expr::Let(_) => "`let` in a condition",
            Expr::Loop(_) => "`loop` (use `while`)",
            Expr::Match(_) => "`match` (use `if`/`else`)",
            Expr::Reference(_) => "a reference `&`",
            Expr::Repeat(_) => "an array repeat expression",
            Expr::Struct(_) => "a struct literal",
            Expr::Try(_) | Expr::TryBlock(_) => "the `?` operator",
            Expr::Tuple(_) => "a tuple",
            Expr::Unsafe(_) => "an `unsafe` block",
            Expr::Yield(_) => "`yield`",
            Expr::Unary(u) if matches!(u.op, syn::UnOp::Deref(_)) => "a dereference `*`",
            Expr::Range(_) => "a range outside a `for` loop",
            Expr::Return(r) if r.expr.is_some() => "`return` with a value",
            Expr::ForLoop(f) if !matches!(&*f.pat, syn::Pat::Ident(_)) => {
                "a `for` pattern other than one name"
            }
            Expr::ForLoop(f) if !matches!(&*f.expr, Expr::Range(_)) => {
                "a `for` loop over something other than a range `a..b`"
            }
            Expr::MethodCall(m) if !MATH_METHODS.contains(&m.method.to_string().as_str()) => {
                self.fail(
                    m.method.span(),
                    format!(
                        "the method `{}` is not part of the detour body subset (math methods: {})",
                        m.method,
                        MATH_METHODS.join(", ")
                    ),
                );
                return;
            }
            Expr::Field(f) if !matches!(&f.member, syn::Member::Named(n) if ["x", "y", "z", "w"].contains(&n.to_string().as_str())) => {
                "a field other than `.x`, `.y`, `.z`, `.w`"
            }
            _ => return,
        };
        self.fail(
            e.span(),
            format!("{what} is not part of the detour body subset (SPEC.md, \"Detour bodies\")"),
        );
    }
}

impl VisitMut for Translator<'_, '_> {
    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        match s {
            Stmt::Item(item) if self.mode != Mode::Host => {
                self.fail(
                    item.span(),
                    "an item (fn, struct, use...) is not part of the detour body subset",
                );
            }
            Stmt::Macro(m) => {
                let semi = m.semi_token;
                if let Some(e) = self.macro_expr(&mut m.mac) {
                    *s = Stmt::Expr(e, semi.or_else(|| Some(Default::default())));
                }
            }
            Stmt::Local(local) if self.mode != Mode::Host => {
                let ok = match &local.pat {
                    syn::Pat::Ident(_) => true,
                    syn::Pat::Type(t) => matches!(&*t.pat, syn::Pat::Ident(_)),
                    _ => false,
                };
                if !ok {
                    self.fail(
                        local.pat.span(),
                        "a `let` pattern other than one name (with an optional type)",
                    );
                }
                if local.init.as_ref().is_some_and(|i| i.diverge.is_some()) {
                    self.fail(
                        local.span(),
                        "`let ... else` is not part of the detour body subset",
                    );
                }
                visit_mut::visit_stmt_mut(self, s);
            }
            _ => visit_mut::visit_stmt_mut(self, s),
        }
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Macro(m) = e {
            if let Some(new) = self.macro_expr(&mut m.mac) {
                *e = new;
            }
            return;
        }
        if self.mode == Mode::Host {
            visit_mut::visit_expr_mut(self, e);
            return;
        }
        self.check_subset(e);
        if let Expr::Call(call) = e {
            if let Some((ty, span)) = crate::cuda::create_call(call) {
                if let Some(new) = self.create(&ty, span) {
                    *e = new;
                }
                return;
            }
            // The body's one builtin function (CUDA's atomicAdd).
            if matches!(&*call.func, Expr::Path(p) if p.path.is_ident("atomic_add")) {
                let span = call.func.span();
                *call.func = parse_quote_spanned(span, quote!(::parray::__private::atomic_add));
            }
        }
        // A range is allowed as a `for` loop's bounds only; `#[unroll]` is for the GPU.
        if let Expr::ForLoop(f) = e {
            f.attrs.retain(|a| !a.path().is_ident("unroll"));
            if let Expr::Range(r) = &mut *f.expr {
                for bound in [&mut r.start, &mut r.end].into_iter().flatten() {
                    self.visit_expr_mut(bound);
                }
                self.visit_block_mut(&mut f.body);
                return;
            }
        }
        // Element writes: `x[i] = v` and `x[i] op= v` through `Access`, which takes `&self`.
        match e {
            Expr::Assign(a) if matches!(&*a.left, Expr::Index(_)) => {
                let span = a.span();
                let Expr::Index(ix) = &mut *a.left else {
                    unreachable!()
                };
                self.visit_expr_mut(&mut ix.expr);
                self.visit_expr_mut(&mut ix.index);
                self.visit_expr_mut(&mut a.right);
                let (base, index, value) = (&ix.expr, &ix.index, &a.right);
                *e = parse_quote_spanned(
                    span,
                    quote!(::parray::Access::store(&#base, #index, #value)),
                );
                return;
            }
            Expr::Binary(b)
                if matches!(&*b.left, Expr::Index(_)) && compound_op(&b.op).is_some() =>
            {
                let op = compound_op(&b.op).expect("checked");
                let span = b.span();
                let Expr::Index(ix) = &mut *b.left else {
                    unreachable!()
                };
                self.visit_expr_mut(&mut ix.expr);
                self.visit_expr_mut(&mut ix.index);
                self.visit_expr_mut(&mut b.right);
                let (base, index, value) = (&ix.expr, &ix.index, &b.right);
                *e = parse_quote_spanned(
                    span,
                    quote! {{
                        let __parray_at: usize = #index;
                        let __parray_old = ::parray::Access::load(&#base, __parray_at);
                        ::parray::Access::store(&#base, __parray_at, __parray_old #op #value)
                    }},
                );
                return;
            }
            _ => {}
        }
        visit_mut::visit_expr_mut(self, e);
        match e {
            // Element reads.
            Expr::Index(ix) => {
                let (base, index) = (&ix.expr, &ix.index);
                let span = ix.span();
                *e = parse_quote_spanned(span, quote!(::parray::Access::load(&#base, #index)));
            }
            // `a + off` where `a` is a captured buffer: the closure only borrows it.
            Expr::Binary(b) if matches!(b.op, BinOp::Add(_)) && is_plain_name(&b.left) => {
                let left = b.left.clone();
                *b.left = parse_quote!(&#left);
            }
            _ => {}
        }
    }
}

/// The last segment of a macro's path (`println` for `std::println!`).
pub fn macro_name(mac: &syn::Macro) -> String {
    mac.path
        .segments
        .last()
        .map(|s| s.ident.to_string())
        .unwrap_or_default()
}

fn parse_quote_spanned(span: Span, tokens: TokenStream) -> Expr {
    syn::parse2(quote_spanned!(span=> #tokens)).expect("generated expression parses")
}

fn is_plain_name(e: &Expr) -> bool {
    matches!(e, Expr::Path(p) if p.path.get_ident().is_some() && p.qself.is_none())
}

/// The binary operator of a compound assignment (`+=` -> `+`).
fn compound_op(op: &BinOp) -> Option<TokenStream> {
    Some(match op {
        BinOp::AddAssign(_) => quote!(+),
        BinOp::SubAssign(_) => quote!(-),
        BinOp::MulAssign(_) => quote!(*),
        BinOp::DivAssign(_) => quote!(/),
        BinOp::RemAssign(_) => quote!(%),
        BinOp::BitAndAssign(_) => quote!(&),
        BinOp::BitOrAssign(_) => quote!(|),
        BinOp::BitXorAssign(_) => quote!(^),
        BinOp::ShlAssign(_) => quote!(<<),
        BinOp::ShrAssign(_) => quote!(>>),
        _ => return None,
    })
}
