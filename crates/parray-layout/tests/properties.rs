//! The compiler against the reference interpreter (`parray_layout::interp`, the executable
//! form of PARRAY.md section 3) on random valid programs from `gen`, plus deterministic
//! edge cases and the regressions that the properties found.

mod gen;

use std::collections::HashMap;

use parray_layout::interp::Interp;
use parray_layout::{compile, offset_function, parse_index_expr, parse_program, ErrorKind, Module};
use proptest::prelude::*;

/// `cases` cases, times the factor in the environment variable `PARRAY_CASES_FACTOR`
/// (for long bug hunts: `PARRAY_CASES_FACTOR=100 cargo test --release --test properties`).
fn config(cases: u32) -> ProptestConfig {
    let factor = std::env::var("PARRAY_CASES_FACTOR")
        .ok()
        .and_then(|f| f.parse().ok())
        .unwrap_or(1);
    ProptestConfig {
        cases: cases * factor,
        max_shrink_iters: 20_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

/// The compiled offset of `text` under each assignment, checked against the interpreter.
fn check_index(
    m: &Module,
    it: &Interp,
    text: &str,
    values: &[HashMap<String, u64>],
) -> Result<(), TestCaseError> {
    let ie = parse_index_expr(text).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
    let off = compile(m, &ie).map_err(|e| TestCaseError::fail(format!("compile {text}: {e}")))?;
    for vals in values {
        let mut v = vec![0u64; off.vars.len()];
        for (name, value) in vals {
            if let Some(id) = off.vars.id(name) {
                v[id.0 as usize] = *value;
            }
        }
        let want = it
            .index(&ie, vals)
            .map_err(|e| TestCaseError::fail(format!("interp {text}: {e}")))?;
        let got = off.expr.eval(&v);
        prop_assert_eq!(got, want, "{} = {} with {:?}", text, off.to_source(), vals);
    }
    Ok(())
}

/// Every dimension of the program: sizes, offset functions, offset_at, extent, cnt.
fn check_dimensions(p: &gen::GenProgram) -> Result<(), TestCaseError> {
    check_resolved(p, &p.module(), &p.interp())
}

fn check_resolved(p: &gen::GenProgram, m: &Module, it: &Interp) -> Result<(), TestCaseError> {
    for path in it.paths() {
        let d = it.lookup(&path).unwrap();
        let node = m
            .lookup(&path)
            .map_err(|e| TestCaseError::fail(format!("lookup {path}: {e:?}")))?
            .node;
        let size = it.dim_size(d);
        prop_assert_eq!(m.size(node), size, "size of {}", path);
        let want = it.offsets(d);
        let f = offset_function(m, node, "i")
            .map_err(|e| TestCaseError::fail(format!("offset_function {path}: {e}")))?;
        let extent = m.extent(node);
        for (i, w) in want.iter().enumerate() {
            prop_assert_eq!(
                f.expr.eval(&[i as u64]),
                *w,
                "{}[{}] by offset_function {}",
                path,
                i,
                f.to_source()
            );
            prop_assert_eq!(
                m.offset_at(node, i as u64),
                *w,
                "{}[{}] by offset_at",
                path,
                i
            );
            prop_assert!(
                *w < extent,
                "{}[{}] = {} outside the extent {}",
                path,
                i,
                w,
                extent
            );
        }
        if let Some(r) = f.rows(size) {
            // Rows claimed from the form must be the enumeration's (a strided copy trusts them).
            for (i, w) in want.iter().enumerate() {
                let i = i as u64;
                prop_assert_eq!(
                    r.start + i / r.width * r.pitch + i % r.width,
                    *w,
                    "{}[{}]: rows {:?} of {}",
                    path,
                    i,
                    r,
                    f.to_source()
                );
            }
        }
        prop_assert_eq!(extent, it.extent(&path), "extent of {}", path);
        let cnt = m
            .is_contiguous(node)
            .map_err(|e| TestCaseError::fail(format!("cnt {path}: {e}")))?;
        prop_assert_eq!(cnt, it.cnt(&path), "cnt of {}", path);
        if p.is_natural_path(&path) {
            // A dimension of a natural type is `i * stride`: coalescing must be complete.
            let src = f.to_source();
            prop_assert!(
                !src.contains('/') && !src.contains('%'),
                "natural {} has offset function {}",
                path,
                src
            );
            let stride = if size > 1 { want[1] } else { 0 };
            prop_assert!(
                want.iter()
                    .enumerate()
                    .all(|(i, w)| *w == i as u64 * stride),
                "natural {} not linear",
                path
            );
            let type_root = it.type_names().contains(&path);
            if type_root {
                let mut sorted = want.clone();
                sorted.sort_unstable();
                prop_assert!(
                    sorted.iter().enumerate().all(|(i, w)| *w == i as u64),
                    "natural {} is not a bijection",
                    path
                );
                let ok = src == "i" || (size == 1 && src == "0");
                prop_assert!(ok, "natural type {} has offset function {}", path, src);
            }
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(512))]

    /// Compiled, simplified offsets equal the interpreter's for random index expressions.
    #[test]
    fn compiled_offsets_match_the_interpreter(case in gen::case()) {
        let m = case.program.module();
        let it = case.program.interp();
        check_index(&m, &it, &case.index.text, &case.values)?;
        // Every assignment, when there are few.
        let count = case.index.bounds.values().try_fold(1u64, |acc, b| acc.checked_mul(b + 1));
        if count.is_some_and(|n| n <= 1024) {
            let mut all = vec![HashMap::new()];
            for (name, max) in &case.index.bounds {
                all = all
                    .into_iter()
                    .flat_map(|a| (0..=*max).map(move |v| {
                        let mut a = a.clone();
                        a.insert(name.clone(), v);
                        a
                    }))
                    .collect();
            }
            check_index(&m, &it, &case.index.text, &all)?;
        }
        let target = case.index.text.split('[').next().unwrap();
        if case.program.is_natural_path(target) && !case.index.bounds.is_empty() {
            let off = compile(&m, &parse_index_expr(&case.index.text).unwrap()).unwrap();
            let src = off.to_source();
            prop_assert!(!src.contains('/') && !src.contains('%'), "natural {} compiles to {}", case.index.text, src);
        }
    }

    /// Constant index expressions of any shape: the compiler refuses exactly what the
    /// interpreter refuses (wrong arity, out of range) and agrees on the rest.
    #[test]
    fn any_shape_constant_indices_are_refused_alike(v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let p = gen::gen_program(&mut c);
        let (m, it) = (p.module(), p.interp());
        for _ in 0..4 {
            let target = gen::gen_target(&mut c, &p, &it);
            let text = gen::gen_any_index(&mut c, &it, &target);
            let ie = parse_index_expr(&text).unwrap();
            let want = it.index(&ie, &HashMap::new());
            let got = compile(&m, &ie).map_err(|e| e.to_string());
            match (&got, &want) {
                (Ok(off), Ok(w)) => prop_assert_eq!(off.as_const(), Some(*w), "{} = {}", text, off.to_source()),
                (Err(_), Err(_)) => {}
                _ => prop_assert!(false, "{}: the compiler says {:?}, the interpreter {:?}", text, got.map(|o| o.to_source()), want),
            }
        }
    }

    /// compile_with: variables given tighter ranges beforehand (thread indices) are
    /// simplified with them, and still agree with the interpreter inside them.
    #[test]
    fn preset_variable_ranges_match_the_interpreter(case in gen::case(), v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let m = case.program.module();
        let it = case.program.interp();
        let mut vars = parray_layout::Vars::new();
        let mut bounds = case.index.bounds.clone();
        // Also a variable the expression does not use.
        vars.bind("unused", 7);
        for (name, max) in bounds.iter_mut() {
            if c.flag(60) {
                *max = c.below(*max + 1);
                vars.bind(name, *max);
            } else if c.flag(30) {
                vars.bind(name, *max + 1 + c.below(5));
            }
        }
        let ie = parse_index_expr(&case.index.text).unwrap();
        let off = parray_layout::compile_with(&m, &ie, vars).map_err(|e| TestCaseError::fail(e.to_string()))?;
        for vals in gen::gen_values(&mut c, &bounds, 8) {
            let mut v = vec![0u64; off.vars.len()];
            for (name, value) in &vals {
                v[off.vars.id(name).expect("a used variable").0 as usize] = *value;
            }
            prop_assert_eq!(off.expr.eval(&v), it.index(&ie, &vals).unwrap(), "{} = {} with {:?}", case.index.text, off.to_source(), vals);
        }
    }

    /// Fully constant index expressions compile to the interpreter's constant.
    #[test]
    fn constant_indices_compile_to_constants(v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let p = gen::gen_program(&mut c);
        let (m, it) = (p.module(), p.interp());
        let paths = it.paths();
        for _ in 0..4 {
            let target = c.pick(&paths).clone();
            let text = gen::gen_const_index(&mut c, &it, &target);
            let ie = parse_index_expr(&text).unwrap();
            let off = compile(&m, &ie).map_err(|e| TestCaseError::fail(format!("{text}: {e}")))?;
            prop_assert_eq!(off.as_const(), Some(it.index(&ie, &HashMap::new()).unwrap()), "{} = {}", text, off.to_source());
        }
    }
}

/// Both accept the program or both refuse it; when both accept, they agree everywhere.
fn check_agreement(src: &str, overrides: &[(String, u64)]) -> Result<(), TestCaseError> {
    let Ok(ast) = parse_program(src) else {
        return Ok(());
    };
    let m = Module::build(&ast, overrides);
    let it = Interp::new(&ast, overrides);
    match (m, it) {
        (Ok(m), Ok(it)) => {
            let small = it
                .type_names()
                .iter()
                .all(|t| it.size(t).unwrap() <= 1 << 16);
            if small {
                check_resolved(&gen::GenProgram::from_source(src), &m, &it)?;
            }
            Ok(())
        }
        (Err(_), Err(_)) => Ok(()),
        (m, it) => Err(TestCaseError::fail(format!(
            "the compiler says {:?}, the interpreter {:?}",
            m.map(|_| ()).map_err(|e| e.to_string()),
            it.map(|_| ())
        ))),
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Small edits of valid programs (which may make them invalid): the compiler and the
    /// interpreter accept the same programs and agree on the accepted ones.
    #[test]
    fn edited_programs_are_accepted_alike(v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let p = gen::gen_program(&mut c);
        let src = gen::mutate(&mut c, &p);
        check_agreement(&src, &[])?;
    }

    /// Constants overridden (as `--const` does): accepted alike, and then the same offsets.
    #[test]
    fn overridden_constants_are_accepted_alike(v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let p = gen::gen_program(&mut c);
        let mut overrides: Vec<(String, u64)> = Vec::new();
        for (n, _) in &p.consts {
            if c.flag(60) {
                overrides.push((n.clone(), 1 + c.below(6)));
            }
        }
        check_agreement(&p.source, &overrides)?;
    }

    /// offset_function, offset_at, extent and cnt of every dimension agree with enumeration.
    #[test]
    fn every_dimension_matches_the_interpreter(p in gen::program()) {
        check_dimensions(&p)?;
    }
}

proptest! {
    #![proptest_config(config(256))]

    /// Huge sizes: no overflow anywhere, and the same offsets at sampled indices.
    #[test]
    fn huge_types_match_the_interpreter(v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let p = gen::gen_program_sized(&mut c, true);
        let src = p.source.clone();
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| check_huge(&mut c, &p)))
            .map_err(|e| {
                let msg = e.downcast_ref::<String>().cloned().or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()));
                TestCaseError::fail(format!("panic {msg:?} on\n{src}"))
            })??;
    }
}

fn check_huge(c: &mut gen::Choices, p: &gen::GenProgram) -> Result<(), TestCaseError> {
    {
        let it = p.interp();
        let fits = it
            .type_names()
            .iter()
            .all(|t| it.offset_bound(it.lookup(t).unwrap()) <= u64::MAX as u128);
        let m = match Module::build(&p.ast(), &[]) {
            Ok(m) => m,
            // Views too irregular to analyse are refused, not wrong.
            Err(e) if e.kind == ErrorKind::Limit => return Ok(()),
            // Offsets that may pass 2^64 (the bound is not exact over prefixes).
            Err(e) if e.kind == ErrorKind::Size && !fits => return Ok(()),
            Err(e) => return Err(TestCaseError::fail(format!("refused: {e}"))),
        };
        for path in it.paths() {
            let d = it.lookup(&path).unwrap();
            let node = m.lookup(&path).unwrap().node;
            let size = it.dim_size(d);
            prop_assert_eq!(m.size(node), size, "size of {}", path);
            let f = offset_function(&m, node, "i")
                .map_err(|e| TestCaseError::fail(format!("{path}: {e}")))?;
            let extent = m.extent(node);
            let mut samples = vec![0, size - 1, size / 2];
            for _ in 0..4 {
                samples.push(c.below(size));
            }
            for i in samples {
                let Some(want) = it.off(d, i) else {
                    return Err(TestCaseError::fail(format!(
                        "accepted, but {path}[{i}] passes 2^64"
                    )));
                };
                prop_assert_eq!(m.offset_at(node, i), want, "{}[{}] by offset_at", path, i);
                prop_assert_eq!(
                    f.expr.eval(&[i]),
                    want,
                    "{}[{}] by {}",
                    path,
                    i,
                    f.to_source()
                );
                prop_assert!(
                    want < extent,
                    "{}[{}] = {} outside the extent {}",
                    path,
                    i,
                    want,
                    extent
                );
            }
        }
        for _ in 0..3 {
            let target = gen::gen_target(c, p, &it);
            let index = gen::gen_index(c, &it, &target);
            let values = gen::gen_values(c, &index.bounds, 4);
            check_index(&m, &it, &index.text, &values)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Deterministic edge cases.

fn both(src: &str) -> (Module, Interp) {
    let prog = parse_program(src).unwrap_or_else(|e| panic!("{e}"));
    let m = Module::build(&prog, &[]).unwrap_or_else(|e| panic!("{e}"));
    let it = Interp::new(&prog, &[]).unwrap_or_else(|e| panic!("{e}"));
    (m, it)
}

fn program_checks(src: &str) {
    let p = gen::GenProgram {
        source: src.to_string(),
        consts: Vec::new(),
        types: parse_program(src)
            .unwrap()
            .items
            .iter()
            .filter_map(|i| match i {
                parray_layout::ast::Item::Type(t) => {
                    Some((t.name.name.clone(), !t.dims.iter().any(has_ref)))
                }
                _ => None,
            })
            .collect(),
    };
    if let Err(e) = check_dimensions(&p) {
        panic!("{src}: {e}");
    }
}

fn has_ref(g: &parray_layout::ast::Group) -> bool {
    use parray_layout::ast::GroupBody;
    match &g.body {
        GroupBody::Size(_) => false,
        GroupBody::Compound(inner) => inner.iter().any(has_ref),
        GroupBody::Ref { .. } => true,
    }
}

/// Runs `f` on a thread with the default 2 MiB stack (a stack overflow aborts the test).
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn worked_checks_through_the_interpreter() {
    let (_, it) = both("pinned float [[3][2]][4] A");
    let at = |it: &Interp, s: &str| {
        it.index(&parse_index_expr(s).unwrap(), &HashMap::new())
            .unwrap()
    };
    assert_eq!(it.size("A"), Some(24));
    assert_eq!(at(&it, "A[5][2]"), 22);
    let (_, it) = both("float [4][3] A\nfloat [#A_1][#A_0] B");
    assert_eq!(at(&it, "B[2][3]"), 11);
    let (_, it) = both("float [2][1024][512] A\nfloat [#A_1][[#A_0][#A_2]] M");
    assert_eq!(at(&it, "M[0][513]"), 524289);
    let (_, it) = both("float [16][17] A\nfloat [#A_0][16#A_1] B");
    assert_eq!(it.extent("B"), 271);
    let fig21 = "const N = 256\ndmem float [N][N] type\n\
        dmem float [[N/16][[4][4]]#type_0][[N/32][32]#type_1] A\n\
        dmem float [[N/32][32]#type_0][[N/256][[128][2]]#type_1] B\n\
        dmem float [#A_0][#B_1] C\ndmem float [#C_0_1][#C_1_1_1] C0\n\
        smem float [32][17] S\nsmem float [32#S_0][[4][4]#S_1] S0";
    let (_, it) = both(fig21);
    assert_eq!(
        it.offsets(it.lookup("A_0_1_0").unwrap()),
        vec![0, 1024, 2048, 3072]
    );
    assert_eq!(it.offsets(it.lookup("S0_1_0").unwrap()), vec![0, 4, 8, 12]);
    assert_eq!(
        &it.offsets(it.lookup("C0").unwrap())[..5],
        &[0, 1, 256, 257, 512]
    );
    assert_eq!(at(&it, "A[[1][[0][2]]][[0][5]]"), 4613);
    assert_eq!(at(&it, "S0[3][[0][2]]"), 53);
    assert_eq!(at(&it, "C[[1][0]][[0][[5][0]]]"), 4106);
    assert!(it.cnt("B_1_1_1"));
    program_checks(fig21);
}

#[test]
fn size_one_dimensions_everywhere() {
    program_checks(
        "int [1] A\nint [[1][1]][1] B\nint [#B][1#A][[1][1]#B_0] C\nint [[#C_1][#C_2_1]] D",
    );
    program_checks(
        "int [[1][3]][[2][1]] A\nint [#A_1_0][[3][1]#A_0][[1][2]#A_1] B\nint [1#B_1][#B_2][#B_0] C",
    );
    let (m, _) = both("int [1][1][1] A");
    let off = compile(&m, &parse_index_expr("A[i][j][k]").unwrap()).unwrap();
    // Variables of size-1 dimensions are 0; the compiler keeps them (`i + j + k`), which
    // is right but not minimal.
    assert_eq!(off.expr.eval(&[0, 0, 0]), 0, "{}", off.to_source());
}

fn nested(depth: usize) -> String {
    format!(
        "float {}[2]{} A",
        "[".repeat(depth - 1),
        "]".repeat(depth - 1)
    )
}

#[test]
fn deep_nesting_works() {
    on_small_stack(|| {
        let (m, it) = both(&nested(100));
        let path = format!("A{}", "_0".repeat(99));
        assert_eq!(it.size(&path), Some(2));
        let node = m.lookup(&path).unwrap().node;
        assert_eq!(offset_function(&m, node, "i").unwrap().to_source(), "i");
        let idx = format!("A{}i{}", "[".repeat(100), "]".repeat(100));
        let off = compile(&m, &parse_index_expr(&idx).unwrap()).unwrap();
        assert_eq!(off.to_source(), "i");
        assert!(m.is_contiguous(node).unwrap());
    });
}

#[test]
fn nesting_200_levels_is_an_error_not_a_stack_overflow() {
    on_small_stack(|| {
        let e = Module::parse(&nested(200)).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Limit, "{e}");
        let idx = format!("A{}i{}", "[".repeat(200), "]".repeat(200));
        let e = parse_index_expr(&idx).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Limit, "{e}");
    });
}

fn chain(n: usize, shape: &str) -> String {
    let mut s = String::from("float [4][3] T0\n");
    for k in 1..n {
        s += &format!("float [{}T{}] T{k}\n", shape, k - 1);
    }
    s
}

#[test]
fn long_reference_chains_never_overflow_the_stack() {
    for shape in ["#", "12#", "[12]#", "[[3][4]]#"] {
        on_small_stack(move || {
            let src = chain(300, shape);
            match Module::parse(&src) {
                Err(e) => assert_eq!(e.kind, ErrorKind::Limit, "{shape}: {e}"),
                Ok(m) => {
                    let t = m.lookup("T299").unwrap().node;
                    for i in 0..m.size(t) {
                        let _ = m.offset_at(t, i);
                    }
                    let f = offset_function(&m, t, "i").unwrap();
                    let _ = f.to_source();
                }
            }
            // The longest chain that is accepted works all the way through.
            let mut n = 300;
            while Module::parse(&chain(n, shape)).is_err() {
                n -= 1;
            }
            let src = chain(n, shape);
            let (m, it) = both(&src);
            let last = format!("T{}", n - 1);
            let node = m.lookup(&last).unwrap().node;
            let f = offset_function(&m, node, "i").unwrap();
            let d = it.lookup(&last).unwrap();
            for i in 0..m.size(node) {
                assert_eq!(
                    f.expr.eval(&[i]),
                    it.off(d, i).unwrap(),
                    "{shape} {last}[{i}]"
                );
            }
            assert!(n >= 64, "{shape}: only {n} declarations accepted");
        });
    }
}

#[test]
fn huge_sizes_overflow_into_errors() {
    let e = Module::parse("float [4294967296][4294967296] A").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Size, "{e}");
    assert!(Interp::new(
        &parse_program("float [4294967296][4294967296] A").unwrap(),
        &[]
    )
    .is_err());
    let e = Module::parse("float [18446744073709551616] A").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Size, "{e}");
    // Just below the limit works.
    let (m, it) = both("float [4294967296][4294967295] A\nfloat [#A_1][#A_0] B");
    let off = compile(&m, &parse_index_expr("B[4294967294][4294967295]").unwrap()).unwrap();
    let want = it
        .index(
            &parse_index_expr("B[4294967294][4294967295]").unwrap(),
            &HashMap::new(),
        )
        .unwrap();
    assert_eq!(off.as_const(), Some(want));
}

// ---------------------------------------------------------------------------------------
// Regressions found by the properties (minimal cases).

fn compiled(m: &Module, text: &str) -> Result<u64, String> {
    let off = compile(m, &parse_index_expr(text).unwrap()).map_err(|e| e.to_string())?;
    off.as_const()
        .ok_or_else(|| format!("{text} is not constant: {}", off.to_source()))
}

fn interpreted(it: &Interp, text: &str) -> Result<u64, String> {
    it.index(&parse_index_expr(text).unwrap(), &HashMap::new())
}

/// Rule 8 with k = 1: `[[...]]` on a dimension with one sub-dimension applies the inner
/// index to that sub-dimension, which may need it nested further. The compiler took every
/// one-component nesting as transparent, so it offered these indices to the outer
/// dimension and refused them (`T0` has 1 sub-dimensions, but 2 indices were given).
#[test]
fn regression_nested_index_on_single_child_dimensions() {
    let (m, it) = both("float [[[1][4]]] T0");
    for (text, want) in [
        ("T0[[[[0][3]]]]", 3),
        ("T0_0[[[0][2]]]", 2),
        ("T0_0_0[[0][1]]", 1),
        ("T0[[[[0][[3]]]]]", 3),
    ] {
        assert_eq!(interpreted(&it, text), Ok(want), "{text}");
        assert_eq!(compiled(&m, text), Ok(want), "{text}");
    }
    let (m, it) = both("float [6] A\nfloat [[[2][3]]#A] B");
    for (text, want) in [
        ("B[[[[1][2]]]]", 5),
        ("B_0[[[1][1]]]", 4),
        ("B[[[5]]]", 5),
        ("B[[5]]", 5),
    ] {
        assert_eq!(interpreted(&it, text), Ok(want), "{text}");
        assert_eq!(compiled(&m, text), Ok(want), "{text}");
    }
}

/// Prints a few generated cases (`cargo test --test properties -- --ignored --nocapture`).
#[test]
#[ignore]
fn show_generated_cases() {
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;
    let mut runner = TestRunner::default();
    for _ in 0..12 {
        let case = gen::case().new_tree(&mut runner).unwrap().current();
        println!("{}  {:?}\n", case.program.source, case.index);
    }
}

// ---------------------------------------------------------------------------------------
// The simplifier on its own: random compositions of its smart constructors.

/// A composition of `expr`'s constructors, evaluated directly.
#[derive(Debug, Clone)]
enum Naive {
    Const(u64),
    Var(usize),
    Add(Box<Naive>, Box<Naive>),
    Scale(Box<Naive>, u64),
    Digit(Box<Naive>, u64, Option<u64>),
    Xor(Box<Naive>, Box<Naive>),
}

impl Naive {
    fn eval(&self, v: &[u64]) -> u64 {
        match self {
            Naive::Const(c) => *c,
            Naive::Var(i) => v[*i],
            Naive::Add(a, b) => a.eval(v) + b.eval(v),
            Naive::Scale(a, k) => a.eval(v) * k,
            Naive::Digit(a, d, m) => {
                let q = a.eval(v) / d;
                m.map_or(q, |m| q % m)
            }
            Naive::Xor(a, b) => a.eval(v) ^ b.eval(v),
        }
    }

    fn build(&self, vars: &parray_layout::Vars) -> parray_layout::LinearForm {
        use parray_layout::{LinearForm, VarId};
        match self {
            Naive::Const(c) => LinearForm::constant(*c),
            Naive::Var(i) => LinearForm::var(VarId(*i as u32)),
            Naive::Add(a, b) => a.build(vars).add(&b.build(vars), vars),
            Naive::Scale(a, k) => a.build(vars).scale(*k),
            Naive::Digit(a, d, m) => parray_layout::expr::digit(&a.build(vars), *d, *m, vars),
            Naive::Xor(a, b) => parray_layout::expr::xor(&a.build(vars), &b.build(vars)),
        }
    }
}

fn naive(c: &mut gen::Choices, nvars: usize, depth: u32) -> Naive {
    let op = if depth == 0 { c.below(2) } else { c.below(7) };
    let small = [1u64, 2, 3, 4, 6, 8, 12, 16];
    match op {
        0 => Naive::Var(c.below(nvars as u64) as usize),
        1 => Naive::Const(c.below(40)),
        2 => Naive::Add(
            Box::new(naive(c, nvars, depth - 1)),
            Box::new(naive(c, nvars, depth - 1)),
        ),
        3 => Naive::Scale(Box::new(naive(c, nvars, depth - 1)), *c.pick(&small)),
        6 => Naive::Xor(
            Box::new(naive(c, nvars, depth - 1)),
            Box::new(naive(c, nvars, depth - 1)),
        ),
        _ => {
            let d = *c.pick(&small);
            let m = if c.flag(70) {
                Some(*c.pick(&small))
            } else {
                None
            };
            Naive::Digit(Box::new(naive(c, nvars, depth - 1)), d, m)
        }
    }
}

proptest! {
    #![proptest_config(config(1024))]

    /// digit/add/scale/xor agree with direct arithmetic for every in-range assignment, and
    /// the form's `max` bounds its values, also under narrower bounds of its variables
    /// (the bounds pass bounds a `$...$` offset by its indices' ranges so).
    #[test]
    fn simplifier_agrees_with_arithmetic(v in gen::choices()) {
        let mut c = gen::Choices::new(v);
        let nvars = 1 + c.below(3) as usize;
        let mut vars = parray_layout::Vars::new();
        let maxes: Vec<u64> = (0..nvars).map(|k| {
            let max = c.below(24);
            vars.bind(&format!("v{k}"), max);
            max
        }).collect();
        let depth = 1 + c.below(5) as u32;
        let n = naive(&mut c, nvars, depth);
        let e = n.build(&vars);
        let mut narrowed = vars.clone();
        let narrow: Vec<u64> = maxes.iter().enumerate().map(|(k, &max)| {
            let m = c.below(max + 1);
            narrowed.bind(&format!("v{k}"), m);
            m
        }).collect();
        let mut assign = vec![0u64; nvars];
        loop {
            prop_assert_eq!(e.eval(&assign), n.eval(&assign), "{:?} simplified to {} at {:?} (max {:?})", n, e.to_source(&vars), assign, maxes);
            prop_assert!(e.eval(&assign) <= e.max(&vars), "{:?}: max {} below a value", n, e.max(&vars));
            if assign.iter().zip(&narrow).all(|(a, m)| a <= m) {
                prop_assert!(e.eval(&assign) <= e.max(&narrowed), "{:?}: max {} under {:?} below the value at {:?}", n, e.max(&narrowed), narrow, assign);
            }
            let mut k = 0;
            while k < nvars && assign[k] == maxes[k] {
                assign[k] = 0;
                k += 1;
            }
            if k == nvars {
                break;
            }
            assign[k] += 1;
        }
    }
}

/// A column `256*bn + 2t` (`bn < 16`, `t < 4`) of strips 1024 wide splits into the strip
/// `bn / 4` and the place `256*(bn % 4) + 2t` in it: the place's bound is 774, not the
/// 1023 of `(256*bn + 2t) % 1024`, and neither digit divides more than `bn` (a tile's
/// stores of 8-column steps past it stay inside the strip for the prover).
#[test]
fn mixed_radices_split_into_their_digits() {
    use parray_layout::{expr::digit, LinearForm};
    let mut vars = parray_layout::Vars::new();
    let (bn, t) = (vars.bind("bn", 15), vars.bind("t", 3));
    let column = LinearForm::var(bn)
        .scale(256)
        .add(&LinearForm::var(t).scale(2), &vars);
    let (strip, place) = (
        digit(&column, 1024, None, &vars),
        digit(&column, 1, Some(1024), &vars),
    );
    assert_eq!(
        strip.to_source(&vars),
        digit(&LinearForm::var(bn), 4, None, &vars).to_source(&vars)
    );
    assert_eq!(place.max(&vars), 774);
    for (b, tt) in (0..16).flat_map(|b| (0..4).map(move |tt| (b, tt))) {
        let mut values = vec![0; 2];
        values[bn.0 as usize] = b;
        values[t.0 as usize] = tt;
        assert_eq!(strip.eval(&values), (256 * b + 2 * tt) / 1024);
        assert_eq!(place.eval(&values), (256 * b + 2 * tt) % 1024);
    }
}

/// A padded matrix is rows of its width a pitch apart; a contiguous type one row; blocks
/// and transposes are not rows.
#[test]
fn rows_of_padded_contiguous_and_other_layouts() {
    let src = "dmem float [10][16] P\nfloat [#P_0][12#P_1] PAD\nfloat [#P_1][#P_0] T\n\
               float [2#P_0][16#P_1] TOP\ndmem float [2][2][5][8] Q\n\
               float [[#Q_0][#Q_2]][[#Q_1][#Q_3]] B";
    let m = Module::parse(src).unwrap();
    let rows = |name: &str| {
        let node = m.lookup(name).unwrap().node;
        offset_function(&m, node, "k").unwrap().rows(m.size(node))
    };
    let r = |start, width, pitch| {
        Some(parray_layout::Rows {
            start,
            width,
            pitch,
        })
    };
    assert_eq!(rows("PAD"), r(0, 12, 16));
    assert_eq!(rows("P"), r(0, 160, 160));
    assert_eq!(rows("TOP"), r(0, 32, 32));
    assert_eq!(rows("P_1"), r(0, 16, 16));
    assert_eq!(rows("T"), None);
    assert_eq!(rows("B"), None);
}

/// Constant memory holds 64 KiB: a cmem type needing more is an error at its declaration.
#[test]
fn cmem_types_fit_in_64_kib() {
    assert!(Module::parse("cmem float [16384] FITS").is_ok());
    let e = Module::parse("cmem float [16385] BIG").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Size);
    assert_eq!(
        e.message,
        "constant memory holds 65536 bytes, and `BIG` needs 65540: declare it dmem"
    );
}

/// A type whose offsets exceed 2^64 (each of B's two views of A_0 reaches about 2^63.4)
/// must be refused; the compiler overflowed while computing its extent (a panic in debug
/// builds at tree.rs `max_prefix_children`, a wrong extent in release builds).
#[test]
fn regression_offsets_beyond_64_bits_are_an_error() {
    for b in [
        "[#A_0][#A_0]",
        "[[3]#A_0][[3]#A_0]",
        "[[3][1]#A_0][[3]#A_0]",
        "[#A_0][[#A_1][#A_0]]",
    ] {
        let src = format!("float [3][6148914691236517205] A\nfloat {b} B");
        let e = on_small_stack(move || Module::parse(&src).map(|_| ())).unwrap_err();
        assert_eq!(e.kind, ErrorKind::Size, "{b}: {e}");
    }
    // Just inside 64 bits still works: 2 * 6148914691236517205 + 1 < 2^64.
    let (m, it) = both("float [3][6148914691236517205] A\nfloat [2#A_0][2#A_0] B");
    let node = m.lookup("B").unwrap().node;
    assert_eq!(m.extent(node), it.extent("B"));
}

/// A structure group of size 1 under a huge later sibling (`[[1][4294967298]#C]`): its
/// index variable can only be 0, so it is the constant 0 (it once kept the coefficient
/// 4294967298, which the stride 4294967295 of `C`'s last child then overflowed).
#[test]
fn regression_zero_range_variables_do_not_overflow() {
    let src = "float [4294967296][4294967295] A\nfloat [#A_1][#A_0] C\nfloat [[1][4294967298]#C] D";
    let (m, it) = both(src);
    let node = m.lookup("D_0_0").unwrap().node;
    assert_eq!(it.offsets(it.lookup("D_0_0").unwrap()), vec![0]);
    let f = on_small_stack(move || offset_function(&m, node, "i").unwrap().to_source());
    assert_eq!(f, "0");
}

/// Types whose two dimensions both view the previous type: the offset function of the
/// n-th has 2^n paths through the declarations, but stays small once simplified. The
/// compiler must not walk every path (that hangs at 40 declarations).
#[test]
fn shared_references_do_not_take_exponential_time() {
    let mut src = String::from("float [6][10] T0\n");
    for k in 1..40 {
        src += &format!("float [[5][2]#T{p}][[3][2]#T{p}] T{k}\n", p = k - 1);
        if k == 10 {
            // Small enough for the (exponential) interpreter.
            program_checks(&src);
        }
    }
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let out = Module::parse(&src).map(|m| {
            let node = m.lookup("T39").unwrap().node;
            let f = offset_function(&m, node, "i").map(|f| f.to_source());
            let g = compile(&m, &parse_index_expr("T39[i][j]").unwrap()).map(|f| f.to_source());
            (m.extent(node), m.is_contiguous(node).ok(), f.ok(), g.ok())
        });
        let _ = tx.send(out.map_err(|e| e.to_string()));
    });
    let out = rx
        .recv_timeout(std::time::Duration::from_secs(20))
        .expect("40 declarations take more than 20 s");
    let (extent, cnt, f, g) = out.unwrap();
    assert_eq!((extent, cnt), (11, Some(false)));
    assert_eq!(f.as_deref(), Some("i / 36 + i / 6 % 6 + i % 6"));
    assert_eq!(g.as_deref(), Some("i / 6 + i % 6 + j"));
}

/// Programs that section 3 (or the grammar's names) refuses, and a few it allows: the
/// compiler and the interpreter decide alike.
#[test]
fn invalid_programs_are_refused_alike() {
    let refused = [
        "float [2] A\nfloat [[#A][2]#A] B",
        "float [2] A\nfloat [#A][3] B",
        "float [2] A\nfloat [[#A][3]] B",
        "float [2] A\nfloat [3#A] B",
        "float [2] A\nfloat [[3]#A] B",
        "float [2][3] A\nfloat [[[2][2]][2]#A] B",
        "float [2] A\nfloat [2] A",
        "const A = 2\nfloat [2] A",
        "float [2] A\nconst A = 2",
        "float [0] A",
        "float [3/2] A",
        "float [2-3] A",
        "float [2/0] A",
        "float [-2] A",
        "float [2] A\nfloat [#A_1] B",
        "float [2] A\nfloat [#A_0_0] B",
        "float [2] A\nfloat [#A_x] B",
        "float [2] A\nfloat [#A_] B",
        "float [2] A\nfloat [#B] B",
        "float [2] A\npthd [#A] T",
        "const K = 2\nfloat [2] A\nfloat [#K] B",
        "float [2] A\nfloat [K] B",
        "float [2] A\nfloat [A] B",
        "const K = 3\nfloat [(K + 1) / 3] A",
        "float [18446744073709551615 * 2 / 2] A",
    ];
    let accepted = [
        "float [2] A\nfloat [[2]#A] B",
        "float [2] A\nfloat [#A_0] A_0\nfloat [#A_0_0] C",
        "float [2][3] A\nfloat [[1][1][6]#A] B",
        "float [2][3] A\nfloat [[[2][1]][1]#A] B",
        "pthd [2][2] T\nfloat [#T_1][#T_0] B",
        "const K = 3\nfloat [(K + 3) / 3][K - 2][-1 + K] A",
        "float [18446744073709551615] A",
        "float [4][3] A\nfloat [#A_1][#A_0] A_1_x\nfloat [#A_1_x_1] C",
    ];
    for (src, want) in refused
        .iter()
        .map(|s| (s, false))
        .chain(accepted.iter().map(|s| (s, true)))
    {
        let ast = parse_program(src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let m = Module::build(&ast, &[]);
        let it = Interp::new(&ast, &[]);
        assert_eq!(m.is_ok(), want, "compiler on {src:?}: {:?}", m.err());
        assert_eq!(it.is_ok(), want, "interpreter on {src:?}: {:?}", it.err());
    }
}
