//! Differential fuzzing of detour bodies (SPEC.md 3.5, "Differential testing"): random
//! well-defined bodies ([`gen`]), what each must compute by the subset's rules ([`eval`],
//! independent of parray-compiler), and the source text a test runs on every back end
//! ([`print`]). `build.rs` writes the bodies and their expected outputs; the tests in
//! `tests/` run them.

pub mod ast;
pub mod eval;
pub mod gen;
pub mod print;

/// One generated body, as `build.rs` writes it for the tests.
pub struct Case {
    pub index: usize,
    /// The body's source text, for a failure's report.
    pub text: &'static str,
    /// Its declarations (`parray! { ... }`), for the same.
    pub decls: &'static str,
    /// The output array's element keyword (`int`, `unsigned`, `long`, `uchar`).
    pub elem: &'static str,
    pub blocks: u32,
    pub threads: u32,
    /// Runs it on pthd threads (None for a body with collectives) ...
    pub pthd: Option<fn() -> parray::Result<Vec<i64>>>,
    /// ... and on the cuda grid (the GPU under `PARRAY_BACKEND=cuda`, else the emulation).
    pub cuda: fn() -> parray::Result<Vec<i64>>,
    /// Its CUDA C (`kernel_source!`).
    pub source: fn() -> &'static str,
    pub expected_pthd: Option<&'static [i64]>,
    pub expected_cuda: &'static [i64],
}
