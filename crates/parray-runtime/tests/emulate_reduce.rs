//! The block reduction that motivated the emulation of `#sync`: 2^20 floats, 256-thread
//! blocks, a shared array of 256 and a halving loop with a `#sync` per step, written in the
//! shape `detour!` generates for a body with `#sync` (once per block, each stretch between
//! barriers a loop over the threads present there). Prints the time (meaningful with
//! `--release`):
//! `cargo test -p parray-runtime --release --test emulate_reduce -- --nocapture`.
// That shape indexes per-thread arrays by thread id.
#![allow(clippy::needless_range_loop)]

use std::time::Instant;

#[macro_use]
mod common;

use parray_runtime::exec::emulate::run_grid_blocks;
use parray_runtime::exec::CudaGrid;
use parray_runtime::{Access, AccessMut, Array};

const N: usize = 1 << 20;
const BLOCK: usize = 256;

flat_types! {
    IN = Paged f32 [N];
    SUMS = Paged f32 [N / BLOCK];
}

#[test]
fn block_reduction_of_a_million_floats() {
    let values: Vec<f32> = (0..N)
        .map(|i| ((i * 7919) % 1000) as f32 / 8.0 - 60.0)
        .collect();
    let mut input = Array::<IN>::new().unwrap();
    input.copy_from_slice(&values).unwrap();
    let mut sums = Array::<SUMS>::new().unwrap();
    let (inp, out) = (input.ptr(), sums.ptr_mut());

    let start = Instant::now();
    let shape = CudaGrid::new([(N / BLOCK) as u32, 1, 1], [BLOCK as u32, 1, 1]);
    // Per thread:
    //     sh[t] = in[global_id]; #sync
    //     s = BLOCK / 2; while s > 0 { if t < s { sh[t] += sh[t + s] } #sync; s /= 2 }
    //     if t == 0 { out[block_id] = sh[0] }
    run_grid_blocks("reduce", shape, |b| {
        let n = b.len();
        let sh = b.shared_ptr::<f32>(0, BLOCK, "SH", false);
        // Who is still in the body (no thread returns early here).
        let present = vec![true; n];
        // The registers that live across barriers, one per thread.
        let (mut t, mut s) = (vec![0; n], vec![0; n]);
        for i in 0..n {
            if !present[i] {
                continue;
            }
            let ctx = b.thread(i);
            t[i] = ctx.thread_id();
            sh.store(t[i], inp.load(ctx.global_id()));
        }
        if !b.sync(line!(), &present) {
            return;
        }
        // The loop's mask: the threads still in it.
        let mut looping = present.clone();
        for i in 0..n {
            if looping[i] {
                b.thread(i);
                s[i] = BLOCK / 2;
            }
        }
        loop {
            for i in 0..n {
                if !looping[i] {
                    continue;
                }
                b.thread(i);
                if s[i] == 0 {
                    looping[i] = false;
                    continue;
                }
                if t[i] < s[i] {
                    sh.store(t[i], sh.load(t[i]) + sh.load(t[i] + s[i]));
                }
            }
            if !looping.contains(&true) {
                break;
            }
            if !b.sync(line!(), &looping) {
                return;
            }
            for i in 0..n {
                if looping[i] {
                    b.thread(i);
                    s[i] /= 2;
                }
            }
        }
        for i in 0..n {
            if !present[i] {
                continue;
            }
            let ctx = b.thread(i);
            if t[i] == 0 {
                out.store(ctx.block_id(), sh.load(0));
            }
        }
    })
    .unwrap();
    let elapsed = start.elapsed();
    println!(
        "emulate: block reduction of {N} f32 in {}-thread blocks: {:.1} ms",
        BLOCK,
        elapsed.as_secs_f64() * 1e3
    );

    let got = sums.to_vec().unwrap();
    for (b, (&sum, chunk)) in got.iter().zip(values.chunks(BLOCK)).enumerate() {
        let want: f64 = chunk.iter().map(|&v| f64::from(v)).sum();
        let scale: f64 = chunk.iter().map(|&v| f64::from(v.abs())).sum();
        assert!(
            (f64::from(sum) - want).abs() <= 1e-6 * scale.max(1.0),
            "block {b}: {sum} vs {want}"
        );
    }
    let total: f64 = got.iter().map(|&s| f64::from(s)).sum();
    let want: f64 = values.iter().map(|&v| f64::from(v)).sum();
    let scale: f64 = values.iter().map(|&v| f64::from(v.abs())).sum();
    assert!(
        (total - want).abs() <= 1e-6 * scale,
        "total {total} vs {want}"
    );
}
