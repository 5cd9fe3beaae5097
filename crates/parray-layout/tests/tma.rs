//! The TMA planner (`parray_layout::tma`): worked tensor maps of the GEMM's tiles, the
//! rules it refuses by, and its post-condition against an independent oracle: TMA's box
//! fill simulated coordinate by coordinate, each element's global and shared offsets
//! looked up in the reference interpreter's offsets of the two types.

use std::collections::HashMap;

use parray_layout::interp::Interp;
use parray_layout::tma::{self, TmaDim, TmaPlan};
use parray_layout::Swizzle;
use parray_layout::{parse_program, Module};
use proptest::prelude::*;

/// Simulates TMA's fill of the box at global offset 0 by `plan` and checks that it writes
/// exactly `#copy SRC(p) to DST(q)`: every box coordinate reads the global element of one
/// `k` of `SRC` and writes it to the byte of `DST`'s element `k`, each `k` once. The
/// offsets are the interpreter's, not the module's.
fn check_fill(decls: &str, src: &str, dst: &str, plan: &TmaPlan) {
    let it = Interp::new(&parse_program(decls).unwrap(), &[]).unwrap();
    let (s, d) = (it.lookup(src).unwrap(), it.lookup(dst).unwrap());
    let n = it.dim_size(s);
    let by_global: HashMap<u64, u64> = (0..n).map(|k| (it.off(s, k).unwrap(), k)).collect();
    assert_eq!(by_global.len() as u64, n, "{src} reads each element once");
    let boxes: Vec<u64> = plan.dims.iter().map(|d| d.box_size).collect();
    assert_eq!(boxes.iter().product::<u64>(), n, "the box holds the tile");
    let mut seen = vec![false; n as usize];
    let mut c = vec![0; boxes.len()];
    for flat in 0..n {
        let mut rest = flat;
        for (ci, b) in c.iter_mut().zip(&boxes) {
            *ci = rest % b;
            rest /= b;
        }
        let g: u64 = c.iter().zip(&plan.dims).map(|(c, d)| c * d.stride).sum();
        let k = *by_global
            .get(&g)
            .unwrap_or_else(|| panic!("box {c:?} reads global {g}, no element of {src}"));
        assert!(!seen[k as usize], "element {k} written twice");
        seen[k as usize] = true;
        let dense: u64 = c.iter().zip(&boxes).rev().fold(0, |a, (c, b)| a * b + c);
        let byte = dense * plan.elem_bytes;
        let b = plan.swizzle.b();
        let swizzled = byte ^ (((byte >> 7) & ((1 << b) - 1)) << 4);
        assert_eq!(
            swizzled,
            it.off(d, k).unwrap() * plan.elem_bytes,
            "box {c:?} (element {k}) lands at byte {swizzled}"
        );
        assert_eq!(plan.smem_byte(&c), swizzled);
        assert_eq!(plan.global_offset(&c), g);
    }
}

fn plan_of(decls: &str, src: &str, dst: &str) -> TmaPlan {
    let m = Module::parse(decls).unwrap();
    let plan = tma::plan(&m, src, dst).unwrap_or_else(|e| panic!("{decls}: {e}"));
    check_fill(decls, src, dst, &plan);
    plan
}

fn refusal(decls: &str, src: &str, dst: &str) -> String {
    let m = Module::parse(decls).unwrap();
    tma::plan(&m, src, dst).unwrap_err().message
}

fn dims(d: &[(u64, u64)]) -> Vec<TmaDim> {
    d.iter()
        .map(|&(box_size, stride)| TmaDim { box_size, stride })
        .collect()
}

/// gemm_bf16's A stage unswizzled: core matrices (m / 8, k / 8, m % 8, k % 8) of a 128 x 64
/// tile of a K-major [M][K]: the map (k % 8, m % 8, k / 8, m / 8), strides (1, K, 8, 8K).
const A_CORE: &str = "
    dmem bf16 [256][512] A;
    bf16 [128#A_0][64#A_1] AT;
    smem bf16 [16][8][8][8] KA;
    bf16 [[#KA_0][#KA_2]][[#KA_1][#KA_3]] KAV;
";

#[test]
fn a_k_major_core_matrix_stage_is_a_four_dimensional_map() {
    let plan = plan_of(A_CORE, "AT", "KAV");
    assert_eq!(plan.dims, dims(&[(8, 1), (8, 512), (8, 8), (16, 8 * 512)]));
    assert_eq!(plan.swizzle, Swizzle::None);
    assert_eq!(plan.box_bytes(), 128 * 64 * 2);
    // The tile at row 16, column 64 of the 256 x 512 array: coordinates (0, 0, 8, 2).
    let off = 16 * 512 + 64;
    assert_eq!(plan.coordinates(off), vec![0, 0, 8, 2]);
    assert_eq!(plan.extents(256 * 512), vec![8, 8, 64, 32]);
    assert_eq!(plan.crossing(off, 256 * 512), None);
    // At column 480 the tile's last 32 columns are past the row: TMA fills them with
    // zeros where the type reads the next row.
    assert_eq!(plan.crossing(16 * 512 + 480, 256 * 512), Some((2, 60, 64)));
    // Rows 192..320 of 256.
    assert_eq!(plan.crossing(192 * 512, 256 * 512), Some((3, 24, 32)));
}

#[test]
fn a_k_major_128_byte_swizzled_stage_is_rows_of_the_span() {
    let decls = "
        dmem bf16 [256][512] A;
        bf16 [128#A_0][64#A_1] AT;
        smem bf16 [[16][8]][[8 ^ T_0_1][8]] T;
    ";
    let plan = plan_of(decls, "AT", "T");
    assert_eq!(plan.dims, dims(&[(64, 1), (128, 512)]));
    assert_eq!(plan.swizzle, Swizzle::B128);
    assert_eq!(plan.swizzle.atom_bytes(), 1024);
    assert_eq!(plan.coordinates(32 * 512 + 128), vec![128, 32]);
    assert_eq!(plan.extents(256 * 512), vec![512, 256]);
}

/// A tile of pieces that cover a 1000 x 1000 matrix past its edges (SPEC 2.4) reads TMA's
/// zeros past the data: the plan says so, and its edge tile's box crosses the tensor at
/// the data's last row and column. A tile of a type that covers nothing past its end
/// does not (its crossing reads the next row by the types, which the emulation refuses).
#[test]
fn pieces_that_cover_past_the_data_read_tma_zeros_there() {
    let decls = "
        dmem bf16 [1000][1000] A;
        bf16 [[ceil(1000/128)][128]#A_0][[ceil(1000/64)][64]#A_1] AP;
        bf16 [#AP_0_1][#AP_1_1] AT;
        bf16 [128#A_0][64#A_1] INSIDE;
        smem bf16 [[16][8]][[8 ^ T_0_1][8]] T;
    ";
    let plan = plan_of(decls, "AT", "T");
    assert!(plan.zero_fill);
    assert_eq!(plan.dims, dims(&[(64, 1), (128, 1000)]));
    assert_eq!(plan.extents(1000 * 1000), vec![1000, 1000]);
    // The last tile: rows 896.., columns 960...
    let off = 896 * 1000 + 960;
    assert_eq!(plan.crossing(off, 1000 * 1000), Some((0, 960, 1000)));
    assert!(!plan_of(decls, "INSIDE", "T").zero_fill);
}

#[test]
fn the_32_and_64_byte_modes() {
    for (b, decls) in [
        (
            Swizzle::B64,
            "dmem bf16 [64][256] A; bf16 [64#A_0][32#A_1] AT; smem bf16 [[8][4][2]][[4 ^ T_0_1][8]] T;",
        ),
        (
            Swizzle::B32,
            "dmem bf16 [64][256] A; bf16 [64#A_0][16#A_1] AT; smem bf16 [[8][2][4]][[2 ^ T_0_1][8]] T;",
        ),
    ] {
        let plan = plan_of(decls, "AT", "T");
        assert_eq!(plan.swizzle, b);
        assert_eq!(plan.dims[1], TmaDim { box_size: 64, stride: 256 });
    }
}

/// gemm_bf16's B stage: a 64 x 128 tile of an N-major [K][N] in two MN-major 128B atoms
/// (k rows of 64 n each): the inner run of 128 columns splits at the swizzle's span,
/// the map (n % 64, k, n / 64).
#[test]
fn b_mn_major_atoms_split_the_row_at_the_span() {
    let decls = "
        dmem bf16 [512][1024] B;
        bf16 [64#B_0][128#B_1] BT;
        smem bf16 [2][[8][8]][[8 ^ BS_1_1][8]] BS;
        bf16 [[#BS_1_0][#BS_1_1]][[#BS_0][#BS_2]] BSV;
    ";
    let plan = plan_of(decls, "BT", "BSV");
    assert_eq!(plan.dims, dims(&[(64, 1), (64, 1024), (2, 64)]));
    // Rows of 1000: the atoms' stride 64 and the rows' 1000 do not nest.
    let msg = refusal(&decls.replace("[1024] B", "[1000] B"), "BT", "BSV");
    assert!(
        msg.ends_with("but 2 elements at stride 64 meet stride 1000"),
        "{msg}"
    );
    assert_eq!(plan.swizzle, Swizzle::B128);
    assert_eq!(plan.coordinates(64 * 1024 + 256), vec![0, 64, 4]);
    assert_eq!(plan.extents(512 * 1024), vec![64, 512, 16]);
}

/// A contiguous row longer than 256 elements is split at 256; runs that continue one
/// progression merge (a whole [8][64] block of rows 64 wide is one run of 512).
#[test]
fn long_runs_split_and_continuing_runs_merge() {
    let decls = "dmem float [64][64] A; float [8#A_0][64#A_1] AT; smem float [8][64] S;";
    let plan = plan_of(decls, "AT", "S");
    assert_eq!(plan.dims, dims(&[(256, 1), (2, 256)]));
}

#[test]
fn what_tma_cannot_do_is_refused_by_its_rule() {
    // Transposed on the way: shared memory's innermost run is a column of A.
    let msg = refusal(
        "dmem float [64][64] A; float [16#A_0][16#A_1] AT; smem float [16][16] S; float [#S_1][#S_0] SV;",
        "AT",
        "SV",
    );
    assert!(
        msg.contains("TMA's innermost dimension reads consecutive global elements"),
        "{msg}"
    );
    // Rows of 6 floats: 24 bytes, no multiple of 16.
    let msg = refusal(
        "dmem float [64][64] A; float [8#A_0][6#A_1] AT; smem float [8][6] S;",
        "AT",
        "S",
    );
    assert!(msg.contains("multiple of 16 bytes"), "{msg}");
    // A global stride of 100 floats (400 bytes) is a multiple of 16; of 98 (392) it is not.
    plan_of(
        "dmem float [64][100] A; float [8#A_0][8#A_1] AT; smem float [8][8] S;",
        "AT",
        "S",
    );
    let msg = refusal(
        "dmem float [64][98] A; float [8#A_0][8#A_1] AT; smem float [8][8] S;",
        "AT",
        "S",
    );
    assert!(msg.contains("stride of 98 elements (392 bytes)"), "{msg}");
    // Padded shared rows: not dense.
    let msg = refusal(
        "dmem float [64][64] A; float [8#A_0][8#A_1] AT; smem float [8][12] S; float [#S_0][8#S_1] SV;",
        "AT",
        "SV",
    );
    assert_eq!(msg, "TMA writes its box densely: `SV`'s 64 elements must lie at offsets 0..64, but its element 44 is at 64");
    // Six dimensions: 2 x 2 x 2 x 2 x 2 x 4 of a [2]..[2][4] array reversed.
    let msg = refusal(
        "dmem float [2][2][2][2][2][2][4] A;
         float [#A_5][#A_3][#A_1][#A_0][#A_2][#A_4][#A_6] AT;
         smem float [2][2][2][2][2][2][4] S;",
        "AT",
        "S",
    );
    assert!(msg.contains("at most 5 dimensions"), "{msg}");
    // A 128-byte swizzle on rows of 128 floats: the inner run of 512 bytes splits at the
    // span, which is right; a swizzle that repeats every 2048 bytes is no mode of TMA's.
    let msg = refusal(
        "dmem float [64][64] A; float [32#A_0][32#A_1] AT; smem float [[2][16]][[16 ^ S_0_1][2]] S;",
        "AT",
        "S",
    );
    assert!(msg.contains("repeats every 2048 bytes"), "{msg}");

    // Element types and counts.
    let msg = refusal(
        "dmem float [64][64] A; float [8#A_0][8#A_1] AT; smem int [8][8] S;",
        "AT",
        "S",
    );
    assert!(msg.contains("one type"), "{msg}");
    let msg = refusal(
        "dmem float [64][64] A; smem float [8][8] S; smem float [8][8] T;",
        "T",
        "S",
    );
    assert!(msg.contains("global memory"), "{msg}");
}

/// A box of rows of 64 bytes under the 128-byte mode (each 128-byte line of the pattern
/// two rows of the box): the model would place it, but only rows of the span are checked
/// on the hardware. No declared type has such offsets (a view may reach the swizzled leaf
/// once), so the offsets are the pattern's own.
#[test]
fn swizzled_rows_narrower_than_the_span_are_refused() {
    let (rows, cols) = (32u64, 32u64);
    let src: Vec<u64> = (0..rows * cols).map(|k| k / cols * 64 + k % cols).collect();
    let dst: Vec<u64> = (0..rows * cols)
        .map(|k| Swizzle::B128.apply(k * 2) / 2)
        .collect();
    let err = tma::derive((&src, "AT"), (&dst, "S"), 2, Swizzle::B128).unwrap_err();
    assert_eq!(
        err.message,
        "a box swizzled by TMA's 128-byte mode has rows of 128 bytes: `S`'s innermost run is 32 elements (64 bytes); lay its rows out 64 elements wide"
    );
}

/// Strides that do not nest leave no start coordinates for an offset: a box whose second
/// dimension is a shifted copy of the first (stride 4 over runs of 8).
#[test]
fn overlapping_strides_are_refused() {
    let n = 64;
    let src: Vec<u64> = (0..n).map(|k| k % 8 + (k / 8) * 4).collect();
    let dst: Vec<u64> = (0..n).collect();
    let err = tma::derive((&src, "S"), (&dst, "D"), 4, Swizzle::None).unwrap_err();
    assert!(err.message.contains("must nest"), "{}", err.message);
}

/// A tile of `rows` x `cols` of an array `2 rows` x `pitch` (a multiple of the tile's
/// width), elements of `e` bytes, in one of the shared layouts the planner should take:
/// row-major (0), core matrices of 8 rows of 16 bytes (1), or the 32, 64 or 128-byte
/// mode's atoms (2, 3, 4).
#[derive(Debug, Clone)]
struct Case {
    e: u64,
    rows: u64,
    cols: u64,
    pitch: u64,
    layout: u8,
}

fn case() -> impl Strategy<Value = Case> {
    (
        prop_oneof![Just(2u64), Just(4), Just(8)],
        1u64..5,
        1u64..5,
        2u64..5,
        0u8..5,
    )
        .prop_map(|(e, r, c, p, layout)| {
            let chunk = 16 / e;
            // A row of the swizzle's atom: 2^(layout - 1) chunks.
            let row = if layout >= 2 {
                chunk << (layout - 1)
            } else {
                chunk
            };
            Case {
                e,
                rows: 8 * r,
                cols: row * c,
                pitch: row * c * p,
                layout,
            }
        })
}

impl Case {
    fn decls(&self) -> String {
        let elem = match self.e {
            2 => "bf16",
            4 => "float",
            _ => "double",
        };
        let chunk = 16 / self.e;
        let (rows, cols) = (self.rows, self.cols);
        let head = format!(
            "dmem {elem} [{}][{}] A; {elem} [{rows}#A_0][{cols}#A_1] AT;",
            2 * rows,
            self.pitch
        );
        let smem = match self.layout {
            0 => format!("smem {elem} [{rows}][{cols}] S; {elem} [#S_0][#S_1] SV;"),
            1 => format!(
                "smem {elem} [{}][{}][8][{chunk}] S; {elem} [[#S_0][#S_2]][[#S_1][#S_3]] SV;",
                rows / 8,
                cols / chunk
            ),
            mode => {
                // Rows of the span, the partner the rows within 8 lines of 128 bytes.
                let chunks = 1u64 << (mode - 1);
                format!(
                    "smem {elem} [{}][[{}][{chunks}][{}]][[{chunks} ^ S_1_1][{chunk}]] S;
                     {elem} [[#S_1_0][#S_1_1][#S_1_2]][[#S_0][#S_2]] SV;",
                    cols / (chunks * chunk),
                    rows / 8,
                    8 / chunks
                )
            }
        };
        format!("{head} {smem}")
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Tiles of every shape in the layouts TMA writes are planned, and the plan's fill is
    /// the copy's, element by element; a box anywhere in the array decodes to
    /// coordinates whose offset is its start, is inside TMA's extents only where the tile
    /// is inside the array's rows, and is inside them wherever the tile is and starts at a
    /// multiple of 8 rows and of its width.
    #[test]
    fn tiles_in_tma_layouts_are_planned_and_filled_exactly(c in case(), at in 0u64..10_000) {
        let decls = c.decls();
        let plan = plan_of(&decls, "AT", "SV");
        let len = 2 * c.rows * c.pitch;
        let (row, col) = (at % (c.rows + 3), (at / 7) % c.pitch);
        let off = row * c.pitch + col;
        let x = plan.coordinates(off);
        let start: u64 = x.iter().zip(&plan.dims).map(|(x, d)| x * d.stride).sum();
        prop_assert_eq!(start, off);
        let inside = row + c.rows <= 2 * c.rows && col + c.cols <= c.pitch;
        let crossing = plan.crossing(off, len);
        if crossing.is_none() {
            prop_assert!(inside, "{:?} at [{}][{}]", plan, row, col);
        }
        if inside && row % 8 == 0 && col % c.cols == 0 {
            prop_assert_eq!(crossing, None, "{:?} at [{}][{}]", plan, row, col);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Whatever layouts the planner is given, a plan it returns fills as the copy does.
    #[test]
    fn every_plan_fills_as_the_copy(
        sizes in prop::collection::vec(1u64..5, 1..5),
        perm_seed in any::<u64>(),
        pad in prop::collection::vec(0u64..3, 4),
        e in prop_oneof![Just(2u64), Just(4)],
    ) {
        // A natural global array of the sizes (padded), the tile its dimensions permuted.
        let sizes: Vec<u64> = sizes.iter().map(|s| s * 2).collect();
        let r = sizes.len();
        let mut order: Vec<usize> = (0..r).collect();
        let mut seed = perm_seed;
        for i in (1..r).rev() {
            order.swap(i, (seed % (i as u64 + 1)) as usize);
            seed /= i as u64 + 1;
        }
        let elem = if e == 2 { "bf16" } else { "float" };
        let dims: Vec<String> = sizes.iter().zip(&pad).map(|(s, p)| format!("[{}]", s + p)).collect();
        let view: Vec<String> = order.iter().map(|&i| format!("[{}#A_{i}]", sizes[i])).collect();
        let smem: Vec<String> = order.iter().map(|&i| format!("[{}]", sizes[i])).collect();
        let decls = format!(
            "dmem {elem} {} A; {elem} {} AT; smem {elem} {} S;",
            dims.concat(), view.concat(), smem.concat()
        );
        let m = Module::parse(&decls).unwrap();
        if let Ok(plan) = tma::plan(&m, "AT", "S") {
            check_fill(&decls, "AT", "S", &plan);
        }
    }
}
