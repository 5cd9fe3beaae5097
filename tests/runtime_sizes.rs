//! Sizes given when the program runs (`const N;`, SPEC.md 2.4 and 3.1): host forms, pthd
//! and cuda detours over types sized by them, at a size no tile of the program divides,
//! each against a computation written without the types; and the errors of a size that is
//! not bound, zero, rebound, or refused by a declaration.

use parray::prelude::*;

parray! {
    const N;                        // bound to SIDE by every test (a size keeps its value)
    const K;                        // never bound
    const HALF = N - 102;           // computed from N (101 at SIDE): its value follows N's
    const HALF_K = K - 1;           // from K
    const THIRD = N / 3;            // 3 does not divide SIDE
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

/// A body names a run-time size, and a constant computed from one, as it names any
/// constant: the detour reads them when it starts (on the CPU), and the kernel made at the
/// bound sizes has their numbers, the kernel of the same body with literals.
#[test]
fn a_body_names_run_time_sizes_as_numbers() -> parray::Result<()> {
    bound();
    assert_eq!(HALF.value().map_err(|e| e.to_string()), Ok(SIDE - 102));
    let (a, mut y) = (DM::create()?, DY::create()?);
    detour!(GRID(&a, &mut y) {
        let mut i = $tid$;
        while i < N {
            y[$DY[i]$] = if i < HALF { 1.0f32 } else { (N - i) as f32 };
            i += $size(GRID)$;
        }
    })?;
    let mut host = V::create()?;
    parray::copy::copy(&y, &mut host)?;
    for i in 0..SIDE {
        let want = if i < SIDE - 102 {
            1.0
        } else {
            (SIDE - i) as f32
        };
        assert_eq!(host.at([i]), want, "y[{i}]");
    }
    let p = host.ptr_mut();
    detour!(TEAM {
        let mut i = $tid$;
        while i < N {
            p[$V[i]$] = (i / HALF) as f32;
            i += $size(TEAM)$;
        }
    })?;
    for i in 0..SIDE {
        assert_eq!(host.at([i]), (i / (SIDE - 102)) as f32, "v[{i}]");
    }
    let at_runtime = kernel_source!(GRID(&a, &mut y) {
        let i = $tid$;
        if i < HALF {
            y[$DY[i]$] = (N - i) as f32;
        }
    })?;
    let (la, mut ly) = (LM::create()?, LY::create()?);
    let literal = kernel_source!(LGRID(&la, &mut ly) {
        let i = $tid$;
        if i < 101 {
            y[$LY[i]$] = (203 - i) as f32;
        }
    });
    assert!(at_runtime.contains("i < 101u"), "{at_runtime}");
    assert_eq!(plain(at_runtime), plain(literal));
    Ok(())
}

/// A constant computed from sizes cannot be bound itself, nor take sizes its division
/// does not divide; and a body that names one whose
/// size is not bound is an error before anything runs, on a CPU and a GPU array alike.
#[test]
fn a_body_naming_an_unbound_size_is_an_error_before_it_runs() -> parray::Result<()> {
    bound();
    let e = HALF.bind(7).unwrap_err().to_string();
    assert!(e.contains("computed from other sizes"), "{e}");
    assert_eq!(HALF_K.get(), None);
    let e = THIRD.value().unwrap_err().to_string();
    assert!(
        e.contains("THIRD cannot take N = 203: in `const THIRD = N / 3`"),
        "{e}"
    );
    let (a, mut y) = (DM::create()?, DY::create()?);
    let gpu = detour!(GRID(&a, &mut y) {
        if $tid$ < HALF_K {
            y[0] = 1.0f32;
        }
    })
    .unwrap_err()
    .to_string();
    assert!(gpu.contains("HALF_K uses the run-time size `K`"), "{gpu}");
    let mut v = V::create()?;
    let p = v.ptr_mut();
    let cpu = detour!(TEAM {
        if $tid$ < K {
            p[0] = 1.0f32;
        }
    })
    .unwrap_err()
    .to_string();
    assert!(
        cpu.contains("uses the run-time size `K`") && cpu.contains("K.bind(n)"),
        "{cpu}"
    );
    Ok(())
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
    // The same kernel in HIP C++ for 64-lane wavefronts, made with it.
    let hip = kernel_source!(hip(64): COVER(&x, &mut y) {
        let i = $tid$;
        if i < $dim(DY_0)$ {
            y[$DY[i]$] = 2.0 * x[$DY[i]$] + $size(COVER)$ as f32;
        }
    })?;
    assert!(
        hip.contains("hip/hip_runtime.h") && hip.contains("if (i < 203u)"),
        "{hip}"
    );
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

/// The kernel's source without `#line` directives, and its name (`parray_GRID_144`) left
/// out: what a kernel made at run time shares with the one of literal sizes.
fn plain(source: &str) -> String {
    source
        .lines()
        .filter(|l| !l.starts_with("#line"))
        .map(|l| match l.find("void parray_") {
            Some(k) => l[..k].to_string() + &l[l.find('(').unwrap_or(k)..],
            None => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
}

// Tiled kernels over run-time types: nested `$...$` forms of a run-time type, the sizes
// of its sub-dimensions, and `#copy` between run-time types and literal ones (registers,
// shared memory). A transpose through shared memory at a bound size, against one
// written without the types; and its kernel, made at the launch, against the same
// detour over literal sizes.

parray! {
    const S;                                  // bound to TILED_SIDE by every test
    dmem float [S][S] SQ;
    paged float [#SQ_0][#SQ_1] HSQ;
    // Rows in strips of 32; a row's columns in tiles of 32, each as 8 runs of 4.
    dmem float [[S/32][32]#SQ_0][[S/32][[8][4]]#SQ_1] ST;
    dmem float [#ST_1_1_1] RUN;               // one run of 4 floats of a row
    rmem float [4] R4;
    smem float [32][32] TS;                   // a tile
    smem float [#TS_0][[8][4]#TS_1] TSW;
    smem float [#TSW_1_1] TRUN;
    // A block per strip, a thread per row of it and run of 4 columns.
    cuda(float* a, float* b) [S/32][[32][8]] TR;
}

const TILED_SIDE: usize = 96;

fn bound_tiles() {
    S.bind(TILED_SIDE).expect("S takes 96");
}

/// `SQ` numbered `1000 i + j` at `(i, j)`.
fn numbered() -> parray::Result<parray::Array<SQ>> {
    let mut host = HSQ::create()?;
    for i in 0..TILED_SIDE {
        for j in 0..TILED_SIDE {
            host.set([i, j], (i * 1000 + j) as f32);
        }
    }
    let mut a = SQ::create()?;
    parray::copy::copy(&host, &mut a)?;
    Ok(a)
}

/// `b` is [`numbered`] transposed.
fn assert_transposed(b: &parray::Array<SQ>) -> parray::Result<()> {
    let mut host = HSQ::create()?;
    parray::copy::copy(b, &mut host)?;
    for i in 0..TILED_SIDE {
        for j in 0..TILED_SIDE {
            assert_eq!(host.at([i, j]), (j * 1000 + i) as f32, "element ({i}, {j})");
        }
    }
    Ok(())
}

#[test]
fn a_transpose_by_tiles_of_a_bound_size() -> parray::Result<()> {
    bound_tiles();
    let (a, mut b) = (numbered()?, SQ::create()?);
    detour!(TR(&a, &mut b) {
        let ts = TS::create();
        let r = R4::create();
        for jt in 0..$size(ST_1_0)$ {
            #copy RUN(a + $ST[[$tid_0$][$tid_1_0$]][[jt][[$tid_1_1$][0]]]$) to R4(r);
            #copy R4(r) to TRUN(ts + $TSW[$tid_1_0$][[$tid_1_1$][0]]$);
            #sync;
            for x in 0..4 {
                r[x] = ts[$TS[$tid_1_1$ * 4 + x][$tid_1_0$]$];
            }
            #copy R4(r) to RUN(b + $ST[[jt][$tid_1_0$]][[$tid_0$][[$tid_1_1$][0]]]$);
            #sync;
        }
    })?;
    assert_transposed(&b)
}

parray! {
    // The same at S = 96, as literals.
    dmem float [96][96] LSQ;
    dmem float [[3][32]#LSQ_0][[3][[8][4]]#LSQ_1] LST;
    dmem float [#LST_1_1_1] LRUN;
    cuda(float* a, float* b) [3][[32][8]] LTR;
}

/// The kernel made at the bound size is the kernel of the same detour over literal sizes
/// (up to its name and `#line` numbers): its copies move float4 vectors, and every access
/// is proved.
#[test]
fn a_tiled_kernel_over_bound_sizes_is_the_kernel_of_literal_sizes() -> parray::Result<()> {
    bound_tiles();
    let (a, mut b) = (SQ::create()?, SQ::create()?);
    let at_runtime = kernel_source!(TR(&a, &mut b) {
        let ts = TS::create();
        let r = R4::create();
        for jt in 0..$size(ST_1_0)$ {
            #copy RUN(a + $ST[[$tid_0$][$tid_1_0$]][[jt][[$tid_1_1$][0]]]$) to R4(r);
            #copy R4(r) to TRUN(ts + $TSW[$tid_1_0$][[$tid_1_1$][0]]$);
            #sync;
            for x in 0..4 {
                r[x] = ts[$TS[$tid_1_1$ * 4 + x][$tid_1_0$]$];
            }
            #copy R4(r) to RUN(b + $ST[[jt][$tid_1_0$]][[$tid_0$][[$tid_1_1$][0]]]$);
            #sync;
        }
    })?;
    let (la, mut lb) = (LSQ::create()?, LSQ::create()?);
    let literal = kernel_source!(LTR(&la, &mut lb) {
        let ts = TS::create();
        let r = R4::create();
        for jt in 0..$size(LST_1_0)$ {
            #copy LRUN(a + $LST[[$tid_0$][$tid_1_0$]][[jt][[$tid_1_1$][0]]]$) to R4(r);
            #copy R4(r) to TRUN(ts + $TSW[$tid_1_0$][[$tid_1_1$][0]]$);
            #sync;
            for x in 0..4 {
                r[x] = ts[$TS[$tid_1_1$ * 4 + x][$tid_1_0$]$];
            }
            #copy R4(r) to LRUN(b + $LST[[jt][$tid_1_0$]][[$tid_0$][[$tid_1_1$][0]]]$);
            #sync;
        }
    });
    assert!(!at_runtime.contains("__parray_fault"), "{at_runtime}");
    assert!(at_runtime.contains("float4"), "{at_runtime}");
    assert_eq!(plain(at_runtime), plain(literal));
    insta::assert_snapshot!(at_runtime);
    Ok(())
}

parray! {
    // A block per tile: a grid of two dimensions sized at run time.
    cuda(float* a, float* b) [[S/32][S/32]][[32][8]] TILES;
}

/// `b = aᵀ` again, a block per tile: the grid's two dimensions are sized at run time and
/// its thread indices are the hardware's at every size that fits (`blockIdx.y`,
/// `blockIdx.x`).
#[test]
fn a_grid_of_two_dimensions_sized_at_run_time() -> parray::Result<()> {
    bound_tiles();
    let (a, mut b) = (numbered()?, SQ::create()?);
    detour!(TILES(&a, &mut b) {
        let ts = TS::create();
        let r = R4::create();
        #copy RUN(a + $ST[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][[$tid_1_1$][0]]]$) to R4(r);
        #copy R4(r) to TRUN(ts + $TSW[$tid_1_0$][[$tid_1_1$][0]]$);
        #sync;
        for x in 0..4 {
            r[x] = ts[$TS[$tid_1_1$ * 4 + x][$tid_1_0$]$];
        }
        #copy R4(r) to RUN(b + $ST[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][[$tid_1_1$][0]]]$);
    })?;
    assert_transposed(&b)
}

/// A thread index whose expression holds a grid size given at run time (the flat block
/// index of a grid of two dimensions, `blockIdx.y * 3 + blockIdx.x` at S = 96): the
/// kernel's, computed at the bound sizes, is the one the emulation evaluates too.
#[test]
fn a_thread_index_over_a_grid_size_given_at_run_time() -> parray::Result<()> {
    bound_tiles();
    let (a, mut b) = (SQ::create()?, SQ::create()?);
    detour!(TILES(&a, &mut b) {
        if $tid_1$ == 0 {
            b[$tid_0$] = ($tid_0_0$ * 100 + $tid_0_1$) as f32;
        }
    })?;
    let mut host = HSQ::create()?;
    parray::copy::copy(&b, &mut host)?;
    let tiles = TILED_SIDE / 32;
    for k in 0..tiles * tiles {
        let want = (k / tiles * 100 + k % tiles) as f32;
        assert_eq!(host.at([0, k]), want, "block {k}");
    }
    Ok(())
}

/// A form that fits its type at the probe but not at the bound sizes (a constant index
/// past `S / 32` tiles) is an error at the launch, naming the sizes, on the GPU and the
/// emulation alike, before any thread runs.
#[test]
fn a_form_that_does_not_fit_the_bound_sizes_is_an_error_at_the_launch() -> parray::Result<()> {
    bound_tiles();
    let (a, mut b) = (SQ::create()?, SQ::create()?);
    let err = detour!(TR(&a, &mut b) {
        b[$ST[[0][0]][[5][[0][0]]]$] = a[0];
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("its kernel cannot be made for"), "{err}");
    assert!(err.contains("S = 96"), "{err}");
    assert!(
        err.contains("index 5 is out of range for `ST_1_0` (size 3)"),
        "{err}"
    );
    Ok(())
}

parray! {
    // Tiles of 64 over data of any size: the last tile reaches past the data.
    const TN;                        // 1000: no tile divides it
    const EN;                        // 1024: tiles divide it
    dmem float [TN] TX;
    dmem float [[ceil(TN / 64)][[16][4]]#TX_0] TXT;
    dmem float [#TXT_0_1_1] TX4;     // a thread's 4 consecutive elements
    dmem float [ceil(TN / 64)][[16][4]] TXC;   // their coordinates
    dmem float [ceil(TN / 64)][16] TSUM;
    cuda(float* x, float* y, float* s) [ceil(TN / 64)][16] TAIL;
    dmem float [EN] EX;
    dmem float [[ceil(EN / 64)][[16][4]]#EX_0] EXT;
    dmem float [#EXT_0_1_1] EX4;
    dmem float [ceil(EN / 64)][[16][4]] EXC;
    dmem float [ceil(EN / 64)][16] ESUM;
    cuda(float* x, float* y, float* s) [ceil(EN / 64)][16] EVEN;
    rmem float [4] T4;
}

/// A guarded `#copy` (`if |e| ... else FILL`) moves a thread's elements that lie in the
/// data and fills the others; its store moves only those in the data. At 1000 elements
/// the last tile's loads read -1 past the data and its stores stop at the end (an access
/// past it would be a fault); at 1024 the prover shows every guard true and the kernel is
/// the unguarded one, float4 moves included.
#[test]
fn a_guarded_copy_moves_the_elements_in_the_data_and_fills_the_rest() -> parray::Result<()> {
    const N: usize = 1000;
    TN.bind(N)?;
    let mut host = parray::Array::<HV>::new()?;
    for i in 0..N {
        host.set([i], i as f32);
    }
    let (mut x, mut y, mut s) = (TX::create()?, TX::create()?, TSUM::create()?);
    parray::copy::copy(host.view::<HV1000>(), &mut x)?;
    detour!(TAIL(&x, &mut y, &mut s) {
        let r = T4::create();
        let at = $TXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $TXC[$tid_0$][[$tid_1$][0]]$;
        #copy TX4(x + at) to T4(r) if |e| c + e < $dim(TX_0)$ else -1.0;
        let mut sum = 0.0f32;
        for e in 0..4 {
            sum += r[e];
            r[e] = 2.0 * r[e];
        }
        s[$TSUM[$tid_0$][$tid_1$]$] = sum;
        #copy T4(r) to TX4(y + at) if |e| c + e < $dim(TX_0)$;
    })?;
    let (mut ys, mut sums) = (parray::Array::<HV>::new()?, parray::Array::<HV>::new()?);
    parray::copy::copy(&y, ys.view_mut::<HV1000>())?;
    parray::copy::copy(&s, sums.view_mut::<HV256>())?;
    for i in 0..N {
        assert_eq!(ys.at([i]), 2.0 * i as f32, "y[{i}]");
    }
    for t in 0..N.div_ceil(64) * 16 {
        let want: f32 = (4 * t..4 * t + 4)
            .map(|i| if i < N { i as f32 } else { -1.0 })
            .sum();
        assert_eq!(sums.at([t]), want, "thread {t}");
    }
    let tail = kernel_source!(TAIL(&x, &mut y, &mut s) {
        let r = T4::create();
        let at = $TXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $TXC[$tid_0$][[$tid_1$][0]]$;
        #copy TX4(x + at) to T4(r) if |e| c + e < $dim(TX_0)$ else -1.0;
        #copy T4(r) to TX4(y + at) if |e| c + e < $dim(TX_0)$;
    })?;
    // A thread's elements move as one float4 where all four lie in the data, one by one
    // in the tile that reaches past it; every access proved under its guard.
    assert!(tail.contains("if ((int)c + 3 < 1000u)"), "{tail}");
    assert!(
        tail.contains("float4") && !tail.contains("__parray_fault"),
        "{tail}"
    );
    EN.bind(1024)?;
    let (ex, mut ey, es) = (EX::create()?, EX::create()?, ESUM::create()?);
    let even = kernel_source!(EVEN(&ex, &mut ey, &es) {
        let r = T4::create();
        let at = $EXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $EXC[$tid_0$][[$tid_1$][0]]$;
        #copy EX4(x + at) to T4(r) if |e| c + e < $dim(EX_0)$ else -1.0;
        #copy T4(r) to EX4(y + at) if |e| c + e < $dim(EX_0)$;
    })?;
    assert!(!even.contains("1024u") && even.contains("float4"), "{even}");
    assert!(!even.contains("__parray_fault"), "{even}");
    insta::assert_snapshot!("guarded_copy_at_1000", tail);
    insta::assert_snapshot!("guarded_copy_at_1024", even);
    Ok(())
}

parray! {
    // A thread's 8 elements as two float4 vectors: at 1002 elements the thread at 1000
    // has its first vector partly in the data and its second wholly past it.
    const VN;                        // 1002
    dmem float [VN] VX;
    dmem float [[ceil(VN / 64)][[8][8]]#VX_0] VXT;
    dmem float [#VXT_0_1_1] VX8;
    dmem float [ceil(VN / 64)][[8][8]] VXC;
    dmem float [ceil(VN / 64)][8] VSUM;
    cuda(float* x, float* y, float* s) [ceil(VN / 64)][8] VTAIL;
    rmem float [8] T8;
    paged float [1002#HV_0] HV1002;
    paged float [128#HV_0] HV128;
}

/// A guarded copy of several vectors where the tile is not wholly inside the data moves
/// vector by vector: a vector inside as one float4, a vector partly inside lane by lane
/// (its first lane unguarded, its last filled), and a vector wholly past the data only
/// stores the fill, reading nothing. Run (emulated) at 1002 elements: every element in
/// the data moves, every one past it reads as the fill.
#[test]
fn a_guarded_copy_of_vectors_moves_each_vector_by_where_it_lies() -> parray::Result<()> {
    const N: usize = 1002;
    VN.bind(N)?;
    let mut host = parray::Array::<HV>::new()?;
    for i in 0..N {
        host.set([i], i as f32);
    }
    let (mut x, mut y, mut s) = (VX::create()?, VX::create()?, VSUM::create()?);
    parray::copy::copy(host.view::<HV1002>(), &mut x)?;
    macro_rules! source_and_run {
        ($body:tt) => {
            (
                kernel_source!(VTAIL(&x, &mut y, &mut s) $body),
                detour!(VTAIL(&x, &mut y, &mut s) $body),
            )
        };
    }
    let (source, run) = source_and_run!({
        let r = T8::create();
        let at = $VXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $VXC[$tid_0$][[$tid_1$][0]]$;
        #copy VX8(x + at) to T8(r) if |e| c + e < $dim(VX_0)$ else -1.0;
        let mut sum = 0.0f32;
        for e in 0..8 {
            sum += r[e];
            r[e] = 2.0 * r[e];
        }
        s[$VSUM[$tid_0$][$tid_1$]$] = sum;
        #copy T8(r) to VX8(y + at) if |e| c + e < $dim(VX_0)$;
    });
    run?;
    let (mut ys, mut sums) = (parray::Array::<HV>::new()?, parray::Array::<HV>::new()?);
    parray::copy::copy(&y, ys.view_mut::<HV1002>())?;
    parray::copy::copy(&s, sums.view_mut::<HV128>())?;
    assert_doubled_and_summed(&ys, &sums, N);
    let source = source?;
    // Vector by vector past the tile's test: a vector inside moves as a float4, one partly
    // inside lane by lane, one wholly outside is the fill alone.
    let edge = source.split("} else {").nth(1).expect("the edge branch");
    assert!(
        edge.contains("if ((int)c + (4 * (int)e + 3) < 1002u)"),
        "{source}"
    );
    assert!(edge.contains("*(const float4*)"), "{source}");
    let outside: Vec<&str> = source.split("r[(int)e * 4] = -1.0f;").collect();
    assert_eq!(outside.len(), 2, "{source}");
    let fills = outside[1].split('}').next().expect("the outside branch");
    assert_eq!(fills.matches("= -1.0f;").count(), 3, "{source}");
    assert!(!fills.contains("x["), "{source}");
    assert!(!source.contains("__parray_fault"), "{source}");
    insta::assert_snapshot!("guarded_vectors_at_1002", source);
    Ok(())
}

/// What the tail bodies above leave for `n` elements `i` as f32: each doubled in `ys`,
/// and in `sums` each thread's eight (past the data, the fill -1).
#[track_caller]
fn assert_doubled_and_summed(ys: &parray::Array<HV>, sums: &parray::Array<HV>, n: usize) {
    for i in 0..n {
        assert_eq!(ys.at([i]), 2.0 * i as f32, "y[{i}]");
    }
    for t in 0..n.div_ceil(64) * 8 {
        let want: f32 = (8 * t..8 * t + 8)
            .map(|i| if i < n { i as f32 } else { -1.0 })
            .sum();
        assert_eq!(sums.at([t]), want, "thread {t}");
    }
}

parray! {
    // The same tiles at a literal 1000 elements, a multiple of the vectors' 4 lanes.
    dmem float [1000] WX;
    dmem float [[ceil(1000 / 64)][[8][8]]#WX_0] WXT;
    dmem float [#WXT_0_1_1] WX8;
    dmem float [ceil(1000 / 64)][[8][8]] WXC;
    dmem float [ceil(1000 / 64)][8] WSUM;
    cuda(float* x, float* y, float* s) [ceil(1000 / 64)][8] WTAIL;
}

/// Where every vector lies wholly inside the data or wholly past it (1000 elements, each
/// thread's `c` a multiple of 4), a guarded copy tests each vector once and has no
/// lane-by-lane code (`copy::whole_vectors`, what C predicates without branching), and the
/// emulation of that code (literal sizes) moves every element of the data and fills the
/// rest.
#[test]
fn a_guarded_copy_of_whole_vectors_tests_each_vector_once() -> parray::Result<()> {
    const N: usize = 1000;
    let mut host = parray::Array::<HV>::new()?;
    for i in 0..N {
        host.set([i], i as f32);
    }
    let (mut x, mut y, mut s) = (WX::create()?, WX::create()?, WSUM::create()?);
    parray::copy::copy(host.view::<HV1000>(), &mut x)?;
    macro_rules! source_and_run {
        ($body:tt) => {
            (
                kernel_source!(WTAIL(&x, &mut y, &mut s) $body),
                detour!(WTAIL(&x, &mut y, &mut s) $body),
            )
        };
    }
    let (source, run) = source_and_run!({
        let r = T8::create();
        let at = $WXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $WXC[$tid_0$][[$tid_1$][0]]$;
        #copy WX8(x + at) to T8(r) if |e| c + e < $dim(WX_0)$ else -1.0;
        let mut sum = 0.0f32;
        for e in 0..8 {
            sum += r[e];
            r[e] = 2.0 * r[e];
        }
        s[$WSUM[$tid_0$][$tid_1$]$] = sum;
        #copy T8(r) to WX8(y + at) if |e| c + e < $dim(WX_0)$;
    });
    let source = source.to_string();
    // One test a vector, at its last lane; none at another lane, and no test of the tile.
    assert_eq!(source.matches("+ 3) < 1000u) {").count(), 2, "{source}");
    assert_eq!(source.matches("< 1000u").count(), 2, "{source}");
    assert!(!source.contains("__parray_fault"), "{source}");
    run?;
    let (mut ys, mut sums) = (parray::Array::<HV>::new()?, parray::Array::<HV>::new()?);
    parray::copy::copy(&y, ys.view_mut::<HV1000>())?;
    parray::copy::copy(&s, sums.view_mut::<HV128>())?;
    assert_doubled_and_summed(&ys, &sums, N);
    Ok(())
}

parray! {
    // The same tiles at a literal 1002 elements: the emulation runs the proved body, its
    // moves vector by vector included (over sizes given at run time it runs the element
    // loop through generic forms).
    dmem float [1002] LX;
    dmem float [[ceil(1002 / 64)][[8][8]]#LX_0] LXT;
    dmem float [#LXT_0_1_1] LX8;
    dmem float [ceil(1002 / 64)][[8][8]] LXC;
    dmem float [ceil(1002 / 64)][8] LSUM;
    cuda(float* x, float* y, float* s) [ceil(1002 / 64)][8] LTAIL;
}

/// The emulated run of the vector-by-vector moves (literal sizes): each element of the
/// data moves, in and out, and each element past it reads as the fill, in the vector
/// wholly inside, the one partly inside (lanes 1000 and 1001 of 1000..1003) and the ones
/// wholly past the data.
#[test]
fn vector_by_vector_moves_run_at_a_literal_size() -> parray::Result<()> {
    const N: usize = 1002;
    let mut host = parray::Array::<HV>::new()?;
    for i in 0..N {
        host.set([i], i as f32);
    }
    let (mut x, mut y, mut s) = (LX::create()?, LX::create()?, LSUM::create()?);
    parray::copy::copy(host.view::<HV1002>(), &mut x)?;
    macro_rules! source_and_run {
        ($body:tt) => {
            (
                kernel_source!(LTAIL(&x, &mut y, &mut s) $body),
                detour!(LTAIL(&x, &mut y, &mut s) $body),
            )
        };
    }
    let (source, run) = source_and_run!({
        let r = T8::create();
        let at = $LXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $LXC[$tid_0$][[$tid_1$][0]]$;
        #copy LX8(x + at) to T8(r) if |e| c + e < $dim(LX_0)$ else -1.0;
        let mut sum = 0.0f32;
        for e in 0..8 {
            sum += r[e];
            r[e] = 2.0 * r[e];
        }
        s[$LSUM[$tid_0$][$tid_1$]$] = sum;
        #copy T8(r) to LX8(y + at) if |e| c + e < $dim(LX_0)$;
    });
    let source = source.to_string();
    assert!(
        source.contains("if ((int)c + (4 * (int)e + 3) < 1002u)"),
        "{source}"
    );
    run?;
    let (mut ys, mut sums) = (parray::Array::<HV>::new()?, parray::Array::<HV>::new()?);
    parray::copy::copy(&y, ys.view_mut::<HV1002>())?;
    parray::copy::copy(&s, sums.view_mut::<HV128>())?;
    assert_doubled_and_summed(&ys, &sums, N);
    Ok(())
}

parray! {
    paged float [1024] HV;
    paged float [1000#HV_0] HV1000;
    paged float [256#HV_0] HV256;
}

/// A guard that lets an element past the data through (`<=` for `<`) proves nothing: the
/// accesses it guards stay checked, and the one past the end is an error naming the
/// detour, not a write past the array.
#[test]
fn a_guard_that_lets_an_element_past_the_data_through_is_checked() -> parray::Result<()> {
    TN.bind(1000)?;
    let (x, mut y, s) = (TX::create()?, TX::create()?, TSUM::create()?);
    // One body for its kernel's source and its run.
    macro_rules! source_and_run {
        ($body:tt) => {
            (
                kernel_source!(TAIL(&x, &mut y, &s) $body),
                detour!(TAIL(&x, &mut y, &s) $body),
            )
        };
    }
    let (wrong, run) = source_and_run!({
        let r = T4::create();
        let at = $TXT[[[$tid_0$][[$tid_1$][0]]]]$;
        let c = $TXC[$tid_0$][[$tid_1$][0]]$;
        #copy T4(r) to TX4(y + at) if |e| c + e <= $dim(TX_0)$;
    });
    let wrong = wrong?;
    assert!(wrong.contains("parray_at(y"), "{wrong}");
    let err = run.unwrap_err().to_string();
    assert!(err.contains("TAIL") && err.contains("1000"), "{err}");
    Ok(())
}

parray! {
    paged float [[N][3]] ROWS3;      // 3N elements: N rows of 3
    float [[3][N]#ROWS3_0] THIRDS;   // the same elements in 3 parts of N
    pthd [3] THREE;
}

/// A loop bounded by the size of a sub-dimension of a run-time type (`0..$dim(T_0_1)$`,
/// a value computed in a block) and a nested form inside it: each of 3 CPU threads fills
/// its third of the elements.
#[test]
fn a_loop_to_a_sub_dimension_size_in_a_pthd_body() -> parray::Result<()> {
    bound();
    let mut rows = ROWS3::create()?;
    let p = rows.ptr_mut();
    detour!(THREE {
        for k in 0..$dim(THIRDS_0_1)$ {
            p[$THIRDS[[[$tid$][k]]]$] = ($tid$ * 1000 + k) as f32;
        }
    })?;
    let all = rows.to_vec()?;
    for (i, v) in all.iter().enumerate() {
        assert_eq!(*v, ((i / SIDE) * 1000 + i % SIDE) as f32, "element {i}");
    }
    Ok(())
}

parray! {
    const HUGE;                                   // 70000: more blocks than CUDA's y allows
    cuda(float* y) [[HUGE][2]][32] TALL;
    cuda(float* y) [[ceil(N / 16)][ceil(N / 16)]][[16][16]] SQUARE;
    dmem float [N][N] IMAGE;
}

/// A grid of two dimensions sized at run time, a block of 16 x 16 threads per tile of an
/// image (the natural shape, not flattened): every pixel written once by its thread. A grid
/// past CUDA's limits at the bound sizes (70000 blocks along y) is an error at the launch
/// naming the limit, on the GPU and the emulation alike.
#[test]
fn a_two_dimensional_grid_over_an_image_of_a_bound_size() -> parray::Result<()> {
    bound();
    let mut image = IMAGE::create()?;
    detour!(SQUARE(&mut image) {
        let r = $tid_0_0$ * 16 + $tid_1_0$;
        let c = $tid_0_1$ * 16 + $tid_1_1$;
        if r < $dim(IMAGE_0)$ && c < $dim(IMAGE_1)$ {
            y[$IMAGE[r][c]$] = (r * 1000 + c) as f32;
        }
    })?;
    let pixels = image.to_vec()?;
    for (k, v) in pixels.iter().enumerate() {
        assert_eq!(*v, ((k / SIDE) * 1000 + k % SIDE) as f32, "pixel {k}");
    }
    HUGE.bind(70000)?;
    let err = detour!(TALL(&mut image) {
        y[0] = 1.0;
    })
    .unwrap_err()
    .to_string();
    assert!(err.contains("65535") && err.contains("TALL"), "{err}");
    Ok(())
}

parray! {
    float [[#M_1][#M_0]] FLAT_T;    // M transposed and flattened: digits, not a stride
    pthd [4] FOUR;
}

/// A loop reads the run-time types its forms name once, where it starts, and is written
/// twice: for strided layouts (`M`, `MT`), whose offsets become additions, and for one with
/// digits (`FLAT_T`). Both copies compute the offset compiler's offsets, in host code and in
/// a pthd body, and a loop's sizes are the bound ones.
#[test]
fn loops_read_their_run_time_types_where_they_start() -> parray::Result<()> {
    bound();
    let (mut strided, mut transposed, mut rows) = (0usize, 0usize, 0usize);
    host! {
        for i in 0..$dim(M_0)$ {
            rows += 1;
            for j in 0..$dim(MT_0)$ {
                assert_eq!($M[i][j]$, i * SIDE + j);
                strided += 1;
                transposed += usize::from($MT[j][i]$ == $M[i][j]$);
            }
        }
    }
    assert_eq!(
        (rows, strided, transposed),
        (SIDE, SIDE * SIDE, SIDE * SIDE)
    );
    let mut flat = 0usize;
    host! {
        for k in 0..$size(FLAT_T)$ {
            assert_eq!($FLAT_T[k]$, (k % SIDE) * SIDE + k / SIDE, "FLAT_T[{k}]");
            flat += 1;
        }
    }
    assert_eq!(flat, SIDE * SIDE);
    // Each of 4 threads writes the elements k = tid, tid + 4, ... of FLAT_T's order.
    let mut m = M::create()?;
    let p = m.ptr_mut();
    detour!(FOUR {
        let mut k = $tid$;
        while k < $size(FLAT_T)$ {
            p[$FLAT_T[k]$] = k as f32;
            k += 4;
        }
    })?;
    let all = m.to_vec()?;
    for (i, j) in [(0, 0), (1, 2), (202, 5), (17, 202)] {
        assert_eq!(all[i * SIDE + j], (j * SIDE + i) as f32, "M[{i}][{j}]");
    }
    Ok(())
}

/// A loop reads its types when it starts, before its first iteration: one that names a
/// type of a size never bound stops there (with the size's name) even when it would run
/// no iteration.
#[test]
fn a_loop_naming_a_type_of_an_unbound_size_stops_where_it_starts() {
    let stopped = std::panic::catch_unwind(|| {
        let (mut count, none) = (0usize, 0usize);
        host! {
            for i in 0..none {
                count += $NEVER[i]$;
            }
        }
        count
    });
    let message = stopped.expect_err("the loop stops where it starts");
    let message = message
        .downcast_ref::<String>()
        .cloned()
        .unwrap_or_default();
    assert!(message.contains("`K`"), "{message}");
}

parray! {
    const Q;                          // bound to QUAD by the test below
    paged float [Q] QX;
    float [[16][Q / 16]#QX] QPART;    // examples/quadratic.rs's 16 contiguous parts
    pthd [16] SIXTEEN;
}

const QUAD: usize = 16 * 2003;

/// `examples/quadratic.rs`'s CPU body over a run-time size: compiled once for every size,
/// its accesses proved at every binding (the loop's variable lies below the size of the
/// dimension it indexes; parray-front's tests count them), and, in a debug build, each
/// proved access checked all the same before it touches memory. The values are a plain
/// loop's.
#[test]
fn quadratic_over_a_run_time_size_computes_every_element() -> parray::Result<()> {
    Q.bind(QUAD)?;
    let (mut x, mut y) = (QX::create()?, QX::create()?);
    let xs: Vec<f32> = (0..QUAD).map(|i| (i % 97) as f32 * 0.01 - 0.3).collect();
    x.copy_from_slice(&xs)?;
    let (a, b, c) = (2.5f32, 2.0f32, 1.0f32);
    detour!(SIXTEEN {
        for k in 0..$dim(QPART_0_1)$ {
            let i = $QPART[[[$tid$][k]]]$;
            y[i] = a * x[i] * x[i] + b * x[i] + c;
        }
    })?;
    for (i, (&got, &x)) in y.as_slice()?.iter().zip(&xs).enumerate() {
        assert_eq!(got, a * x * x + b * x + c, "element {i}");
    }
    Ok(())
}

parray! {
    // Rows of 999 floats (not a multiple of 4: no float4 reaches a row's elements), a
    // thread's tile one row by 4 columns, as the SGEMM's tile of B where a thread loads
    // one row (examples/shared/sgemm.rs at N = 999): its element k is `(k / 4) * 999 + k % 4`,
    // which the offset compiler folds to `k`, while the guard's digits stay `k / 4` and
    // `k % 4`.
    dmem float [6][999] RX;
    dmem float [[6][1]#RX_0][[ceil(999 / 4)][4]#RX_1] RXT;
    dmem float [#RXT_0_1][#RXT_1_1] RX14;
    cuda(float* x, float* y) [6][ceil(999 / 4)] RTAIL;
    rmem float [1][4] T14;
    paged float [6][999] HRX;
}

/// A guarded copy of lanes whose guard names a digit the offset has folded (`k % 4` for
/// `k` below 4), and a column computed as a local's number times the thread's index, is
/// proved in bounds: the kernel has no checked access, and (no vector
/// reaching a row's elements) each element's move is tested alone, with no test of the
/// whole tile. Emulated, every element of each row moves and none past it is touched.
#[test]
fn a_guarded_copy_of_lanes_is_proved_where_its_offset_folds_a_digit() -> parray::Result<()> {
    let (rows, cols) = (6, 999);
    let mut host = parray::Array::<HRX>::new()?;
    for i in 0..rows {
        for j in 0..cols {
            host.set([i, j], (i * 1000 + j) as f32);
        }
    }
    let (mut x, mut y) = (RX::create()?, RX::create()?);
    parray::copy::copy(&host, &mut x)?;
    macro_rules! source_and_run {
        ($body:tt) => {
            (
                kernel_source!(RTAIL(&x, &mut y) $body),
                detour!(RTAIL(&x, &mut y) $body),
            )
        };
    }
    let (source, run) = source_and_run!({
        let r = T14::create();
        let row = $tid_0$;
        // Literals' arithmetic is folded (`128 * Q` with `Q` = 2 is `256`), and a local's
        // number times the thread's index is a sum the prover reads.
        let four = 2 * 2;
        let col = four * $tid_1$;
        let at = $RXT[[$tid_0$][0]][[$tid_1$][0]]$;
        #copy RX14(x + at) to T14(r) if |i, j| row + i < $dim(RX_0)$ && col + j < $dim(RX_1)$ else 0.0;
        for e in 0..4 {
            r[e] = 2.0 * r[e];
        }
        #copy T14(r) to RX14(y + at) if |i, j| row + i < $dim(RX_0)$ && col + j < $dim(RX_1)$;
    });
    let source = source.to_string();
    assert!(!source.contains("__parray_fault"), "{source}");
    assert!(!source.contains("2 * 2"), "{source}");
    // On the GPU each element's move is tested alone: one test a copy, none of the tile.
    assert_eq!(source.matches("< 999u").count(), 2, "{source}");
    run?;
    let mut out = parray::Array::<HRX>::new()?;
    parray::copy::copy(&y, &mut out)?;
    for i in 0..rows {
        for j in 0..cols {
            assert_eq!(out.at([i, j]), 2.0 * (i * 1000 + j) as f32, "y[{i}][{j}]");
        }
    }
    Ok(())
}

mod host_c;

parray! {
    // Rows of OW floats given when the program runs (61: odd), in one tile of 64 columns
    // that reaches past them; the same rows at the literal size 61.
    const OW;
    dmem float [64][OW] ORW;
    float [#ORW_0][[ceil(OW / 64)][64]#ORW_1] ORT;
    dmem float [64][61] LRW;
    float [#LRW_0][[ceil(61 / 64)][64]#LRW_1] LRT;
    smem float [64][64] OTILE;
    dmem float [64][64] OOUT;
    cuda(float* src, float* dst) [1][64] OROWS;
}

const ODD: usize = 61;

/// Row `r` of 61 elements into a tile of 64 columns, zeros past the row: what the copies
/// below give.
fn odd_rows_in_tiles(rows: &[f32]) -> Vec<f32> {
    (0..64 * 64)
        .map(|i| match (i / 64, i % 64) {
            (r, c) if c < ODD => rows[r * ODD + c],
            _ => 0.0,
        })
        .collect()
}

/// A guarded copy of rows of 61 into a tile of 64 columns (`if |c| c < n else 0.0`) keeps
/// its guard in the kernel made at the bound size, as in the kernel of the literal size:
/// the copy's vector loop (16 float4) and its element loop (64 floats) share their
/// variable, and the range the prover's walk left last (the vector loop's, below 16) once
/// decided `c < 61` always true, dropping the guard, so each thread read past its row
/// (wrong elements on the GPU, a fault past the array). The emulation runs a body of
/// run-time sizes as written, not that kernel: the specialised kernel is also run here on
/// host threads (`tests/host_c`), and the literal one on the emulation, which runs the
/// kernel's own body.
#[test]
fn a_guarded_copy_of_odd_rows_keeps_its_guard_in_the_specialised_kernel() -> parray::Result<()> {
    OW.bind(ODD)?;
    let rows: Vec<f32> = (0..64 * ODD).map(|k| (k + 1) as f32).collect();
    let want = odd_rows_in_tiles(&rows);
    let (mut src, mut lsrc) = (ORW::create()?, LRW::create()?);
    src.copy_from_slice(&rows)?;
    lsrc.copy_from_slice(&rows)?;
    let (mut out, mut lout) = (OOUT::create()?, OOUT::create()?);
    detour!(OROWS(&src, &mut out) {
        let s = OTILE::create();
        let r = $tid_1$;
        let n = $dim(ORW_1)$;
        #copy ORT_1_1(src + $ORT[r][[0][0]]$) to OTILE_1(s + $OTILE[r][0]$) if |c| c < n else 0.0;
        #copy OTILE_1(s + $OTILE[r][0]$) to OOUT_1(dst + $OOUT[r][0]$);
    })?;
    detour!(OROWS(&lsrc, &mut lout) {
        let s = OTILE::create();
        let r = $tid_1$;
        let n = $dim(LRW_1)$;
        #copy LRT_1_1(src + $LRT[r][[0][0]]$) to OTILE_1(s + $OTILE[r][0]$) if |c| c < n else 0.0;
        #copy OTILE_1(s + $OTILE[r][0]$) to OOUT_1(dst + $OOUT[r][0]$);
    })?;
    assert!(out.to_vec()? == want, "at run time: {:?}", out.to_vec()?);
    assert!(lout.to_vec()? == want, "literal: {:?}", lout.to_vec()?);
    let (src, dst) = ((), ());
    let specialised = kernel_source!(OROWS(src, dst) {
        let s = OTILE::create();
        let r = $tid_1$;
        let n = $dim(ORW_1)$;
        #copy ORT_1_1(src + $ORT[r][[0][0]]$) to OTILE_1(s + $OTILE[r][0]$) if |c| c < n else 0.0;
        #copy OTILE_1(s + $OTILE[r][0]$) to OOUT_1(dst + $OOUT[r][0]$);
    })?;
    let literal = kernel_source!(OROWS(src, dst) {
        let s = OTILE::create();
        let r = $tid_1$;
        let n = $dim(LRW_1)$;
        #copy LRT_1_1(src + $LRT[r][[0][0]]$) to OTILE_1(s + $OTILE[r][0]$) if |c| c < n else 0.0;
        #copy OTILE_1(s + $OTILE[r][0]$) to OOUT_1(dst + $OOUT[r][0]$);
    });
    // Each element moved where it lies in the row, and the guard proves its read.
    assert!(specialised.contains("if (c < n) {"), "{specialised}");
    assert!(!specialised.contains("__parray_fault"), "{specialised}");
    assert_eq!(plain(specialised), plain(literal));
    insta::assert_snapshot!("guarded_copy_of_rows_at_61", specialised);
    let mut on_host = vec![f32::NAN; 64 * 64];
    let mut host_rows = rows.clone();
    let ran = host_c::run_f32(
        "guarded_copy_of_rows_at_61",
        specialised,
        64,
        &mut [("src", &mut host_rows), ("dst", &mut on_host)],
    );
    if let Some(ran) = ran {
        ran.unwrap_or_else(|e| panic!("{e}\n{specialised}"));
        assert!(on_host == want, "on host threads: {on_host:?}");
    }
    Ok(())
}
