//! A bf16 tensor-core GEMM written in Parray's types: `C = A B` for a row-major M x K `A`
//! and K x N `B` of `bf16` and an M x N `C` of `f32`, accumulated in `f32` by the
//! warpgroups' wgmma (SPEC.md 3.5, "MMA"). A block is two warpgroups (256 threads,
//! `[[2][[4][8][4]]]`) and computes 128 x 128 or 128 x 256 tiles of C, each warpgroup its
//! own 64 rows from its 64-row slice of the block's A stage and the whole B stage (B's
//! shared-memory and global traffic a flop half that of a block of one warpgroup), its
//! accumulator 64 or 128 floats a thread (the m64nNk16 fragment, 2.14, over the
//! warpgroup's digits). K goes in tiles of 64 through shared stages of 16 KiB of A and 16
//! or 32 KiB of B: 3 for 128 x 128 tiles (96 KiB; two blocks a multiprocessor, the kernel
//! declared for them, `#![min_blocks_per_sm(BLOCKS)]`: at most 128 registers a thread), 4
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
//! On a GPU: 4096³ and 8192³ on both tiles, beside cuBLAS (`cublasGemmEx`, bf16 in, f32
//! accumulate and out) in the same run, checked against it and against an f64 product at
//! sampled elements. Under the emulation: 128 x 256 x 128, every element checked against
//! the f64 product. `--m M --n N --k K` chooses one shape (M a multiple of 128, N of the
//! tile's width, K of 64; its kernels made at the first launch), `--tile 128|256` one tile,
//! `--source` prints the kernel (of 128 x 128 tiles unless `--tile 256`).

mod common;

use common::gemm::{self, relative_error};
use common::{cell, median_time, random_values};
use parray::bf16;
use parray::gpu::Timing;
use parray::prelude::*;
use parray::{Array, DataType};

/// The widths of the tiles of C a block computes (128 rows, 64 a warpgroup) and the k-tile.
const WIDTHS: [usize; 2] = [128, 256];
const ROWS: usize = 128;
const K_TILE: usize = 64;
const TILES_ARE: &str = "the tiles of C are 128 x 128 or 128 x 256 (--tile 128 or 256)";

/// The shared stages of a tile's width, the subprogram's `S = 2 + Q`.
fn stages(cols: usize) -> usize {
    2 + cols / 128
}

/// The blocks a multiprocessor holds at a tile's width, the subprogram's `BLOCKS = 2 / Q`
/// (its `__launch_bounds__`): two of 96 KiB of stages and at most 128 registers a thread,
/// or one of 192 KiB.
fn blocks_per_sm(cols: usize) -> usize {
    256 / cols
}

subprog! {
    /// `dc = da * db` for `da` of the type `TA` (M x K bf16), `db` of `TB` (K x N bf16) and
    /// `dc` of `TC` (M x N f32), on tiles of C of 128 x 128 Q, Q = `dim(TQ_0)` (1 or 2), M a
    /// multiple of 128, N of 128 Q, K of 64, on `dim(TG_0)` blocks of two warpgroups, each
    /// making the tiles of C its number, plus the blocks', and so on.
    pub fn gemm_bf16<TA, TB, TC, TG, TQ>(da, db, dc) -> parray::Result<()> {
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
            const BLOCKS = 2 / Q;
            // The tiles of C each block makes, at most.
            const ROUNDS = ceil((M / 128) * (N / (128 * Q)) / dim(TG_0));
            // Blocks of two warpgroups, w, each of t2 (the warp), t1, t0: the ISA's digits,
            // which the accumulator's type names (w it leaves out: each warpgroup holds its
            // own accumulator). Their number is fixed when the program is built, whatever
            // the sizes: a type naming a grid of run-time size is run-time sized, and a
            // fragment's sizes are numbers.
            cuda(bf16* a, bf16* b, float* c) [dim(TG_0)][[2][[4][8][4]]] G;
            // The accumulator m64nNk16, N = 128 Q: registers (v2, v1, t2, t1, t0, v0) seen
            // as m x n.
            rmem float [16*Q][2][#G_1_1_0][#G_1_1_1][#G_1_1_2][2] ACC_REGS;
            float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC;
            // S stages of A's 128 x 64 tile, of core matrices of 8 x 8 (m / 8, k / 8,
            // m % 8, k % 8): 128 contiguous bytes each; warpgroup w's 64 rows from m / 8 = 8 w.
            smem bf16 [S][16][8][8][8] AS;
            // S of B's 64 x 128 Q tile, MN-major as it is in global memory, in atoms of
            // 64 n (128 bytes a row of k) whose 16-byte chunks are XORed with k % 8 (the
            // 128B swizzle): a k16 step is 16 whole rows, 2048 bytes, so it is a pointer
            // move. The atoms go in Q pairs, so that one of each pair is a dimension. Both
            // warpgroups read all of it.
            smem bf16 [S][[Q][2]][[8][8]][[8 ^ BS_2_1][8]] BS;
            // A wgmma's operands: 64 rows and 16 k of a stage, the k-step s of warpgroup w
            // at `$AS[st][8 * w][2 * s][0][0]$` and `$BS[st][0][[2 * s][0]][[0][0]]$`.
            bf16 [[8#AS_1][#AS_3]][[2#AS_2][#AS_4]] A_STEP;
            bf16 [[2#BS_2_0][#BS_2_1]][[#BS_1][#BS_3]] B_STEP;
            // A by tiles: rows [tile][quarter][4 core rows][8], columns [k-tile][8 chunks][8].
            // A thread copies a 16-byte chunk of one row of each of its quarter's 4 core
            // rows: 8 consecutive threads fill one core matrix, 128 contiguous bytes of a
            // stage (no bank conflict), and a warp reads 64 contiguous bytes of each of 8 rows.
            dmem bf16 [[M/128][4][4][8]#TA_0][[K/64][8][8]#TA_1] AL;
            bf16 [#AL_0_2][#AL_1_2] A_PART;
            bf16 [4#AS_1][#AS_4] AS_PART;
            // B by tiles: rows [k-tile][half][4][8], columns [tile][Q][2][8 chunks][8]. A
            // thread copies one chunk of one k % 8 and atom parity, in each pair of atoms and
            // each k / 8 of its half: the swizzle's XOR is then one value, taken once by the
            // part's start, and the part a strided view of a stage. 16 consecutive threads
            // read 256 contiguous bytes of a row of B, 8 of them fill a 128-byte row of an atom.
            dmem bf16 [[K/64][2][4][8]#TB_0][[N/(128*Q)][Q][2][8][8]#TB_1] BL;
            bf16 [#BL_1_1][#BL_0_2][#BL_1_4] B_PART;
            bf16 [#BS_1_0][4#BS_2_0][#BS_3_1] BS_PART;
            // C by tiles in the accumulator's digits, rows [tile][w][t2][v1][t1] and columns
            // [tile][v2][t0][v0]; a thread's part (v2, v1, v0) is its registers in order.
            dmem float [[M/128][2][4][2][8]#TC_0][[N/(128*Q)][16*Q][4][2]#TC_1] CQ;
            float [#CQ_1_1][#CQ_0_3][#CQ_1_3] C_PART;
            rmem float [16*Q][2][2] ACC_PART;
        }
        detour!(G(da, db, dc) {
            #![min_blocks_per_sm(BLOCKS)]
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

/// One measured product.
struct Row {
    kernel: &'static str,
    shape: (usize, usize, usize),
    time: Timing,
    /// The check against the reference: its description and whether it passed (`None`
    /// for the reference itself).
    check: Option<(String, bool)>,
}

impl Row {
    fn tflops(&self) -> f64 {
        let (m, n, k) = self.shape;
        2.0 * m as f64 * n as f64 * k as f64 / self.time.seconds() / 1e12
    }
}

/// Random bf16 M x K and K x N matrices (row-major; values in [-1, 1) rounded to bf16).
fn inputs((m, n, k): (usize, usize, usize)) -> (Vec<bf16>, Vec<bf16>) {
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_nanos() as u64);
    let round = |v: Vec<f32>| v.into_iter().map(bf16::from_f32).collect::<Vec<_>>();
    (
        round(random_values(m * k, seed)),
        round(random_values(k * n, seed + 1)),
    )
}

/// Element (i, j) of the exact product, and sum_k |a b| (the scale of its error).
fn exact(a: &[bf16], b: &[bf16], (n, k): (usize, usize), (i, j): (usize, usize)) -> (f64, f64) {
    (0..k).fold((0.0, 0.0), |(sum, scale), p| {
        let x = a[i * k + p].to_f64() * b[p * n + j].to_f64();
        (sum + x, scale + x.abs())
    })
}

/// The worst ratio of |c - exact| to its bound over the elements `at`: each of the K/16
/// wgmmas errs by at most 2^-16 (|C| + sum |a b|) (SPEC 3.5), |C| at most the sum so far,
/// so the whole by 2^-16 (K/16) sum_k |a b|. At most 1 is a pass.
fn worst_error(
    got: &[f32],
    a: &[bf16],
    b: &[bf16],
    (n, k): (usize, usize),
    at: impl Iterator<Item = (usize, usize)>,
) -> f64 {
    let steps = (k / 16) as f64;
    at.map(|(i, j)| {
        let (want, scale) = exact(a, b, (n, k), (i, j));
        let err = (f64::from(got[i * n + j]) - want).abs();
        let bound = 2f64.powi(-16) * steps * scale;
        if err.is_nan() {
            f64::INFINITY
        } else {
            err / bound.max(f64::MIN_POSITIVE)
        }
    })
    .fold(0.0, f64::max)
}

/// A product of the types `DA`, `DB`, `DC` by one kernel.
type Multiply<'a, DA, DB, DC> =
    Box<dyn FnMut(&Array<DA>, &Array<DB>, &mut Array<DC>) -> parray::Result<()> + 'a>;

/// Runs the product of one shape on the types `DA`, `DB`, `DC` (row-major, dmem) with
/// each of `kernels` (its tile's name, and the product), beside cuBLAS on a GPU; the rows.
fn run<DA, DB, DC>(
    shape: (usize, usize, usize),
    repeats: usize,
    kernels: Vec<(&'static str, Multiply<DA, DB, DC>)>,
) -> parray::Result<Vec<Row>>
where
    DA: DataType<Elem = bf16>,
    DB: DataType<Elem = bf16>,
    DC: DataType<Elem = f32>,
{
    let (m, n, k) = shape;
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    let (ha, hb) = inputs(shape);
    let (mut a, mut b, mut c) = (
        Array::<DA>::new()?,
        Array::<DB>::new()?,
        Array::<DC>::new()?,
    );
    a.copy_from_slice(&ha)?;
    b.copy_from_slice(&hb)?;
    let mut rows = Vec::new();
    // cuBLAS in the same process, timed the same way, on a GPU.
    let theirs = if gpu {
        let mut cc = Array::<DC>::new()?;
        let math = parray::gpu::cublas::Math::F32;
        let time = median_time(repeats, true, || {
            parray::gpu::cublas::gemm(&a, &b, &mut cc, math)
        })?;
        rows.push(Row {
            kernel: "cuBLAS",
            shape,
            time,
            check: None,
        });
        let theirs: Vec<f64> = cc.to_vec()?.into_iter().map(f64::from).collect();
        Some(theirs)
    } else {
        None
    };
    for (kernel, mut multiply) in kernels {
        c.fill(f32::NAN)?;
        // The first launch makes (or finds) the kernel: not timed.
        let first = parray::gpu::time_ms(|| multiply(&a, &b, &mut c))?;
        println!("{m}x{n}x{k}, {kernel}: first launch {first} (making the kernel)");
        let time = median_time(repeats, true, || multiply(&a, &b, &mut c))?;
        let ours = c.to_vec()?;
        let check = match &theirs {
            // Against cuBLAS (the relative Frobenius error) and the f64 product at 4096
            // sampled elements.
            Some(theirs) => {
                let frobenius = relative_error(&ours, theirs);
                let sample = (0..4096).map(|s: usize| ((s * 7919) % m, (s * 104_729 + s / 64) % n));
                let worst = worst_error(&ours, &ha, &hb, (n, k), sample);
                let ok = frobenius <= 1e-4 && worst <= 1.0;
                (
                    format!("{frobenius:.1e} vs cuBLAS; sampled error {worst:.1e} of the bound"),
                    ok,
                )
            }
            None => {
                let all = (0..m).flat_map(|i| (0..n).map(move |j| (i, j)));
                let worst = worst_error(&ours, &ha, &hb, (n, k), all);
                (
                    format!("error {worst:.1e} of the bound vs f64 CPU"),
                    worst <= 1.0,
                )
            }
        };
        rows.push(Row {
            kernel,
            shape,
            time,
            check: Some(check),
        });
    }
    Ok(rows)
}

/// The product of one shape fixed when the program is built, as a module of its types:
/// a block a tile of C, on each tile of `widths`.
macro_rules! fixed {
    ($module:ident, $m:literal, $n:literal, $k:literal) => {
        #[allow(dead_code)] // each shape declares what any may use
        mod $module {
            use super::*;

            parray! {
                pub dmem bf16 [$m][$k] DA;
                pub dmem bf16 [$k][$n] DB;
                pub dmem float [$m][$n] DC;
                pub paged float [($m / 128) * ($n / 128)] GRID128;
                pub paged float [($m / 128) * ($n / 256)] GRID256;
            }

            pub fn run(repeats: usize, widths: &[usize]) -> parray::Result<Vec<Row>> {
                let mut kernels: Vec<(&'static str, Multiply<DA, DB, DC>)> = Vec::new();
                if widths.contains(&128) {
                    kernels.push(("parray 128x128", Box::new(|a, b, c| gemm_bf16!(<DA, DB, DC, GRID128, Q1>(a, b, c)))));
                }
                if widths.contains(&256) {
                    kernels.push(("parray 128x256", Box::new(|a, b, c| gemm_bf16!(<DA, DB, DC, GRID256, Q2>(a, b, c)))));
                }
                super::run(($m, $n, $k), repeats, kernels)
            }

            pub fn source(width: usize) -> &'static str {
                match width {
                    256 => gemm_bf16!(@source <DA, DB, DC, GRID256, Q2>),
                    _ => gemm_bf16!(@source <DA, DB, DC, GRID128, Q1>),
                }
            }
        }
    };
}

parray! {
    // The tile's width over 128: Q1 the m64n128k16 tiles, Q2 the m64n256k16.
    paged float [1] Q1;
    paged float [2] Q2;
}

fixed!(s128x256x128, 128, 256, 128);
fixed!(s4096, 4096, 4096, 4096);
fixed!(s8192, 8192, 8192, 8192);

/// A shape given on the command line: its sizes bound when the program runs, its kernel
/// made at the first launch, on a fixed grid of blocks that step through the tiles.
mod any_shape {
    use super::*;

    parray! {
        const SM;
        const SN;
        const SK;
        pub dmem bf16 [SM][SK] DA;
        pub dmem bf16 [SK][SN] DB;
        pub dmem float [SM][SN] DC;
        // For each of an H200's 132 multiprocessors, as many blocks as its registers and
        // shared memory hold (`blocks_per_sm`): two of 128 x 128 tiles, one of 128 x 256.
        pub paged float [132 * 2] GRID128;
        pub paged float [132 * 1] GRID256;
    }

    fn bind((m, n, k): (usize, usize, usize)) -> parray::Result<()> {
        SM.bind(m)?;
        SN.bind(n)?;
        SK.bind(k)
    }

    pub fn run(
        shape: (usize, usize, usize),
        repeats: usize,
        widths: &[usize],
    ) -> parray::Result<Vec<Row>> {
        bind(shape)?;
        let mut kernels: Vec<(&'static str, Multiply<DA, DB, DC>)> = Vec::new();
        if widths.contains(&128) {
            kernels.push((
                "parray 128x128",
                Box::new(|a, b, c| gemm_bf16!(<DA, DB, DC, GRID128, Q1>(a, b, c))),
            ));
        }
        if widths.contains(&256) {
            kernels.push((
                "parray 128x256",
                Box::new(|a, b, c| gemm_bf16!(<DA, DB, DC, GRID256, Q2>(a, b, c))),
            ));
        }
        super::run(shape, repeats, kernels)
    }

    pub fn source(shape: (usize, usize, usize), width: usize) -> parray::Result<&'static str> {
        bind(shape)?;
        match width {
            256 => gemm_bf16!(@source <DA, DB, DC, GRID256, Q2>),
            _ => gemm_bf16!(@source <DA, DB, DC, GRID128, Q1>),
        }
    }
}

/// M x N x K.
type Shape = (usize, usize, usize);

/// The tiles to run (`--tile 128|256`, else both) and the shape (`--m M --n N --k K`, if
/// given), checked against the tiles: `Err` says why not.
fn arguments() -> Result<(Vec<usize>, Option<Shape>), String> {
    let widths = match gemm::value("--tile") {
        None => WIDTHS.to_vec(),
        Some(w) if WIDTHS.contains(&w) => vec![w],
        Some(w) => return Err(format!("gemm_bf16: --tile {w}: {TILES_ARE}")),
    };
    let Some((m, n, k)) = gemm::shape() else {
        return Ok((widths, None));
    };
    let cols = widths.iter().copied().max().unwrap_or(128);
    if m == 0 || n == 0 || k == 0 || m % ROWS != 0 || n % cols != 0 || k % K_TILE != 0 {
        return Err(format!(
            "gemm_bf16: {m}x{n}x{k} is not made of whole tiles: M must be a multiple of {ROWS}, N of {cols} and K of {K_TILE} (tiles at the edges are not guarded yet; --tile 128 takes N a multiple of 128)"
        ));
    }
    Ok((widths, Some((m, n, k))))
}

fn report(rows: &[Row]) -> bool {
    println!(
        "{:<14} {:>16} {:>21} {:>20} {:>10}  check",
        "kernel", "M x N x K", "time (ms)", "TFLOP/s", "of cuBLAS"
    );
    for row in rows {
        let cublas = rows
            .iter()
            .find(|r| r.check.is_none() && r.shape == row.shape)
            .map(Row::tflops);
        let share = cublas.map_or("-".to_string(), |c| {
            format!("{:.1}%", 100.0 * row.tflops() / c)
        });
        let check = match &row.check {
            None => "reference".to_string(),
            Some((what, ok)) => format!("{} ({what})", if *ok { "ok" } else { "FAILED" }),
        };
        let (m, n, k) = row.shape;
        println!(
            "{:<14} {:>16} {:>21} {:>20} {:>10}  {check}",
            row.kernel,
            format!("{m}x{n}x{k}"),
            cell(row.time.ms, 3, row.time),
            cell(row.tflops(), 2, row.time),
            share
        );
    }
    rows.iter().all(|r| r.check.as_ref().is_none_or(|c| c.1))
}

fn main() -> parray::Result<()> {
    let (widths, shape) = match arguments() {
        Ok(arguments) => arguments,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    if std::env::args().any(|a| a == "--source") {
        let width = widths[0];
        match shape {
            Some(shape) => print!("{}", any_shape::source(shape, width)?),
            None => print!("{}", s4096::source(width)),
        }
        return Ok(());
    }
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    println!("backend: {:?}", parray::gpu::backend()?);
    for cols in &widths {
        println!(
            "tiles: C {ROWS}x{cols} a block of two warpgroups (256 threads, 64 rows each), k-tiles of {K_TILE}, {} shared stages of {} KiB, {} a multiprocessor, wgmma m64n{cols}k16 (bf16 in, f32 accumulate)",
            stages(*cols),
            (ROWS + cols) * K_TILE * 2 / 1024,
            match blocks_per_sm(*cols) {
                1 => "one block".to_string(),
                n => format!("{n} blocks"),
            }
        );
    }
    let repeats = gemm::repeats()?;
    let mut table = Vec::new();
    match shape {
        Some(shape) => table.extend(any_shape::run(shape, repeats, &widths)?),
        None if gpu => {
            table.extend(s4096::run(repeats, &widths)?);
            table.extend(s8192::run(repeats, &widths)?);
        }
        None => {
            println!("shapes: 128x256x128 under the emulation (a GPU runs 4096³ and 8192³; `--m M --n N --k K` chooses one)");
            table.extend(s128x256x128::run(repeats, &widths)?);
        }
    }
    let ok = report(&table);
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
