//! The Parray macros: a shell over parray-front, which does all the work (and is tested
//! without a macro context). Each macro hands its tokens to the entry point of its name.

use proc_macro::TokenStream;

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
    parray_front::parray(input.into()).into()
}

/// `detour!(T { body })`: run `body` once on every thread of the thread array `T`.
#[proc_macro]
pub fn detour(input: TokenStream) -> TokenStream {
    parray_front::detour(input.into()).into()
}

/// `host! { ... }`: a block of host code in which `$...$` forms are compiled.
#[proc_macro]
pub fn host(input: TokenStream) -> TokenStream {
    parray_front::host(input.into()).into()
}

/// `kernel_source!(T(a, b) { body })`: the CUDA C that `detour!` generates for the same
/// input, as a `&'static str` (for reading and for snapshot tests). `kernel_source!(hip(64):
/// T(a, b) { body })` gives the same kernel in HIP C++ for an AMD GPU with 64-lane
/// wavefronts (CDNA), `hip(32):` with 32-lane wavefronts (RDNA).
#[proc_macro]
pub fn kernel_source(input: TokenStream) -> TokenStream {
    parray_front::kernel_source(input.into()).into()
}

/// `subprog! { fn name<T>(a, b) { body } }`: a subprogram over type parameters, called as
/// `name!(<M>(x, y))` (SPEC.md 3.10).
#[proc_macro]
pub fn subprog(input: TokenStream) -> TokenStream {
    parray_front::subprog(input.into()).into()
}

/// `#[parray::func] fn gelu(x: f32) -> f32 { ... }`: a function of the body language,
/// callable from cuda bodies (a `__device__` function on the GPU) and, as the Rust function
/// it also is, from pthd and mpi bodies and host code (SPEC.md 3.5, "Functions").
#[proc_macro_attribute]
pub fn func(attr: TokenStream, item: TokenStream) -> TokenStream {
    parray_front::func(attr.into(), item.into()).into()
}

/// `funcs! { fn f(..) -> T { .. } }`: functions of the body language as `#[parray::func]`
/// makes them, whose bodies may hold `$...$` forms of the types they name (`$M[i][j]$`,
/// `$dim(M_1)$`), folded as a body's (SPEC.md 3.5, "Functions").
#[proc_macro]
pub fn funcs(input: TokenStream) -> TokenStream {
    parray_front::funcs(input.into()).into()
}

/// `#[derive(parray::Record)]` on a `#[repr(C)]` struct of element types: the struct
/// becomes an element, its fields read and written in bodies (SPEC.md 2.3, 3.5).
#[proc_macro_derive(Record)]
pub fn derive_record(item: TokenStream) -> TokenStream {
    parray_front::derive_record(item.into()).into()
}

/// A call of a subprogram's macro (what `subprog!` defines expands to this).
#[doc(hidden)]
#[proc_macro]
pub fn __subprog_call(input: TokenStream) -> TokenStream {
    parray_front::resume(input.into()).into()
}

/// Continuation of the macros above once a companion macro has added its declarations.
#[doc(hidden)]
#[proc_macro]
pub fn __resume(input: TokenStream) -> TokenStream {
    parray_front::resume(input.into()).into()
}
