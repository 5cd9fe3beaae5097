//! The paper's evolution of matrix multiplication, every variant that exists so far, in
//! one table: `cargo run --release --example matmul`.

mod common;
#[allow(dead_code)]
#[path = "fig08_matmul_serial.rs"]
mod fig08;
#[allow(dead_code)]
#[path = "fig10_matmul_pthd.rs"]
mod fig10;

/// Print one variant's row as soon as it is measured; true when its check passed.
macro_rules! row {
    ($run:expr) => {{
        let run = $run?;
        run.row();
        run.ok
    }};
}

fn main() -> parray::Result<()> {
    common::Run::header();
    let checks = [row!(fig08::run()), row!(fig10::run())];
    if checks.contains(&false) {
        std::process::exit(1);
    }
    Ok(())
}
