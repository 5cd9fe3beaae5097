//! `host! { ... }`: ordinary Rust in which the `$...$` forms are compiled; nothing else
//! changes (host code is not a detour body: any Rust goes).

use proc_macro2::Span;
use syn::spanned::Spanned;
use syn::visit_mut::{self, VisitMut};
use syn::{Expr, Stmt};

use crate::dollar::{Forms, COPY, DOLLAR, SYNC};

/// Replaces every form in `stmts`; all errors are reported together.
pub fn translate(forms: &mut Forms, stmts: &mut [Stmt]) -> syn::Result<()> {
    let mut h = Host {
        forms,
        errors: Vec::new(),
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
    errors: Vec<syn::Error>,
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
        if mac.path.is_ident(COPY) {
            return Some(self.copy(mac));
        }
        if !mac.path.is_ident(DOLLAR) {
            return None;
        }
        Some(match self.forms.form(mac.tokens.clone(), span) {
            Ok(mut form) => {
                // Index expressions are host code too: translate their forms first.
                match &mut form {
                    crate::dollar::Form::Offset { atoms, .. } => {
                        for (_, atom) in atoms.iter_mut() {
                            if let crate::dollar::Atom::Expr(e) = atom {
                                self.visit_expr_mut(e);
                            }
                        }
                    }
                    crate::dollar::Form::GenericOffset { indices, .. } => {
                        indices.iter_mut().for_each(|e| self.visit_expr_mut(e));
                    }
                    _ => {}
                }
                syn::parse2(Forms::rust(form, span)).expect("a compiled form parses")
            }
            Err(e) => {
                self.errors.push(e);
                syn::parse_quote!(0usize)
            }
        })
    }
}

impl Host<'_, '_> {
    /// `#copy S(a) to D(b)` in host code: a copy between two arrays (their whole types),
    /// `parray::copy::copy::<S, D>(&a, &mut b)?`, so the enclosing function returns a
    /// `parray::Result`.
    fn copy(&mut self, mac: &syn::Macro) -> Expr {
        use proc_macro2::{Delimiter, TokenTree as T};
        let tts: Vec<T> = mac.tokens.clone().into_iter().collect();
        match tts.as_slice() {
            [T::Ident(s), T::Group(p), T::Ident(to), T::Ident(d), T::Group(q)]
                if to == "to"
                    && p.delimiter() == Delimiter::Parenthesis
                    && q.delimiter() == Delimiter::Parenthesis =>
            {
                let (mut src, mut dst) = match (
                    syn::parse2::<Expr>(p.stream()),
                    syn::parse2::<Expr>(q.stream()),
                ) {
                    (Ok(a), Ok(b)) => (a, b),
                    (Err(e), _) | (_, Err(e)) => {
                        self.errors.push(e);
                        return syn::parse_quote!(());
                    }
                };
                self.visit_expr_mut(&mut src);
                self.visit_expr_mut(&mut dst);
                // The destination by method call, so that `b` and `&mut b` both work.
                syn::parse_quote_spanned!(mac.span()=> ::parray::copy::copy::<#s, #d>(&(#src), {
                    use ::parray::__private::CopyTarget as _;
                    (#dst).parray_copy_target()
                })?)
            }
            _ => {
                self.errors.push(syn::Error::new(
                    mac.span(),
                    "expected `#copy S(a) to D(b);`: element k of the array `a` (of type S) goes to element k of `b` (of type D)",
                ));
                syn::parse_quote!(())
            }
        }
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
        visit_mut::visit_expr_mut(self, e);
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
