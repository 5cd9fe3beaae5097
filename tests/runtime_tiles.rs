//! Tiled kernels over sizes given when the program runs (SPEC.md 3.1): nested `$...$` forms
//! of a run-time type, the sizes of its sub-dimensions, and `#copy` between run-time types
//! and literal ones (registers, shared memory). A transpose through shared memory at a
//! bound size, against one written without the types; and its kernel, made at the launch,
//! against the same detour over literal sizes.

use parray::prelude::*;

parray! {
    const S;                                  // bound to SIDE by every test
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

const SIDE: usize = 96;

fn bound() {
    S.bind(SIDE).expect("S takes 96");
}

#[test]
fn a_transpose_by_tiles_of_a_bound_size() -> parray::Result<()> {
    bound();
    let mut host = HSQ::create()?;
    for i in 0..SIDE {
        for j in 0..SIDE {
            host.set([i, j], (i * 1000 + j) as f32);
        }
    }
    let (mut a, mut b) = (SQ::create()?, SQ::create()?);
    parray::copy::copy(&host, &mut a)?;
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
    parray::copy::copy(&b, &mut host)?;
    for i in 0..SIDE {
        for j in 0..SIDE {
            assert_eq!(host.at([i, j]), (j * 1000 + i) as f32, "element ({i}, {j})");
        }
    }
    Ok(())
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
    bound();
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
    bound();
    let mut host = HSQ::create()?;
    for i in 0..SIDE {
        for j in 0..SIDE {
            host.set([i, j], (i * 1000 + j) as f32);
        }
    }
    let (mut a, mut b) = (SQ::create()?, SQ::create()?);
    parray::copy::copy(&host, &mut a)?;
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
    parray::copy::copy(&b, &mut host)?;
    for i in 0..SIDE {
        for j in 0..SIDE {
            assert_eq!(host.at([i, j]), (j * 1000 + i) as f32, "element ({i}, {j})");
        }
    }
    Ok(())
}

/// A thread index whose expression holds a grid size given at run time (the flat block
/// index of a grid of two dimensions, `blockIdx.y * 3 + blockIdx.x` at S = 96): the
/// kernel's, computed at the bound sizes, is the one the emulation evaluates too.
#[test]
fn a_thread_index_over_a_grid_size_given_at_run_time() -> parray::Result<()> {
    bound();
    let (a, mut b) = (SQ::create()?, SQ::create()?);
    detour!(TILES(&a, &mut b) {
        if $tid_1$ == 0 {
            b[$tid_0$] = ($tid_0_0$ * 100 + $tid_0_1$) as f32;
        }
    })?;
    let mut host = HSQ::create()?;
    parray::copy::copy(&b, &mut host)?;
    let tiles = SIDE / 32;
    for k in 0..tiles * tiles {
        let want = (k / tiles * 100 + k % tiles) as f32;
        assert_eq!(host.at([0, k]), want, "block {k}");
    }
    Ok(())
}
