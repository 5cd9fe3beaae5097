//! `#copy` of 16-bit elements in vectors (SPEC.md 2.5 and 3.9): the loads a bf16 GEMM's
//! tiles need (a half tile's the same way). A bf16 tile from global into shared memory and
//! back, row-major and in Hopper's 128-byte swizzle (`smem bf16 [[8][8]][[8 ^ T_0_1][8]]
//! T`, whose 16-byte chunks of 8 elements the XOR keeps together), synchronously and with
//! `#copy async` (`cp.async.cg` of 16 bytes), against the input; guarded copies of rows of
//! 1000 (whole vectors) and of 61 given when the program runs (odd offsets: no vector, so
//! 2-byte moves, made at once under `async`: `cp.async` moves 4 bytes at least; at literal
//! sizes such a copy is refused, `tests/compile_fail/async_copy_misused.rs`); a register
//! array of 8. The kernels' CUDA C (and a HIP one) is pinned. Runs on the GPU where there
//! is one (`PARRAY_BACKEND=cuda`), else on the CPU emulation.

use parray::prelude::*;
use parray::{bf16, f16};

parray! {
    dmem bf16 [64][64] GM;
    smem bf16 [64][64] ROWS;
    smem bf16 [[8][8]][[8 ^ SWZ_0_1][8]] SWZ;
    cuda(bf16* src, bf16* dst) [1][64] TILE;
    cuda(bf16* src, bf16* dst) [1][1] ONE;
    // A thread's 16-byte chunk of a row, in registers.
    rmem bf16 [8] FRAG;
    dmem bf16 [64][[8][8]] CHUNKS;
}

fn input() -> Vec<u16> {
    (0..4096u16)
        .map(|k| k.wrapping_mul(7919) & 0x7f7f)
        .collect()
}

/// `GM` holding `bits`.
fn matrix(bits: &[u16]) -> parray::Result<parray::Array<GM>> {
    let values: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    let mut m = GM::create()?;
    m.copy_from_slice(&values)?;
    Ok(m)
}

fn bits_of(m: &parray::Array<GM>) -> parray::Result<Vec<u16>> {
    Ok(m.to_vec()?.iter().map(|x| x.to_bits()).collect())
}

/// Element (r, c) of a 64-wide bf16 tile in the 128-byte mode.
fn hopper_128(r: usize, c: usize) -> usize {
    r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8
}

/// Each thread copies a row into the row-major tile and back; one thread the whole
/// swizzled tile, with and without `async`; the swizzled tile's storage is the formula's.
#[test]
fn a_bf16_tile_goes_through_shared_memory_and_back() -> parray::Result<()> {
    let bits = input();
    let src = matrix(&bits)?;
    let (mut a, mut b, mut c, mut raw) =
        (GM::create()?, GM::create()?, GM::create()?, GM::create()?);
    detour!(TILE(&src, &mut a) {
        let s = ROWS::create();
        let r = $tid_1$;
        #copy GM_1(src + $GM[r][0]$) to ROWS_1(s + $ROWS[r][0]$);
        #copy ROWS_1(s + $ROWS[r][0]$) to GM_1(dst + $GM[r][0]$);
    })?;
    assert_eq!(bits_of(&a)?, bits);
    // A swizzled tile's row is no type of its own (the XOR takes the row's digit): one
    // thread copies the whole tile.
    detour!(ONE(&src, &mut b) {
        let s = SWZ::create();
        #copy GM(src) to SWZ(s);
        #copy SWZ(s) to GM(dst);
    })?;
    assert_eq!(bits_of(&b)?, bits);
    detour!(ONE(&src, &mut c) {
        let s = SWZ::create();
        #copy async GM(src) to SWZ(s);
        #wait 0;
        #copy SWZ(s) to GM(dst);
    })?;
    assert_eq!(bits_of(&c)?, bits);
    detour!(ONE(&src, &mut raw) {
        let s = SWZ::create();
        #copy async GM(src) to SWZ(s);
        #wait 0;
        for i in 0..4096 {
            dst[i] = s[i];
        }
    })?;
    let storage = bits_of(&raw)?;
    for r in 0..64 {
        for c in 0..64 {
            assert_eq!(storage[hopper_128(r, c)], bits[r * 64 + c], "[{r}][{c}]");
        }
    }
    Ok(())
}

/// The kernels: the swizzled tile moves as 512 vectors of 8 bf16 (16 bytes), all proved;
/// a thread's row `async`, as 8 `cp.async.cg` of 16 bytes.
#[test]
fn the_bf16_copies_move_16_bytes() {
    let (src, dst) = ((), ());
    let sync = kernel_source!(ONE(src, dst) {
        let s = SWZ::create();
        #copy GM(src) to SWZ(s);
        #copy SWZ(s) to GM(dst);
    });
    assert!(sync.contains("parray_bf16x8"), "{sync}");
    assert!(!sync.contains("parray_vat"), "{sync}");
    insta::assert_snapshot!("bf16_swizzled_copies", sync);
    // HIP's the same struct of its `hip_bfloat16` (`tests/hip_snapshots.rs` builds it).
    let hip = kernel_source!(hip(64): ONE(src, dst) {
        let s = SWZ::create();
        #copy GM(src) to SWZ(s);
        #copy SWZ(s) to GM(dst);
    });
    insta::assert_snapshot!("bf16_swizzled_copies_hip", hip);
    let copying = kernel_source!(TILE(src, dst) {
        let s = ROWS::create();
        let r = $tid_1$;
        #copy async GM_1(src + $GM[r][0]$) to ROWS_1(s + $ROWS[r][0]$);
        #wait 0;
        #copy ROWS_1(s + $ROWS[r][0]$) to GM_1(dst + $GM[r][0]$);
    });
    assert!(
        copying.contains("cp.async.cg.shared.global [%0], [%1], 16;"),
        "{copying}"
    );
    insta::assert_snapshot!("bf16_async_copy", copying);
}

parray! {
    // Rows of W elements given when the program runs (61: odd, so rows start at odd
    // offsets), in one tile of 64 columns that reaches past them.
    const W;
    dmem bf16 [64][W] OM;
    bf16 [#OM_0][[ceil(W / 64)][64]#OM_1] OMT;
    smem bf16 [64][64] OT;
    dmem bf16 [64][64] OUT;
    cuda(bf16* src, bf16* dst) [1][64] TAIL;
}

const ODD: usize = 61;

/// A guarded copy of the rows into the tile, zeros past them, and back out whole, with
/// and without `async`.
#[test]
fn a_guarded_copy_of_odd_rows_moves_elements() -> parray::Result<()> {
    W.bind(ODD)?;
    let (bits, values) = odd_rows();
    let mut src = OM::create()?;
    src.copy_from_slice(&values)?;
    let mut out = OUT::create()?;
    detour!(TAIL(&src, &mut out) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(OM_1)$;
        #copy OMT_1_1(src + $OMT[r][[0][0]]$) to OT_1(s + $OT[r][0]$) if |c| c < n else 0.0;
        #copy OT_1(s + $OT[r][0]$) to OUT_1(dst + $OUT[r][0]$);
    })?;
    // `async` at sizes given when the program runs: decided at the bound sizes, where
    // each move is of one element, 2 bytes, made at once (no `cp.async` is that small).
    let mut later = OUT::create()?;
    detour!(TAIL(&src, &mut later) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(OM_1)$;
        #copy async OMT_1_1(src + $OMT[r][[0][0]]$) to OT_1(s + $OT[r][0]$) if |c| c < n else 0.0;
        #wait 0;
        #copy OT_1(s + $OT[r][0]$) to OUT_1(dst + $OUT[r][0]$);
    })?;
    for out in [&out, &later] {
        assert_odd_rows(&out.to_vec()?, &bits);
    }
    let (src, dst) = ((), ());
    let source = kernel_source!(TAIL(src, dst) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(OM_1)$;
        #copy async OMT_1_1(src + $OMT[r][[0][0]]$) to OT_1(s + $OT[r][0]$) if |c| c < n else 0.0;
        #wait 0;
    })?;
    assert!(!source.contains("cp.async.ca"), "{source}");
    assert!(source.contains("cp.async.commit_group"), "{source}");
    Ok(())
}

parray! {
    // Rows of V elements given when the program runs (1000: each row starts at a
    // multiple of 8), in tiles of 64 columns, the last reaching past them.
    const V;
    dmem bf16 [64][V] EM;
    bf16 [#EM_0][[ceil(V / 64)][64]#EM_1] EMT;
    cuda(bf16* src, bf16* dst) [1][64] EDGE;
}

const EVEN: usize = 1000;

/// The last tile of rows of 1000 bf16 (40 in the data, 24 past it), guarded, synchronously
/// and with `async`: each vector of 8 lies wholly inside the data or wholly outside, so
/// each moves whole (16 bytes, one `cp.async`) or is filled, one test a vector.
#[test]
fn a_guarded_copy_of_whole_bf16_vectors() -> parray::Result<()> {
    V.bind(EVEN)?;
    let bits: Vec<u16> = (0..64 * EVEN as u32)
        .map(|k| (k.wrapping_mul(7919) & 0x7f7f) as u16)
        .collect();
    let values: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    let mut src = EM::create()?;
    src.copy_from_slice(&values)?;
    let (mut a, mut b) = (OUT::create()?, OUT::create()?);
    detour!(EDGE(&src, &mut a) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(EM_1)$;
        let last = $dim(EMT_1_0)$ - 1;
        #copy EMT_1_1(src + $EMT[r][[last][0]]$) to OT_1(s + $OT[r][0]$) if |c| 64 * last + c < n else 0.0;
        #copy OT_1(s + $OT[r][0]$) to OUT_1(dst + $OUT[r][0]$);
    })?;
    detour!(EDGE(&src, &mut b) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(EM_1)$;
        let last = $dim(EMT_1_0)$ - 1;
        #copy async EMT_1_1(src + $EMT[r][[last][0]]$) to OT_1(s + $OT[r][0]$) if |c| 64 * last + c < n else 0.0;
        #wait 0;
        #copy OT_1(s + $OT[r][0]$) to OUT_1(dst + $OUT[r][0]$);
    })?;
    for out in [&a, &b] {
        let got: Vec<u16> = out.to_vec()?.iter().map(|x| x.to_bits()).collect();
        for r in 0..64 {
            for c in 0..64 {
                let col = 960 + c;
                let want = if col < EVEN { bits[r * EVEN + col] } else { 0 };
                assert_eq!(got[r * 64 + c], want, "[{r}][{c}]");
            }
        }
    }
    let (src, dst) = ((), ());
    let source = kernel_source!(EDGE(src, dst) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(EM_1)$;
        let last = $dim(EMT_1_0)$ - 1;
        #copy async EMT_1_1(src + $EMT[r][[last][0]]$) to OT_1(s + $OT[r][0]$) if |c| 64 * last + c < n else 0.0;
        #wait 0;
    })?;
    assert!(
        source.contains("cp.async.cg.shared.global [%0], [%1], 16;"),
        "{source}"
    );
    insta::assert_snapshot!("bf16_guarded_async_copy_at_1000", source);
    Ok(())
}

/// Each thread's chunks of its row through an 8-bf16 register array: each chunk one
/// 16-byte load into the registers and one store out of them, the registers written and
/// read lane by lane (they stay registers).
#[test]
fn a_register_array_of_8_bf16_moves_16_bytes() -> parray::Result<()> {
    let bits = input();
    let values: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    let (mut src, mut out) = (CHUNKS::create()?, CHUNKS::create()?);
    src.copy_from_slice(&values)?;
    detour!(TILE(&src, &mut out) {
        let f = FRAG::create();
        let r = $tid_1$;
        for j in 0..8 {
            #copy CHUNKS_1_1(src + $CHUNKS[r][[j][0]]$) to FRAG(f);
            #copy FRAG(f) to CHUNKS_1_1(dst + $CHUNKS[r][[j][0]]$);
        }
    })?;
    let back: Vec<u16> = out.to_vec()?.iter().map(|x| x.to_bits()).collect();
    assert_eq!(back, bits);
    let (src, dst) = ((), ());
    let source = kernel_source!(TILE(src, dst) {
        let f = FRAG::create();
        let r = $tid_1$;
        for j in 0..8 {
            #copy CHUNKS_1_1(src + $CHUNKS[r][[j][0]]$) to FRAG(f);
            #copy FRAG(f) to CHUNKS_1_1(dst + $CHUNKS[r][[j][0]]$);
        }
    });
    assert!(
        source.contains("parray_set(f, *(const parray_bf16x8*)")
            && source.contains("= parray_get_parray_bf16x8(f)"),
        "{source}"
    );
    Ok(())
}

parray! {
    dmem half [64][64] HM;
    smem half [64][64] HROWS;
    cuda(half* src, half* dst) [1][64] HTILE;
}

/// `half` moves as `bf16` does: each thread's row into the tile with `async`, 8 vectors
/// of 8 (`cp.async.cg` of 16 bytes), and back.
#[test]
fn a_half_tile_goes_through_shared_memory_and_back() -> parray::Result<()> {
    let values: Vec<f16> = (0..4096u16)
        .map(|k| f16::from_bits(k.wrapping_mul(7919) & 0x7bff))
        .collect();
    let mut src = HM::create()?;
    src.copy_from_slice(&values)?;
    let mut out = HM::create()?;
    detour!(HTILE(&src, &mut out) {
        let s = HROWS::create();
        let r = $tid_1$;
        #copy async HM_1(src + $HM[r][0]$) to HROWS_1(s + $HROWS[r][0]$);
        #wait 0;
        #copy HROWS_1(s + $HROWS[r][0]$) to HM_1(dst + $HM[r][0]$);
    })?;
    let back: Vec<u16> = out.to_vec()?.iter().map(|x| x.to_bits()).collect();
    let want: Vec<u16> = values.iter().map(|x| x.to_bits()).collect();
    assert_eq!(back, want);
    let (src, dst) = ((), ());
    let source = kernel_source!(HTILE(src, dst) {
        let s = HROWS::create();
        let r = $tid_1$;
        #copy async HM_1(src + $HM[r][0]$) to HROWS_1(s + $HROWS[r][0]$);
        #wait 0;
        #copy HROWS_1(s + $HROWS[r][0]$) to HM_1(dst + $HM[r][0]$);
    });
    assert!(
        source.contains("struct alignas(16) parray_half8 { __half lanes[8]; };")
            && source.contains("cp.async.cg.shared.global [%0], [%1], 16;"),
        "{source}"
    );
    Ok(())
}

parray! {
    // The rows of 61 at a literal size.
    dmem bf16 [64][61] LOM;
    bf16 [#LOM_0][[ceil(61 / 64)][64]#LOM_1] LOMT;
}

/// The kernels of the guarded copies of rows of 61 keep their guard, made at the bound
/// size as at the literal one; the emulation, which runs a body of run-time sizes as
/// written, cannot show it (`tests/runtime_sizes.rs` says how the guard once went
/// missing), but runs the literal size's kernel body, so it checks that one.
#[test]
fn the_guarded_copies_of_odd_rows_keep_their_guard() -> parray::Result<()> {
    W.bind(ODD)?;
    let (src, dst) = ((), ());
    let sync = kernel_source!(TAIL(src, dst) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(OM_1)$;
        #copy OMT_1_1(src + $OMT[r][[0][0]]$) to OT_1(s + $OT[r][0]$) if |c| c < n else 0.0;
        #copy OT_1(s + $OT[r][0]$) to OUT_1(dst + $OUT[r][0]$);
    })?;
    let later = kernel_source!(TAIL(src, dst) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(OM_1)$;
        #copy async OMT_1_1(src + $OMT[r][[0][0]]$) to OT_1(s + $OT[r][0]$) if |c| c < n else 0.0;
        #wait 0;
    })?;
    for source in [sync, later] {
        assert!(source.contains("if (c < n) {"), "{source}");
        assert!(!source.contains("__parray_fault"), "{source}");
    }
    insta::assert_snapshot!("bf16_guarded_copy_at_61", sync);
    insta::assert_snapshot!("bf16_guarded_async_copy_at_61", later);
    let (bits, values) = odd_rows();
    let mut src = LOM::create()?;
    src.copy_from_slice(&values)?;
    let mut out = OUT::create()?;
    detour!(TAIL(&src, &mut out) {
        let s = OT::create();
        let r = $tid_1$;
        let n = $dim(LOM_1)$;
        #copy LOMT_1_1(src + $LOMT[r][[0][0]]$) to OT_1(s + $OT[r][0]$) if |c| c < n else 0.0;
        #copy OT_1(s + $OT[r][0]$) to OUT_1(dst + $OUT[r][0]$);
    })?;
    assert_odd_rows(&out.to_vec()?, &bits);
    Ok(())
}

/// The rows of `ODD` elements copied into tiles of 64 columns: their bits and values.
fn odd_rows() -> (Vec<u16>, Vec<bf16>) {
    let bits: Vec<u16> = input()[..64 * ODD].to_vec();
    let values = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    (bits, values)
}

/// The 64 x 64 tile `got` holds the rows `bits` of `ODD` elements and zeros past them.
fn assert_odd_rows(got: &[bf16], bits: &[u16]) {
    for r in 0..64 {
        for c in 0..64 {
            let want = if c < ODD { bits[r * ODD + c] } else { 0 };
            assert_eq!(got[r * 64 + c].to_bits(), want, "[{r}][{c}]");
        }
    }
}
