//! Functions of the body language that take pointers (`parray::Ptr` to read,
//! `parray::PtrMut` to read and write): called from a cuda body (the GPU where there is
//! one, else the CPU emulation), from a pthd body and from plain Rust, against a plain
//! Rust reference; an access past the array through a function's pointer is an `Err`.

use parray::prelude::*;
use parray::{bf16, Ptr, PtrMut};

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

/// Two fields of different types: a record as a generic function's element.
#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Pair {
    x: f32,
    n: i32,
}

parray! {
    dmem bf16 [256] BIN;
    dmem bf16 [256] BOUT;
    dmem Pair [256] PIN;
    dmem Pair [256] POUT;
    paged bf16 [256] HBIN;
    paged bf16 [256] HBOUT;
    paged Pair [256] HPIN;
    paged Pair [256] HPOUT;
    cuda(float* a, float* out, bf16* b, bf16* bout, Pair* p, Pair* pout) [2][128] MIXED;
}

/// Copies element `i` of `a` to element `j` of `out`: any element, a record too.
#[parray::func]
fn copy_one<T: parray::Element>(a: Ptr<'_, T>, out: PtrMut<'_, T>, i: usize, j: usize) {
    out[j] = a[i];
}

/// `out[i] = k * a[i]` at any float type, through a moved pointer.
#[parray::func]
fn scale_into<T: parray::Float>(a: Ptr<'_, T>, out: PtrMut<'_, T>, i: usize, k: T) {
    let p = out + i;
    p[0] = k * a[i];
}

fn pair(i: usize) -> Pair {
    Pair {
        x: input(i),
        n: i as i32 * 3 - 100,
    }
}

/// What the generic functions compute, written out: the floats and the records reversed,
/// the halves scaled by a half (one rounding of the exact product).
fn reversed_and_scaled() -> (Vec<f32>, Vec<bf16>, Vec<Pair>) {
    let half = |i: usize| bf16::from_f32(input(i));
    (
        (0..N).map(|i| input(N - 1 - i)).collect(),
        (0..N)
            .map(|i| bf16::from_f32(0.5 * half(i).to_f32()))
            .collect(),
        (0..N).map(|i| pair(N - 1 - i)).collect(),
    )
}

#[test]
fn a_pointer_to_a_type_parameter_on_every_back_end() -> parray::Result<()> {
    let (want, want_b, want_p) = reversed_and_scaled();
    let values: Vec<f32> = (0..N).map(input).collect();
    let halves: Vec<bf16> = values.iter().map(|v| bf16::from_f32(*v)).collect();
    let pairs: Vec<Pair> = (0..N).map(pair).collect();

    let (mut din, mut dout) = (DIN::create()?, DOUT::create()?);
    let (mut bin, mut bout) = (BIN::create()?, BOUT::create()?);
    let (mut pin, mut pout) = (PIN::create()?, POUT::create()?);
    din.copy_from_slice(&values)?;
    bin.copy_from_slice(&halves)?;
    pin.copy_from_slice(&pairs)?;
    detour!(MIXED(&din, &mut dout, &bin, &mut bout, &pin, &mut pout) {
        let t = $tid$;
        copy_one(a, out, 255 - t, t);
        scale_into(b, bout, t, 0.5 as bf16);
        copy_one::<Pair>(p, pout, 255 - t, t);
    })?;
    assert_eq!(dout.to_vec()?, want, "cuda, f32");
    assert_eq!(bout.to_vec()?, want_b, "cuda, bf16");
    assert_eq!(pout.to_vec()?, want_p, "cuda, records");

    let (mut hin, mut hout) = (HIN::create()?, HOUT::create()?);
    let (mut hbin, mut hbout) = (HBIN::create()?, HBOUT::create()?);
    let (mut hpin, mut hpout) = (HPIN::create()?, HPOUT::create()?);
    hin.copy_from_slice(&values)?;
    hbin.copy_from_slice(&halves)?;
    hpin.copy_from_slice(&pairs)?;
    {
        let (out, bout, pout) = (hout.ptr_mut(), hbout.ptr_mut(), hpout.ptr_mut());
        detour!(CPU {
            let t = $tid$;
            copy_one(hin + 0, out + 0, 255 - t, t);
            scale_into(hbin + 0, bout + 0, t, bf16::from_f32(0.5));
            copy_one::<Pair>(hpin + 0, pout + 0, 255 - t, t);
        })?;
    }
    assert_eq!(hout.to_vec()?, want, "pthd, f32");
    assert_eq!(hbout.to_vec()?, want_b, "pthd, bf16");
    assert_eq!(hpout.to_vec()?, want_p, "pthd, records");

    // Plain Rust, on the host.
    let (mut rust, mut rust_p) = (HOUT::create()?, HPOUT::create()?);
    for i in 0..N {
        copy_one(hin.ptr(), rust.ptr_mut(), N - 1 - i, i);
        copy_one(hpin.ptr(), rust_p.ptr_mut(), N - 1 - i, i);
    }
    assert_eq!(rust.to_vec()?, want, "rust, f32");
    assert_eq!(rust_p.to_vec()?, want_p, "rust, records");

    // Checked as any pointer parameter's access: past the array is an `Err`.
    let err = detour!(MIXED(&din, &dout, &bin, &bout, &pin, &mut pout) {
        let t = $tid$;
        copy_one(p, pout, 256 + t, t);
    })
    .unwrap_err();
    assert!(err.to_string().contains("out of bounds"), "{err}");
    Ok(())
}

#[test]
fn the_c_of_a_pointer_to_a_type_parameter() {
    let (a, out, b, bout, p, pout) = ((), (), (), (), (), ());
    let source = kernel_source!(MIXED(a, out, b, bout, p, pout) {
        let t = $tid$;
        copy_one(a, out, 255 - t, t);
        scale_into(b, bout, t, 0.5 as bf16);
        copy_one::<Pair>(p, pout, 255 - t, t);
    });
    assert!(
        source.contains("parray_fn_copy_one_Pair(const Pair* a"),
        "{source}"
    );
    insta::assert_snapshot!(source);
}
