//! Sizes given when the program runs (`const N;`, SPEC.md 2.4 and 3.1): host forms, pthd
//! and cuda detours over types sized by them, at a size no tile of the program divides,
//! each against a computation written without the types; and the errors of a size that is
//! not bound, zero, rebound, or refused by a declaration.

use parray::prelude::*;

parray! {
    const N;                        // bound to SIDE by every test (a size keeps its value)
    const K;                        // never bound
    paged float [N][N] M;
    float [#M_1][#M_0] MT;          // M transposed: a view
    paged float [[N/8][8]] TILED;   // 8 does not divide SIDE
    paged float [K] NEVER;
    dmem float [N][N] DM;
    dmem float [N] DY;
    pthd [3] TEAM;
    cuda(float* a, float* y) [4][64] GRID;
}

const SIDE: usize = 203;

fn bound() {
    N.bind(SIDE).expect("N takes 203");
}

#[test]
fn forms_and_numbers_follow_the_bound_size() {
    bound();
    assert_eq!(N.get(), Some(SIDE));
    assert_eq!(M::dims(), &[SIDE, SIDE]);
    assert_eq!((M::size(), M::extent()), (SIDE * SIDE, SIDE * SIDE));
    assert_eq!(<M as DataType>::FIXED_SIZE, None);
    for (i, j) in [(0, 0), (1, 2), (202, 5), (17, 202)] {
        let (m, mt) = host! { ($M[i][j]$, $MT[j][i]$) };
        assert_eq!(m, i * SIDE + j, "M[{i}][{j}] is row-major");
        assert_eq!(mt, m, "MT[{j}][{i}] is M[{i}][{j}]");
        assert_eq!(M::offset([i, j]), m);
    }
    let (rows, size) = host! { ($dim(M_0)$, $size(MT)$) };
    assert_eq!((rows, size), (SIDE, SIDE * SIDE));
}

#[test]
fn a_pthd_detour_fills_an_array_of_the_bound_size() -> parray::Result<()> {
    bound();
    let mut m = M::create()?;
    let p = m.ptr_mut();
    detour!(TEAM {
        let mut i = $tid$;
        while i < $dim(M_0)$ {
            for j in 0..$dim(M_1)$ {
                p[$M[i][j]$] = (i * 1000 + j) as f32;
            }
            i += $size(TEAM)$;
        }
    })?;
    for i in 0..SIDE {
        for j in 0..SIDE {
            assert_eq!(m.at([i, j]), (i * 1000 + j) as f32, "({i}, {j})");
        }
    }
    Ok(())
}

#[test]
fn a_cuda_detour_sums_rows_of_the_bound_size() -> parray::Result<()> {
    bound();
    let mut host = M::create()?;
    for i in 0..SIDE {
        for j in 0..SIDE {
            host.set([i, j], ((i * 7 + j * 3) % 11) as f32 - 5.0);
        }
    }
    let mut a = DM::create()?;
    parray::copy::copy(&host, &mut a)?;
    let mut y = DY::create()?;
    detour!(GRID(&a, &mut y) {
        let mut i = $tid$;
        while i < $dim(DM_0)$ {
            let mut s = 0.0f32;
            for j in 0..$dim(DM_1)$ {
                s += a[$DM[i][j]$];
            }
            y[$DY[i]$] = s;
            i += $size(GRID)$;
        }
    })?;
    let mut got = parray::Array::<V>::new()?;
    parray::copy::copy(&y, &mut got)?;
    for i in 0..SIDE {
        let want: f64 = (0..SIDE).map(|j| ((i * 7 + j * 3) % 11) as f64 - 5.0).sum();
        assert_eq!(got.at([i]) as f64, want, "row {i}");
    }
    Ok(())
}

parray! {
    paged float [N] V;
}

#[test]
fn a_size_is_positive_and_keeps_its_value() {
    bound();
    let zero = N.bind(0).unwrap_err().to_string();
    assert!(
        zero.contains("N cannot be 0") && zero.contains("positive"),
        "{zero}"
    );
    let again = N.bind(SIDE + 1).unwrap_err().to_string();
    assert!(again.contains("already bound to 203"), "{again}");
    N.bind(SIDE).expect("the same value again");
}

#[test]
fn a_declaration_that_cannot_take_the_size_is_an_error_naming_it() {
    bound();
    let e = TILED::create().unwrap_err().to_string();
    assert!(e.contains("TILED cannot take N = 203"), "{e}");
    assert!(e.contains("N / 8") && e.contains("TILED`"), "{e}");
    assert!(e.contains("inexact division"), "{e}");
}

#[test]
fn a_type_of_an_unbound_size_cannot_be_created() {
    let e = NEVER::create().unwrap_err().to_string();
    assert!(e.contains("NEVER uses the run-time size `K`"), "{e}");
    assert!(e.contains("K.bind(n)"), "{e}");
}

parray! {
    dmem float [203][203] LM;       // DM and DY at N = 203, as literals
    dmem float [203] LY;
    cuda(float* a, float* y) [4][64] LGRID;
}

/// The kernel of a detour over run-time sizes is made when they are bound, by the whole
/// road: the same kernel as the detour over the same sizes written as literals (up to its
/// name and its `#line` numbers), its sizes folded and its accesses proved.
#[test]
fn a_kernel_over_bound_sizes_is_the_kernel_of_literal_sizes() -> parray::Result<()> {
    bound();
    let (a, mut y) = (DM::create()?, DY::create()?);
    let at_runtime = kernel_source!(GRID(&a, &mut y) {
        let mut i = $tid$;
        while i < $dim(DM_0)$ {
            let mut s = 0.0f32;
            for j in 0..$dim(DM_1)$ {
                s += a[$DM[i][j]$];
            }
            y[$DY[i]$] = s;
            i += $size(GRID)$;
        }
    })?;
    let (la, mut ly) = (LM::create()?, LY::create()?);
    let literal = kernel_source!(LGRID(&la, &mut ly) {
        let mut i = $tid$;
        while i < $dim(LM_0)$ {
            let mut s = 0.0f32;
            for j in 0..$dim(LM_1)$ {
                s += a[$LM[i][j]$];
            }
            y[$LY[i]$] = s;
            i += $size(LGRID)$;
        }
    });
    // Without `#line` directives, and the kernel's name (`parray_GRID_144`) left out.
    let plain = |source: &str| {
        source
            .lines()
            .filter(|l| !l.starts_with("#line"))
            .map(|l| match l.find("void parray_") {
                Some(k) => l[..k].to_string() + &l[l.find('(').unwrap_or(k)..],
                None => l.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n")
    };
    assert!(!at_runtime.contains("__parray_fault"), "{at_runtime}");
    assert_eq!(plain(at_runtime), plain(literal));
    insta::assert_snapshot!(at_runtime);
    Ok(())
}

parray! {
    cuda(float* x, float* y) [ceil(N / 64)][64] COVER;   // one thread per element, and a tail
}

/// A grid sized at run time (`ceil(N / 64)` blocks) covers data of any size, one thread
/// per element; the threads past the data are guarded by the body, and its kernel, made at
/// the launch, proves its accesses under the guard.
#[test]
fn a_grid_sized_at_run_time_covers_the_data_with_a_guarded_tail() -> parray::Result<()> {
    bound();
    assert_eq!(COVER::threads(), SIDE.div_ceil(64) * 64);
    let mut host = parray::Array::<V>::new()?;
    for i in 0..SIDE {
        host.set([i], i as f32);
    }
    let (mut x, mut y) = (DY::create()?, DY::create()?);
    parray::copy::copy(&host, &mut x)?;
    detour!(COVER(&x, &mut y) {
        let i = $tid$;
        if i < $dim(DY_0)$ {
            y[$DY[i]$] = 2.0 * x[$DY[i]$] + $size(COVER)$ as f32;
        }
    })?;
    parray::copy::copy(&y, &mut host)?;
    for i in 0..SIDE {
        assert_eq!(host.at([i]), 2.0 * i as f32 + 256.0, "element {i}");
    }
    let source = kernel_source!(COVER(&x, &mut y) {
        let i = $tid$;
        if i < $dim(DY_0)$ {
            y[$DY[i]$] = 2.0 * x[$DY[i]$] + $size(COVER)$ as f32;
        }
    })?;
    assert!(source.contains("if (i < 203u)"), "{source}");
    assert!(!source.contains("__parray_fault"), "{source}");
    insta::assert_snapshot!(source);
    Ok(())
}

parray! {
    paged float [[N][2]][N] PAIRS;  // two rows a pair
}

/// Nested indices, the offsets of sub-dimensions and their sizes: the forms of a literal
/// type, computed at the bound size.
#[test]
fn nested_forms_follow_the_bound_size() {
    bound();
    for (i, j) in [(0, 0), (1, 2), (202, 5), (17, 202)] {
        let (second, flat) = host! { ($PAIRS[[i][1]][j]$, $PAIRS_0[2 * i + 1]$) };
        assert_eq!(second, (2 * i + 1) * SIDE + j, "PAIRS[[{i}][1]][{j}]");
        assert_eq!(flat, (2 * i + 1) * SIDE, "PAIRS_0[{}]", 2 * i + 1);
    }
    let sizes = host! { ($size(PAIRS_0)$, $size(PAIRS_0_1)$, $dim(PAIRS_0_0)$) };
    assert_eq!(sizes, (2 * SIDE, 2, SIDE));
}
