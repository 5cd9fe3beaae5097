//! Compile errors of the macros: every bad declaration or `$...$` form is reported at the
//! offending token. Refresh the expected output with `TRYBUILD=overwrite` and review it.

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}

/// Programs that must compile and run: a `$...$` form inside an index of another, a cuda
/// body naming its kernel's parameters whatever the arguments are called, and `S::create()`
/// in a cuda body where no `$...$` form names `S`.
#[test]
fn passes() {
    let t = trybuild::TestCases::new();
    t.pass("tests/modules/pass_*.rs");
}
