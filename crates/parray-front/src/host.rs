//! `host! { ... }`: ordinary Rust in which the `$...$` forms are compiled; nothing else
//! changes (host code is not a detour body: any Rust goes).

use parray_compiler::back::rust::hoist::Hoisted;
use parray_compiler::back::rust::{stmts_tokens, stmts_tokens_in_loop, Mode};
use parray_compiler::ir;
use parray_compiler::passes::bounds::prove;
use parray_compiler::passes::check::check;
use proc_macro2::{Ident, Span};
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Stmt};

use crate::dollar::{CopyForm, Form, Forms, COPY, DOLLAR, MBARRIER, SETMAXNREG, SYNC, WAIT};

/// Replaces every form in `stmts`; all errors are reported together. A form that names
/// one of `not_built` (a name whose declaration was not built, and reported) becomes a
/// placeholder without an error of its own.
pub fn translate(forms: &mut Forms, not_built: &[&str], stmts: &mut [Stmt]) -> syn::Result<()> {
    let mut h = Host {
        forms,
        not_built,
        errors: Vec::new(),
        hoisted: None,
    };
    for s in stmts.iter_mut() {
        h.visit_stmt_mut(s);
    }
    match crate::errors::in_source_order(h.errors) {
        None => Ok(()),
        Some(errors) => Err(errors),
    }
}

struct Host<'a, 'm> {
    forms: &'a mut Forms<'m>,
    not_built: &'a [&'a str],
    errors: Vec<syn::Error>,
    /// Inside a loop: the reads of run-time types its forms make, hoisted before the
    /// outermost loop (SPEC.md 3.1, "Sizes given at run time").
    hoisted: Option<Hoisted>,
}

impl Host<'_, '_> {
    /// The replacement of a placeholder macro, if `mac` is one.
    fn replace(&mut self, mac: &syn::Macro) -> Option<Expr> {
        let span: Span = mac.span();
        if mac.path.is_ident(SYNC) {
            self.errors.push(syn::Error::new(
                span,
                "`#sync` is a barrier among the threads of a detour; it has no meaning in host code",
            ));
            return Some(syn::parse_quote!(()));
        }
        if mac.path.is_ident(WAIT) {
            self.errors.push(syn::Error::new(
                span,
                "`#wait` waits for a cuda thread's `#copy async`s; in host code every `#copy` is complete when it returns",
            ));
            return Some(syn::parse_quote!(()));
        }
        if mac.path.is_ident(MBARRIER) {
            self.errors.push(syn::Error::new(
                span,
                "`#mbarrier` initialises or arrives on a shared barrier of a cuda body's block (TMA copies); it has no meaning in host code",
            ));
            return Some(syn::parse_quote!(()));
        }
        if mac.path.is_ident(SETMAXNREG) {
            self.errors.push(syn::Error::new(
                span,
                "`#setmaxnreg` moves registers between the warpgroups of a cuda body's block (their roles); it has no meaning in host code",
            ));
            return Some(syn::parse_quote!(()));
        }
        let copy = mac.path.is_ident(COPY);
        if !copy && !mac.path.is_ident(DOLLAR) {
            return None;
        }
        let mut names = Vec::new();
        crate::detour::dollar_names(&quote::quote!(#mac), &mut names);
        if names.iter().any(|n| self.not_built.iter().any(|b| n == b)) {
            return Some(match copy {
                true => syn::parse_quote!(()),
                false => syn::parse_quote!(0usize),
            });
        }
        if copy {
            return Some(self.copy(mac));
        }
        Some(match self.forms.form(mac.tokens.clone(), span) {
            Ok(form) => self.form_value(form, span),
            Err(e) => {
                self.errors.push(e);
                syn::parse_quote!(0usize)
            }
        })
    }

    /// A form's value in host code, through the IR as in a body: each index expression
    /// (its own forms translated first) is bound to a `let`, the form lowered, typed,
    /// proved and written by the Rust back end.
    fn form_value(&mut self, form: Form, span: Span) -> Expr {
        let mut lets: Vec<(Ident, Expr)> = Vec::new();
        let value = form.lower(span, &mut |e| {
            let mut e = e.clone();
            self.visit_expr_mut(&mut e);
            // The index's own span: a type error in it points at it.
            let (name, at) = (format!("__parray_ix{}", lets.len()), e.span());
            lets.push((Ident::new(&name, at), e));
            ir::Expr::new(ir::ExprKind::Capture(name), at)
        });
        let result = ir::LocalId(0);
        let body = ir::Body {
            target: ir::Target::Pthd,
            array: String::new(),
            file: span.file(),
            params: Vec::new(),
            type_params: Vec::new(),
            locals: vec![ir::Local {
                name: "__parray_form".to_string(),
                span: Span::call_site().into(),
                mutable: false,
                ty: None,
                param: false,
            }],
            tids: Vec::new(),
            stmts: vec![ir::Stmt::Let {
                local: result,
                init: Some(value),
                loc: crate::lower::loc(span),
            }],
            launch_bounds: None,
            tids_at_launch: false,
            constants: Vec::new(),
            captures: Vec::new(),
            functions: Vec::new(),
        };
        let typed = match check(body) {
            Ok(typed) => typed,
            Err(failed) => {
                let (_, diags) = *failed;
                self.errors.extend(
                    diags
                        .into_iter()
                        .map(|d| syn::Error::new(d.span.proc_macro(), d.message)),
                );
                return syn::parse_quote!(0usize);
            }
        };
        let stmts = match &mut self.hoisted {
            Some(hoisted) => stmts_tokens_in_loop(&prove(typed), Mode::Pthd, hoisted),
            None => stmts_tokens(&prove(typed), Mode::Pthd),
        };
        let (names, exprs): (Vec<Ident>, Vec<Expr>) = lets.into_iter().unzip();
        // The block is the macro's (call-site) code, the value inside it the user's.
        syn::parse_quote!({ #(let #names = #exprs;)* #stmts __parray_form })
    }
}

impl Host<'_, '_> {
    /// `#copy S(a) to D(b)` in host code: a copy between two arrays (their whole types),
    /// `parray::copy::copy::<S, D>(&a, &mut b)?`, so the enclosing function returns a
    /// `parray::Result`.
    fn copy(&mut self, mac: &syn::Macro) -> Expr {
        let form = match CopyForm::parse(mac) {
            Ok(form) => form,
            Err(e) => {
                self.errors.push(e);
                return syn::parse_quote!(());
            }
        };
        if let Some(a) = &form.asynchronous {
            self.errors.push(syn::Error::new(
                a.span(),
                "`#copy async` starts a copy into shared memory in a cuda body; on the host, `#copy` is complete when it returns: remove `async`",
            ));
            return syn::parse_quote!(());
        }
        if let Some(g) = &form.guard {
            self.errors.push(syn::Error::new(
                g.span,
                "a guarded `#copy` moves a tile's elements in a detour body; between host arrays, `#copy` copies whole types: copy into a view that holds the part you want",
            ));
            return syn::parse_quote!(());
        }
        let (s, d) = (&form.src_ty, &form.dst_ty);
        let (mut src, mut dst) =
            match (syn::parse2::<Expr>(form.src), syn::parse2::<Expr>(form.dst)) {
                (Ok(a), Ok(b)) => (a, b),
                (Err(e), _) | (_, Err(e)) => {
                    self.errors.push(e);
                    return syn::parse_quote!(());
                }
            };
        self.visit_expr_mut(&mut src);
        self.visit_expr_mut(&mut dst);
        // Both ends by method call (autoref finds the array for `b` and `&mut b` alike),
        // an array of a storage type that the named type views seen as it. The user's
        // `&b` is the usual spelling, which clippy would call a needless borrow here.
        let src = quote::quote_spanned!(src.span()=> {
            use ::parray::__private::CopyEnd as _;
            #[allow(clippy::needless_borrow)]
            let src = (#src).parray_copy_source()?;
            src
        });
        let dst = quote::quote_spanned!(dst.span()=> {
            use ::parray::__private::CopyEnd as _;
            #[allow(clippy::needless_borrow)]
            let dst = (#dst).parray_copy_target()?;
            dst
        });
        syn::parse_quote_spanned!(mac.span()=> ::parray::copy::copy::<#s, #d>(#src, #dst)?)
    }
}

impl VisitMut for Host<'_, '_> {
    fn visit_stmt_mut(&mut self, s: &mut Stmt) {
        if let Stmt::Macro(m) = s {
            if let Some(e) = self.replace(&m.mac) {
                let semi = m.semi_token.or_else(|| Some(Default::default()));
                *s = Stmt::Expr(e, semi);
                return;
            }
        }
        visit_mut::visit_stmt_mut(self, s);
    }

    fn visit_expr_mut(&mut self, e: &mut Expr) {
        if let Expr::Macro(m) = e {
            if let Some(new) = self.replace(&m.mac) {
                *e = new;
                return;
            }
        }
        let outermost_loop = self.hoisted.is_none()
            && matches!(e, Expr::ForLoop(_) | Expr::While(_) | Expr::Loop(_));
        if !outermost_loop {
            return visit_mut::visit_expr_mut(self, e);
        }
        self.hoisted = Some(Hoisted::default());
        visit_mut::visit_expr_mut(self, e);
        let hoisted = self.hoisted.take().expect("set above");
        if !hoisted.is_empty() {
            let around = hoisted.around(quote::quote!(#e), e.span());
            *e = syn::parse_quote!(#around);
        }
    }

    /// An item inside a loop (a `fn`) does not see the loop's locals: its forms hoist at
    /// its own loops.
    fn visit_item_mut(&mut self, item: &mut syn::Item) {
        let outer = self.hoisted.take();
        visit_mut::visit_item_mut(self, item);
        self.hoisted = outer;
    }

    fn visit_macro_mut(&mut self, mac: &mut syn::Macro) {
        // Forms inside `println!("{}", $dim(T)$)` and the like.
        if let Ok(mut args) = mac
            .parse_body_with(syn::punctuated::Punctuated::<Expr, syn::Token![,]>::parse_terminated)
        {
            if mac.tokens.to_string().contains(DOLLAR) {
                for a in args.iter_mut() {
                    self.visit_expr_mut(a);
                }
                mac.tokens = quote::quote!(#args);
            }
        }
    }
}
