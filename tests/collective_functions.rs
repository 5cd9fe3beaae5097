//! Collective functions (SPEC 3.5, "Functions"): a function of the body language that
//! shuffles, inlined at each call of a cuda body, so that a warp reduction is written once.
//! A block reduction through `warp_sum`/`warp_max` against an `f64` reference, a call that
//! only some lanes of a warp reach refused as a body's shuffle is, the plain Rust function
//! refusing to run outside a warp, and the C kept as a snapshot. On the GPU machine:
//! `PARRAY_BACKEND=cuda collective_functions`.

use parray::prelude::*;

parray! {
    dmem float [1024] X;
    dmem float [4][2] SUMS;
    dmem int [256] DOUT;
    smem float [8] PARTS;
    cuda(float* x, float* sums) [4][256] BLOCKS;
    cuda(int* out) [2][128] WARPS;
    dmem float [8] WS;
    cuda(float* ws) [2][128] STORES;
    paged float [4] HOUT;
    pthd [4] CPU;
}

/// The sum of the 32 lanes' `v`, in lane 0 of each warp.
#[parray::func]
fn warp_sum(mut v: f32) -> f32 {
    for k in 0..5 {
        v += shfl_down(v, 16u32 >> k);
    }
    v
}

/// The maximum of the 32 lanes' `m`, in lane 0 of each warp.
#[parray::func]
fn warp_max(mut m: f32) -> f32 {
    for k in 0..5 {
        m = m.max(shfl_down(m, 16u32 >> k));
    }
    m
}

/// Collective through the function it calls: the mean of the warp's `v`, in lane 0.
#[parray::func]
fn warp_mean(v: f32) -> f32 {
    let s = warp_sum(v);
    s / 32.0
}

/// A collective function of no value, called as a statement: lane 0 of each warp stores
/// its warp's sum through a pointer.
#[parray::func]
fn store_warp_sum(out: parray::PtrMut<'_, f32>, lane: u32, warp: usize, v: f32) {
    let s = warp_sum(v);
    if lane == 0 {
        out[warp] = s;
    }
}

fn input(i: usize) -> f32 {
    ((i * 7919) % 1013) as f32 / 64.0 - 7.5
}

/// Whether cuda detours run on the CPU emulation (where a divergent call is found; on a
/// GPU it is undefined behaviour).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

#[test]
fn a_block_reduces_through_warp_functions() -> parray::Result<()> {
    let xs: Vec<f32> = (0..1024).map(input).collect();
    let mut x = X::create()?;
    x.copy_from_slice(&xs)?;
    let mut sums = SUMS::create()?;
    detour!(BLOCKS(&x, &mut sums) {
        let parts = PARTS::create();
        let t = $tid_1$;
        let v = x[$X[$tid$]$];
        let s = warp_sum(v);
        let mut m = 0.0f32;
        m = warp_max(v);
        let mut mean = 1.0f32;
        mean *= warp_mean(v);
        if t % 32 == 0 {
            parts[t / 32] = s + 0.0 * mean;
        }
        #sync;
        if t == 0 {
            let mut total = 0.0f32;
            for w in 0..8 {
                total += parts[w];
            }
            sums[$SUMS[$tid_0$][0]$] = total;
        }
        #sync;
        if t % 32 == 0 {
            parts[t / 32] = m;
        }
        #sync;
        if t == 0 {
            let mut max = parts[0];
            for w in 1..8 {
                max = max.max(parts[w]);
            }
            sums[$SUMS[$tid_0$][1]$] = max;
        }
    })?;
    let got = sums.to_vec()?;
    for b in 0..4 {
        let block = &xs[b * 256..(b + 1) * 256];
        let sum: f64 = block.iter().map(|&v| f64::from(v)).sum();
        let max = block.iter().map(|&v| f64::from(v)).fold(f64::MIN, f64::max);
        assert!(
            (f64::from(got[2 * b]) - sum).abs() <= 1e-4 * sum.abs().max(1.0),
            "block {b}: sum {} vs {sum}",
            got[2 * b]
        );
        assert_eq!(f64::from(got[2 * b + 1]), max, "block {b}: max");
    }
    Ok(())
}

#[test]
fn a_collective_function_of_no_value_stores_through_its_pointer() -> parray::Result<()> {
    let mut ws = WS::create()?;
    detour!(STORES(&mut ws) {
        let t = $tid$;
        store_warp_sum(ws + 0, ($tid_1$ % 32) as u32, t / 32, t as f32);
    })?;
    let got = ws.to_vec()?;
    for (w, &g) in got.iter().enumerate() {
        let want: f64 = (32 * w..32 * (w + 1)).map(|t| t as f64).sum();
        assert_eq!(f64::from(g), want, "warp {w}");
    }
    Ok(())
}

#[test]
fn a_call_that_only_some_lanes_of_a_warp_reach_is_an_error() {
    if !emulated() {
        return;
    }
    let mut out = DOUT::create().unwrap();
    let err = detour!(WARPS(&mut out) {
        if $tid_1$ % 32 < 16 {
            let v = warp_sum(1.0f32);
            out[$tid$] = v as i32;
        }
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("lane 16 of this warp") && text.contains("execute a shuffle together"),
        "{text}"
    );
    // Whole warps may branch: each warp reduces on its own.
    detour!(WARPS(&mut out) {
        if $tid_1$ < 32 {
            let v = warp_sum(1.0f32);
            out[$tid$] = v as i32;
        }
    })
    .unwrap();
    let got = out.to_vec().unwrap();
    assert_eq!(got[0], 32);
    assert_eq!(got[128], 32);
}

#[test]
fn the_plain_rust_function_refuses_to_run_outside_a_warp() {
    let err = std::panic::catch_unwind(|| warp_mean(1.0)).unwrap_err();
    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(
        text.contains("`warp_sum` shuffles (`shfl_down`), so it runs only in a cuda body"),
        "{text}"
    );
}

#[test]
fn a_pthd_body_calling_a_collective_function_returns_its_panic() {
    let mut out = HOUT::create().unwrap();
    let err = detour!(CPU {
        out[$HOUT[$tid$]$] = warp_sum(1.0f32);
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("so it runs only in a cuda body"), "{text}");
}

#[test]
fn the_c_of_collective_functions_is_inlined() {
    let (x, sums) = ((), ());
    let source = kernel_source!(BLOCKS(x, sums) {
        let v = x[$X[$tid$]$];
        let s = warp_mean(v);
        if $tid_1$ % 32 == 0 {
            sums[$SUMS[$tid_0$][0]$] = s;
        }
    });
    assert!(!source.contains("parray_fn_warp"), "{source}");
    insta::assert_snapshot!(source);
}

parray! {
    dmem int [8] WI;
    dmem float [8] WF;
    dmem double [8] WD;
    cuda(int* wi, float* wf, double* wd) [2][128] TYPED;
}

/// The sum of the 32 lanes' `v` at any number type a shuffle moves, in lane 0: generic and
/// collective, inlined at each call with its type.
#[parray::func]
fn warp_sum_of<T: parray::Num>(mut v: T) -> T {
    for k in 0..5 {
        v += shfl_down(v, 16u32 >> k);
    }
    v
}

/// Generic, and collective through the generic function it calls.
#[parray::func]
fn warp_mean_of<T: parray::Float>(v: T) -> T {
    let s = warp_sum_of(v);
    s / T::from_i32(32)
}

#[test]
fn a_generic_collective_function_reduces_at_each_type() -> parray::Result<()> {
    let (mut wi, mut wf, mut wd) = (WI::create()?, WF::create()?, WD::create()?);
    detour!(TYPED(&mut wi, &mut wf, &mut wd) {
        let t = $tid$;
        let i = warp_sum_of(t as i32 * 3 - 200);
        let f = warp_sum_of(input_of(t));
        let d = warp_mean_of(t as f64 * 0.25);
        if t % 32 == 0 {
            wi[t / 32] = i;
            wf[t / 32] = f;
            wd[t / 32] = d;
        }
    })?;
    let (gi, gf, gd) = (wi.to_vec()?, wf.to_vec()?, wd.to_vec()?);
    for w in 0..8 {
        let lanes = 32 * w..32 * (w + 1);
        let i: i32 = lanes.clone().map(|t| t as i32 * 3 - 200).sum();
        // Quarters of small integers: every partial sum is exact in `f32` and `f64`.
        let f: f64 = lanes.clone().map(|t| f64::from(input_of(t))).sum();
        let d: f64 = lanes.map(|t| t as f64 * 0.25).sum::<f64>() / 32.0;
        assert_eq!(gi[w], i, "i32, warp {w}");
        assert_eq!(f64::from(gf[w]), f, "f32, warp {w}");
        assert_eq!(gd[w], d, "f64, warp {w}");
    }
    // Its plain Rust function has no warp, as a plain collective function's has none.
    let err = std::panic::catch_unwind(|| warp_mean_of(1.0f32)).unwrap_err();
    let text = err.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("`warp_sum_of` shuffles"), "{text}");
    Ok(())
}

/// A quarter-integer input of thread `t`.
#[parray::func]
fn input_of(t: usize) -> f32 {
    (t % 37) as f32 * 0.25 - 4.0
}

#[test]
fn the_c_of_a_generic_collective_function_is_inlined_at_its_type() {
    let (wi, wf, wd) = ((), (), ());
    let source = kernel_source!(TYPED(wi, wf, wd) {
        let t = $tid$;
        let d = warp_mean_of(t as f64 * 0.25);
        if t % 32 == 0 {
            wd[t / 32] = d;
        }
    });
    assert!(!source.contains("parray_fn_warp"), "{source}");
    insta::assert_snapshot!(source);
}
