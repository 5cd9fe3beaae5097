//! A float converted to an integer, `x as i8` in a body and `T::from_f32(x)` /
//! `T::from_f64(y)` of an integer type parameter: Rust's `as` on every back end (truncated
//! toward zero, saturated at the type's ends, NaN to 0; CUDA's `cvt.rzi`), bit for bit,
//! over the edges of every integer type, against a reference that clamps in `f64` and
//! `i128` and never converts out of range.

use parray::prelude::*;

parray! {
    const N = 128;
    dmem float [N] X;
    dmem double [N] Y;
    dmem long [N][28] R;
    paged float [N] HX;
    paged double [N] HY;
    paged long [N][28] HR;
    cuda(float* x, double* y, long* r) [1][N] CONVERT;
    pthd [N] TEAM;
}

/// `x` as `T` (an integer `T` truncated and saturated, as `x as T` is in a body).
#[parray::func]
fn f32_as<T: parray::Num>(x: f32) -> T {
    T::from_f32(x)
}

/// `y` as `T`, as [`f32_as`].
#[parray::func]
fn f64_as<T: parray::Num>(y: f64) -> T {
    T::from_f64(y)
}

/// The edges of the integer types as `f32`s: each type's ends, the floats on either side
/// of them, halves that truncate, NaN, infinities, subnormals.
fn f32_edges() -> Vec<f32> {
    let mut e = vec![
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        0.5,
        -0.5,
        0.999_999_94,
        -0.999_999_94,
        1.5,
        -1.5,
        1e-45,
        -1e-45,
        f32::MIN_POSITIVE,
        f32::MAX,
        f32::MIN,
        1e30,
        -1e30,
    ];
    // Each end of each type, and the floats beside it.
    for end in [
        127.0f32,
        -128.0,
        255.0,
        256.0,
        2_147_483_648.0,
        -2_147_483_648.0,
        4_294_967_296.0,
        9_223_372_036_854_775_808.0,
        -9_223_372_036_854_775_808.0,
        18_446_744_073_709_551_616.0,
    ] {
        e.extend([end, end.next_down(), end.next_up()]);
    }
    e.extend([127.5, -128.5, 255.5, -1.0]);
    e
}

/// The edges as `f64`s: the `f32` ones and those between the `f32`s near the ends.
fn f64_edges() -> Vec<f64> {
    let mut e: Vec<f64> = f32_edges().into_iter().map(f64::from).collect();
    e.extend([f64::MAX, f64::MIN, 5e-324, 1e300]);
    for end in [
        2_147_483_647.0f64,
        -2_147_483_648.0,
        4_294_967_295.0,
        9_223_372_036_854_775_808.0,
        -9_223_372_036_854_775_808.0,
        18_446_744_073_709_551_616.0,
    ] {
        e.extend([end.next_down(), end.next_up(), end + 0.5]);
    }
    e
}

/// Rust's `as` from a float to the integer type of range `low..=high`, written without it:
/// NaN is 0, the rest truncated and clamped to the range.
fn saturated(v: f64, low: i128, high: i128) -> i128 {
    if v.is_nan() {
        0
    } else if v <= low as f64 {
        low
    } else if v >= high as f64 {
        high
    } else {
        // In range: exact in `f64` and in `i128`.
        v.trunc() as i128
    }
}

/// The ranges of `i8 u8 i32 u32 i64 u64 usize` (a cuda body's `usize` is 32 bits; a
/// pthd body's is the host's).
fn ranges(usize_bits: u32) -> [(i128, i128); 7] {
    [
        (i8::MIN.into(), i8::MAX.into()),
        (0, u8::MAX.into()),
        (i32::MIN.into(), i32::MAX.into()),
        (0, u32::MAX.into()),
        (i64::MIN.into(), i64::MAX.into()),
        (0, u64::MAX.into()),
        (0, (1i128 << usize_bits) - 1),
    ]
}

/// Row `t` of a result: the seven types from `f32_edges()[t]`, from `f64_edges()[t]`,
/// then the same by `as` in the body (a `u64`'s bits as an `i64`).
fn expected(t: usize, usize_bits: u32) -> Vec<i64> {
    let (x, y) = (
        f32_edges()[t % f32_edges().len()],
        f64_edges()[t % f64_edges().len()],
    );
    let mut row = Vec::new();
    for v in [f64::from(x), y, f64::from(x), y] {
        for (low, high) in ranges(usize_bits) {
            row.push(saturated(v, low, high) as i64);
        }
    }
    row
}

fn inputs() -> (Vec<f32>, Vec<f64>) {
    let (xs, ys) = (f32_edges(), f64_edges());
    (
        (0..N).map(|t| xs[t % xs.len()]).collect(),
        (0..N).map(|t| ys[t % ys.len()]).collect(),
    )
}

#[test]
fn the_edges_cover_every_type() {
    // Every edge is a thread's, and each type saturates at both ends somewhere.
    assert!(f32_edges().len() <= N && f64_edges().len() <= N);
    let rows: Vec<Vec<i64>> = (0..N).map(|t| expected(t, 32)).collect();
    for (k, (low, high)) in ranges(32).into_iter().enumerate() {
        let column = |c: usize| rows.iter().map(move |r| r[c] as i128);
        for c in [k, 7 + k] {
            assert!(column(c).any(|v| v == low as i64 as i128), "{k}: low");
            assert!(column(c).any(|v| v == high as i64 as i128), "{k}: high");
        }
    }
}

#[test]
fn a_float_to_an_integer_is_rusts_as_on_every_back_end() -> parray::Result<()> {
    let (xs, ys) = inputs();
    let (mut x, mut y, mut r) = (X::create()?, Y::create()?, R::create()?);
    x.copy_from_slice(&xs)?;
    y.copy_from_slice(&ys)?;
    detour!(CONVERT(&x, &y, &mut r) {
        let t = $tid_1$;
        let a = x[t];
        let b = y[t];
        r[$R[t][0]$] = f32_as::<i8>(a) as i64;
        r[$R[t][1]$] = f32_as::<u8>(a) as i64;
        r[$R[t][2]$] = f32_as::<i32>(a) as i64;
        r[$R[t][3]$] = f32_as::<u32>(a) as i64;
        r[$R[t][4]$] = f32_as::<i64>(a);
        r[$R[t][5]$] = f32_as::<u64>(a) as i64;
        r[$R[t][6]$] = f32_as::<usize>(a) as i64;
        r[$R[t][7]$] = f64_as::<i8>(b) as i64;
        r[$R[t][8]$] = f64_as::<u8>(b) as i64;
        r[$R[t][9]$] = f64_as::<i32>(b) as i64;
        r[$R[t][10]$] = f64_as::<u32>(b) as i64;
        r[$R[t][11]$] = f64_as::<i64>(b);
        r[$R[t][12]$] = f64_as::<u64>(b) as i64;
        r[$R[t][13]$] = f64_as::<usize>(b) as i64;
        r[$R[t][14]$] = (a as i8) as i64;
        r[$R[t][15]$] = (a as u8) as i64;
        r[$R[t][16]$] = (a as i32) as i64;
        r[$R[t][17]$] = (a as u32) as i64;
        r[$R[t][18]$] = a as i64;
        r[$R[t][19]$] = (a as u64) as i64;
        r[$R[t][20]$] = (a as usize) as i64;
        r[$R[t][21]$] = (b as i8) as i64;
        r[$R[t][22]$] = (b as u8) as i64;
        r[$R[t][23]$] = (b as i32) as i64;
        r[$R[t][24]$] = (b as u32) as i64;
        r[$R[t][25]$] = b as i64;
        r[$R[t][26]$] = (b as u64) as i64;
        r[$R[t][27]$] = (b as usize) as i64;
    })?;
    let (mut hx, mut hy, mut hr) = (HX::create()?, HY::create()?, HR::create()?);
    hx.copy_from_slice(&xs)?;
    hy.copy_from_slice(&ys)?;
    detour!(TEAM {
        let t = $tid$;
        let a = hx[$HX[t]$];
        let b = hy[$HY[t]$];
        hr[$HR[t][0]$] = f32_as::<i8>(a) as i64;
        hr[$HR[t][1]$] = f32_as::<u8>(a) as i64;
        hr[$HR[t][2]$] = f32_as::<i32>(a) as i64;
        hr[$HR[t][3]$] = f32_as::<u32>(a) as i64;
        hr[$HR[t][4]$] = f32_as::<i64>(a);
        hr[$HR[t][5]$] = f32_as::<u64>(a) as i64;
        hr[$HR[t][6]$] = f32_as::<usize>(a) as i64;
        hr[$HR[t][7]$] = f64_as::<i8>(b) as i64;
        hr[$HR[t][8]$] = f64_as::<u8>(b) as i64;
        hr[$HR[t][9]$] = f64_as::<i32>(b) as i64;
        hr[$HR[t][10]$] = f64_as::<u32>(b) as i64;
        hr[$HR[t][11]$] = f64_as::<i64>(b);
        hr[$HR[t][12]$] = f64_as::<u64>(b) as i64;
        hr[$HR[t][13]$] = f64_as::<usize>(b) as i64;
        hr[$HR[t][14]$] = (a as i8) as i64;
        hr[$HR[t][15]$] = (a as u8) as i64;
        hr[$HR[t][16]$] = (a as i32) as i64;
        hr[$HR[t][17]$] = (a as u32) as i64;
        hr[$HR[t][18]$] = a as i64;
        hr[$HR[t][19]$] = (a as u64) as i64;
        hr[$HR[t][20]$] = (a as usize) as i64;
        hr[$HR[t][21]$] = (b as i8) as i64;
        hr[$HR[t][22]$] = (b as u8) as i64;
        hr[$HR[t][23]$] = (b as i32) as i64;
        hr[$HR[t][24]$] = (b as u32) as i64;
        hr[$HR[t][25]$] = b as i64;
        hr[$HR[t][26]$] = (b as u64) as i64;
        hr[$HR[t][27]$] = (b as usize) as i64;
    })?;
    let (gpu, cpu) = (r.to_vec()?, hr.to_vec()?);
    for t in 0..N {
        let want = expected(t, 32);
        assert_eq!(
            &gpu[t * 28..(t + 1) * 28],
            &want[..],
            "cuda body, thread {t}"
        );
        let want = expected(t, usize::BITS);
        assert_eq!(
            &cpu[t * 28..(t + 1) * 28],
            &want[..],
            "pthd body, thread {t}"
        );
        // Plain Rust: `parray::Num`'s conversions.
        let (a, b) = (xs[t], ys[t]);
        let plain = [
            f32_as::<i8>(a) as i64,
            f32_as::<u8>(a) as i64,
            f32_as::<i32>(a) as i64,
            f32_as::<u32>(a) as i64,
            f32_as::<i64>(a),
            f32_as::<u64>(a) as i64,
            f32_as::<usize>(a) as i64,
            f64_as::<i8>(b) as i64,
            f64_as::<u8>(b) as i64,
            f64_as::<i32>(b) as i64,
            f64_as::<u32>(b) as i64,
            f64_as::<i64>(b),
            f64_as::<u64>(b) as i64,
            f64_as::<usize>(b) as i64,
        ];
        assert_eq!(&plain[..], &want[..14], "plain Rust, input {t}");
    }
    Ok(())
}

#[test]
fn a_float_to_an_integer_is_cudas_saturating_conversion_in_c() {
    let (x, y, r) = ((), (), ());
    let source = kernel_source!(CONVERT(x, y, r) {
        let t = $tid_1$;
        let a = x[t];
        let b = y[t];
        r[$R[t][0]$] = f32_as::<i8>(a) as i64 + f64_as::<u8>(b) as i64;
        r[$R[t][1]$] = f32_as::<u32>(a) as i64 + (b as u64) as i64 + f32_as::<i32>(0.5) as i64;
        r[$R[t][2]$] = (a as usize) as i64 + b as i64 + f32_as::<f64>(a) as i64;
    });
    insta::assert_snapshot!(source);
}
