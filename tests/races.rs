//! The emulation's race detector (SPEC.md 3.5, "Barriers and races"): in a debug build,
//! two threads of a block that access one shared element (one word of it: fields of a
//! record apart) with no `#sync` between them, one of them writing, fail the launch with
//! `Error::Race`, naming the array, the element, both threads and both lines; so do two
//! threads that write one element of global memory in one launch, in any blocks, with
//! nothing ordering the writes. The same bodies with their barriers (or their atomics, or
//! one writer per element) run and give the answer a CPU loop gives. A GPU sees no race
//! (compute-sanitizer's racecheck does): these tests run on the emulation only, and
//! release builds do not watch.

use parray::prelude::*;
use parray::MemKind;

#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Pair {
    sum: f32,
    count: i32,
}

parray! {
    dmem float [256] DATA;
    dmem float [1] TOTAL;
    smem float [256] TILE;
    cuda(float* x, float* y) [1][256] BLOCK;
    dmem float [4] FOUR;
    cuda(float* x, float* y) [4][64] GRID;
    dmem int [1] LOCK;
    cuda(float* x, float* y, int* lock) [4][64] LOCKED;
    dmem Pair [1] PAIR;
    smem Pair [1] SHARED_PAIR;
    cuda(float* x, Pair* y) [1][256] PAIRS;
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

/// Two threads of different blocks write one element of global memory in one launch:
/// which value is left is anyone's, and no barrier orders blocks.
#[test]
fn two_blocks_writing_one_global_element_race() -> parray::Result<()> {
    if !watched() {
        return Ok(());
    }
    let x = numbered()?;
    let mut y = FOUR::create()?;
    let store = line!() + 3;
    let err = detour!(GRID(&x, &mut y) {
        if $tid_1$ == 0 {
            y[0] = x[$tid$];
        }
    })
    .unwrap_err();
    let parray::Error::Race {
        memory,
        array,
        element,
        first,
        second,
        ..
    } = &err
    else {
        panic!("expected a race, got {err}");
    };
    assert_eq!(
        (*memory, *array, *element),
        (MemKind::Dmem, "y", 0),
        "{err}"
    );
    assert!(first.write && second.write, "{err}");
    for access in [first, second] {
        assert!(access.at.ends_with(&format!("races.rs:{store}")), "{err}");
    }
    // Thread 0 of two different blocks of the four.
    let block_of = |t: &parray::ThreadId| match t {
        parray::ThreadId::Cuda { block, thread, .. } => {
            assert_eq!(*thread, [0, 0, 0], "{err}");
            block[0]
        }
        other => panic!("a cuda thread, not {other}"),
    };
    assert_ne!(block_of(&first.thread), block_of(&second.thread), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("two threads wrote one element of global memory in one launch"),
        "{message}"
    );
    assert!(!message.contains("missing #sync"), "{message}");
    Ok(())
}

/// Two threads of one block, without a barrier between their writes, race on global
/// memory too; with one, the second write is ordered after the first and is no race.
#[test]
fn a_sync_orders_the_writes_of_one_block_to_global_memory() -> parray::Result<()> {
    let x = numbered()?;
    let mut total = TOTAL::create()?;
    let unordered = detour!(BLOCK(&x, &mut total) {
        let t = $tid_1$;
        if t == 3 || t == 7 {
            y[0] = x[t];
        }
        #sync;
    });
    if watched() {
        let err = unordered.unwrap_err();
        assert!(
            matches!(
                err,
                parray::Error::Race {
                    memory: MemKind::Dmem,
                    element: 0,
                    ..
                }
            ),
            "{err}"
        );
    }
    detour!(BLOCK(&x, &mut total) {
        let t = $tid_1$;
        if t == 3 {
            y[0] = x[t];
        }
        #sync;
        if t == 7 {
            y[0] = x[t];
        }
    })?;
    assert_eq!(total.to_vec()?, vec![7.0]);
    Ok(())
}

/// What is no race in global memory: every thread its own element, atomic additions into
/// one element, plain writes inside a lock (ordered by its fencing atomics), and a read of
/// an element another thread writes in the launch, which the watch does not follow
/// (SPEC.md 3.5: only writes of global memory are watched).
#[test]
fn own_elements_atomics_locks_and_reads_of_global_memory_are_no_race() -> parray::Result<()> {
    let x = numbered()?;
    let mut y = DATA::create()?;
    detour!(BLOCK(&x, &mut y) {
        let t = $tid_1$;
        y[t] = x[t] * 2.0;
    })?;
    let want: Vec<f32> = (0..256).map(|i| 2.0 * i as f32).collect();
    assert_eq!(y.to_vec()?, want);
    let mut total = FOUR::create()?;
    detour!(GRID(&x, &mut total) {
        atomic_add(y + 0, x[$tid$]);
    })?;
    assert_eq!(total.to_vec()?[0], (0..256).sum::<i32>() as f32);
    let mut lock = LOCK::create()?;
    let mut locked = FOUR::create()?;
    detour!(LOCKED(&x, &mut locked, &mut lock) {
        if $tid_1$ == 0 {
            while atomic_cas(lock + 0, 0, 1) != 0 {}
            y[0] = y[0] + x[$tid$];
            atomic_exch(lock + 0, 0);
        }
    })?;
    assert_eq!(
        locked.to_vec()?[0],
        (0..4).map(|b| b * 64).sum::<i32>() as f32
    );
    // Thread t reads element t + 1, which thread t + 1 writes in the same launch.
    let mut z = DATA::create()?;
    z.copy_from_slice(&(0..256).map(|i| i as f32).collect::<Vec<_>>())?;
    detour!(BLOCK(&x, &mut z) {
        let t = $tid_1$;
        let next = if t < 255 { y[t + 1] } else { 0.0 };
        y[t] = x[t] + next * 0.0;
    })?;
    assert_eq!(z.to_vec()?, x.to_vec()?);
    Ok(())
}

/// Fields of one shared record are watched apart, as a GPU writes them apart: two threads
/// writing different fields between barriers are no race, two writing one field are.
#[test]
fn different_fields_of_a_shared_record_are_no_race_one_field_is() -> parray::Result<()> {
    let x = numbered()?;
    let mut out = PAIR::create()?;
    detour!(PAIRS(&x, &mut out) {
        let s = SHARED_PAIR::create();
        let t = $tid_1$;
        if t == 1 {
            s[0].sum = x[t];
        }
        if t == 2 {
            s[0].count = 2;
        }
        #sync;
        if t == 0 {
            y[0] = s[0];
        }
    })?;
    assert_eq!(out.to_vec()?, vec![Pair { sum: 1.0, count: 2 }]);
    let (one, two) = (line!() + 5, line!() + 8);
    let same = detour!(PAIRS(&x, &mut out) {
        let s = SHARED_PAIR::create();
        let t = $tid_1$;
        if t == 1 {
            s[0].count = 1;
        }
        if t == 2 {
            s[0].count = 2;
        }
        #sync;
        if t == 0 {
            y[0] = s[0];
        }
    });
    if watched() {
        let err = same.unwrap_err();
        let parray::Error::Race {
            memory,
            array,
            element,
            first,
            second,
            ..
        } = &err
        else {
            panic!("expected a race, got {err}");
        };
        assert_eq!(
            (*memory, *array, *element),
            (MemKind::Smem, "SHARED_PAIR", 0)
        );
        assert!(first.at.ends_with(&format!("races.rs:{one}")), "{err}");
        assert!(second.at.ends_with(&format!("races.rs:{two}")), "{err}");
    }
    Ok(())
}
