//! Swizzled types (SPEC 2.5, rule 11) in cuda bodies: a `$T[...]$` form of one is the
//! offset compiler's XOR offset, proved in bounds where its indices lie in their
//! dimensions; a `#copy` to or from a swizzled shared tile moves element k to element k,
//! vector by vector where the XOR keeps a vector's lanes together (the 128-byte mode:
//! float4s, vectors of 8 bf16), element by element otherwise. Run on the
//! CPU emulation (or a GPU: `PARRAY_BACKEND=cuda swizzle_bodies`) and checked against the
//! mode's formula and the layout's own offsets.

use std::collections::HashMap;

use parray::bf16;
use parray::layout::interp::Interp;
use parray::prelude::*;

/// `STILE` as the interpreter reads it.
const STILE_DECL: &str = "smem int [[8][8]][[8 ^ STILE_0_1][8]] STILE";

parray! {
    // Hopper's 128-byte mode on rows of 64 elements (bf16's tile; its offsets on ints):
    // off(r, c) = r*64 + ((c/8) ^ (r%8))*8 + c%8.
    smem int [[8][8]][[8 ^ STILE_0_1][8]] STILE;
    dmem int [64][64] RAW;
    cuda(int* raw) [1][64] ROWS;

    smem bf16 [[8][8]][[8 ^ BTILE_0_1][8]] BTILE;
    dmem bf16 [64][64] BMAT;
    cuda(bf16* src, bf16* dst) [1][1] BONE;

    // On CPU threads: the same layout in host memory.
    paged int [[8][8]][[8 ^ PTILE_0_1][8]] PTILE;
    pthd [64] CPU;

    // The 128-byte mode on floats: rows of 32, chunks of 4 (16 bytes, a float4).
    smem float [[8][8]][[8 ^ FTILE_0_1][4]] FTILE;
    dmem float [64][32] FMAT;
    cuda(float* src, float* dst) [1][1] FONE;
}

fn value(r: usize, c: usize) -> i32 {
    (r * 1000 + c) as i32
}

/// The 128-byte mode's offset of element (r, c) of a tile of rows of 64.
fn hopper_128(r: usize, c: usize) -> usize {
    r * 64 + ((c / 8) ^ (r % 8)) * 8 + c % 8
}

/// Each thread writes its row of a swizzled shared tile through `$STILE[r][c]$`, then
/// copies its 64 elements of the tile's storage out as they lie: element (r, c) is at the
/// formula's offset, and at the layout's own (`offset_of`, the declared tree's walk).
#[test]
fn elements_written_through_a_swizzled_form_land_at_the_xor_offset() -> parray::Result<()> {
    let mut raw = RAW::create()?;
    detour!(ROWS(&mut raw) {
        let s = STILE::create();
        for c in 0..64 {
            s[$STILE[$tid$][c]$] = ($tid$ * 1000 + c) as i32;
        }
        #sync;
        for i in 0..64 {
            raw[$RAW[$tid$][i]$] = s[$tid$ * 64 + i];
        }
    })?;
    let storage = raw.to_vec()?;
    // The reference interpreter's `STILE[r][c]`, independent of the offset compiler.
    let program = parray::layout::parse_program(STILE_DECL).expect("parses");
    let it = Interp::new(&program, &[]).expect("resolves");
    let ie = parray::layout::parse_index_expr("STILE[r][c]").expect("parses");
    for r in 0..64 {
        for c in 0..64 {
            let vars = HashMap::from([("r".to_string(), r as u64), ("c".to_string(), c as u64)]);
            let at = it.index(&ie, &vars).expect("in range") as usize;
            assert_eq!(at, hopper_128(r, c));
            assert_eq!(storage[at], value(r, c), "[{r}][{c}]");
            assert_eq!(STILE::offset_of(&[r, c]), at);
        }
    }
    Ok(())
}

/// A pthd body writes the same tile through the same form (its Rust computes the XOR as
/// the emulation's does).
#[test]
fn a_pthd_body_writes_through_a_swizzled_form() -> parray::Result<()> {
    let mut tile = PTILE::create()?;
    detour!(CPU {
        for c in 0..64 {
            tile[$PTILE[$tid$][c]$] = ($tid$ * 1000 + c) as i32;
        }
    })?;
    let storage = tile.to_vec()?;
    for r in 0..64 {
        for c in 0..64 {
            assert_eq!(storage[hopper_128(r, c)], value(r, c), "[{r}][{c}]");
        }
    }
    Ok(())
}

/// The same body's kernel: its every access proved (no `parray_at`), the form written
/// with its XOR.
#[test]
fn the_swizzled_writes_are_proved() {
    let raw = ();
    let source = kernel_source!(ROWS(raw) {
        let s = STILE::create();
        for c in 0..64 {
            s[$STILE[$tid$][c]$] = ($tid$ * 1000 + c) as i32;
        }
        #sync;
        for i in 0..64 {
            raw[$RAW[$tid$][i]$] = s[$tid$ * 64 + i];
        }
    });
    assert!(!source.contains("parray_at"), "{source}");
    assert!(
        source.contains("(((int)c / 8) ^ ((int)tid % 8)) * 8"),
        "{source}"
    );
}

/// A bf16 matrix into the swizzled tile and back: the same elements, each at the
/// formula's offset in the tile (moved in vectors of 8).
#[test]
fn a_bf16_tile_copied_through_a_swizzled_tile_comes_back() -> parray::Result<()> {
    let bits: Vec<u16> = (0..4096u16)
        .map(|k| k.wrapping_mul(7919) & 0x7f7f)
        .collect();
    let input: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    let mut src = BMAT::create()?;
    src.copy_from_slice(&input)?;
    let (mut dst, mut raw) = (BMAT::create()?, BMAT::create()?);
    detour!(BONE(&src, &mut dst) {
        let s = BTILE::create();
        #copy BMAT(src) to BTILE(s);
        #copy BTILE(s) to BMAT(dst);
    })?;
    let back: Vec<u16> = dst.to_vec()?.iter().map(|x| x.to_bits()).collect();
    assert_eq!(back, bits);
    // The tile's storage, element (r, c) at the formula's offset.
    detour!(BONE(&src, &mut raw) {
        let s = BTILE::create();
        #copy BMAT(src) to BTILE(s);
        for i in 0..4096 {
            dst[i] = s[i];
        }
    })?;
    let storage: Vec<u16> = raw.to_vec()?.iter().map(|x| x.to_bits()).collect();
    for r in 0..64 {
        for c in 0..64 {
            assert_eq!(storage[hopper_128(r, c)], bits[r * 64 + c], "[{r}][{c}]");
        }
    }
    Ok(())
}

/// A float matrix into the float 128-byte tile and back, vector by vector.
#[test]
fn a_float_tile_copied_through_a_swizzled_tile_comes_back() -> parray::Result<()> {
    let input: Vec<f32> = (0..2048).map(|k| k as f32 * 0.5).collect();
    let mut src = FMAT::create()?;
    src.copy_from_slice(&input)?;
    let (mut dst, mut raw) = (FMAT::create()?, FMAT::create()?);
    detour!(FONE(&src, &mut dst) {
        let s = FTILE::create();
        #copy FMAT(src) to FTILE(s);
        #copy FTILE(s) to FMAT(dst);
    })?;
    assert_eq!(dst.to_vec()?, input);
    detour!(FONE(&src, &mut raw) {
        let s = FTILE::create();
        #copy FMAT(src) to FTILE(s);
        for i in 0..2048 {
            dst[i] = s[i];
        }
    })?;
    let storage = raw.to_vec()?;
    for r in 0..64 {
        for c in 0..32 {
            let at = r * 32 + ((c / 4) ^ (r % 8)) * 4 + c % 4;
            assert_eq!(storage[at], input[r * 32 + c], "[{r}][{c}]");
            assert_eq!(FTILE::offset_of(&[r, c]), at);
        }
    }
    Ok(())
}

/// The float copies' kernel: float4 moves whose tile side is the XOR offset, all proved.
#[test]
fn the_swizzled_copies_kernel() {
    let (src, dst) = ((), ());
    let source = kernel_source!(FONE(src, dst) {
        let s = FTILE::create();
        #copy FMAT(src) to FTILE(s);
        #copy FTILE(s) to FMAT(dst);
    });
    assert!(
        !source.contains("parray_at") && !source.contains("parray_vat"),
        "{source}"
    );
    insta::assert_snapshot!(source);
}
