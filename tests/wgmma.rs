//! `#mma D(d) += A(a) * B(b)` of shared-memory tiles (SPEC.md 3.5, "MMA"): a warpgroup's
//! wgmma m64nNk16 (bf16 in, f32 accumulate), A (64 x 16) and B (16 x N) read by the tensor
//! core through matrix descriptors derived from their types, D a fragment over the 128
//! threads. Each test builds the tiles' storage on the host by its own formula (the
//! canonical K-major layouts: unswizzled core matrices, and the 32, 64 and 128-byte
//! swizzles), the threads copy it into shared memory word for word, load C into their
//! registers in the ISA's order (thread t0 + 4 t1 + 32 t2, register v0 + 2 v1 + 4 v2 holds
//! D[t1 + 8 v1 + 16 t2][2 t0 + v0 + 8 v2]), run the MMA and store the registers back; the
//! result is compared with an f64 matmul of the same inputs, |d - ref| <= 2^-16 (|c| +
//! sum |a b|), the tolerance SPEC 3.5 states. N = 8, 64, 128 and 256; MN-major tiles (the
//! transpose bits); `half` tiles; a k-loop over a 64 x 64 tile in four 16-wide steps,
//! synchronous and `#mma async` with one `#mma wait`; a loop over k-tiles that keeps one
//! k-tile's group in flight while the next stage is filled (`#mma wait 1`), and the
//! emulation refusing writes of tiles in flight; tiles in the dynamic shared memory;
//! a kernel made at run time; a block of two warpgroups, each its own product. On the CPU
//! these check the types and the accumulator's table (the emulation reads the tiles
//! through the types); on a GPU the descriptors against the hardware. Runs on the GPU
//! where there is one (`PARRAY_BACKEND=cuda`; a wgmma needs an sm_90 GPU), else on the CPU
//! emulation.

use parray::prelude::*;
use parray::Array;
use parray::{bf16, f16};

parray! {
    // One warpgroup a block: G_1_0 the warp in it (t2), G_1_1 t1, G_1_2 t0.
    cuda(bf16* a, bf16* b, float* d) [1][[4][8][4]] G;
    // The accumulators of N = 8, 64, 256: registers (v2, v1, t2, t1, t0, v0) as m x n.
    rmem float [1][2][#G_1_0][#G_1_1][#G_1_2][2] ACC8_REGS;
    float [[#ACC8_REGS_2][#ACC8_REGS_1][#ACC8_REGS_3]][[#ACC8_REGS_0][#ACC8_REGS_4][#ACC8_REGS_5]] ACC8;
    rmem float [8][2][#G_1_0][#G_1_1][#G_1_2][2] ACC64_REGS;
    float [[#ACC64_REGS_2][#ACC64_REGS_1][#ACC64_REGS_3]][[#ACC64_REGS_0][#ACC64_REGS_4][#ACC64_REGS_5]] ACC64;
    rmem float [32][2][#G_1_0][#G_1_1][#G_1_2][2] ACC256_REGS;
    float [[#ACC256_REGS_2][#ACC256_REGS_1][#ACC256_REGS_3]][[#ACC256_REGS_0][#ACC256_REGS_4][#ACC256_REGS_5]] ACC256;
    // A, K-major. 128B: rows of 64, the 16-byte chunk ^ row % 8; A the first 16 columns.
    smem bf16 [[8][8]][[8 ^ T128_0_1][8]] T128;
    bf16 [#T128_0][[2#T128_1_0][#T128_1_1]] A128;
    // 64B: rows of 32, the chunk ^ (row / 2) % 4.
    smem bf16 [[8][4][2]][[4 ^ T64_0_1][8]] T64;
    bf16 [#T64_0][[2#T64_1_0][#T64_1_1]] A64;
    // 32B: rows of 16, the chunk ^ (row / 4) % 2.
    smem bf16 [[8][2][4]][[2 ^ A32_0_1][8]] A32;
    // Unswizzled: 8 x 8 core matrices of 128 contiguous bytes (m / 8, k / 8, m % 8, k % 8).
    smem bf16 [8][2][8][8] TN;
    bf16 [[#TN_0][#TN_2]][[#TN_1][#TN_3]] AN;
    // B stored n x k, K-major as A, seen as k x n.
    smem bf16 [[8][8]][[8 ^ BT128_0_1][8]] BT128;
    bf16 [[2#BT128_1_0][#BT128_1_1]][#BT128_0] B128;
    smem bf16 [[8][4][2]][[4 ^ BT64_0_1][8]] BT64;
    bf16 [[2#BT64_1_0][#BT64_1_1]][#BT64_0] B64;
    smem bf16 [[8][2][4]][[2 ^ BT32_0_1][8]] BT32;
    bf16 [#BT32_1][#BT32_0] B32;
    smem bf16 [8][2][8][8] BTN;
    bf16 [[#BTN_1][#BTN_3]][[#BTN_0][#BTN_2]] BN;
    // N = 8 and 256 in the 128B mode.
    smem bf16 [[1][8]][[8 ^ BT8_0_1][8]] BT8;
    bf16 [[2#BT8_1_0][#BT8_1_1]][#BT8_0] B8;
    smem bf16 [[32][8]][[8 ^ BT256_0_1][8]] BT256;
    bf16 [[2#BT256_1_0][#BT256_1_1]][#BT256_0] B256;
    // The k-loop: 64 x 64 A and 64 x 64 (n x k) B of core matrices (mn / 8, k / 8, mn % 8,
    // k % 8); each step's operand the 16 k from 16 s, at 16 s / 8 core matrices in.
    smem bf16 [8][8][8][8] KA;
    bf16 [[#KA_0][#KA_2]][[2#KA_1][#KA_3]] KA_STEP;
    smem bf16 [8][8][8][8] KB;
    bf16 [[2#KB_1][#KB_3]][[#KB_0][#KB_2]] KB_STEP;
    // MN-major tiles (the transpose bits): A stored k x m and B k x n (row-major B), m and n
    // contiguous in 128-byte rows, the chunk ^ k % 8; B of N = 128 in two such atoms
    // along n (the descriptor's LBO apart); A stored k x m unswizzled, 8 m a chunk, the k
    // rows of one chunk contiguous (m / 8, k / 8, k % 8, m % 8).
    smem bf16 [[2][8]][[8 ^ AT_0_1][8]] AT;
    bf16 [#AT_1][#AT_0] ATV;
    smem bf16 [[2][8]][[8 ^ BK_0_1][8]] BK;
    smem bf16 [2][[2][8]][[8 ^ BK2_1_1][8]] BK2;
    bf16 [#BK2_1][[#BK2_0][#BK2_2]] BK2V;
    rmem float [16][2][#G_1_0][#G_1_1][#G_1_2][2] ACC128_REGS;
    float [[#ACC128_REGS_2][#ACC128_REGS_1][#ACC128_REGS_3]][[#ACC128_REGS_0][#ACC128_REGS_4][#ACC128_REGS_5]] ACC128;
    smem bf16 [8][2][8][8] ATN;
    bf16 [[#ATN_0][#ATN_3]][[#ATN_1][#ATN_2]] ATNV;
    // The 128B tiles of `half`, over a block of `half` pointers.
    cuda(half* a, half* b, float* d) [1][[4][8][4]] H;
    rmem float [8][2][#H_1_0][#H_1_1][#H_1_2][2] HACC_REGS;
    float [[#HACC_REGS_2][#HACC_REGS_1][#HACC_REGS_3]][[#HACC_REGS_0][#HACC_REGS_4][#HACC_REGS_5]] HACC;
    smem half [[8][8]][[8 ^ HT_0_1][8]] HT;
    half [#HT_0][[2#HT_1_0][#HT_1_1]] HA;
    smem half [[8][8]][[8 ^ HBT_0_1][8]] HBT;
    half [[2#HBT_1_0][#HBT_1_1]][#HBT_0] HB;
    dmem half [16384] HGA;
    dmem half [16384] HGB;
    // The 128B tiles of `float`, read as tf32 (m64nNk8): rows of 32 floats, 8 chunks of 4,
    // the chunk ^ row % 8; both K-major (B stored n x k). A step is 8 k, 32 bytes of a row.
    cuda(float* a, float* b, float* d) [1][[4][8][4]] F;
    rmem float [8][2][#F_1_0][#F_1_1][#F_1_2][2] FACC_REGS;
    float [[#FACC_REGS_2][#FACC_REGS_1][#FACC_REGS_3]][[#FACC_REGS_0][#FACC_REGS_4][#FACC_REGS_5]] FACC;
    smem float [[8][8]][[8 ^ FT_0_1][4]] FT;
    float [#FT_0][[2#FT_1_0][#FT_1_1]] FA;
    smem float [[8][8]][[8 ^ FBT_0_1][4]] FBT;
    float [[2#FBT_1_0][#FBT_1_1]][#FBT_0] FB;
    dmem float [16384] FGA;
    dmem float [16384] FGB;
    // A size given when the program runs: a body that names it is made into its kernel
    // then, its IR (and the wgmma's descriptors) carried into the program.
    const R;
    float [R] RT;
    // Each tile's storage, and the registers of the threads (thread-major).
    dmem bf16 [16384] GA;
    dmem bf16 [16384] GB;
    dmem float [16384] GD;
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

/// Element (mn, k) of a K-major tile of rows of `row` elements (`row` / 8 chunks of 8)
/// in the swizzle of `row` * 2 bytes (16: none): the chunk ^ (mn / (128 / (2 row))) %
/// (row / 8), as CuTe's `Swizzle<B,4,3>` on the address.
fn swizzled(row: usize, mn: usize, k: usize) -> usize {
    let chunks = row / 8;
    let phase = (mn * row * 2 / 128) % chunks;
    mn * row + ((k / 8) ^ phase) * 8 + k % 8
}

/// Element (mn, k) of core matrices (mn / 8, k / 8, mn % 8, k % 8) with `kc` core
/// matrices along k.
fn cores(kc: usize, mn: usize, k: usize) -> usize {
    ((mn / 8 * kc + k / 8) * 8 + mn % 8) * 8 + k % 8
}

/// A 16-bit element of the tiles, `bf16` or `half`.
trait Half: Copy {
    /// `x` (every value [`values`] makes is exact in both).
    fn of(x: bf16) -> Self;
    fn value(self) -> f64;
}

impl Half for bf16 {
    fn of(x: bf16) -> Self {
        x
    }

    fn value(self) -> f64 {
        self.to_f64()
    }
}

impl Half for f16 {
    fn of(x: bf16) -> Self {
        f16::from_f64(x.to_f64())
    }

    fn value(self) -> f64 {
        self.to_f64()
    }
}

/// A wgmma run: D = C + A B for A 64 x `k` and B `k` x `n`, A's element (m, k) stored at
/// `a_at(m, k)` and B's (k, n) at `b_at(n, k)` (n x k, K-major); `run` launches the detour
/// on the storages and the registers (thread t's register v at t * n / 2 + v) and returns
/// the registers. Checks every element against the f64 product.
fn check_with<E: Half>(
    (k, n): (usize, usize),
    a_at: impl Fn(usize, usize) -> usize,
    b_at: impl Fn(usize, usize) -> usize,
    run: impl FnOnce(&[E], &[E], &[f32]) -> parray::Result<Vec<f32>>,
) -> parray::Result<()> {
    let of = |v: Vec<bf16>| v.into_iter().map(E::of).collect::<Vec<E>>();
    let (ha, hb, hc) = (
        of(values(1, 64 * k)),
        of(values(2, k * n)),
        values(3, 64 * n),
    );
    let zero = E::of(bf16::from_f32(0.0));
    let (mut sa, mut sb) = (vec![zero; 16384], vec![zero; 16384]);
    for m in 0..64 {
        for kk in 0..k {
            sa[a_at(m, kk)] = ha[m * k + kk];
        }
    }
    for col in 0..n {
        for kk in 0..k {
            sb[b_at(col, kk)] = hb[kk * n + col];
        }
    }
    // Thread t0 + 4 t1 + 32 t2's register v0 + 2 v1 + 4 v2: D[t1 + 8 v1 + 16 t2][2 t0 + v0 + 8 v2].
    let place = |t: usize, v: usize| {
        let (t0, t1, t2, v0, v1, v2) = (t % 4, t / 4 % 8, t / 32, v % 2, v / 2 % 2, v / 4);
        (t1 + 8 * v1 + 16 * t2, 2 * t0 + v0 + 8 * v2)
    };
    let regs = n / 2;
    let mut c = vec![0f32; 16384];
    for t in 0..128 {
        for v in 0..regs {
            let (m, col) = place(t, v);
            c[t * regs + v] = hc[m * n + col].to_f32();
        }
    }
    let got = run(&sa, &sb, &c)?;
    for t in 0..128 {
        for v in 0..regs {
            let (m, col) = place(t, v);
            let c0 = f64::from(hc[m * n + col].to_f32());
            let (mut exact, mut scale) = (c0, c0.abs());
            for kk in 0..k {
                let p = ha[m * k + kk].value() * hb[kk * n + col].value();
                exact += p;
                scale += p.abs();
            }
            let err = (f64::from(got[t * regs + v]) - exact).abs();
            assert!(
                err <= scale * 2f64.powi(-16),
                "N = {n}: D[{m}][{col}] (thread {t}, register {v}) = {} against {exact} (error {err:e})",
                got[t * regs + v]
            );
        }
    }
    Ok(())
}

/// [`check_with`] on the bf16 arrays `GA`, `GB` and `GD`.
fn check(
    shape: (usize, usize),
    a_at: impl Fn(usize, usize) -> usize,
    b_at: impl Fn(usize, usize) -> usize,
    run: impl FnOnce(&Array<GA>, &Array<GB>, &mut Array<GD>) -> parray::Result<()>,
) -> parray::Result<()> {
    check_with(shape, a_at, b_at, |sa: &[bf16], sb, c| {
        let (mut a, mut b, mut d) = (GA::create()?, GB::create()?, GD::create()?);
        a.copy_from_slice(sa)?;
        b.copy_from_slice(sb)?;
        d.copy_from_slice(c)?;
        run(&a, &b, &mut d)?;
        d.to_vec()
    })
}

#[test]
fn n64_in_each_swizzle_mode_is_the_f64_product() -> parray::Result<()> {
    check(
        (16, 64),
        |m, k| swizzled(64, m, k),
        |n, k| swizzled(64, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T128::create();
                let sb = BT128::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                #mma ACC64(acc) += A128(sa) * B128(sb);
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )?;
    check(
        (16, 64),
        |m, k| swizzled(32, m, k),
        |n, k| swizzled(32, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T64::create();
                let sb = BT64::create();
                for i in 0..16 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                #mma ACC64(acc) += A64(sa) * B64(sb);
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )?;
    check(
        (16, 64),
        |m, k| swizzled(16, m, k),
        |n, k| swizzled(16, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = A32::create();
                let sb = BT32::create();
                for i in 0..8 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                #mma ACC64(acc) += A32(sa) * B32(sb);
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )?;
    check(
        (16, 64),
        |m, k| cores(2, m, k),
        |n, k| cores(2, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = TN::create();
                let sb = BTN::create();
                for i in 0..8 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                #mma ACC64(acc) += AN(sa) * BN(sb);
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )
}

#[test]
fn n8_and_n256_are_the_f64_product() -> parray::Result<()> {
    check(
        (16, 8),
        |m, k| swizzled(64, m, k),
        |n, k| swizzled(64, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T128::create();
                let sb = BT8::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                }
                for i in 0..4 {
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC8_REGS::create();
                for v in 0..4 {
                    acc[v] = d[$tid_1$ * 4 + v];
                }
                #sync;
                #mma ACC8(acc) += A128(sa) * B8(sb);
                for v in 0..4 {
                    d[$tid_1$ * 4 + v] = acc[v];
                }
            })
        },
    )?;
    check(
        (16, 256),
        |m, k| swizzled(64, m, k),
        |n, k| swizzled(64, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T128::create();
                let sb = BT256::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                }
                for i in 0..128 {
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC256_REGS::create();
                for v in 0..128 {
                    acc[v] = d[$tid_1$ * 128 + v];
                }
                #sync;
                #mma ACC256(acc) += A128(sa) * B256(sb);
                for v in 0..128 {
                    d[$tid_1$ * 128 + v] = acc[v];
                }
            })
        },
    )
}

/// 50 KiB of shared arrays: more than a kernel may declare, so they live in the dynamic
/// shared memory, each aligned to the 1024 bytes the 128B tiles need (SPEC 2.5).
#[test]
fn tiles_in_dynamic_shared_memory_are_aligned() -> parray::Result<()> {
    check(
        (16, 256),
        |m, k| swizzled(64, m, k),
        |n, k| swizzled(64, n, k),
        |a, b, d| {
            macro_rules! source_and_run {
                ($body:tt) => {
                    (
                        kernel_source!(G(a, b, d) $body),
                        detour!(G(a, b, d) $body),
                    )
                };
            }
            let (source, run) = source_and_run!({
                let pad = A32::create();
                let more = KA::create();
                pad[$tid_1$] = a[0];
                more[$tid_1$] = a[0];
                let sa = T128::create();
                let sb = BT256::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                }
                for i in 0..128 {
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC256_REGS::create();
                for v in 0..128 {
                    acc[v] = d[$tid_1$ * 128 + v];
                }
                #sync;
                #mma ACC256(acc) += A128(sa) * B256(sb);
                for v in 0..128 {
                    d[$tid_1$ * 128 + v] = acc[v];
                }
            });
            // The arrays are pointers into the dynamic shared memory, of their C types.
            let source = source.to_string();
            assert!(
                source.contains(
                    "__nv_bfloat16* const sa = reinterpret_cast<__nv_bfloat16*>(parray_shared"
                ),
                "{source}"
            );
            run
        },
    )
}

#[test]
fn a_k_loop_steps_through_a_64_by_64_tile() -> parray::Result<()> {
    check(
        (64, 64),
        |m, k| cores(8, m, k),
        |n, k| cores(8, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = KA::create();
                let sb = KB::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                for s in 0..4 {
                    #mma ACC64(acc) += KA_STEP(sa + $KA[0][2 * s][0][0]$) * KB_STEP(sb + $KB[0][2 * s][0][0]$);
                }
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )
}

#[test]
fn half_tiles_are_the_f64_product() -> parray::Result<()> {
    let at = |mn, k| swizzled(64, mn, k);
    check_with((16, 64), at, at, |sa: &[f16], sb, c| {
        let (mut a, mut b, mut d) = (HGA::create()?, HGB::create()?, GD::create()?);
        a.copy_from_slice(sa)?;
        b.copy_from_slice(sb)?;
        d.copy_from_slice(c)?;
        detour!(H(&a, &b, &mut d) {
            let sa = HT::create();
            let sb = HBT::create();
            for i in 0..32 {
                sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
            }
            let acc = HACC_REGS::create();
            for v in 0..32 {
                acc[v] = d[$tid_1$ * 32 + v];
            }
            #sync;
            #mma HACC(acc) += HA(sa) * HB(sb);
            for v in 0..32 {
                d[$tid_1$ * 32 + v] = acc[v];
            }
        })?;
        d.to_vec()
    })
}

/// `n` f32 values in (-2, 2) with all 23 mantissa bits random (so a tf32 read drops some).
fn f32_values(seed: u64, n: usize) -> Vec<f32> {
    let mut next = words(seed);
    (0..n)
        .map(|_| {
            let w = next();
            let bits = 0x3f80_0000 | (w as u32 & 0x007f_ffff);
            let x = (f32::from_bits(bits) - 1.0) * 2.0;
            if w >> 40 & 1 == 1 {
                -x
            } else {
                x
            }
        })
        .collect()
}

/// `x` as the tensor core reads a tf32 from f32: the 13 low mantissa bits dropped.
fn tf32(x: f32) -> f64 {
    f64::from(f32::from_bits(x.to_bits() & !0x1fff))
}

#[test]
fn float_tiles_are_tf32_products_stepped_within_the_swizzled_rows() -> parray::Result<()> {
    // A 64 x 32 and B 32 x 64 (stored n x k), each a 128-byte row of 32 floats a row.
    let (k, n) = (32, 64);
    let at = |mn: usize, k: usize| mn * 32 + ((k / 4) ^ (mn % 8)) * 4 + k % 4;
    let (ha, hb, hc) = (
        f32_values(1, 64 * k),
        f32_values(2, k * n),
        f32_values(3, 64 * n),
    );
    let (mut sa, mut sb) = (vec![0f32; 16384], vec![0f32; 16384]);
    for m in 0..64 {
        for kk in 0..k {
            sa[at(m, kk)] = ha[m * k + kk];
        }
    }
    for col in 0..n {
        for kk in 0..k {
            sb[at(col, kk)] = hb[kk * n + col];
        }
    }
    let place = |t: usize, v: usize| {
        let (t0, t1, t2, v0, v1, v2) = (t % 4, t / 4 % 8, t / 32, v % 2, v / 2 % 2, v / 4);
        (t1 + 8 * v1 + 16 * t2, 2 * t0 + v0 + 8 * v2)
    };
    let mut c = vec![0f32; 16384];
    for t in 0..128 {
        for v in 0..32 {
            let (m, col) = place(t, v);
            c[t * 32 + v] = hc[m * n + col];
        }
    }
    let (mut a, mut b, mut d) = (FGA::create()?, FGB::create()?, GD::create()?);
    a.copy_from_slice(&sa)?;
    b.copy_from_slice(&sb)?;
    d.copy_from_slice(&c)?;
    detour!(F(&a, &b, &mut d) {
        let sa = FT::create();
        let sb = FBT::create();
        for i in 0..16 {
            sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
            sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
        }
        let acc = FACC_REGS::create();
        for v in 0..32 {
            acc[v] = d[$tid_1$ * 32 + v];
        }
        #sync;
        // Four k8 steps, 32 bytes apart within the swizzled rows.
        for s in 0..4 {
            #mma FACC(acc) += FA(sa + 8 * s) * FB(sb + 8 * s);
        }
        for v in 0..32 {
            d[$tid_1$ * 32 + v] = acc[v];
        }
    })?;
    let got = d.to_vec()?;
    let (mut truncated_only, mut rounded_only) = (0, 0);
    for t in 0..128 {
        for v in 0..32 {
            let (m, col) = place(t, v);
            let c0 = f64::from(hc[m * n + col]);
            let (mut exact, mut scale, mut full) = (c0, c0.abs(), c0);
            for kk in 0..k {
                let (x, y) = (ha[m * k + kk], hb[kk * n + col]);
                let p = tf32(x) * tf32(y);
                exact += p;
                scale += p.abs();
                full += f64::from(x) * f64::from(y);
            }
            let err = (f64::from(got[t * 32 + v]) - exact).abs();
            assert!(
                err <= scale * 2f64.powi(-16),
                "D[{m}][{col}] (thread {t}, register {v}) = {} against {exact} of the tf32 inputs (error {err:e}; the f32 inputs' product {full})",
                got[t * 32 + v]
            );
            // The inputs' truncation shows: the f32 product differs by far more.
            if (f64::from(got[t * 32 + v]) - full).abs() > scale * 2f64.powi(-16) {
                truncated_only += 1;
            } else {
                rounded_only += 1;
            }
        }
    }
    assert!(
        truncated_only > rounded_only,
        "{truncated_only} of 4096 differ from the f32 inputs' product: the inputs were not read as tf32"
    );
    Ok(())
}

#[test]
fn float_tiles_are_tf32_wgmmas_without_transpose_bits() {
    let (a, b, d) = ((), (), ());
    insta::assert_snapshot!(
        "wgmma_m64n64k8_tf32_128b",
        kernel_source!(F(a, b, d) {
            let sa = FT::create();
            let sb = FBT::create();
            let acc = FACC_REGS::create();
            for v in 0..32 {
                acc[v] = 0.0;
            }
            #sync;
            for s in 0..4 {
                #mma FACC(acc) += FA(sa + 8 * s) * FB(sb + 8 * s);
            }
            for v in 0..32 {
                d[$tid_1$ * 32 + v] = acc[v];
            }
        })
    );
}

/// Element (mn, k) of an MN-major tile in the 128-byte mode: atoms of 64 mn (`atom`
/// elements apart) of 16 rows of k, the chunk ^ k % 8.
fn mn_swizzled(atom: usize, mn: usize, k: usize) -> usize {
    let (a, m) = (mn / 64, mn % 64);
    a * atom + k * 64 + ((m / 8) ^ (k % 8)) * 8 + m % 8
}

#[test]
fn mn_major_tiles_are_the_f64_product() -> parray::Result<()> {
    let a_at = |m, k| mn_swizzled(1024, m, k);
    check(
        (16, 64),
        a_at,
        |n, k| mn_swizzled(1024, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = AT::create();
                let sb = BK::create();
                for i in 0..8 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                #mma ACC64(acc) += ATV(sa) * BK(sb);
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )?;
    let a_at = |m: usize, k: usize| ((m / 8 * 2 + k / 8) * 8 + k % 8) * 8 + m % 8;
    check(
        (16, 128),
        a_at,
        |n, k| mn_swizzled(1024, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = ATN::create();
                let sb = BK2::create();
                for i in 0..8 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                }
                for i in 0..16 {
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC128_REGS::create();
                for v in 0..64 {
                    acc[v] = d[$tid_1$ * 64 + v];
                }
                #sync;
                #mma ACC128(acc) += ATNV(sa) * BK2V(sb);
                for v in 0..64 {
                    d[$tid_1$ * 64 + v] = acc[v];
                }
            })
        },
    )
}

#[test]
fn the_wgmma_is_inline_ptx_with_constant_descriptors() {
    let (a, b, d) = ((), (), ());
    insta::assert_snapshot!(
        "wgmma_m64n64k16_bf16_128b",
        kernel_source!(G(a, b, d) {
            let sa = T128::create();
            let sb = BT128::create();
            let acc = ACC64_REGS::create();
            for v in 0..32 {
                acc[v] = 0.0;
            }
            let ta = AT::create();
            let tb = BK::create();
            #sync;
            #mma ACC64(acc) += A128(sa) * B128(sb);
            // MN-major: the transpose bits.
            #mma ACC64(acc) += ATV(ta) * BK(tb);
            for v in 0..32 {
                d[$tid_1$ * 32 + v] = acc[v];
            }
        })
    );
}

#[test]
fn hip_has_no_wgmma() {
    let (a, b, d) = ((), (), ());
    let hip = kernel_source!(hip(64): G(a, b, d) {
        let sa = T128::create();
        let sb = BT8::create();
        let acc = ACC8_REGS::create();
        #sync;
        #mma ACC8(acc) += A128(sa) * B8(sb);
        d[$tid_1$] = acc[0];
    });
    // hipcc refuses the kernel at the call of a function that does not exist.
    assert!(hip.contains("parray_hip_has_no_wgmma_m64nNk16();"), "{hip}");
    assert!(
        !hip.contains("wgmma.mma_async") && !hip.contains("sm_90a") && !hip.contains("fence.proxy"),
        "{hip}"
    );
}

/// Whether cuda detours run on the CPU emulation (where a warpgroup with a thread missing,
/// or a swizzled tile out of its pattern's phase, is found; on a GPU they are undefined).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

#[test]
fn a_warpgroup_with_a_thread_missing_is_an_error() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (a, b) = (GA::create()?, GB::create()?);
    let mut d = GD::create()?;
    let r = detour!(G(&a, &b, &mut d) {
        let sa = T128::create();
        let sb = BT8::create();
        let acc = ACC8_REGS::create();
        if $tid_1$ < 64 {
            #mma ACC8(acc) += A128(sa) * B8(sb);
        }
        d[$tid_1$] = acc[0];
    });
    let e = r.expect_err("half a warpgroup at a wgmma");
    assert!(
        e.to_string()
            .contains("thread 64 of this warpgroup (thread 64 of the block) did not reach it"),
        "{e}"
    );
    Ok(())
}

#[test]
fn half_tiles_are_f16_operands() {
    let (a, b, d) = ((), (), ());
    let c = kernel_source!(H(a, b, d) {
        let sa = HT::create();
        let sb = HBT::create();
        let acc = HACC_REGS::create();
        #mma HACC(acc) += HA(sa) * HB(sb);
        d[$tid_1$] = acc[0];
    });
    assert!(
        c.contains("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16 {%0, %1,"),
        "{c}"
    );
}

/// A body that also names a size given at run time is made into its kernel when it runs,
/// from its IR carried into the program: the wgmma and its descriptors survive the trip.
#[test]
fn a_wgmma_in_a_kernel_made_at_run_time() -> parray::Result<()> {
    R.bind(32)?;
    check(
        (16, 64),
        |m, k| swizzled(64, m, k),
        |n, k| swizzled(64, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T128::create();
                let sb = BT128::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..$dim(RT_0)$ {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                #mma ACC64(acc) += A128(sa) * B128(sb);
                for v in 0..$dim(RT_0)$ {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )
}

/// `#mma async` issues a wgmma and `#mma wait 0 D(d);` completes them: the k-loop's four
/// wgmmas are in flight together, one group, waited for once.
#[test]
fn an_asynchronous_k_loop_is_waited_for_once() -> parray::Result<()> {
    check(
        (64, 64),
        |m, k| cores(8, m, k),
        |n, k| cores(8, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = KA::create();
                let sb = KB::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                for s in 0..4 {
                    #mma async ACC64(acc) += KA_STEP(sa + $KA[0][2 * s][0][0]$) * KB_STEP(sb + $KB[0][2 * s][0][0]$);
                }
                #mma wait 0 ACC64(acc);
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )?;
    let (a, b, d) = ((), (), ());
    let c = kernel_source!(G(a, b, d) {
        let sa = KA::create();
        let sb = KB::create();
        let acc = ACC64_REGS::create();
        for s in 0..4 {
            #mma async ACC64(acc) += KA_STEP(sa + $KA[0][2 * s][0][0]$) * KB_STEP(sb + $KB[0][2 * s][0][0]$);
        }
        #mma wait 0 ACC64(acc);
        d[$tid_1$] = acc[0];
    });
    assert_eq!(c.matches("wgmma.commit_group").count(), 1, "{c}");
    assert_eq!(
        c.matches("wgmma.wait_group.sync.aligned 0").count(),
        1,
        "{c}"
    );
    let wait = &c[c.find("wgmma.wait_group").unwrap()..];
    assert!(wait.contains("\"+f\"(acc[31])"), "{c}");
    // Unswizzled tiles start at 16 bytes, more than a bf16 array's own alignment.
    assert!(
        c.contains("__shared__ __align__(16) __nv_bfloat16 sa[4096];"),
        "{c}"
    );
    Ok(())
}

parray! {
    // Two warpgroups a block, w (G2_1_0), each of t2, t1, t0 (G2_1_1_0, G2_1_1_1,
    // G2_1_1_2): the accumulator names the three and not w, so each warpgroup holds its own.
    cuda(bf16* a, bf16* b, float* d) [1][[2][[4][8][4]]] G2;
    rmem float [8][2][#G2_1_1_0][#G2_1_1_1][#G2_1_1_2][2] ACC2_REGS;
    float [[#ACC2_REGS_2][#ACC2_REGS_1][#ACC2_REGS_3]][[#ACC2_REGS_0][#ACC2_REGS_4][#ACC2_REGS_5]] ACC2;
    // A 128 x 16 of core matrices (m / 8, k / 8, m % 8, k % 8), warpgroup w's 64 rows from
    // m / 8 = 8 w; and a 64 x 16 B (n x k, K-major) for each warpgroup.
    smem bf16 [16][2][8][8] TA2;
    bf16 [[8#TA2_0][#TA2_2]][[#TA2_1][#TA2_3]] A2;
    smem bf16 [2][8][2][8][8] TB2;
    bf16 [[#TB2_2][#TB2_4]][[#TB2_1][#TB2_3]] B2;
    const BLOCKS2 = 2;
}

/// A block of two warpgroups: each issues its own wgmma, of its own tiles (its 64 rows of
/// a 128-row A, its own B) into its own accumulator, the fragment's type naming the
/// warpgroup's digits and not w (SPEC 3.5, "MMA": the tiles are read at each warpgroup's
/// first thread's pointers). Both products are checked element by element against f64;
/// the kernel asks for two such blocks a multiprocessor by a `parray!` constant.
#[test]
fn two_warpgroups_of_a_block_compute_two_products() -> parray::Result<()> {
    let (ha, hb, hc) = (
        values(11, 128 * 16),
        values(12, 2 * 16 * 64),
        values(13, 128 * 64),
    );
    let zero = bf16::from_f32(0.0);
    let (mut sa, mut sb) = (vec![zero; 16384], vec![zero; 16384]);
    for m in 0..128 {
        for k in 0..16 {
            sa[cores(2, m, k)] = ha[m * 16 + k];
        }
    }
    // B of warpgroup w: element (k, n) is hb[(w * 16 + k) * 64 + n], stored n x k.
    for w in 0..2 {
        for n in 0..64 {
            for k in 0..16 {
                sb[w * 1024 + cores(2, n, k)] = hb[(w * 16 + k) * 64 + n];
            }
        }
    }
    // Thread t of warpgroup w holds D_w[t1 + 8 v1 + 16 t2][2 t0 + v0 + 8 v2], row 64 w + m
    // of the 128 x 64 result.
    let place = |t: usize, v: usize| {
        let (w, t0, t1, t2) = (t / 128, t % 4, t / 4 % 8, t / 32 % 4);
        let (v0, v1, v2) = (v % 2, v / 2 % 2, v / 4);
        (w, 64 * w + t1 + 8 * v1 + 16 * t2, 2 * t0 + v0 + 8 * v2)
    };
    let mut c = vec![0f32; 16384];
    for t in 0..256 {
        for v in 0..32 {
            let (_, m, n) = place(t, v);
            c[t * 32 + v] = hc[m * 64 + n].to_f32();
        }
    }
    let (mut a, mut b, mut d) = (GA::create()?, GB::create()?, GD::create()?);
    a.copy_from_slice(&sa)?;
    b.copy_from_slice(&sb)?;
    d.copy_from_slice(&c)?;
    macro_rules! source_and_run {
        ($body:tt) => {
            (
                kernel_source!(G2(a, b, d) $body),
                detour!(G2(&a, &b, &mut d) $body),
            )
        };
    }
    let (source, run) = source_and_run!({
        #![min_blocks_per_sm(BLOCKS2)]
        let sa = TA2::create();
        let sb = TB2::create();
        for i in 0..8 {
            sa[i * 256 + $tid_1$] = a[i * 256 + $tid_1$];
            sb[i * 256 + $tid_1$] = b[i * 256 + $tid_1$];
        }
        let w = $tid_1_0$;
        let acc = ACC2_REGS::create();
        for v in 0..32 {
            acc[v] = d[$tid_1$ * 32 + v];
        }
        #sync;
        #mma ACC2(acc) += A2(sa + $TA2[8 * w][0][0][0]$) * B2(sb + $TB2[w][0][0][0][0]$);
        for v in 0..32 {
            d[$tid_1$ * 32 + v] = acc[v];
        }
    });
    run?;
    assert!(source.contains("__launch_bounds__(256, 2)"), "{source}");
    let got = d.to_vec()?;
    for t in 0..256 {
        for v in 0..32 {
            let (w, m, n) = place(t, v);
            let c0 = f64::from(hc[m * 64 + n].to_f32());
            let (mut exact, mut scale) = (c0, c0.abs());
            for k in 0..16 {
                let p = ha[m * 16 + k].to_f64() * hb[(w * 16 + k) * 64 + n].to_f64();
                exact += p;
                scale += p.abs();
            }
            let err = (f64::from(got[t * 32 + v]) - exact).abs();
            assert!(
                err <= scale * 2f64.powi(-16),
                "warpgroup {w}: D[{m}][{n}] (thread {t}, register {v}) = {} against {exact} (error {err:e})",
                got[t * 32 + v]
            );
        }
    }
    Ok(())
}

parray! {
    // Two stages of the k-loop's 64 x 64 tiles (KA's and KB's layout), a k-tile each.
    smem bf16 [2][8][8][8][8] KA2;
    bf16 [[#KA2_1][#KA2_3]][[2#KA2_2][#KA2_4]] KA2_STEP;
    smem bf16 [2][8][8][8][8] KB2;
    bf16 [[2#KB2_2][#KB2_4]][[#KB2_1][#KB2_3]] KB2_STEP;
}

/// K = 256 in four k-tiles of 64 through two stages, each k-tile's four wgmmas one group
/// left in flight (`#mma wait 1`) while the next k-tile fills the other stage: the
/// stage k-tile kt refills was read by k-tile kt - 2, whose group the wait of k-tile
/// kt - 1 completed (for this warpgroup's threads, which refill it). Checked against
/// the f64 product; its CUDA C is a snapshot.
#[test]
fn a_k_loop_keeps_a_group_in_flight_across_iterations() -> parray::Result<()> {
    let tile = |mn: usize, k: usize| k / 64 * 4096 + cores(8, mn, k % 64);
    check((256, 64), tile, tile, |a, b, d| {
        detour!(G(a, b, d) {
            let sa = KA2::create();
            let sb = KB2::create();
            let acc = ACC64_REGS::create();
            for v in 0..32 {
                acc[v] = d[$tid_1$ * 32 + v];
            }
            for kt in 0..4 {
                let st = kt % 2;
                for i in 0..32 {
                    sa[$KA2[st][0][0][0][0]$ + i * 128 + $tid_1$] = a[kt * 4096 + i * 128 + $tid_1$];
                    sb[$KB2[st][0][0][0][0]$ + i * 128 + $tid_1$] = b[kt * 4096 + i * 128 + $tid_1$];
                }
                #sync;
                for s in 0..4 {
                    #mma async ACC64(acc) += KA2_STEP(sa + $KA2[st][0][2 * s][0][0]$) * KB2_STEP(sb + $KB2[st][0][2 * s][0][0]$);
                }
                #mma wait 1 ACC64(acc);
            }
            #mma wait 0 ACC64(acc);
            for v in 0..32 {
                d[$tid_1$ * 32 + v] = acc[v];
            }
        })
    })?;
    let (a, b, d) = ((), (), ());
    let c = kernel_source!(G(a, b, d) {
        let sa = KA2::create();
        let sb = KB2::create();
        let acc = ACC64_REGS::create();
        for v in 0..32 {
            acc[v] = 0.0f32;
        }
        for kt in 0..4 {
            let st = kt % 2;
            for i in 0..32 {
                sa[$KA2[st][0][0][0][0]$ + i * 128 + $tid_1$] = a[kt * 4096 + i * 128 + $tid_1$];
                sb[$KB2[st][0][0][0][0]$ + i * 128 + $tid_1$] = b[kt * 4096 + i * 128 + $tid_1$];
            }
            #sync;
            #[unroll]
            for s in 0..4 {
                #mma async ACC64(acc) += KA2_STEP(sa + $KA2[st][0][2 * s][0][0]$) * KB2_STEP(sb + $KB2[st][0][2 * s][0][0]$);
            }
            #mma wait 1 ACC64(acc);
        }
        #mma wait 0 ACC64(acc);
        for v in 0..32 {
            d[$tid_1$ * 32 + v] = acc[v];
        }
    });
    // One fence before the k-tile's run, one commit after it, the waits with the
    // accumulator's registers as operands.
    assert_eq!(c.matches("wgmma.fence.sync.aligned").count(), 1, "{c}");
    assert_eq!(c.matches("wgmma.commit_group").count(), 1, "{c}");
    for n in [0, 1] {
        let at = c
            .find(&format!("wgmma.wait_group.sync.aligned {n};"))
            .expect("the wait");
        assert!(c[at..].contains("\"+f\"(acc[31])"), "{c}");
    }
    insta::assert_snapshot!("wgmma_k_loop_wait_1", c);
    Ok(())
}

/// The emulation computes a wgmma where it is issued, so it refuses (debug builds) a
/// write of a tile that an asynchronous wgmma reads before the tensor core is done with
/// it: before the wait that completes its group, and, for another warpgroup's thread,
/// before the barrier after that wait.
#[test]
fn a_write_to_a_tile_in_flight_is_refused() -> parray::Result<()> {
    if !emulated() || !cfg!(debug_assertions) {
        return Ok(());
    }
    let (a, b) = (GA::create()?, GB::create()?);
    let mut d = GD::create()?;
    // Two stages, but the next k-tile's fill comes before the wait that completes the
    // group reading its stage.
    let r = detour!(G(&a, &b, &mut d) {
        let sa = KA2::create();
        let sb = KB2::create();
        let acc = ACC64_REGS::create();
        for kt in 0..3 {
            let st = kt % 2;
            #sync;
            for s in 0..4 {
                #mma async ACC64(acc) += KA2_STEP(sa + $KA2[st][0][2 * s][0][0]$) * KB2_STEP(sb + $KB2[st][0][2 * s][0][0]$);
            }
            for i in 0..32 {
                sa[$KA2[(kt + 1) % 2][0][0][0][0]$ + i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
            }
            #mma wait 1 ACC64(acc);
        }
        #mma wait 0 ACC64(acc);
        d[$tid_1$] = acc[0];
    });
    let e = r.expect_err("a tile written in flight").to_string();
    let issue = line!() - 11;
    assert!(
        e.contains(&format!("thread 0 of the block wrote element 0 of KA2, which warpgroup 0's `#mma async` at tests/wgmma.rs:{issue} reads and has in flight")),
        "{e}"
    );
    assert!(e.contains("complete it first, `#mma wait 0`"), "{e}");
    // Warpgroup 0 writes warpgroup 1's A after both waited, without the barrier that
    // orders it after warpgroup 1's wait.
    let r = detour!(G2(&a, &b, &mut d) {
        let sa = TA2::create();
        let sb = TB2::create();
        let w = $tid_1_0$;
        let acc = ACC2_REGS::create();
        #sync;
        #mma async ACC2(acc) += A2(sa + $TA2[8 * w][0][0][0]$) * B2(sb + $TB2[w][0][0][0][0]$);
        #mma wait 0 ACC2(acc);
        if w == 0 {
            sa[$TA2[8][0][0][0]$ + $tid_1$] = a[0];
        }
        d[$tid_1$] = acc[0];
    });
    let e = r
        .expect_err("another warpgroup's tile written before a barrier")
        .to_string();
    let (issue, wait) = (line!() - 10, line!() - 9);
    assert!(
        e.contains(&format!("thread 0 of the block wrote element 1024 of TA2, which warpgroup 1's `#mma async` at tests/wgmma.rs:{issue} reads until that warpgroup's `#mma wait` at tests/wgmma.rs:{wait}, which this thread is not ordered after: add `#sync` after that wait")),
        "{e}"
    );
    Ok(())
}

/// The k-loop of K-major swizzled tiles, as TMA writes them: each k16 step starts 32
/// bytes further along the atom's first row (`sa + 16 * s`), where the hardware's XOR on
/// the absolute address reads the step's columns of every row (SPEC 3.5, "Alignment and
/// the k-step"), in the 128-byte mode (64 k, four steps) and the 64-byte (32 k, two).
#[test]
fn a_k_loop_steps_within_the_rows_of_swizzled_tiles() -> parray::Result<()> {
    check(
        (64, 64),
        |m, k| swizzled(64, m, k),
        |n, k| swizzled(64, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T128::create();
                let sb = BT128::create();
                for i in 0..32 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                for s in 0..4 {
                    #mma ACC64(acc) += A128(sa + 16 * s) * B128(sb + 16 * s);
                }
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )?;
    check(
        (32, 64),
        |m, k| swizzled(32, m, k),
        |n, k| swizzled(32, n, k),
        |a, b, d| {
            detour!(G(a, b, d) {
                let sa = T64::create();
                let sb = BT64::create();
                for i in 0..16 {
                    sa[i * 128 + $tid_1$] = a[i * 128 + $tid_1$];
                    sb[i * 128 + $tid_1$] = b[i * 128 + $tid_1$];
                }
                let acc = ACC64_REGS::create();
                for v in 0..32 {
                    acc[v] = d[$tid_1$ * 32 + v];
                }
                #sync;
                for s in 0..2 {
                    #mma ACC64(acc) += A64(sa + 16 * s) * B64(sb + 16 * s);
                }
                for v in 0..32 {
                    d[$tid_1$ * 32 + v] = acc[v];
                }
            })
        },
    )
}
