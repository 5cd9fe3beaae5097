//! `#mma D(d) += A(a) * B(b)` (SPEC.md 3.5, "MMA"): the warp's mma.sync m16n8k16 (bf16 in,
//! f32 accumulate) over fragments (SPEC 2.14). Each of the 8 warps of a grid of 2 blocks
//! of 4 warps copies its own A (16 x 16), B (16 x 8) and C from global memory into its
//! lanes' registers (`#copy`, each lane moving the elements its fragment type places in
//! its registers), runs the MMA and copies D back from `FC`. The result is
//! compared with an f64 matmul of the same bf16 inputs: |d - ref| <= 2^-16 (|c| + sum |a
//! b|), the tolerance SPEC 3.5 states for the emulation and a GPU alike (the emulation is
//! the f64 sum rounded once, within 2^-24 of it). Runs on the GPU where there is one
//! (`PARRAY_BACKEND=cuda`), else on the CPU emulation.

use parray::bf16;
use parray::prelude::*;

parray! {
    const WARPS = 8;
    // 2 blocks of 4 warps: G_1_0 the warp, G_1_1 t1 (the ISA's groupID), G_1_2 t0.
    cuda(bf16* a, bf16* b, float* d) [2][[4][8][4]] G;
    // A's registers in the ISA's order (v2, v1, t1, t0, v0), viewed as m x k.
    rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;
    bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA;
    // B as k x n, C/D as m x n.
    rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB;
    rmem float [[2][#G_1_1]][[#G_1_2][2]] FC;
    // One lane's part of each: the dimensions that are not the thread's digits.
    bf16 [#FA_REGS_0][#FA_REGS_1][#FA_REGS_4] FA_PART;
    bf16 [#FB_0_0][#FB_0_2] FB_PART;
    float [#FC_0_0][#FC_1_1] FC_PART;
    // Each warp's tiles: `A_1`, `B_1`, `D_1` have the fragments' dimensions.
    dmem bf16 [WARPS][[16][16]] A;
    dmem bf16 [WARPS][[16][8]] B;
    dmem float [WARPS][[16][8]] D;
}

/// A deterministic stream of 64-bit words (splitmix64).
fn words(seed: u64) -> impl FnMut() -> u64 {
    let mut s = seed;
    move || {
        s = s.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// `n` bf16 values in (-2, 2), of every exponent down to 2^-8 (so the products' sums are
/// not exact in f32).
fn values(seed: u64, n: usize) -> Vec<bf16> {
    let mut next = words(seed);
    (0..n)
        .map(|_| {
            let w = next();
            let mag = (w % 1024) as f64 / 512.0 * 2f64.powi(-(((w >> 10) % 9) as i32));
            bf16::from_f64(if w >> 20 & 1 == 1 { -mag } else { mag })
        })
        .collect()
}

#[test]
fn each_warp_multiplies_its_tiles_as_the_f64_reference() -> parray::Result<()> {
    let (ha, hb, hc) = (values(1, 8 * 256), values(2, 8 * 128), values(3, 8 * 128));
    let mut a = A::create()?;
    let mut b = B::create()?;
    let mut d = D::create()?;
    a.copy_from_slice(&ha)?;
    b.copy_from_slice(&hb)?;
    let c: Vec<f32> = hc.iter().map(|x| x.to_f32()).collect();
    d.copy_from_slice(&c)?;
    detour!(G(&a, &b, &mut d) {
        let w = $tid_0$ * $dim(G_1_0)$ + $tid_1_0$;
        let fa = FA_REGS::create();
        let fb = FB::create();
        let fc = FC::create();
        #copy A_1(a + $A[w][0]$) to FA(fa);
        #copy B_1(b + $B[w][0]$) to FB(fb);
        #copy D_1(d + $D[w][0]$) to FC(fc);
        #mma FC(fc) += FA(fa) * FB(fb);
        #copy FC(fc) to D_1(d + $D[w][0]$);
    })?;
    let got = d.to_vec()?;
    for w in 0..8 {
        for m in 0..16 {
            for n in 0..8 {
                let at = w * 128 + m * 8 + n;
                let (mut exact, mut scale) = (f64::from(c[at]), f64::from(c[at]).abs());
                for k in 0..16 {
                    let p = ha[w * 256 + m * 16 + k].to_f64() * hb[w * 128 + k * 8 + n].to_f64();
                    exact += p;
                    scale += p.abs();
                }
                let err = (f64::from(got[at]) - exact).abs();
                assert!(
                    err <= scale * 2f64.powi(-16),
                    "warp {w}: D[{m}][{n}] = {} against {exact} (error {err:e}, tolerance {:e})",
                    got[at],
                    scale * 2f64.powi(-16)
                );
            }
        }
    }
    Ok(())
}

#[test]
fn the_mma_is_one_inline_ptx_instruction() {
    let (a, b, d) = ((), (), ());
    insta::assert_snapshot!(
        "mma_m16n8k16_bf16",
        kernel_source!(G(a, b, d) {
            let fa = FA_REGS::create();
            let fb = FB::create();
            let fc = FC::create();
            for v in 0..$size(FA_PART)$ {
                fa[v] = a[$tid$ * 8 + v];
            }
            for v in 0..$size(FB_PART)$ {
                fb[v] = b[$tid$ * 4 + v];
            }
            #mma FC(fc) += FA(fa) * FB(fb);
            for v in 0..$size(FC_PART)$ {
                d[$tid$ * 4 + v] = fc[v];
            }
        })
    );
}

/// Whether cuda detours run on the CPU emulation (where a warp whose lanes diverge at an
/// `#mma` is found; on a GPU it is undefined behaviour).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

#[test]
fn a_warp_whose_lanes_diverge_is_an_error() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (a, b) = (A::create()?, B::create()?);
    let mut d = D::create()?;
    let r = detour!(G(&a, &b, &mut d) {
        let fa = FA_REGS::create();
        let fb = FB::create();
        let fc = FC::create();
        if $tid$ % 32 < 16 {
            #mma FC(fc) += FA(fa) * FB(fb);
        }
        d[0] = fc[0];
    });
    let e = r.expect_err("half a warp at an mma.sync");
    assert!(
        e.to_string().contains(
            "#mma at line 145: lane 16 of this warp (thread 16 of the block) did not reach it"
        ),
        "{e}"
    );
    Ok(())
}
