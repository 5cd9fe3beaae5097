//! Parray's front end as a library: `parray! { ... }` declarations, `$...$` forms, and
//! `detour!`, `host!`, `subprog!` and `kernel_source!` bodies lowered into the body IR of
//! parray-compiler. parray-macros is a shell that hands each macro's tokens to the entry
//! point of the same name here; everything below runs, and is tested, without a macro
//! context.
//!
//! Each entry point expands to zero-cost Rust: offsets are the simplified expressions of
//! the offset compiler, with every size a literal. Names declared by another `parray!`
//! block reach a macro through their companion macros (see `resolve`).

// Library code reports through errors, not stdout or stderr.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod decl;
mod detour;
mod dollar;
mod errors;
mod func;
mod host;
mod lineup;
mod lower;
mod record;
mod resolve;
mod shapes;
mod subprog;
mod text;

#[cfg(test)]
mod tests;

use proc_macro2::TokenStream;

use resolve::{drive, Kind, Resumed};

/// `parray! { decls }`: declarations in the paper's notation (SPEC.md, "Writing programs").
pub fn parray(input: TokenStream) -> TokenStream {
    drive(Kind::Parray, Vec::new(), input, decl::expand)
}

/// `detour!(T { body })`: run `body` once on every thread of the thread array `T`.
pub fn detour(input: TokenStream) -> TokenStream {
    with_forms(input, |input| {
        drive(Kind::Detour, Vec::new(), input, detour::expand)
    })
}

/// `host! { ... }`: a block of host code in which `$...$` forms are compiled.
pub fn host(input: TokenStream) -> TokenStream {
    with_forms(input, |input| {
        drive(Kind::Host, Vec::new(), input, detour::expand_host)
    })
}

/// `kernel_source!(T(a, b) { body })`: the CUDA C (or, after `hip(64):`, HIP C++) that
/// `detour!` generates for the same input, as a `&'static str`.
pub fn kernel_source(input: TokenStream) -> TokenStream {
    with_forms(input, |input| {
        drive(Kind::Source, Vec::new(), input, detour::expand_source)
    })
}

/// `subprog! { fn name<T>(a, b) { body } }`: a subprogram over type parameters, called as
/// `name!(<M>(x, y))` (SPEC.md 3.10).
pub fn subprog(input: TokenStream) -> TokenStream {
    subprog::define(input).unwrap_or_else(|e| e.to_compile_error())
}

/// `#[parray::func] fn name(..) -> T { .. }`: a function of the body language, callable
/// from cuda bodies (and, being a Rust function too, from anywhere else).
pub fn func(attr: TokenStream, item: TokenStream) -> TokenStream {
    func::define(attr, item)
}

/// `funcs! { fn f(..) -> T { .. } .. }`: functions as `#[parray::func]` makes them, whose
/// bodies may hold `$...$` forms of the types they name (SPEC.md 3.5, "Functions").
pub fn funcs(input: TokenStream) -> TokenStream {
    func::define_all(input)
}

/// `#[derive(parray::Record)]`: a `#[repr(C)]` struct of element types as an element.
pub fn derive_record(input: TokenStream) -> TokenStream {
    record::derive(input)
}

/// Continuation of the entry points above once a companion macro has added its
/// declarations (also what a subprogram's call expands to).
pub fn resume(input: TokenStream) -> TokenStream {
    let r = match syn::parse2::<Resumed>(input) {
        Ok(r) => r,
        Err(e) => return e.to_compile_error(),
    };
    if !r.pending.is_empty() {
        return resolve::call_next(r.kind, &r.pending, &r.entries, r.input);
    }
    let handler = match r.kind {
        Kind::Parray => decl::expand,
        Kind::Detour => detour::expand,
        Kind::Host => detour::expand_host,
        Kind::Source => detour::expand_source,
        Kind::Subprog => subprog::expand_call,
        Kind::Func => func::expand,
        Kind::FuncCheck => func::check,
        Kind::Record => record::expand,
    };
    drive(r.kind, r.entries, r.input, handler)
}

/// `$` cannot travel through the companions' `macro_rules!`: the forms are rewritten first.
fn with_forms(input: TokenStream, expand: impl FnOnce(TokenStream) -> TokenStream) -> TokenStream {
    match dollar::preprocess(input) {
        Ok(input) => expand(input),
        Err(e) => e.to_compile_error(),
    }
}
