//! Devices as values: several devices in one process, memory that remembers its device,
//! launches that go to their arguments' device, and a current device per thread.
//!
//! The tests that name `Device::emulated` run on every machine. Those that use the
//! backend's devices (`Device::nth`) run on GPUs under `PARRAY_BACKEND=cuda` when the
//! machine has two, and skip when it has fewer.

#[macro_use]
mod common;

#[path = "common/child.rs"]
mod child;

use std::sync::atomic::{AtomicBool, Ordering};

use child::{in_child, in_child_with, is_child};
use parray_runtime::devices::{backend, time_ms_on, Backend, Timing};
use parray_runtime::{Array, DataType, DetourSite, Device, Error, Ptr, PtrMut, Result};

flat_types! {
    V1 = Dmem f32 [1];
    V2 = Dmem f32 [2];
    V100 = Dmem f32 [100];
    V300 = Dmem f32 [300];
    P = Paged f32 [2];
    H = Pinned f32 [1];
}

/// The site every launch of these tests claims.
const SITE: &DetourSite = &DetourSite {
    array: "TA",
    file: "tests/devices.rs",
    line: 1,
};

/// `c[i] = a[i] + b[i]` for `i < n`; `ran` is set when the emulation runs a thread.
fn vector_add(a: Ptr<f32>, b: Ptr<f32>, c: PtrMut<f32>, n: usize, ran: &AtomicBool) -> Result<()> {
    common::vector_add(SITE, 64, [a, b], c, n, ran)
}

/// dmem on `device` holding `values`.
fn dmem_on<T: DataType<Elem = f32>>(device: &Device, values: &[f32]) -> Array<T> {
    let mut b = Array::new_on(device).unwrap();
    b.copy_from_slice(values).unwrap();
    b
}

fn ramp(n: usize, step: f32) -> Vec<f32> {
    (0..n).map(|i| step * i as f32).collect()
}

/// Devices 0 and 1 of the backend, or `None` (said) when it has fewer than two.
fn two_devices() -> Option<(Device, Device)> {
    if Device::count().unwrap() < 2 {
        eprintln!("skipped: the backend has fewer than two devices");
        return None;
    }
    Some((Device::nth(0).unwrap(), Device::nth(1).unwrap()))
}

#[test]
fn two_emulated_devices_live_in_one_process() {
    let (d0, d1) = (Device::emulated(0), Device::emulated(1));
    assert_ne!(d0, d1);
    assert_eq!(d1, Device::emulated(1), "equal by kind and ordinal");
    assert_eq!(
        (d0.name(), d1.name()),
        ("emulated:0".into(), "emulated:1".into())
    );
    assert_eq!(format!("{d1:?}"), "Device(emulated:1)");
    assert!(d1.is_emulated() && d1.ordinal() == 1);
    assert!(d1.context().is_none() && d1.stream().is_none());

    let (a, b) = (dmem_on::<V2>(&d0, &[1.0, 2.0]), dmem_on::<V1>(&d1, &[3.0]));
    assert_eq!((a.device(), b.device()), (Some(&d0), Some(&d1)));
    assert_eq!(
        (a.to_vec().unwrap(), b.to_vec().unwrap()),
        (vec![1.0, 2.0], vec![3.0])
    );
    // Host memory is on no device, wherever it was asked for.
    let p = Array::<P>::new_on(&d1).unwrap();
    assert_eq!(p.device(), None);
    // `Array::new` puts dmem on the current device.
    let c = d1.with_current(|| Array::<V2>::new().unwrap());
    assert_eq!(c.device(), Some(&d1));
}

#[test]
fn a_launch_runs_on_its_arguments_device() {
    let Some((d0, d1)) = two_devices() else {
        return;
    };
    const N: usize = 300;
    let (a, b, mut c) = (
        dmem_on::<V300>(&d1, &ramp(N, 1.0)),
        dmem_on::<V300>(&d1, &ramp(N, 0.5)),
        dmem_on::<V300>(&d1, &[0.0; N]),
    );
    // Device 0 is current; the arrays take the launch to device 1. On GPUs, a kernel
    // launched on GPU 0 could not reach GPU 1's memory.
    d0.with_current(|| {
        let ran = AtomicBool::new(false);
        vector_add(a.ptr(), b.ptr(), c.ptr_mut(), N, &ran).unwrap();
        assert_eq!(
            ran.into_inner(),
            d1.is_emulated(),
            "the emulation runs only emulated devices"
        );
    });
    assert_eq!(c.to_vec().unwrap(), ramp(N, 1.5));
    if let Some(ctx) = d1.context() {
        assert_eq!(ctx.ordinal(), 1, "Device::nth(1) is GPU 1");
    }
}

#[test]
fn arrays_of_two_devices_do_not_mix() {
    let (d0, d1) = (Device::emulated(0), Device::emulated(1));
    let (a, b, mut c) = (
        dmem_on::<V1>(&d1, &[1.0]),
        dmem_on::<V1>(&d1, &[2.0]),
        dmem_on::<V1>(&d0, &[0.0]),
    );
    let ran = AtomicBool::new(false);
    let err = vector_add(a.ptr(), b.ptr(), c.ptr_mut(), 1, &ran).unwrap_err();
    assert!(!ran.load(Ordering::Relaxed), "nothing runs");
    assert!(
        matches!(err, Error::DeviceMismatch { site: SITE, first: 0, argument: 2, first_device, device }
            if first_device == d1.id() && device == d0.id()),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "parray: TA, detour at tests/devices.rs:1: kernel argument 2 is on emulated:0, but \
         argument 0 is on emulated:1; the arrays of one launch must be on one device"
    );
    // Memory that is not dmem is refused first, as on one device.
    let host = Array::<H>::new().unwrap();
    let err = vector_add(host.ptr(), b.ptr(), c.ptr_mut(), 1, &ran).unwrap_err();
    assert!(
        matches!(err, Error::NotDeviceMemory { type_name: "H", .. }),
        "{err:?}"
    );
}

#[test]
fn emulated_and_gpu_arrays_do_not_mix() {
    let Ok(gpu) = Device::cuda(0) else {
        eprintln!("skipped: this machine has no GPU");
        return;
    };
    assert_eq!(gpu.name(), "cuda:0");
    assert_eq!(Device::cuda(0).unwrap(), gpu, "one device per ordinal");
    let emulated = Device::emulated(0);
    let (a, b, mut c) = (
        dmem_on::<V1>(&gpu, &[1.0]),
        dmem_on::<V1>(&emulated, &[2.0]),
        dmem_on::<V1>(&gpu, &[0.0]),
    );
    let ran = AtomicBool::new(false);
    let err = vector_add(a.ptr(), b.ptr(), c.ptr_mut(), 1, &ran).unwrap_err();
    assert!(
        matches!(
            err,
            Error::DeviceMismatch {
                first: 0,
                argument: 1,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(err
        .to_string()
        .contains("argument 1 is on emulated:0, but argument 0 is on cuda:0"));
}

#[test]
fn threads_each_work_on_their_current_device() {
    let devices = match two_devices() {
        Some((d0, d1)) => [d0, d1],
        None => [Device::emulated(0), Device::emulated(1)],
    };
    const N: usize = 100;
    std::thread::scope(|s| {
        for (k, device) in devices.iter().enumerate() {
            s.spawn(move || {
                device.with_current(|| {
                    assert_eq!(Device::current().unwrap(), *device);
                    let step = k as f32 + 1.0;
                    let mut a = Array::<V100>::new().unwrap();
                    let mut b = Array::<V100>::new().unwrap();
                    let mut c = Array::<V100>::new().unwrap();
                    a.copy_from_slice(&ramp(N, step)).unwrap();
                    b.fill(1.0).unwrap();
                    assert_eq!(c.device(), Some(device));
                    let ran = AtomicBool::new(false);
                    vector_add(a.ptr(), b.ptr(), c.ptr_mut(), N, &ran).unwrap();
                    let want: Vec<f32> = ramp(N, step).iter().map(|x| x + 1.0).collect();
                    assert_eq!(c.to_vec().unwrap(), want);
                });
            });
        }
    });
}

#[test]
fn the_current_device_is_per_thread_and_restored() {
    // In a thread of its own, so that the device it makes current stays with it.
    std::thread::spawn(|| {
        let (d0, d1) = (Device::emulated(0), Device::emulated(1));
        d1.make_current();
        assert_eq!(Device::current().unwrap(), d1);
        let other = std::thread::spawn(|| Device::current().unwrap())
            .join()
            .unwrap();
        assert_eq!(
            other,
            Device::nth(0).unwrap(),
            "a new thread starts on device 0"
        );
        d0.with_current(|| assert_eq!(Device::current().unwrap(), d0));
        assert_eq!(Device::current().unwrap(), d1);
        let unwound = std::panic::catch_unwind(|| d0.with_current(|| panic!("inside")));
        assert!(unwound.is_err());
        assert_eq!(Device::current().unwrap(), d1, "restored after a panic too");
    })
    .join()
    .unwrap();
}

#[test]
fn the_emulation_numbers_its_devices() {
    if !is_child() {
        in_child("the_emulation_numbers_its_devices", "emulate");
        return;
    }
    assert_eq!(backend().unwrap(), Backend::Emulate);
    assert_eq!(
        Device::count().unwrap(),
        2,
        "two unless PARRAY_EMULATED_DEVICES says"
    );
    assert_eq!(Device::nth(1).unwrap(), Device::emulated(1));
    assert_eq!(Device::current().unwrap(), Device::emulated(0));
    let err = Device::nth(2).unwrap_err();
    assert_eq!(
        err.to_string(),
        "parray: there is no device 2: this process has 2 emulated devices \
         (PARRAY_EMULATED_DEVICES)"
    );
}

#[test]
fn emulated_devices_are_counted_from_the_environment() {
    if !is_child() {
        let test = "emulated_devices_are_counted_from_the_environment";
        in_child_with(test, "emulate", &[("PARRAY_EMULATED_DEVICES", "3")]);
        in_child_with(test, "emulate", &[("PARRAY_EMULATED_DEVICES", "none")]);
        return;
    }
    match std::env::var("PARRAY_EMULATED_DEVICES").unwrap().as_str() {
        "3" => {
            assert_eq!(Device::count().unwrap(), 3);
            assert_eq!(Device::nth(2).unwrap().name(), "emulated:2");
        }
        _ => {
            let err = Device::nth(0).unwrap_err();
            assert_eq!(
                err.to_string(),
                "parray: PARRAY_EMULATED_DEVICES=\"none\" is not a number of devices (1 or more)"
            );
            // dmem needs a current device, so it fails the same way; host kinds do not.
            let dmem = Array::<V1>::new().unwrap_err();
            assert_eq!(dmem.to_string(), err.to_string());
            Array::<H>::new().unwrap();
        }
    }
}

#[test]
fn the_emulation_s_times_say_they_are_emulated() {
    let time = time_ms_on(&Device::emulated(0), || Ok(())).unwrap();
    assert!(time.emulated && time.ms >= 0.0);
    assert!(time.to_string().ends_with(" ms (emulated)"), "{time}");
    let gpu = Timing {
        ms: 1.25,
        emulated: false,
    };
    assert_eq!(
        (gpu.to_string(), format!("{gpu:.1}"), gpu.note()),
        ("1.250 ms".into(), "1.2 ms".into(), "")
    );
    let emulated = Timing {
        emulated: true,
        ..gpu
    };
    assert_eq!(
        (format!("{emulated:.1}"), emulated.note()),
        ("1.2 ms (emulated)".into(), " (emulated)")
    );
}
