//! TMA copies (SPEC 3.9, "TMA copies"): `#copy async S(p) to D(q) on B(b);` copies the box
//! the planner makes of a tile into shared memory, completing on an mbarrier created as
//! any shared array (`smem mbarrier [S] FULL;`), initialised by `#mbarrier init`, waited
//! for by `#wait FULL(full + i) parity P;`. The kernels' CUDA C is pinned here; the maps'
//! encoding and the instructions are checked on an H200 by `parray-runtime`'s
//! `tests/tma.rs`, and the detours run there too (`PARRAY_BACKEND=cuda`). The emulation is
//! the referee of the forms' rules (a read before the wait, a skipped phase, a body that
//! ends with a copy in flight, a box crossing the extent): a GPU runs those bodies as its
//! hardware does, so their tests run only on the emulation. A deadlock is reported on
//! both: a GPU's `#wait` gives up after 10 s, and under `PARRAY_CHECK_SYNC=1` names the
//! line (`PARRAY_BACKEND=cuda PARRAY_CHECK_SYNC=1 cargo test --test tma`).

use parray::bf16;
use parray::prelude::*;

parray! {
    dmem bf16 [128][128] A;
    // A 64 x 64 tile of A, row-major in shared memory, and in the 128-byte swizzle.
    bf16 [64#A_0][64#A_1] AT;
    smem bf16 [64][64] ROWS;
    smem bf16 [[8][8]][[8 ^ SWZ_0_1][8]] SWZ;
    smem mbarrier [2] FULL;
    cuda(bf16* a, bf16* out) [1][128] ONE;
    cuda(bf16* a, bf16* out) [1][256] TWO;
    // Three stages of a pipeline, each a 64 x 64 tile, and the tiles it writes out.
    smem bf16 [192][64] STAGES;
    bf16 [64#STAGES_0][#STAGES_1] STAGE;
    smem mbarrier [3] FULL3;
    smem mbarrier [2] EMPTY;
    dmem bf16 [256][64] O;
    dmem bf16 [64][64] T;
    // A source whose rows' length is given at run time: its map's strides are planned
    // when the kernel is specialised at the bound size.
    const C;
    dmem bf16 [128][C] RA;
    bf16 [64#RA_0][64#RA_1] RAT;
    // A matrix of sizes given at run time, covered by 64 x 64 tiles past its edges (SPEC
    // 2.4), and one tile: the edge tiles' boxes cross the tensor, where TMA reads zeros.
    const ROWS_E;
    const COLS_E;
    dmem bf16 [ROWS_E][COLS_E] E;
    bf16 [[ceil(ROWS_E/64)][64]#E_0][[ceil(COLS_E/64)][64]#E_1] EP;
    bf16 [#EP_0_1][#EP_1_1] ET;
}

/// Whether the emulation runs the detours (it refuses what the forms' rules forbid).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

fn input() -> parray::Result<(Vec<u16>, parray::Array<A>)> {
    let bits: Vec<u16> = (0..128 * 128u32)
        .map(|k| (k.wrapping_mul(7919) & 0x7f7f) as u16)
        .collect();
    let values: Vec<bf16> = bits.iter().map(|&b| bf16::from_bits(b)).collect();
    let mut a = A::create()?;
    a.copy_from_slice(&values)?;
    Ok((bits, a))
}

fn bits<X: parray::DataType<Elem = bf16>>(m: &parray::Array<X>) -> parray::Result<Vec<u16>> {
    Ok(m.to_vec()?.iter().map(|x| x.to_bits()).collect())
}

/// The four 64 x 64 tiles of A's top half (of bits `input`), one after the other: what
/// the pipelines write out.
fn four_tiles(input: &[u16]) -> Vec<u16> {
    (0..256 * 64)
        .map(|e| {
            let (k, r, c) = (e / 4096, e / 64 % 64, e % 64);
            input[(64 * (k / 2) + r) * 128 + 64 * (k % 2) + c]
        })
        .collect()
}

/// The tile of rows 64.. and columns 0..64 of A, copied by TMA into a row-major and into a
/// 128-byte swizzled tile (one thread issues, every thread waits for phase 0), read back
/// through the tile's type by each thread's row: A's elements, by the types.
#[test]
fn a_tile_copied_by_tma_is_the_source_by_the_types() -> parray::Result<()> {
    let (input, a) = input()?;
    let want: Vec<u16> = (0..64 * 64)
        .map(|k| input[(64 + k / 64) * 128 + k % 64])
        .collect();
    let mut rows = T::create()?;
    detour!(ONE(&a, &mut rows) {
        let s = ROWS::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t == 0 {
            #copy async AT(a + $A[64][0]$) to ROWS(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
        if t < 64 {
            for c in 0..64 {
                out[$T[t][c]$] = s[$ROWS[t][c]$];
            }
        }
    })?;
    assert_eq!(bits(&rows)?, want);
    let mut swizzled = T::create()?;
    detour!(ONE(&a, &mut swizzled) {
        let s = SWZ::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full + 1) arrivals 1;
        }
        #sync;
        if t == 0 {
            #copy async AT(a + $A[64][0]$) to SWZ(s) on FULL(full + 1);
        }
        #wait FULL(full + 1) parity 0;
        if t < 64 {
            for c in 0..64 {
                out[$T[t][c]$] = s[$SWZ[t][c]$];
            }
        }
    })?;
    assert_eq!(bits(&swizzled)?, want);
    Ok(())
}

/// A single-role pipeline of three stages: thread 0 keeps two tiles in flight, every
/// thread waits for each stage's phase by its parity, a `#sync` after the reads of a stage
/// before thread 0 refills it. The four 64 x 64 tiles of A's top half come out in order.
#[test]
fn a_three_stage_tma_pipeline_moves_every_tile() -> parray::Result<()> {
    let (input, a) = input()?;
    let mut out = O::create()?;
    detour!(ONE(&a, &mut out) {
        let st = STAGES::create();
        let full = FULL3::create();
        let t = $tid_1$;
        if t == 0 {
            for i in 0..3 {
                #mbarrier init FULL3(full + i) arrivals 1;
            }
        }
        #sync;
        if t == 0 {
            for k in 0..2 {
                #copy async AT(a + $A[64 * (k / 2)][64 * (k % 2)]$) to STAGE(st + $STAGES[64 * k][0]$) on FULL3(full + k);
            }
        }
        for k in 0..4 {
            let i = k % 3;
            #wait FULL3(full + i) parity (k / 3) % 2;
            if t < 64 {
                for c in 0..64 {
                    out[$O[64 * k + t][c]$] = st[$STAGES[64 * i + t][c]$];
                }
            }
            #sync;
            if t == 0 && k + 2 < 4 {
                let n = k + 2;
                #copy async AT(a + $A[64 * (n / 2)][64 * (n % 2)]$) to STAGE(st + $STAGES[64 * (n % 3)][0]$) on FULL3(full + n % 3);
            }
        }
    })?;
    assert_eq!(bits(&out)?, four_tiles(&input));
    Ok(())
}

/// A read of the stage before the wait that observes its phase is refused (debug builds),
/// naming the copy and the wait to add.
#[test]
#[cfg(debug_assertions)]
fn a_read_before_the_wait_is_refused() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (_, a) = input()?;
    let mut rows = T::create()?;
    let e = detour!(ONE(&a, &mut rows) {
        let s = ROWS::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t == 0 {
            #copy async AT(a + $A[64][0]$) to ROWS(s) on FULL(full);
        }
        out[t] = s[t];
        #wait FULL(full) parity 0;
    })
    .unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("thread 0 of the block read element 0 of ROWS, which thread 0's TMA copy at tests/tma.rs:")
            && message.contains("add `#wait B(b) parity 0;`"),
        "{message}"
    );
    Ok(())
}

/// A phase that cannot complete (two arrivals expected, one made by the copy's issue) is
/// the model's deadlock message, not a hang; on a GPU, the wait gives up after 10 s and,
/// with checked waits, names its line (without them it traps, which would end this
/// process's GPU context, so the test needs `PARRAY_CHECK_SYNC=1` there).
#[test]
fn a_wait_for_a_phase_that_cannot_complete_is_a_deadlock_reported() -> parray::Result<()> {
    if !emulated() && !parray::gpu::checks_sync() {
        return Ok(());
    }
    let (_, a) = input()?;
    let rows = T::create()?;
    let e = detour!(ONE(&a, &rows) {
        let s = ROWS::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 2;
        }
        #sync;
        if t == 0 {
            #copy async AT(a + $A[64][0]$) to ROWS(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
    })
    .unwrap_err();
    let message = e.to_string();
    let model = "phase 0 lacks 1 of its 2 arrivals";
    let gpu = "this thread waited 10 s for the phase of parity 0 of its mbarrier, which did not complete: a deadlock";
    assert!(
        message.contains("`#wait` at line")
            && message.contains(if emulated() { model } else { gpu }),
        "{message}"
    );
    Ok(())
}

/// One thread arms the barrier and issues the copy; every thread waits for phase 0.
#[test]
fn a_tma_copy_is_one_cp_async_bulk_tensor_on_an_mbarrier() {
    let (a, out) = ((), ());
    let source = kernel_source!(ONE(a, out) {
        let s = SWZ::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t == 0 {
            #copy async AT(a + $A[64][0]$) to SWZ(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
        out[t] = s[t];
    });
    insta::assert_snapshot!("tma_copy", source);
}

/// HIP has no TMA nor mbarriers: the HIP kernel names a function that does not exist, a
/// compile error of hipcc that says what is missing (as for wgmma).
#[test]
fn hip_has_no_tma() {
    let (a, out) = ((), ());
    let source = kernel_source!(hip(64): ONE(a, out) {
        let s = ROWS::create();
        let full = FULL::create();
        if $tid_1$ == 0 {
            #mbarrier init FULL(full) arrivals 1;
            #copy async AT(a) to ROWS(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
        out[$tid_1$] = s[$tid_1$];
    });
    assert!(
        source.contains("parray_hip_has_no_tma_nor_mbarriers();"),
        "{source}"
    );
    assert!(!source.contains("parray_tensor_map"), "{source}");
}

/// The launch encodes each copy's map from the plan and the argument's address; what the
/// driver would refuse with `CUDA_ERROR_INVALID_VALUE` alone is an error naming the
/// declaration and the rule, before the driver is asked.
#[test]
fn a_map_over_a_misaligned_array_names_the_declaration_and_the_rule() {
    use parray::layout::tma::TmaDim;
    use parray::layout::Swizzle;
    const DIMS: [TmaDim; 2] = [
        TmaDim {
            box_size: 64,
            stride: 1,
        },
        TmaDim {
            box_size: 64,
            stride: 128,
        },
    ];
    let arg = parray::gpu::TmaArg {
        param: 0,
        decl: "AT",
        elem: parray::layout::ElemType::Bf16,
        map: parray::gpu::TmaMap {
            dims: &DIMS,
            swizzle: Swizzle::B128,
            zero_fill: false,
        },
        len: 128 * 128,
    };
    let e = arg.encode(0x1008).unwrap_err();
    assert!(
        matches!(&e, parray::Error::TensorMap { decl, rule } if decl == "AT" && rule.contains("16-byte aligned")),
        "{e}"
    );
}

/// A wait whose parity names a phase two past the last the thread observed (two copies
/// completed on one barrier before any wait) is refused with the model's message: on a GPU
/// it returns at once with the later phase's data.
#[test]
fn a_wait_that_skips_a_phase_is_refused() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (_, a) = input()?;
    let rows = T::create()?;
    let e = detour!(ONE(&a, &rows) {
        let st = STAGES::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t == 0 {
            #copy async AT(a) to STAGE(st) on FULL(full);
            #copy async AT(a + $A[0][64]$) to STAGE(st + $STAGES[64][0]$) on FULL(full);
        }
        #wait FULL(full) parity 1;
    })
    .unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("this wait's parity names phase 1, but this thread observed no phase yet, and phase 0 completed unobserved in between"),
        "{message}"
    );
    Ok(())
}

/// A body that ends with a TMA copy no wait observed is refused, as one that ends with a
/// `#copy async` in flight: a GPU drops the copy at the thread's exit.
#[test]
fn a_body_that_ends_with_a_tma_copy_in_flight_is_refused() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (_, a) = input()?;
    let rows = T::create()?;
    let e = detour!(ONE(&a, &rows) {
        let s = ROWS::create();
        let full = FULL::create();
        if $tid_1$ == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if $tid_1$ == 0 {
            #copy async AT(a) to ROWS(s) on FULL(full);
        }
    })
    .unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("its TMA copy of element 0 of ROWS is still in flight where its body ends (no wait observed phase 0 of its mbarrier)"),
        "{message}"
    );
    Ok(())
}

/// A box that crosses the tensor's extent (a tile at column 96 of rows of 128: TMA fills
/// the columns past 128 with zeros, where the tile's type, which covers no data past its
/// end, reads the next row) is refused where the copy is issued.
#[test]
fn a_box_that_crosses_the_extent_is_refused() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (_, a) = input()?;
    let rows = T::create()?;
    let e = detour!(ONE(&a, &rows) {
        let s = ROWS::create();
        let full = FULL::create();
        if $tid_1$ == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if $tid_1$ == 0 {
            #copy async AT(a + $A[0][96]$) to ROWS(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
    })
    .unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("the TMA copy of `AT` at element 96 of its array crosses the tensor's extent: its box starts at coordinate 96 of dimension 0, whose extent is 128"),
        "{message}"
    );
    Ok(())
}

/// The tile at the corner of a 100 x 200 matrix covered by 64 x 64 pieces (rows 64..128,
/// columns 192..256) copied by TMA: the elements inside the matrix are its own, those past
/// its rows or its columns TMA's zeros, on the GPU and under the emulation.
#[test]
fn an_edge_tile_of_covering_pieces_reads_zeros_past_the_data() -> parray::Result<()> {
    const R: usize = 100;
    const W: usize = 200;
    ROWS_E.bind(R)?;
    COLS_E.bind(W)?;
    let source: Vec<u16> = (0..(R * W) as u32)
        .map(|k| (k.wrapping_mul(7919) & 0x7f7f) as u16 | 0x0080)
        .collect();
    let mut e = E::create()?;
    e.copy_from_slice(
        &source
            .iter()
            .map(|&b| bf16::from_bits(b))
            .collect::<Vec<_>>(),
    )?;
    let want: Vec<u16> = (0..64 * 64)
        .map(|k| {
            let (r, c) = (64 + k / 64, 192 + k % 64);
            match r < R && c < W {
                true => source[r * W + c],
                false => 0,
            }
        })
        .collect();
    let mut out = T::create()?;
    detour!(ONE(&e, &mut out) {
        let s = SWZ::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t == 0 {
            #copy async ET(a + $EP[[1][0]][[3][0]]$) to SWZ(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
        if t < 64 {
            for c in 0..64 {
                out[$T[t][c]$] = s[$SWZ[t][c]$];
            }
        }
    })?;
    assert_eq!(bits(&out)?, want);
    Ok(())
}

/// A two-stage single-role pipeline with empty barriers: every thread releases a stage by
/// `#mbarrier arrive` after reading it, and thread 0 waits for the release (a fresh
/// barrier's parity 1 passes at once) before refilling it. The four tiles come out in
/// order; the C arrives with `mbarrier.arrive`.
#[test]
fn a_two_stage_pipeline_with_empty_barriers_moves_every_tile() -> parray::Result<()> {
    let (input, a) = input()?;
    let mut out = O::create()?;
    detour!(ONE(&a, &mut out) {
        let st = STAGES::create();
        let full = FULL::create();
        let empty = EMPTY::create();
        let t = $tid_1$;
        if t == 0 {
            for i in 0..2 {
                #mbarrier init FULL(full + i) arrivals 1;
                #mbarrier init EMPTY(empty + i) arrivals 128;
            }
        }
        #sync;
        for k in 0..4 {
            let i = k % 2;
            if t == 0 {
                #wait EMPTY(empty + i) parity (k / 2 + 1) % 2;
                #copy async AT(a + $A[64 * (k / 2)][64 * (k % 2)]$) to STAGE(st + $STAGES[64 * i][0]$) on FULL(full + i);
            }
            #wait FULL(full + i) parity (k / 2) % 2;
            if t < 64 {
                for c in 0..64 {
                    out[$O[64 * k + t][c]$] = st[$STAGES[64 * i + t][c]$];
                }
            }
            #mbarrier arrive EMPTY(empty + i);
        }
    })?;
    assert_eq!(bits(&out)?, four_tiles(&input));
    let (a, out) = ((), ());
    let source = kernel_source!(ONE(a, out) {
        let empty = EMPTY::create();
        #mbarrier arrive EMPTY(empty + $tid_1$ % 2);
    });
    assert!(
        source.contains("asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"((unsigned)__cvta_generic_to_shared(empty + (int)tid_1 % 2)) : \"memory\");"),
        "{source}"
    );
    Ok(())
}

/// A warp-specialised pipeline: warp 0 produces (thread 0 waits for a stage's release and
/// refills it by TMA), the other three warps consume (wait for the stage, read it, release
/// it), as the two branches of one `if`. On a GPU the roles run at once; the emulation
/// interleaves the branches, each running on until a wait the other must complete. The
/// four tiles come out in order.
#[test]
fn a_producer_and_consumers_in_two_branches_move_every_tile() -> parray::Result<()> {
    let (input, a) = input()?;
    let mut out = O::create()?;
    detour!(ONE(&a, &mut out) {
        let st = STAGES::create();
        let full = FULL::create();
        let empty = EMPTY::create();
        let t = $tid_1$;
        if t == 0 {
            for i in 0..2 {
                #mbarrier init FULL(full + i) arrivals 1;
                #mbarrier init EMPTY(empty + i) arrivals 96;
            }
        }
        #sync;
        if t < 32 {
            for k in 0..4 {
                let i = k % 2;
                if t == 0 {
                    #wait EMPTY(empty + i) parity (k / 2 + 1) % 2;
                    #copy async AT(a + $A[64 * (k / 2)][64 * (k % 2)]$) to STAGE(st + $STAGES[64 * i][0]$) on FULL(full + i);
                }
            }
        } else {
            for k in 0..4 {
                let i = k % 2;
                #wait FULL(full + i) parity (k / 2) % 2;
                let r = t - 32;
                if r < 64 {
                    for c in 0..64 {
                        out[$O[64 * k + r][c]$] = st[$STAGES[64 * i + r][c]$];
                    }
                }
                #mbarrier arrive EMPTY(empty + i);
            }
        }
    })?;
    assert_eq!(bits(&out)?, four_tiles(&input));
    Ok(())
}

/// Roles that wait for each other with nothing left to arrive (the producer for a
/// release, the consumers for a fill, neither coming) are a deadlock the emulation
/// reports with each branch's wait and what its phase lacks, not a hang.
#[test]
fn roles_that_cannot_both_go_on_are_a_deadlock_reported() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (_, a) = input()?;
    let out = O::create()?;
    let e = detour!(ONE(&a, &out) {
        let full = FULL::create();
        let empty = EMPTY::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
            #mbarrier init EMPTY(empty) arrivals 96;
        }
        #sync;
        if t < 32 {
            #wait EMPTY(empty) parity 0;
        } else {
            #wait FULL(full) parity 0;
        }
    })
    .unwrap_err();
    let message = e.to_string();
    assert!(
        message.contains("thread 0 of the block waits for phase 0 of element 0 of EMPTY")
            && message.contains("lacks 96 of its 96 arrivals")
            && message.contains("thread 32 of the block waits for phase 0 of element 0 of FULL")
            && message.contains("lacks 1 of its 1 arrivals"),
        "{message}"
    );
    Ok(())
}

/// A `#sync` inside one role is reached by that role's threads only: the divergent
/// barrier is the error, and the other role, left waiting for it, is not run on into a
/// deadlock report.
#[test]
fn a_sync_inside_a_role_is_the_divergent_barrier_reported() -> parray::Result<()> {
    if !emulated() {
        return Ok(());
    }
    let (_, a) = input()?;
    let out = O::create()?;
    let e = detour!(ONE(&a, &out) {
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t < 32 {
            #wait FULL(full) parity 0;
        } else {
            #sync;
            #mbarrier arrive FULL(full);
        }
    })
    .unwrap_err();
    assert!(matches!(e, parray::Error::DivergentSync { .. }), "{e}");
    Ok(())
}

/// Roles of whole warpgroups with their register budgets (`#setmaxnreg`): the producer
/// warpgroup gives registers up, the consumers' takes them, and the pipeline moves every
/// tile as with one warpgroup. A `#setmaxnreg` by part of a warpgroup is refused on the
/// emulation (the 128 threads execute it together).
#[test]
fn roles_of_warpgroups_set_their_register_budgets() -> parray::Result<()> {
    let (input, a) = input()?;
    let mut out = O::create()?;
    detour!(TWO(&a, &mut out) {
        #![min_blocks_per_sm(1)]
        let st = STAGES::create();
        let full = FULL::create();
        let empty = EMPTY::create();
        let t = $tid_1$;
        if t == 0 {
            for i in 0..2 {
                #mbarrier init FULL(full + i) arrivals 1;
                #mbarrier init EMPTY(empty + i) arrivals 128;
            }
        }
        #sync;
        if t < 128 {
            #setmaxnreg dec 40;
            for k in 0..4 {
                let i = k % 2;
                if t == 0 {
                    #wait EMPTY(empty + i) parity (k / 2 + 1) % 2;
                    #copy async AT(a + $A[64 * (k / 2)][64 * (k % 2)]$) to STAGE(st + $STAGES[64 * i][0]$) on FULL(full + i);
                }
            }
        } else {
            #setmaxnreg inc 232;
            for k in 0..4 {
                let i = k % 2;
                #wait FULL(full + i) parity (k / 2) % 2;
                let r = t - 128;
                if r < 64 {
                    for c in 0..64 {
                        out[$O[64 * k + r][c]$] = st[$STAGES[64 * i + r][c]$];
                    }
                }
                #mbarrier arrive EMPTY(empty + i);
            }
        }
    })?;
    assert_eq!(bits(&out)?, four_tiles(&input));
    if emulated() {
        let e = detour!(TWO(&a, &out) {
            #![min_blocks_per_sm(1)]
            if $tid_1$ < 64 {
                #setmaxnreg dec 40;
            }
        })
        .unwrap_err();
        assert!(e.to_string().contains("#setmaxnreg at line"), "{e}");
    }
    Ok(())
}

/// A tile of a source whose row length is bound when the program runs (192: a stride no
/// literal type here has), copied by TMA into the 128-byte swizzle: its map is planned
/// at the bound size, on the GPU for the tensor map and under the emulation for the
/// copy, and the tile is the source's by the types.
#[test]
fn a_tile_of_a_source_of_run_time_sizes_is_copied_by_its_map_at_the_bound_sizes(
) -> parray::Result<()> {
    const COLS: usize = 192;
    C.bind(COLS)?;
    let source: Vec<u16> = (0..128 * COLS as u32)
        .map(|k| (k.wrapping_mul(7919) & 0x7f7f) as u16)
        .collect();
    let mut a = RA::create()?;
    a.copy_from_slice(
        &source
            .iter()
            .map(|&b| bf16::from_bits(b))
            .collect::<Vec<_>>(),
    )?;
    // Rows 64.., the last 64 columns.
    let want: Vec<u16> = (0..64 * 64)
        .map(|k| source[(64 + k / 64) * COLS + COLS - 64 + k % 64])
        .collect();
    let mut out = T::create()?;
    detour!(ONE(&a, &mut out) {
        let s = SWZ::create();
        let full = FULL::create();
        let t = $tid_1$;
        if t == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if t == 0 {
            let last = $dim(RA_1)$ - 64;
            #copy async RAT(a + $RA[64][last]$) to SWZ(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
        if t < 64 {
            for c in 0..64 {
                out[$T[t][c]$] = s[$SWZ[t][c]$];
            }
        }
    })?;
    assert_eq!(bits(&out)?, want);
    // The kernel at the bound size: the box's start decoded by the stride 192.
    let (a, out) = ((), ());
    let source = kernel_source!(ONE(a, out) {
        let s = SWZ::create();
        let full = FULL::create();
        if $tid_1$ == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if $tid_1$ == 0 {
            let last = $dim(RA_1)$ - 64;
            #copy async RAT(a + $RA[64][last]$) to SWZ(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
        out[$tid_1$] = s[$tid_1$];
    })?;
    insta::assert_snapshot!("tma_copy_run_time_stride", source);
    Ok(())
}
