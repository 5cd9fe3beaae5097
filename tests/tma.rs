//! TMA copies (SPEC 3.9, "TMA copies"): `#copy async S(p) to D(q) on B(b);` copies the box
//! the planner makes of a tile into shared memory, completing on an mbarrier created as
//! any shared array (`smem mbarrier [S] FULL;`), initialised by `#mbarrier init`, waited
//! for by `#wait FULL(full + i) parity P;`. The kernels' CUDA C is pinned here; the maps'
//! encoding and the instructions are checked on an H200 by `parray-runtime`'s
//! `tests/tma.rs`.

use parray::prelude::*;

parray! {
    dmem bf16 [128][128] A;
    // A 64 x 64 tile of A, row-major in shared memory, and in the 128-byte swizzle.
    bf16 [64#A_0][64#A_1] AT;
    smem bf16 [64][64] ROWS;
    smem bf16 [[8][8]][[8 ^ SWZ_0_1][8]] SWZ;
    smem mbarrier [2] FULL;
    cuda(bf16* a, bf16* out) [1][128] ONE;
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
    use parray::layout::tma::{Swizzle, TmaDim};
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
        dims: &DIMS,
        swizzle: Swizzle::B128,
        len: 128 * 128,
    };
    let e = arg.encode(0x1008).unwrap_err();
    assert!(
        matches!(&e, parray::Error::TensorMap { decl, rule } if decl == "AT" && rule.contains("16-byte aligned")),
        "{e}"
    );
}
