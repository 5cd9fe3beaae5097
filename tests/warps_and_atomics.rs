//! Warp shuffles and the compare-and-swap atomics of detour bodies, checked against plain
//! Rust: `shfl_down` reductions and edge cases (a delta past the warp, a lane that is not
//! there), `atomic_cas`/`atomic_exch` locks on cuda grids and pthd threads. On the GPU
//! machine: `PARRAY_BACKEND=cuda warps_and_atomics`.

use parray::prelude::*;

parray! {
    dmem int [256] DOUT;
    dmem int [1] DLOCK;
    paged int [256] HOUT;
    paged int [1] HLOCK;
    cuda(int* out) [2][128] WARPS;
    cuda(int* out) [1][48] SHORT;
    cuda(int* out, int* lock) [4][64] LOCKING;
    pthd [8] CPU;
}

/// Pins the HIP C++ of the kernel of `detour!(T(args) body)` (64-lane wavefronts) as the
/// snapshot `NAME_hip` (`tests/hip_snapshots.rs` compiles every HIP snapshot with hipcc),
/// and then either runs the detour (`run`) or pins its CUDA C as `NAME` (`source`).
macro_rules! pinned {
    (run $name:literal, $threads:ident $args:tt $body:tt) => {{
        insta::assert_snapshot!(
            concat!($name, "_hip"),
            kernel_source!(hip(64): $threads $args $body)
        );
        detour!($threads $args $body)
    }};
    (source $name:literal, $threads:ident $args:tt $body:tt) => {{
        insta::assert_snapshot!($name, kernel_source!($threads $args $body));
        insta::assert_snapshot!(
            concat!($name, "_hip"),
            kernel_source!(hip(64): $threads $args $body)
        );
    }};
}

/// Whether cuda detours run on the CPU emulation (where a divergent shuffle is found; on a
/// GPU it is undefined behaviour).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

#[test]
fn a_warp_sums_its_lanes_with_shfl_down() -> parray::Result<()> {
    let mut out = DOUT::create()?;
    pinned!(run "a_warp_sums_its_lanes_with_shfl_down", WARPS(&mut out) {
        let mut v = ($tid$ * $tid$ % 1000) as i32;
        let mut d = 16u32;
        while d > 0 {
            v += shfl_down(v, d);
            d /= 2;
        }
        // Lane 0 of each warp holds its warp's sum; the others partial sums.
        out[$tid$] = v;
    })?;
    let got = out.to_vec()?;
    let value = |t: usize| (t * t % 1000) as i32;
    for w in 0..8 {
        let sum: i32 = (w * 32..w * 32 + 32).map(value).sum();
        assert_eq!(got[w * 32], sum, "warp {w}");
    }
    // The whole tree, lane by lane, as a GPU computes it.
    let mut v: Vec<i32> = (0..256).map(value).collect();
    for d in [16, 8, 4, 2, 1] {
        v = (0..256)
            .map(|t| {
                let src = t % 32 + d;
                v[t] + if src < 32 { v[t - t % 32 + src] } else { v[t] }
            })
            .collect();
    }
    assert_eq!(got, v);
    Ok(())
}

#[test]
fn a_shuffle_past_the_warp_gives_the_lanes_own_value_and_floats_shuffle_too() -> parray::Result<()>
{
    let mut out = DOUT::create()?;
    pinned!(run "a_shuffle_past_the_warp", WARPS(&mut out) {
        let x = $tid$ as f64 * 0.5;
        let y = shfl_down(x, 3);
        let z = shfl_down($tid$ as i32, 40);
        for k in 0..2 {
            let w: i64 = shfl_down($tid$ as i64 + k, 1);
            out[$tid$] = (y * 2.0) as i32 * 1000 + z + (w as i32 - $tid$ as i32) * 100000;
        }
    })?;
    let got = out.to_vec()?;
    for (t, &g) in got.iter().enumerate() {
        let lane = t % 32;
        let y = if lane + 3 < 32 { t + 3 } else { t };
        let w = if lane + 1 < 32 { t + 2 } else { t + 1 };
        // A delta of 40 is 40 % 32 = 8 lanes, as the hardware reads it.
        let z = if lane + 8 < 32 { t + 8 } else { t };
        let want = y as i32 * 1000 + z as i32 + (w as i32 - t as i32) * 100000;
        assert_eq!(g, want, "thread {t}");
    }
    Ok(())
}

#[test]
fn a_shuffle_that_only_some_lanes_of_a_warp_reach_is_an_error() {
    if !emulated() {
        return;
    }
    let mut out = DOUT::create().unwrap();
    let err = detour!(WARPS(&mut out) {
        if $tid_1$ % 32 < 16 {
            let v = shfl_down(1i32, 1);
            out[$tid$] = v;
        }
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("lane 16 of this warp") && text.contains("execute a shuffle together"),
        "{text}"
    );
    // A divergence between whole warps is not one: each warp shuffles on its own.
    detour!(WARPS(&mut out) {
        if $tid_1$ < 32 {
            let v = shfl_down(1i32, 1);
            out[$tid$] = v;
        }
    })
    .unwrap();
}

#[test]
fn a_shuffle_in_a_block_with_a_short_last_warp_is_an_error() {
    if !emulated() {
        return;
    }
    let mut out = DOUT::create().unwrap();
    let err = detour!(SHORT(&mut out) {
        out[$tid$] = shfl_down(2i32, 1);
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("last warp has 16 lanes"), "{text}");
}

#[test]
fn a_compare_and_swap_lock_loses_no_update_on_a_grid() -> parray::Result<()> {
    let (mut out, mut lock) = (DOUT::create()?, DLOCK::create()?);
    pinned!(run "a_compare_and_swap_lock_on_a_grid", LOCKING(&mut out, &mut lock) {
        // The seed's loop over the lanes: one lane of a warp takes the lock at a time.
        for lane in 0..32 {
            if $tid_1$ % 32 == lane {
                while atomic_cas(lock + 0, 0, 1) != 0 {}
                // Not atomic: the lock orders it.
                out[0] += 1;
                out[1 + $tid_0$] += $tid_1$ as i32;
                let old = atomic_exch(lock + 0, 0);
                // After the release, so atomic: threads of other blocks add here too.
                atomic_add(out + (8 + $tid$ % 8), old);
            }
        }
    })?;
    let got = out.to_vec()?;
    assert_eq!(got[0], 256);
    for b in 0..4 {
        assert_eq!(got[1 + b], (0..64).sum::<i32>(), "block {b}");
    }
    // Each release found the lock taken.
    assert_eq!(got[8..16].iter().sum::<i32>(), 256);
    assert_eq!(lock.to_vec()?, vec![0]);
    Ok(())
}

#[test]
fn compare_and_swap_and_exchange_on_pthd_threads() -> parray::Result<()> {
    let (mut out, mut lock) = (HOUT::create()?, HLOCK::create()?);
    detour!(CPU {
        for _k in 0..100 {
            while atomic_cas(lock + 0, 0, 1) != 0 {}
            out[0] += 1;
            atomic_exch(lock + 0, 0);
        }
        let seen = atomic_cas(out + (1 + $tid$), 0, 7);
        out[9 + $tid$] = seen + atomic_cas(out + (1 + $tid$), 0, 8);
    })?;
    assert_eq!(out[0], 800);
    for t in 0..8 {
        assert_eq!(out[1 + t], 7, "the second swap found 7, not 0");
        assert_eq!(out[9 + t], 7);
    }
    Ok(())
}

#[test]
fn the_kernel_shuffles_the_whole_warp_and_swaps_with_cuda_atomics() {
    let (out, lock) = ((), ());
    pinned!(source "the_kernel_shuffles_the_whole_warp_and_swaps_with_cuda_atomics", LOCKING(out, lock) {
        let mut v = $tid$ as i32;
        for k in 0..5 {
            v += shfl_down(v, 16u32 >> k);
        }
        while atomic_cas(lock + 0, 0, 1) != 0 {}
        out[0] += v;
        atomic_exch(lock + 0, 0);
    });
}
