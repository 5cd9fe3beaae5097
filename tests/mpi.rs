//! mpi thread arrays on a real MPI (Open MPI): `examples/mpi_copies` under `mpirun -n 2`
//! and `-n 4`, each rank checking every collective against the matrix computed on its
//! own; and the ways a job fails, each promptly with a message (never a hang: every run
//! has `mpirun --timeout`). Built only with the `mpi` feature:
//! `cargo test --features mpi --test mpi` (CI runs it; SPEC.md 3.12).

#![cfg(feature = "mpi")]

use std::path::PathBuf;
use std::process::{Command, Output};
use std::sync::OnceLock;

/// The mpi examples, built once in release mode as a user builds them.
fn example(name: &str) -> PathBuf {
    static BUILT: OnceLock<PathBuf> = OnceLock::new();
    let dir = BUILT.get_or_init(|| {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let status = Command::new(env!("CARGO"))
            .args(["build", "--release", "--quiet", "--features", "mpi"])
            .args(["--example", "mpi_copies", "--example", "fft3d"])
            .current_dir(&root)
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the mpi examples failed");
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or(root.join("target"), PathBuf::from);
        target.join("release/examples")
    });
    dir.join(name)
}

/// `mpirun -n ranks mpi_copies args`.
fn mpirun(ranks: usize, args: &[&str]) -> Output {
    mpirun_example("mpi_copies", ranks, args)
}

/// `mpirun -n ranks NAME args`, as root where CI runs as root, oversubscribed on a machine
/// with fewer cores, ended by mpirun after 120 seconds.
fn mpirun_example(name: &str, ranks: usize, args: &[&str]) -> Output {
    Command::new("mpirun")
        .args([
            "-n",
            &ranks.to_string(),
            "--oversubscribe",
            "--timeout",
            "120",
        ])
        .arg(example(name))
        .args(args)
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .output()
        .expect("mpirun runs (Open MPI's openmpi-bin)")
}

fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// Every rank of a job of `ranks` prints `rank R: check: ok`, and each copy was the
/// collective its types imply.
fn every_rank_checks(ranks: usize, collectives: &[&str]) {
    let out = mpirun(ranks, &[]);
    let all = text(&out);
    assert!(out.status.success(), "mpirun -n {ranks} failed:\n{all}");
    for r in 0..ranks {
        assert!(
            all.contains(&format!("rank {r}: check: ok")),
            "rank {r}:\n{all}"
        );
        for c in collectives {
            assert!(
                all.contains(&format!("rank {r}: {c}")),
                "rank {r}, {c}:\n{all}"
            );
        }
    }
}

const COLLECTIVES: [&str; 6] = [
    "rows to columns: an all-to-all",
    "columns to every rank: an all-gather",
    "rows to rank 0: a gather to rank 0",
    "rank 0 to columns: a scatter from rank 0",
    "rank 0 to every rank: a broadcast from rank 0",
    "every rank to columns: no communication",
];

#[test]
fn two_ranks() {
    every_rank_checks(2, &COLLECTIVES);
}

#[test]
fn four_ranks() {
    let mut all = COLLECTIVES.to_vec();
    all.push("rows of a swapped grid: point-to-point messages");
    all.push("nested detours: ok");
    every_rank_checks(4, &all);
}

#[test]
fn a_rank_count_other_than_the_arrays_is_an_error() {
    let out = mpirun(3, &[]);
    assert!(!out.status.success());
    assert!(
        text(&out)
            .contains("`P` has 2 processes, but this job runs 3: start it with `mpirun -n 2`"),
        "{}",
        text(&out)
    );
}

#[test]
fn without_mpirun_the_job_is_one_rank() {
    let out = Command::new(example("mpi_copies"))
        .output()
        .expect("the example runs");
    assert!(!out.status.success());
    assert!(text(&out).contains("but this job runs 1"), "{}", text(&out));
}

#[test]
fn a_panicking_rank_ends_the_job_with_its_message() {
    let out = mpirun(2, &["--panic"]);
    assert!(!out.status.success());
    let all = text(&out);
    assert!(
        all.contains("P, detour at examples/mpi_copies.rs:")
            && all.contains("rank 1 of 2 panicked at examples/mpi_copies.rs:")
            && all.contains("rank 1 was asked to fail (--panic)"),
        "{all}"
    );
}

#[test]
fn ranks_at_different_syncs_are_an_error_on_every_rank() {
    let out = mpirun(2, &["--diverge"]);
    assert!(!out.status.success());
    let all = text(&out);
    let message = "rank 0 is at the #sync at line";
    assert!(
        all.matches(message).count() >= 2 && all.contains("rank 1 is at the end of the detour"),
        "{all}"
    );
}

/// The cluster FFT on 1, 2 and 4 ranks (N = 32, the CPU's transforms under the emulation),
/// each checked on rank 0 against a 3-D FFT in f64.
#[test]
fn the_cluster_fft() {
    for ranks in [1, 2, 4] {
        let out = mpirun_example("fft3d", ranks, &["--n", "32"]);
        let all = text(&out);
        assert!(
            out.status.success(),
            "fft3d on {ranks} ranks failed:\n{all}"
        );
        assert!(
            all.contains(&format!("fft3d N=32 ranks={ranks} ")) && all.contains("check: ok"),
            "{all}"
        );
    }
}
