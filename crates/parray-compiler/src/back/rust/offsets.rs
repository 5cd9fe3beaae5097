//! Rust back end: offsets as `usize` arithmetic, as source text or as tokens for the macros.

use proc_macro2::{Literal, TokenStream};
use quote::quote;

use parray_layout::expr::{LinearForm, Term, VarId};
use parray_layout::offsets::Offset;

/// The offset as Rust source; each variable is written as its name.
pub fn to_source(off: &Offset) -> String {
    off.to_source()
}

/// The offset as a `usize` Rust expression; `var` supplies each variable's tokens (it must
/// already be a `usize`). A constant offset is a suffixed literal so that it types on its own.
pub fn to_tokens(off: &Offset, var: &dyn Fn(VarId) -> TokenStream) -> TokenStream {
    if let Some(c) = off.as_const() {
        let lit = Literal::usize_suffixed(c as usize);
        return quote!(#lit);
    }
    expr_tokens(&off.expr, var)
}

fn expr_tokens(e: &LinearForm, var: &dyn Fn(VarId) -> TokenStream) -> TokenStream {
    let mut parts: Vec<TokenStream> = e
        .terms
        .iter()
        .map(|(k, t)| {
            let t = term_tokens(t, var);
            if *k == 1 {
                t
            } else {
                let k = Literal::u64_unsuffixed(*k);
                quote!(#t * #k)
            }
        })
        .collect();
    if e.konst != 0 || parts.is_empty() {
        let k = Literal::u64_unsuffixed(e.konst);
        parts.push(quote!(#k));
    }
    quote!(#(#parts)+*)
}

fn term_tokens(t: &Term, var: &dyn Fn(VarId) -> TokenStream) -> TokenStream {
    match t {
        Term::Var(v) => var(*v),
        Term::Digit { of, div, modulo } => {
            let inner = expr_tokens(of, var);
            let mut out = quote!((#inner));
            if *div != 1 {
                let d = Literal::u64_unsuffixed(*div);
                out = quote!(#out / #d);
            }
            if let Some(m) = modulo {
                let m = Literal::u64_unsuffixed(*m);
                out = quote!(#out % #m);
            }
            quote!((#out))
        }
        Term::Xor { a, b } => {
            let (a, b) = (expr_tokens(a, var), expr_tokens(b, var));
            quote!(((#a) ^ (#b)))
        }
    }
}
