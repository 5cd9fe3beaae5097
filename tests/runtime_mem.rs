//! Shared and register arrays sized at run time (SPEC.md 3.1, "Sizes given at run time"):
//! `smem` and `rmem` types whose sizes use `const N;` sizes, created in a cuda body. A
//! row reversal through a shared tile, with each thread's part of the row and its sum kept
//! in a register array, at two bound sizes (two sizes of two names: a size keeps its value
//! for the process), against plain Rust; the kernel specialised at one of them; and the
//! errors of an unbound size and of arrays past what a GPU holds.

use parray::prelude::*;

const ROWS: usize = 4;

parray! {
    const COLS;                         // bound to 768 by every test
    const PER = COLS / 32;              // a thread's part of a row
    dmem float [4][COLS] M;
    paged float [#M_0][#M_1] HM;
    dmem float [4][32] SUMS;
    paged float [#SUMS_0][#SUMS_1] HSUMS;
    rmem float [PER] ROW;
    smem float [COLS] TILE;
    cuda(float* a, float* y, float* s) [4][32] G;
}

parray! {
    const NARROW;                       // bound to 96 by every test
    const NPER = NARROW / 32;
    dmem float [4][NARROW] NM;
    paged float [#NM_0][#NM_1] HNM;
    rmem float [NPER] NROW;
    smem float [NARROW] NTILE;
    cuda(float* a, float* y, float* s) [4][32] NG;
}

fn bound() {
    COLS.bind(768).expect("COLS takes 768");
    NARROW.bind(96).expect("NARROW takes 96");
}

/// The body: block `b` reverses row `b` of `a` into `y` through the shared `$tile`, each
/// of its 32 threads moving `$per` elements through its registers `$row`, and writes the
/// sum of its elements to `s` (`$d` is a `$`, which the `$...$` forms need inside a
/// `macro_rules!`).
macro_rules! reverse_rows {
    ($d:tt $run:ident, $grid:ident, $m:ident, $tile:ident, $row:ident, $cols:ident, $per:ident, $args:tt) => {
        $run!($grid $args {
            let tile = $tile::create();
            let row = $row::create();
            let b = $d tid_0 $d;
            let t = $d tid_1 $d;
            for k in 0..$per {
                tile[k * 32 + t] = a[$d $m[b][k * 32 + t] $d];
            }
            #sync;
            let mut sum = 0.0f32;
            for k in 0..$d dim_0($row) $d {
                row[k] = tile[$cols - 1 - (t * $per + k)];
                sum += row[k];
            }
            for k in 0..$d dim_0($row) $d {
                y[$d $m[b][t * $per + k] $d] = row[k];
            }
            s[$d SUMS[b][t] $d] = sum;
        })
    };
}

/// `a[r][c] = r * 1000 + c`; after the body, row `r` of `y` is row `r` of `a` reversed,
/// and thread `t` of block `r` summed its `per` elements of the reversed row.
fn check(cols: usize, y: &[f32], sums: &[f32]) {
    let per = cols / 32;
    for r in 0..ROWS {
        for c in 0..cols {
            let want = (r * 1000 + (cols - 1 - c)) as f32;
            assert_eq!(y[r * cols + c], want, "y[{r}][{c}] at {cols} columns");
        }
        for t in 0..32 {
            let want: f32 = (t * per..(t + 1) * per)
                .map(|c| (r * 1000 + (cols - 1 - c)) as f32)
                .sum();
            assert_eq!(sums[r * 32 + t], want, "sum of thread {t} of row {r}");
        }
    }
}

fn numbered<T: DataType<Elem = f32>>(cols: usize) -> parray::Result<parray::Array<T>> {
    let mut host = parray::Array::<T>::new()?;
    for r in 0..ROWS {
        for c in 0..cols {
            host.set([r, c], (r * 1000 + c) as f32);
        }
    }
    Ok(host)
}

#[test]
fn a_shared_tile_and_register_rows_of_a_bound_size_reverse_rows() -> parray::Result<()> {
    bound();
    let mut a = M::create()?;
    parray::copy::copy(&numbered::<HM>(768)?, &mut a)?;
    let (mut y, mut s) = (M::create()?, SUMS::create()?);
    reverse_rows!($ detour, G, M, TILE, ROW, COLS, PER, (&a, &mut y, &mut s))?;
    let (mut hy, mut hs) = (HM::create()?, HSUMS::create()?);
    parray::copy::copy(&y, &mut hy)?;
    parray::copy::copy(&s, &mut hs)?;
    check(768, &hy.to_vec()?, &hs.to_vec()?);
    Ok(())
}

#[test]
fn the_same_body_at_another_bound_size() -> parray::Result<()> {
    bound();
    let mut a = NM::create()?;
    parray::copy::copy(&numbered::<HNM>(96)?, &mut a)?;
    let (mut y, mut s) = (NM::create()?, SUMS::create()?);
    reverse_rows!($ detour, NG, NM, NTILE, NROW, NARROW, NPER, (&a, &mut y, &mut s))?;
    let (mut hy, mut hs) = (HNM::create()?, HSUMS::create()?);
    parray::copy::copy(&y, &mut hy)?;
    parray::copy::copy(&s, &mut hs)?;
    check(96, &hy.to_vec()?, &hs.to_vec()?);
    Ok(())
}

/// The kernel made at the bound sizes declares the arrays with their numbers, as one of
/// literal sizes does, and proves every access (the tile's below 768, a row's below 24).
#[test]
fn the_kernel_declares_the_arrays_at_the_bound_sizes() -> parray::Result<()> {
    bound();
    let (a, mut y, mut s) = (M::create()?, M::create()?, SUMS::create()?);
    let source = reverse_rows!($ kernel_source, G, M, TILE, ROW, COLS, PER, (&a, &mut y, &mut s))?;
    assert!(source.contains("__shared__ float tile[768];"), "{source}");
    assert!(source.contains("float row[24];"), "{source}");
    assert!(!source.contains("__parray_fault"), "{source}");
    insta::assert_snapshot!(source);
    Ok(())
}

parray! {
    const NEVER;                        // never bound
    const WIDE;                         // 300 floats: more than a thread's registers
    const HUGE;                         // 60000 floats: more than a block's shared memory
    smem float [NEVER] UNBOUND_TILE;
    rmem float [WIDE] WIDE_ROW;
    smem float [HUGE] HUGE_TILE;
    dmem float [32] OUT;
    cuda(float* y) [1][32] ONE;
}

/// A shared or register array of a size not bound is `Error::Unbound` before any thread
/// runs, as a dmem type's is.
#[test]
fn an_array_of_an_unbound_size_is_an_error_before_the_body_runs() -> parray::Result<()> {
    let mut y = OUT::create()?;
    let e = detour!(ONE(&mut y) {
        let tile = UNBOUND_TILE::create();
        tile[0] = 1.0f32;
        y[$OUT[$tid$]$] = tile[0];
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("UNBOUND_TILE uses the run-time size `NEVER`"),
        "{e}"
    );
    assert!(e.contains("NEVER.bind(n)"), "{e}");
    Ok(())
}

/// A register array past a thread's 255 registers, or shared arrays past a block's shared
/// memory, at the bound sizes: an error at the launch naming the type and the sizes, on
/// the GPU and the emulation alike, not a failed launch.
#[test]
fn arrays_past_what_a_gpu_holds_are_errors_naming_them() -> parray::Result<()> {
    WIDE.bind(300)?;
    HUGE.bind(60000)?;
    let mut y = OUT::create()?;
    let e = detour!(ONE(&mut y) {
        let row = WIDE_ROW::create();
        row[0] = 1.0f32;
        y[$OUT[$tid$]$] = row[0];
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("WIDE = 300"), "{e}");
    assert!(
        e.contains("the register array `WIDE_ROW` has 300 f32 (1200 bytes)"),
        "{e}"
    );
    let e = detour!(ONE(&mut y) {
        let tile = HUGE_TILE::create();
        tile[$tid$] = 1.0f32;
        y[$OUT[$tid$]$] = tile[$tid$];
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("HUGE = 60000"), "{e}");
    assert!(
        e.contains("`HUGE_TILE` of 60000 f32") && e.contains("240000 bytes of shared memory"),
        "{e}"
    );
    Ok(())
}
