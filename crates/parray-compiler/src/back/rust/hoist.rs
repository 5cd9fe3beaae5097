//! The reads of types known when the program runs, hoisted before a loop (SPEC.md 3.1,
//! "Sizes given at run time").
//!
//! A `$T[i][j]$`, `$dim(T_k)$` or `$size(T_1_0)$` form of such a type reads numbers the
//! process resolves once (a module built from the bound sizes, kept in a static). Read at
//! every element, each is an atomic load and a walk the optimiser cannot move out of the
//! loop; read once before the outermost loop into a local (a `Copy` value), the loop holds
//! them in registers and the CPU code costs what `i * n + k` written by hand costs.

use proc_macro2::{Ident, Span, TokenStream};
use quote::{quote, quote_spanned};

use crate::ir::{visit_exprs, ExprKind, RuntimeIndex, Stmt};

/// One number a loop's forms read, hoisted as one local.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hoist {
    /// `T`'s sizes and top-level offsets (`DataType::offsets`): `$T[i][j]$`,
    /// `$size(T)$`, `$dim(T_k)$`.
    Type(String),
    /// Any other offset form of a declared type (`$T_1[x]$`, `$T[[i][j]][k]$`).
    Form(String, RuntimeIndex),
    /// The size of a dimension below the top (`$size(T_1_0)$`).
    Size(String, Vec<usize>),
}

impl Hoist {
    /// What the form `e` reads, if it is a form of a run-time type (or of a type
    /// parameter). `array` is the body's thread array, whose sizes the launch fixes.
    fn of(e: &ExprKind, array: &str) -> Option<Hoist> {
        match e {
            ExprKind::GenericOffset { ty, index, .. } if index.is_top_level(ty) => {
                Some(Hoist::Type(ty.clone()))
            }
            ExprKind::GenericOffset { ty, index, .. } => {
                Some(Hoist::Form(ty.clone(), index.clone()))
            }
            ExprKind::GenericSize { ty, .. } if ty == array => None,
            ExprKind::GenericSize { ty, path, .. } if path.len() <= 1 => {
                Some(Hoist::Type(ty.clone()))
            }
            ExprKind::GenericSize { ty, path, .. } => Some(Hoist::Size(ty.clone(), path.clone())),
            _ => None,
        }
    }
}

/// The reads of `stmt` (a loop: its header and body), each once, in order of appearance.
pub fn reads(stmt: &Stmt, array: &str) -> Vec<Hoist> {
    let mut out: Vec<Hoist> = Vec::new();
    visit_exprs(std::slice::from_ref(stmt), &mut |e| {
        if let Some(h) = Hoist::of(&e.kind, array) {
            if !out.contains(&h) {
                out.push(h);
            }
        }
    });
    out
}

/// The name of the `k`th hoisted read.
fn ident(k: usize) -> Ident {
    Ident::new(&format!("__parray_hoisted_{k}"), Span::call_site())
}

/// `let ident = (the read);` at the loop's span (where an unbound size's panic points).
fn let_tokens(h: &Hoist, ident: &Ident, span: Span) -> TokenStream {
    let value = match h {
        Hoist::Type(ty) => {
            let ty = Ident::new(ty, span);
            quote_spanned!(span=> <#ty as ::parray::DataType>::offsets())
        }
        Hoist::Form(ty, index) => {
            let form = form_tokens(ty, index, span);
            quote_spanned!(span=> #form.hoisted())
        }
        Hoist::Size(ty, path) => {
            let dt = Ident::new(ty, span);
            size_tokens(
                &quote_spanned!(span=> <#dt as ::parray::DataType>),
                ty,
                path,
                span,
            )
        }
    };
    // A read of the vector or the element branch of a copy is used by one of them only.
    quote_spanned!(span=> #[allow(unused_variables)] let #ident = #value;)
}

/// The form `index` of the declared type `ty` compiled at the bound sizes, once per site
/// (a `&'static RuntimeForm`): any form other than the top-level one names a declared
/// type, never a parameter.
pub fn form_tokens(ty: &str, index: &RuntimeIndex, span: Span) -> TokenStream {
    let ty = Ident::new(ty, span);
    let (text, vars) = (&index.text, &index.vars);
    quote_spanned!(span=> {
        static FORM: ::std::sync::OnceLock<::parray::__private::RuntimeForm> =
            ::std::sync::OnceLock::new();
        FORM.get_or_init(|| ::parray::__private::RuntimeForm::new(
            <#ty as ::parray::DataType>::module(), #text, &[#(#vars),*],
        ))
    })
}

/// The size of the dimension `path` walks to from the root of `ty` (below the top), found
/// once per site; `trait_` is `ty` as the trait that has its module (`<T as DataType>`).
pub fn size_tokens(trait_: &TokenStream, ty: &str, path: &[usize], span: Span) -> TokenStream {
    let dim = path.iter().fold(ty.to_string(), |d, k| format!("{d}_{k}"));
    quote_spanned!(span=> {
        static SIZE: ::std::sync::OnceLock<usize> = ::std::sync::OnceLock::new();
        *SIZE.get_or_init(|| ::parray::__private::dim_size(#trait_::module(), #dim))
    })
}

/// The hoisted reads of the loop being written, and the locals that hold them.
#[derive(Default)]
pub struct Hoisted(Vec<(Hoist, Ident)>);

impl Hoisted {
    /// Adds the reads not held yet, each with its own local.
    pub fn extend(&mut self, reads: Vec<Hoist>) {
        for h in reads {
            if self.get(&h).is_none() {
                let id = ident(self.0.len());
                self.0.push((h, id));
            }
        }
    }

    /// Whether the loop reads nothing of a run-time type.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The `let`s, before the loop, at its span.
    fn lets(&self, span: Span) -> TokenStream {
        self.0
            .iter()
            .map(|(h, id)| let_tokens(h, id, span))
            .collect()
    }

    /// The loop `looped` after the `let`s of its reads: twice, where a form's offsets may
    /// or may not be a sum of multiples of its indices, the first copy for when all are
    /// (the optimiser then drops the other evaluation from it, and the loop's offsets
    /// become additions). rustc reports a mistake in the user's code once: the two
    /// copies carry the same spans.
    pub fn around(&self, looped: TokenStream, span: Span) -> TokenStream {
        let lets = self.lets(span);
        let strided: Vec<TokenStream> = self
            .0
            .iter()
            .filter_map(|(h, id)| match h {
                Hoist::Type(_) => Some(quote!(::parray::Offsets::is_strided(#id))),
                Hoist::Form(..) => Some(quote!(#id.is_strided())),
                Hoist::Size(..) => None,
            })
            .collect();
        match strided.is_empty() {
            true => quote_spanned!(span=> { #lets #looped }),
            false => quote_spanned!(span=> {
                #lets
                // A `match`, as clippy's `if_same_then_else` would read the copies as a
                // mistake.
                match #(#strided)&&* {
                    true => { #looped }
                    false => { #looped }
                }
            }),
        }
    }

    /// The local holding `h`, if this loop hoisted it.
    pub fn get(&self, h: &Hoist) -> Option<&Ident> {
        self.0.iter().find(|(x, _)| x == h).map(|(_, id)| id)
    }

    /// The local of `T`'s offsets (`Hoist::Type`), as tokens.
    pub fn of_type(&self, ty: &str) -> Option<TokenStream> {
        let id = self.get(&Hoist::Type(ty.to_string()))?;
        Some(quote!(#id))
    }
}
