//! Compile errors of the macros: every bad declaration or `$...$` form is reported at the
//! offending token. Refresh the expected output with `TRYBUILD=overwrite` and review it.

#[test]
fn compile_fail() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/compile_fail/*.rs");
}

/// A `$...$` form used as (or inside) an index of another form should compile.
#[test]
#[ignore = "bug: a `$...$` form other than `$tid...$` inside an index reaches rustc as an untranslated `__parray_dollar!` call (dollar.rs, since d4739c0)"]
fn bug_dollar_inside_index() {
    let t = trybuild::TestCases::new();
    t.pass("tests/modules/bug_dollar_inside_index.rs");
}
