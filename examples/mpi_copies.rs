//! mpi thread arrays and types distributed over their ranks (SPEC.md 2.13, 3.12): an
//! N x N matrix (N = 4 x ranks) held by rows, by columns, whole on every rank and whole on
//! rank 0, and `#copy` between each pair the program needs, each of which is the MPI
//! collective its two types imply. Every rank checks its part against the matrix computed
//! on its own, `M[i][j] = 1000 i + j`, and prints `rank R: check: ok`.
//!
//! ```text
//! cargo build --release --features parray/mpi --example mpi_copies
//! mpirun -n 2 target/release/examples/mpi_copies       (or -n 4)
//! ```
//! `--panic` makes rank 1 panic in the body, `--diverge` makes it skip a `#sync`: the job
//! must fail with the rank and the message, never hang.

use std::sync::atomic::{AtomicUsize, Ordering};

use parray::copy::{self, CopyPath};
use parray::mpi::Collective;
use parray::prelude::*;

/// The value of the matrix at row `i`, column `j`.
fn m(i: usize, j: usize) -> f32 {
    (1000 * i + j) as f32
}

parray! {
    pthd [2] CPU_THREADS;
    dmem float [256] ON_DEVICE;
    cuda(float* v, float rank) [2][128] GPU_THREADS;
}

fn count(counter: &AtomicUsize, v: usize) {
    counter.fetch_add(v, Ordering::Relaxed);
}

/// What a rank's body may do: detour again, into its CPU threads and onto a GPU (the
/// emulation where there is none). Each rank's device array holds `1000 rank + i`.
fn threads_and_gpu(rank: usize) -> bool {
    let counted = AtomicUsize::new(0);
    let counter = &counted;
    let mut v = ON_DEVICE::create().expect("a device array");
    detour!(CPU_THREADS {
        count(counter, $tid$ + 1);
    })
    .expect("a pthd detour in a rank");
    detour!(GPU_THREADS(&mut v, rank as f32) {
        v[$ON_DEVICE[$tid$]$] = 1000.0 * rank + $tid$ as f32;
    })
    .expect("a cuda detour in a rank");
    let values = v.to_vec().expect("the device array, copied back");
    counted.into_inner() == 3
        && values
            .iter()
            .enumerate()
            .all(|(i, x)| *x == (1000 * rank + i) as f32)
}

/// `--panic`: what a failing rank looks like.
fn fail_on_purpose(rank: usize) {
    panic!("rank {rank} was asked to fail (--panic)");
}

/// The program's steps, for the declarations of a job of any size: each rank fills its
/// rows, then copies between the four placements, checking each against `m`.
fn steps<Rows, Cols, Whole, OnZero, RowPart>(rows: &mut Array<Rows>) -> parray::Result<bool>
where
    Rows: DataType<Elem = f32>,
    Cols: DataType<Elem = f32>,
    Whole: DataType<Elem = f32>,
    OnZero: DataType<Elem = f32>,
    RowPart: ViewOf<Rows>,
{
    let job = parray::mpi::job()?;
    let n = Whole::dims()[0];
    let part = rows.view_mut::<RowPart>();
    for ii in 0..4 {
        for j in 0..n {
            part.set([ii, j], m(job.rank * 4 + ii, j));
        }
    }
    // Rank r's columns: its part of COLS, N rows of 4.
    let cols_ok = |cols: &Array<Cols>| -> parray::Result<bool> {
        let part = cols.to_vec()?;
        Ok((0..n).all(|i| (0..4).all(|jj| part[i * 4 + jj] == m(i, job.rank * 4 + jj))))
    };
    let whole: Vec<f32> = (0..n * n).map(|k| m(k / n, k % n)).collect();
    let mut ok = true;
    let mut step = |what: &str, path: CopyPath, want: Collective, good: bool| {
        println!("rank {}: {what}: {path}", job.rank);
        ok &= path == CopyPath::Exchange(want) && good;
    };

    let mut cols = Array::<Cols>::new()?;
    let path = copy::copy(rows, &mut cols)?;
    step(
        "rows to columns",
        path,
        Collective::AllToAll,
        cols_ok(&cols)?,
    );

    let mut all = Array::<Whole>::new()?;
    let path = copy::copy(&cols, &mut all)?;
    step(
        "columns to every rank",
        path,
        Collective::AllGather,
        all.to_vec()? == whole,
    );

    let mut zero = Array::<OnZero>::new()?;
    let path = copy::copy(rows, &mut zero)?;
    let good = match job.rank {
        0 => zero.to_vec()? == whole,
        _ => zero.extent() == 0,
    };
    step("rows to rank 0", path, Collective::Gather { root: 0 }, good);

    let mut back = Array::<Cols>::new()?;
    let path = copy::copy(&zero, &mut back)?;
    step(
        "rank 0 to columns",
        path,
        Collective::Scatter { root: 0 },
        cols_ok(&back)?,
    );

    let mut again = Array::<Whole>::new()?;
    let path = copy::copy(&zero, &mut again)?;
    step(
        "rank 0 to every rank",
        path,
        Collective::Broadcast { root: 0 },
        again.to_vec()? == whole,
    );

    let mut local = Array::<Cols>::new()?;
    let path = copy::copy(&again, &mut local)?;
    step(
        "every rank to columns",
        path,
        Collective::Local,
        cols_ok(&local)?,
    );
    Ok(ok)
}

mod two {
    use super::*;

    parray! {
        pub mpi [2] P;
        // Rank r holds rows 4r .. 4r + 3, or columns 4r .. 4r + 3, of the 8 x 8 matrix;
        // or each rank all of it, or rank 0 all of it.
        pub paged float [[#P][4]][8] ROWS;
        pub paged float [8][[#P][4]] COLS;
        pub paged float [8][8] WHOLE;
        pub paged float [1#P][8][8] ON_ZERO;
        // One rank's part of ROWS, as the rank indexes it.
        pub paged float [#ROWS_0_1][#ROWS_1] ROW_PART;
    }

    /// Every rank runs the body once; `--panic` and `--diverge` break it on rank 1.
    pub fn run(panic: bool, diverge: bool) -> parray::Result<bool> {
        detour!(P {
            if panic && $tid$ == 1 {
                fail_on_purpose($tid$);
            }
            if !(diverge && $tid$ == 1) {
                #sync;
            }
        })?;
        let mut rows = ROWS::create()?;
        steps::<ROWS, COLS, WHOLE, ON_ZERO, ROW_PART>(&mut rows)
    }
}

mod four {
    use super::*;

    parray! {
        pub mpi [4] P;
        pub paged float [[#P][4]][16] ROWS;
        pub paged float [16][[#P][4]] COLS;
        pub paged float [16][16] WHOLE;
        pub paged float [1#P][16][16] ON_ZERO;
        pub paged float [#ROWS_0_1][#ROWS_1] ROW_PART;
    }

    pub fn run() -> parray::Result<bool> {
        let failed = AtomicUsize::new(0);
        let failures = &failed;
        detour!(P {
            if threads_and_gpu($tid$) {
                println!("rank {}: nested detours: ok", $tid$);
            } else {
                count(failures, 1);
            }
            #sync;
        })?;
        if failed.into_inner() > 0 {
            return Ok(false);
        }
        let mut rows = ROWS::create()?;
        steps::<ROWS, COLS, WHOLE, ON_ZERO, ROW_PART>(&mut rows)
    }
}

/// Rows of a 2 x 2 grid of ranks, swapped: ranks 1 and 2 exchange their parts.
mod grid {
    use super::*;

    parray! {
        pub mpi [2][2] Q;
        pub paged float [[#Q][2]][8] BY_RANK;
        // The same rows with the two digits of the rank swapped.
        pub paged float [[#BY_RANK_0_0_1][#BY_RANK_0_0_0][#BY_RANK_0_1]][#BY_RANK_1] SWAPPED;
        pub paged float [#BY_RANK_0_1][#BY_RANK_1] PART;
    }

    pub fn run() -> parray::Result<bool> {
        let job = parray::mpi::job()?;
        let mut mine = BY_RANK::create()?;
        detour!(Q {
            for ii in 0..2 {
                for j in 0..8 {
                    mine[$PART[ii][j]$] = m($tid$ * 2 + ii, j);
                }
            }
        })?;
        let mut swapped = BY_RANK::create()?;
        let path = copy::copy(&mine, swapped.view_mut::<SWAPPED>())?;
        println!("rank {}: rows of a swapped grid: {path}", job.rank);
        // Rank r = 2a + b now holds the rows of rank 2b + a.
        let from = (job.rank % 2) * 2 + job.rank / 2;
        let want: Vec<f32> = (0..16).map(|k| m(from * 2 + k / 8, k % 8)).collect();
        Ok(path == CopyPath::Exchange(Collective::PointToPoint) && swapped.to_vec()? == want)
    }
}

fn main() -> parray::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let flag = |f: &str| args.iter().any(|a| a == f);
    let (panic, diverge) = (flag("--panic"), flag("--diverge"));
    let job = parray::mpi::job()?;
    let ok = match job.size {
        4 => four::run()? && grid::run()?,
        // Another size is the declarations' error: `P` has 2 processes.
        _ => two::run(panic, diverge)?,
    };
    println!(
        "rank {}: check: {}",
        job.rank,
        if ok { "ok" } else { "FAILED" }
    );
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
