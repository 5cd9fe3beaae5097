//! The emulation's race detector (SPEC.md 3.5, "Barriers and races"): in a debug build,
//! two threads of a block that access one shared element with no `#sync` between them,
//! one of them writing, fail the launch with `Error::Race`, naming the array, the element,
//! both threads and both lines. The same bodies with their barriers run and give the
//! answer a CPU loop gives. A GPU sees no race (compute-sanitizer's racecheck does): these
//! tests run on the emulation only, and release builds do not watch.

use parray::prelude::*;

parray! {
    dmem float [256] DATA;
    dmem float [1] TOTAL;
    smem float [256] TILE;
    cuda(float* x, float* y) [1][256] BLOCK;
}

/// Whether cuda detours run on the CPU emulation of a debug build, where races are watched.
fn watched() -> bool {
    cfg!(debug_assertions)
        && parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

fn numbered() -> parray::Result<parray::Array<DATA>> {
    let mut x = DATA::create()?;
    x.copy_from_slice(&(0..256).map(|i| i as f32).collect::<Vec<_>>())?;
    Ok(x)
}

/// The reversal through shared memory: thread t stores element t and reads
/// element 255 - t, which thread 255 - t stores. Without the `#sync` between, a thread may
/// read an element before its thread stores it: the emulation, running the threads in
/// order, meets the first such pair at thread 128's store of the element thread 127 read.
#[test]
fn a_reversal_without_its_sync_is_a_race_naming_both_accesses() -> parray::Result<()> {
    if !watched() {
        return Ok(());
    }
    let x = numbered()?;
    let mut y = DATA::create()?;
    let (store, load) = (line!() + 4, line!() + 5);
    let err = detour!(BLOCK(&x, &mut y) {
        let tile = TILE::create();
        let t = $tid_1$;
        tile[t] = x[t];
        y[t] = tile[255 - t];
    })
    .unwrap_err();
    let parray::Error::Race {
        array,
        element,
        first,
        second,
        ..
    } = &err
    else {
        panic!("expected a race, got {err}");
    };
    assert_eq!((*array, *element), ("TILE", 128), "{err}");
    assert!(!first.write && second.write, "{err}");
    assert!(first.at.ends_with(&format!("races.rs:{load}")), "{err}");
    assert!(second.at.ends_with(&format!("races.rs:{store}")), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("thread 127 (") && message.contains("thread 128 ("),
        "{message}"
    );
    assert!(message.contains("missing #sync?"), "{message}");
    // With the barrier the launch runs, and reverses.
    detour!(BLOCK(&x, &mut y) {
        let tile = TILE::create();
        let t = $tid_1$;
        tile[t] = x[t];
        #sync;
        y[t] = tile[255 - t];
    })?;
    let want: Vec<f32> = (0..256).rev().map(|i| i as f32).collect();
    assert_eq!(y.to_vec()?, want);
    Ok(())
}

/// The classic tree reduction without its second `#sync` (the one that ends each step):
/// a step's reads of `tile[t + s]` meet the next step's writes by other threads.
#[test]
fn a_reduction_without_the_sync_that_ends_its_steps_is_a_race() -> parray::Result<()> {
    if !watched() {
        return Ok(());
    }
    let x = numbered()?;
    let mut total = TOTAL::create()?;
    let err = detour!(BLOCK(&x, &mut total) {
        let tile = TILE::create();
        let t = $tid_1$;
        tile[t] = x[t];
        #sync;
        let mut s = 128;
        while s > 0 {
            if t < s {
                tile[t] += tile[t + s];
            }
            s /= 2;
        }
        if t == 0 {
            y[0] = tile[0];
        }
    })
    .unwrap_err();
    assert!(
        matches!(err, parray::Error::Race { array: "TILE", .. }),
        "{err}"
    );
    // With it, the sum of 0..256.
    detour!(BLOCK(&x, &mut total) {
        let tile = TILE::create();
        let t = $tid_1$;
        tile[t] = x[t];
        #sync;
        let mut s = 128;
        while s > 0 {
            if t < s {
                tile[t] += tile[t + s];
            }
            #sync;
            s /= 2;
        }
        if t == 0 {
            y[0] = tile[0];
        }
    })?;
    assert_eq!(total.to_vec()?, vec![(0..256).sum::<i32>() as f32]);
    Ok(())
}

/// What is no race: threads reading one element, a thread's own element read back,
/// atomic additions into one element, and accesses on either side of a barrier.
#[test]
fn shared_reads_own_elements_and_atomics_are_no_race() -> parray::Result<()> {
    let x = numbered()?;
    let mut total = TOTAL::create()?;
    detour!(BLOCK(&x, &mut total) {
        let tile = TILE::create();
        let t = $tid_1$;
        tile[t] = x[t];
        let own = tile[t];
        #sync;
        let first = tile[0];
        #sync;
        if t == 0 {
            tile[0] = 0.0;
        }
        #sync;
        atomic_add(tile + 0, own + first);
        #sync;
        if t == 0 {
            y[0] = tile[0];
        }
    })?;
    assert_eq!(total.to_vec()?, vec![(0..256).sum::<i32>() as f32]);
    Ok(())
}
