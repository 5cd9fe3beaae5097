//! Functions of the body language (`#[parray::func]`): written once, called from cuda
//! bodies (the GPU where there is one, else the CPU emulation) and, as the Rust functions
//! they also are, from pthd bodies and host code; every caller computes the same values.

use parray::prelude::*;

parray! {
    dmem float [256] DV;
    paged float [256] HV;
    cuda(float* v) [2][128] GPU;
    pthd [2][128] CPU;
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
