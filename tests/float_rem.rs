//! `%` on floats means Rust's `%` (C's `fmod`: exact, with the sign of the dividend) on
//! every back end: the emulation computes it as Rust does, CUDA C and HIP call `fmodf` and
//! `fmod` (C's `%` takes integers only), halves through `f32`.

use parray::f16;
use parray::prelude::*;

parray! {
    dmem float [64] F;
    dmem double [64] D;
    dmem half [64] H;
    cuda(float* x, float* y, float* r, double* d, half* h) [2][32] REM;
    cuda(float* r, int* c) [1][32] UPDATE;
}

/// A generic function's `%`: Rust's at every type.
#[parray::func]
fn rem_twice<T: parray::Num>(a: T, b: T) -> T {
    let mut r = a % b;
    r %= b;
    r
}

/// Dividends and divisors of both signs, fractional and whole, and an exact multiple.
fn operands(t: usize) -> (f32, f32) {
    let x = (t as f32 - 31.5) * 1.375;
    let y = match t % 4 {
        0 => 2.5,
        1 => -2.5,
        2 => 0.75,
        _ => -4.0,
    };
    (x, y)
}

#[test]
fn float_remainder_is_rusts_on_the_emulation() -> parray::Result<()> {
    let (mut x, mut y) = (F::create()?, F::create()?);
    let (mut r, mut d, mut h) = (F::create()?, D::create()?, H::create()?);
    let (xs, ys): (Vec<f32>, Vec<f32>) = (0..64).map(operands).unzip();
    x.copy_from_slice(&xs)?;
    y.copy_from_slice(&ys)?;
    detour!(REM(&x, &y, &mut r, &mut d, &mut h) {
        let t = $tid$;
        let a = x[t];
        let b = y[t];
        r[t] = a % b + rem_twice(a, b) - rem_twice(a, b);
        let mut w = a as f64;
        w %= b as f64;
        d[t] = rem_twice(w, 7.5f64);
        let mut g = a as f16;
        g %= b as f16;
        h[t] = g % (3.0f32 as f16);
    })?;
    let (gr, gd, gh) = (r.to_vec()?, d.to_vec()?, h.to_vec()?);
    for t in 0..64 {
        let (a, b) = operands(t);
        let want_h = (f16::from_f32(a) % f16::from_f32(b)) % f16::from_f32(3.0);
        assert_eq!(gr[t], a % b, "f32 at {t}: {a} % {b}");
        assert_eq!(gd[t], (a as f64 % b as f64) % 7.5, "f64 at {t}");
        assert_eq!(gh[t], want_h, "f16 at {t}");
        // The dividend's sign (or a zero).
        assert!(gr[t] == 0.0 || (gr[t] < 0.0) == (a < 0.0), "sign at {t}");
    }
    Ok(())
}

#[test]
fn float_remainder_is_fmod_in_c() {
    let (x, y, r, d, h) = ((), (), (), (), ());
    let cuda = kernel_source!(REM(x, y, r, d, h) {
        let t = $tid$;
        r[t] = x[t] % y[t] + rem_twice(y[t], 2.0f32);
        d[t] %= x[t] as f64;
        h[t] = h[t] % (2.0f32 as f16);
        let k = t % 3;
        r[k] += 1.0;
    });
    let hip = kernel_source!(hip(64): REM(x, y, r, d, h) {
        let t = $tid$;
        r[t] = x[t] % y[t];
        d[t] %= x[t] as f64;
    });
    assert!(cuda.contains("fmodf("), "{cuda}");
    assert!(cuda.contains("fmod("), "{cuda}");
    assert!(hip.contains("fmodf(") && hip.contains("fmod("), "{hip}");
    insta::assert_snapshot!(cuda);
}

/// A place that updates something is written once, through a reference.
#[test]
fn a_float_remainder_assignment_updates_its_place_once() {
    let (r, c) = ((), ());
    let cuda = kernel_source!(UPDATE(r, c) {
        r[atomic_add(c + 0, 1) as usize] %= 2.0;
    });
    assert_eq!(cuda.matches("atomicAdd").count(), 1, "{cuda}");
    assert!(
        cuda.contains("[&](float& __parray_p) { __parray_p = fmodf(__parray_p, 2.0f); }("),
        "{cuda}"
    );
}
