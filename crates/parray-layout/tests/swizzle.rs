//! Swizzles (SPEC 2.5, rule 11): `[n ^ P]` XORs a leaf's digit with its partner's. The
//! hand-checked tables of Hopper's 32/64/128-byte modes, the errors, and a property: the
//! symbolic offsets, `Module::offset_at` and the independent interpreter agree on random
//! swizzled types and views of them.

use std::collections::HashMap;

use parray_layout::interp::Interp;
use parray_layout::{compile, offset_function, parse_index_expr, parse_program, ErrorKind, Module};
use proptest::prelude::*;

/// CuTe's `Swizzle<B,4,3>` on a byte address: bits 4..4+B (the 16-byte chunk) XOR bits
/// 7..7+B (`include/cute/swizzle.hpp`), what the hardware's 32/64/128-byte modes do.
fn cute(b: u32, addr: u64) -> u64 {
    addr ^ (((addr >> 7) & ((1 << b) - 1)) << 4)
}

/// Mode B on a bf16 tile of `rows` rows of 2^B chunks (2^(4+B) bytes), declared so that
/// the partner is bits 7..7+B of the address: its offsets are CuTe's for every element,
/// through `offset_at`, the compiled `T[r][c]` and the interpreter.
fn check_mode(b: u32, rows: u64) {
    let chunks = 1u64 << b;
    // Rows per 128 bytes, the leaf below the partner.
    let per = 8 / chunks;
    let src = format!(
        "smem bf16 [[{}][{chunks}][{per}]][[{chunks} ^ T_0_1][8]] T",
        rows / 8
    );
    let m = Module::parse(&src).unwrap();
    let it = Interp::new(&parse_program(&src).unwrap(), &[]).unwrap();
    let t = m.lookup("T").unwrap();
    let cols = 8 * chunks;
    let off = compile(&m, &parse_index_expr("T[r][c]").unwrap()).unwrap();
    let (vr, vc) = (off.vars.id("r").unwrap(), off.vars.id("c").unwrap());
    for r in 0..rows {
        for c in 0..cols {
            let want = cute(b, (r * cols + c) * 2) / 2;
            assert_eq!(
                m.offset_at(t.node, r * cols + c),
                want,
                "offset_at [{r}][{c}]"
            );
            let mut v = vec![0; 2];
            v[vr.0 as usize] = r;
            v[vc.0 as usize] = c;
            assert_eq!(off.expr.eval(&v), want, "{} at [{r}][{c}]", off.to_source());
            let vars = HashMap::from([("r".to_string(), r), ("c".to_string(), c)]);
            let ie = parse_index_expr("T[r][c]").unwrap();
            assert_eq!(it.index(&ie, &vars).unwrap(), want);
        }
    }
    assert_eq!(m.extent(t.node), rows * cols);
    assert!(!m.is_contiguous(t.node).unwrap());
    assert_eq!(m.swizzle_alignment(t), Some(1 << (7 + b)));
}

#[test]
fn hopper_128_byte_mode_is_the_formula_on_a_64x64_bf16_tile() {
    check_mode(3, 64);
    // The issue's formula: r*64 + ((c/8) ^ (r%8))*8 + c%8, the 128B mode's type written
    // with rows in groups of 8.
    let m = Module::parse("smem bf16 [[8][8]][[8 ^ T_0_1][8]] T").unwrap();
    let t = m.lookup("T").unwrap().node;
    for (r, c) in (0..64).flat_map(|r| (0..64).map(move |c| (r, c))) {
        assert_eq!(
            m.offset_at(t, r * 64 + c),
            r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8
        );
    }
    // Spot checks of the table, by hand: row 1 swaps chunk 0 with chunk 1.
    let m = Module::parse("smem bf16 [[8][8]][[8 ^ T_0_1][8]] T").unwrap();
    let t = m.lookup("T").unwrap().node;
    let row1: Vec<u64> = (0..64).step_by(8).map(|c| m.offset_at(t, 64 + c)).collect();
    assert_eq!(row1, [72, 64, 88, 80, 104, 96, 120, 112]);
    let row7: Vec<u64> = (0..64)
        .step_by(8)
        .map(|c| m.offset_at(t, 7 * 64 + c))
        .collect();
    assert_eq!(row7, [504, 496, 488, 480, 472, 464, 456, 448]);
    // Row 8 starts a new group: no XOR.
    assert_eq!(m.offset_at(t, 8 * 64 + 8), 8 * 64 + 8);
}

#[test]
fn hopper_32_and_64_byte_modes() {
    check_mode(1, 64);
    check_mode(2, 64);
    // 32B: rows of 16 bf16; the chunk flips every 4 rows (address bit 7).
    let m = Module::parse("smem bf16 [[2][2][4]][[2 ^ T_0_1][8]] T").unwrap();
    let t = m.lookup("T").unwrap().node;
    let firsts: Vec<u64> = (0..8).map(|r| m.offset_at(t, r * 16)).collect();
    assert_eq!(firsts, [0, 16, 32, 48, 72, 88, 104, 120]);
}

#[test]
fn the_offset_formula_prints_the_xor() {
    let m = Module::parse("smem bf16 [[8][8]][[8 ^ T_0_1][8]] T").unwrap();
    let off = compile(&m, &parse_index_expr("T[r][c]").unwrap()).unwrap();
    assert_eq!(off.to_source(), "r * 64 + c % 8 + ((c / 8) ^ (r % 8)) * 8");
    let nested = compile(&m, &parse_index_expr("T[[g][w]][[k][e]]").unwrap()).unwrap();
    assert_eq!(nested.to_source(), "g * 512 + w * 64 + e + (k ^ w) * 8");
    // A constant row folds into the XOR's operand.
    let row3 = compile(&m, &parse_index_expr("T[3][c]").unwrap()).unwrap();
    assert_eq!(row3.to_source(), "c % 8 + ((c / 8) ^ 3) * 8 + 192");
    // The chunks of one row alone: the partner is not reached, its digit is 0.
    let alone = compile(&m, &parse_index_expr("T_1[c]").unwrap()).unwrap();
    assert_eq!(alone.to_source(), "c");
    let f = offset_function(&m, m.lookup("T").unwrap().node, "i").unwrap();
    assert_eq!(
        f.to_source(),
        "(i / 64) * 64 + i % 8 + ((i / 8 % 8) ^ (i / 64 % 8)) * 8"
    );
    // Without a swizzle nothing changes.
    let plain = Module::parse("smem bf16 [[8][8]][[8][8]] T").unwrap();
    let off = compile(&plain, &parse_index_expr("T[r][c]").unwrap()).unwrap();
    assert_eq!(off.to_source(), "r * 64 + c");
}

#[test]
fn views_keep_the_coupling_when_they_reach_both_leaves() {
    let src = "smem bf16 [[8][8]][[8 ^ T_0_1][8]] T
bf16 [#T_1][#T_0] V
bf16 [[64][64]#T] W
bf16 [#T_1] C";
    let m = Module::parse(src).unwrap();
    let t = m.lookup("T").unwrap().node;
    let v = m.lookup("V").unwrap();
    // V[c][r] is T[r][c].
    for (r, c) in [(1, 0), (3, 17), (7, 63), (12, 40)] {
        assert_eq!(m.offset_at(v.node, c * 64 + r), m.offset_at(t, r * 64 + c));
    }
    assert_eq!(m.swizzle_alignment(v), Some(1024));
    let w = m.lookup("W").unwrap();
    assert_eq!(m.offset_at(w.node, 65), 73);
    // A view of the chunks alone is not swizzled.
    let c = m.lookup("C").unwrap();
    assert_eq!(m.swizzle_alignment(c), None);
    assert!(m.is_contiguous(c.node).unwrap());
}

/// The error of `src`, as `(kind, line:column, message)`.
fn error(src: &str) -> (ErrorKind, String, String) {
    let e = Module::parse(src).unwrap_err();
    (e.kind, format!("{}:{}", e.span.line, e.span.col), e.message)
}

#[test]
fn bad_swizzles_are_errors_at_the_partner() {
    let cases: [(&str, &str, &str); 11] = [
        ("smem bf16 [[8][8]][[6 ^ T_0_1][8]] T", "1:25", "the swizzled leaf has 6 elements: a swizzle couples dimensions whose sizes are powers of two"),
        ("smem bf16 [[8][6]][[8 ^ T_0_1][8]] T", "1:25", "its partner `T_0_1` has 6 elements: a swizzle couples dimensions whose sizes are powers of two"),
        ("smem bf16 [[4][16]][[8 ^ T_0_1][8]] T", "1:26", "`T_0_1` has 16 elements, more than the swizzled leaf's 8: the XOR of their digits must stay below 8"),
        ("smem bf16 [8][8] A\nsmem bf16 [[8][8]][[8 ^ A_1][8]] T", "2:25", "`A_1` is not a dimension of `T`: a swizzle couples two leaves of the type it is declared in (`T_0_1`, say)"),
        ("smem bf16 [[8][8]][[8 ^ T_2][8]] T", "1:25", "no such sub-dimension `T_2`: `T` has 2 sub-dimensions (asked for number 2)"),
        ("smem bf16 [[8][8]][[8 ^ T_0][8]] T", "1:25", "`T_0` is not a leaf (it has 2 sub-dimensions): a swizzle XORs one leaf's digit with another leaf's"),
        ("smem bf16 [[8][8]][[8 ^ T_1_0][8]] T", "1:25", "`T_1_0` is the swizzled leaf itself: a leaf is XORed with another"),
        ("smem bf16 [[8][8]][[[2][4] ^ T_0_1][8]] T", "1:30", "only a natural leaf `[n ^ P]` can be swizzled: `^` XORs one leaf's digit with another's"),
        ("smem bf16 [8][8] A\nbf16 [[[8 ^ A_0][8]]#A] V", "2:13", "a group of a structure `[...]#R` cannot be swizzled: its offsets are R's (swizzle R's leaves)"),
        ("pthd [[2][4 ^ T_0_0]] T", "1:15", "a thread array cannot be swizzled: a swizzle lays out data"),
        ("smem bf16 [[8][8]][[8 ^ T_0_1][8]] T\nbf16 [#T_0_1][#T] V", "2:1", "a dimension reaches the swizzle partner `T_0_1` more than once: a view may use a swizzled leaf and its partner once each"),
    ];
    let got: Vec<_> = cases.iter().map(|(src, _, _)| error(src)).collect();
    let want: Vec<_> = cases
        .iter()
        .map(|(_, at, msg)| (ErrorKind::Structure, at.to_string(), msg.to_string()))
        .collect();
    assert_eq!(got, want);
    let e = Module::parse("smem bf16 [[8][8]][[8 ^ ][8]] T").unwrap_err();
    assert_eq!(e.kind, ErrorKind::Syntax);
    assert!(
        e.message.starts_with("expected the leaf whose digit"),
        "{e}"
    );
}

/// Vectors through a swizzle: the 128-byte mode on floats (chunks of 4) moves in aligned
/// runs of 4, its XOR above the vector; bf16's (chunks of 8) in runs of 8; a XOR of the
/// element within its chunk (`[4 ^ T_0_1]`) in none. The property below checks the
/// runs against the interpreter.
#[test]
fn a_swizzle_above_the_vector_keeps_its_runs() {
    let runs = |src: &str| {
        let m = Module::parse(src).unwrap();
        let f = offset_function(&m, m.lookup("T").unwrap().node, "k").unwrap();
        (1..=8).filter(|v| f.aligned_runs(*v)).max()
    };
    assert_eq!(runs("smem float [[8][8]][[8 ^ T_0_1][4]] T"), Some(4));
    assert_eq!(runs("smem bf16 [[8][8]][[8 ^ T_0_1][8]] T"), Some(8));
    assert_eq!(runs("smem float [[16][4]][[8][4 ^ T_0_1]] T"), None);
    let m = Module::parse("smem float [[8][8]][[8 ^ T_0_1][4]] T\nsmem float [64][32] P").unwrap();
    let by = |name: &str| offset_function(&m, m.lookup(name).unwrap().node, "k").unwrap();
    assert_eq!(
        parray_layout::common_vector(&by("P"), &by("T"), 2048, &[4, 2]),
        Some(4)
    );
}

/// A random natural type of power-of-two leaves, one swizzled, and views of it.
fn program() -> impl Strategy<Value = String> {
    let group = prop_oneof![
        (0u32..4).prop_map(|k| vec![1u64 << k]),
        ((0u32..4), (0u32..4)).prop_map(|(a, b)| vec![1u64 << a, 1u64 << b]),
    ];
    (
        prop::collection::vec(group, 2..4),
        any::<prop::sample::Index>(),
        any::<prop::sample::Index>(),
        1u64..4,
    )
        .prop_filter_map("a leaf and a smaller partner", |(groups, li, pi, split)| {
            let mut leaves = Vec::new();
            for (g, sizes) in groups.iter().enumerate() {
                for (k, n) in sizes.iter().enumerate() {
                    let path = match sizes.len() {
                        1 => format!("T_{g}"),
                        _ => format!("T_{g}_{k}"),
                    };
                    leaves.push((g, k, *n, path));
                }
            }
            let (lg, lk, ln, _) = leaves[li.index(leaves.len())].clone();
            let partners: Vec<_> = leaves
                .iter()
                .filter(|(g, k, n, _)| (*g, *k) != (lg, lk) && *n <= ln)
                .collect();
            if partners.is_empty() {
                return None;
            }
            let partner = &partners[pi.index(partners.len())].3;
            let dims: String = groups
                .iter()
                .enumerate()
                .map(|(g, sizes)| {
                    let leaf = |k: usize, n: u64| match (g, k) == (lg, lk) {
                        true => format!("[{n} ^ {partner}]"),
                        false => format!("[{n}]"),
                    };
                    match sizes.as_slice() {
                        [n] => leaf(0, *n),
                        _ => format!("[{}{}]", leaf(0, sizes[0]), leaf(1, sizes[1])),
                    }
                })
                .collect();
            let size: u64 = groups.iter().flatten().product();
            let split = [1, 2, 4, 8]
                .iter()
                .map(|s| s * split)
                .find(|s| size.is_multiple_of(*s))
                .unwrap_or(1);
            Some(format!(
                "smem bf16 {dims} T\nbf16 [#T_1][#T_0] V\nbf16 [[{}][{split}]#T] W\nbf16 [{}#T] P",
                size / split,
                (size / 2).max(1)
            ))
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// Every dimension of a random swizzled type and of its views: the compiled offset
    /// function, `offset_at`, extent and cnt, against the interpreter; and `T[..][..]`
    /// with each index a variable.
    #[test]
    fn swizzled_offsets_match_the_interpreter(src in program()) {
        let m = Module::parse(&src).unwrap();
        let it = Interp::new(&parse_program(&src).unwrap(), &[]).unwrap();
        for path in it.paths() {
            let d = it.lookup(&path).unwrap();
            let node = m.lookup(&path).unwrap().node;
            let want = it.offsets(d);
            let f = offset_function(&m, node, "i").unwrap();
            for (i, w) in want.iter().enumerate() {
                prop_assert_eq!(f.expr.eval(&[i as u64]), *w, "{} [{}] = {}\n{}", path, i, f.to_source(), src);
                prop_assert_eq!(m.offset_at(node, i as u64), *w, "{} offset_at {}", path, i);
            }
            prop_assert_eq!(m.extent(node), it.extent(&path), "extent of {}", path);
            prop_assert_eq!(m.is_contiguous(node).unwrap(), it.cnt(&path), "cnt of {}", path);
        }
        let t = m.lookup("T").unwrap().node;
        // Where the symbolic form says a dimension moves in aligned runs of v, the
        // interpreter's offsets do.
        for path in it.paths() {
            let f = offset_function(&m, m.lookup(&path).unwrap().node, "i").unwrap();
            let want = it.offsets(it.lookup(&path).unwrap());
            for v in [2u64, 4, 8] {
                if f.aligned_runs(v) && (want.len() as u64).is_multiple_of(v) {
                    for (i, w) in want.iter().enumerate() {
                        let first = want[i - i % v as usize];
                        prop_assert!(first.is_multiple_of(v) && *w == first + (i as u64 % v), "{} by {}: [{}] = {}\n{}", path, v, i, w, src);
                    }
                }
            }
        }
        let kids = m.node(t).children.clone();
        let text = format!("T{}", (0..kids.len()).map(|k| format!("[x{k}]")).collect::<String>());
        let ie = parse_index_expr(&text).unwrap();
        let off = compile(&m, &ie).unwrap();
        for flat in 0..m.size(t) {
            let mut rest = flat;
            let mut vals = HashMap::new();
            for (k, c) in kids.iter().enumerate().rev() {
                vals.insert(format!("x{k}"), rest % m.size(*c));
                rest /= m.size(*c);
            }
            let mut v = vec![0; off.vars.len()];
            for (name, x) in &vals {
                if let Some(id) = off.vars.id(name) {
                    v[id.0 as usize] = *x;
                }
            }
            let want = it.index(&ie, &vals).unwrap();
            prop_assert_eq!(off.expr.eval(&v), want, "{} = {}\n{}", text, off.to_source(), src);
            prop_assert_eq!(m.offset_at(t, flat), want);
        }
    }
}
