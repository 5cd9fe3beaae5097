//! `#copy` between a shared tile and an mma.sync fragment of 16-bit elements is a warp's
//! `ldmatrix` (`stmatrix` the other way) where the types allow it (SPEC.md 3.9,
//! "Fragments"): each row of each 8 x 8 matrix 16 contiguous, 16-byte aligned bytes of the
//! tile, and the fragment's registers the instruction's. Four warps load m16n8k16's bf16 A
//! from a row-major tile (`.x4`) and from the first 16 columns of a 128-byte swizzled tile
//! (`.x4`), B from a k x n row-major tile (`.x2.trans`) and from an n x k tile seen as k x
//! n (`.x2`), and A from rows of 40 bytes, which ldmatrix cannot read (each thread's own
//! moves); a warp stores a bf16 accumulator by `stmatrix.x2` and `.x2.trans`; one warp runs
//! a loop of staged tiles, ldmatrix and `#mma`. Every register is checked against the PTX
//! ISA's placement written out here (lane = t0 + 4 t1, register v = v0 + 2 v1 + 4 v2; A:
//! m = t1 + 8 v1, k = 2 t0 + v0 + 8 v2; B: k = 2 t0 + v0 + 8 v1, n = t1; C: m = t1 + 8
//! v1, n = 2 t0 + v0), each tile's storage being built on the host by its own formula
//! (the swizzle's is Hopper's 128-byte mode). Runs on the GPU where there is one
//! (`PARRAY_BACKEND=cuda`), else on the CPU emulation.
use parray::bf16;
use parray::prelude::*;

parray! {
    // 4 warps: G_1_0 the warp, G_1_1 t1 (the ISA's groupID), G_1_2 t0.
    cuda(bf16* sa, bf16* st, bf16* sb, bf16* sn, bf16* sq, bf16* out) [1][[4][8][4]] G;
    rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;
    bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA;
    rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB;
    // A row-major: ldmatrix.x4.
    smem bf16 [16][16] AS;
    // 16 rows of 64 in the 128-byte swizzle; its first 16 columns as A: ldmatrix.x4.
    smem bf16 [[2][8]][[8 ^ T_0_1][8]] T;
    bf16 [#T_0][16#T_1] T_A;
    // Rows of 20 elements (40 bytes): a row of a matrix is not 16-byte aligned.
    smem bf16 [16][20] AQ;
    bf16 [#AQ_0][16#AQ_1] AQ_A;
    // B as k x n, row-major: each matrix's rows are B's columns, ldmatrix.x2.trans.
    smem bf16 [16][8] BS;
    // B stored n x k, seen as k x n: ldmatrix.x2.
    smem bf16 [8][16] BN;
    bf16 [#BN_1][#BN_0] BN_B;
    // A 16-bit accumulator of H's block, m x n (m = t1 + 8 v1, n = 2 t0 + v0), stored by
    // stmatrix.x2 to a row-major tile, and by stmatrix.x2.trans to an n x m one seen as m x n.
    smem bf16 [16][8] CS;
    smem bf16 [8][16] CN;
    bf16 [#CN_1][#CN_0] CN_C;
    cuda(bf16* cout) [1][[4][8][4]] H;
    rmem bf16 [[2][#H_1_1]][[#H_1_2][2]] HF;
    dmem bf16 [2][128] COUT;
    // One warp's m16n8k16 over k = 64 in four steps through shared tiles AS and BS.
    cuda(bf16* ga, bf16* gb, float* gd) [1][[1][8][4]] K;
    rmem bf16 [2][2][#K_1_1][#K_1_2][2] KA_REGS;
    bf16 [[#KA_REGS_1][#KA_REGS_2]][[#KA_REGS_0][#KA_REGS_3][#KA_REGS_4]] KA;
    rmem bf16 [[2][#K_1_2][2]][#K_1_1] KB;
    rmem float [[2][#K_1_1]][[#K_1_2][2]] KC;
    dmem bf16 [16][64] GA;
    dmem bf16 [64][8] GB;
    dmem float [16][8] GD;
    // The same with `half` elements.
    rmem half [2][2][#G_1_1][#G_1_2][2] HA_REGS;
    half [[#HA_REGS_1][#HA_REGS_2]][[#HA_REGS_0][#HA_REGS_3][#HA_REGS_4]] HA;
    rmem half [[2][#G_1_1]][[#G_1_2][2]] HC;
    smem half [16][16] HS;
    smem half [16][8] HCS;
    // A size given when the program runs: a body that names it is made into its kernel
    // then, its IR carried into the program (`embed`) with the copy's ldmatrix.
    const R;
    float [R] RT;
    // The tiles' storage, and each thread's registers of each copy in register order.
    dmem bf16 [256] SA;
    dmem bf16 [1024] ST;
    dmem bf16 [128] SB;
    dmem bf16 [128] SN;
    dmem bf16 [320] SQ;
    dmem bf16 [5][128][8] OUT;
}

/// A's element [m][k] and B's [k][n]: exact in bf16, distinct within each.
fn a_value(m: usize, k: usize) -> f32 {
    (m * 16 + k) as f32
}

fn b_value(k: usize, n: usize) -> f32 {
    (k * 8 + n) as f32
}

/// A storage of `len` elements holding `value(i, j)` at `offset(i, j)` for each element of
/// a `rows` x `cols` matrix, -1 elsewhere.
fn storage(
    len: usize,
    (rows, cols): (usize, usize),
    offset: impl Fn(usize, usize) -> usize,
    value: impl Fn(usize, usize) -> f32,
) -> Vec<bf16> {
    let mut s = vec![bf16::from_f32(-1.0); len];
    for i in 0..rows {
        for j in 0..cols {
            s[offset(i, j)] = bf16::from_f32(value(i, j));
        }
    }
    s
}

/// Hopper's 128-byte mode: element (r, c) of rows of 64.
fn hopper_128(r: usize, c: usize) -> usize {
    r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8
}

#[test]
fn each_lane_receives_the_elements_the_isa_places_in_its_registers() -> parray::Result<()> {
    let tiles = [
        storage(256, (16, 16), |m, k| m * 16 + k, a_value),
        storage(1024, (16, 16), hopper_128, a_value),
        storage(128, (16, 8), |k, n| k * 8 + n, b_value),
        storage(128, (16, 8), |k, n| n * 16 + k, b_value),
        storage(320, (16, 16), |m, k| m * 20 + k, a_value),
    ];
    let mut sa = SA::create()?;
    let mut st = ST::create()?;
    let mut sb = SB::create()?;
    let mut sn = SN::create()?;
    let mut sq = SQ::create()?;
    sa.copy_from_slice(&tiles[0])?;
    st.copy_from_slice(&tiles[1])?;
    sb.copy_from_slice(&tiles[2])?;
    sn.copy_from_slice(&tiles[3])?;
    sq.copy_from_slice(&tiles[4])?;
    let mut out = OUT::create()?;
    detour!(G(&sa, &st, &sb, &sn, &sq, &mut out) {
        let a = AS::create();
        let t = T::create();
        let q = AQ::create();
        let b = BS::create();
        let n = BN::create();
        for i in 0..2 {
            a[$tid_1$ * 2 + i] = sa[$tid_1$ * 2 + i];
        }
        for i in 0..8 {
            t[$tid_1$ * 8 + i] = st[$tid_1$ * 8 + i];
        }
        for i in 0..3 {
            if $tid_1$ + 128 * i < 320 {
                q[$tid_1$ + 128 * i] = sq[$tid_1$ + 128 * i];
            }
        }
        b[$tid_1$] = sb[$tid_1$];
        n[$tid_1$] = sn[$tid_1$];
        #sync;
        let fa = FA_REGS::create();
        #copy AS(a) to FA(fa);
        let ft = FA_REGS::create();
        #copy T_A(t) to FA(ft);
        let fq = FA_REGS::create();
        #copy AQ_A(q) to FA(fq);
        let fb = FB::create();
        #copy BS(b) to FB(fb);
        let fn_ = FB::create();
        #copy BN_B(n) to FB(fn_);
        for v in 0..8 {
            out[$OUT[0][$tid_1$][v]$] = fa[v];
            out[$OUT[1][$tid_1$][v]$] = ft[v];
            out[$OUT[2][$tid_1$][v]$] = fq[v];
        }
        for v in 0..4 {
            out[$OUT[3][$tid_1$][v]$] = fb[v];
            out[$OUT[4][$tid_1$][v]$] = fn_[v];
        }
    })?;
    let got = out.to_vec()?;
    let reg = |copy: usize, thread: usize, v: usize| got[(copy * 128 + thread) * 8 + v].to_f32();
    for thread in 0..128 {
        let lane = thread % 32;
        let (t0, t1) = (lane % 4, lane / 4);
        for v in 0..8 {
            let (v0, v1, v2) = (v % 2, v / 2 % 2, v / 4);
            let (m, k) = (t1 + 8 * v1, 2 * t0 + v0 + 8 * v2);
            for (copy, tile) in [(0, "AS"), (1, "T_A"), (2, "AQ_A")] {
                assert_eq!(
                    reg(copy, thread, v),
                    a_value(m, k),
                    "{tile}: thread {thread}, register {v}: A[{m}][{k}]"
                );
            }
        }
        for v in 0..4 {
            let (v0, v1) = (v % 2, v / 2);
            let (k, n) = (2 * t0 + v0 + 8 * v1, t1);
            for (copy, tile) in [(3, "BS"), (4, "BN_B")] {
                assert_eq!(
                    reg(copy, thread, v),
                    b_value(k, n),
                    "{tile}: thread {thread}, register {v}: B[{k}][{n}]"
                );
            }
        }
    }
    Ok(())
}

/// The C of the five copies: four `ldmatrix` (`.x4`, `.x4` on the swizzle, `.x2.trans`,
/// `.x2`) whose row addresses are sums of the thread's digits and their bits (`&`, `>>`,
/// the swizzle's `^`), no division or remainder; the tiles they read declared 16-byte
/// aligned; and A from rows of 40 bytes as each thread's eight moves.
#[test]
fn the_copies_are_ldmatrix_where_the_types_allow() {
    let (sa, st, sb, sn, sq, out) = ((), (), (), (), (), ());
    let c = kernel_source!(G(sa, st, sb, sn, sq, out) {
        let a = AS::create();
        let t = T::create();
        let q = AQ::create();
        let b = BS::create();
        let n = BN::create();
        #sync;
        let fa = FA_REGS::create();
        #copy AS(a) to FA(fa);
        let ft = FA_REGS::create();
        #copy T_A(t) to FA(ft);
        let fq = FA_REGS::create();
        #copy AQ_A(q) to FA(fq);
        let fb = FB::create();
        #copy BS(b) to FB(fb);
        let fn_ = FB::create();
        #copy BN_B(n) to FB(fn_);
        out[$tid_1$] = fa[0] + ft[0] + fq[0] + fb[0] + fn_[0];
    });
    let addresses: Vec<&str> = c
        .lines()
        .filter(|l| l.contains("__cvta_generic_to_shared"))
        .collect();
    assert_eq!(addresses.len(), 4, "{c}");
    for a in &addresses {
        assert!(!a.contains('/') && !a.contains('%'), "{a}");
    }
    for op in [
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.shared.b16",
    ] {
        assert!(c.contains(op), "{op}:\n{c}");
    }
    insta::assert_snapshot!("ldmatrix_copies", c);
}

/// Whether cuda detours run on the CPU emulation (where a warp whose lanes diverge at an
/// `ldmatrix` is found; on a GPU it is undefined behaviour).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

/// An ldmatrix is a warp's: half a warp at it is an error on the emulation, as at `#mma`.
#[test]
fn a_warp_whose_lanes_diverge_at_an_ldmatrix_is_an_error() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (sa, st, sb, sn, sq) = (
        SA::create()?,
        ST::create()?,
        SB::create()?,
        SN::create()?,
        SQ::create()?,
    );
    let mut out = OUT::create()?;
    // The line of the `#copy` below.
    let line = line!() + 7;
    let r = detour!(G(&sa, &st, &sb, &sn, &sq, &mut out) {
        let a = AS::create();
        a[$tid_1$] = sa[$tid_1$];
        #sync;
        let fa = FA_REGS::create();
        if $tid_1$ % 32 < 16 {
            #copy AS(a) to FA(fa);
        }
        out[$OUT[0][$tid_1$][0]$] = fa[0];
    });
    let e = r.expect_err("half a warp at an ldmatrix").to_string();
    let at = format!("#copy at line {line}: lane 16 of this warp (thread 16 of the block) did not reach it: the 32 lanes of a warp execute an ldmatrix together");
    assert!(e.contains(&at), "{e}");
    Ok(())
}

/// A 16-bit accumulator to shared tiles by `stmatrix` (sm_90): warp 0 stores its lanes'
/// registers (a branch may leave whole warps out), element (m, n) from register v0 + 2 v1
/// of lane t0 + 4 t1 (m = t1 + 8 v1, n = 2 t0 + v0), to a row-major tile and to an n x m
/// one; each tile's storage is then copied out as it lies.
#[test]
fn stmatrix_stores_each_lanes_registers_where_the_isa_places_them() -> parray::Result<()> {
    let mut cout = COUT::create()?;
    detour!(H(&mut cout) {
        let cs = CS::create();
        let cn = CN::create();
        let fc = HF::create();
        for v in 0..4 {
            fc[v] = (($tid_1$ % 32) * 4 + v) as f32 as bf16;
        }
        if $tid_1_0$ == 0 {
            #copy HF(fc) to CS(cs);
            #copy HF(fc) to CN_C(cn);
        }
        #sync;
        cout[$COUT[0][$tid_1$]$] = cs[$tid_1$];
        cout[$COUT[1][$tid_1$]$] = cn[$tid_1$];
    })?;
    let got = cout.to_vec()?;
    for lane in 0..32 {
        let (t0, t1) = (lane % 4, lane / 4);
        for v in 0..4 {
            let (v0, v1) = (v % 2, v / 2);
            let (m, n) = (t1 + 8 * v1, 2 * t0 + v0);
            let want = (lane * 4 + v) as f32;
            assert_eq!(got[m * 8 + n].to_f32(), want, "CS[{m}][{n}]");
            assert_eq!(got[128 + n * 16 + m].to_f32(), want, "CN[{n}][{m}]");
        }
    }
    Ok(())
}

/// The C of the two stores: `stmatrix.x2` and `stmatrix.x2.trans`, each lane's two
/// 32-bit registers packed from its four bf16 registers.
#[test]
fn the_accumulator_stores_are_stmatrix() {
    let cout = ();
    let c = kernel_source!(H(cout) {
        let cs = CS::create();
        let cn = CN::create();
        let fc = HF::create();
        #copy HF(fc) to CS(cs);
        #copy HF(fc) to CN_C(cn);
        #sync;
        cout[$tid_1$] = cs[$tid_1$] + cn[$tid_1$];
    });
    for op in [
        "stmatrix.sync.aligned.m8n8.x2.shared.b16",
        "stmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
    ] {
        assert!(c.contains(op), "{op}:\n{c}");
    }
    insta::assert_snapshot!("stmatrix_copies", c);
}

/// HIP has neither instruction: each thread moves its own registers, both ways.
#[test]
fn hip_moves_each_threads_own_registers() {
    let cout = ();
    let c = kernel_source!(hip(64): H(cout) {
        let cs = CS::create();
        let fc = HF::create();
        #sync;
        #copy CS(cs) to HF(fc);
        #copy HF(fc) to CS(cs);
        cout[$tid_1$] = fc[0];
    });
    assert!(
        !c.contains("ldmatrix.sync") && !c.contains("stmatrix.sync"),
        "{c}"
    );
    assert!(
        c.contains("fc[3u] = cs[") && c.contains("] = fc[3u];"),
        "{c}"
    );
}

/// The loop of a tensor-core kernel: each step stages a 16 x 16 slice of A and a 16 x 8
/// slice of B in shared memory, loads them by `ldmatrix.x4` and `ldmatrix.x2.trans`, and
/// accumulates their product with `#mma`; small integers, so that every sum is exact and
/// the result is the integer product on the emulation and a GPU alike.
#[test]
fn a_loop_of_ldmatrix_and_mma_multiplies() -> parray::Result<()> {
    let a_at = |m: usize, k: usize| ((m * 7 + k * 3) % 5) as f32 - 2.0;
    let b_at = |k: usize, n: usize| ((k * 5 + n) % 7) as f32 - 3.0;
    let ha: Vec<bf16> = (0..16 * 64)
        .map(|i| bf16::from_f32(a_at(i / 64, i % 64)))
        .collect();
    let hb: Vec<bf16> = (0..64 * 8)
        .map(|i| bf16::from_f32(b_at(i / 8, i % 8)))
        .collect();
    let mut ga = GA::create()?;
    let mut gb = GB::create()?;
    let mut gd = GD::create()?;
    ga.copy_from_slice(&ha)?;
    gb.copy_from_slice(&hb)?;
    detour!(K(&ga, &gb, &mut gd) {
        let sa = AS::create();
        let sb = BS::create();
        let fa = KA_REGS::create();
        let fb = KB::create();
        let fc = KC::create();
        for v in 0..4 {
            fc[v] = 0.0;
        }
        for kt in 0..4 {
            #sync;
            for i in 0..8 {
                let e = $tid_1$ * 8 + i;
                sa[e] = ga[$GA[e / 16][kt * 16 + e % 16]$];
            }
            for i in 0..4 {
                let e = $tid_1$ * 4 + i;
                sb[e] = gb[$GB[kt * 16 + e / 8][e % 8]$];
            }
            #sync;
            #copy AS(sa) to KA(fa);
            #copy BS(sb) to KB(fb);
            #mma KC(fc) += KA(fa) * KB(fb);
        }
        #copy KC(fc) to GD(gd);
    })?;
    let got = gd.to_vec()?;
    for m in 0..16 {
        for n in 0..8 {
            let want: f32 = (0..64).map(|k| a_at(m, k) * b_at(k, n)).sum();
            assert_eq!(got[m * 8 + n], want, "D[{m}][{n}]");
        }
    }
    Ok(())
}

/// The loop's copies are `ldmatrix` (the tiles are the body's shared arrays, the rows
/// aligned, the moves proved).
#[test]
fn the_loops_copies_are_ldmatrix() {
    let (ga, gb, gd) = ((), (), ());
    let c = kernel_source!(K(ga, gb, gd) {
        let sa = AS::create();
        let sb = BS::create();
        let fa = KA_REGS::create();
        let fb = KB::create();
        let fc = KC::create();
        for kt in 0..4 {
            #sync;
            for i in 0..8 {
                let e = $tid_1$ * 8 + i;
                sa[e] = ga[$GA[e / 16][kt * 16 + e % 16]$];
            }
            for i in 0..4 {
                let e = $tid_1$ * 4 + i;
                sb[e] = gb[$GB[kt * 16 + e / 8][e % 8]$];
            }
            #sync;
            #copy AS(sa) to KA(fa);
            #copy BS(sb) to KB(fb);
            #mma KC(fc) += KA(fa) * KB(fb);
        }
        #copy KC(fc) to GD(gd);
    });
    for op in [
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16",
        "mma.sync.aligned.m16n8k16",
    ] {
        assert!(c.contains(op), "{op}:\n{c}");
    }
}

/// A body that also names a size given at run time is made into its kernel when it runs,
/// from its IR carried into the program: the ldmatrix copy survives the trip (on a GPU),
/// and its registers are A's as before.
#[test]
fn an_ldmatrix_copy_in_a_kernel_made_at_run_time() -> parray::Result<()> {
    R.bind(8)?;
    let tile = storage(256, (16, 16), |m, k| m * 16 + k, a_value);
    let mut sa = SA::create()?;
    sa.copy_from_slice(&tile)?;
    let (st, sb, sn, sq) = (ST::create()?, SB::create()?, SN::create()?, SQ::create()?);
    let mut out = OUT::create()?;
    detour!(G(&sa, &st, &sb, &sn, &sq, &mut out) {
        let a = AS::create();
        for i in 0..2 {
            a[$tid_1$ * 2 + i] = sa[$tid_1$ * 2 + i];
        }
        #sync;
        let fa = FA_REGS::create();
        #copy AS(a) to FA(fa);
        for v in 0..$dim(RT_0)$ {
            out[$OUT[0][$tid_1$][v]$] = fa[v];
        }
    })?;
    let got = out.to_vec()?;
    for thread in 0..128 {
        let (t0, t1) = (thread % 32 % 4, thread % 32 / 4);
        for v in 0..8 {
            let (v0, v1, v2) = (v % 2, v / 2 % 2, v / 4);
            let (m, k) = (t1 + 8 * v1, 2 * t0 + v0 + 8 * v2);
            assert_eq!(
                got[thread * 8 + v].to_f32(),
                a_value(m, k),
                "thread {thread}, register {v}"
            );
        }
    }
    Ok(())
}

/// `half` registers are unpacked from (packed into) the instructions' 32-bit registers by
/// `__ushort_as_half` (`__half_as_ushort`).
#[test]
fn half_fragments_move_by_the_same_instructions() {
    let (sa, st, sb, sn, sq, out) = ((), (), (), (), (), ());
    let c = kernel_source!(G(sa, st, sb, sn, sq, out) {
        let h = HS::create();
        let hc = HCS::create();
        #sync;
        let ha = HA_REGS::create();
        #copy HS(h) to HA(ha);
        let hf = HC::create();
        for v in 0..4 {
            hf[v] = ha[v];
        }
        #copy HC(hf) to HCS(hc);
        #sync;
        out[$tid_1$] = (hc[$tid_1$] as f32) as bf16;
    });
    for want in [
        "ldmatrix.sync.aligned.m8n8.x4.shared.b16",
        "ha[7] = __ushort_as_half((unsigned short)(__parray_r3 >> 16));",
        "stmatrix.sync.aligned.m8n8.x2.shared.b16",
        "(unsigned)__half_as_ushort(hf[2]) | (unsigned)__half_as_ushort(hf[3]) << 16",
    ] {
        assert!(c.contains(want), "{want}:\n{c}");
    }
}

/// Where the types allow it but the prover does not keep it, the copy is each thread's
/// moves: from global memory (a parameter), and from a shared array at a displacement of
/// 4 elements (8 bytes: no row is 16-byte aligned); at 8 it is the instruction.
#[test]
fn the_prover_keeps_ldmatrix_for_aligned_rows_of_a_shared_array_only() {
    let (sa, st, sb, sn, sq, out) = ((), (), (), (), (), ());
    let global = kernel_source!(G(sa, st, sb, sn, sq, out) {
        let fa = FA_REGS::create();
        #copy AS(sa) to FA(fa);
        out[$tid_1$] = fa[0];
    });
    assert!(!global.contains("ldmatrix.sync"), "{global}");
    assert!(global.contains("fa[7u] = "), "{global}");
    let misaligned = kernel_source!(G(sa, st, sb, sn, sq, out) {
        let t = T::create();
        #sync;
        let fa = FA_REGS::create();
        #copy AS(t + 4) to FA(fa);
        out[$tid_1$] = fa[0];
    });
    assert!(!misaligned.contains("ldmatrix.sync"), "{misaligned}");
    assert!(misaligned.contains("fa[7u] = t["), "{misaligned}");
    let aligned = kernel_source!(G(sa, st, sb, sn, sq, out) {
        let t = T::create();
        #sync;
        let fa = FA_REGS::create();
        #copy AS(t + 8) to FA(fa);
        out[$tid_1$] = fa[0];
    });
    assert!(
        aligned.contains("ldmatrix.sync.aligned.m8n8.x4.shared.b16"),
        "{aligned}"
    );
}
