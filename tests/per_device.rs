//! Devices as values through the macros: a pthd thread per device, each creating its arrays
//! on its own device and launching there (two emulated devices here; two GPUs under
//! `PARRAY_BACKEND=cuda` on a machine that has them).

use std::sync::Mutex;

use parray::prelude::*;
use parray::Device;

parray! {
    pub dmem float [256] V;
    pub pthd [2] PER_DEVICE;
    pub cuda(float* v, float k) [2][128] FILL;
}

/// Devices 0 and 1 of the backend, or two emulated devices where it has fewer.
fn two_devices() -> [Device; 2] {
    match (Device::nth(0), Device::nth(1)) {
        (Ok(a), Ok(b)) => [a, b],
        _ => [Device::emulated(0), Device::emulated(1)],
    }
}

/// Thread `t`'s work: an array on its device, filled by a detour that runs there.
fn work(devices: &[Device; 2], t: usize, results: &Mutex<Vec<(usize, Vec<f32>)>>) {
    let device = &devices[t];
    let mut v = V::create_on(device).expect("an array on the thread's device");
    assert_eq!(v.device(), Some(device));
    detour!(FILL(&mut v, t as f32 * 1000.0) {
        v[$V[$tid$]$] = k + $tid$ as f32;
    })
    .expect("the detour runs on the array's device");
    results
        .lock()
        .unwrap()
        .push((t, v.to_vec().expect("a copy back")));
}

#[test]
fn a_pthd_thread_per_device() -> parray::Result<()> {
    let devices = two_devices();
    let results = Mutex::new(Vec::new());
    let (devices_ref, results_ref) = (&devices, &results);
    detour!(PER_DEVICE {
        work(devices_ref, $tid$, results_ref);
    })?;
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(t, _)| *t);
    for (t, values) in results {
        let want: Vec<f32> = (0..256).map(|i| t as f32 * 1000.0 + i as f32).collect();
        assert_eq!(values, want, "thread {t}");
    }
    Ok(())
}

parray! {
    pub cuda(float* x, float* y) [2][128] COPY;
}

#[test]
fn arrays_of_two_devices_in_one_detour_are_refused() -> parray::Result<()> {
    let [d0, d1] = two_devices();
    let (x, mut y) = (V::create_on(&d0)?, V::create_on(&d1)?);
    let err = detour!(COPY(&x, &mut y) {
        y[$V[$tid$]$] = x[$V[$tid$]$];
    })
    .unwrap_err();
    assert!(
        matches!(
            err,
            parray::Error::DeviceMismatch {
                first: 0,
                argument: 1,
                ..
            }
        ),
        "{err}"
    );
    Ok(())
}
