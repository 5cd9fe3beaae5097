//! Vector accesses in detour bodies (`p.load4(off)`, `p.store2(off, v)`, ...) and the
//! vectorised `#copy`: the same results as plain Rust on the host, on pointers, shared and
//! register arrays; a misaligned access and a lane out of bounds are the same errors on
//! the emulation as on a GPU (`PARRAY_BACKEND=cuda vectors` on the GPU machine).

use parray::prelude::*;

parray! {
    pub dmem float [64][4] V4;
    pub dmem double [64][2] D2;
    pub dmem int [64][4] I4;
    pub cuda(float* a, float* out) [2][32] GRID;
    pub cuda(double* d, double* dout, int* i, int* iout) [2][32] MIXED;
    pub smem float [32][4] TILE4;
    pub smem float [16][4] TILE_HALF;
    pub rmem float [8] REG8;
}

fn input() -> Vec<f32> {
    (0..256).map(|x| x as f32 * 0.5 - 7.0).collect()
}

fn filled<T: DataType<Elem = f32>>(values: &[f32]) -> parray::Result<Array<T>> {
    let mut a = Array::<T>::new()?;
    a.copy_from_slice(values)?;
    Ok(a)
}

/// Each thread reads its float4 of `a`, reverses its lanes and doubles them.
#[test]
fn float4_loads_and_stores_through_pointers() -> parray::Result<()> {
    let a = filled::<V4>(&input())?;
    let mut out = V4::create()?;
    detour!(GRID(&a, &mut out) {
        let v = a.load4($V4[$tid$][0]$);
        out.store4($V4[$tid$][0]$, Float4::new(v.w * 2.0, v.z * 2.0, v.y * 2.0, v.x * 2.0));
    })?;
    let x = input();
    let expected: Vec<f32> = (0..256).map(|k| x[k / 4 * 4 + 3 - k % 4] * 2.0).collect();
    assert_eq!(out.to_vec()?, expected);
    Ok(())
}

/// `load2`/`store2` on f64 (`Double2`) and `load4`/`store4` on i32 (`Int4`) elements,
/// through pointers moved by an offset (`p + off`).
#[test]
fn double2_and_int4() -> parray::Result<()> {
    let mut d = D2::create()?;
    d.copy_from_slice(&(0..128).map(|x| x as f64 + 0.25).collect::<Vec<_>>())?;
    let mut i = I4::create()?;
    i.copy_from_slice(&(0..256).map(|x| x * 3 - 100).collect::<Vec<_>>())?;
    let (mut dout, mut iout) = (D2::create()?, I4::create()?);
    detour!(MIXED(&d, &mut dout, &i, &mut iout) {
        let p = d + $D2[$tid$][0]$;
        let v = p.load2(0);
        dout.store2($D2[$tid$][0]$, Double2::new(v.y, v.x + v.y));
        let q = i + $I4[$tid$][0]$;
        let w = q.load4(0);
        iout.store4($I4[$tid$][0]$, Int4::new(w.x + w.y, w.y - w.z, w.z * 2, -w.w));
    })?;
    let dx: Vec<f64> = (0..128).map(|x| x as f64 + 0.25).collect();
    let d_expected: Vec<f64> = (0..128)
        .map(|k| {
            let (x, y) = (dx[k / 2 * 2], dx[k / 2 * 2 + 1]);
            if k % 2 == 0 {
                y
            } else {
                x + y
            }
        })
        .collect();
    assert_eq!(dout.to_vec()?, d_expected);
    let ix: Vec<i32> = (0..256).map(|x| x * 3 - 100).collect();
    let i_expected: Vec<i32> = (0..256)
        .map(|k| {
            let b = k / 4 * 4;
            let (x, y, z, w) = (ix[b], ix[b + 1], ix[b + 2], ix[b + 3]);
            [x + y, y - z, z * 2, -w][k % 4]
        })
        .collect();
    assert_eq!(iout.to_vec()?, i_expected);
    Ok(())
}

/// Through a shared tile: each thread stores its float4, and after the barrier reads the
/// one of the thread at the other end of its block.
#[test]
fn float4_through_shared_memory() -> parray::Result<()> {
    let a = filled::<V4>(&input())?;
    let mut out = V4::create()?;
    detour!(GRID(&a, &mut out) {
        let t = TILE4::create();
        t.store4($TILE4[$tid_1$][0]$, a.load4($V4[$tid$][0]$));
        #sync;
        out.store4($V4[$tid$][0]$, t.load4($TILE4[31 - $tid_1$][0]$));
    })?;
    let x = input();
    let expected: Vec<f32> = (0..256)
        .map(|k| {
            let (t, lane) = (k / 4, k % 4);
            let (block, thread) = (t / 32, t % 32);
            x[(block * 32 + 31 - thread) * 4 + lane]
        })
        .collect();
    assert_eq!(out.to_vec()?, expected);
    Ok(())
}

/// Registers: two float4s in, pairs read back as float2s (lanes of both).
#[test]
fn vectors_in_registers() -> parray::Result<()> {
    let a = filled::<V4>(&input())?;
    let mut out = V4::create()?;
    detour!(GRID(&a, &mut out) {
        let r = REG8::create();
        let other = ($tid$ + 1) % 64;
        r.store4(0, a.load4($V4[$tid$][0]$));
        r.store4(4, a.load4($V4[other][0]$));
        let m = r.load2(2);
        let n = r.load2(4);
        out.store4($V4[$tid$][0]$, Float4::new(m.x, m.y, n.x, n.y));
    })?;
    let x = input();
    let expected: Vec<f32> = (0..256)
        .map(|k| {
            let t = k / 4;
            let regs: Vec<f32> = (0..4)
                .map(|l| x[t * 4 + l])
                .chain((0..4).map(|l| x[(t + 1) % 64 * 4 + l]))
                .collect();
            regs[2 + k % 4]
        })
        .collect();
    assert_eq!(out.to_vec()?, expected);
    Ok(())
}

parray! {
    pub dmem float [6] SIX;
    pub cuda(float* a, float* out, int shift) [1][4] FEW;
}

/// A checked access (its offset is not a form of a type) at an offset that is not a
/// multiple of its lanes: the error the GPU's fault record gives.
#[test]
fn a_misaligned_vector_is_an_error() -> parray::Result<()> {
    let a = filled::<V4>(&input())?;
    let mut out = V4::create()?;
    let e = detour!(FEW(&a, &mut out, 2i32) {
        let k = $tid$ * 4 + shift as usize;
        if $tid$ == 1 {
            out.store4(k, a.load4(k));
        }
    })
    .unwrap_err();
    match e {
        parray::Error::ThreadPanicked {
            thread,
            message,
            at,
            ..
        } => {
            // The statement of the access (the GPU's fault record names its line).
            let at = at.unwrap_or_default();
            assert!(at.starts_with("tests/vectors.rs:"), "{at}");
            assert_eq!(
                message,
                "parray: offset 6 of a is not aligned for a float4 access (a multiple of 4)"
            );
            assert!(
                matches!(thread, parray::ThreadId::Cuda { tid: 1, .. }),
                "{thread}"
            );
        }
        other => panic!("expected a thread panic, got {other}"),
    }
    Ok(())
}

/// Aligned, but its last lanes past the array's extent.
#[test]
fn a_lane_out_of_bounds_is_an_error() -> parray::Result<()> {
    let mut a = SIX::create()?;
    a.copy_from_slice(&[1.0, 2.0, 3.0, 4.0, 5.0, 6.0])?;
    let mut out = SIX::create()?;
    let e = detour!(FEW(&a, &mut out, 0i32) {
        let k = $tid$ * 4 + shift as usize;
        if $tid$ < 2 {
            let v = a.load4(k);
            out[$tid$] = v.x;
        }
    })
    .unwrap_err();
    match e {
        parray::Error::ThreadPanicked { message, .. } => assert_eq!(
            message,
            "parray: offsets 4..8 out of bounds for a (extent 6) in a float4 access"
        ),
        other => panic!("expected a thread panic, got {other}"),
    }
    Ok(())
}

/// An argument the body accesses by vectors must start at a multiple of their lanes.
#[test]
fn a_misaligned_argument_is_refused_before_the_launch() -> parray::Result<()> {
    let a = filled::<V4>(&input())?;
    let mut out = V4::create()?;
    let e = detour!(GRID(a.ptr() + 1, &mut out) {
        out.store2($tid$ * 2, a.load2($tid$ * 2));
    })
    .unwrap_err();
    assert!(
        e.to_string().ends_with(": `a` starts at offset 1 of its array, but the body accesses it by vectors of 2 elements, which must start at a multiple of 2: pass it at such an offset"),
        "{e}"
    );
    match e {
        parray::Error::Misaligned {
            name,
            offset,
            lanes,
            ..
        } => assert_eq!((name, offset, lanes), ("a", 1, 2)),
        other => panic!("expected a misaligned argument, got {other}"),
    }
    Ok(())
}

/// On the host, handles read and write vectors the same way, with the same checks.
#[test]
fn host_handles() -> parray::Result<()> {
    parray! { paged float [16] H; }
    let mut h = H::create()?;
    h.copy_from_slice(&(0..16).map(|x| x as f32).collect::<Vec<_>>())?;
    assert_eq!(h.load4(8), Float4::new(8.0, 9.0, 10.0, 11.0));
    assert_eq!((h.ptr() + 4).load2(2), Float2::new(6.0, 7.0));
    h.ptr_mut().store2(14, Float2::new(-1.0, -2.0));
    assert_eq!(h.load2(14), Float2::new(-1.0, -2.0));
    let misaligned = std::panic::catch_unwind(|| h.load4(2)).unwrap_err();
    assert_eq!(
        misaligned.downcast_ref::<String>().map(String::as_str),
        Some("parray: offset 2 of H is not aligned for a float4 access (a multiple of 4)")
    );
    let past = std::panic::catch_unwind(|| (h.ptr() + 12).load4(4)).unwrap_err();
    assert_eq!(
        past.downcast_ref::<String>().map(String::as_str),
        Some("parray: offsets 16..20 out of bounds for H (extent 16) in a float4 access")
    );
    Ok(())
}

// ---------------------------------------------------------------- Fig 21's SGEMM body

mod fig21 {
    use super::*;
    parray! {
        const N = 256;
        pub dmem float [N][N] TY;
        pub cuda(float* a, float* b, float* c) [[N/16][N/256]][[4][32]] CUDA;
        pub dmem float [[N/16][[4][4]]#TY_0][[N/32][32]#TY_1] A;
        pub dmem float [[N/32][32]#TY_0][[N/256][[128][2]]#TY_1] B;
        pub dmem float [#A_0][#B_1] C;
        pub dmem float [#C_0_1][#C_1_1_1] C0;
        pub smem float [32][17] S;
        pub smem float [32#S_0][[4][4]#S_1] S0;
        pub rmem float [16][2] R;
    }

    /// The detour of a body, and its kernel's source.
    macro_rules! sgemm {
        ($body:tt) => {
            fn sgemm(a: &Array<A>, b: &Array<B>, c: &mut Array<C>) -> parray::Result<()> {
                detour!(CUDA(a, b, c) $body)
            }

            fn sgemm_source() -> &'static str {
                let (a, b, c) = ((), (), ());
                kernel_source!(CUDA(a, b, c) $body)
            }
        };
    }

    // The paper's body (its `#subprog` aside): each thread's two columns of a 16x256 tile
    // of C in 32 registers, the tile of A staged through padded shared memory, B read as
    // float2s (`$cnt(B_1_1_1)$`), and the registers stored as float2s by a vectorised
    // `#copy R(r) to C0(c)`. (The pointers are moved by `let`, where the paper writes
    // `a += ...`: the accesses through them are then proved in bounds.)
    sgemm!({
        let s = S::create();
        let r = R::create();
        #[unroll]
        for i in 0..$size(R)$ {
            r[i] = 0.0;
        }
        let a = a + $A[[$tid_0_0$][[0][$tid_1_0$]]][[0][$tid_1_1$]]$;
        let b = b + $B[0][[$tid_0_1$][[$tid_1$][0]]]$;
        let c = c + $C[[$tid_0_0$][0]][[$tid_0_1$][[$tid_1$][0]]]$;
        for i in 0..$size(A_1_0)$ {
            #copy A_0_1_0(a + $A_1_0[i]$) to S0_1_0(s + $S0[$tid_1_1$][[0][$tid_1_0$]]$);
            #sync_1;
            for m in 0..$size(A_1_1)$ {
                let b1 = b + $B_0[i][m]$;
                let b2 = b1.load2(0);
                #[unroll]
                for j in 0..16 {
                    r[$R[j][0]$] += b2.x * s[$S[m][j]$];
                    r[$R[j][1]$] += b2.y * s[$S[m][j]$];
                }
            }
            #sync_1;
        }
        #copy R(r) to C0(c);
    });

    fn value(i: usize, j: usize, salt: usize) -> f32 {
        ((i * 7 + j * 3 + salt) % 4) as f32
    }

    #[test]
    fn sgemm_matches_a_plain_product() -> parray::Result<()> {
        const N: usize = 256;
        let av: Vec<f32> = (0..N * N).map(|x| value(x / N, x % N, 0)).collect();
        let bv: Vec<f32> = (0..N * N).map(|x| value(x / N, x % N, 1)).collect();
        let (mut a, mut b, mut c) = (TY::create()?, TY::create()?, TY::create()?);
        a.copy_from_slice(&av)?;
        b.copy_from_slice(&bv)?;
        sgemm(a.view::<A>(), b.view::<B>(), c.view_mut::<C>())?;
        let got = c.to_vec()?;
        for i in 0..N {
            for j in 0..N {
                let want: f32 = (0..N).map(|k| av[i * N + k] * bv[k * N + j]).sum();
                assert_eq!(got[i * N + j], want, "C[{i}][{j}]");
            }
        }
        Ok(())
    }

    /// The paper moves its pointers by `c += ...`: the copy is still vectorised (every
    /// value `c` is assigned keeps it a multiple of 2), its bounds checked.
    #[test]
    fn a_copy_through_a_moved_parameter() -> parray::Result<()> {
        parray! {
            cuda(float* c) [[N/16][N/256]][[4][32]] STORE;
        }
        let mut c = TY::create()?;
        detour!(STORE(c.view_mut::<C>()) {
            let r = R::create();
            for i in 0..$size(R)$ {
                r[i] = ($tid$ * 32 + i) as f32;
            }
            c += $C[[$tid_0_0$][0]][[$tid_0_1$][[$tid_1$][0]]]$;
            #copy R(r) to C0(c);
        })?;
        let mut expected = vec![0.0; 256 * 256];
        for (block, thread, k) in
            (0..16).flat_map(|b| (0..128).flat_map(move |t| (0..32).map(move |k| (b, t, k))))
        {
            expected[block * 4096 + (k / 2) * 256 + thread * 2 + k % 2] =
                ((block * 128 + thread) * 32 + k) as f32;
        }
        assert_eq!(c.to_vec()?, expected);
        let c = ();
        let source = kernel_source!(STORE(c) {
            let r = R::create();
            for i in 0..$size(R)$ {
                r[i] = ($tid$ * 32 + i) as f32;
            }
            c += $C[[$tid_0_0$][0]][[$tid_0_1$][[$tid_1$][0]]]$;
            #copy R(r) to C0(c);
        });
        assert!(
            source.contains("*(float2*)parray_vat<2>(c, (int)__parray_k * 256"),
            "{source}"
        );
        Ok(())
    }

    /// Its kernel: B's float2 load and C's float2 stores, proved in bounds and aligned (the
    /// whole kernel: `cuda_snapshots`' `vectorised_copy` has its copies).
    #[test]
    fn sgemm_kernel_moves_float2s() {
        let source = sgemm_source();
        for line in [
            "float2 b2 = *(const float2*)b1;",
            "= parray_get_float2(r + (int)__parray_k",
        ] {
            assert!(source.contains(line), "{line} in\n{source}");
        }
        assert!(!source.contains("parray_vat"), "{source}");
    }
}

/// `#copy` of a subprogram's type parameter and of types declared on it: each thread
/// copies its row of the caller's matrix, whatever its layout, into a row-major one.
mod subprogram_copies {
    use parray::prelude::*;

    subprog! {
        /// `db = da` for `da` of the type `T` and `db` of `U` (N x N, any layouts).
        pub fn to_rows<T, U>(da, db) -> parray::Result<()> {
            parray! {
                const N = dim(T_0);
                cuda(float* a, float* b) [1][N] ROWS;
                cuda(float* a, float* b) [1][1] ONE;
                dmem float [#T_1] TROW;
                dmem float [#U_1] UROW;
            }
            detour!(ROWS(da, db) {
                #copy TROW(a + $T[$tid$][0]$) to UROW(b + $U[$tid$][0]$);
            })?;
            let mut again = U::create()?;
            detour!(ONE(da, &mut again) {
                #copy T(a) to U(b);
            })?;
            assert_eq!(again.to_vec()?, db.to_vec()?);
            Ok(())
        }
    }

    parray! {
        paged float [64][64] H;
        dmem float [64][64] ROW_MAJOR;
        dmem float [2][2][32][32] BLOCKS_STORE;
        float [[#BLOCKS_STORE_0][#BLOCKS_STORE_2]][[#BLOCKS_STORE_1][#BLOCKS_STORE_3]] BLOCKS;
    }

    #[test]
    fn a_type_parameter_is_copied_in_its_layout() -> parray::Result<()> {
        let values: Vec<f32> = (0..64 * 64).map(|x| x as f32 * 0.25).collect();
        let mut h = H::create()?;
        h.as_mut_slice()?.copy_from_slice(&values);
        let mut blocks = BLOCKS_STORE::create()?;
        parray::copy::copy(&h, blocks.view_mut::<BLOCKS>())?;
        assert_ne!(blocks.to_vec()?, values, "the blocks hold another order");
        let mut rows = ROW_MAJOR::create()?;
        to_rows!(<BLOCKS, ROW_MAJOR>(&blocks, &mut rows))?;
        assert_eq!(rows.to_vec()?, values);
        Ok(())
    }
}

parray! {
    pub paged float [64][4] H4;
    pub pthd [2][32] THREADS;
}

/// `+ - * /` of a `Float4` with a `Float4` or an `f32` on either side, and their compound
/// assignments, lane by lane: the same as the scalar operations on each lane, on CPU
/// threads and on the cuda grid (exactly on the emulation; on a GPU, which may fuse a
/// product and a sum, within 1e-6).
#[test]
fn vector_arithmetic_is_lane_by_lane_on_every_back_end() -> parray::Result<()> {
    let want: Vec<f32> = input()
        .iter()
        .map(|&x| {
            let w = ((x * 2.0 + x) - 1.5) * x;
            0.5 / (w + 3.0) - x / 4.0
        })
        .collect();
    let a = filled::<H4>(&input())?;
    let mut out = H4::create()?;
    detour!(THREADS {
        let v = a.load4($H4[$tid$][0]$);
        let mut w = v * 2.0 + v;
        w -= 1.5;
        w *= v;
        let u = 0.5 / (w + 3.0) - v / 4.0;
        out.store4($H4[$tid$][0]$, u);
    })?;
    assert_eq!(out.as_slice()?, &want[..], "pthd");
    let a = filled::<V4>(&input())?;
    let mut out = V4::create()?;
    detour!(GRID(&a, &mut out) {
        let v = a.load4($V4[$tid$][0]$);
        let mut w = v * 2.0 + v;
        w -= 1.5;
        w *= v;
        let u = 0.5 / (w + 3.0) - v / 4.0;
        out.store4($V4[$tid$][0]$, u);
    })?;
    let got = out.to_vec()?;
    if parray::gpu::backend()? == parray::gpu::Backend::Emulate {
        assert_eq!(got, want, "emulation");
    }
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{g} vs {w}");
    }
    Ok(())
}
