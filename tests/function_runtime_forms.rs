//! Functions of the body language (`parray::funcs!`) whose forms name types sized at run
//! time (`const N;`, SPEC.md 3.1 and 3.5, "Functions"): Fig 17's halves layout over `N`
//! rows (row `i` of F is row `i` of each half of A's storage, side by side), read by
//! `$F[i][j]$` and by a pointer moved by `$F_0[i]$` then indexed by `$F_1[j]$`, with the
//! rows counted by `$dim(F_0)$`. Called from a cuda body (the GPU where there is one, else
//! the CPU emulation), from a pthd body and from plain Rust, at two bound sizes (two sizes
//! of two names: a size keeps its value for the process), each against plain Rust index
//! arithmetic; and the C of the cuda body at one of them, its sizes folded in the
//! function as in a body.

use parray::prelude::*;

/// A module of its own for the size `$n`: the types over it, the functions, and `run`,
/// which computes `y = F x` (each row twice, through both functions) on every back end.
/// (`$d` is a `$`, which the `$...$` forms need inside a `macro_rules!`.)
macro_rules! at_size {
    ($d:tt $module:ident, $n:ident) => {
        #[allow(dead_code)] // each size uses the items it needs
        mod $module {
            use parray::prelude::*;
            use parray::{Ptr, PtrMut};

            parray! {
                pub const $n;
                pub dmem float [2][$n][4] A;
                // Fig 17's halves: row i of F is row i of each half of A, side by side.
                pub dmem float [#A_1][[#A_0][#A_2]] F;
                pub dmem float [8] X;
                pub dmem float [2][$n] Y;
                pub paged float [#A_0][#A_1][#A_2] HA;
                pub paged float [8] HX;
                pub paged float [#Y_0][#Y_1] HY;
                pub cuda(float* a, float* x, float* y) [2][32] GPU;
                pub pthd [5] CPU;
            }

            parray::funcs! {
                /// Row `i` of F times `x`, F's element `(i, j)` at `$F[i][j]$` of A's storage.
                pub fn row_dot(a: Ptr<'_, f32>, x: Ptr<'_, f32>, i: usize) -> f32 {
                    let mut s = 0.0f32;
                    for j in 0..$d dim(F_1) $d {
                        s += a[$d F[i][j] $d] * x[j];
                    }
                    s
                }

                /// The same through a pointer to the row and the columns' own offsets.
                pub fn row_dot_split(a: Ptr<'_, f32>, x: Ptr<'_, f32>, i: usize) -> f32 {
                    let row = a + $d F_0[i] $d;
                    let mut s = 0.0f32;
                    for j in 0..$d dim_1(F) $d {
                        s += row[$d F_1[j] $d] * x[j];
                    }
                    s
                }

                /// Rows `t`, `t + threads`, ... of both into `y[0][i]` and `y[1][i]`.
                pub fn apply(a: Ptr<'_, f32>, x: Ptr<'_, f32>, y: PtrMut<'_, f32>, t: usize, threads: usize) {
                    let mut i = t;
                    while i < $d dim(F_0) $d {
                        y[$d Y[0][i] $d] = row_dot(a, x, i);
                        y[$d Y[1][i] $d] = row_dot_split(a, x, i);
                        i += threads;
                    }
                }
            }

            /// `y` from the cuda body, the pthd body and plain Rust, at `rows = $n`.
            pub fn run(rows: usize) -> parray::Result<[Vec<f32>; 3]> {
                $n.bind(rows)?;
                let values: Vec<f32> = (0..8 * rows).map(super::storage).collect();
                let xs: Vec<f32> = (0..8).map(super::vector).collect();

                let mut ha = HA::create()?;
                ha.copy_from_slice(&values)?;
                let mut hx = HX::create()?;
                hx.copy_from_slice(&xs)?;
                let (mut a, mut x, mut y) = (A::create()?, X::create()?, Y::create()?);
                parray::copy::copy(&ha, &mut a)?;
                parray::copy::copy(&hx, &mut x)?;
                detour!(GPU(&a, &x, &mut y) {
                    apply(a, x, y, $d tid $d, $d size(GPU) $d);
                })?;
                let mut cuda = HY::create()?;
                parray::copy::copy(&y, &mut cuda)?;

                let mut pthd = HY::create()?;
                {
                    let out = pthd.ptr_mut();
                    detour!(CPU {
                        apply(ha + 0, hx + 0, out + 0, $d tid $d, $d size(CPU) $d);
                    })?;
                }

                let mut rust = HY::create()?;
                apply(ha.ptr(), hx.ptr(), rust.ptr_mut(), 0, 1);
                Ok([cuda.to_vec()?, pthd.to_vec()?, rust.to_vec()?])
            }
        }
    };
}

at_size!($ small, SMALL);
at_size!($ large, LARGE);
at_size!($ never, NEVER); // never bound

fn storage(k: usize) -> f32 {
    ((k * 29) % 53) as f32 / 4.0 - 5.0
}

fn vector(j: usize) -> f32 {
    j as f32 * 0.5 - 1.5
}

/// `y` in plain Rust at `rows`: F's element `(i, j)` is element `(j / 4, i, j % 4)` of
/// `[2][rows][4]` storage, row-major; both halves of `y` hold the product.
fn reference(rows: usize) -> Vec<f32> {
    let a: Vec<f32> = (0..8 * rows).map(storage).collect();
    let product: Vec<f32> = (0..rows)
        .map(|i| {
            let mut s = 0.0f32;
            for j in 0..8 {
                s += a[(j / 4) * rows * 4 + i * 4 + j % 4] * vector(j);
            }
            s
        })
        .collect();
    product.iter().chain(&product).copied().collect()
}

fn agree(rows: usize, got: [Vec<f32>; 3]) {
    let want = reference(rows);
    for (back_end, y) in ["cuda", "pthd", "rust"].iter().zip(got) {
        assert_eq!(y, want, "{back_end} at {rows} rows");
    }
}

#[test]
fn a_function_computes_forms_of_a_run_time_type_on_every_back_end() -> parray::Result<()> {
    agree(13, small::run(13)?);
    Ok(())
}

#[test]
fn the_same_function_at_another_bound_size() -> parray::Result<()> {
    agree(203, large::run(203)?);
    Ok(())
}

/// The kernel made at the bound size: the function's forms folded as a body's are (`(j /
/// 4) * 52` is the second half's distance at 13 rows, the loop bound `13u`).
#[test]
fn the_c_of_a_function_with_forms_of_a_run_time_type() -> parray::Result<()> {
    // What `apply` calls is asked for where the body is, as its own calls are.
    use small::{apply, row_dot, row_dot_split, A, F, GPU, SMALL, X, Y};
    SMALL.bind(13)?;
    let (a, x, mut y) = (A::create()?, X::create()?, Y::create()?);
    let source = kernel_source!(GPU(&a, &x, &mut y) {
        apply(a, x, y, $tid$, $size(GPU)$);
    })?;
    assert!(source.contains("(j / 4) * 52"), "{source}");
    insta::assert_snapshot!(source);
    Ok(())
}

/// The Rust function reads its types' sizes when it runs, as `host!` does: before its size
/// is bound, a call panics saying to bind it.
#[test]
fn a_function_over_a_size_not_bound_yet_panics_naming_it() -> parray::Result<()> {
    let hx = never::HX::create()?;
    let panic = std::panic::catch_unwind(|| never::row_dot(hx.ptr(), hx.ptr(), 0)).unwrap_err();
    let text = panic.downcast_ref::<String>().cloned().unwrap_or_default();
    assert!(text.contains("NEVER.bind(n)"), "{text}");
    Ok(())
}
