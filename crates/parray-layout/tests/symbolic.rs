//! What holds of a type at every binding of its run-time sizes (`parray_layout::symbolic`),
//! the facts the bounds prover builds on: each size as a polynomial of the run-time sizes,
//! checked against the reference interpreter at other bindings; and the dimensions each
//! variable of a form indexes, within which its offset lies inside its type's extent.

mod gen;

use parray_layout::interp::Interp;
use parray_layout::symbolic::{Atom, Poly, Sizes};
use parray_layout::{compile, indexed_dimensions, parse_index_expr, parse_program, Module};
use proptest::prelude::*;

/// Checks `program` (its run-time sizes resolved at `probe`) at each of `bindings` the
/// declarations take: every size and extent [`Sizes`] knows is the interpreter's. Returns
/// how many bindings were checked.
fn check_sizes(
    source: &str,
    probe: &[(String, u64)],
    bindings: &[Vec<(String, u64)>],
) -> Result<usize, TestCaseError> {
    let program = parse_program(source).unwrap();
    let m = Module::build(&program, probe).unwrap();
    let sizes = Sizes::of(&program, &m);
    let mut checked = 0;
    for binding in bindings {
        let Ok(it) = Interp::new(&program, binding) else {
            continue;
        };
        checked += 1;
        let value = |a: &Atom| match a {
            Atom::Size(n) => binding
                .iter()
                .find(|(b, _)| b == n)
                .map(|(_, v)| *v as i128),
            Atom::Extent(t) => Some(it.extent(t) as i128),
            Atom::Quotient { .. } => None,
        };
        for path in it.paths() {
            let node = m.lookup(&path).unwrap().node;
            let size = sizes.size(node);
            prop_assert!(size.is_some(), "no size for {path}\n{source}");
            prop_assert_eq!(
                size.and_then(|s| s.eval(&value)),
                it.size(&path).map(i128::from),
                "size of {} at {:?}\n{}",
                path,
                binding,
                source
            );
        }
        for t in it.type_names() {
            if let Some(e) = sizes.extent(&t) {
                prop_assert_eq!(
                    e.eval(&value),
                    Some(it.extent(&t) as i128),
                    "extent of {}",
                    t
                );
            }
        }
    }
    Ok(checked)
}

fn config(cases: u32) -> ProptestConfig {
    ProptestConfig {
        cases,
        max_shrink_iters: 20_000,
        failure_persistence: None,
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(128))]

    /// A generated program with its first constant given at run time: the sizes found at
    /// its value are the interpreter's at the other values the declarations take.
    #[test]
    fn sizes_hold_at_every_binding(p in gen::program()) {
        let Some((name, v)) = p.consts.first().cloned() else {
            return Ok(());
        };
        let source = p.source.replacen(&format!("const {name} = {v}\n"), &format!("const {name};\n"), 1);
        prop_assume!(source != p.source);
        let bindings: Vec<Vec<(String, u64)>> = [v * 2, v * 3, v + 1]
            .iter()
            .map(|w| vec![(name.clone(), *w)])
            .collect();
        check_sizes(&source, &[(name, v)], &bindings)?;
    }

    /// Each variable of a generated form indexes dimensions the smallest of which bounds
    /// it (the generator's own bound); wherever every variable lies within them, the offset
    /// lies inside the extent of the declared type the form names, even through a
    /// sub-dimension.
    #[test]
    fn variables_within_their_dimensions_stay_inside_the_type(case in gen::case()) {
        let m = case.program.module();
        let ie = parse_index_expr(&case.index.text).unwrap();
        let dims = indexed_dimensions(&m, &ie).unwrap();
        for (var, max) in &case.index.bounds {
            let least = dims.iter().filter(|(v, _)| v == var).map(|(_, d)| m.size(*d) - 1).min();
            prop_assert_eq!(least, Some(*max), "{} in {}", var, case.index.text);
        }
        prop_assert!(dims.iter().all(|(v, _)| case.index.bounds.contains_key(v)));
        let def = &m.types()[m.lookup(&ie.target.name).unwrap().ty];
        let extent = m.extent(def.root);
        let off = compile(&m, &ie).unwrap();
        for vals in &case.values {
            let v: Vec<u64> = off.vars.names().map(|n| vals[n]).collect();
            prop_assert!(off.expr.eval(&v) < extent, "{} at {:?}", case.index.text, vals);
        }
    }
}

/// The declarations of `examples/quadratic.rs` and views, tiles and constants over two
/// run-time sizes: every size at every binding; the extent of a view is its own atom, and a
/// type whose pieces may cover data past its end has none, even where they do not.
#[test]
fn sizes_of_views_tiles_and_constants() {
    let source = "const N;\nconst M;\nconst Q = N / 16;\nconst T = 4;\n\
                  paged float [N] X;\nfloat [[16][N / 16]#X] PART;\n\
                  paged float [[M / T][T]][N] A;\nfloat [#A_1][#A_0] AT;\n\
                  float [[Q][16]#A_1][dim(A_0) - 1 + 1 #A_0] SUB;\n\
                  paged float [[ceil(N / 16)][16]#X] TILES;\n\
                  float [#TILES_0] ONTILES;\n";
    let at = |n: u64, m: u64| vec![("N".to_string(), n), ("M".to_string(), m)];
    let bindings = [at(16, 4), at(32, 8), at(1024, 12), at(4096, 400)];
    let checked = check_sizes(source, &at(64, 16), &bindings).unwrap();
    assert_eq!(checked, bindings.len());
    let program = parse_program(source).unwrap();
    let m = Module::build(&program, &at(64, 16)).unwrap();
    let sizes = Sizes::of(&program, &m);
    let size = |path: &str| sizes.size(m.lookup(path).unwrap().node).unwrap().clone();
    let n = Poly::atom(Atom::Size("N".into()));
    // `[N / 16]` of PART and `[Q]` of SUB: the same size; X and PART: the same extent.
    assert_eq!(size("PART_0_1"), size("SUB_0_0"));
    assert_eq!(size("PART_0_1").mul(&Poly::constant(16)).unwrap(), n);
    assert_eq!(
        sizes.extent("PART"),
        Some(&Poly::atom(Atom::Extent("PART".into())))
    );
    assert_eq!(sizes.extent("X"), Some(&n));
    assert_eq!(size("X"), size("X_0"));
    // TILES covers X past its end where 16 does not divide N, and ONTILES is built on it.
    assert_eq!(
        (sizes.extent("TILES"), sizes.extent("ONTILES")),
        (None, None)
    );
}
