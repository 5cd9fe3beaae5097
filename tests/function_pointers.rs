//! Functions of the body language that take pointers (`parray::Ptr` to read,
//! `parray::PtrMut` to read and write): called from a cuda body (the GPU where there is
//! one, else the CPU emulation), from a pthd body and from plain Rust, against a plain
//! Rust reference; an access past the array through a function's pointer is an `Err`.

use parray::prelude::*;
use parray::{Ptr, PtrMut};

parray! {
    dmem float [256] DIN;
    dmem float [256] DOUT;
    paged float [256] HIN;
    paged float [256] HOUT;
    cuda(float* a, float* out) [2][128] GPU;
    pthd [2][128] CPU;
    cuda(float* a, float* out) [1][4] FEW;
}

const N: usize = 256;

/// Reads its neighbours through a pointer.
#[parray::func]
fn smooth(a: Ptr<'_, f32>, i: usize, n: usize) -> f32 {
    let left = if i > 0 { a[i - 1] } else { a[i] };
    let right = if i + 1 < n { a[i + 1] } else { a[i] };
    0.25 * left + 0.5 * a[i] + 0.25 * right
}

/// Writes through a pointer moved by pointer arithmetic.
#[parray::func]
fn put(out: PtrMut<'_, f32>, i: usize, v: f32) {
    let p = out + i;
    p[0] = v;
}

/// The four elements of group `k` by one vector load.
#[parray::func]
fn group_sum(a: Ptr<'_, f32>, k: usize) -> f32 {
    let v = a.load4(k * 4);
    v.x + v.y + v.z + v.w
}

/// Passes its pointers on, and updates an element in place.
#[parray::func]
fn smooth_into(a: Ptr<'_, f32>, out: PtrMut<'_, f32>, i: usize, n: usize) {
    put(out, i, smooth(a, i, n));
    out[i] += group_sum(a, i / 4);
}

fn input(i: usize) -> f32 {
    ((i * 37) % 101) as f32 / 8.0 - 6.0
}

/// The same computation in plain Rust, on slices.
fn reference() -> Vec<f32> {
    let a: Vec<f32> = (0..N).map(input).collect();
    (0..N)
        .map(|i| {
            let left = if i > 0 { a[i - 1] } else { a[i] };
            let right = if i + 1 < N { a[i + 1] } else { a[i] };
            let g = i / 4 * 4;
            (0.25 * left + 0.5 * a[i] + 0.25 * right) + (a[g] + a[g + 1] + a[g + 2] + a[g + 3])
        })
        .collect()
}

#[test]
fn a_cuda_body_a_pthd_body_and_rust_agree_with_the_reference() -> parray::Result<()> {
    let want = reference();
    let values: Vec<f32> = (0..N).map(input).collect();

    let mut din = DIN::create()?;
    din.copy_from_slice(&values)?;
    let mut dout = DOUT::create()?;
    detour!(GPU(&din, &mut dout) {
        let t = $tid$;
        smooth_into(a, out, t, 256);
    })?;
    assert_eq!(dout.to_vec()?, want, "cuda");

    let mut hin = HIN::create()?;
    hin.copy_from_slice(&values)?;
    let mut hout = HOUT::create()?;
    {
        // A pthd body passes a pointer it writes through as a `PtrMut` it captures.
        let out = hout.ptr_mut();
        detour!(CPU {
            let t = $tid$;
            smooth_into(hin + 0, out + 0, t, 256);
        })?;
    }
    assert_eq!(hout.to_vec()?, want, "pthd");

    // Plain Rust, on the host.
    let mut rust = HOUT::create()?;
    for i in 0..N {
        smooth_into(hin.ptr(), rust.ptr_mut(), i, N);
    }
    assert_eq!(rust.to_vec()?, want, "rust");
    Ok(())
}

#[test]
fn an_index_past_the_array_through_a_functions_pointer_is_an_error() -> parray::Result<()> {
    let din = DIN::create()?;
    let mut dout = DOUT::create()?;
    // Thread 3 reads element 256 + 3 of a 256-element array: the function cannot know
    // the extent, so the access is checked (the handle on the CPU, the fault record on
    // the GPU), and the detour returns an error.
    let err = detour!(FEW(&din, &mut dout) {
        let t = $tid$;
        put(out, t, smooth(a, 253 + t, 300));
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("out of bounds"), "{text}");

    // Writing past the array through a moved pointer, likewise.
    let din = DIN::create()?;
    let err = detour!(FEW(&din, &mut dout) {
        let t = $tid$;
        put(out + 250, t * 2, 1.0);
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("out of bounds"), "{text}");
    Ok(())
}

#[test]
fn the_c_of_a_function_with_pointers() {
    // Each pointer comes with the elements its array has from it on and the array's
    // number in the fault record, against which the function checks its accesses.
    let (a, out) = ((), ());
    let source = kernel_source!(GPU(a, out) {
        let t = $tid$;
        smooth_into(a, out, t, 256);
    });
    insta::assert_snapshot!(source);
}
