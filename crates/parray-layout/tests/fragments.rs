//! Fragments (SPEC.md 2.14): `rmem` types distributed over the threads of a cuda array's
//! block, checked against the PTX ISA's tables for mma.sync m16n8k16 (bf16 -> f32) and the
//! wgmma m64nNk16 accumulator (as cutlass writes them, `mma_traits_sm80.hpp` and
//! `mma_traits_sm90_gmma.hpp`): for every element (row, col) the thread that holds it and
//! the register it is in, computed from the type (the tree's `offset_at`, the compiled
//! offset `T[r][c]` and the reference interpreter), equal the ISA's formulas. A proptest
//! of random types over a block's threads checks the offset algebra against the
//! interpreter.

use std::collections::HashMap;

use parray_layout::interp::Interp;
use parray_layout::{
    compile, explain, parse_index_expr, parse_program, ErrorKind, Holders, Module,
};
use proptest::prelude::*;

fn both(src: &str) -> (Module, Interp) {
    let program = parse_program(src).unwrap();
    let module = Module::build(&program, &[]).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let interp = Interp::new(&program, &[]).unwrap_or_else(|e| panic!("{e}\n{src}"));
    (module, interp)
}

/// A warp's lanes, lane = t0 + 4 t1, in blocks of 4 warps (the warp index t2 = tid / 32,
/// which the wgmma accumulator uses and the mma.sync fragments leave out): `G_1_0` is the
/// warp, `G_1_1` t1 (the ISA's groupID), `G_1_2` t0 (threadID_in_group).
const BLOCK: &str = "cuda(float* c) [2][[4][8][4]] G\n";

/// The declarations of the mma.sync m16n8k16 fragments. `FA` is the A operand as written
/// most directly (m = [v1][t1], k = [v2][t0][v0]); its registers are row-major over its
/// other leaves (v1, v2, v0), not the ISA's order a0..a7 (v = v0 + 2 v1 + 4 v2): `FA_REGS`
/// declares the registers in the ISA's order (v2, v1, then the threads, then v0) and `FA_ISA`
/// views it as rows and columns.
const MMA: &str = "
rmem bf16 [[2][#G_1_1]][[2][#G_1_2][2]] FA
rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS
bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA_ISA
rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB
rmem float [[2][#G_1_1]][[#G_1_2][2]] FC
";

/// The wgmma m64nNk16 accumulator over a warpgroup's 128 threads, registers in the ISA's
/// order (v2, v1, then the threads, then v0), viewed as 64 rows and N columns.
fn wgmma(n: u64) -> String {
    format!(
        "rmem float [{}][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_REGS
float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC
",
        n / 8
    )
}

/// (holder thread, register) of every element (row, col) of the `rows` x `cols` type
/// `name`, computed three ways that must agree: the tree's flat offset, the compiled
/// offset of `name[r][c]`, and the interpreter.
fn placement(m: &Module, it: &Interp, name: &str, rows: u64, cols: u64) -> Vec<(u64, u64)> {
    let dim = m.lookup(name).unwrap();
    let part = m.types()[dim.ty].distribution.as_ref().unwrap().part;
    let ie = parse_index_expr(&format!("{name}[r][c]")).unwrap();
    let off = compile(m, &ie).unwrap();
    let mut out = Vec::new();
    for r in 0..rows {
        for c in 0..cols {
            let flat = m.offset_at(dim.node, r * cols + c);
            let mut v = vec![0u64; off.vars.len()];
            for (var, value) in [("r", r), ("c", c)] {
                if let Some(id) = off.vars.id(var) {
                    v[id.0 as usize] = value;
                }
            }
            assert_eq!(off.expr.eval(&v), flat, "{name}[{r}][{c}] compiled");
            let vars = HashMap::from([("r".to_string(), r), ("c".to_string(), c)]);
            assert_eq!(
                it.index(&ie, &vars),
                Ok(flat),
                "{name}[{r}][{c}] interpreted"
            );
            assert_eq!(it.offset(name, r * cols + c), Some(flat), "{name} flat");
            out.push((flat / part, flat % part));
        }
    }
    out
}

fn check(
    m: &Module,
    it: &Interp,
    name: &str,
    rows: u64,
    cols: u64,
    isa: impl Fn(u64, u64) -> (u64, u64),
) {
    let got = placement(m, it, name, rows, cols);
    for r in 0..rows {
        for c in 0..cols {
            assert_eq!(
                got[(r * cols + c) as usize],
                isa(r, c),
                "{name}[{r}][{c}]: (thread, register)"
            );
        }
    }
}

#[test]
fn mma_a_fragment_in_the_isa_register_order() {
    let (m, it) = both(&format!("{BLOCK}{MMA}"));
    let d = m.type_def("FA_ISA").unwrap().distribution.clone().unwrap();
    assert_eq!(
        (d.over.as_str(), d.holders, d.ranks, d.part),
        ("G", Holders::Threads, 128, 8)
    );
    // A (16 x 16, row m, col k): m = t1 + 8 v1, k = 2 t0 + v0 + 8 v2, register v0 + 2 v1 + 4 v2.
    check(&m, &it, "FA_ISA", 16, 16, |row, k| {
        let (t1, v1) = (row % 8, row / 8);
        let (t0, v0, v2) = (k % 8 / 2, k % 2, k / 8);
        (t0 + 4 * t1, v0 + 2 * v1 + 4 * v2)
    });
}

#[test]
fn mma_a_fragment_written_directly_numbers_its_registers_row_major() {
    let (m, it) = both(&format!("{BLOCK}{MMA}"));
    // The same threads hold the same elements; the registers are v1 * 4 + v2 * 2 + v0,
    // row-major over the leaves left (v1, v2, v0): a2 and a4 are swapped.
    check(&m, &it, "FA", 16, 16, |row, k| {
        let (t1, v1) = (row % 8, row / 8);
        let (t0, v0, v2) = (k % 8 / 2, k % 2, k / 8);
        (t0 + 4 * t1, v1 * 4 + v2 * 2 + v0)
    });
}

#[test]
fn mma_b_and_c_fragments() {
    let (m, it) = both(&format!("{BLOCK}{MMA}"));
    // B (16 x 8 as k x n): n = t1, k = 2 t0 + v0 + 8 v1, register v0 + 2 v1.
    check(&m, &it, "FB", 16, 8, |k, n| {
        let (t0, v0, v1) = (k % 8 / 2, k % 2, k / 8);
        (t0 + 4 * n, v0 + 2 * v1)
    });
    // C/D (16 x 8 f32): m = t1 + 8 v1, n = 2 t0 + v0, register v0 + 2 v1.
    check(&m, &it, "FC", 16, 8, |row, n| {
        let (t1, v1, t0, v0) = (row % 8, row / 8, n / 2, n % 2);
        (t0 + 4 * t1, v0 + 2 * v1)
    });
    for (name, part) in [("FA", 8), ("FB", 4), ("FC", 4)] {
        let d = m.type_def(name).unwrap().distribution.clone().unwrap();
        assert_eq!(
            (d.holders, d.ranks, d.part),
            (Holders::Threads, 128, part),
            "{name}"
        );
    }
}

#[test]
fn wgmma_accumulators() {
    for n in [8, 16, 64, 128, 256] {
        let (m, it) = both(&format!("{BLOCK}{}", wgmma(n)));
        let d = m.type_def("ACC").unwrap().distribution.clone().unwrap();
        assert_eq!((d.ranks, d.part), (128, n / 2), "N = {n}");
        // row = t1 + 8 v1 + 16 t2, col = 2 t0 + v0 + 8 v2, register v0 + 2 v1 + 4 v2.
        check(&m, &it, "ACC", 64, n, |row, col| {
            let (t1, v1, t2) = (row % 8, row / 8 % 2, row / 16);
            let (t0, v0, v2) = (col % 8 / 2, col % 2, col / 8);
            (t0 + 4 * t1 + 32 * t2, v0 + 2 * v1 + 4 * v2)
        });
    }
}

#[test]
fn explain_names_the_threads_digits() {
    let (m, _) = both(&format!("{BLOCK}{MMA}"));
    let text = explain::explain(&m, [("FC", m.lookup("FC").unwrap())]);
    assert!(
        text.contains(
            "a fragment, distributed over the threads of `G`'s block (128 threads): each thread holds a part of 4 elements (its registers); the element at offset o is element o % 4 of the thread o / 4 of the block; the thread's digits: FC_0_1, FC_1_0"
        ),
        "{text}"
    );
    assert!(
        text.contains("FC_0_1  size 8    thread digit, stride 16 "),
        "{text}"
    );
    assert!(
        text.contains("FC_1_0  size 4    thread digit, stride 4 "),
        "{text}"
    );
    assert!(
        text.contains("FC_0_0  size 2    natural leaf, stride 2 "),
        "{text}"
    );
}

/// The error of building `decls` after the block, and its line and column.
fn error(decls: &str) -> (ErrorKind, String, (u32, u32)) {
    let e = Module::parse(&format!("{BLOCK}{decls}")).expect_err(decls);
    (e.kind, e.message.clone(), (e.span.line, e.span.col))
}

#[test]
fn what_a_fragment_may_not_be() {
    let cases: &[(&str, &str, (u32, u32))] = &[
        (
            "rmem float [[2][#G_0]] F",
            "`G_0` is not a dimension of `G`'s block: a fragment is distributed over the threads of one block",
            (2, 18),
        ),
        (
            "rmem float [#G][2] F",
            "`G` is not a dimension of `G`'s block",
            (2, 14),
        ),
        (
            "cuda(float* d) [1][32] H\nrmem float [#G_1_1][#H_1] F",
            "this type is distributed over `G` already: a type is distributed over one thread array",
            (3, 22),
        ),
        (
            "mpi [2] P\nrmem float [#G_1_1][#P] F",
            "this type is distributed over `G` already",
            (3, 22),
        ),
        (
            "smem float [[2][#G_1_1]] F",
            "a dimension over the threads of a cuda array's block belongs in an `rmem` type",
            (2, 18),
        ),
        (
            "float [[2][#G_1_1]] F",
            "belongs in an `rmem` type",
            (2, 13),
        ),
        (
            "dmem float [4] A\nrmem float [#A_0][#G_1_1] F",
            "a dimension distributed over the threads of `G`'s block belongs in a natural type",
            (3, 20),
        ),
        (
            "rmem float [[2][#G_1_1]#G_1] F",
            "is `[#G_1]`, `[n#G_1]` or a sub-dimension",
            (2, 12),
        ),
        (
            "rmem float [[8 ^ F_1][#G_1_1]][8] F",
            "a distributed type cannot be swizzled",
            (2, 18),
        ),
    ];
    for (decls, want, at) in cases {
        let (kind, message, got_at) = error(decls);
        assert_eq!(kind, ErrorKind::Structure, "{decls}: {message}");
        assert!(message.contains(want), "{decls}: {message}");
        assert_eq!(got_at, *at, "{decls}: {message}");
    }
}

#[test]
fn a_view_of_thread_ids_is_still_a_view() {
    // Without natural leaves, a type over a cuda array's dimensions views its thread ids,
    // as before fragments; only an rmem type is distributed.
    let (m, it) = both(&format!("{BLOCK}int [#G_1][#G_0] GT\n"));
    assert_eq!(m.type_def("GT").unwrap().distribution, None);
    let node = m.lookup("GT").unwrap().node;
    for i in 0..256 {
        assert_eq!(Some(m.offset_at(node, i)), it.offset("GT", i));
    }
}

/// A random type over a block's threads: natural leaves and thread digits interleaved.
fn random_fragment() -> impl Strategy<Value = String> {
    let group = prop_oneof![
        (1u64..4).prop_map(|n| format!("[{n}]")),
        Just("[#G_1_0]".to_string()),
        Just("[#G_1_1]".to_string()),
        Just("[#G_1_2]".to_string()),
        Just("[3#G_1_1]".to_string()),
        Just("[#G_1]".to_string()),
    ];
    (
        proptest::collection::vec(group.clone(), 1..4),
        proptest::collection::vec(group, 1..4),
    )
        .prop_map(|(a, b)| {
            format!(
                "rmem float [{}][{}] F\nfloat [#F_1][#F_0] FT\n",
                a.concat(),
                b.concat()
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, failure_persistence: None, ..ProptestConfig::default() })]

    /// Offsets of random fragments and of their transposed views: the tree and the
    /// compiled offset function equal the interpreter's.
    #[test]
    fn random_fragments_match_the_interpreter(decls in random_fragment()) {
        let src = format!("{BLOCK}{decls}");
        let program = parse_program(&src).unwrap();
        let built = Module::build(&program, &[]);
        let interp = Interp::new(&program, &[]);
        // A thread digit used twice is two leaves over one digit: refused by neither, and
        // only an element count past 64 bits is refused, alike.
        let (m, it) = match (built, interp) {
            // Small enough to enumerate.
            (Ok(m), Ok(it)) if m.size(m.lookup("F").unwrap().node) <= 1 << 12 => (m, it),
            (Ok(_), Ok(_)) => return Err(TestCaseError::reject("large")),
            (Err(e), Err(_)) => return Err(TestCaseError::reject(e.to_string())),
            (m, it) => return Err(TestCaseError::fail(format!("{src}: compiler {:?}, interpreter {:?}", m.err(), it.err()))),
        };
        for name in ["F", "FT", "F_0", "F_1"] {
            let node = m.lookup(name).unwrap().node;
            let f = parray_layout::offset_function(&m, node, "i").unwrap();
            let d = it.lookup(name).unwrap();
            let want = it.offsets(d);
            for (i, w) in want.iter().enumerate() {
                prop_assert_eq!(m.offset_at(node, i as u64), *w, "{}[{}] in\n{}", name, i, src);
                prop_assert_eq!(f.expr.eval(&[i as u64]), *w, "{}[{}] = {} in\n{}", name, i, f.to_source(), src);
            }
            prop_assert_eq!(m.extent(node), it.extent(name), "extent of {} in\n{}", name, src);
        }
        if let Some(d) = m.type_def("F").unwrap().distribution.clone() {
            prop_assert_eq!(d.holders, Holders::Threads);
            prop_assert_eq!(d.ranks, 128);
        }
        prop_assert_eq!(m.type_def("F").unwrap().distribution.is_some(), decls[..decls.find(" F").unwrap()].contains("#G"));
    }
}
