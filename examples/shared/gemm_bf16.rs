//! A tensor-core GEMM written in Parray's types, one subprogram (`gemm_tc`): `C = A B` for
//! an M x K `A` and K x N `B` of `bf16` or `f16` (its element parameter `E`) and an M x N
//! `C` of `f32`, each of any layout the tiles line up with (row-major, Fig 17's halves,
//! Fig 18's strips and blocks: only the types change), accumulated in `f32` by the
//! warpgroups' wgmma (SPEC.md 3.5, "MMA"). A block is two warpgroups (256 threads,
//! `[[2][[4][8][4]]]`) and computes 128 x 128 or 128 x 256 tiles of C, each warpgroup its
//! own 64 rows from its 64-row slice of the block's A stage and the whole B stage (B's
//! shared-memory and global traffic a flop half that of a block of one warpgroup), its
//! accumulator 64 or 128 floats a thread (the m64nNk16 fragment, 2.14, over the
//! warpgroup's digits). K goes in tiles of 64 through shared stages of 16 KiB of A and 16
//! or 32 KiB of B: 3 for 128 x 128 tiles (96 KiB; two blocks a multiprocessor, the kernel
//! declared for them, `#![min_blocks_per_sm(PER_SM)]`: at most 128 registers a thread), 4
//! for 128 x 256 (192 KiB of the 227 a block may have; one block). Their k16 steps are
//! pointer moves (3.5, "Alignment and the k-step"): A's of 8 x 8 core matrices (the
//! unswizzled K-major layout: a K-major 128B-swizzled tile's k-steps fall within its
//! atoms), B's MN-major as B is in global memory, 128B-swizzled (a k16 step is 16 rows of
//! its atoms, 2048 bytes). All 256 threads fill the stages by `#copy async` (`cp.async`) of
//! 16-byte vectors of 8 bf16, each thread's part of a tile a strided view of both sides
//! (B's swizzle one XOR a thread, taken by the part's start), and pipelined, one barrier
//! of the block a k-tile: each warpgroup's four m64nNk16 steps of k-tile kt are one group
//! (`#mma async`) left in flight while the next k-tile's barrier and copies run (`#mma
//! wait 1` completes k-tile kt - 1's), and the copies of k-tile kt + S - 2 refill the
//! stage k-tile kt - 2 read. The registers go to C by `#copy` through a view of C in the
//! accumulator's digits. The grid is fixed when the program is built (a block a tile for
//! the shapes built in; for sizes given at run time, as many blocks as the registers and
//! shared memory let each of an H200's 132 multiprocessors hold: 2 or 1), and its blocks
//! step through the tiles.
//!
//! A second subprogram, `gemm_ws`, computes the same product by warp-specialised roles
//! (SPEC 3.10, "The warp-specialised GEMM"): a producer warpgroup fills four stages of
//! 128 x 64 of A and 64 x 256 of B by TMA, on full and empty mbarriers, for two consumer
//! warpgroups' m64n256k16 wgmmas, which step through A's 128B-swizzled K-major rows
//! within their atoms; a persistent grid takes the tiles in groups of 16 rows. It is the
//! kernel that reaches cuBLAS (`--tile ws`; 4096³ and, with `--square 8192`, 8192³).
//!
//! On a GPU: 4096³ on both tiles, bf16 on row-major, halves, strips and blocks storage of
//! A, B and C and f16 row-major, beside cuBLAS (`cublasGemmEx`, bf16 or f16 in, f32
//! accumulate and out) in the same run, each checked against it and against an f64 product
//! at sampled elements; and TF32 (`gemm_tf32`, f32 read as tf32, B stored K-major) beside
//! cuBLAS's TF32 GEMM. Under the emulation the same at 256³, every element checked
//! against the f64 product. `--tile 128|256`, `--elem bf16|f16|tf32` and `--layout
//! rows|halves|strips|blocks` choose (`--tile ws` the warp-specialised kernels alone,
//! `--square 256|4096|8192` the square shape); `--m M --n N --k K` one row-major shape:
//! any shape for the warp-specialised kernels (their edge tiles guarded, K's tail read as
//! TMA's zeros; N a multiple of 8, and A's rows copied into rows padded to 8 elements
//! first where K is not (`ws256 + #copy A`); TF32 K a multiple of 4), whole tiles for
//! `gemm_tc` (M a multiple of 128, N of the tile's width, K of 64); its kernels made at
//! the first launch, the TMA maps planned at its sizes; `--source` prints the kernel (bf16
//! row-major at 4096³ or the shape given, of 128 x 128 tiles unless `--tile 256` or
//! `--tile ws`; the ws kernel on the storage `--layout` names, the TF32 one with `--elem
//! tf32`).

use crate::common;

use common::gemm::{self, relative_error};
use common::{cell, median_time, random_values};
use parray::gpu::cublas::{GemmElem, Math};
use parray::gpu::Timing;
use parray::prelude::*;
use parray::{bf16, f16, Array, DataType, Num, ViewOf};

/// The widths of the tiles of C a block computes (128 rows, 64 a warpgroup) and the k-tile.
const WIDTHS: [usize; 2] = [128, 256];
const TILE_ROWS: usize = 128;
const K_TILE: usize = 64;
const TILES_ARE: &str = "the tiles of C are 128 x 128 or 128 x 256 (--tile 128 or 256), or the warp-specialised kernel's 128 x 256 (--tile ws)";

/// The warp-specialised kernel's tile width at the fixed shapes and its largest grid (the
/// `GRIDWS` of its shapes: an H200's multiprocessors).
const WS_WIDTH: usize = 256;
const WS_BLOCKS: usize = 132;

/// The warp-specialised kernels' tile widths at a shape given at run time: gemm_ws's
/// (`TW` of 4, 2 and 1 atoms) and gemm_tf32's (`TQ` of 2 and 1).
const WS_WIDTHS: [usize; 3] = [256, 128, 64];
const TF32_WIDTHS: [usize; 2] = [256, 128];

/// gemm_ws's shared stages at a tile's width, its `S = 8 - P` of 16 + 8 P KiB.
fn ws_stages(cols: usize) -> usize {
    8 - cols / 64
}

/// The shared stages of a tile's width, the subprogram's `S = 2 + Q`.
fn stages(cols: usize) -> usize {
    2 + cols / 128
}

/// The blocks a multiprocessor holds at a tile's width, the subprogram's `PER_SM = 2 / Q`
/// (its `__launch_bounds__`): two of 96 KiB of stages and at most 128 registers a thread,
/// or one of 192 KiB.
fn blocks_per_sm(cols: usize) -> usize {
    256 / cols
}

subprog! {
    /// `dc = da * db` for `da` of the type `TA` (M x K of the element `E`, `bf16` or
    /// `half`), `db` of `TB` (K x N of `E`) and `dc` of `TC` (M x N f32), each of any
    /// layout, on tiles of C of 128 x 128 Q, Q = `dim(TQ_0)` (1 or 2), M a multiple of 128,
    /// N of 128 Q, K of 64, on `dim(TG_0)` blocks of two warpgroups, each making the tiles
    /// of C its number, plus the blocks', and so on.
    pub fn gemm_tc<E, TA, TB, TC, TG, TQ>(da, db, dc) -> parray::Result<()> {
        parray! {
            const M = dim(TA_0);
            const K = dim(TA_1);
            const N = dim(TB_1);
            const Q = dim(TQ_0);
            // The shared stages, 16 KiB of A and 16 Q KiB of B each: 3 (96 KiB) for 128 x
            // 128 tiles, two blocks a multiprocessor; 4 (192 KiB) for 128 x 256, one block.
            const S = 2 + Q;
            // The blocks a multiprocessor holds, which the kernel is declared for: of 128 x
            // 128 tiles two (2 x 96 KiB of its 228 KiB of shared memory, 2 x 256 threads of
            // its 64 Ki registers: at most 128 a thread, 64 of them the accumulator), of
            // 128 x 256 one (192 KiB, 128 accumulators a thread).
            const PER_SM = 2 / Q;
            // The tiles of C each block makes, at most.
            const ROUNDS = ceil((M / 128) * (N / (128 * Q)) / dim(TG_0));
            // Blocks of two warpgroups, w, each of t2 (the warp), t1, t0: the ISA's digits,
            // which the accumulator's type names (w it leaves out: each warpgroup holds its
            // own accumulator). Their number is fixed when the program is built, whatever
            // the sizes: a type naming a grid of run-time size is run-time sized, and a
            // fragment's sizes are numbers.
            cuda(E* a, E* b, float* c) [dim(TG_0)][[2][[4][8][4]]] G;
            // The accumulator m64nNk16, N = 128 Q: registers (v2, v1, t2, t1, t0, v0) seen
            // as m x n.
            rmem float [16*Q][2][#G_1_1_0][#G_1_1_1][#G_1_1_2][2] ACC_REGS;
            float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
            // S stages of A's 128 x 64 tile, of core matrices of 8 x 8 (m / 8, k / 8,
            // m % 8, k % 8): 128 contiguous bytes each; warpgroup w's 64 rows from m / 8 = 8 w.
            smem E [S][16][8][8][8] AS;
            // S of B's 64 x 128 Q tile, MN-major as it is in global memory, in atoms of
            // 64 n (128 bytes a row of k) whose 16-byte chunks are XORed with k % 8 (the
            // 128B swizzle): a k16 step is 16 whole rows, 2048 bytes, so it is a pointer
            // move. The atoms go in Q pairs, so that one of each pair is a dimension. Both
            // warpgroups read all of it.
            smem E [S][[Q][2]][[8][8]][[8 ^ BS_2_1][8]] BS;
            // A wgmma's operands: 64 rows and 16 k of a stage, the k-step s of warpgroup w
            // at `$AS[st][8 * w][2 * s][0][0]$` and `$BS[st][0][[2 * s][0]][[0][0]]$`.
            E [[8#AS_1][#AS_3]][[2#AS_2][#AS_4]] A_STEP;
            E [[2#BS_2_0][#BS_2_1]][[#BS_1][#BS_3]] B_STEP;
            // A by tiles: rows [tile][quarter][4 core rows][8], columns [k-tile][8 chunks][8].
            // A thread copies a 16-byte chunk of one row of each of its quarter's 4 core
            // rows: 8 consecutive threads fill one core matrix, 128 contiguous bytes of a
            // stage (no bank conflict), and a warp reads 64 contiguous bytes of each of 8 rows.
            dmem E [[M/128][4][4][8]#TA_0][[K/64][8][8]#TA_1] AL;
            E [#AL_0_2][#AL_1_2] A_PART;
            E [4#AS_1][#AS_4] AS_PART;
            // B by tiles: rows [k-tile][half][4][8], columns [tile][Q][2][8 chunks][8]. A
            // thread copies one chunk of one k % 8 and atom parity, in each pair of atoms and
            // each k / 8 of its half: the swizzle's XOR is then one value, taken once by the
            // part's start, and the part a strided view of a stage. 16 consecutive threads
            // read 256 contiguous bytes of a row of B, 8 of them fill a 128-byte row of an atom.
            dmem E [[K/64][2][4][8]#TB_0][[N/(128*Q)][Q][2][8][8]#TB_1] BL;
            E [#BL_1_1][#BL_0_2][#BL_1_4] B_PART;
            E [#BS_1_0][4#BS_2_0][#BS_3_1] BS_PART;
            // C by tiles in the accumulator's digits, rows [tile][w][t2][v1][t1] and columns
            // [tile][v2][t0][v0]; a thread's part (v2, v1, v0) is its registers in order.
            dmem float [[M/128][2][4][2][8]#TC_0][[N/(128*Q)][16*Q][4][2]#TC_1] CQ;
            float [#CQ_1_1][#CQ_0_3][#CQ_1_3] C_PART;
            rmem float [16*Q][2][2] ACC_PART;
        }
        detour!(G(da, db, dc) {
            #![min_blocks_per_sm(PER_SM)]
            let sa = AS::create();
            let sb = BS::create();
            let acc = ACC_REGS::create();
            // This thread's part of each k-tile (all 256 threads copy, half of what one
            // warpgroup's would): of A the quarter aq, rows 8 j + mr of its 4 core rows j,
            // chunk ac; of B the half kh, rows k = 8 (4 kh + j) + kr, atoms 2 q + bp, chunk bc.
            let t = $tid_1$;
            let w = $tid_1_0$;
            let mr = t % 8;
            let ac = t / 8 % 8;
            let aq = t / 64;
            let kr = t / 16 % 8;
            let kh = t / 128;
            let bp = t / 8 % 2;
            let bc = t % 8;
            let aw = $AS[0][4 * aq][ac][mr][0]$;
            let bw = $BS[0][[0][bp]][[4 * kh][kr]][[bc][0]]$;
            let k_tiles = $dim(AL_1_0)$;
            let cols = $dim(BL_1_0)$;
            let tiles = $dim(AL_0_0)$ * cols;
            let blocks = $dim(TG_0)$;
            for round in 0..ROUNDS {
                // A block past the last tile runs no k-tiles and stores nothing (a group
                // of `#mma async` issued under an `if` would be completed under it, but a
                // loop may be empty); the remainder keeps its tile in C for the prover.
                let tile = (round * blocks + $tid_0$) % tiles;
                let stored = round * blocks + $tid_0$ < tiles;
                let first = if stored { 0 } else { k_tiles };
                let bm = tile / cols;
                let bn = tile % cols;
                #[unroll]
                for v in 0..$size(ACC_PART)$ {
                    acc[v] = 0.0f32;
                }
                let pa = a + $AL[[bm][aq][0][mr]][[0][ac][0]]$;
                let pb = b + $BL[[0][kh][0][kr]][[bn][0][bp][bc][0]]$;
                // The first S - 2 k-tiles in flight, into stages 0..S - 2 (fewer where K
                // has fewer, none for a block without a tile).
                #[unroll]
                for i in 0..S - 2 {
                    let kt = first + i;
                    if kt < k_tiles {
                        let st = kt % S;
                        #copy async A_PART(pa + $AL_1_0[kt]$) to AS_PART(sa + aw + $AS_0[st]$);
                        #copy async B_PART(pb + $BL_0_0[kt]$) to BS_PART(sb + bw + $BS_0[st]$);
                    }
                }
                // Stages, k-tile kt's at kt % S: kt - 1's wgmmas may still read theirs, kt's
                // are issued from theirs, kt + 1 .. kt + S - 3 are landing, and kt + S - 2
                // refills the one kt - 2 read.
                for kt in first..k_tiles {
                    let st = kt % S;
                    // This thread's copies of k-tile kt have landed: the k-tiles after it
                    // already issued (S - 3 at most, two groups each) may fly on.
                    if S > 3 && kt + 1 < k_tiles {
                        #wait 2;
                    } else {
                        #wait 0;
                    }
                    // Every thread's copies of k-tile kt are visible; and both warpgroups
                    // are past their `#mma wait 1` of k-tile kt - 1, which completed
                    // k-tile kt - 2's wgmmas: its stage, (kt + S - 2) % S, is read by
                    // nothing now, and k-tile kt + S - 2 refills it while the tensor core
                    // works on kt - 1 and kt.
                    #sync;
                    let next = kt + S - 2;
                    if next < k_tiles {
                        let sn = next % S;
                        #copy async A_PART(pa + $AL_1_0[next]$) to AS_PART(sa + aw + $AS_0[sn]$);
                        #copy async B_PART(pb + $BL_0_0[next]$) to BS_PART(sb + bw + $BS_0[sn]$);
                    }
                    // Each warpgroup's four k16 steps, its 64 rows of A by all of B: one
                    // group, left in flight until the next k-tile's is issued (the wait
                    // completes k-tile kt - 1's).
                    #[unroll]
                    for s in 0..4 {
                        #mma async ACC(acc) += A_STEP(sa + $AS[st][8 * w][2 * s][0][0]$) * B_STEP(sb + $BS[st][0][[2 * s][0]][[0][0]]$);
                    }
                    #mma wait 1 ACC(acc);
                }
                // The last k-tile's wgmmas, before its registers are read.
                #mma wait 0 ACC(acc);
                if stored {
                    let pc = c + $CQ[[bm][w][$tid_1_1_0$][0][$tid_1_1_1$]][[bn][0][$tid_1_1_2$][0]]$;
                    #copy ACC_PART(acc) to C_PART(pc);
                }
                // The next tile's first copies refill the stages the last wgmmas read
                // (both warpgroups are past their `#mma wait 0`).
                #sync;
            }
        })
    }
}

subprog! {
    /// `dc = da * db` as [`gemm_tc`] computes it, by warp-specialised roles: a block is
    /// three warpgroups (384 threads, `[[3][[4][8][4]]]`), the last the producer (one thread
    /// issues TMA copies of whole k-tiles into `S` shared stages, its registers given up by
    /// `#setmaxnreg dec`), the first two the consumers (each 64 rows of the block's 128 x
    /// 64 P tile of C, P = `dim(TW_0)` (1, 2 or 4: the width in B's atoms of 64 columns),
    /// m64n(64 P)k16 wgmmas straight from the stages, 32 P accumulators a thread,
    /// `#setmaxnreg inc`). A stage is a (full, empty) pair of mbarriers: the producer waits
    /// for a stage's release, then copies A's 128 x 64 and B's 64 x 64 P into it,
    /// completing on its full barrier; a consumer waits for it full, issues its four k16
    /// steps, and releases the stage its previous k-tile read once `#mma wait 1` has
    /// completed that k-tile's group. The grid is persistent (`dim(TG_0)`
    /// blocks step through the tiles), and the stage and its phase run on across tiles, so
    /// the producer fills the next tile's stages while the consumers store this one's C. A,
    /// B and C of any layout the tiles line up with, of sizes literal or given at run time
    /// (TMA's maps are planned from the types when the body is built, or when its kernel is
    /// made at the bound sizes). Any M, N, K: the tiles are pieces that cover A, B and C
    /// past their ends (SPEC 2.4), so an edge tile's TMA box reads zeros past the data (K's
    /// tail adds nothing), B's atoms wholly past N are not copied, and C's store is guarded;
    /// TMA's strides need rows of whole 16-byte steps (K and N multiples of 8).
    pub fn gemm_ws<E, TA, TB, TC, TG, TW>(da, db, dc) -> parray::Result<()> {
        parray! {
            const M = dim(TA_0);
            const K = dim(TA_1);
            const N = dim(TB_1);
            // The tile's width in B's atoms of 64 columns: 1, 2 or 4.
            const P = dim(TW_0);
            // Stages of 16 + 8 P KiB, at most 192 KiB of the 227 a block may have: four of
            // 128 x 256 tiles, six of 128 x 128, seven of 128 x 64.
            const S = 8 - P;
            const ROUNDS = ceil(ceil(M / 128) * ceil(N / (64 * P)) / dim(TG_0));
            // The tiles go in groups of GROUP rows of tiles, down each column of a group
            // before the next (Triton's grouped order): the 132 tiles in flight then read
            // 16 rows of A's tiles and 8 or 9 columns of B's, against 4 rows and all 32
            // columns row by row at 8192³, so that more of each k-tile is read from L2.
            const GROUP = 16;
            // The producer warpgroup and two consumers; t2, t1, t0 of each as in gemm_tc.
            cuda(E* a, E* b, float* c) [dim(TG_0)][[3][[4][8][4]]] G;
            rmem float [8*P][2][#G_1_1_0][#G_1_1_1][#G_1_1_2][2] ACC_REGS;
            float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
            // A's stages as TMA writes them: 128 rows (m / 8, m % 8) of 64 k, K-major in the
            // 128-byte swizzle (the 16-byte chunk ^ m % 8). Consumer w's k16 step s is its
            // 64 rows' first 16 columns at `$AS[st][[8 * w][0]][[0][0]]$ + 16 * s`, a step
            // within the atoms' first row (SPEC 3.5, "Alignment and the k-step").
            smem E [S][[16][8]][[8 ^ AS_1_1][8]] AS;
            E [#AS_1][#AS_2] A_STAGE;
            E [[8#AS_1_0][#AS_1_1]][[2#AS_2_0][#AS_2_1]] A_STEP;
            // B's: P MN-major atoms of 64 n, each 64 rows of k in the 128-byte swizzle,
            // a k16 step 16 whole rows of each (`$BS[st][0][[2 * s][0]][[0][0]]$`).
            smem E [S][P][[8][8]][[8 ^ BS_2_1][8]] BS;
            E [#BS_2][#BS_3] B_ATOM_STAGE;
            E [[2#BS_2_0][#BS_2_1]][[#BS_1][#BS_3]] B_STEP;
            smem mbarrier [S] FULL;
            smem mbarrier [S] EMPTY;
            // A's k-tiles (128 x 64) and B's (64 x 64 P: P atoms of 64 k x 64 n, a TMA
            // copy each, so that a row of B need not be a multiple of 64 P), their pieces
            // covering the matrices past their ends (SPEC 2.4): an edge tile's box reads
            // TMA's zeros past the data, so the k-tail adds nothing to C.
            dmem E [[ceil(M/128)][128]#TA_0][[ceil(K/64)][64]#TA_1] AT;
            E [#AT_0_1][#AT_1_1] A_TILE;
            dmem E [[ceil(K/64)][64]#TB_0][[ceil(N/(64*P))][P][64]#TB_1] BT;
            E [#BT_0_1][#BT_1_2] B_ATOM;
            // C in the accumulator's digits, as gemm_tc's; the edge
            // tiles' stores are guarded.
            dmem float [[ceil(M/128)][2][4][2][8]#TC_0][[ceil(N/(64*P))][8*P][4][2]#TC_1] CQ;
            float [#CQ_1_1][#CQ_0_3][#CQ_1_3] C_PART;
            rmem float [8*P][2][2] ACC_PART;
        }
        detour!(G(da, db, dc) {
            #![min_blocks_per_sm(1)]
            let sa = AS::create();
            let sb = BS::create();
            let full = FULL::create();
            let empty = EMPTY::create();
            let w = $tid_1_0$;
            let lane = $tid_1_1$;
            let k_tiles = $dim(AT_1_0)$;
            let cols = $dim(BT_1_0)$;
            let row_tiles = $dim(AT_0_0)$;
            let tiles = row_tiles * cols;
            let blocks = $dim(TG_0)$;
            let m = $dim(TC_0)$;
            let n = $dim(TC_1)$;
            // Each stage's full barrier completes with the producer's 1 + P arrivals (A's
            // copy and B's P atoms, each with its bytes, or an atom past N's end without
            // them), its empty barrier with one release from each consumer.
            if $tid_1$ == 0 {
                for i in 0..S {
                    #mbarrier init FULL(full + i) arrivals 1 + P;
                    #mbarrier init EMPTY(empty + i) arrivals 2;
                }
            }
            #sync;
            // Warpgroups 0 and 1 consume (their rows of the tile: w), 2 produces.
            if w < 2 {
                #setmaxnreg inc 232;
                let acc = ACC_REGS::create();
                for round in 0..ROUNDS {
                    // A block past the last tile runs no k-tiles and stores nothing (a group
                    // of `#mma async` completes where it was issued, so not under an `if`).
                    let tile = (round * blocks + $tid_0$) % tiles;
                    let stored = round * blocks + $tid_0$ < tiles;
                    let last = if stored { k_tiles } else { 0 };
                    let group = tile / (GROUP * cols);
                    let height = (row_tiles - GROUP * group).min(GROUP);
                    // The tile's row and column, each below its count as the prover sees
                    // it too (the grouped order's digits bound them only by the group's
                    // rows), so that C's guarded store is proved inside C.
                    let bm = (GROUP * group + tile % (GROUP * cols) % height).min(row_tiles - 1);
                    let bn = (tile % (GROUP * cols) / height).min(cols - 1);
                    #[unroll]
                    for v in 0..$size(ACC_PART)$ {
                        acc[v] = 0.0f32;
                    }
                    for kt in 0..last {
                        let it = round * k_tiles + kt;
                        let st = it % S;
                        #wait FULL(full + st) parity (it / S) % 2;
                        #[unroll]
                        for s in 0..4 {
                            #mma async ACC(acc) += A_STEP(sa + $AS[st][[8 * w][0]][[0][0]]$ + 16 * s) * B_STEP(sb + $BS[st][0][[2 * s][0]][[0][0]]$);
                        }
                        // k-tile kt - 1's group is complete: its stage is free.
                        #mma wait 1 ACC(acc);
                        if kt > 0 && lane == 0 {
                            #mbarrier arrive EMPTY(empty + (it + S - 1) % S);
                        }
                    }
                    #mma wait 0 ACC(acc);
                    if stored {
                        if lane == 0 {
                            #mbarrier arrive EMPTY(empty + (round * k_tiles + last - 1) % S);
                        }
                        let pc = c + $CQ[[bm][w][$tid_1_1_0$][0][$tid_1_1_1$]][[bn][0][$tid_1_1_2$][0]]$;
                        let row = 128 * bm + 64 * w + 16 * $tid_1_1_0$ + $tid_1_1_1$;
                        let col = 64 * P * bn + 2 * $tid_1_1_2$;
                        #copy ACC_PART(acc) to C_PART(pc) if |x, y, z| row + 8 * y < m && col + 8 * x + z < n;
                    }
                }
            } else {
                #setmaxnreg dec 40;
                if lane == 0 {
                    for round in 0..ROUNDS {
                        let tile = round * blocks + $tid_0$;
                        if tile < tiles {
                            let group = tile / (GROUP * cols);
                            let height = (row_tiles - GROUP * group).min(GROUP);
                            let bm = GROUP * group + tile % (GROUP * cols) % height;
                            let bn = tile % (GROUP * cols) / height;
                            for kt in 0..k_tiles {
                                // The k-tiles this block has run, the stage's and its phase's.
                                let it = round * k_tiles + kt;
                                let st = it % S;
                                #wait EMPTY(empty + st) parity (it / S + 1) % 2;
                                #copy async A_TILE(a + $AT[[bm][0]][[kt][0]]$) to A_STAGE(sa + $AS_0[st]$) on FULL(full + st);
                                // An atom wholly past N's end is not copied (its box would
                                // start past the tensor): the stage keeps what it held, which
                                // reaches only columns of C that are not stored.
                                for atom in 0..P {
                                    if 64 * P * bn + 64 * atom < n {
                                        #copy async B_ATOM(b + $BT[[kt][0]][[bn][atom][0]]$) to B_ATOM_STAGE(sb + $BS[st][atom][[0][0]][[0][0]]$) on FULL(full + st);
                                    } else {
                                        #mbarrier arrive FULL(full + st);
                                    }
                                }
                            }
                        }
                    }
                }
            }
        })
    }
}

subprog! {
    /// `dc = da * db` in TF32 (f32 in, each input read as tf32 by the tensor core, f32
    /// accumulate) by [`gemm_ws`]'s roles, stages, barriers and persistent grid, for `da` of
    /// `TA` (M x K f32, K-major: each row's k contiguous), `db` of `TB` (K x N f32,
    /// K-major: B stored N x K, each column's k contiguous) and `dc` of `TC` (M x N f32).
    /// A tf32 wgmma reads both operands K-major (the ISA's transpose is for 16-bit
    /// elements alone), so B's stages are A's: n rows of 128 bytes, 32 k in the 128-byte
    /// swizzle, and a k8 step is 32 bytes along them (`+ 8 * s`). K goes in k-tiles of 32
    /// (128 bytes a row): tiles of C are 128 x 128 Q as gemm_ws's (Q = `dim(TQ_0)`), a
    /// stage 128 x 32 of A and 128 Q x 32 of B (16 + 16 Q KiB, `S` of them as gemm_ws's);
    /// any M, N, K as gemm_ws, K a multiple of 4 (rows of 16-byte steps).
    pub fn gemm_tf32<TA, TB, TC, TG, TQ>(da, db, dc) -> parray::Result<()> {
        parray! {
            const M = dim(TA_0);
            const K = dim(TA_1);
            const N = dim(TB_1);
            const Q = dim(TQ_0);
            const S = 8 - 2 * Q;
            const ROUNDS = ceil(ceil(M / 128) * ceil(N / (128 * Q)) / dim(TG_0));
            const GROUP = 16;
            cuda(float* a, float* b, float* c) [dim(TG_0)][[3][[4][8][4]]] G;
            rmem float [16*Q][2][#G_1_1_0][#G_1_1_1][#G_1_1_2][2] ACC_REGS;
            float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
            // A's stages: 128 rows (m / 8, m % 8) of 32 k in the 128-byte swizzle (the
            // chunk of 4 floats ^ m % 8); consumer w's k8 step s at
            // `$AS[st][[8 * w][0]][[0][0]]$ + 8 * s`.
            smem float [S][[16][8]][[8 ^ AS_1_1][4]] AS;
            float [#AS_1][#AS_2] A_STAGE;
            float [[8#AS_1_0][#AS_1_1]][[2#AS_2_0][#AS_2_1]] A_STEP;
            // B's: 128 Q n of 32 k, as A's; a step the first 8 k of every n, as k x n.
            smem float [S][[16*Q][8]][[8 ^ BS_1_1][4]] BS;
            float [#BS_1][#BS_2] B_STAGE;
            float [[2#BS_2_0][#BS_2_1]][#BS_1] B_STEP;
            smem mbarrier [S] FULL;
            smem mbarrier [S] EMPTY;
            // A's k-tiles (128 x 32) and B's (128 Q n x 32 k, in the stage's order).
            dmem float [[ceil(M/128)][128]#TA_0][[ceil(K/32)][32]#TA_1] AT;
            float [#AT_0_1][#AT_1_1] A_TILE;
            dmem float [[ceil(K/32)][32]#TB_0][[ceil(N/(128*Q))][128*Q]#TB_1] BT;
            float [#BT_1_1][#BT_0_1] B_TILE;
            dmem float [[ceil(M/128)][2][4][2][8]#TC_0][[ceil(N/(128*Q))][16*Q][4][2]#TC_1] CQ;
            float [#CQ_1_1][#CQ_0_3][#CQ_1_3] C_PART;
            rmem float [16*Q][2][2] ACC_PART;
        }
        detour!(G(da, db, dc) {
            #![min_blocks_per_sm(1)]
            let sa = AS::create();
            let sb = BS::create();
            let full = FULL::create();
            let empty = EMPTY::create();
            let w = $tid_1_0$;
            let lane = $tid_1_1$;
            let k_tiles = $dim(AT_1_0)$;
            let cols = $dim(BT_1_0)$;
            let row_tiles = $dim(AT_0_0)$;
            let tiles = row_tiles * cols;
            let blocks = $dim(TG_0)$;
            let m = $dim(TC_0)$;
            let n = $dim(TC_1)$;
            if $tid_1$ == 0 {
                for i in 0..S {
                    #mbarrier init FULL(full + i) arrivals 2;
                    #mbarrier init EMPTY(empty + i) arrivals 2;
                }
            }
            #sync;
            if w < 2 {
                #setmaxnreg inc 232;
                let acc = ACC_REGS::create();
                for round in 0..ROUNDS {
                    let tile = (round * blocks + $tid_0$) % tiles;
                    let stored = round * blocks + $tid_0$ < tiles;
                    let last = if stored { k_tiles } else { 0 };
                    let group = tile / (GROUP * cols);
                    let height = (row_tiles - GROUP * group).min(GROUP);
                    // The tile's row and column, each below its count as the prover sees
                    // it too (the grouped order's digits bound them only by the group's
                    // rows), so that C's guarded store is proved inside C.
                    let bm = (GROUP * group + tile % (GROUP * cols) % height).min(row_tiles - 1);
                    let bn = (tile % (GROUP * cols) / height).min(cols - 1);
                    #[unroll]
                    for v in 0..$size(ACC_PART)$ {
                        acc[v] = 0.0f32;
                    }
                    for kt in 0..last {
                        let it = round * k_tiles + kt;
                        let st = it % S;
                        #wait FULL(full + st) parity (it / S) % 2;
                        #[unroll]
                        for s in 0..4 {
                            #mma async ACC(acc) += A_STEP(sa + $AS[st][[8 * w][0]][[0][0]]$ + 8 * s) * B_STEP(sb + $BS[st][[0][0]][[0][0]]$ + 8 * s);
                        }
                        #mma wait 1 ACC(acc);
                        if kt > 0 && lane == 0 {
                            #mbarrier arrive EMPTY(empty + (it + S - 1) % S);
                        }
                    }
                    #mma wait 0 ACC(acc);
                    if stored {
                        if lane == 0 {
                            #mbarrier arrive EMPTY(empty + (round * k_tiles + last - 1) % S);
                        }
                        let pc = c + $CQ[[bm][w][$tid_1_1_0$][0][$tid_1_1_1$]][[bn][0][$tid_1_1_2$][0]]$;
                        let row = 128 * bm + 64 * w + 16 * $tid_1_1_0$ + $tid_1_1_1$;
                        let col = 128 * Q * bn + 2 * $tid_1_1_2$;
                        #copy ACC_PART(acc) to C_PART(pc) if |x, y, z| row + 8 * y < m && col + 8 * x + z < n;
                    }
                }
            } else {
                #setmaxnreg dec 40;
                if lane == 0 {
                    for round in 0..ROUNDS {
                        let tile = round * blocks + $tid_0$;
                        if tile < tiles {
                            let group = tile / (GROUP * cols);
                            let height = (row_tiles - GROUP * group).min(GROUP);
                            let bm = GROUP * group + tile % (GROUP * cols) % height;
                            let bn = tile % (GROUP * cols) / height;
                            for kt in 0..k_tiles {
                                let it = round * k_tiles + kt;
                                let st = it % S;
                                #wait EMPTY(empty + st) parity (it / S + 1) % 2;
                                #copy async A_TILE(a + $AT[[bm][0]][[kt][0]]$) to A_STAGE(sa + $AS_0[st]$) on FULL(full + st);
                                #copy async B_TILE(b + $BT[[kt][0]][[bn][0]]$) to B_STAGE(sb + $BS_0[st]$) on FULL(full + st);
                            }
                        }
                    }
                }
            }
        })
    }
}

/// One measured product.
pub struct Row {
    pub kernel: String,
    /// The element of A and B: `bf16` or `f16`.
    pub elem: &'static str,
    pub layout: &'static str,
    pub shape: Shape,
    pub time: Timing,
    /// The first launch's time, which makes the kernel (`None` for cuBLAS).
    pub first: Option<Timing>,
    /// The check against the reference: its description and whether it passed (`None`
    /// for the reference itself).
    pub check: Option<(String, bool)>,
}

impl Row {
    fn tflops(&self) -> f64 {
        let (m, n, k) = self.shape;
        2.0 * m as f64 * n as f64 * k as f64 / self.time.seconds() / 1e12
    }

    fn ok(&self) -> bool {
        self.check.as_ref().is_none_or(|c| c.1)
    }

    /// The cuBLAS row this one is measured beside: of its shape and element.
    fn reference<'r>(&self, rows: &'r [Row]) -> Option<&'r Row> {
        rows.iter()
            .find(|r| r.check.is_none() && r.shape == self.shape && r.elem == self.elem)
    }
}

/// The element of A and B: what the inputs are made of and checked in.
pub trait Elem: Num + GemmElem + parray::Element {
    const NAME: &'static str;
    /// The k of one wgmma (32 bytes of a row of A).
    const K_STEP: usize = 16;
    /// How cuBLAS computes the reference.
    const MATH: Math = Math::F32;
    /// The relative error of a product of two inputs as the tensor core reads them: 0
    /// for 16-bit inputs (exact), 2^-9 + 2^-20 for tf32 (each input's 13 low bits
    /// dropped, a relative error below 2^-10).
    const INPUT_ERROR: f64 = 0.0;
    /// The relative Frobenius difference from cuBLAS's product allowed: 1e-4 where both
    /// multiply the inputs exactly; 2e-3 for tf32, where cuBLAS may round the inputs to
    /// tf32 where the tensor core truncates them (a difference of about 2^-11 a product).
    const AGREEMENT: f64 = 1e-4;
}

impl Elem for bf16 {
    const NAME: &'static str = "bf16";
}

impl Elem for f16 {
    const NAME: &'static str = "f16";
}

impl Elem for f32 {
    const NAME: &'static str = "tf32";
    const K_STEP: usize = 8;
    const MATH: Math = Math::Tf32;
    const INPUT_ERROR: f64 = 1.0 / 512.0 + 1.0 / 1_048_576.0;
    const AGREEMENT: f64 = 2e-3;
}

/// Random inputs of one shape (row-major, values in [-1, 1) rounded to `E`) and what
/// every product of them is checked against: cuBLAS's C on a GPU (timed, its row kept),
/// and the f64 product.
pub struct Case<E> {
    shape: Shape,
    a: Vec<E>,
    b: Vec<E>,
    /// cuBLAS's C, on a GPU.
    theirs: Option<Vec<f64>>,
    repeats: usize,
}

impl<E: Elem> Case<E> {
    /// The inputs, and on a GPU cuBLAS's product of them on the row-major arrays `DA`,
    /// `DB`, `DC` (its row pushed to `rows`).
    pub fn new<DA, DB, DC>(
        shape: Shape,
        repeats: usize,
        rows: &mut Vec<Row>,
    ) -> parray::Result<Self>
    where
        DA: DataType<Elem = E>,
        DB: DataType<Elem = E>,
        DC: DataType<Elem = f32>,
    {
        let (m, n, k) = shape;
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |d| d.as_nanos() as u64);
        let round = |v: Vec<f32>| v.into_iter().map(E::from_f32).collect::<Vec<_>>();
        let (a, b) = (
            round(random_values(m * k, seed)),
            round(random_values(k * n, seed + 1)),
        );
        let mut case = Case {
            shape,
            a,
            b,
            theirs: None,
            repeats,
        };
        if parray::gpu::backend()? == parray::gpu::Backend::Cuda {
            let (mut da, mut db, mut dc) = (
                Array::<DA>::new()?,
                Array::<DB>::new()?,
                Array::<DC>::new()?,
            );
            da.copy_from_slice(&case.a)?;
            db.copy_from_slice(&case.b)?;
            let time = median_time(repeats, true, || {
                parray::gpu::cublas::gemm(&da, &db, &mut dc, E::MATH)
            })?;
            rows.push(Row {
                kernel: "cuBLAS".into(),
                elem: E::NAME,
                layout: "row-major",
                shape,
                time,
                first: None,
                check: None,
            });
            case.theirs = Some(dc.to_vec()?.into_iter().map(f64::from).collect());
        }
        Ok(case)
    }

    /// Stores the inputs in the layouts `VA`, `VB` (views of the storages `SA`, `SB`; `HA`,
    /// `HB`, `HC` the row-major host types), runs `multiply` (its first launch, which makes
    /// the kernel, apart; then timed), reads C back through `VC` and checks it.
    pub fn run<HA, HB, HC, VA, SA, VB, SB, VC, SC>(
        &self,
        kernel: impl Into<String>,
        layout: &'static str,
        mut multiply: impl FnMut(&Array<SA>, &Array<SB>, &mut Array<SC>) -> parray::Result<()>,
    ) -> parray::Result<Row>
    where
        HA: DataType<Elem = E>,
        HB: DataType<Elem = E>,
        HC: DataType<Elem = f32>,
        VA: ViewOf<SA> + DataType<Elem = E>,
        SA: DataType<Elem = E>,
        VB: ViewOf<SB> + DataType<Elem = E>,
        SB: DataType<Elem = E>,
        VC: ViewOf<SC> + DataType<Elem = f32>,
        SC: DataType<Elem = f32>,
    {
        let (m, n, _) = self.shape;
        let (a, b, mut c) =
            gemm::store_operands::<E, HA, HB, VA, SA, VB, SB, SC>(&self.a, &self.b)?;
        let first = parray::gpu::time_ms(|| multiply(&a, &b, &mut c))?;
        let time = median_time(self.repeats, true, || multiply(&a, &b, &mut c))?;
        let hc = gemm::read_product::<HC, VC, SC>(&c)?;
        let ours = hc.as_slice()?;
        let check = match &self.theirs {
            // Against cuBLAS (the relative Frobenius error) and the f64 product at 4096
            // sampled elements.
            Some(theirs) => {
                let frobenius = relative_error(ours, theirs);
                let sample = (0..4096).map(|s: usize| ((s * 7919) % m, (s * 104_729 + s / 64) % n));
                let worst = self.worst_error(ours, sample);
                let ok = frobenius <= E::AGREEMENT && worst <= 1.0;
                (
                    format!("{frobenius:.1e} vs cuBLAS; sampled error {worst:.1e} of the bound"),
                    ok,
                )
            }
            None => {
                let all = (0..m).flat_map(|i| (0..n).map(move |j| (i, j)));
                let worst = self.worst_error(ours, all);
                (
                    format!("error {worst:.1e} of the bound vs f64 CPU"),
                    worst <= 1.0,
                )
            }
        };
        Ok(Row {
            kernel: kernel.into(),
            elem: E::NAME,
            layout,
            shape: self.shape,
            time,
            first: Some(first),
            check: Some(check),
        })
    }

    /// Element (i, j) of the exact product, and sum_k |a b| (the scale of its error).
    fn exact(&self, (i, j): (usize, usize)) -> (f64, f64) {
        let (_, n, k) = self.shape;
        (0..k).fold((0.0, 0.0), |(sum, scale), p| {
            let x = self.a[i * k + p].to_f64() * self.b[p * n + j].to_f64();
            (sum + x, scale + x.abs())
        })
    }

    /// The worst ratio of |c - exact| to its bound over the elements `at`: each of the
    /// K / K_STEP wgmmas errs by at most 2^-16 (|C| + sum |a b|) (SPEC 3.5), |C| at most
    /// the sum so far, so the whole by 2^-16 (K / K_STEP) sum_k |a b|, plus the inputs'
    /// reading (`INPUT_ERROR` sum_k |a b|). At most 1 is a pass.
    fn worst_error(&self, got: &[f32], at: impl Iterator<Item = (usize, usize)>) -> f64 {
        let (_, n, k) = self.shape;
        let steps = (k / E::K_STEP) as f64;
        at.map(|(i, j)| {
            let (want, scale) = self.exact((i, j));
            let err = (f64::from(got[i * n + j]) - want).abs();
            let bound = (2f64.powi(-16) * steps + E::INPUT_ERROR) * scale;
            if err.is_nan() {
                f64::INFINITY
            } else {
                err / bound.max(f64::MIN_POSITIVE)
            }
        })
        .fold(0.0, f64::max)
    }
}

/// What to run: the tiles (`--tile 128|256`), the elements (`--elem bf16|f16`) and the
/// layouts (`--layout rows|halves|strips|blocks`), each all where not given.
pub struct Choice {
    widths: Vec<usize>,
    /// The warp-specialised kernel (`gemm_ws`, `--tile ws`; bf16 row-major).
    ws: bool,
    elems: Vec<&'static str>,
    layouts: Vec<&'static str>,
}

impl Choice {
    fn wants(&self, width: usize, elem: &str, layout: &str) -> bool {
        self.widths.contains(&width) && self.elems.contains(&elem) && self.layouts.contains(&layout)
    }

    fn wants_ws(&self, elem: &str, layout: &str) -> bool {
        self.ws && self.elems.contains(&elem) && self.layouts.contains(&layout)
    }
}

/// The warp-specialised kernels' tile width for M x N among `widths`, the plan a shape
/// given at run time runs by: the width at which a multiprocessor reads the fewest bytes.
/// A k-tile of a 128 x w tile is 128 x 64 of A and 64 x w of B, (128 + w) 128 bytes (in
/// TF32's k-tiles of 32 floats too), and a multiprocessor makes ceil(tiles / 132) tiles:
/// on an H200 each reads its k-tiles at about 40 bytes a cycle whatever the tile, more
/// slowly than its tensor cores use them (SPEC.md 3.10, "The width a shape runs at").
/// Ties go to the wider tile, whose blocks read less of L2 in all.
fn ws_width(m: usize, n: usize, widths: &[usize]) -> usize {
    let read =
        |w: usize| (m.div_ceil(TILE_ROWS) * n.div_ceil(w)).div_ceil(WS_BLOCKS) * (TILE_ROWS + w);
    widths
        .iter()
        .copied()
        .min_by_key(|&w| (read(w), std::cmp::Reverse(w)))
        .unwrap_or(WS_WIDTH)
}

/// The label of a warp-specialised row of tiles `width` wide at `shape` (A copied into
/// padded rows first where `copied`), `*` on the width [`ws_width`] plans among `widths`.
fn ws_label(width: usize, (m, n, _): Shape, copied: bool, widths: &[usize]) -> String {
    let planned = width == ws_width(m, n, widths);
    match (copied, planned) {
        (false, false) => format!("parray ws {width}"),
        (false, true) => format!("parray ws {width}*"),
        (true, false) => format!("ws{width} + #copy A"),
        (true, true) => format!("ws{width}*+#copy A"),
    }
}

/// The TF32 kernel's storage: A row-major, B K-major (stored N x K).
const TF32_LAYOUT: &str = "rows, B K-major";

/// The layouts (the names `--layout` takes, and as the table prints them).
const LAYOUTS: [(&str, &str); 4] = [
    ("rows", "row-major"),
    ("halves", "halves (Fig 17)"),
    ("strips", "strips (Fig 18a)"),
    ("blocks", "blocks (Fig 18b)"),
];

/// The products of the subprogram on element `$e` (host type `$h`): for each
/// tile (its grid, `Q`, name and width), each layout (the views and storages
/// of A and B, and of C, and its name) that `$want` asks for.
macro_rules! products {
    ($case:ident, $rows:ident, $want:ident, $e:ident, $h:ident, [$(($grid:ident, $q:ident, $tile:expr, $width:literal)),*], $layouts:tt) => {
        $( products!(@tile $case, $rows, $want, $e, $h, $grid, $q, $tile, $width, $layouts); )*
    };
    (@tile $case:ident, $rows:ident, $want:ident, $e:ident, $h:ident, $grid:ident, $q:ident, $tile:expr, $width:literal, [$(($v:ident, $s:ident, $vc:ident, $sc:ident, $layout:expr)),*]) => {
        $(
            if $want($width, $layout) {
                $rows.push($case.run::<$h, $h, HC, $v, $s, $v, $s, $vc, $sc>($tile, $layout, |a, b, c| {
                    gemm_tc!(<$e, $v, $v, $vc, $grid, $q>(a, b, c))
                })?);
            }
        )*
    };
}

/// The warp-specialised subprogram's products on element `$e` (host type `$h`), on the
/// persistent grid `$grid`, for each layout that `$want` asks for.
macro_rules! products_ws {
    ($case:ident, $rows:ident, $want:ident, $e:ident, $h:ident, $grid:ident, [$(($v:ident, $s:ident, $vc:ident, $sc:ident, $layout:expr)),*]) => {
        $(
            if $want($layout) {
                $rows.push($case.run::<$h, $h, HC, $v, $s, $v, $s, $vc, $sc>("parray ws", $layout, |a, b, c| {
                    gemm_ws!(<$e, $v, $v, $vc, $grid, W4>(a, b, c))
                })?);
            }
        )*
    };
}

/// The subprogram on the storages of a square N x N x N product, each tile, layout and
/// element that `choice` wants (bf16 on the four layouts, f16 row-major), beside cuBLAS
/// (bf16 and f16) on a GPU: a block a tile of C.
macro_rules! square {
    ($module:ident, $n:literal, $ws_blocks:literal) => {
        #[allow(dead_code)] // each size declares what any may use
        pub mod $module {
            use super::*;

            // A's and B's storages in bf16 (one set for both: the product is square).
            common::gemm::square_layouts!(bf16, $n);

            parray! {
                // C's, in f32.
                pub paged float [$n][$n] HC;
                pub dmem float [$n][$n] C_ROWS;
                pub dmem float [2][$n][$n/2] C_HALVES_STORE;
                pub float [#C_HALVES_STORE_1][[#C_HALVES_STORE_0][#C_HALVES_STORE_2]] C_HALVES;
                pub dmem float [4][$n][$n/4] C_STRIPS_STORE;
                pub float [#C_STRIPS_STORE_1][[#C_STRIPS_STORE_0][#C_STRIPS_STORE_2]] C_STRIPS;
                pub dmem float [2][2][$n/2][$n/2] C_BLOCKS_STORE;
                pub float [[#C_BLOCKS_STORE_0][#C_BLOCKS_STORE_2]][[#C_BLOCKS_STORE_1][#C_BLOCKS_STORE_3]] C_BLOCKS;
                // A and B in f16, row-major.
                pub paged half [$n][$n] H16;
                pub dmem half [$n][$n] ROWS16;
                // A and B in f32 for the TF32 kernel: A row-major, B K-major (stored n x
                // k, viewed k x n), and B row-major for cuBLAS and the transposing copy.
                pub dmem float [$n][$n] F_ROWS;
                pub dmem float [$n][$n] F_BT_STORE;
                pub float [#F_BT_STORE_1][#F_BT_STORE_0] F_BT;
                // A block a tile of C.
                pub paged float [($n / 128) * ($n / 128)] GRID128;
                pub paged float [($n / 128) * ($n / 256)] GRID256;
                // The warp-specialised kernel's persistent grid: a block a multiprocessor.
                pub paged float [$ws_blocks] GRIDWS;
            }

            pub fn run(repeats: usize, choice: &Choice, rows: &mut Vec<Row>) -> parray::Result<()> {
                let shape = ($n, $n, $n);
                let [rm, halves, strips, blocks] = LAYOUTS.map(|(_, l)| l);
                let (t128, t256) = ("parray 128x128", "parray 128x256");
                if choice.elems.contains(&"bf16") {
                    let case = Case::<bf16>::new::<ROWS, ROWS, C_ROWS>(shape, repeats, rows)?;
                    let want = |width, layout| choice.wants(width, "bf16", layout);
                    products!(case, rows, want, bf16, H, [(GRID128, Q1, t128, 128), (GRID256, Q2, t256, 256)], [
                        (ROWS, ROWS, C_ROWS, C_ROWS, rm),
                        (HALVES, HALVES_STORE, C_HALVES, C_HALVES_STORE, halves),
                        (STRIPS, STRIPS_STORE, C_STRIPS, C_STRIPS_STORE, strips),
                        (BLOCKS, BLOCKS_STORE, C_BLOCKS, C_BLOCKS_STORE, blocks)
                    ]);
                    let want_ws = |layout| choice.wants_ws("bf16", layout);
                    products_ws!(case, rows, want_ws, bf16, H, GRIDWS, [
                        (ROWS, ROWS, C_ROWS, C_ROWS, rm),
                        (HALVES, HALVES_STORE, C_HALVES, C_HALVES_STORE, halves),
                        (STRIPS, STRIPS_STORE, C_STRIPS, C_STRIPS_STORE, strips),
                        (BLOCKS, BLOCKS_STORE, C_BLOCKS, C_BLOCKS_STORE, blocks)
                    ]);
                }
                if choice.elems.contains(&"f16") && choice.layouts.contains(&rm) {
                    let case = Case::<f16>::new::<ROWS16, ROWS16, C_ROWS>(shape, repeats, rows)?;
                    let want = |width, layout| choice.wants(width, "f16", layout);
                    products!(case, rows, want, half, H16, [(GRID128, Q1, t128, 128), (GRID256, Q2, t256, 256)], [
                        (ROWS16, ROWS16, C_ROWS, C_ROWS, rm)
                    ]);
                    let want_ws = |layout| choice.wants_ws("f16", layout);
                    products_ws!(case, rows, want_ws, half, H16, GRIDWS, [
                        (ROWS16, ROWS16, C_ROWS, C_ROWS, rm)
                    ]);
                }
                if choice.wants_ws("tf32", rm) {
                    // cuBLAS TF32 on row-major A and B; the kernel on B stored K-major.
                    let case = Case::<f32>::new::<F_ROWS, F_ROWS, C_ROWS>(shape, repeats, rows)?;
                    rows.push(case.run::<HC, HC, HC, F_ROWS, F_ROWS, F_BT, F_BT_STORE, C_ROWS, C_ROWS>(
                        "parray ws", TF32_LAYOUT, |a, b, c| gemm_tf32!(<F_ROWS, F_BT, C_ROWS, GRIDWS, Q2>(a, b, c)),
                    )?);
                    // Row-major B, moved to the kernel's K-major storage by `#copy` each time.
                    let mut bt = Array::<F_BT_STORE>::new()?;
                    rows.push(case.run::<HC, HC, HC, F_ROWS, F_ROWS, F_ROWS, F_ROWS, C_ROWS, C_ROWS>(
                        "ws + #copy B", rm, |a, b, c| {
                            parray::copy::copy(b, bt.view_mut::<F_BT>())?;
                            gemm_tf32!(<F_ROWS, F_BT, C_ROWS, GRIDWS, Q2>(a, &bt, c))
                        },
                    )?);
                }
                Ok(())
            }

            /// The kernel of row-major bf16 storage on a tile's width, or the
            /// warp-specialised one (`None`) on bf16 storage of the `layout`, or the TF32
            /// one (`tf32`).
            pub fn source(width: Option<usize>, layout: &str, tf32: bool) -> &'static str {
                let [_, halves, strips, blocks] = LAYOUTS.map(|(_, l)| l);
                if tf32 {
                    return gemm_tf32!(@source <F_ROWS, F_BT, C_ROWS, GRIDWS, Q2>);
                }
                match width {
                    None if layout == halves => gemm_ws!(@source <bf16, HALVES, HALVES, C_HALVES, GRIDWS, W4>),
                    None if layout == strips => gemm_ws!(@source <bf16, STRIPS, STRIPS, C_STRIPS, GRIDWS, W4>),
                    None if layout == blocks => gemm_ws!(@source <bf16, BLOCKS, BLOCKS, C_BLOCKS, GRIDWS, W4>),
                    None => gemm_ws!(@source <bf16, ROWS, ROWS, C_ROWS, GRIDWS, W4>),
                    Some(256) => gemm_tc!(@source <bf16, ROWS, ROWS, C_ROWS, GRID256, Q2>),
                    Some(_) => gemm_tc!(@source <bf16, ROWS, ROWS, C_ROWS, GRID128, Q1>),
                }
            }
        }
    };
}

parray! {
    // gemm_tc's and gemm_tf32's tile width over 128: Q1 the m64n128k16 tiles, Q2 the
    // m64n256k16.
    paged float [1] Q1;
    paged float [2] Q2;
    // gemm_ws's in B's atoms of 64 columns: W1 the m64n64k16 tiles, W2 the m64n128k16, W4
    // the m64n256k16.
    paged float [1] W1;
    paged float [2] W2;
    paged float [4] W4;
}

// Under the emulation the warp-specialised kernel's grid is one block, which makes both
// tiles: the stages' phases run on from the first into the second.
square!(n256, 256, 1);
square!(n4096, 4096, 132);
square!(n8192, 8192, 132);

/// A shape given on the command line, row-major: its sizes bound when the program runs, its
/// kernels made at the first launch, on a fixed grid of blocks that step through the tiles.
mod any_shape {
    use super::*;

    parray! {
        const SM;
        const SN;
        const SK;
        pub paged bf16 [SM][SK] HA;
        pub paged bf16 [SK][SN] HB;
        pub paged half [SM][SK] HA16;
        pub paged half [SK][SN] HB16;
        pub paged float [SM][SN] HC;
        pub dmem bf16 [SM][SK] DA;
        pub dmem bf16 [SK][SN] DB;
        pub dmem half [SM][SK] DA16;
        pub dmem half [SK][SN] DB16;
        pub dmem float [SM][SN] DC;
        // A's rows padded to SKP, a multiple of 8 elements: TMA's strides are multiples of
        // 16 bytes, so A of a K that is not is copied into them (zeros past K) first.
        const SKP;
        pub dmem bf16 [SM][SKP] DA_PAD;
        pub bf16 [#DA_PAD_0][SK #DA_PAD_1] DA_PADDED;
        pub dmem half [SM][SKP] DA16_PAD;
        pub half [#DA16_PAD_0][SK #DA16_PAD_1] DA16_PADDED;
        // f32 for the TF32 kernel: A row-major, B row-major for cuBLAS and stored K-major
        // for the kernel.
        pub paged float [SM][SK] HAF;
        pub paged float [SK][SN] HBF;
        pub dmem float [SM][SK] DAF;
        pub dmem float [SK][SN] DBF;
        pub dmem float [SN][SK] F_BT_STORE;
        pub float [#F_BT_STORE_1][#F_BT_STORE_0] F_BT;
        // For each of an H200's 132 multiprocessors, as many blocks as its registers and
        // shared memory hold (`blocks_per_sm`): two of 128 x 128 tiles, one of 128 x 256,
        // one of the warp-specialised kernel's.
        pub paged float [132 * 2] GRID128;
        pub paged float [132 * 1] GRID256;
        pub paged float [132] GRIDWS;
    }

    fn bind((m, n, k): Shape) -> parray::Result<()> {
        SM.bind(m)?;
        SN.bind(n)?;
        SK.bind(k)?;
        SKP.bind(k.next_multiple_of(8))
    }

    /// The warp-specialised kernel's rows on `E` storage (`DA`, `DB` row-major; `PAD` and
    /// `PADDED` A's padded rows and their view), of tiles 128 x 256, 128 x 128 and 128 x 64
    /// (more blocks where the shape has few tiles), where K is a multiple of 8: rows of A of
    /// a whole number of 16-byte steps, as TMA's strides are; otherwise A is copied into
    /// padded rows by `#copy` each time (`ws256 + #copy A`, ...).
    macro_rules! ws_row {
        ($case:ident, $rows:ident, $elem:ty, $ha:ty, $hb:ty, $da:ty, $db:ty, $pad:ty, $padded:ty) => {
            ws_row!(@width $case, $rows, $elem, $ha, $hb, $da, $db, $pad, $padded, W4, 256);
            ws_row!(@width $case, $rows, $elem, $ha, $hb, $da, $db, $pad, $padded, W2, 128);
            ws_row!(@width $case, $rows, $elem, $ha, $hb, $da, $db, $pad, $padded, W1, 64);
        };
        (@width $case:ident, $rows:ident, $elem:ty, $ha:ty, $hb:ty, $da:ty, $db:ty, $pad:ty, $padded:ty, $w:ty, $width:literal) => {
            let rm = LAYOUTS[0].1;
            match $case.shape.2 % 8 {
                0 => $rows.push($case.run::<$ha, $hb, HC, $da, $da, $db, $db, DC, DC>(
                    ws_label($width, $case.shape, false, &WS_WIDTHS),
                    rm,
                    |a, b, c| gemm_ws!(<$elem, $da, $db, DC, GRIDWS, $w>(a, b, c)),
                )?),
                _ => {
                    let mut pad = Array::<$pad>::new()?;
                    $rows.push($case.run::<$ha, $hb, HC, $da, $da, $db, $db, DC, DC>(
                        ws_label($width, $case.shape, true, &WS_WIDTHS),
                        rm,
                        |a, b, c| {
                            parray::copy::copy(a, pad.view_mut::<$padded>())?;
                            gemm_ws!(<$elem, $padded, $db, DC, GRIDWS, $w>(&pad, b, c))
                        },
                    )?);
                }
            }
        };
    }

    pub fn run(
        shape: Shape,
        repeats: usize,
        choice: &Choice,
        rows: &mut Vec<Row>,
    ) -> parray::Result<()> {
        bind(shape)?;
        let rm = LAYOUTS[0].1;
        let wants = |width, elem| choice.wants(width, elem, rm);
        if choice.elems.contains(&"bf16") {
            let case = Case::<bf16>::new::<DA, DB, DC>(shape, repeats, rows)?;
            if choice.wants_ws("bf16", rm) {
                ws_row!(case, rows, bf16, HA, HB, DA, DB, DA_PAD, DA_PADDED);
            }
            if wants(128, "bf16") {
                rows.push(case.run::<HA, HB, HC, DA, DA, DB, DB, DC, DC>(
                    "parray 128x128",
                    rm,
                    |a, b, c| gemm_tc!(<bf16, DA, DB, DC, GRID128, Q1>(a, b, c)),
                )?);
            }
            if wants(256, "bf16") {
                rows.push(case.run::<HA, HB, HC, DA, DA, DB, DB, DC, DC>(
                    "parray 128x256",
                    rm,
                    |a, b, c| gemm_tc!(<bf16, DA, DB, DC, GRID256, Q2>(a, b, c)),
                )?);
            }
        }
        if choice.elems.contains(&"f16") {
            let case = Case::<f16>::new::<DA16, DB16, DC>(shape, repeats, rows)?;
            if choice.wants_ws("f16", rm) {
                ws_row!(
                    case,
                    rows,
                    half,
                    HA16,
                    HB16,
                    DA16,
                    DB16,
                    DA16_PAD,
                    DA16_PADDED
                );
            }
            if wants(128, "f16") {
                rows.push(case.run::<HA16, HB16, HC, DA16, DA16, DB16, DB16, DC, DC>(
                    "parray 128x128",
                    rm,
                    |a, b, c| gemm_tc!(<half, DA16, DB16, DC, GRID128, Q1>(a, b, c)),
                )?);
            }
            if wants(256, "f16") {
                rows.push(case.run::<HA16, HB16, HC, DA16, DA16, DB16, DB16, DC, DC>(
                    "parray 128x256",
                    rm,
                    |a, b, c| gemm_tc!(<half, DA16, DB16, DC, GRID256, Q2>(a, b, c)),
                )?);
            }
        }
        if choice.wants_ws("tf32", rm) {
            let case = Case::<f32>::new::<DAF, DBF, DC>(shape, repeats, rows)?;
            rows.push(
                case.run::<HAF, HBF, HC, DAF, DAF, F_BT, F_BT_STORE, DC, DC>(
                    ws_label(256, shape, false, &TF32_WIDTHS),
                    TF32_LAYOUT,
                    |a, b, c| gemm_tf32!(<DAF, F_BT, DC, GRIDWS, Q2>(a, b, c)),
                )?,
            );
            rows.push(
                case.run::<HAF, HBF, HC, DAF, DAF, F_BT, F_BT_STORE, DC, DC>(
                    ws_label(128, shape, false, &TF32_WIDTHS),
                    TF32_LAYOUT,
                    |a, b, c| gemm_tf32!(<DAF, F_BT, DC, GRIDWS, Q1>(a, b, c)),
                )?,
            );
        }
        Ok(())
    }

    /// The kernel of row-major bf16 storage at `shape`, on a tile's width or (`None`)
    /// the warp-specialised one.
    pub fn source(shape: Shape, width: Option<usize>) -> parray::Result<&'static str> {
        bind(shape)?;
        match width {
            None => gemm_ws!(@source <bf16, DA, DB, DC, GRIDWS, W4>),
            Some(256) => gemm_tc!(@source <bf16, DA, DB, DC, GRID256, Q2>),
            Some(_) => gemm_tc!(@source <bf16, DA, DB, DC, GRID128, Q1>),
        }
    }
}

/// M x N x K.
pub type Shape = (usize, usize, usize);

/// The value after `flag` among `names` (`--layout strips`), every name where the flag is
/// not given; `Err` says what it takes.
fn named(flag: &str, names: &[&'static str]) -> Result<Vec<&'static str>, String> {
    let args: Vec<String> = std::env::args().collect();
    let Some(at) = args.iter().position(|a| a == flag) else {
        return Ok(names.to_vec());
    };
    match names
        .iter()
        .find(|n| args.get(at + 1).is_some_and(|v| v == *n))
    {
        Some(name) => Ok(vec![name]),
        None => Err(format!(
            "gemm_bf16: {flag} takes one of {}",
            names.join(", ")
        )),
    }
}

/// What to run and the shape (`--m M --n N --k K`, if given), checked against the tiles:
/// `Err` says why not.
fn arguments() -> Result<(Choice, Option<Shape>), String> {
    let args: Vec<String> = std::env::args().collect();
    let ws = args.windows(2).any(|w| w[0] == "--tile" && w[1] == "ws");
    let tile = (!ws).then(|| gemm::value("--tile")).flatten();
    let widths = match (ws, tile) {
        (true, _) => Vec::new(),
        (false, None) => WIDTHS.to_vec(),
        (false, Some(w)) if WIDTHS.contains(&w) => vec![w],
        (false, Some(w)) => return Err(format!("gemm_bf16: --tile {w}: {TILES_ARE}")),
    };
    let elems = named("--elem", &["bf16", "f16", "tf32"])?;
    let layouts: Vec<&'static str> = named("--layout", &LAYOUTS.map(|(flag, _)| flag))?
        .into_iter()
        .filter_map(|flag| LAYOUTS.iter().find(|(f, _)| *f == flag).map(|(_, l)| *l))
        .collect();
    let mut choice = Choice {
        widths,
        ws: ws || !args.iter().any(|a| a == "--tile"),
        elems,
        layouts,
    };
    let Some((m, n, k)) = gemm::shape() else {
        return Ok((choice, None));
    };
    if !choice.layouts.contains(&LAYOUTS[0].1) {
        return Err("gemm_bf16: a shape given by --m --n --k runs on row-major storage (the other layouts at the fixed shapes)".into());
    }
    if m == 0 || n == 0 || k == 0 {
        return Err(format!("gemm_bf16: {m}x{n}x{k} has no elements"));
    }
    // TMA reads rows of a whole number of 16-byte steps: B's rows of N bf16 (A's of K are
    // padded where they are not), and for TF32 A's and B's (stored N x K) of K floats.
    let bf16s = choice.elems.iter().any(|&e| e != "tf32");
    if choice.ws && n % 8 != 0 && bf16s {
        return Err(format!("gemm_bf16: {m}x{n}x{k}: the warp-specialised kernel reads B's rows by TMA, whose strides are multiples of 16 bytes: N must be a multiple of 8 (bf16, f16)"));
    }
    // A box's rows lie within the matrix's (TMA finds a box by nested strides): A's
    // k-tile of 64 (32 floats) within a row of K, B's atom of 64 columns within one of N.
    if choice.ws && ((bf16s && (k.next_multiple_of(8) < 64 || n < 64)) || k < 32) {
        return Err(format!("gemm_bf16: {m}x{n}x{k}: the warp-specialised kernel's TMA boxes lie within a row: K must be at least 64 and N at least 64 (bf16, f16), K at least 32 (tf32)"));
    }
    if choice.ws && k % 4 != 0 && choice.elems.contains(&"tf32") {
        return Err(format!("gemm_bf16: {m}x{n}x{k}: the TF32 kernel reads A's and B's rows of K floats by TMA, whose strides are multiples of 16 bytes: K must be a multiple of 4"));
    }
    // gemm_tc's tiles are not guarded: it runs on whole tiles alone, and a width the
    // shape does not take is left out of a run that did not ask for it by --tile.
    let whole = |w: usize| m % TILE_ROWS == 0 && n % w == 0 && k % K_TILE == 0;
    if let Some(w) = tile.filter(|&w| !whole(w)) {
        return Err(format!(
            "gemm_bf16: {m}x{n}x{k} is not made of whole tiles of --tile {w}: M must be a multiple of {TILE_ROWS}, N of {w} and K of {K_TILE} (its tiles at the edges are not guarded; --tile ws takes any shape)"
        ));
    }
    if choice.widths.iter().any(|&w| !whole(w)) {
        choice.widths.retain(|&w| whole(w));
        println!("{m}x{n}x{k} is not made of whole tiles of every width: gemm_tc runs on {:?} only, and the warp-specialised kernels (--tile ws) guard the edge tiles", choice.widths);
    }
    Ok((choice, Some((m, n, k))))
}

/// Prints the rows, each beside the cuBLAS row of its shape and element; true when every
/// check passed.
fn report(rows: &[Row]) -> bool {
    for row in rows {
        if let Some(first) = row.first {
            let (m, n, k) = row.shape;
            println!(
                "{m}x{n}x{k} {}, {}, {}: first launch {first} (making the kernel)",
                row.elem, row.kernel, row.layout
            );
        }
    }
    println!(
        "{:<15} {:<4} {:<16} {:>16} {:>21} {:>20} {:>10}  check",
        "kernel", "elem", "layout", "M x N x K", "time (ms)", "TFLOP/s", "of cuBLAS"
    );
    for row in rows {
        let share = row.reference(rows).map_or("-".to_string(), |c| {
            format!("{:.1}%", 100.0 * row.tflops() / c.tflops())
        });
        let check = match &row.check {
            None => "reference".to_string(),
            Some((what, ok)) => format!("{} ({what})", if *ok { "ok" } else { "FAILED" }),
        };
        let (m, n, k) = row.shape;
        println!(
            "{:<15} {:<4} {:<16} {:>16} {:>21} {:>20} {:>10}  {check}",
            row.kernel,
            row.elem,
            row.layout,
            format!("{m}x{n}x{k}"),
            cell(row.time.ms, 3, row.time),
            cell(row.tflops(), 2, row.time),
            share
        );
    }
    rows.iter().all(Row::ok)
}

/// The tensor-core GEMM's rows of the main example's table: the warp-specialised bf16
/// kernel on row-major storage and the TF32 one on B stored K-major (and on row-major B
/// moved there by `#copy`), at 4096³ beside cuBLAS bf16 and TF32 on a GPU, at 256³ under
/// the emulation.
pub fn matmul_rows() -> parray::Result<Vec<common::Run>> {
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    let choice = Choice {
        widths: Vec::new(),
        ws: true,
        elems: vec!["bf16", "tf32"],
        layouts: vec![LAYOUTS[0].1],
    };
    let mut rows = Vec::new();
    if gpu {
        n4096::run(gemm::repeats()?, &choice, &mut rows)?;
    } else {
        n256::run(gemm::repeats()?, &choice, &mut rows)?;
    }
    let backend = common::backend(true)?.0;
    Ok(rows
        .iter()
        .map(|r| common::Run {
            variant: match (r.kernel.as_str(), r.elem) {
                ("cuBLAS", "tf32") => "cuBLAS tf32",
                ("cuBLAS", _) => "cuBLAS bf16",
                ("parray ws", "tf32") => "tf32 wgmma ws (subprog)",
                ("parray ws", _) => "bf16 wgmma ws (subprog)",
                _ => "tf32 ws + #copy B",
            },
            threads: if r.check.is_some() {
                (r.shape.0 * r.shape.1 / (TILE_ROWS * WS_WIDTH)).min(WS_BLOCKS) * 384
            } else {
                0
            },
            layout: r.layout,
            backend,
            time: r.time,
            n: r.shape.0,
            ok: r.ok(),
        })
        .collect())
}

/// The example's program: `cargo run --release --example gemm_bf16`.
pub fn main() -> parray::Result<()> {
    let (choice, shape) = match arguments() {
        Ok(arguments) => arguments,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if std::env::args().any(|a| a == "--source") {
        let width = choice.widths.first().copied();
        match (shape, width) {
            (Some(shape), width) => print!("{}", any_shape::source(shape, width)?),
            (None, width) => {
                let tf32 = choice.elems == ["tf32"];
                print!("{}", n4096::source(width, choice.layouts[0], tf32))
            }
        }
        return Ok(());
    }
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    println!("backend: {:?}", parray::gpu::backend()?);
    for cols in &choice.widths {
        println!(
            "tiles: C {TILE_ROWS}x{cols} a block of two warpgroups (256 threads, 64 rows each), k-tiles of {K_TILE}, {} shared stages of {} KiB, {} a multiprocessor, wgmma m64n{cols}k16 (bf16 or f16 in, f32 accumulate)",
            stages(*cols),
            (TILE_ROWS + cols) * K_TILE * 2 / 1024,
            match blocks_per_sm(*cols) {
                1 => "one block".to_string(),
                n => format!("{n} blocks"),
            }
        );
    }
    if choice.ws {
        println!(
            "tiles: C {TILE_ROWS}x{WS_WIDTH} a block of three warpgroups (384 threads: a producer, two consumers of 64 rows each), k-tiles of {K_TILE} by TMA ({} in tf32), {} shared stages of {} KiB on full and empty mbarriers, a persistent grid of at most {WS_BLOCKS} blocks, wgmma m64n{WS_WIDTH}k16 (k8 in tf32, B K-major); at a shape given by --m --n --k also C {TILE_ROWS}x128 (parray ws 128: {} stages of {} KiB, m64n128k16 or k8) and, in bf16 and f16, {TILE_ROWS}x64 (parray ws 64: {} stages of {} KiB, m64n64k16); `*` marks the width the plan runs there, the one whose k-tiles a multiprocessor reads the fewest bytes of",
            K_TILE / 2,
            ws_stages(WS_WIDTH),
            (TILE_ROWS + WS_WIDTH) * K_TILE * 2 / 1024,
            ws_stages(128),
            (TILE_ROWS + 128) * K_TILE * 2 / 1024,
            ws_stages(64),
            (TILE_ROWS + 64) * K_TILE * 2 / 1024,
        );
    }
    let repeats = gemm::repeats()?;
    let mut table = Vec::new();
    match (shape, gemm::value("--square")) {
        (Some(shape), _) => any_shape::run(shape, repeats, &choice, &mut table)?,
        (None, Some(8192)) if gpu => n8192::run(repeats, &choice, &mut table)?,
        (None, Some(256)) => n256::run(repeats, &choice, &mut table)?,
        (None, None | Some(4096)) if gpu => n4096::run(repeats, &choice, &mut table)?,
        (None, Some(n)) if gpu => {
            eprintln!("gemm_bf16: --square {n}: the square shapes built in are 256, 4096 and 8192");
            std::process::exit(2);
        }
        (None, _) => {
            println!("shapes: 256³ under the emulation (a GPU runs 4096³, or 8192³ with `--square 8192`; `--m M --n N --k K` chooses one, row-major)");
            n256::run(repeats, &choice, &mut table)?;
        }
    }
    let ok = report(&table);
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
