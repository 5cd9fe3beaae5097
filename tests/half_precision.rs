//! `half` and `bf16` elements in cuda bodies: each operation gives the correctly rounded
//! half of its exact result, bit for bit, on the CPU emulation and on the GPU
//! (`PARRAY_BACKEND=cuda half_precision` on the GPU machine). The reference computes in
//! `f64` and rounds to the nearest half by comparing neighbours (for `+ - * /` of two halves
//! the same as rounding the exact result: 53 >= 2 x 11 + 2 bits), an independent route from
//! the bodies' `f32`.

use parray::prelude::*;
use parray::{bf16, f16};

parray! {
    const PAIRS = 16384;
    const OPS = 9;
    dmem half [PAIRS] HX;
    dmem half [PAIRS * OPS] HOUT;
    dmem bf16 [PAIRS] BX;
    dmem bf16 [PAIRS * OPS] BOUT;
    dmem int [PAIRS] IX;
    dmem float [PAIRS * 4] FOUT;
    cuda(half* x, half* y, half* out) [64][256] HGRID;
    cuda(bf16* x, bf16* y, bf16* out) [64][256] BGRID;
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

/// Half bit patterns: random ones, with the specials (zeros, subnormals, the largest,
/// infinities, a NaN) and values near 1 mixed in.
fn operands(seed: u64) -> Vec<u16> {
    let mut next = words(seed);
    let specials = [
        0x0000, 0x8000, 0x0001, 0x03ff, 0x0400, 0x7bff, 0xfbff, 0x7c00, 0xfc00, 0x7e00, 0x3c00,
        0x3c01, 0xbc00, 0x3555,
    ];
    (0..16384)
        .map(|k| match next() % 4 {
            0 => specials[k % specials.len()],
            1 => 0x3800 + (next() % 0x0800) as u16, // [0.5, 1)
            _ => next() as u16,
        })
        .collect()
}

/// The nine results of the test bodies, from `f64`, rounded once.
fn reference(a: f64, b: f64, round: impl Fn(f64) -> f64) -> [f64; 9] {
    let sum = round(a + b);
    [
        sum,
        round(a - b),
        round(a * b),
        round(a / b),
        -a,
        // `c = a; c += b; c *= b;`
        round(sum * b),
        if a < b { a } else { b },
        // `a * 0.5`, and `a.sqrt()` (computed in f32 and rounded: for a square root the
        // same as rounding the exact root).
        round(a * 0.5),
        round(a.sqrt()),
    ]
}

/// Equal numbers, or two NaNs (whose payloads the types do not fix).
fn same(got: f64, want: f64) -> bool {
    got == want && got.is_sign_negative() == want.is_sign_negative()
        || got.is_nan() && want.is_nan()
}

macro_rules! arithmetic_is_correctly_rounded {
    ($body:tt $(, $name:ident, $h:ident, $x:ident, $out:ident, $grid:ident)*) => {$(
        #[test]
        fn $name() -> parray::Result<()> {
            let (xs, ys) = (operands(1), operands(2));
            let mut x = $x::create()?;
            let mut y = $x::create()?;
            x.copy_from_slice(&xs.iter().map(|b| $h::from_bits(*b)).collect::<Vec<_>>())?;
            y.copy_from_slice(&ys.iter().map(|b| $h::from_bits(*b)).collect::<Vec<_>>())?;
            let mut out = $out::create()?;
            detour!($grid(&mut x, &mut y, &mut out) $body)?;
            let got = out.to_vec()?;
            let to_f64 = |b: u16| $h::from_bits(b).to_f64();
            let round = |v: f64| to_f64(nearest(v, $h::from_f32(v as f32).to_bits(), to_f64));
            let mut wrong = Vec::new();
            for (k, (a, b)) in xs.iter().zip(&ys).enumerate() {
                let (a, b) = ($h::from_bits(*a).to_f64(), $h::from_bits(*b).to_f64());
                for (op, want) in reference(a, b, round).into_iter().enumerate() {
                    let g = got[k * 9 + op].to_f64();
                    if !same(g, want) {
                        wrong.push(format!("op {op} of {a:e}, {b:e}: {g:e}, want {want:e}"));
                    }
                }
            }
            assert!(wrong.is_empty(), "{} wrong, first: {:?}", wrong.len(), &wrong[..wrong.len().min(5)]);
            Ok(())
        }
    )*};
}

// One body for both types: nothing in it names the half type.
arithmetic_is_correctly_rounded!(
    {
        let i = $tid$;
        let a = x[i];
        let b = y[i];
        out[i * 9] = a + b;
        out[i * 9 + 1] = a - b;
        out[i * 9 + 2] = a * b;
        out[i * 9 + 3] = a / b;
        out[i * 9 + 4] = -a;
        let mut c = a;
        c += b;
        c *= b;
        out[i * 9 + 5] = c;
        out[i * 9 + 6] = if a < b { a } else { b };
        out[i * 9 + 7] = a * 0.5;
        out[i * 9 + 8] = a.sqrt();
    },
    half_arithmetic_is_correctly_rounded, f16, HX, HOUT, HGRID,
    bf16_arithmetic_is_correctly_rounded, bf16, BX, BOUT, BGRID
);

parray! {
    cuda(int* ints, bf16* b, half* h, float* out) [64][256] CONVERT;
}

/// The half nearest to `x` (ties to the even bit pattern), by comparing `x` with the
/// neighbours of a guess (`to_f64` and `from_bits` of the half type); infinity past the
/// largest finite value's rounding range.
fn nearest(x: f64, guess: u16, to_f64: impl Fn(u16) -> f64) -> u16 {
    if x.is_nan() {
        return guess;
    }
    // Infinity stands one step past the largest finite value, as IEEE rounding has it.
    let value = |c: u16| match to_f64(c) {
        v if v.is_infinite() => {
            let (max, below) = (to_f64(c - 1), to_f64(c - 2));
            v.signum() * (max.abs() + (max - below).abs())
        }
        v => v,
    };
    let sign = guess & 0x8000;
    let magnitude = guess & 0x7fff;
    let mut best = guess;
    for m in magnitude.saturating_sub(1)..=(magnitude + 1) {
        let c = sign | m;
        let (d, db) = ((value(c) - x).abs(), (value(best) - x).abs());
        if d < db || d == db && c & 1 == 0 {
            best = c;
        }
    }
    best
}

/// Conversions round once, from the exact value: an `i32` to `bf16` does not pass
/// through an `f32` (which would round `2^24 + 2^16 + 1` to the tie `2^24 + 2^16`, then to
/// even, `2^24`), and a half converts to an integer as an `f32` does (saturating).
#[test]
fn conversions_round_once() -> parray::Result<()> {
    let mut next = words(3);
    let mut ints: Vec<i32> = (0..16384).map(|_| next() as i32 >> (next() % 32)).collect();
    ints[0] = (1 << 24) + (1 << 16) + 1;
    ints[1] = i32::MIN;
    ints[2] = 65520; // the f16 tie between 65504 and infinity: rounds to infinity
    let mut ix = IX::create()?;
    ix.copy_from_slice(&ints)?;
    let (mut b, mut h, mut out) = (BX::create()?, HX::create()?, FOUT::create()?);
    detour!(CONVERT(&ix, &mut b, &mut h, &mut out) {
        let i = $tid$;
        let n = ints[i];
        b[i] = n as bf16;
        h[i] = n as f16;
        out[i * 4] = (n as bf16) as f32;
        out[i * 4 + 1] = ((n as f16) as i32) as f32;
        out[i * 4 + 2] = ((n as f64 * 1.0000000596046448) as f16) as f32;
        out[i * 4 + 3] = (((n as f16) as f16) as bf16) as f32;
    })?;
    let (b, h, out) = (b.to_vec()?, h.to_vec()?, out.to_vec()?);
    assert_eq!(
        b[0].to_f64(),
        16908288.0,
        "2^24 + 2^16 + 1 rounds up to 2^24 + 2^17"
    );
    assert!(h[2].is_infinite());
    let to_b = |b: u16| bf16::from_bits(b).to_f64();
    let to_h = |b: u16| f16::from_bits(b).to_f64();
    for (k, n) in ints.iter().enumerate() {
        let n = f64::from(*n);
        let want_b = bf16::from_bits(nearest(n, bf16::from_f32(n as f32).to_bits(), to_b));
        let want_h = f16::from_bits(nearest(n, f16::from_f32(n as f32).to_bits(), to_h));
        assert_eq!(b[k].to_bits(), want_b.to_bits(), "{n} as bf16");
        assert_eq!(h[k].to_bits(), want_h.to_bits(), "{n} as f16");
        assert_eq!(out[k * 4], want_b.to_f32(), "{n} as bf16 as f32");
        assert_eq!(
            out[k * 4 + 1],
            (want_h.to_f32() as i32) as f32,
            "{n} as f16 as i32"
        );
        let x = n * 1.0000000596046448;
        let scaled = f16::from_bits(nearest(x, f16::from_f32(x as f32).to_bits(), to_h)).to_f32();
        assert_eq!(
            out[k * 4 + 2].to_bits(),
            scaled.to_bits(),
            "{n} scaled, as f16"
        );
        assert_eq!(
            out[k * 4 + 3],
            bf16::from_f32(want_h.to_f32()).to_f32(),
            "{n} as f16 as bf16"
        );
    }
    Ok(())
}

parray! {
    smem bf16 [256] BTILE;
}

/// The C of half-precision code: loads and stores of `__half` and `__nv_bfloat16`,
/// arithmetic in `float` rounded once, literals as bits, the conversions; in HIP, ROCm's
/// types and constructors (compiled by hipcc in `tests/hip_snapshots.rs`).
#[test]
fn the_c_of_half_precision() {
    let (ints, b, h, out) = ((), (), (), ());
    macro_rules! in_both_dialects {
        ($body:tt) => {
            (
                kernel_source!(CONVERT(ints, b, h, out) $body),
                kernel_source!(hip(64): CONVERT(ints, b, h, out) $body),
            )
        };
    }
    let (cuda, hip) = in_both_dialects!({
        let i = $tid$;
        let t = BTILE::create();
        t[$tid_1$] = b[i] * 0.1;
        #sync
        let mut acc = 0.0f32;
        for k in 0..256 {
            acc += t[k] as f32;
        }
        let x = h[i];
        let mut y = x.exp() - 1.5;
        y /= x;
        h[i] = if y > x { y } else { -x };
        out[i] = acc + (ints[i] as f16) as f32 + (x as f32 as bf16) as f32;
    });
    insta::assert_snapshot!("half_precision_cuda", cuda);
    insta::assert_snapshot!("half_precision_hip", hip);
}
