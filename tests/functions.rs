//! Functions of the body language (`#[parray::func]`): written once, called from cuda
//! bodies (the GPU where there is one, else the CPU emulation) and, as the Rust functions
//! they also are, from pthd bodies and host code; every caller computes the same values.

use parray::prelude::*;
use parray::{bf16, f16};

parray! {
    dmem float [256] DV;
    paged float [256] HV;
    cuda(float* v) [2][128] GPU;
    pthd [2][128] CPU;
    dmem double [256] DD;
    dmem int [256] DI;
    dmem half [256] DH;
    dmem bf16 [256] DB;
    paged double [256] HD;
    paged int [256] HI;
    paged half [256] HH;
    paged bf16 [256] HB;
    cuda(float* v, double* d, int* n, half* h, bf16* b) [2][128] TYPES;
    dmem float [128][2] PAIRS;
    cuda(float* a, float* v) [2][128] PAIRED;
}

/// The tanh approximation of GELU.
#[parray::func]
fn gelu(x: f32) -> f32 {
    let inner = 0.797_884_6 * (x + 0.044_715 * cube(x));
    0.5 * x * (1.0 + inner.tanh())
}

/// Called by `gelu`: a function may call another.
#[parray::func]
fn cube(x: f32) -> f32 {
    x * x * x
}

/// Integer work, a loop and a value from `if`: the integral seeds' `term`-like helper.
#[parray::func]
fn digit_sum(mut n: u32, base: u32) -> u32 {
    let mut s = 0u32;
    while n > 0 {
        s += n % base;
        n /= base;
    }
    if s > 9 {
        s - 9
    } else {
        s
    }
}

fn input(t: usize) -> f32 {
    t as f32 / 32.0 - 4.0
}

#[test]
fn a_cuda_body_and_a_pthd_body_call_one_function() -> parray::Result<()> {
    let mut dev = DV::create()?;
    detour!(GPU(&mut dev) {
        let t = $tid$;
        let x = t as f32 / 32.0 - 4.0;
        v[$DV[t]$] = gelu(x) + digit_sum(t as u32 * 37, 7) as f32;
    })?;
    let mut host = HV::create()?;
    detour!(CPU {
        let t = $tid$;
        let x = t as f32 / 32.0 - 4.0;
        host[$HV[t]$] = gelu(x) + digit_sum(t as u32 * 37, 7) as f32;
    })?;
    let (gpu, cpu) = (dev.to_vec()?, host.to_vec()?);
    for t in 0..256 {
        // The host's Rust function is the reference; the GPU's tanhf may differ in the
        // last bits.
        let want = gelu(input(t)) + digit_sum(t as u32 * 37, 7) as f32;
        assert_eq!(cpu[t], want, "pthd at {t}");
        assert!(
            (gpu[t] - want).abs() <= 1e-5 * want.abs().max(1.0),
            "cuda at {t}: {} vs {want}",
            gpu[t]
        );
    }
    Ok(())
}

#[test]
fn a_function_is_a_device_function_in_the_kernel() {
    let v = ();
    let source = kernel_source!(GPU(v) {
        v[$DV[$tid$]$] = gelu($tid$ as f32);
    });
    assert!(
        source.contains("__device__ inline float parray_fn_cube(float "),
        "{source}"
    );
    assert!(
        source.contains("__device__ inline float parray_fn_gelu(float x) {"),
        "{source}"
    );
    assert!(
        source.find("parray_fn_cube(float").unwrap() < source.find("parray_fn_gelu(float").unwrap(),
        "callees first: {source}"
    );
    assert!(source.contains("parray_fn_gelu((float)tid)"), "{source}");
}

/// Generic over the number type: a cuda body has an instance per type it calls it at.
#[parray::func]
fn sq<T: parray::Num>(x: T) -> T {
    x * x
}

/// `a + (b - a) * w`, then folded by `sq` and `/`: generic, and calling a generic function.
#[parray::func]
fn lerp_fold<T: parray::Num>(a: T, b: T, w: T) -> T {
    let d: T = b - a;
    let mut r = a;
    r += d * w;
    if r > sq(a) {
        r - sq(a)
    } else {
        sq(r) / b
    }
}

/// Half-precision parameters and result, as any number's (a plain function).
#[parray::func]
fn fma_h(x: bf16, y: bf16, z: bf16) -> bf16 {
    let p = x * y;
    p + z
}

/// The inputs of thread `t`, as `f32`s that every type below holds exactly.
fn inputs(t: usize) -> (f32, f32, f32) {
    ((t % 13) as f32 + 1.0, (t % 7) as f32 + 3.0, (t % 5) as f32)
}

/// One array of each element type `TYPES` takes, on the current device.
type TypedArrays = (Array<DV>, Array<DD>, Array<DI>, Array<DH>, Array<DB>);

fn typed_arrays() -> parray::Result<TypedArrays> {
    Ok((
        DV::create()?,
        DD::create()?,
        DI::create()?,
        DH::create()?,
        DB::create()?,
    ))
}

#[test]
fn a_generic_function_has_one_meaning_at_every_type_on_every_back_end() -> parray::Result<()> {
    let (mut v, mut d, mut n, mut h, mut b) = typed_arrays()?;
    detour!(TYPES(&mut v, &mut d, &mut n, &mut h, &mut b) {
        let t = $tid$;
        let x = (t % 13) as f32 + 1.0;
        let y = (t % 7) as f32 + 3.0;
        let w = (t % 5) as f32;
        v[t] = lerp_fold(x, y, w / 4.0);
        d[t] = lerp_fold(x as f64, y as f64, w as f64 / 8.0);
        n[t] = lerp_fold(x as i32, y as i32, w as i32);
        h[t] = lerp_fold(x as f16, y as f16, (w / 2.0) as f16);
        b[t] = fma_h(x as bf16, y as bf16, lerp_fold(x as bf16, y as bf16, w as bf16));
    })?;
    let (mut hv, mut hd, mut hi, mut hh, mut hb) = (
        HV::create()?,
        HD::create()?,
        HI::create()?,
        HH::create()?,
        HB::create()?,
    );
    detour!(CPU {
        let t = $tid$;
        let x = (t % 13) as f32 + 1.0;
        let y = (t % 7) as f32 + 3.0;
        let w = (t % 5) as f32;
        hv[$HV[t]$] = lerp_fold(x, y, w / 4.0);
        hd[$HD[t]$] = lerp_fold(x as f64, y as f64, w as f64 / 8.0);
        hi[$HI[t]$] = lerp_fold(x as i32, y as i32, w as i32);
        hh[$HH[t]$] = lerp_fold(f16::from_f32(x), f16::from_f32(y), f16::from_f32(w / 2.0));
        let bx = bf16::from_f32(x);
        let by = bf16::from_f32(y);
        hb[$HB[t]$] = fma_h(bx, by, lerp_fold(bx, by, bf16::from_f32(w)));
    })?;
    // The reference: the same computation written out at each type, apart from the functions.
    fn fold<T: Copy + PartialOrd + std::ops::Add<Output = T> + std::ops::Sub<Output = T>>(
        a: T,
        b: T,
        w: T,
        mul: impl Fn(T, T) -> T,
        div: impl Fn(T, T) -> T,
    ) -> T {
        let r = a + mul(b - a, w);
        let a2 = mul(a, a);
        if r > a2 {
            r - a2
        } else {
            div(mul(r, r), b)
        }
    }
    let (gv, gd, gi, gh, gb) = (
        v.to_vec()?,
        d.to_vec()?,
        n.to_vec()?,
        h.to_vec()?,
        b.to_vec()?,
    );
    let (cv, cd, ci, ch, cb) = (
        hv.to_vec()?,
        hd.to_vec()?,
        hi.to_vec()?,
        hh.to_vec()?,
        hb.to_vec()?,
    );
    for t in 0..256 {
        let (x, y, w) = inputs(t);
        let f = fold(x, y, w / 4.0, |p, q| p * q, |p, q| p / q);
        let g = fold(
            x as f64,
            y as f64,
            w as f64 / 8.0,
            |p, q| p * q,
            |p, q| p / q,
        );
        let i = fold(x as i32, y as i32, w as i32, |p, q| p * q, |p, q| p / q);
        let (hx, hy) = (f16::from_f32(x), f16::from_f32(y));
        let hr = |v: f32| f16::from_f32(v);
        let hf = fold(
            hx,
            hy,
            hr(w / 2.0),
            |p, q| hr(p.to_f32() * q.to_f32()),
            |p, q| hr(p.to_f32() / q.to_f32()),
        );
        let br = |v: f32| bf16::from_f32(v);
        let bl = fold(
            br(x),
            br(y),
            br(w),
            |p, q| br(p.to_f32() * q.to_f32()),
            |p, q| br(p.to_f32() / q.to_f32()),
        );
        let bf = br(br(br(x).to_f32() * br(y).to_f32()).to_f32() + bl.to_f32());
        assert_eq!((gv[t], cv[t]), (f, f), "f32 at {t}");
        assert_eq!((gd[t], cd[t]), (g, g), "f64 at {t}");
        assert_eq!((gi[t], ci[t]), (i, i), "i32 at {t}");
        assert_eq!((gh[t], ch[t]), (hf, hf), "f16 at {t}");
        assert_eq!((gb[t], cb[t]), (bf, bf), "bf16 at {t}");
    }
    Ok(())
}

/// `parray::Num`'s conversions: an `i32` to the type parameter, and its values to `f32` and
/// `f64`.
#[parray::func]
fn scaled_mean<T: parray::Num>(sum: T, n: i32) -> f32 {
    let scaled = sum * T::from_i32(n);
    scaled.to_f32() / n as f32 + sum.to_f64() as f32
}

/// `x + n`, `n` converted to `x`'s type as `n as T` in a body.
#[parray::func]
fn plus_int<T: parray::Num>(x: T, n: i32) -> T {
    x + T::from_i32(n)
}

/// 2^24 + 2^16 + 1: to `bf16` directly it rounds up to 2^24 + 2^17; through an `f32` it
/// would round to 2^24 + 2^16 first, then (a tie, to even) down to 2^24.
const PAST_F32: i32 = 16_842_753;

#[test]
fn a_generic_function_converts_from_and_to_every_number_type() -> parray::Result<()> {
    let (mut v, mut d, mut n, mut h, mut b) = typed_arrays()?;
    detour!(TYPES(&mut v, &mut d, &mut n, &mut h, &mut b) {
        let t = $tid$;
        let k = (t % 9) as i32 + 1;
        let x = (t % 13) as f32 - 4.0;
        v[t] = scaled_mean(x, k);
        d[t] = scaled_mean(x as f64, k) as f64;
        n[t] = plus_int(k, k) + scaled_mean(x as i32, k) as i32;
        h[t] = scaled_mean(x as f16, k) as f16;
        if t == 0 {
            b[t] = plus_int(0.0 as bf16, PAST_F32);
        } else {
            b[t] = plus_int(0.0 as bf16, k * 1000 + 1);
        }
    })?;
    let (gv, gd, gi, gh, gb) = (
        v.to_vec()?,
        d.to_vec()?,
        n.to_vec()?,
        h.to_vec()?,
        b.to_vec()?,
    );
    // The reference, written with the conversions themselves.
    for t in 0..256 {
        let k = (t % 9) as i32 + 1;
        let x = (t % 13) as f32 - 4.0;
        let f = (x * k as f32) / k as f32 + x;
        let g = ((x as f64 * k as f64) as f32) / k as f32 + x;
        let i = 2 * k + ((x as i32 * k) as f32 / k as f32 + x as i32 as f32) as i32;
        let hx = f16::from_f32(x);
        let hp = f16::from_f32(hx.to_f32() * f16::from_f32(k as f32).to_f32());
        let hm = f16::from_f32(hp.to_f32() / k as f32 + hx.to_f32());
        assert_eq!(gv[t], f, "f32 at {t}");
        assert_eq!(gd[t], g as f64, "f64 at {t}");
        assert_eq!(gi[t], i, "i32 at {t}");
        assert_eq!(gh[t], hm, "f16 at {t}");
        // The Rust function, as pthd and host code call it, computes the same.
        assert_eq!(scaled_mean(x, k), f, "f32 in Rust at {t}");
        assert_eq!(f16::from_f32(scaled_mean(hx, k)), hm, "f16 in Rust at {t}");
        let want = if t == 0 {
            16_908_288.0
        } else {
            (k * 1000 + 1) as f32
        };
        let want = if t == 0 {
            want
        } else {
            bf16::from_f32(want).to_f32()
        };
        assert_eq!(gb[t].to_f32(), want, "bf16 at {t}");
        let n = if t == 0 { PAST_F32 } else { k * 1000 + 1 };
        assert_eq!(
            plus_int(bf16::ZERO, n).to_f32(),
            want,
            "bf16 in Rust at {t}"
        );
    }
    Ok(())
}

#[test]
fn a_generic_function_is_a_device_function_per_type() {
    let (v, d, n, h, b) = ((), (), (), (), ());
    let source = kernel_source!(TYPES(v, d, n, h, b) {
        let t = $tid$;
        v[t] = sq(t as f32) + lerp_fold(1.0f32, 2.0, 0.5);
        n[t] = sq(t as i32) + sq(3);
        h[t] = sq(t as f16);
    });
    insta::assert_snapshot!(source);
}

/// A body generic over its data type, made when its type is known (its lowered body, with
/// the generic instances and any turbofish's types, is carried in), calls generic functions.
fn square_columns<T: DataType<Elem = f32>>(a: &Array<T>, v: &mut Array<DV>) -> parray::Result<()> {
    detour!(<T> PAIRED(a, v) {
        let t = $tid$;
        v[$DV[t]$] = sq(a[$T[t % 128][t / 128]$]) + sq(t as i32 % 3) as f32 + half_of::<f32>(t as i32 % 3);
    })
}

#[test]
fn a_body_generic_over_its_type_calls_a_generic_function() -> parray::Result<()> {
    let mut a = PAIRS::create()?;
    a.copy_from_slice(&(0..256).map(|k| k as f32 / 4.0).collect::<Vec<_>>())?;
    let mut v = DV::create()?;
    square_columns(&a, &mut v)?;
    for (t, got) in v.to_vec()?.into_iter().enumerate() {
        let (x, k) = (((t % 128) * 2 + t / 128) as f32 / 4.0, (t % 3) as f32);
        assert_eq!(got, x * x + k * k + k / 2.0, "at {t}");
    }
    Ok(())
}

/// GELU once for every float type: its constants are `T::from_f32` of `f32` literals, its
/// math `parray::Float`'s; it calls the `parray::Num` function `sq`.
#[parray::func]
fn gelu_t<T: parray::Float>(x: T) -> T {
    let half = T::from_f32(0.5);
    let inner = T::from_f32(0.797_884_6) * (x + T::from_f32(0.044_715) * sq(x) * x);
    half * x * (T::from_f32(1.0) + inner.tanh())
}

/// `gelu_t` written out at a half type: `c` converts a constant, `op` rounds an `f32`
/// result to the type, `f` widens to `f32` (each operation in `f32`, as bodies compute).
fn gelu_in<T: Copy>(x: T, c: impl Fn(f32) -> T, op: impl Fn(f32) -> T, f: impl Fn(T) -> f32) -> T {
    let mul = |a: T, b: T| op(f(a) * f(b));
    let add = |a: T, b: T| op(f(a) + f(b));
    let inner = mul(c(0.797_884_6), add(x, mul(mul(c(0.044_715), mul(x, x)), x)));
    mul(mul(c(0.5), x), add(c(1.0), op(f(inner).tanh())))
}

#[test]
fn a_float_generic_function_has_constants_and_math_at_every_float_type() -> parray::Result<()> {
    let (mut v, mut d, n, mut h, mut b) = typed_arrays()?;
    detour!(TYPES(&mut v, &mut d, &n, &mut h, &mut b) {
        let t = $tid$;
        let x = t as f32 / 32.0 - 4.0;
        v[t] = gelu_t(x);
        d[t] = gelu_t(x as f64 * 1.5);
        h[t] = gelu_t(x as f16);
        b[t] = gelu_t(x as bf16);
    })?;
    let (mut hv, mut hd, mut hh, mut hb) =
        (HV::create()?, HD::create()?, HH::create()?, HB::create()?);
    detour!(CPU {
        let t = $tid$;
        let x = t as f32 / 32.0 - 4.0;
        hv[$HV[t]$] = gelu_t(x);
        hd[$HD[t]$] = gelu_t(x as f64 * 1.5);
        hh[$HH[t]$] = gelu_t(f16::from_f32(x));
        hb[$HB[t]$] = gelu_t(bf16::from_f32(x));
    })?;
    let (gv, gd, gh, gb) = (v.to_vec()?, d.to_vec()?, h.to_vec()?, b.to_vec()?);
    let (cv, cd, ch, cb) = (hv.to_vec()?, hd.to_vec()?, hh.to_vec()?, hb.to_vec()?);
    let on_gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    for t in 0..256 {
        let x = input(t);
        // f32 and f64 in their own type (the constants `f32`s), the halves in `f32` per
        // operation: bit for bit, on both back ends.
        let f = {
            let inner = 0.797_884_6f32 * (x + 0.044_715f32 * (x * x) * x);
            0.5f32 * x * (1.0 + inner.tanh())
        };
        let g = {
            let (x, c) = (x as f64 * 1.5, |v: f32| v as f64);
            let inner = c(0.797_884_6) * (x + c(0.044_715) * (x * x) * x);
            c(0.5) * x * (c(1.0) + inner.tanh())
        };
        let hx = f16::from_f32(x);
        let hf = gelu_in(hx, f16::from_f32, f16::from_f32, f16::to_f32);
        let bx = bf16::from_f32(x);
        let bf = gelu_in(bx, bf16::from_f32, bf16::from_f32, bf16::to_f32);
        // Not every value is zero or the same: the test sees the constants.
        assert!(t < 160 || f > 0.5, "f32 at {t}: {f}");
        // pthd is Rust: bit for bit.
        assert_eq!(cv[t], f, "f32 at {t}, pthd");
        assert_eq!(cd[t], g, "f64 at {t}, pthd");
        assert_eq!(ch[t].to_bits(), hf.to_bits(), "f16 at {t}, pthd");
        assert_eq!(cb[t].to_bits(), bf.to_bits(), "bf16 at {t}, pthd");
        if !on_gpu {
            // The emulation is Rust too.
            assert_eq!(gv[t], f, "f32 at {t}");
            assert_eq!(gd[t], g, "f64 at {t}");
            assert_eq!(gh[t].to_bits(), hf.to_bits(), "f16 at {t}");
            assert_eq!(gb[t].to_bits(), bf.to_bits(), "bf16 at {t}");
            continue;
        }
        // On a GPU `tanh` is CUDA's, which may differ from the CPU's libm in its last bits
        // (SPEC 3.5): a few of tanh's ulps, times the `0.5 * x` it is multiplied by.
        let near = |got: f64, want: f64, eps: f64, x: f64| {
            assert!(
                (got - want).abs() <= 4.0 * eps * (0.5 * x.abs()).max(1.0),
                "{got} against {want} at {t}"
            )
        };
        let x = x as f64;
        near(gv[t] as f64, f as f64, f32::EPSILON as f64, x);
        near(gd[t], g, f64::EPSILON, 1.5 * x);
        near(gh[t].to_f64(), hf.to_f64(), f16::EPSILON.to_f64(), x);
        near(gb[t].to_f64(), bf.to_f64(), bf16::EPSILON.to_f64(), x);
    }
    let _ = n;
    Ok(())
}

#[test]
fn a_float_generic_function_folds_its_constants_per_type() {
    let (v, d, n, h, b) = ((), (), (), (), ());
    let source = kernel_source!(TYPES(v, d, n, h, b) {
        let t = $tid$;
        v[t] = gelu_t(t as f32);
        d[t] = gelu_t(t as f64);
        h[t] = gelu_t(t as f16);
        b[t] = gelu_t(t as bf16);
    });
    insta::assert_snapshot!(source);
}

/// `n / 2` at the type `T`: no parameter has `T`, so a call gives it by turbofish
/// (`half_of::<f32>(k)`), or its value's use does.
#[parray::func]
fn half_of<T: parray::Num>(n: i32) -> T {
    T::from_i32(n) / T::from_i32(2)
}

/// A generic function giving its own `T` to another by turbofish.
#[parray::func]
fn plus_half<T: parray::Num>(x: T, n: i32) -> T {
    x + half_of::<T>(n)
}

/// A plain function giving a type by turbofish.
#[parray::func]
fn half_f64(n: i32) -> f64 {
    half_of::<f64>(n)
}

#[test]
fn a_turbofish_gives_a_generic_function_its_type() -> parray::Result<()> {
    let (mut v, mut d, mut n, mut h, mut b) = typed_arrays()?;
    detour!(TYPES(&mut v, &mut d, &mut n, &mut h, &mut b) {
        let t = $tid$;
        let k = t as i32 - 100;
        // The same call at two types: the integer division truncates, the float's does not.
        v[t] = half_of::<i32>(k) as f32 + half_of::<f32>(k) * 4.0;
        d[t] = half_f64(k) + plus_half::<f64>(0.25, k);
        n[t] = plus_half::<_>(k, k);
        h[t] = plus_half::<f16>(1.5 as f16, k);
        let q = half_of::<bf16>(k * 1001);
        b[t] = q;
    })?;
    let (mut hv, mut hd, mut hi) = (HV::create()?, HD::create()?, HI::create()?);
    let (mut hh, mut hb) = (HH::create()?, HB::create()?);
    detour!(CPU {
        let t = $tid$;
        let k = t as i32 - 100;
        hv[$HV[t]$] = half_of::<i32>(k) as f32 + half_of::<f32>(k) * 4.0;
        hd[$HD[t]$] = half_f64(k) + plus_half::<f64>(0.25, k);
        hi[$HI[t]$] = plus_half::<_>(k, k);
        hh[$HH[t]$] = plus_half::<f16>(f16::from_f32(1.5), k);
        hb[$HB[t]$] = half_of::<bf16>(k * 1001);
    })?;
    let (gv, gd, gi, gh, gb) = (
        v.to_vec()?,
        d.to_vec()?,
        n.to_vec()?,
        h.to_vec()?,
        b.to_vec()?,
    );
    let (cv, cd, ci, ch, cb) = (
        hv.to_vec()?,
        hd.to_vec()?,
        hi.to_vec()?,
        hh.to_vec()?,
        hb.to_vec()?,
    );
    for t in 0..256 {
        let k = t as i32 - 100;
        // The reference: Rust's own arithmetic at each type, the halves rounded per
        // operation from `f32`.
        let f = (k / 2) as f32 + (k as f32 / 2.0) * 4.0;
        let g = k as f64 / 2.0 + (0.25 + k as f64 / 2.0);
        let i = k + k / 2;
        let hk = |v: f32| f16::from_f32(v);
        let hf = hk(1.5 + hk(hk(k as f32).to_f32() / 2.0).to_f32());
        let bk = bf16::from_f32((k * 1001) as f32);
        let bf = bf16::from_f32(bk.to_f32() / 2.0);
        for (back, got) in [("cuda", (gv[t], gd[t], gi[t], gh[t], gb[t]))]
            .into_iter()
            .chain([("pthd", (cv[t], cd[t], ci[t], ch[t], cb[t]))])
        {
            assert_eq!(got.0, f, "f32 at {t}, {back}");
            assert_eq!(got.1, g, "f64 at {t}, {back}");
            assert_eq!(got.2, i, "i32 at {t}, {back}");
            assert_eq!(got.3.to_bits(), hf.to_bits(), "f16 at {t}, {back}");
            assert_eq!(got.4.to_bits(), bf.to_bits(), "bf16 at {t}, {back}");
        }
        // Plain Rust.
        assert_eq!(half_of::<i32>(k) as f32 + half_of::<f32>(k) * 4.0, f);
        assert_eq!(half_f64(k) + plus_half::<f64>(0.25, k), g);
    }
    // Not all the same: the two types' halves differ at odd `k`.
    assert_ne!(cv[101], 101.0 / 2.0 * 5.0);
    Ok(())
}

#[test]
fn a_turbofish_makes_an_instance_per_type_given() {
    let (v, d, n, h, b) = ((), (), (), (), ());
    let source = kernel_source!(TYPES(v, d, n, h, b) {
        let t = $tid$;
        let k = t as i32;
        v[t] = half_of::<i32>(k) as f32 + half_of::<f32>(k);
        d[t] = half_f64(k) + plus_half::<f64>(0.5, k);
        b[t] = half_of::<bf16>(k);
    });
    insta::assert_snapshot!(source);
}
