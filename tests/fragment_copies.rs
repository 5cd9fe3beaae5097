//! `#copy` between a tile and a fragment (SPEC.md 3.9, 2.14): each thread moves exactly
//! its own elements, straight-line, register `r` from (or to) the element the fragment's
//! type places there for the thread's digits (in the C, A's copy from shared memory is the
//! warp's `ldmatrix`, which moves the same elements: `tests/ldmatrix.rs`). Four warps copy
//! a 16 x 16 bf16 tile of shared memory into mma.sync m16n8k16's A fragment and store
//! their registers, and each copies a C fragment to its own 16 x 8 f32 tile of global
//! memory; both are checked against the PTX ISA's placement written out here (lane = t0 +
//! 4 t1, register v = v0 + 2 v1 + 4 v2; A: m = t1 + 8 v1, k = 2 t0 + v0 + 8 v2; C:
//! m = t1 + 8 v1, n = 2 t0 + v0), not through the type machinery. Runs on the GPU where
//! there is one, else on the CPU emulation.

use parray::bf16;
use parray::prelude::*;

parray! {
    // 4 warps: G_1_0 the warp, G_1_1 t1 (the ISA's groupID), G_1_2 t0.
    cuda(bf16* a, bf16* regs, float* c) [1][[4][8][4]] G;
    rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;
    bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA;
    rmem float [[2][#G_1_1]][[#G_1_2][2]] FC;
    smem bf16 [16][16] AS;
    dmem bf16 [16][16] A;
    // Each thread's 8 registers of A, in register order.
    dmem bf16 [128][8] REGS;
    // Each warp's 16 x 8 tile of C.
    dmem float [4][[16][8]] C;
}

/// The value of A[m][k]: exact in bf16, distinct for each element.
fn a_value(m: usize, k: usize) -> f32 {
    (m * 16 + k) as f32
}

#[test]
fn each_lane_copies_its_own_elements_where_the_isa_places_them() -> parray::Result<()> {
    let ha: Vec<bf16> = (0..256)
        .map(|i| bf16::from_f32(a_value(i / 16, i % 16)))
        .collect();
    let mut a = A::create()?;
    a.copy_from_slice(&ha)?;
    let mut regs = REGS::create()?;
    let mut c = C::create()?;
    detour!(G(&a, &mut regs, &mut c) {
        let s = AS::create();
        s[$tid_1$] = a[$tid_1$];
        s[$tid_1$ + 128] = a[$tid_1$ + 128];
        #sync;
        let fa = FA_REGS::create();
        #copy AS(s) to FA(fa);
        for v in 0..8 {
            regs[$REGS[$tid_1$][v]$] = fa[v];
        }
        let fc = FC::create();
        for v in 0..4 {
            fc[v] = ($tid_1$ * 10 + v) as f32;
        }
        #copy FC(fc) to C_1(c + $C[$tid_1_0$][0]$);
    })?;
    let got = regs.to_vec()?;
    for thread in 0..128 {
        let lane = thread % 32;
        let (t0, t1) = (lane % 4, lane / 4);
        for v in 0..8 {
            let (v0, v1, v2) = (v % 2, v / 2 % 2, v / 4);
            let (m, k) = (t1 + 8 * v1, 2 * t0 + v0 + 8 * v2);
            assert_eq!(
                got[thread * 8 + v].to_f32(),
                a_value(m, k),
                "thread {thread}, register {v}: A[{m}][{k}]"
            );
        }
    }
    let got = c.to_vec()?;
    for warp in 0..4 {
        for lane in 0..32 {
            let (t0, t1) = (lane % 4, lane / 4);
            for v in 0..4 {
                let (v0, v1) = (v % 2, v / 2);
                let (m, n) = (t1 + 8 * v1, 2 * t0 + v0);
                let thread = warp * 32 + lane;
                assert_eq!(
                    got[warp * 128 + m * 8 + n],
                    (thread * 10 + v) as f32,
                    "warp {warp}: C[{m}][{n}]"
                );
            }
        }
    }
    Ok(())
}

/// A's copy from the shared tile is one `ldmatrix.x4` per warp; the accumulator's to
/// global memory two `float2` stores per thread.
#[test]
fn the_fragment_copies_c() {
    let (a, regs, c) = ((), (), ());
    insta::assert_snapshot!(
        "fragment_copies",
        kernel_source!(G(a, regs, c) {
            let s = AS::create();
            s[$tid_1$] = a[$tid_1$];
            s[$tid_1$ + 128] = a[$tid_1$ + 128];
            #sync;
            let fa = FA_REGS::create();
            #copy AS(s) to FA(fa);
            for v in 0..8 {
                regs[$REGS[$tid_1$][v]$] = fa[v];
            }
            let fc = FC::create();
            for v in 0..4 {
                fc[v] = ($tid_1$ * 10 + v) as f32;
            }
            #copy FC(fc) to C_1(c + $C[$tid_1_0$][0]$);
        })
    );
}
