//! Functions of the body language with `$...$` forms (`parray::funcs!`): a matrix of the
//! halves layout of Fig 17 (row `i` of F is spread over both halves of A's storage), read
//! through a pointer by `$F[i][j]$` and by a pointer moved by `$F_0[i]$` then `$F_1[j]$`,
//! called from a cuda body (the GPU where there is one, else the CPU emulation), from a
//! pthd body and from plain Rust, against plain Rust index arithmetic; an access past the
//! array through such a function is still an `Err`.

use parray::prelude::*;
use parray::{Ptr, PtrMut};

parray! {
    dmem float [2][8][4] A;
    // Fig 17's halves: row i of F is row i of each half of A, side by side.
    dmem float [#A_1][[#A_0][#A_2]] F;
    dmem float [8] X;
    dmem float [16] Y;
    paged float [2][8][4] HA;
    paged float [8] HX;
    paged float [16] HY;
    cuda(float* a, float* x, float* y) [1][8] GPU;
    pthd [8] CPU;
    cuda(float* a, float* x, float* y) [1][4] FEW;
}

parray::funcs! {
    /// Row `i` of F times `x`, F's element `(i, j)` at `$F[i][j]$` of A's storage.
    fn row_dot(a: Ptr<'_, f32>, x: Ptr<'_, f32>, i: usize) -> f32 {
        let mut s = 0.0f32;
        for j in 0..$dim(F_1)$ {
            s += a[$F[i][j]$] * x[j];
        }
        s
    }

    /// The same through a pointer to the row and the columns' own offsets.
    fn row_dot_split(a: Ptr<'_, f32>, x: Ptr<'_, f32>, i: usize) -> f32 {
        let row = a + $F_0[i]$;
        let mut s = 0.0f32;
        for j in 0..$dim_1(F)$ {
            s += row[$F_1[j]$] * x[j];
        }
        s
    }

    /// Both, into `y[i]` and `y[i + 8]`.
    fn apply(a: Ptr<'_, f32>, x: Ptr<'_, f32>, y: PtrMut<'_, f32>, i: usize) {
        y[i] = row_dot(a, x, i);
        y[i + $dim(F_0)$] = row_dot_split(a, x, i);
    }
}

/// A function whose types are declared, and imported, in its own module only.
mod tiles {
    pub mod decls {
        parray::parray! {
            pub dmem float [4][4] SQ;
            // SQ transposed.
            pub dmem float [#SQ_1][#SQ_0] SQT;
        }
    }

    use decls::SQT;

    parray::funcs! {
        /// Element `(i, j)` of the transpose of a row-major 4 x 4 matrix.
        pub fn transposed(m: parray::Ptr<'_, f32>, i: usize, j: usize) -> f32 {
            m[$SQT[i][j]$]
        }
    }
}

fn storage(k: usize) -> f32 {
    ((k * 29) % 53) as f32 / 4.0 - 5.0
}

fn vector(j: usize) -> f32 {
    j as f32 * 0.5 - 1.5
}

/// The product in plain Rust: F's element `(i, j)` is element `(j / 4, i, j % 4)` of
/// `[2][8][4]` storage, row-major.
fn reference() -> Vec<f32> {
    let a: Vec<f32> = (0..64).map(storage).collect();
    let rows: Vec<f32> = (0..8)
        .map(|i| {
            let mut s = 0.0f32;
            for j in 0..8 {
                s += a[(j / 4) * 32 + i * 4 + j % 4] * vector(j);
            }
            s
        })
        .collect();
    rows.iter().chain(&rows).copied().collect()
}

#[test]
fn a_cuda_body_a_pthd_body_and_rust_agree_with_the_reference() -> parray::Result<()> {
    let want = reference();
    let values: Vec<f32> = (0..64).map(storage).collect();
    let xs: Vec<f32> = (0..8).map(vector).collect();

    let mut a = A::create()?;
    a.copy_from_slice(&values)?;
    let mut x = X::create()?;
    x.copy_from_slice(&xs)?;
    let mut y = Y::create()?;
    detour!(GPU(&a, &x, &mut y) {
        apply(a, x, y, $tid$);
    })?;
    assert_eq!(y.to_vec()?, want, "cuda");

    let mut ha = HA::create()?;
    ha.copy_from_slice(&values)?;
    let mut hx = HX::create()?;
    hx.copy_from_slice(&xs)?;
    let mut hy = HY::create()?;
    {
        let out = hy.ptr_mut();
        detour!(CPU {
            apply(ha + 0, hx + 0, out + 0, $tid$);
        })?;
    }
    assert_eq!(hy.to_vec()?, want, "pthd");

    let mut rust = HY::create()?;
    for i in 0..8 {
        apply(ha.ptr(), hx.ptr(), rust.ptr_mut(), i);
    }
    assert_eq!(rust.to_vec()?, want, "rust");
    Ok(())
}

#[test]
fn an_access_past_the_array_through_a_functions_form_is_an_error() -> parray::Result<()> {
    let a = A::create()?;
    let x = X::create()?;
    let mut y = Y::create()?;
    // From the second half on, row t's columns in the second half lie past A's 64
    // elements: each index is within its dimension, the access is not, and it is checked.
    let err = detour!(FEW(&a, &x, &mut y) {
        y[$tid$] = row_dot(a + 32, x, $tid$);
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("out of bounds"), "{text}");
    Ok(())
}

#[test]
fn a_function_brings_the_types_its_forms_name_to_the_body_that_calls_it() -> parray::Result<()> {
    // No `SQT` here: the function's companion carries its declaration to the cuda body.
    use tiles::transposed;
    let values: Vec<f32> = (0..64).map(storage).collect();
    let mut a = A::create()?;
    a.copy_from_slice(&values)?;
    let x = X::create()?;
    let mut y = Y::create()?;
    detour!(GPU(&a, &x, &mut y) {
        let t = $tid$;
        y[t] = transposed(a, t / 4, t % 4);
        y[t + 8] = transposed(a, t / 4 + 2, t % 4);
    })?;
    let want: Vec<f32> = (0..16).map(|k| values[(k % 4) * 4 + k / 4]).collect();
    assert_eq!(y.to_vec()?, want, "cuda");
    let mut ha = HA::create()?;
    ha.copy_from_slice(&values)?;
    let rust: Vec<f32> = (0..16)
        .map(|k| transposed(ha.ptr(), k / 4, k % 4))
        .collect();
    assert_eq!(rust, want, "rust");
    Ok(())
}

#[test]
fn the_c_of_a_function_with_forms() {
    // The forms are folded into the device function as a body's: constants, no calls.
    let (a, x, y) = ((), (), ());
    let source = kernel_source!(GPU(a, x, y) {
        apply(a, x, y, $tid$);
    });
    insta::assert_snapshot!(source);
}
