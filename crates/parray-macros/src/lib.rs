//! The Parray front end: `parray! { ... }` declarations, `$...$` forms, `detour!` and `host!`.
//!
//! Each macro parses its input with parray-core and expands to zero-cost Rust: offsets are
//! the simplified expressions of the offset compiler, with every size a literal. Names
//! declared by another `parray!` block reach a macro through their companion macros
//! (see `resolve`).

// Library code reports through errors, not stdout or stderr.
#![warn(clippy::print_stdout, clippy::print_stderr)]

mod decl;
mod detour;
mod dollar;
mod errors;
mod host;
mod lower;
mod resolve;
mod subprog;
mod text;

use proc_macro::TokenStream;

use resolve::{drive, Kind, Resumed};

/// Declarations in the paper's notation (SPEC.md, "Writing programs").
///
/// ```ignore
/// parray! {
///     pub paged float [[2][512]][[2][512]] M;
///     pub pthd [2][2] MY_TA;
/// }
/// ```
#[proc_macro]
pub fn parray(input: TokenStream) -> TokenStream {
    drive(Kind::Parray, Vec::new(), input.into(), decl::expand).into()
}

/// `detour!(T { body })`: run `body` once on every thread of the thread array `T`.
#[proc_macro]
pub fn detour(input: TokenStream) -> TokenStream {
    // `$` cannot travel through the companions' `macro_rules!`: rewrite the forms first.
    match dollar::preprocess(input.into()) {
        Ok(input) => drive(Kind::Detour, Vec::new(), input, detour::expand).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `host! { ... }`: a block of host code in which `$...$` forms are compiled.
#[proc_macro]
pub fn host(input: TokenStream) -> TokenStream {
    match dollar::preprocess(input.into()) {
        Ok(input) => drive(Kind::Host, Vec::new(), input, detour::expand_host).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `kernel_source!(T(a, b) { body })`: the CUDA C that `detour!` generates for the same
/// input, as a `&'static str` (for reading and for snapshot tests). `kernel_source!(hip(64):
/// T(a, b) { body })` gives the same kernel in HIP C++ for an AMD GPU with 64-lane
/// wavefronts (CDNA), `hip(32):` with 32-lane wavefronts (RDNA).
#[proc_macro]
pub fn kernel_source(input: TokenStream) -> TokenStream {
    match dollar::preprocess(input.into()) {
        Ok(input) => drive(Kind::Source, Vec::new(), input, detour::expand_source).into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// `subprog! { fn name<T>(a, b) { body } }`: a subprogram over type parameters, called as
/// `name!(<M>(x, y))` (SPEC.md 3.10).
#[proc_macro]
pub fn subprog(input: TokenStream) -> TokenStream {
    match subprog::define(input.into()) {
        Ok(tokens) => tokens.into(),
        Err(e) => e.to_compile_error().into(),
    }
}

/// A call of a subprogram's macro (what `subprog!` defines expands to this).
#[doc(hidden)]
#[proc_macro]
pub fn __subprog_call(input: TokenStream) -> TokenStream {
    __resume(input)
}

/// Continuation of the macros above once a companion macro has added its declarations.
#[doc(hidden)]
#[proc_macro]
pub fn __resume(input: TokenStream) -> TokenStream {
    let r = match syn::parse::<Resumed>(input) {
        Ok(r) => r,
        Err(e) => return e.to_compile_error().into(),
    };
    if !r.pending.is_empty() {
        return resolve::call_next(r.kind, &r.pending, &r.entries, r.input).into();
    }
    let handler = match r.kind {
        Kind::Parray => decl::expand,
        Kind::Detour => detour::expand,
        Kind::Host => detour::expand_host,
        Kind::Source => detour::expand_source,
        Kind::Subprog => subprog::expand_call,
    };
    drive(r.kind, r.entries, r.input, handler).into()
}
