//! The CUDA C generated for every figure, pinned, and beside it the HIP C++ of the same
//! kernel (`NAME_hip`, for CDNA's 64-lane wavefronts): a change to the code generator
//! shows up here as a diff to review (`cargo insta review`). `tests/hip_snapshots.rs`
//! compiles every HIP snapshot with hipcc.

use parray::prelude::*;

/// Pins the kernel of `detour!(T(args) body)`: its CUDA C as the snapshot `NAME`, its HIP
/// C++ as `NAME_hip`.
macro_rules! pin_sources {
    ($name:expr, $threads:ident($($arg:ident),*) $body:tt) => {
        insta::assert_snapshot!($name, kernel_source!($threads($($arg),*) $body));
        insta::assert_snapshot!(
            format!("{}_hip", $name),
            kernel_source!(hip(64): $threads($($arg),*) $body)
        );
    };
}

/// One module per figure with its declarations, all sharing one body.
macro_rules! figures {
    ($($fig:ident { $($decl:tt)* })* ; $body:tt) => {
        $(
            mod $fig {
                use super::*;
                parray! { $($decl)* }
                /// The kernel's CUDA C and its HIP C++.
                pub fn sources() -> (&'static str, &'static str) {
                    // Any values stand for the arguments: the source depends on the types.
                    let (a, b, c) = ((), (), ());
                    (
                        kernel_source!(MY_TA(a, b, c) $body),
                        kernel_source!(hip(64): MY_TA(a, b, c) $body),
                    )
                }
            }
        )*
        #[test]
        fn figures_share_one_body() {
            $(
                let (cuda, hip) = $fig::sources();
                insta::assert_snapshot!(stringify!($fig), cuda);
                insta::assert_snapshot!(concat!(stringify!($fig), "_hip"), hip);
            )*
        }
    };
}

mod fig10_body {
    use super::*;
    figures! {
        fig11 {
            dmem float [[2][512]][[2][512]] M;
            cuda(float* a, float* b, float* c) [2][2] MY_TA;
        }
        fig12 {
            dmem float [[1024][1]][[1024][1]] M;
            cuda(float* a, float* b, float* c) [1024][1024] MY_TA;
        }
        ;
        {
            for i in 0..$dim_0_1(M)$ {
                for j in 0..$dim_1_1(M)$ {
                    let pa = a + $M[[$tid_0$][i]][0]$;
                    let pb = b + $M[0][[$tid_1$][j]]$;
                    let mut cvalue = 0.0f32;
                    for k in 0..$dim_1(M)$ {
                        cvalue += pa[$M[0][k]$] * pb[$M[k][0]$];
                    }
                    c[$M[[$tid_0$][i]][[$tid_1$][j]]$] = cvalue;
                }
            }
        }
    }
}

mod fig13_body {
    use super::*;
    figures! {
        fig13 {
            dmem float [1024][1024] M;
            cuda(float* a, float* b, float* c) [1024][1024] MY_TA;
        }
        fig17 {
            dmem float [2][1024][512] A;
            float [#A_1][[#A_0][#A_2]] M;
            cuda(float* a, float* b, float* c) [1024][1024] MY_TA;
        }
        fig18a {
            dmem float [4][1024][256] A;
            float [#A_1][[#A_0][#A_2]] M;
            cuda(float* a, float* b, float* c) [1024][1024] MY_TA;
        }
        fig18b {
            dmem float [2][2][512][512] A;
            float [[#A_0][#A_2]][[#A_1][#A_3]] M;
            cuda(float* a, float* b, float* c) [1024][1024] MY_TA;
        }
        ;
        {
            let pa = a + $M[$tid_0$][0]$;
            let pb = b + $M[0][$tid_1$]$;
            let mut cvalue = 0.0f32;
            for k in 0..$dim_1(M)$ {
                cvalue += pa[$M[0][k]$] * pb[$M[k][0]$];
            }
            c[$M[$tid_0$][$tid_1$]$] = cvalue;
        }
    }
}

parray! {
    #parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA
    #parray {cuda(float2* worki, float2* worko) [[128/16][128/16]][[16][16]]} MYCUDATA
    #parray {smem float2 [16][17]} A
    #parray {smem float2 [#A_0][16#A_1]} B
}

#[test]
fn fig07_transpose() {
    let (adri, adro) = ((), ());
    pin_sources!("fig07_transpose", MYCUDATA(adri, adro) {
        let tile = A::create();
        tile[$B[$tid_1_0$][$tid_1_1$]$] = worki[$DATA[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
        #sync;
        worko[$DATA[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$B[$tid_1_1$][$tid_1_0$]$];
    });
}

/// A kernel with accesses the offset compiler cannot prove in range (an index that is not
/// a `$...$` form of a type, a loop bound a thread computes): each is checked against the
/// elements its array has, and a fault is recorded for the launch to report.
mod checked {
    use super::*;
    parray! {
        dmem float [4096 * 256] DATA;
        dmem float [4096] PARTIAL;
        cuda(float* data, float* partial) [4096][256] REDUCE;
        smem float [256] CACHE;
    }

    #[test]
    fn unproved_accesses_are_checked() {
        let (data, partial) = ((), ());
        pin_sources!("unproved_accesses_are_checked", REDUCE(data, partial) {
            let cache = CACHE::create();
            cache[$tid_1$] = data[$tid$];
            #sync;
            let mut s = $dim(CACHE)$ / 2;
            while s > 0 {
                if $tid_1$ < s {
                    cache[$tid_1$] += cache[$tid_1$ + s];
                }
                #sync;
                s /= 2;
            }
            if $tid_1$ == 0 {
                partial[$tid_0$] = cache[0];
            }
        });
    }
}

/// Vector accesses (`p.load4(off)`, `p.store4(off, v)`): where the offset compiler proves
/// every lane in bounds and the first at a multiple of the lanes, a cast pointer to the
/// vector type (lane by lane in registers); elsewhere checked by `parray_vat`, which
/// records a fault for a lane out of bounds or a misaligned offset.
mod vectors {
    use super::*;
    parray! {
        dmem float [64][4] V4;
        cuda(float* a, float* out, int shift) [2][32] VEC;
        smem float [32][4] TILE;
        rmem float [8] REGS;
    }

    #[test]
    fn proved_vector_accesses() {
        let (a, out, shift) = ((), (), ());
        pin_sources!("proved_vector_accesses", VEC(a, out, shift) {
            let t = TILE::create();
            let r = REGS::create();
            t.store4($TILE[$tid_1$][0]$, a.load4($V4[$tid$][0]$));
            #sync;
            r.store4(0, t.load4($TILE[31 - $tid_1$][0]$));
            let p = a + $V4[$tid$][0]$;
            r.store4(4, p.load4(0));
            let m = r.load2(2);
            out.store4($V4[$tid$][0]$, Float4::new(m.x, m.y, r[4], r[7]));
        });
    }

    #[test]
    fn checked_vector_accesses() {
        let (a, out, shift) = ((), (), ());
        pin_sources!("checked_vector_accesses", VEC(a, out, shift) {
            let r = REGS::create();
            // Not a form of a type: neither bounds nor alignment known.
            let k = $tid$ * 4 + shift as usize;
            r.store4(k % 8, a.load4(k));
            // In bounds, but two elements past a multiple of 4.
            let v = a.load4($V4[$tid$][0]$ + 2);
            out.store4($V4[$tid$][0]$, Float4::new(v.x, v.y, r.load2(2).x, r[k % 8]));
        });
    }
}

/// `#copy` in a body moves vectors where both layouts move in aligned runs and both
/// bases are aligned: Fig 21's registers into its column pairs `C0` (offsets 0, 1, 256,
/// 257, ...) as 16 float2 stores; its tile of A (offsets 0, 1024, ...) into the padded
/// shared tile element by element.
mod vectorised_copy {
    use parray::prelude::*;
    parray! {
        const N = 256;
        dmem float [N][N] TY;
        cuda(float* a, float* b, float* c) [[N/16][N/256]][[4][32]] CUDA;
        dmem float [[N/16][[4][4]]#TY_0][[N/32][32]#TY_1] A;
        dmem float [[N/32][32]#TY_0][[N/256][[128][2]]#TY_1] B;
        dmem float [#A_0][#B_1] C;
        dmem float [#C_0_1][#C_1_1_1] C0;
        smem float [32][17] S;
        smem float [32#S_0][[4][4]#S_1] S0;
        rmem float [16][2] R;
    }

    #[test]
    fn fig21_copies() {
        let (a, b, c) = ((), (), ());
        pin_sources!("fig21_copies", CUDA(a, b, c) {
            let s = S::create();
            let r = R::create();
            let a = a + $A[[$tid_0_0$][[0][$tid_1_0$]]][[0][$tid_1_1$]]$;
            #copy A_0_1_0(a) to S0_1_0(s + $S0[$tid_1_1$][[0][$tid_1_0$]]$);
            #sync;
            let c = c + $C[[$tid_0_0$][0]][[$tid_0_1$][[$tid_1$][0]]]$;
            #copy R(r) to C0(c);
        });
    }
}

/// Fig 7's kernel as a GPU compiles it under `PARRAY_CHECK_SYNC=1` (SPEC.md 4.6): its
/// `#sync` a checked barrier, which reports a block whose threads do not all meet there.
#[test]
fn fig07_transpose_checked_sync() {
    let (adri, adro) = ((), ());
    let source = kernel_source!(MYCUDATA(adri, adro) {
        let tile = A::create();
        tile[$B[$tid_1_0$][$tid_1_1$]$] = worki[$DATA[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
        #sync;
        worko[$DATA[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$B[$tid_1_1$][$tid_1_0$]$];
    });
    insta::assert_snapshot!(
        "fig07_transpose_checked_sync",
        parray::gpu::checked_sync_source(source)
    );
}
