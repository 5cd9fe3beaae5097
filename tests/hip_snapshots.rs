//! The HIP dialect of the kernel emitter (SPEC.md 4.8): a kernel with every construct the
//! emitter writes, pinned; `#![min_blocks_per_sm(N)]` as HIP counts it on CDNA and RDNA;
//! and every HIP snapshot of the tests (`*_hip.snap`: the figures in
//! `tests/cuda_snapshots.rs`, the warp and lock kernels in `tests/warps_and_atomics.rs`,
//! the SGEMMs in `tests/examples.rs`, these) compiled by hipcc for a CDNA and an RDNA GPU.

use std::path::{Path, PathBuf};
use std::process::Command;

use parray::prelude::*;

parray! {
    cuda(float* f, double* d, int* i, unsigned* u, long* l, uchar* b, int n) [4][256] EVERY;
    dmem float [4][256] F;
    smem float [256] TILE;
    smem int [16] BINS;
    // 52 KiB: more than a kernel declares statically, so the shared arrays are dynamic.
    smem float [13 * 1024] BIG;
    rmem float [8] REGS;
    cuda(float* f) [64][256] BOUNDED;
    dmem float [64 * 256] FLAT;
}

/// Each kind of statement and expression of a cuda body, each math method on `f32` and
/// `f64`, the integer methods, every atomic, a shuffle of each type (a constant delta past
/// the warp, a computed one), vectors in memory, shared and registers, `println!` of
/// each type, dynamic shared memory and launch bounds.
#[test]
fn every_construct() {
    let (f, d, i, u, l, b, n) = ((), (), (), (), (), (), ());
    insta::assert_snapshot!(
        "every_construct_hip",
        kernel_source!(hip(64): EVERY(f, d, i, u, l, b, n) {
            #![min_blocks_per_sm(2)]
            let t = $tid$;
            let s = TILE::create();
            let bins = BINS::create();
            let big = BIG::create();
            let r = REGS::create();
            let x = f[$F[$tid_0$][$tid_1$]$];
            let y = x.sqrt() + x.exp() + x.exp2() + x.ln() + x.log2() + x.log10() + x.sin()
                + x.cos() + x.tan() + x.tanh() + x.floor() + x.ceil() + x.round() + x.trunc()
                + x.abs() + x.min(1.0) + x.max(2.0) + x.mul_add(2.0, 3.0) + x.powf(0.5)
                + x.powi(3) + x.recip();
            let dx = d[t];
            let dy = dx.sqrt() + dx.exp() + dx.exp2() + dx.ln() + dx.log2() + dx.log10()
                + dx.sin() + dx.cos() + dx.tan() + dx.tanh() + dx.floor() + dx.ceil()
                + dx.round() + dx.trunc() + dx.abs() + dx.min(1.0) + dx.max(2.0)
                + dx.mul_add(2.0, 3.0) + dx.powf(0.5) + dx.powi(3) + dx.recip();
            let k = i[t];
            let m = k.abs() + k.min(n).max(-n);
            let q = l[t];
            let q2 = q.abs() + q.min(5).max(-5);
            let uu = u[t].min(7).max(1);
            let byte = b[t];
            let signed = byte as i8;
            let mut delta = 16u32;
            let mut acc = 0i64;
            while delta > 0 {
                acc += shfl_down(q2, delta) + shfl_down(m, delta) as i64;
                delta /= 2;
            }
            let s1 = shfl_down(uu, 40);
            let s2 = shfl_down(q as u64, 3);
            let s3 = shfl_down(y, 1) + shfl_down(x, delta + 1);
            let s4 = shfl_down(dy, 2);
            atomic_add(i + 0, 1);
            atomic_add(u + 1, s1);
            atomic_add(l + 2, acc);
            atomic_add(f + 3, s3);
            atomic_add(d + 4, s4);
            atomic_add(bins + t % 16, 1);
            let old = atomic_exch(i + 5, k);
            if atomic_cas(u + 6, 0, uu) == 0 {
                atomic_exch(u + 7, s2 as u32);
            }
            s[$tid_1$] = x;
            big[t % 1024] = y;
            #sync;
            let v = s.load4($tid_1$ / 4 * 4);
            r.store4(0, v);
            r.store4(4, Float4::new(v.w, v.z, v.y, v.x));
            let half = r.load2(2);
            let w = Double2::new(dx, dy);
            let iv = Int2::new(k, m);
            let iv4 = Int4::new(k, m, old, signed as i32);
            f.store4($F[$tid_0$][$tid_1$ / 4 * 4]$, Float4::new(half.x, half.y, r[5], -r[6]));
            f.store2(8, Float2::new(w.x as f32, iv.y as f32));
            let mut sum = 0.0f32;
            #[unroll]
            for j in 0..8 {
                sum += r[j];
            }
            #[unroll(2)]
            for j in 0..n {
                if j == 3 {
                    continue;
                }
                if j > 10 {
                    break;
                }
                sum += j as f32;
            }
            for j in 1..=$tid_1$ % 4 {
                sum -= j as f32;
            }
            {
                let inner = if sum > 0.0 { sum } else { -sum };
                sum = inner;
            }
            if t > 1000 {
                return;
            }
            let ok = !(sum < 0.0) && (iv4.w != 1 || iv4.z == 2) && (k & 3) ^ 1 != (k | 4);
            println!("t {} x {} dx {} k {} q {} uu {} byte {} s {} ok {} sum {}", t, x, dx, k, q, uu, byte, signed, ok, sum);
        })
    );
}

/// `#![min_blocks_per_sm(N)]` of blocks of T threads: CUDA's `__launch_bounds__(T, N)`;
/// HIP's second operand counts the waves each SIMD must hold, the N blocks' waves spread
/// over the four SIMDs of a CDNA compute unit or an RDNA work-group processor.
#[test]
fn launch_bounds_count_waves_per_simd_in_hip() {
    let f = ();
    let cuda = kernel_source!(BOUNDED(f) {
        #![min_blocks_per_sm(2)]
        f[$FLAT[$tid$]$] = 1.0;
    });
    let cdna = kernel_source!(hip(64): BOUNDED(f) {
        #![min_blocks_per_sm(2)]
        f[$FLAT[$tid$]$] = 1.0;
    });
    let rdna = kernel_source!(hip(32): BOUNDED(f) {
        #![min_blocks_per_sm(2)]
        f[$FLAT[$tid$]$] = 1.0;
    });
    let bounds = |source: &str| {
        let line = source.lines().find(|l| l.contains("__global__")).unwrap();
        line.split("__launch_bounds__").nth(1).unwrap()[..9].to_string()
    };
    // 2 blocks of 256 threads: 8 waves of 64 lanes on 4 SIMDs, 16 of 32 lanes.
    assert_eq!(bounds(cuda), "(256, 2) ");
    assert_eq!(bounds(cdna), "(256, 2) ");
    assert_eq!(bounds(rdna), "(256, 4) ");
    let one = kernel_source!(hip(64): BOUNDED(f) {
        #![min_blocks_per_sm(1)]
        f[$FLAT[$tid$]$] = 1.0;
    });
    // A block's 4 waves on 4 SIMDs: one each.
    assert_eq!(bounds(one), "(256, 1) ");
    insta::assert_snapshot!("launch_bounds_cdna_hip", cdna);
    insta::assert_snapshot!("launch_bounds_rdna_hip", rdna);
}

/// The HIP C++ of each `*_hip.snap` snapshot: the text after insta's header.
fn hip_snapshots() -> Vec<(String, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    let mut found = Vec::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix("_hip.snap") else {
            continue;
        };
        let text = std::fs::read_to_string(&path).unwrap();
        let source = text
            .splitn(3, "---\n")
            .nth(2)
            .unwrap_or_else(|| panic!("{name}: not an insta snapshot"));
        assert!(
            source.contains("#include <hip/hip_runtime.h>"),
            "{name} is not HIP"
        );
        found.push((stem.to_string(), source.to_string()));
    }
    found.sort();
    found
}

/// A CDNA GPU (MI200, 64-lane wavefronts) and an RDNA one (RX 6800, 32-lane wavefronts).
const TARGETS: [&str; 2] = ["gfx90a", "gfx1030"];

/// Every HIP snapshot compiles with `hipcc --genco` for both targets, warnings as errors.
/// Skipped, saying so, where hipcc is not installed, unless `PARRAY_REQUIRE_HIPCC=1`
/// (`.ci/run` installs hipcc and sets it).
#[test]
fn every_hip_snapshot_compiles_with_hipcc() {
    let snapshots = hip_snapshots();
    for pinned in [
        "cuda_snapshots__fig10_body__fig11",
        "cuda_snapshots__vectorised_copy__fig21_copies",
        "warps_and_atomics__a_warp_sums_its_lanes_with_shfl_down",
        "hip_snapshots__every_construct",
    ] {
        assert!(
            snapshots.iter().any(|(stem, _)| stem == pinned),
            "no {pinned}_hip.snap"
        );
    }
    if Command::new("hipcc").arg("--version").output().is_err() {
        assert!(
            std::env::var_os("PARRAY_REQUIRE_HIPCC").is_none_or(|v| v != "1"),
            "PARRAY_REQUIRE_HIPCC=1 but hipcc is not installed"
        );
        eprintln!(
            "skipped: hipcc is not installed (`apt-get install hipcc`); {} HIP snapshots not compiled",
            snapshots.len()
        );
        return;
    }
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hip_snapshots");
    std::fs::create_dir_all(&dir).unwrap();
    let jobs: Vec<(PathBuf, &str)> = snapshots
        .iter()
        .flat_map(|(stem, source)| {
            let file = dir.join(format!("{stem}.hip"));
            std::fs::write(&file, source).unwrap();
            TARGETS.map(|target| (file.clone(), target))
        })
        .collect();
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get());
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failures: Vec<String> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                scope.spawn(|| {
                    let mut failures = Vec::new();
                    while let Some((file, target)) =
                        jobs.get(next.fetch_add(1, std::sync::atomic::Ordering::Relaxed))
                    {
                        let out = Command::new("hipcc")
                            .args(["--genco", &format!("--offload-arch={target}"), "-Werror"])
                            .arg(file)
                            .arg("-o")
                            .arg(file.with_extension(format!("{target}.co")))
                            .output()
                            .unwrap();
                        if !out.status.success() || !out.stderr.is_empty() {
                            failures.push(format!(
                                "{} for {target}:\n{}",
                                file.display(),
                                String::from_utf8_lossy(&out.stderr)
                            ));
                        }
                    }
                    failures
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    eprintln!(
        "hipcc compiled {} HIP snapshots for {}",
        snapshots.len(),
        TARGETS.join(" and ")
    );
}
