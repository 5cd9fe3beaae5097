//! A tuned SGEMM subprogram, written in Parray's types: `C = A B` for an M x K `A`, a
//! K x N `B` and an M x N `C`, each of any layout. Blocks of 256 threads compute 128x256
//! tiles of C, each thread an 8x16 sub-tile (rows in two quarters 64 apart, columns in four,
//! each quarter read as one 4-wide shared load), over k-tiles of 16 staged through two
//! shared buffers, one barrier a tile. Global loads run a tile ahead in registers (issued a
//! whole tile before their values are stored), each step's fragments are read while the
//! previous step multiplies, the products zig-zag so that consecutive ones share a register
//! operand, and the kernel runs one block a multiprocessor with up to 255 registers a
//! thread (cuBLAS's own shape: 8 warps, 128 accumulators each). The types below say all of
//! it; `#copy` moves every tile, as float4 where both sides allow. Tiles at the edges of
//! matrices the tiles do not divide are guarded (`#copy ... if`): elements past A and B
//! read as 0, and only C's elements are stored; the guards go where the tiles divide.
//!
//! On a GPU: square N = 4096 and 8192 on row-major, strips (Fig 18a) and blocks (Fig 18b)
//! storage, and 4096 x 8192 x 2048 row-major, each beside cuBLAS in the same run and
//! checked against it. Under the emulation: N = 256 (every layout) and 256 x 512 x 128,
//! checked against an f64 product. `--n N` chooses one square size; `--m M --n N --k K`
//! any shape (its kernel made for it at the first launch, on tiles of 128x256 or, where
//! those would leave multiprocessors idle, smaller ones down to 64x64, K split where the
//! tiles still do, and C^T = B^T A^T made where C has fewer rows than a tile; `--tile
//! 256|128|64` (128 rows) or `--tile HxW`, `--split S`, `--unroll 1|2` and `--transposed`
//! choose, and `--source` prints the kernel).

use crate::common;

use common::gemm::{self, Inputs, Row};
use parray::prelude::*;

subprog! {
    /// `dc = da * db` for `da` of the type `TA` (M x K), `db` of `TB` (K x N) and `dc` of
    /// `TC` (M x N), of any sizes: the tiles at the edges are guarded. K is split over
    /// `dim(TS_0)` blocks a tile of C (split-K, where the tiles alone would leave
    /// multiprocessors idle), which add their sums into C. A tile of C is 64 P rows by
    /// 64 Q columns, Q = `dim(TW_0)` and P = `dim(TW_2)` (`T128X256`, cuBLAS's 128x256;
    /// the smaller ones for shapes that would leave multiprocessors idle or waste most of
    /// a large tile); a thread loads R = `dim(TW_1)` rows of a tile of B (2, or 1 where
    /// Q = 1, whose 64 columns take 16 threads a row); the loop over K's tiles is
    /// unrolled `dim(TW_3)` times (2 where the plan finds it faster, `unrolled`: the stage
    /// each copy reads is then a number).
    pub fn sgemm<TA, TB, TC, TS, TW>(da, db, dc) -> parray::Result<()> {
        parray! {
            const M = dim(TA_0);
            const K = dim(TA_1);
            const N = dim(TB_1);
            const S = dim(TS_0);
            const Q = dim(TW_0);
            const R = dim(TW_1);
            const P = dim(TW_2);
            // A block per 64P x 64Q tile of C (those at the edges reach past it) and part
            // of K; its 16x16 threads, each index split in digits for the loads below (the
            // first in 16/R and R, R the rows of B a thread loads; the second's 8 in 4P
            // rows of A and 2/P parts of a row).
            cuda(float* a, float* b, float* c) [[ceil(M/(64*P))][ceil(N/(64*Q))][S]][[[16/R][R]][[[4*P][2/P]][2]]] GEMM;
            // A 64P x 16 tile of A: a thread loads 4P k of one row, as P runs of 4 that
            // are 8 apart (so that the transposing stores below of 128 rows hit 32 banks).
            // The k-tiles are dealt to the S blocks of a tile of C in turn.
            dmem float [[ceil(M/(64*P))][[[16/R][R]][4*P]]#TA_0][[ceil(K/(16*S))][S][[2/P][P][2][4]]#TA_1] AL;
            dmem float [#AL_1_2_1][#AL_1_2_3] AT;
            // A 16 x 64Q tile of B: a thread loads R rows 16/R apart, each 4 consecutive
            // n in each of the Q/R parts of 64R of each row.
            dmem float [[ceil(K/(16*S))][S][[R][16/R]]#TB_0][[ceil(N/(64*Q))][[Q/R][[R][8][2]][4]]#TB_1] BL;
            dmem float [#BL_0_2_0][#BL_1_1_0][#BL_1_1_2] BT;
            // C by thread: rows [tile][P parts][thread][4], columns the same in Q parts.
            dmem float [[ceil(M/(64*P))][[P][16][4]]#TC_0][[ceil(N/(64*Q))][[Q][16][4]]#TC_1] CT;
            dmem float [#CT_0_1_0][#CT_0_1_2][#CT_1_1_0][#CT_1_1_2] CF;
            // The coordinates of the tiles' rows and columns in A, B and C, for the guards
            // of the tiles at the edges (which the prover removes where the tiles divide).
            dmem float [ceil(M/(64*P))][[[16/R][R]][4*P]] AROW;
            dmem float [ceil(K/(16*S))][S][[2/P][P][2][4]] ACOL;
            dmem float [ceil(K/(16*S))][S][[R][16/R]] BROW;
            dmem float [ceil(N/(64*Q))][[Q/R][[R][8][2]][4]] BCOL;
            dmem float [ceil(M/(64*P))][[P][16][4]] CROW;
            dmem float [ceil(N/(64*Q))][[Q][16][4]] CCOL;
            // Two stages of the A tile, k-major (transposed) and padded by 4 floats a k; a
            // thread writes its 4P k of one row (AST) and reads P runs of 4 rows of one k
            // (FA).
            smem float [2][[2/P][P][2][4]][64*P+4] AS;
            smem float [#AS_0][#AS_1][[[16/R][R]][4*P]#AS_2] ASW;
            smem float [#ASW_1_1][#ASW_1_3] AST;
            smem float [#AS_0][#AS_1][[P][16][4]#AS_2] ASR;
            smem float [#ASR_2_0][#ASR_2_2] FA;
            // Two stages of the B tile, written as the thread loaded it, read as FB: Q
            // runs of 4 columns of one k.
            smem float [2][[R][16/R]][64*Q] BS;
            smem float [#BS_0][#BS_1][[Q/R][[R][8][2]][4]#BS_2] BSW;
            smem float [#BSW_1_0][#BSW_2_0][#BSW_2_2] BST;
            smem float [#BS_0][#BS_1][[Q][16][4]#BS_2] BSR;
            smem float [#BSR_2_0][#BSR_2_2] FB;
            rmem float [4*P] RA;
            rmem float [4*Q] RB;
            rmem float [4*P] FP;
            rmem float [4*Q] FQ;
            rmem float [2][4*P] FA2;
            rmem float [2][4*Q] FB2;
            rmem float [P][4][Q][4] ACC;
        }
        // The blocks of a split add into C, which starts at zero.
        if TS::dims()[0] > 1 {
            dc.zero()?;
        }
        detour!(GEMM(da, db, dc) {
            // One block a multiprocessor: up to 255 registers a thread.
            #![min_blocks_per_sm(1)]
            let as_ = AS::create();
            let bs = BS::create();
            let ra = RA::create();
            let rb = RB::create();
            let fa = FA2::create();
            let fb = FB2::create();
            let acc = ACC::create();
            #[unroll]
            for x in 0..$size(ACC)$ {
                acc[x] = 0.0f32;
            }
            let pa = a + $AL[[$tid_0_0$][[[$tid_1_0_0$][$tid_1_0_1$]][$tid_1_1_0_0$]]][[0][$tid_0_2$][[$tid_1_1_0_1$][0][$tid_1_1_1$][0]]]$;
            let pb = b + $BL[[0][$tid_0_2$][[0][$tid_1_0_0$]]][[$tid_0_1$][[0][[$tid_1_0_1$][$tid_1_1_0$][$tid_1_1_1$]][0]]]$;
            let aw = $ASW[0][[$tid_1_1_0_1$][0][$tid_1_1_1$][0]][[[$tid_1_0_0$][$tid_1_0_1$]][$tid_1_1_0_0$]]$;
            let bw = $BSW[0][[0][$tid_1_0_0$]][[0][[$tid_1_0_1$][$tid_1_1_0$][$tid_1_1_1$]][0]]$;
            let ar = $ASR[0][0][[0][$tid_1_0$][0]]$;
            let br = $BSR[0][0][[0][$tid_1_1$][0]]$;
            // A thread's row of A and column of B, and where its k start in a tile; an
            // element past the matrix is read as 0.
            let m = $dim(TA_0)$;
            let n = $dim(TB_1)$;
            let depth = $dim(TA_1)$;
            let arow = $AROW[$tid_0_0$][[[$tid_1_0_0$][$tid_1_0_1$]][$tid_1_1_0_0$]]$;
            let bcol = $BCOL[$tid_0_1$][[0][[$tid_1_0_1$][$tid_1_1_0$][$tid_1_1_1$]][0]]$;
            let acol = $ACOL[0][$tid_0_2$][[$tid_1_1_0_1$][0][$tid_1_1_1$][0]]$;
            let brow = $BROW[0][$tid_0_2$][[0][$tid_1_0_0$]]$;
            #copy AT(pa) to RA(ra) if |x, y| arow < m && acol + $ACOL_2_1[x]$ + y < depth else 0.0;
            #copy BT(pb) to RB(rb) if |x, y, z| brow + $BROW_2_0[x]$ < depth && bcol + $BCOL_1_0[y]$ + z < n else 0.0;
            #copy RA(ra) to AST(as_ + aw);
            #copy RB(rb) to BST(bs + bw);
            // Registers carry the tile after the one being multiplied: it is loaded an
            // iteration before it is stored, so its latency hides behind a whole tile.
            let next = 1 % $size(AL_1_0)$;
            let acol = acol + $ACOL_0[next]$;
            let brow = brow + $BROW_0[next]$;
            #copy AT(pa + $AL_1_0[next]$) to RA(ra) if |x, y| arow < m && acol + $ACOL_2_1[x]$ + y < depth else 0.0;
            #copy BT(pb + $BL_0_0[next]$) to RB(rb) if |x, y, z| brow + $BROW_2_0[x]$ < depth && bcol + $BCOL_1_0[y]$ + z < n else 0.0;
            #sync_1;
            // Fragments are double-buffered in registers: step k multiplies slot k % 2
            // while the fragments of step k + 1 are read into the other.
            #copy FA(as_ + ar) to FP(fa);
            #copy FB(bs + br) to FQ(fb);
            #[unroll($dim(TW_3)$)]
            for kt in 0..$size(AL_1_0)$ {
                let cur = kt % 2;
                // Stage 1 - cur was last read before the barrier that ended the last tile.
                #copy RA(ra) to AST(as_ + aw + $ASW_0[1 - cur]$);
                #copy RB(rb) to BST(bs + bw + $BSW_0[1 - cur]$);
                // The tile after next (wrapping around at the end: loads proved in bounds
                // whose values go to a stage that is no longer read).
                let after = (kt + 2) % $size(AL_1_0)$;
                let acol = $ACOL[after][$tid_0_2$][[$tid_1_1_0_1$][0][$tid_1_1_1$][0]]$;
                let brow = $BROW[after][$tid_0_2$][[0][$tid_1_0_0$]]$;
                #copy AT(pa + $AL_1_0[after]$) to RA(ra) if |x, y| arow < m && acol + $ACOL_2_1[x]$ + y < depth else 0.0;
                #copy BT(pb + $BL_0_0[after]$) to RB(rb) if |x, y, z| brow + $BROW_2_0[x]$ < depth && bcol + $BCOL_1_0[y]$ + z < n else 0.0;
                #[unroll]
                for k in 0..$dim(AS_1)$ {
                    if k + 1 < $dim(AS_1)$ {
                        let ahead = (k + 1) % $dim(AS_1)$;
                        #copy FA(as_ + ar + $ASR[cur][ahead][0]$) to FP(fa + $FA2[ahead % 2][0]$);
                        #copy FB(bs + br + $BSR[cur][ahead][0]$) to FQ(fb + $FB2[ahead % 2][0]$);
                    }
                    let fx = $FA2[k % 2][0]$;
                    let fy = $FB2[k % 2][0]$;
                    // Rows zig-zag, so that consecutive products share an operand.
                    #[unroll]
                    for x in 0..$dim(FA2_1)$ {
                        #[unroll]
                        for z in 0..$dim(FB2_1)$ {
                            let y = if x % 2 == 0 { z } else { $dim(FB2_1)$ - 1 - z };
                            acc[x * $dim(FB2_1)$ + y] += fa[fx + x] * fb[fy + y];
                        }
                    }
                }
                #sync_1;
                #copy FA(as_ + ar + $ASR[1 - cur][0][0]$) to FP(fa);
                #copy FB(bs + br + $BSR[1 - cur][0][0]$) to FQ(fb);
            }
            // Only the elements of C in the matrix are stored, or with K split, added.
            let crow = $CROW[$tid_0_0$][[0][$tid_1_0$][0]]$;
            let ccol = $CCOL[$tid_0_1$][[0][$tid_1_1$][0]]$;
            let pc = c + $CT[[$tid_0_0$][[0][$tid_1_0$][0]]][[$tid_0_1$][[0][$tid_1_1$][0]]]$;
            if $dim(AL_1_1)$ == 1 {
                #copy ACC(acc) to CF(pc) if |w, x, y, z| crow + $CROW_1_0[w]$ + x < m && ccol + $CCOL_1_0[y]$ + z < n;
            } else {
                #[unroll]
                for w in 0..$dim(CF_0)$ {
                    #[unroll]
                    for x in 0..$dim(CF_1)$ {
                        #[unroll]
                        for y in 0..$dim(CF_2)$ {
                            #[unroll]
                            for z in 0..$dim(CF_3)$ {
                                if crow + $CROW_1_0[w]$ + x < m && ccol + $CCOL_1_0[y]$ + z < n {
                                    atomic_add(pc + $CF[w][x][y][z]$, acc[$ACC[w][x][y][z]$]);
                                }
                            }
                        }
                    }
                }
            }
        })
    }
}

parray! {
    // K in one piece: a block sums its tile of C over all of K.
    pub paged float [1] UNSPLIT;
    // Tiles of C of 64P x 64Q, as [Q][R][P][U] (R: the rows of a B tile a thread loads;
    // U: how many of K's tiles an iteration of the loop over them takes, see `unrolled`).
    pub paged float [4][2][2][1] T128X256;
    pub paged float [2][2][2][1] T128X128;
    pub paged float [1][1][2][1] T128X64;
    pub paged float [1][1][2][2] T128X64U2;
    pub paged float [4][2][1][1] T64X256;
    pub paged float [2][2][1][1] T64X128;
    pub paged float [1][1][1][1] T64X64;
}

/// The tuned subprogram on three layouts of one square size, beside cuBLAS on a GPU.
macro_rules! square {
    ($module:ident, $n:literal) => {
        #[allow(dead_code)] // each size declares what every size may use
        pub mod $module {
            use super::*;

            common::gemm::square_layouts!(float, $n);

            /// The kernel for row-major storage of this size: its CUDA C, or its HIP C++
            /// for a CDNA GPU.
            pub fn source(hip: bool) -> &'static str {
                if hip {
                    sgemm!(@source hip(64) <ROWS, ROWS, ROWS, UNSPLIT, T128X256>)
                } else {
                    sgemm!(@source <ROWS, ROWS, ROWS, UNSPLIT, T128X256>)
                }
            }

            /// cuBLAS's row (on a GPU) and the subprogram's on row-major storage; the inputs.
            pub fn row_major(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<Inputs> {
                let inputs = Inputs::new::<ROWS, ROWS, ROWS>(($n, $n, $n), repeats, rows)?;
                rows.push(inputs.run::<H, H, H, ROWS, ROWS, ROWS, ROWS, ROWS, ROWS>(
                    "tuned", "row-major", repeats, |a, b, c| sgemm!(<ROWS, ROWS, ROWS, UNSPLIT, T128X256>(a, b, c)),
                )?);
                Ok(inputs)
            }

            pub fn run(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<()> {
                let inputs = row_major(repeats, rows)?;
                rows.push(inputs.run::<H, H, H, STRIPS, STRIPS_STORE, STRIPS, STRIPS_STORE, STRIPS, STRIPS_STORE>(
                    "tuned", "strips (Fig 18a)", repeats, |a, b, c| sgemm!(<STRIPS, STRIPS, STRIPS, UNSPLIT, T128X256>(a, b, c)),
                )?);
                rows.push(inputs.run::<H, H, H, BLOCKS, BLOCKS_STORE, BLOCKS, BLOCKS_STORE, BLOCKS, BLOCKS_STORE>(
                    "tuned", "blocks (Fig 18b)", repeats, |a, b, c| sgemm!(<BLOCKS, BLOCKS, BLOCKS, UNSPLIT, T128X256>(a, b, c)),
                )?);
                Ok(())
            }
        }
    };
}

/// The tuned subprogram on row-major M x K and K x N matrices.
macro_rules! rectangular {
    ($module:ident, $m:literal, $n:literal, $k:literal) => {
        #[allow(dead_code)]
        pub mod $module {
            use super::*;

            parray! {
                pub paged float [$m][$k] HA;
                pub paged float [$k][$n] HB;
                pub paged float [$m][$n] HC;
                pub dmem float [$m][$k] DA;
                pub dmem float [$k][$n] DB;
                pub dmem float [$m][$n] DC;
            }

            pub fn run(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<()> {
                let inputs = Inputs::new::<DA, DB, DC>(($m, $n, $k), repeats, rows)?;
                rows.push(inputs.run::<HA, HB, HC, DA, DA, DB, DB, DC, DC>(
                    "tuned", "row-major", repeats, |a, b, c| sgemm!(<DA, DB, DC, UNSPLIT, T128X256>(a, b, c)),
                )?);
                Ok(())
            }
        }
    };
}

/// The tuned subprogram on row-major M x K and K x N matrices whose sizes are given when
/// the program runs (`--m M --n N --k K`): its kernel is made at the first launch, for
/// these sizes.
mod any_shape {
    use super::*;

    parray! {
        const SM;
        const SN;
        const SK;
        const SPLIT;
        pub paged float [SPLIT] SPLIT_K;
        pub paged float [SM][SK] HA;
        pub paged float [SK][SN] HB;
        pub paged float [SM][SN] HC;
        pub dmem float [#HA_0][#HA_1] DA;
        pub dmem float [#HB_0][#HB_1] DB;
        pub dmem float [#HC_0][#HC_1] DC;
        // The same storage transposed: C^T = B^T A^T, for a C of few rows.
        pub float [#DA_1][#DA_0] DAT;
        pub float [#DB_1][#DB_0] DBT;
        pub float [#DC_1][#DC_0] DCT;
    }

    /// Calls `$call!` with the operand types and the tile type of `$plan`: `(A, B, C,
    /// tile)`, of C or (transposed) of C^T = B^T A^T.
    macro_rules! planned {
        ($plan:expr, $call:ident) => {
            match ($plan.tile, $plan.transposed) {
                ((128, 256), false) => $call!(DA, DB, DC, T128X256),
                ((128, 128), false) => $call!(DA, DB, DC, T128X128),
                ((128, _), false) if $plan.unrolled => $call!(DA, DB, DC, T128X64U2),
                ((128, _), false) => $call!(DA, DB, DC, T128X64),
                ((_, 256), false) => $call!(DA, DB, DC, T64X256),
                ((_, 128), false) => $call!(DA, DB, DC, T64X128),
                (_, false) => $call!(DA, DB, DC, T64X64),
                ((128, 256), true) => $call!(DBT, DAT, DCT, T128X256),
                ((128, 128), true) => $call!(DBT, DAT, DCT, T128X128),
                ((128, _), true) if $plan.unrolled => $call!(DBT, DAT, DCT, T128X64U2),
                ((128, _), true) => $call!(DBT, DAT, DCT, T128X64),
                ((_, 256), true) => $call!(DBT, DAT, DCT, T64X256),
                ((_, 128), true) => $call!(DBT, DAT, DCT, T64X128),
                (_, true) => $call!(DBT, DAT, DCT, T64X64),
            }
        };
    }

    /// The product as `plan` makes it.
    fn multiply(plan: Plan, a: &Array<DA>, b: &Array<DB>, c: &mut Array<DC>) -> parray::Result<()> {
        macro_rules! call {
            (DA, DB, DC, $t:ident) => {
                sgemm!(<DA, DB, DC, SPLIT_K, $t>(a, b, c))
            };
            (DBT, DAT, DCT, $t:ident) => {
                sgemm!(<DBT, DAT, DCT, SPLIT_K, $t>(b, a, c))
            };
        }
        planned!(plan, call)
    }

    /// How the product of this shape is made, from the command line (`--tile`,
    /// `--split`, `--transposed`) or the plan. The sizes are bound.
    pub fn choose((m, n, k): (usize, usize, usize)) -> parray::Result<Plan> {
        SM.bind(m)?;
        SN.bind(n)?;
        SK.bind(k)?;
        let sms = parray::Device::current()?.multiprocessors()?;
        let mut plan = match tile_flag() {
            None => plan(m, n, k, sms),
            Some(tile) => {
                let transposed = std::env::args().any(|a| a == "--transposed");
                // The product made is C's or C^T's, of N x M tiles.
                let (rows, cols) = if transposed { (n, m) } else { (m, n) };
                let parts = split(rows, cols, k, tile_of(tile), sms);
                Plan {
                    tile,
                    parts,
                    transposed,
                    unrolled: false,
                }
            }
        };
        plan.parts = gemm::value("--split").unwrap_or(plan.parts);
        plan.unrolled = match gemm::value("--unroll") {
            None => unrolled(plan.tile, k),
            Some(1) => false,
            Some(2) if plan.tile == (128, 64) => true,
            Some(_) => {
                eprintln!("sgemm: --unroll is 1, or 2 on tiles of 128x64 (`--tile 64`)");
                std::process::exit(2);
            }
        };
        SPLIT.bind(plan.parts)?;
        Ok(plan)
    }

    /// `--tile W` (a tile of 128 x W) or `--tile HxW`, if given: one of [`TILES`].
    fn tile_flag() -> Option<(usize, usize)> {
        let args: Vec<String> = std::env::args().collect();
        let at = args.iter().position(|a| a == "--tile")?;
        let value = args.get(at + 1).map_or("", String::as_str);
        let tile = match value.split_once('x') {
            Some((rows, cols)) => rows.parse().ok().zip(cols.parse().ok()),
            None => value.parse().ok().map(|cols| (128, cols)),
        };
        match tile.filter(|t| TILES.iter().any(|s| (s.rows, s.cols) == *t)) {
            Some(tile) => Some(tile),
            None => {
                eprintln!("sgemm: --tile is 256, 128 or 64 (the width of a tile of C 128 high), or HxW for H 128 or 64 and W 256, 128 or 64");
                std::process::exit(2);
            }
        }
    }

    /// The kernel made for this shape (`--source --m M --n N --k K`).
    pub fn source(shape: (usize, usize, usize)) -> parray::Result<&'static str> {
        macro_rules! call {
            ($a:ident, $b:ident, $c:ident, $t:ident) => {
                sgemm!(@source <$a, $b, $c, SPLIT_K, $t>)
            };
        }
        let plan = choose(shape)?;
        planned!(plan, call)
    }

    /// The first two launches of the product of this shape as `plan` makes it, timed and
    /// printed: the first makes the kernel for these sizes and compiles it (or finds it in
    /// the disk cache), the second finds it made.
    pub fn launches((m, n, k): (usize, usize, usize), plan: Plan) -> parray::Result<()> {
        let (a, b, mut c) = (DA::create()?, DB::create()?, DC::create()?);
        let mut launch = || parray::gpu::time_ms(|| multiply(plan, &a, &b, &mut c));
        let (first, second) = (launch()?, launch()?);
        let of = if plan.transposed { "C^T" } else { "C" };
        let ((h, w), parts) = (plan.tile, plan.parts);
        let unroll = if plan.unrolled {
            ", its loop unrolled by 2"
        } else {
            ""
        };
        println!("launches: first {first:.1}, making the kernel for {m}x{n}x{k} (tiles of {of} {h}x{w}, K split in {parts}{unroll}); second {second:.1}");
        Ok(())
    }

    /// The product of this shape as `plan` makes it: its row, cuBLAS's before it.
    pub fn run(
        shape: (usize, usize, usize),
        plan: Plan,
        repeats: usize,
        rows: &mut Vec<Row>,
    ) -> parray::Result<()> {
        let inputs = Inputs::new::<DA, DB, DC>(shape, repeats, rows)?;
        rows.push(inputs.run::<HA, HB, HC, DA, DA, DB, DB, DC, DC>(
            "tuned",
            "row-major",
            repeats,
            |a, b, c| multiply(plan, a, b, c),
        )?);
        Ok(())
    }
}

/// How a product is made: the tile of C (or of C^T) as (rows, columns), the blocks K is
/// split over, whether C^T = B^T A^T is made, and whether the loop over K's tiles takes
/// two a step ([`unrolled`]).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Plan {
    tile: (usize, usize),
    parts: usize,
    transposed: bool,
    unrolled: bool,
}

/// Whether the loop over K's tiles takes two a step (`T128X64U2`, `--unroll 1|2`): on
/// 128 x 64 tiles where K is not a multiple of the 16 of a k-tile and A's rows are read by
/// vectors (K a multiple of 4). Measured on an H200, the kernel alone in a CUDA C harness
/// (2026-11-30; 1 and 2): 1000³ 57.6 and 55.6 us, 1024 x 1024 x 1000 58.4 and 56.9; but
/// 1024³ 57.5 and 59.5, 1000 x 999 x 777 52.9 and 60.0, 8192 x 64 x 8192 (split 4) 231.6
/// and 234.5, 512³ (split 4) 16.2 both; on other tiles it was slower or no faster (128 x
/// 256 at 4096³ 2766 and 2804, 64 x 64 at 1000³ 69.7 and 70.6) but for 64 x 128 at 1000³
/// (61.1 and 60.1), which the plan leaves to 128 x 64.
fn unrolled(tile: (usize, usize), k: usize) -> bool {
    tile == (128, 64) && !k.is_multiple_of(16) && k.is_multiple_of(4)
}

/// A tile of C the subprogram makes: its rows and columns, how many of its blocks a
/// multiprocessor runs at once, and the time of a k-tile of one of them alone on its
/// multiprocessor and beside the others, in hundredths of a 128 x 256 block's k-tile
/// (fitted on an H200).
struct Tile {
    rows: usize,
    cols: usize,
    per_sm: usize,
    alone: usize,
    shared: usize,
}

/// The tiles, largest first (1024³ in 64 blocks of 128 x 128: 0.57 times 32 blocks of
/// 128 x 256; 4096³ on 128 x 128 tiles 1.11 times the large tiles' time in as many
/// waves; 1024³ in 128 blocks of 128 x 64 0.30 a large k-tile; 8192 x 64 x 8192 with K
/// split in 4, two such blocks a multiprocessor, 1.6 times that; the 64-high ones from
/// 64 x 8192 x 8192 in 128 to 512 blocks, K split in 1, 2 or 4).
const TILES: [Tile; 6] = [
    Tile::new((128, 256), 1, (100, 100)),
    Tile::new((128, 128), 2, (57, 111)),
    Tile::new((128, 64), 2, (30, 48)),
    Tile::new((64, 256), 2, (65, 131)),
    Tile::new((64, 128), 2, (37, 68)),
    Tile::new((64, 64), 2, (23, 42)),
];

impl Tile {
    const fn new(
        (rows, cols): (usize, usize),
        per_sm: usize,
        (alone, shared): (usize, usize),
    ) -> Tile {
        Tile {
            rows,
            cols,
            per_sm,
            alone,
            shared,
        }
    }
}

/// The entry of [`TILES`] for a tile of C of (rows, columns).
fn tile_of((rows, cols): (usize, usize)) -> &'static Tile {
    TILES
        .iter()
        .find(|t| (t.rows, t.cols) == (rows, cols))
        .unwrap_or(&TILES[0])
}

/// The time of an M x N x K product on `tile` with K split in `parts`, on a device of
/// `sms` multiprocessors, in hundredths of a large block's k-tile. Each block has at
/// least 8 k-tiles of 16; a split block costs 10 more (its added stores and the memset).
fn steps(m: usize, n: usize, k: usize, tile: &Tile, parts: usize, sms: usize) -> usize {
    let sms = sms.max(1);
    let blocks = m.div_ceil(tile.rows) * n.div_ceil(tile.cols) * parts;
    let per_block = k.div_ceil(16).div_ceil(parts) + if parts > 1 { 10 } else { 0 };
    let at_once = tile.per_sm * sms;
    let waves = blocks.div_ceil(at_once);
    let last = blocks - (waves - 1) * at_once;
    let last_step = if last <= sms { tile.alone } else { tile.shared };
    ((waves - 1) * tile.shared + last_step) * per_block
}

/// How many blocks share a tile of C, each over part of K: the split with the fewest
/// [`steps`]. The large tiles alone may leave most of the device idle (32 tiles at 1000³
/// for 132 multiprocessors) or fill their last wave badly (561 tiles at 4097³ are 4.25
/// waves, run as 5).
fn split(m: usize, n: usize, k: usize, tile: &Tile, sms: usize) -> usize {
    (1..=(k.div_ceil(16) / 8).clamp(1, 8))
        .min_by_key(|&s| steps(m, n, k, tile, s, sms))
        .unwrap_or(1)
}

/// The tile, split and orientation with the fewest [`steps`] (larger tiles, and C
/// rather than C^T, where equal). Tiles smaller than 128 x 128 are for shapes whose
/// 128 x 128 tiles would not fill the device twice (small or skinny ones; at 4097³ their
/// many partial tiles cost more than the model sees); C^T = B^T A^T is made where C has
/// fewer rows than a tile.
fn plan(m: usize, n: usize, k: usize, sms: usize) -> Plan {
    [false, true]
        .into_iter()
        .filter(|&transposed| !transposed || m < 64)
        .flat_map(|transposed| {
            let (m, n) = if transposed { (n, m) } else { (m, n) };
            let small = m.div_ceil(128) * n.div_ceil(128) < 2 * sms;
            TILES
                .iter()
                .filter(move |t| t.rows * t.cols >= 128 * 128 || small)
                .map(move |t| {
                    let parts = split(m, n, k, t, sms);
                    let plan = Plan {
                        tile: (t.rows, t.cols),
                        parts,
                        transposed,
                        unrolled: unrolled((t.rows, t.cols), k),
                    };
                    (steps(m, n, k, t, parts, sms), plan)
                })
        })
        .min_by_key(|&(steps, _)| steps)
        .map_or(
            Plan {
                tile: (128, 256),
                parts: 1,
                transposed: false,
                unrolled: false,
            },
            |(_, plan)| plan,
        )
}

square!(n256, 256);
square!(n1024, 1024);
square!(n4096, 4096);
square!(n8192, 8192);
rectangular!(r256x512x128, 256, 512, 128);
rectangular!(r4096x8192x2048, 4096, 8192, 2048);

/// The report's rows: cuBLAS's and the tuned subprogram's on each layout and shape.
fn rows() -> parray::Result<Vec<Row>> {
    let repeats = gemm::repeats()?;
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    let mut rows = Vec::new();
    if let Some(shape) = gemm::shape() {
        let plan = any_shape::choose(shape)?;
        any_shape::launches(shape, plan)?;
        any_shape::run(shape, plan, repeats, &mut rows)?;
        return Ok(rows);
    }
    for n in gemm::sizes(&[4096, 8192], &[256])? {
        match n {
            256 => n256::run(repeats, &mut rows)?,
            1024 => n1024::run(repeats, &mut rows)?,
            4096 => n4096::run(repeats, &mut rows)?,
            8192 => n8192::run(repeats, &mut rows)?,
            _ => {
                eprintln!("sgemm: N is one of 256, 1024, 4096, 8192");
                std::process::exit(2);
            }
        }
    }
    if std::env::args().any(|a| a == "--n") {
        return Ok(rows);
    }
    if gpu {
        r4096x8192x2048::run(repeats, &mut rows)?;
    } else {
        r256x512x128::run(repeats, &mut rows)?;
    }
    Ok(rows)
}

/// The tuned subprogram on row-major storage at N = 1024, its tile and split chosen for
/// the shape as `--m 1024 --n 1024 --k 1024` chooses them (the 128 x 256 tiles alone make
/// 32 blocks for the H200's 132 multiprocessors): a row of the main example's table.
pub fn matmul_rows() -> parray::Result<Vec<common::Run>> {
    let (mut rows, n) = (Vec::new(), 1024);
    let plan = any_shape::choose((n, n, n))?;
    any_shape::run((n, n, n), plan, gemm::repeats()?, &mut rows)?;
    // Blocks of 256 threads: one a tile of C and part of K.
    let (rows_of_tile, cols_of_tile) = plan.tile;
    let threads = n.div_ceil(rows_of_tile) * n.div_ceil(cols_of_tile) * plan.parts * 256;
    rows.iter()
        .filter(|r| r.kernel != "cuBLAS")
        .map(|r| r.to_run("tuned SGEMM (subprog)", threads))
        .collect()
}

/// Measures and prints the table; whether every result checked.
pub fn run() -> parray::Result<bool> {
    Ok(gemm::report(&rows()?))
}

/// The example's program: `cargo run --release --example sgemm`.
pub fn main() -> parray::Result<()> {
    gemm::example_main(
        |hip| match gemm::shape() {
            Some(shape) => any_shape::source(shape),
            None => Ok(n4096::source(hip)),
        },
        rows,
    )
}
