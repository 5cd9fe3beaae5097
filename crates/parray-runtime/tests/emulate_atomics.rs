//! `atomic_add` under contention, from OS threads and from emulated grids.

#[macro_use]
mod common;

use common::SyncPtr;
use parray_runtime::exec::emulate::{run_grid, run_grid_blocks};
use parray_runtime::exec::CudaGrid;
use parray_runtime::mem::atomics::{atomic_add, atomic_add_f32};
use parray_runtime::{AccessMut, Array};
use std::thread;

flat_types! {
    COUNT = Paged i64 [2];
}

#[test]
fn a_million_f32_adds_from_os_threads() {
    let mut total = 0.0f32;
    let p = SyncPtr(&mut total as *mut f32);
    thread::scope(|s| {
        for _ in 0..8 {
            s.spawn(move || {
                for _ in 0..125_000 {
                    // SAFETY: `total` outlives the scope and is only accessed atomically.
                    unsafe { atomic_add_f32(p.get(), 1.0) };
                }
            });
        }
    });
    // Every partial sum up to 2^24 is exact in f32, so no add may be lost.
    assert_eq!(total, 1e6);
}

#[test]
fn a_million_f32_adds_from_grids() {
    let mut total = 0.0f32;
    let p = SyncPtr(&mut total as *mut f32);
    run_grid(
        "count",
        CudaGrid::new([1000, 1, 1], [1000, 1, 1]),
        move |_| {
            // SAFETY: `total` outlives the launch and is only accessed atomically.
            unsafe { atomic_add(p.get(), 1.0f32) };
        },
    )
    .unwrap();
    assert_eq!(total, 1e6, "loops");

    let mut total = 0.0f32;
    let p = SyncPtr(&mut total as *mut f32);
    run_grid_blocks("count", CudaGrid::new([250, 1, 1], [1000, 1, 1]), |b| {
        for t in 0..b.len() {
            b.thread(t);
            for _ in 0..4 {
                // SAFETY: `total` outlives the launch and is only accessed atomically.
                unsafe { atomic_add(p.get(), 1.0f32) };
            }
        }
        assert!(b.sync(line!(), &vec![true; b.len()]));
    })
    .unwrap();
    // Every partial sum up to 2^24 is exact in f32, so no add may be lost.
    assert_eq!(total, 1e6, "blocks");
}

#[test]
fn integer_adds_return_each_old_value_once() {
    const N: usize = 200_000;
    let mut counter = 0i32;
    let mut seen = vec![0u8; N];
    let (c, sp) = (
        SyncPtr(&mut counter as *mut i32),
        SyncPtr(seen.as_mut_ptr()),
    );
    run_grid(
        "ticket",
        CudaGrid::new([N as u32 / 500, 1, 1], [500, 1, 1]),
        move |_| {
            // SAFETY: `counter` is only accessed atomically during the launch.
            let old = unsafe { atomic_add(c.get(), 1) };
            // SAFETY: every old value is returned once, so each element has one writer
            // (checked below: a duplicate would leave some element at 0).
            unsafe { *sp.get().add(old as usize) = 1 };
        },
    )
    .unwrap();
    assert_eq!(counter, N as i32);
    assert!(seen.iter().all(|&s| s == 1));
}

#[test]
fn other_types_add_and_wrap() {
    let mut vals = (0u32, -5i64, u64::MAX, 0.5f64, i32::MAX);
    let p = SyncPtr(&mut vals);
    thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(move || {
                let v = p.get();
                for _ in 0..1000 {
                    // SAFETY: each field is only accessed atomically during the scope, and
                    // the field pointers are aligned.
                    unsafe {
                        atomic_add(&raw mut (*v).0, 3u32);
                        atomic_add(&raw mut (*v).1, -2i64);
                        atomic_add(&raw mut (*v).3, 0.25f64);
                    }
                }
            });
        }
    });
    assert_eq!(vals.0, 12_000);
    assert_eq!(vals.1, -8_005);
    assert_eq!(vals.3, 1000.5);
    // CUDA's integer atomicAdd wraps; so does ours, returning the old value.
    // SAFETY: no other thread touches `vals` now.
    unsafe {
        assert_eq!(atomic_add(&raw mut vals.2, 2u64), u64::MAX);
        assert_eq!(atomic_add(&raw mut vals.4, 1i32), i32::MAX);
        assert_eq!(atomic_add_f32(&mut 1.5f32, 2.0), 1.5);
    }
    assert_eq!((vals.2, vals.4), (1, i32::MIN));
}

#[test]
fn ptr_atomic_add_updates_the_designated_element() {
    let mut b = Array::<COUNT>::new().unwrap();
    let p = b.ptr_mut() + 1;
    run_grid("ptr_count", CudaGrid::new([100, 1, 1], [100, 1, 1]), |_| {
        p.atomic_add(0, 3);
    })
    .unwrap();
    assert_eq!(b.to_vec().unwrap(), [0, 30_000]);
}
