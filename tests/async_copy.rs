//! `#copy async` and `#wait` (SPEC.md 3.9, "Asynchronous copies"): a tile's next stage
//! loads from global into shared memory while the current one is computed. A tiled
//! matrix-vector product with two stages (`#wait 1` and `#sync`), each thread computing
//! with a piece of the tile another thread copied, against a CPU reference: at literal
//! sizes (float4 moves, `cp.async.cg` of 16 bytes) and at a size given when the program
//! runs that no tile divides (a guarded copy whose tail is filled with zeros, element by
//! element, `cp.async.ca` of 4 bytes). Each mistake the emulation refers is provoked and
//! its message checked: an element in flight read or written, a source written before the
//! wait, another thread's element read after the wait without a `#sync`, a body that ends
//! with a copy in flight. Runs on the GPU where there is one (`PARRAY_BACKEND=cuda`), else
//! on the CPU emulation (the mistakes only on the emulation, which watches them in debug
//! builds).

use parray::prelude::*;

parray! {
    // y = A x, A 64 x 512 in tiles of 16 rows by 64 columns, each row of a tile four
    // pieces of 16 floats, one a thread.
    dmem float [64][[8][4][16]] A;
    dmem float [[8][4][16]] X;
    dmem float [64][4] Y;
    cuda(float* a, float* x, float* y) [4][64] MV;
    // Two stages of a block's tile.
    smem float [2][16][[4][16]] AS;
    paged float [64][512] HA;
    paged float [512] HX;
    paged float [64][4] HY;
}

fn a_value(i: usize, k: usize) -> f32 {
    ((i * 7 + k * 3) % 11) as f32 - 5.0
}

fn x_value(k: usize) -> f32 {
    (k % 5) as f32 - 2.0
}

/// Whether the emulation runs the detours (a copy in flight at the end is caught there).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

/// Whether the emulation of a debug build runs them (the other mistakes are caught there).
fn watched() -> bool {
    cfg!(debug_assertions) && emulated()
}

/// Row `i` of `y = A x` over `k` columns, in `f64`: the values are small integers, so the
/// kernel's `f32` sums are exact.
fn reference(i: usize, k: usize) -> f32 {
    (0..k)
        .map(|c| f64::from(a_value(i, c)) * f64::from(x_value(c)))
        .sum::<f64>() as f32
}

#[test]
fn a_double_buffered_matrix_vector_product() -> parray::Result<()> {
    let (mut ha, mut hx) = (HA::create()?, HX::create()?);
    for i in 0..64 {
        for k in 0..512 {
            ha.set([i, k], a_value(i, k));
        }
    }
    for k in 0..512 {
        hx.set([k], x_value(k));
    }
    let (mut a, mut x, mut y) = (A::create()?, X::create()?, Y::create()?);
    parray::copy::copy(&ha, &mut a)?;
    parray::copy::copy(&hx, &mut x)?;
    detour!(MV(&a, &x, &mut y) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        #copy async A_1_2(a + $A[row][[0][q][0]]$) to AS_2_1(s + $AS[0][r][[q][0]]$);
        // The piece of this row that the next thread copies.
        let p = (q + 1) % 4;
        let mut acc = 0.0f32;
        for j in 0..8 {
            if j + 1 < 8 {
                #copy async A_1_2(a + $A[row][[j + 1][q][0]]$) to AS_2_1(s + $AS[(j + 1) % 2][r][[q][0]]$);
                #wait 1;
            } else {
                #wait 0;
            }
            #sync;
            for c in 0..16 {
                acc += s[$AS[j % 2][r][[p][c]]$] * x[$X_0[j][p][c]$];
            }
            // Every thread is done with this stage before it is copied into again.
            #sync;
        }
        y[$Y[row][p]$] = acc;
    })?;
    let mut hy = HY::create()?;
    parray::copy::copy(&y, &mut hy)?;
    for i in 0..64 {
        let got: f32 = (0..4).map(|p| hy.at([i, p])).sum();
        assert_eq!(got, reference(i, 512), "row {i}");
    }
    Ok(())
}

parray! {
    // The same over K columns given when the program runs (999: no tile divides it), in
    // tiles of 64 that cover them, the last reaching past the data.
    const K;
    dmem float [64][K] AK;
    float [#AK_0][[ceil(K / 64)][4][16]#AK_1] AKT;
    dmem float [K] XK;
    cuda(float* a, float* x, float* y) [4][64] MVK;
    paged float [64][K] HAK;
    paged float [K] HXK;
}

const ODD: usize = 999;

#[test]
fn a_guarded_double_buffered_product_at_a_size_no_tile_divides() -> parray::Result<()> {
    K.bind(ODD)?;
    let (mut ha, mut hx) = (HAK::create()?, HXK::create()?);
    for i in 0..64 {
        for k in 0..ODD {
            ha.set([i, k], a_value(i, k));
        }
    }
    for k in 0..ODD {
        hx.set([k], x_value(k));
    }
    let (mut a, mut x, mut y) = (AK::create()?, XK::create()?, Y::create()?);
    parray::copy::copy(&ha, &mut a)?;
    parray::copy::copy(&hx, &mut x)?;
    detour!(MVK(&a, &x, &mut y) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        let tiles = $dim(AKT_1_0)$;
        let n = $dim(AK_1)$;
        #copy async AKT_1_2(a + $AKT[row][[0][q][0]]$) to AS_2_1(s + $AS[0][r][[q][0]]$) if |c| 16 * q + c < n else 0.0;
        let p = (q + 1) % 4;
        let mut acc = 0.0f32;
        for j in 0..tiles {
            if j + 1 < tiles {
                #copy async AKT_1_2(a + $AKT[row][[j + 1][q][0]]$) to AS_2_1(s + $AS[(j + 1) % 2][r][[q][0]]$) if |c| 64 * (j + 1) + 16 * q + c < n else 0.0;
                #wait 1;
            } else {
                #wait 0;
            }
            #sync;
            for c in 0..16 {
                let col = 64 * j + 16 * p + c;
                if col < n {
                    acc += s[$AS[j % 2][r][[p][c]]$] * x[col];
                }
            }
            #sync;
        }
        y[$Y[row][p]$] = acc;
    })?;
    let mut hy = HY::create()?;
    parray::copy::copy(&y, &mut hy)?;
    for i in 0..64 {
        let got: f32 = (0..4).map(|p| hy.at([i, p])).sum();
        assert_eq!(got, reference(i, ODD), "row {i}");
    }
    // Rows of 999 floats start at odd offsets: the last tile's pieces move element by
    // element, 4 bytes each, where they lie in the data, and are zeros past it.
    let tail = kernel_source!(MVK(&a, &x, &mut y) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        let n = $dim(AK_1)$;
        let last = $dim(AKT_1_0)$ - 1;
        #copy async AKT_1_2(a + $AKT[row][[last][q][0]]$) to AS_2_1(s + $AS[1][r][[q][0]]$) if |c| 64 * last + 16 * q + c < n else 0.0;
        #wait 0;
        #sync;
        y[$Y[row][q]$] = s[$AS[1][r][[(q + 1) % 4][0]]$];
    })?;
    assert!(
        tail.contains("cp.async.ca.shared.global [%0], [%1], 4;"),
        "{tail}"
    );
    insta::assert_snapshot!("guarded_async_copy_at_999", tail);
    Ok(())
}

/// The CUDA C: each piece is four `cp.async.cg` of 16 bytes into the shared tile, the
/// copy one group (`commit_group`), `#wait N` a `wait_group N`; HIP's copy moves at once.
#[test]
fn the_c_of_an_asynchronous_copy() {
    let (a, x, y) = ((), (), ());
    let cuda = kernel_source!(MV(a, x, y) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        #copy async A_1_2(a + $A[row][[0][q][0]]$) to AS_2_1(s + $AS[0][r][[q][0]]$);
        #wait 0;
        #sync;
        y[$Y[row][q]$] = s[$AS[0][r][[(q + 1) % 4][0]]$];
    });
    assert!(
        cuda.contains("cp.async.cg.shared.global [%0], [%1], 16;"),
        "{cuda}"
    );
    assert!(cuda.contains("__cvta_generic_to_shared"), "{cuda}");
    assert!(cuda.contains("cp.async.commit_group;"), "{cuda}");
    assert!(
        cuda.contains("cp.async.wait_group %0;\" :: \"n\"(0)"),
        "{cuda}"
    );
    assert!(!cuda.contains("__parray_fault"), "{cuda}");
    insta::assert_snapshot!("async_copy_cuda", cuda);
    let hip = kernel_source!(hip(64): MV(a, x, y) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        #copy async A_1_2(a + $A[row][[0][q][0]]$) to AS_2_1(s + $AS[0][r][[q][0]]$);
        #wait 0;
        #sync;
        y[$Y[row][q]$] = s[$AS[0][r][[(q + 1) % 4][0]]$];
    });
    assert!(!hip.contains("cp.async"), "{hip}");
    insta::assert_snapshot!("async_copy_hip", hip);
    // A shared side not proved in bounds is a checked move, made at once: a failed
    // check's scratch element is in global memory, where cp.async cannot write.
    let checked = kernel_source!(MV(a, x, y) {
        let s = AS::create();
        let at = x[0] as usize;
        #copy async A_1_2(a + $A[$tid_1$][0]$) to AS_2_1(s + at);
        #wait 0;
    });
    assert!(checked.contains("parray_at(s, "), "{checked}");
    assert!(!checked.contains("shared.global"), "{checked}");
    assert!(checked.contains("cp.async.commit_group;"), "{checked}");
}

parray! {
    dmem float [4][16] B;
    cuda(float* b, float* out) [1][4] W;
    smem float [4][16] BS;
    dmem float [4] OUT;
}

/// Runs `detour` (a launch of `W` over fresh `b` and `out`) and gives its error's text.
fn refused(
    detour: impl FnOnce(&mut parray::Array<B>, &mut parray::Array<OUT>) -> parray::Result<()>,
) -> String {
    let (mut b, mut out) = (B::create().unwrap(), OUT::create().unwrap());
    detour(&mut b, &mut out).unwrap_err().to_string()
}

#[test]
fn an_element_in_flight_is_not_read() {
    if !watched() {
        return;
    }
    let err = refused(|b, out| {
        detour!(W(b, out) {
            let s = BS::create();
            let t = $tid_1$;
            #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
            out[t] = s[$BS[t][3]$];
            #wait 0;
        })
    });
    assert!(err.contains("read element 3 of BS"), "{err}");
    assert!(err.contains("this thread's `#copy async` at"), "{err}");
    assert!(err.contains("add `#wait 0;`"), "{err}");
}

#[test]
fn an_element_in_flight_is_not_written() {
    if !watched() {
        return;
    }
    let err = refused(|b, out| {
        detour!(W(b, out) {
            let s = BS::create();
            let t = $tid_1$;
            #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
            s[$BS[t][15]$] = 1.0;
            #wait 0;
            out[t] = s[$BS[t][15]$];
        })
    });
    assert!(err.contains("wrote element 15 of BS"), "{err}");
}

#[test]
fn a_source_in_flight_is_not_written() {
    if !watched() {
        return;
    }
    let err = refused(|b, out| {
        detour!(W(b, out) {
            let s = BS::create();
            let t = $tid_1$;
            #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
            b[$B[t][2]$] = 7.0;
            #wait 0;
            out[t] = s[$BS[t][2]$];
        })
    });
    assert!(
        err.contains("wrote element ") && err.contains("of b, which thread"),
        "{err}"
    );
    assert!(err.contains("before writing its source"), "{err}");
}

#[test]
fn another_threads_element_needs_a_sync_after_the_wait() {
    if !watched() {
        return;
    }
    let err = refused(|b, out| {
        detour!(W(b, out) {
            let s = BS::create();
            let t = $tid_1$;
            #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
            #wait 0;
            out[t] = s[$BS[(t + 1) % 4][0]$];
            #sync;
        })
    });
    assert!(err.contains("a race on shared memory"), "{err}");
    // With the barrier the same reads are the copied values.
    let (mut b, mut out) = (B::create().unwrap(), OUT::create().unwrap());
    let mut hb = parray::Array::<HB>::new().unwrap();
    for i in 0..64 {
        hb.set([i], i as f32);
    }
    parray::copy::copy(&hb, &mut b).unwrap();
    detour!(W(&b, &mut out) {
        let s = BS::create();
        let t = $tid_1$;
        #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
        #wait 0;
        #sync;
        out[t] = s[$BS[(t + 1) % 4][0]$];
    })
    .unwrap();
    let mut ho = parray::Array::<HO>::new().unwrap();
    parray::copy::copy(&out, &mut ho).unwrap();
    for t in 0..4 {
        assert_eq!(ho.at([t]), (16 * ((t + 1) % 4)) as f32, "thread {t}");
    }
}

parray! {
    paged float [64] HB;
    paged float [4] HO;
}

#[test]
fn a_body_does_not_end_with_a_copy_in_flight() {
    if !emulated() {
        return;
    }
    let err = refused(|b, out| {
        detour!(W(b, out) {
            let s = BS::create();
            let t = $tid_1$;
            #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
            out[t] = 1.0;
        })
    });
    assert!(err.contains("still in flight where its body ends"), "{err}");
    assert!(err.contains("add `#wait 0;`"), "{err}");
}

parray! {
    pthd [4] TEAM;
    paged float [4][16] PA;
    paged float [4][16] PB;
}

/// A pthd body's `#copy async` is its copy, complete at once (its threads are CPU
/// threads), and `#wait` has nothing to wait for.
#[test]
fn a_pthd_body_copies_at_once() -> parray::Result<()> {
    let mut pa = PA::create()?;
    for i in 0..4 {
        for k in 0..16 {
            pa.set([i, k], (i * 16 + k) as f32);
        }
    }
    let mut pb = PB::create()?;
    let (a, b) = (&pa, pb.ptr_mut());
    detour!(TEAM {
        let t = $tid$;
        #copy async PA_1(a + $PA[t][0]$) to PB_1(b + $PB[t][0]$);
        #wait 0;
    })?;
    for i in 0..4 {
        for k in 0..16 {
            assert_eq!(pb.at([i, k]), (i * 16 + k) as f32, "[{i}][{k}]");
        }
    }
    Ok(())
}

parray! {
    // 1000 columns: rows start at multiples of 4, so the last tile moves whole float4s
    // or fills them (1000 = 62 x 16 + 8: a piece is half in the data).
    const K4;
    dmem float [64][K4] A4;
    float [#A4_0][[ceil(K4 / 64)][4][16]#A4_1] A4T;
    dmem float [64][[4][16]] OUT4;
    paged float [64][K4] HA4;
    paged float [64][64] HOUT4;
}

/// At 1000 columns a piece of the last tile is a vector wholly in the data, moved by one
/// 16-byte `cp.async`, or wholly past it, filled: each thread's piece of the last tile
/// lands as the data and zeros, which another thread reads after the `#sync`.
#[test]
fn a_guarded_copy_of_whole_vectors() -> parray::Result<()> {
    K4.bind(1000)?;
    let mut ha = HA4::create()?;
    for i in 0..64 {
        for k in 0..1000 {
            ha.set([i, k], a_value(i, k));
        }
    }
    let (mut a, x, mut out) = (A4::create()?, X::create()?, OUT4::create()?);
    parray::copy::copy(&ha, &mut a)?;
    detour!(MVK(&a, &x, &mut out) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        let last = $dim(A4T_1_0)$ - 1;
        #copy async A4T_1_2(a + $A4T[row][[last][q][0]]$) to AS_2_1(s + $AS[0][r][[q][0]]$) if |c| 64 * last + 16 * q + c < $dim(A4_1)$ else 0.0;
        #wait 0;
        #sync;
        let p = (q + 1) % 4;
        for c in 0..16 {
            y[$OUT4[row][[p][c]]$] = s[$AS[0][r][[p][c]]$];
        }
    })?;
    let mut got = HOUT4::create()?;
    parray::copy::copy(&out, &mut got)?;
    for i in 0..64 {
        for c in 0..64 {
            let k = 960 + c;
            let want = if k < 1000 { a_value(i, k) } else { 0.0 };
            assert_eq!(got.at([i, c]), want, "[{i}][{k}]");
        }
    }
    let source = kernel_source!(MVK(&a, &x, &mut out) {
        let s = AS::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        let last = $dim(A4T_1_0)$ - 1;
        #copy async A4T_1_2(a + $A4T[row][[last][q][0]]$) to AS_2_1(s + $AS[0][r][[q][0]]$) if |c| 64 * last + 16 * q + c < $dim(A4_1)$ else 0.0;
        #wait 0;
    })?;
    assert!(
        source.contains("cp.async.cg.shared.global [%0], [%1], 16;"),
        "{source}"
    );
    assert!(!source.contains("__parray_fault"), "{source}");
    insta::assert_snapshot!("guarded_async_copy_at_1000", source);
    Ok(())
}

parray! {
    // Three stages: two tiles in flight while one is computed.
    smem float [3][16][[4][16]] AS3;
}

/// The product with three stages: tiles `j + 1` and `j + 2` load while tile `j` is
/// computed, `#wait 2` leaving the thread's two newest copies in flight (`#wait 1` and
/// `#wait 0` at the last two tiles, which have fewer after them).
#[test]
fn a_triple_buffered_matrix_vector_product() -> parray::Result<()> {
    let (mut ha, mut hx) = (HA::create()?, HX::create()?);
    for i in 0..64 {
        for k in 0..512 {
            ha.set([i, k], a_value(i, k));
        }
    }
    for k in 0..512 {
        hx.set([k], x_value(k));
    }
    let (mut a, mut x, mut y) = (A::create()?, X::create()?, Y::create()?);
    parray::copy::copy(&ha, &mut a)?;
    parray::copy::copy(&hx, &mut x)?;
    detour!(MV(&a, &x, &mut y) {
        let s = AS3::create();
        let r = $tid_1$ / 4;
        let q = $tid_1$ % 4;
        let row = $tid_0$ * 16 + r;
        #copy async A_1_2(a + $A[row][[0][q][0]]$) to AS3_2_1(s + $AS3[0][r][[q][0]]$);
        #copy async A_1_2(a + $A[row][[1][q][0]]$) to AS3_2_1(s + $AS3[1][r][[q][0]]$);
        let p = (q + 1) % 4;
        let mut acc = 0.0f32;
        for j in 0..8 {
            if j + 2 < 8 {
                #copy async A_1_2(a + $A[row][[j + 2][q][0]]$) to AS3_2_1(s + $AS3[(j + 2) % 3][r][[q][0]]$);
                #wait 2;
            } else if j + 1 < 8 {
                #wait 1;
            } else {
                #wait 0;
            }
            #sync;
            for c in 0..16 {
                acc += s[$AS3[j % 3][r][[p][c]]$] * x[$X_0[j][p][c]$];
            }
            #sync;
        }
        y[$Y[row][p]$] = acc;
    })?;
    let mut hy = HY::create()?;
    parray::copy::copy(&y, &mut hy)?;
    for i in 0..64 {
        let got: f32 = (0..4).map(|p| hy.at([i, p])).sum();
        assert_eq!(got, reference(i, 512), "row {i}");
    }
    Ok(())
}

/// A copy into a stage that other threads may still be reading is a race from the copy
/// on (a GPU's copy may write any time between the copy and the wait): the stage is
/// refilled only after a `#sync` that follows the reads.
#[test]
fn a_stage_is_refilled_after_a_sync() {
    if !watched() {
        return;
    }
    let err = refused(|b, out| {
        detour!(W(b, out) {
            let s = BS::create();
            let t = $tid_1$;
            #copy async B_1(b + $B[t][0]$) to BS_1(s + $BS[t][0]$);
            #wait 0;
            #sync;
            out[t] = s[$BS[(t + 1) % 4][0]$];
            #copy async B_1(b + $B[(t + 1) % 4][0]$) to BS_1(s + $BS[t][0]$);
            #wait 0;
        })
    });
    assert!(
        err.contains("a race on shared memory") && err.contains("read element 16 of BS"),
        "{err}"
    );
}
