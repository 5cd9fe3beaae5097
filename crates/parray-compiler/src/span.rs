//! Where an IR node came from in the user's code.
//!
//! With the `rust` feature (the macros) a [`CodeSpan`] is the token's `proc_macro2::Span`,
//! so errors, `#line` directives and panics point at the user's code; without it (kernels
//! a program builds at run time) it is empty, and a run-time program links no token crate.

/// The user's code a node was lowered from (`CodeSpan::call_site()` for generated code).
#[derive(Clone, Copy, Debug)]
pub struct CodeSpan(Repr);

#[cfg(feature = "rust")]
type Repr = proc_macro2::Span;

#[cfg(not(feature = "rust"))]
#[derive(Clone, Copy, Debug)]
struct Repr;

impl CodeSpan {
    /// The span of code the compiler made itself (a run-time kernel, a test).
    pub fn call_site() -> CodeSpan {
        #[cfg(feature = "rust")]
        return CodeSpan(proc_macro2::Span::call_site());
        #[cfg(not(feature = "rust"))]
        return CodeSpan(Repr);
    }

    /// The token span, for the macros' errors and the Rust back end's `quote_spanned!`.
    #[cfg(feature = "rust")]
    pub fn proc_macro(self) -> proc_macro2::Span {
        self.0
    }
}

#[cfg(feature = "rust")]
impl From<proc_macro2::Span> for CodeSpan {
    fn from(span: proc_macro2::Span) -> CodeSpan {
        CodeSpan(span)
    }
}
