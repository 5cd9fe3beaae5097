//! Fragments in cuda bodies (SPEC.md 2.14): `FC::create()` makes the thread's part of an
//! rmem type distributed over its block's threads (4 registers of the mma.sync m16n8k16
//! C/D fragment), and `$FC[m][n]$` is the element's offset in the threads' parts end to
//! end: thread `o / part` holds it, in register `o % part`. Each lane stores its values
//! into a 16 x 8 matrix at the (row, col) that the type gives, and the matrix is the PTX
//! ISA's placement (m = t1 + 8 v1, n = 2 t0 + v0, lane = t0 + 4 t1, register v0 + 2 v1).
//! Runs on the GPU where there is one, else on the CPU emulation.

use parray::prelude::*;

parray! {
    // One warp: t1 (the ISA's groupID), t0 (threadID_in_group); lane = t0 + 4 t1.
    cuda(float* c) [1][[8][4]] WARP;
    rmem float [[2][#WARP_1_0]][[#WARP_1_1][2]] FC;
    // One thread's part: the dimensions that are not the thread's digits.
    float [#FC_0_0][#FC_1_1] FC_PART;
    dmem float [16][8] C;
}

/// The value lane `lane` keeps in register `v`.
fn value(lane: usize, v: usize) -> f32 {
    (lane * 100 + v) as f32
}

#[test]
fn each_lane_stores_its_c_fragment_where_the_isa_places_it() -> parray::Result<()> {
    let mut c = C::create()?;
    detour!(WARP(&mut c) {
        let regs = FC::create();
        for v in 0..$size(FC_PART)$ {
            regs[v] = ($tid$ * 100 + v) as f32;
        }
        for m in 0..$dim(C_0)$ {
            for n in 0..$dim(C_1)$ {
                let o = $FC[m][n]$;
                if o / $size(FC_PART)$ == $tid$ {
                    c[$C[m][n]$] = regs[o % $size(FC_PART)$];
                }
            }
        }
    })?;
    let got = c.to_vec()?;
    for row in 0..16 {
        for col in 0..8 {
            let (t1, v1, t0, v0) = (row % 8, row / 8, col / 2, col % 2);
            assert_eq!(
                got[row * 8 + col],
                value(t0 + 4 * t1, v0 + 2 * v1),
                "C[{row}][{col}]"
            );
        }
    }
    Ok(())
}

#[test]
fn a_fragment_is_the_threads_part() {
    let c = ();
    insta::assert_snapshot!(
        "fragment_c_store",
        kernel_source!(WARP(c) {
            let regs = FC::create();
            for v in 0..$size(FC_PART)$ {
                regs[v] = ($tid$ * 100 + v) as f32;
            }
            for m in 0..$dim(C_0)$ {
                for n in 0..$dim(C_1)$ {
                    let o = $FC[m][n]$;
                    if o / $size(FC_PART)$ == $tid$ {
                        c[$C[m][n]$] = regs[o % $size(FC_PART)$];
                    }
                }
            }
        })
    );
}

#[test]
fn an_element_another_thread_holds_is_out_of_bounds() -> parray::Result<()> {
    let mut c = C::create()?;
    // Lane 0 holds FC[0][0] at offset 0; FC[0][2] is lane 1's, at offset 4: past lane 0's
    // four registers (and every lane's, counted from its own part).
    let r = detour!(WARP(&mut c) {
        let regs = FC::create();
        regs[$FC[0][2]$] = 1.0f32;
        c[$tid$] = regs[0];
    });
    let e = r.expect_err("an element of another thread's part");
    assert!(e.to_string().contains("out of bounds"), "{e}");
    Ok(())
}
