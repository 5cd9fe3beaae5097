//! `const N;`: a size without a value in the text, given by the bindings of
//! `Module::build` (the CLI's `--const`, a program's `N.bind(n)`).

use parray_layout::{parse_program, ErrorKind, Module};

const TEXT: &str = "const N;\nconst T = 4;\npaged float [[N/T][T]][N] M;\nfloat [#M_1][#M_0] MT;\npaged float [8] FIXED;\n";

#[test]
fn a_run_time_size_resolves_with_its_binding_and_every_derived_size_follows() {
    let program = parse_program(TEXT).unwrap();
    for n in [4u64, 12, 1000] {
        let m = Module::build(&program, &[("N".into(), n)]).unwrap();
        let size = |name: &str| m.size(m.lookup(name).unwrap().node);
        assert_eq!((size("M"), size("M_0"), size("M_0_0")), (n * n, n, n / 4));
        // Row-major: M[i][j] at i * n + j, and MT[j][i] the same element.
        let (i, j) = (n - 1, 2);
        let mt = m.lookup("MT").unwrap().node;
        assert_eq!(m.offset_at(mt, j * n + i), i * n + j);
    }
}

#[test]
fn an_unbound_size_is_an_error_at_its_name() {
    let program = parse_program(TEXT).unwrap();
    let e = Module::build(&program, &[]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Unbound);
    assert_eq!((e.span.line, e.span.col), (1, 7));
    assert!(e.message.contains("--const N=VALUE"), "{}", e.message);
}

#[test]
fn a_binding_the_declarations_cannot_take_names_the_constraint() {
    let program = parse_program(TEXT).unwrap();
    let e = Module::build(&program, &[("N".into(), 1001)]).unwrap_err();
    assert_eq!(e.kind, ErrorKind::Size);
    assert_eq!(e.decl.as_deref(), Some("M"));
    assert!(
        e.message.contains("1001 / 4 leaves remainder 1"),
        "{}",
        e.message
    );
}

#[test]
fn run_time_names_are_the_sizes_and_what_uses_them() {
    let program = parse_program(TEXT).unwrap();
    assert_eq!(program.runtime_names(), ["N", "M", "MT"]);
    assert_eq!(program.closure("MT"), ["MT", "M", "N", "T"]);
}

/// `ceil(a / b)`: the pieces of `b` that cover `a`, for a thread array over data its tile
/// does not divide; the interpreter (the oracle) gives the same sizes.
#[test]
fn ceil_covers_a_size_its_tile_does_not_divide() {
    let text =
        "const N;\ncuda(float* a) [ceil(N / 256)][256] G;\npaged float [ceil((N + 1) / 2)] H;\n";
    let program = parse_program(text).unwrap();
    for n in [1u64, 255, 256, 257, 1000, 65536] {
        let m = Module::build(&program, &[("N".into(), n)]).unwrap();
        let size = |name: &str| m.size(m.lookup(name).unwrap().node);
        assert_eq!(size("G_0"), n.div_ceil(256), "N = {n}");
        assert_eq!(size("G"), n.div_ceil(256) * 256, "N = {n}");
        assert_eq!(size("H"), (n + 1).div_ceil(2), "N = {n}");
        let oracle = parray_layout::interp::Interp::new(&program, &[("N".into(), n)]).unwrap();
        assert_eq!(oracle.size("G_0"), Some(n.div_ceil(256)), "N = {n}");
    }
    let e = parse_program("const N = 8;\npaged float [ceil(N)] X;\n").unwrap_err();
    assert!(
        e.message.contains("`ceil` takes one division"),
        "{}",
        e.message
    );
}
