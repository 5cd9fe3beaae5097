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

/// A structure whose first group counts pieces with `ceil` covers its target past the
/// end: the tiles of a matrix its tile does not divide. Every index, past the end too,
/// has the offset that continues the target's stride, in the offset compiler, the
/// evaluator and the interpreter (the oracle); the maximum offset is the last one.
#[test]
fn a_structure_counted_with_ceil_covers_its_target_past_the_end() {
    let text = "const M;\nconst K;\npaged float [M][K] A;\n\
                paged float [[ceil(M / 16)][[4][4]]#A_0][[ceil(K / 8)][8]#A_1] TILES;\n";
    let program = parse_program(text).unwrap();
    for (rows, cols) in [(16u64, 8u64), (17, 9), (100, 77), (1, 1)] {
        let binds = [("M".into(), rows), ("K".into(), cols)];
        let m = Module::build(&program, &binds).unwrap();
        let oracle = parray_layout::interp::Interp::new(&program, &binds).unwrap();
        let node = m.lookup("TILES").unwrap().node;
        let (tr, tc) = (rows.div_ceil(16) * 16, cols.div_ceil(8) * 8);
        assert_eq!(m.size(node), tr * tc);
        let off = parray_layout::index_function(&m, "TILES", &["i", "j"]).unwrap();
        for (i, j) in (0..tr).flat_map(|i| (0..tc).map(move |j| (i, j))) {
            let want = i * cols + j;
            let flat = i * tc + j;
            assert_eq!(m.offset_at(node, flat), want, "{rows}x{cols} at ({i}, {j})");
            assert_eq!(oracle.offset("TILES", flat), Some(want));
            assert_eq!(off.expr.eval(&[i, j]), want);
        }
        assert_eq!(m.extent(node), (tr - 1) * cols + tc);
    }
    let fails = |decl: &str, says: &str| {
        let text = format!("const M;\npaged float [M][8] A;\npaged float [4][4] B;\n{decl}\n");
        let program = parse_program(&text).unwrap();
        let e = Module::build(&program, &[("M".into(), 100)]).unwrap_err();
        assert!(e.message.contains(says), "{decl}: {}", e.message);
        let oracle = parray_layout::interp::Interp::new(&program, &[("M".into(), 100)]);
        assert!(oracle.is_err(), "{decl}: the oracle takes it");
    };
    fails(
        "paged float [[7][16]#A_0][#A_1] T;",
        "counted with `ceil`: `[[ceil(100 / 16)][..]]#A_0`",
    );
    fails(
        "paged float [[ceil(M / 16)][32]#A_0][#A_1] T;",
        "reach 124 past the end of `A_0`",
    );
    fails(
        "paged float [[ceil(16 / 3)][3]#B] T;",
        "only where its offsets are one stride",
    );
}
