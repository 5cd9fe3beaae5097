//! `x as f16` and `x as bf16` of an `f64`, rounded once (to nearest, ties to even), as the
//! body language defines them and CUDA's `__double2half` computes them. (`half`'s own
//! `from_f64` drops the low 32 bits of the mantissa before rounding, so a value just past
//! a tie rounds as the tie.)

use half::{bf16, f16};

use crate::ir::Scalar;

/// `x` rounded to `f32` to odd: toward zero, with the last bit set where that was
/// inexact. From it, rounding to any format of at most 22 bits is rounding `x` once.
fn f32_round_to_odd(x: f64) -> f32 {
    let nearest = x as f32;
    if x.is_nan() || f64::from(nearest) == x {
        return nearest;
    }
    // Toward zero: one step back where the nearest rounded away (or overflowed).
    let toward_zero = if f64::from(nearest).abs() > x.abs() {
        f32::from_bits(nearest.to_bits() - 1)
    } else {
        nearest
    };
    f32::from_bits(toward_zero.to_bits() | 1)
}

/// `x as f16`, rounded once.
pub fn f16_from_f64(x: f64) -> f16 {
    f16::from_f32(f32_round_to_odd(x))
}

/// `x as bf16`, rounded once.
pub fn bf16_from_f64(x: f64) -> bf16 {
    bf16::from_f32(f32_round_to_odd(x))
}

/// The bits of the literal `digits` of the half type `s` (rounded once: to `f64`, exactly
/// enough, then to the half).
pub(crate) fn literal_bits(digits: &str, s: Scalar) -> Option<u16> {
    let v: f64 = digits.replace('_', "").parse().ok()?;
    match s {
        Scalar::F16 => Some(f16_from_f64(v).to_bits()),
        Scalar::Bf16 => Some(bf16_from_f64(v).to_bits()),
        _ => None,
    }
}

/// The value of the half of type `s` with these bits.
pub(crate) fn value(bits: u16, s: Scalar) -> f64 {
    match s {
        Scalar::Bf16 => bf16::from_bits(bits).to_f64(),
        _ => f16::from_bits(bits).to_f64(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against the rounding of the exact value, found by comparing with the neighbours'
    /// midpoints in `f64` (exact for these formats).
    fn check(x: f64) {
        for (got, up, down) in [
            {
                let g = f16_from_f64(x);
                let (u, d) = (
                    f16::from_bits(g.to_bits().wrapping_add(1)),
                    f16::from_bits(g.to_bits().wrapping_sub(1)),
                );
                (g.to_f64(), u.to_f64(), d.to_f64())
            },
            {
                let g = bf16_from_f64(x);
                let (u, d) = (
                    bf16::from_bits(g.to_bits().wrapping_add(1)),
                    bf16::from_bits(g.to_bits().wrapping_sub(1)),
                );
                (g.to_f64(), u.to_f64(), d.to_f64())
            },
        ] {
            if got.is_infinite() || x == 0.0 {
                continue;
            }
            // No neighbour of the result is nearer to `x` (magnitudes: the bit steps move
            // away from and toward zero).
            for n in [up, down] {
                if n.is_finite() {
                    assert!(
                        (n - x).abs() >= (got - x).abs(),
                        "{x:e}: {got:e}, but {n:e} is nearer"
                    );
                }
            }
        }
    }

    #[test]
    fn rounds_once() {
        let tie_plus = f64::from((1 << 24) + (1 << 16) + 1);
        assert_eq!(
            bf16_from_f64(tie_plus).to_f64(),
            f64::from((1 << 24) + (1 << 17))
        );
        assert_eq!(
            f16_from_f64(1.0 + 2f64.powi(-11) + 2f64.powi(-40)).to_bits(),
            0x3c01
        );
        assert_eq!(f16_from_f64(1.0 + 2f64.powi(-11)).to_bits(), 0x3c00);
        assert!(f16_from_f64(65520.0).is_infinite());
        assert_eq!(f16_from_f64(65519.99).to_f64(), 65504.0);
        assert!(bf16_from_f64(f64::MAX).is_infinite());
        assert!(f16_from_f64(f64::NAN).is_nan());
        let mut s = 1u64;
        for _ in 0..200_000 {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let x = f64::from_bits(s);
            if x.is_finite() {
                check(x);
                // Values of the halves' ranges.
                check(x.abs().sqrt().sqrt().sqrt() * if s & 1 == 0 { 1.0 } else { -1e-5 });
            }
        }
    }
}
