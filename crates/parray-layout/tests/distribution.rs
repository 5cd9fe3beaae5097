//! Types distributed over the ranks of an mpi thread array (SPEC.md 2.13): the compiler
//! against the reference interpreter and against the rule written out by hand (rank `r`'s
//! part at `r * part`, the other leaves row-major within it).

use parray_layout::interp::Interp;
use parray_layout::{offset_function, parse_program, Distribution, Module};
use proptest::prelude::*;

fn both(src: &str) -> (Module, Interp) {
    let program = parse_program(src).unwrap();
    let module = Module::build(&program, &[]).unwrap_or_else(|e| panic!("{e}\n{src}"));
    let interp = Interp::new(&program, &[]).unwrap_or_else(|e| panic!("{e}\n{src}"));
    (module, interp)
}

/// Every offset of `name` by the tree, the offset function and the interpreter.
fn offsets(m: &Module, it: &Interp, name: &str) -> Vec<u64> {
    let node = m.lookup(name).unwrap().node;
    let want = it.offsets(it.lookup(name).unwrap());
    let f = offset_function(m, node, "i").unwrap();
    for (i, w) in want.iter().enumerate() {
        assert_eq!(m.offset_at(node, i as u64), *w, "{name}[{i}] by offset_at");
        assert_eq!(
            f.expr.eval(&[i as u64]),
            *w,
            "{name}[{i}] by {}",
            f.to_source()
        );
    }
    assert_eq!(m.extent(node), it.extent(name), "extent of {name}");
    want
}

fn distribution(m: &Module, name: &str) -> Option<Distribution> {
    m.type_def(name).unwrap().distribution.clone()
}

const DECLS: &str = "
    mpi [4] P
    paged float [[#P][2]][3] ROWS
    paged float [3][[#P][2]] COLS
    paged float [#ROWS_1][#ROWS_0] ROWS_T
    paged float [#ROWS_0_1][#ROWS_1] ROWS_PART
    mpi [2][2] Q
    paged float [#Q_0][5][#Q_1] GRID
    paged float [1#P][6] ON_ZERO
    paged float [6][4] WHOLE
";

#[test]
fn rows_over_four_ranks() {
    let (m, it) = both(DECLS);
    let d = distribution(&m, "ROWS").unwrap();
    assert_eq!((d.over.as_str(), d.ranks, d.part), ("P", 4, 6));
    let offs = offsets(&m, &it, "ROWS");
    // ROWS[[p][i]][j] is element i * 3 + j of rank p's part.
    for (k, off) in offs.iter().enumerate() {
        let (p, i, j) = (k / 6, k / 3 % 2, k % 3);
        assert_eq!(*off as usize, p * 6 + i * 3 + j, "ROWS[{k}]");
    }
}

#[test]
fn columns_over_four_ranks() {
    let (m, it) = both(DECLS);
    let d = distribution(&m, "COLS").unwrap();
    assert_eq!((d.ranks, d.part), (4, 6));
    let offs = offsets(&m, &it, "COLS");
    // COLS[i][[p][j]] is element i * 2 + j of rank p's part: a rank holds two columns.
    for (k, off) in offs.iter().enumerate() {
        let (i, p, j) = (k / 8, k / 2 % 4, k % 2);
        assert_eq!(*off as usize, p * 6 + i * 2 + j, "COLS[{k}]");
    }
}

#[test]
fn a_view_of_a_distributed_type_is_distributed_alike() {
    let (m, it) = both(DECLS);
    assert_eq!(distribution(&m, "ROWS_T"), distribution(&m, "ROWS"));
    let rows = offsets(&m, &it, "ROWS");
    let t = offsets(&m, &it, "ROWS_T");
    for j in 0..3 {
        for i in 0..8 {
            assert_eq!(t[j * 8 + i], rows[i * 3 + j]);
        }
    }
}

#[test]
fn a_view_of_the_other_dimensions_is_one_part() {
    let (m, it) = both(DECLS);
    assert_eq!(distribution(&m, "ROWS_PART"), None);
    assert_eq!(offsets(&m, &it, "ROWS_PART"), (0..6).collect::<Vec<_>>());
}

#[test]
fn sub_dimensions_of_a_grid_of_ranks() {
    let (m, it) = both(DECLS);
    let d = distribution(&m, "GRID").unwrap();
    assert_eq!((d.over.as_str(), d.ranks, d.part), ("Q", 4, 5));
    let offs = offsets(&m, &it, "GRID");
    // GRID[q0][i][q1] is element i of rank q0 * 2 + q1.
    for (k, off) in offs.iter().enumerate() {
        let (q0, i, q1) = (k / 10, k / 2 % 5, k % 2);
        assert_eq!(*off as usize, (q0 * 2 + q1) * 5 + i, "GRID[{k}]");
    }
}

#[test]
fn one_rank_holds_a_type_over_one_of_its_ranks() {
    let (m, it) = both(DECLS);
    let d = distribution(&m, "ON_ZERO").unwrap();
    assert_eq!((d.ranks, d.part), (4, 6));
    assert_eq!(offsets(&m, &it, "ON_ZERO"), (0..6).collect::<Vec<_>>());
    let extent = m.extent(m.lookup("ON_ZERO").unwrap().node);
    assert_eq!((0..4).filter(|r| d.part_on(*r, extent) > 0).count(), 1);
    assert_eq!(
        (0..4).map(|r| d.part_on(r, extent)).collect::<Vec<_>>(),
        [6, 0, 0, 0]
    );
    assert_eq!(distribution(&m, "WHOLE"), None);
    assert_eq!(distribution(&m, "P"), None);
}

#[test]
fn misplaced_distributions_are_errors_at_the_reference() {
    let cases = [
        (
            "mpi [2] P\npaged float [4] A\npaged float [#A_0][#P] B",
            "P",
            "belongs in a natural type",
        ),
        (
            "mpi [4] P\npaged float [[2][2]#P][3] B",
            "[[2][2]#P]",
            "not a structured reference",
        ),
        (
            "mpi [2] P\nmpi [2] Q\npaged float [#P][#Q][3] B",
            "Q",
            "distributed over `P` already",
        ),
        ("mpi [2] P\nmpi [#P] Q", "#P", "must be natural"),
        (
            "mpi [2] P\nmpi [2] Q\npaged float [#P][3] A\npaged float [#Q][3] B\npaged float [#A_0][#B_0] C",
            "B_0",
            "one mpi array, one way",
        ),
    ];
    for (src, token, message) in cases {
        let err = Module::parse(src).expect_err(src);
        let at = &src[err.span.start..err.span.end];
        assert!(at.contains(token), "{src}: error at `{at}`: {err}");
        assert!(err.to_string().contains(message), "{src}: {err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// A natural type with a rank dimension anywhere among its leaves: offsets are the
    /// rank times the part plus the row-major offset of the other leaves.
    #[test]
    fn ranks_anywhere_are_parts_end_to_end(
        ranks in 1u64..5,
        sizes in proptest::collection::vec(1u64..4, 1..4),
        at in 0usize..4,
    ) {
        let at = at.min(sizes.len());
        let mut dims: Vec<String> = sizes.iter().map(|s| format!("[{s}]")).collect();
        dims.insert(at, "[#P]".into());
        let src = format!("mpi [{ranks}] P\npaged float {} D", dims.concat());
        let (m, it) = both(&src);
        let offs = offsets(&m, &it, "D");
        let part: u64 = sizes.iter().product();
        prop_assert_eq!(distribution(&m, "D").map(|d| d.part), Some(part));
        let mut all_sizes = sizes.clone();
        all_sizes.insert(at, ranks);
        for (k, off) in offs.iter().enumerate() {
            // The digits of k, row-major over all the dimensions.
            let mut digits = vec![0u64; all_sizes.len()];
            let mut rest = k as u64;
            for (d, s) in digits.iter_mut().zip(&all_sizes).rev() {
                *d = rest % s;
                rest /= s;
            }
            let rank = digits.remove(at);
            let local = digits.iter().zip(&sizes).fold(0, |acc, (d, s)| acc * s + d);
            prop_assert_eq!(*off, rank * part + local, "{}: D[{}]", src, k);
        }
    }
}

/// The collective of each copy follows from the two placements alone.
#[test]
fn copies_become_the_collectives_their_types_imply() {
    use parray_layout::copy::{plan, Collective, CopyPath, Place};
    let m = Module::parse(
        "mpi [4] P
         paged float [[#P][2]][8] ROWS
         paged float [8][[#P][2]] COLS
         paged float [8][8] WHOLE
         paged float [1#P][8][8] ON_ZERO
         paged float [[2][#P]][8] CYCLIC
         mpi [2][2] Q
         paged float [[#Q][2]][8] BY_RANK
         paged float [[#BY_RANK_0_0_1][#BY_RANK_0_0_0][#BY_RANK_0_1]][#BY_RANK_1] SWAPPED",
    )
    .unwrap();
    let cases = [
        ("ROWS", "COLS", Collective::AllToAll),
        ("ROWS", "CYCLIC", Collective::AllToAll),
        ("ROWS", "WHOLE", Collective::AllGather),
        ("ROWS", "ON_ZERO", Collective::Gather { root: 0 }),
        ("ON_ZERO", "COLS", Collective::Scatter { root: 0 }),
        ("ON_ZERO", "WHOLE", Collective::Broadcast { root: 0 }),
        ("WHOLE", "COLS", Collective::Local),
        ("ROWS", "ROWS", Collective::Local),
        ("BY_RANK", "SWAPPED", Collective::PointToPoint),
    ];
    for (src, dst, want) in cases {
        let path = plan((&m, src, Place::Host), (&m, dst, Place::Host)).unwrap();
        assert_eq!(path, CopyPath::Exchange(want), "{src} to {dst}");
        // What the digits decide is what walking every element decides.
        let replicated = m.type_def(dst).unwrap().distribution.is_none();
        let counts = parray_layout::copy::exchange_counts((&m, src), (&m, dst)).unwrap();
        assert_eq!(
            parray_layout::copy::classify(&counts, replicated),
            want,
            "{src} to {dst}, walked"
        );
    }
    assert_eq!(
        plan((&m, "WHOLE", Place::Host), (&m, "WHOLE", Place::Host)).unwrap(),
        CopyPath::Bulk
    );
}

/// Where `RankDigit` places element `k`, and what it lists as a rank's, is where the
/// offsets place it.
fn digit_agrees(m: &Module, name: &str, ranks: usize) {
    use parray_layout::copy::{Placement, RankDigit};
    let digit = RankDigit::of(m, name).unwrap_or_else(|| panic!("{name} has one rank digit"));
    let mut placement = Placement::of(m, name).unwrap();
    let size = m.size(m.lookup(name).unwrap().node);
    let mut held: Vec<Vec<(u64, usize)>> = vec![Vec::new(); ranks];
    for k in 0..size {
        let (rank, local) = placement.at(k);
        let rank = rank.expect("distributed");
        assert_eq!(digit.at(k), (rank, local), "{name}[{k}]");
        held[rank].push((k, local));
    }
    for (r, want) in held.iter().enumerate() {
        assert_eq!(
            &digit.held_by(r).collect::<Vec<_>>(),
            want,
            "{name}, rank {r}"
        );
    }
}

#[test]
fn rank_digits_place_as_the_offsets_do() {
    let (m, _) = both(DECLS);
    for name in ["ROWS", "COLS", "ON_ZERO"] {
        digit_agrees(&m, name, 4);
    }
    let m = Module::parse("mpi [2][3] Q\npaged float [2][#Q_1][5] ONE_DIGIT").unwrap();
    digit_agrees(&m, "ONE_DIGIT", 6);
    // Two rank digits, or a view: no digit (the copy walks the offsets).
    let (m, _) = both(DECLS);
    assert_eq!(parray_layout::copy::RankDigit::of(&m, "GRID"), None);
    assert_eq!(parray_layout::copy::RankDigit::of(&m, "ROWS_T"), None);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn rank_digits_anywhere(
        ranks in 1u64..5,
        sizes in proptest::collection::vec(1u64..4, 1..4),
        at in 0usize..4,
    ) {
        let at = at.min(sizes.len());
        let mut dims: Vec<String> = sizes.iter().map(|s| format!("[[{s}]]")).collect();
        dims.insert(at, "[#P]".into());
        let src = format!("mpi [{ranks}] P\npaged float {} D", dims.concat());
        let m = Module::parse(&src).unwrap();
        digit_agrees(&m, "D", ranks as usize);
    }
}

/// A digit exchange, simulated: every rank packs its part by `pack`, the blocks cross as
/// `MPI_Alltoall` crosses them, every rank unpacks by `unpack`; each destination element
/// is then the source element of the same `k`, as the offsets place them.
fn exchange_moves_every_element(src_decl: &str, dst_decl: &str, ranks: usize) {
    use parray_layout::copy::{DigitExchange, Placement, RankDigit};
    let m = Module::parse(&format!("mpi [{ranks}] P\n{src_decl} S\n{dst_decl} D")).unwrap();
    let ex = DigitExchange::of(
        RankDigit::of(&m, "S").unwrap(),
        RankDigit::of(&m, "D").unwrap(),
    )
    .unwrap_or_else(|| panic!("{src_decl} to {dst_decl} is a digit exchange"));
    let (mut s_at, mut d_at) = (
        Placement::of(&m, "S").unwrap(),
        Placement::of(&m, "D").unwrap(),
    );
    let size = m.size(m.lookup("S").unwrap().node);
    let part = |name: &str| {
        m.type_def(name)
            .unwrap()
            .distribution
            .as_ref()
            .unwrap()
            .part
    };
    // Source parts hold k itself, as the offsets place it.
    let mut parts = vec![vec![u64::MAX; part("S") as usize]; ranks];
    for k in 0..size {
        let (r, local) = s_at.at(k);
        parts[r.unwrap()][local] = k;
    }
    let block = ex.block() as usize;
    let sends: Vec<Vec<u64>> = (0..ranks)
        .map(|me| {
            let mut buf = vec![u64::MAX; block * ranks];
            for (j, v) in parts[me].iter().enumerate() {
                buf[ex.pack(me as u64, j as u64) as usize] = *v;
            }
            buf
        })
        .collect();
    for d in 0..ranks {
        let recv: Vec<u64> = (0..ranks)
            .flat_map(|s| sends[s][d * block..(d + 1) * block].to_vec())
            .collect();
        let got: Vec<u64> = (0..part("D"))
            .map(|j| recv[ex.unpack(d as u64, j) as usize])
            .collect();
        let mut want = vec![u64::MAX; part("D") as usize];
        for k in 0..size {
            if let (Some(r), local) = d_at.at(k) {
                if r == d {
                    want[local] = k;
                }
            }
        }
        assert_eq!(got, want, "{src_decl} to {dst_decl}, rank {d}");
    }
    // The same blocks as runs moved from part to part (no send or receive buffer): run
    // `i` of block (s, d) is at the places pack and unpack give its elements.
    let run = ex.run();
    assert_eq!(ex.runs() * run, ex.block(), "{src_decl}: whole runs");
    for (s, d) in (0..ranks as u64).flat_map(|s| (0..ranks as u64).map(move |d| (s, d))) {
        for i in 0..ex.runs() {
            let (from, to) = ex.run_at((s, d), i);
            for q in 0..run {
                let place = i * run + q;
                assert_eq!(
                    ex.pack(s, from + q),
                    d * ex.block() + place,
                    "{src_decl} send"
                );
                assert_eq!(
                    ex.unpack(d, to + q),
                    s * ex.block() + place,
                    "{src_decl} recv"
                );
            }
        }
    }
}

#[test]
fn digit_exchanges_move_every_element() {
    // The slab FFT's transposes, and rows to columns.
    exchange_moves_every_element(
        "paged float2 [[#P][2]][8][8]",
        "paged float2 [8][[#P][2]][8]",
        4,
    );
    exchange_moves_every_element(
        "paged float2 [8][[#P][2]][8]",
        "paged float2 [[#P][2]][8][8]",
        4,
    );
    exchange_moves_every_element("paged float [[#P][4]][8]", "paged float [8][[#P][4]]", 2);
    exchange_moves_every_element(
        "paged float [3][[#P][2]][4]",
        "paged float [[3][4]][[#P][2]]",
        2,
    );
}
