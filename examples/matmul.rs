//! The paper's evolution of matrix multiplication in one table, from one CPU thread (Fig 8)
//! to CPU threads (Fig 10), the same body on GPU threads (Fig 11), a thread per element
//! (Figs 12, 13), other storage layouts under the same body (Figs 17, 18), and the SGEMM
//! of Fig 21, a tuned SGEMM subprogram and the bf16 and TF32 tensor-core GEMMs, with
//! cuBLAS beside them on a GPU:
//! `cargo run --release --example matmul`. Without a GPU the cuda rows run on the CPU
//! emulation (`backend` says which).

// Each included figure brings its own copy of `common`, as when it is built alone.
#![allow(clippy::duplicate_mod)]

mod common;
#[allow(dead_code)]
#[path = "fig08_matmul_serial.rs"]
mod fig08;
#[allow(dead_code)]
#[path = "fig10_matmul_pthd.rs"]
mod fig10;
#[allow(dead_code)]
#[path = "fig11_matmul_gpu4.rs"]
mod fig11;
#[allow(dead_code)]
#[path = "fig12_matmul_gpu.rs"]
mod fig12;
#[allow(dead_code)]
#[path = "fig13_matmul_gpu.rs"]
mod fig13;
#[allow(dead_code)]
#[path = "fig17_matmul_halves.rs"]
mod fig17;
#[allow(dead_code)]
#[path = "fig18_matmul_strips.rs"]
mod fig18a;
#[allow(dead_code)]
#[path = "fig18_matmul_blocks.rs"]
mod fig18b;
#[allow(dead_code)]
#[path = "fig21_sgemm.rs"]
mod fig21;
// The GEMMs their own examples run, from the examples' library (built once).
use parray_examples::{gemm_bf16, sgemm};

/// Print one variant's row as soon as it is measured; true when its check passed.
macro_rules! row {
    ($run:expr) => {{
        let run = $run?;
        run.row();
        run.ok
    }};
}

/// Print several rows; true when all their checks passed.
macro_rules! rows {
    ($runs:expr) => {{
        let runs = $runs?;
        runs.iter().for_each(|run| run.row());
        runs.iter().all(|run| run.ok)
    }};
}

fn main() -> parray::Result<()> {
    // The backend first: its notice (no GPU here) goes before the table, not inside it.
    parray::gpu::backend()?;
    common::Run::header();
    let checks = [
        row!(fig08::run()),
        row!(fig10::run()),
        row!(fig11::run()),
        row!(fig12::run()),
        row!(fig13::run()),
        row!(fig17::run()),
        row!(fig18a::run()),
        row!(fig18b::run()),
        // Fig 21 and the tuned SGEMM subprogram (cuBLAS beside them on a GPU).
        rows!(fig21::matmul_rows()),
        rows!(sgemm::matmul_rows()),
        // The bf16 and TF32 tensor-core GEMM subprograms (cuBLAS beside them on a GPU).
        rows!(gemm_bf16::matmul_rows()),
    ];
    if checks.contains(&false) {
        std::process::exit(1);
    }
    Ok(())
}
