//! Fig 21 of the paper: the SGEMM subprogram after Volkov and Demmel, written once against
//! its type parameter and run on four layouts of the same N x N matrices: row-major (Fig
//! 13), two halves (Fig 17), four vertical strips (Fig 18a) and 2x2 blocks (Fig 18b, which
//! cuBLAS cannot take). 128 threads a block as 4x32, each block a 16x256 tile of C, each
//! thread two columns of it in 32 registers, the A tile staged through padded shared
//! memory.
//!
//! On a GPU: N = 1024, 2048, 4096, 8192, each product checked against cuBLAS (relative
//! Frobenius error <= 1e-5) and timed beside it. Under the emulation: N = 256 and 512,
//! checked against an f64 CPU product. `--n 1024` chooses one size; `--source` prints the
//! kernel generated for row-major storage at N = 1024.

mod common;

use parray::prelude::*;

subprog! {
    /// `dc = da * db` for N x N matrices of the type `T`, whatever its layout.
    pub fn sgemm<T>(da, db, dc) {
        parray! {
            const N = dim(T_0);
            cuda(float* a, float* b, float* c) [[N/16][N/256]][[4][32]] CUDA;
            dmem float [[N/16][[4][4]]#T_0][[N/32][32]#T_1] A;
            dmem float [[N/32][32]#T_0][[N/256][[128][2]]#T_1] B;
            dmem float [#A_0][#B_1] C;
            dmem float [#C_0_1][#C_1_1_1] C0;
            smem float [32][17] S;               // padding avoids bank conflicts
            smem float [32#S_0][[4][4]#S_1] S0;
            rmem float [16][2] R;
        }
        detour!(CUDA(da, db, dc) {
            let s = S::create();
            let r = R::create();
            #[unroll]
            for i in 0..$size(R)$ {
                r[i] = 0.0f32;
            }
            let a = a + $A[[$tid_0_0$][[0][$tid_1_0$]]][[0][$tid_1_1$]]$;
            let b = b + $B[0][[$tid_0_1$][[$tid_1$][0]]]$;
            let c = c + $C[[$tid_0_0$][0]][[$tid_0_1$][[$tid_1$][0]]]$;
            for i in 0..$size(A_1_0)$ {
                #copy A_0_1_0(a + $A_1_0[i]$) to S0_1_0(s + $S0[$tid_1_1$][[0][$tid_1_0$]]$);
                #sync_1;
                for m in 0..$size(A_1_1)$ {
                    let b1 = b + $B_0[i][m]$;
                    let b2 = Float2::new(b1[0], b1[$B_1_1_1[1]$]);
                    #[unroll]
                    for j in 0..16 {
                        r[$R[j][0]$] += b2.x * s[$S[m][j]$];
                        r[$R[j][1]$] += b2.y * s[$S[m][j]$];
                    }
                }
                #sync_1;
            }
            #copy R(r) to C0(c);
        })
    }
}

/// One row of the report.
struct Row {
    n: usize,
    layout: &'static str,
    ms: f64,
    error: f64,
    reference: &'static str,
}

impl Row {
    fn tflops(&self) -> f64 {
        2.0 * (self.n as f64).powi(3) / (self.ms * 1e-3) / 1e12
    }
}

/// The inputs of one size, logical row-major on the host, and the reference product.
struct Inputs {
    n: usize,
    a: Vec<f32>,
    b: Vec<f32>,
    c: Vec<f64>,
    reference: &'static str,
}

/// Relative Frobenius error of `got` against `want`.
fn relative_error(got: &[f32], want: &[f64]) -> f64 {
    let (mut diff, mut norm) = (0.0f64, 0.0f64);
    for (g, w) in got.iter().zip(want) {
        diff += (*g as f64 - w).powi(2);
        norm += w.powi(2);
    }
    if got.iter().any(|g| !g.is_finite()) {
        return f64::INFINITY;
    }
    (diff / norm.max(f64::MIN_POSITIVE)).sqrt()
}

/// The f64 product of two n x n row-major matrices.
fn cpu_product(n: usize, a: &[f32], b: &[f32]) -> Vec<f64> {
    let mut c = vec![0.0f64; n * n];
    for i in 0..n {
        for k in 0..n {
            let aik = a[i * n + k] as f64;
            let row = &b[k * n..(k + 1) * n];
            for (cij, bkj) in c[i * n..(i + 1) * n].iter_mut().zip(row) {
                *cij += aik * *bkj as f64;
            }
        }
    }
    c
}

/// The four layouts of one size: the storages, the logical views, the host matrix.
macro_rules! at_size {
    ($module:ident, $n:literal) => {
        #[allow(dead_code)] // each size declares what every size may use
        mod $module {
            use super::*;

            parray! {
                const N = $n;
                pub paged float [N][N] H;
                pub dmem float [N][N] ROWS;
                pub dmem float [2][N][N/2] HALVES_STORE;
                pub float [#HALVES_STORE_1][[#HALVES_STORE_0][#HALVES_STORE_2]] HALVES;
                pub dmem float [4][N][N/4] STRIPS_STORE;
                pub float [#STRIPS_STORE_1][[#STRIPS_STORE_0][#STRIPS_STORE_2]] STRIPS;
                pub dmem float [2][2][N/2][N/2] BLOCKS_STORE;
                pub float [[#BLOCKS_STORE_0][#BLOCKS_STORE_2]][[#BLOCKS_STORE_1][#BLOCKS_STORE_3]] BLOCKS;
            }

            /// The kernel the subprogram generates for row-major storage of this size.
            pub fn source() -> &'static str {
                sgemm!(@source <ROWS>)
            }

            pub fn run(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<()> {
                let inputs = inputs(repeats, rows)?;
                rows.push(layout::<ROWS, ROWS>(&inputs, "row-major (Fig 13)", repeats, |a, b, c| {
                    sgemm!(<ROWS>(a, b, c))
                })?);
                rows.push(layout::<HALVES, HALVES_STORE>(&inputs, "halves (Fig 17)", repeats, |a, b, c| {
                    sgemm!(<HALVES>(a, b, c))
                })?);
                rows.push(layout::<STRIPS, STRIPS_STORE>(&inputs, "strips (Fig 18a)", repeats, |a, b, c| {
                    sgemm!(<STRIPS>(a, b, c))
                })?);
                rows.push(layout::<BLOCKS, BLOCKS_STORE>(&inputs, "blocks (Fig 18b)", repeats, |a, b, c| {
                    sgemm!(<BLOCKS>(a, b, c))
                })?);
                Ok(())
            }

            /// Fresh random inputs and their product: cuBLAS's on a GPU (timed, a row of
            /// the report), an f64 CPU product under the emulation.
            fn inputs(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<Inputs> {
                let n = $n;
                let seed = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64);
                let (a, b) = (common::random_values(n * n, seed), common::random_values(n * n, seed + 1));
                if parray::gpu::backend()? == parray::gpu::Backend::Emulate {
                    let c = cpu_product(n, &a, &b);
                    return Ok(Inputs { n, a, b, c, reference: "f64 CPU" });
                }
                let (mut da, mut db, mut dc) = (ROWS::create()?, ROWS::create()?, ROWS::create()?);
                da.copy_from_slice(&a)?;
                db.copy_from_slice(&b)?;
                let ms = common::median_seconds(repeats, true, || {
                    parray::gpu::cublas::sgemm(&da, &db, &mut dc)
                })? * 1e3;
                let c: Vec<f64> = dc.to_vec()?.into_iter().map(f64::from).collect();
                rows.push(Row { n, layout: "cuBLAS, row-major", ms, error: 0.0, reference: "-" });
                Ok(Inputs { n, a, b, c, reference: "cuBLAS" })
            }

            /// Store the inputs in the layout `V` (a view of the storage `S`), multiply,
            /// read C back in logical order and compare.
            fn layout<V: ViewOf<S> + DataType<Elem = f32>, S: DataType<Elem = f32>>(
                inputs: &Inputs,
                name: &'static str,
                repeats: usize,
                mut multiply: impl FnMut(&Array<S>, &Array<S>, &mut Array<S>) -> parray::Result<()>,
            ) -> parray::Result<Row> {
                let mut host = H::create()?;
                let (mut a, mut b, mut c) = (Array::<S>::new()?, Array::<S>::new()?, Array::<S>::new()?);
                host.as_mut_slice()?.copy_from_slice(&inputs.a);
                parray::copy::copy(&host, a.view_mut::<V>())?;
                host.as_mut_slice()?.copy_from_slice(&inputs.b);
                parray::copy::copy(&host, b.view_mut::<V>())?;
                c.fill(f32::NAN)?;
                let ms = common::median_seconds(repeats, true, || multiply(&a, &b, &mut c))? * 1e3;
                parray::copy::copy(c.view::<V>(), &mut host)?;
                let error = relative_error(host.as_slice()?, &inputs.c);
                Ok(Row { n: inputs.n, layout: name, ms, error, reference: inputs.reference })
            }
        }
    };
}

at_size!(n256, 256);
at_size!(n512, 512);
at_size!(n1024, 1024);
at_size!(n2048, 2048);
at_size!(n4096, 4096);
at_size!(n8192, 8192);

fn main() -> parray::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let chosen: Option<usize> = args
        .iter()
        .position(|a| a == "--n")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok());
    if args.iter().any(|a| a == "--source") {
        print!("{}", n1024::source());
        return Ok(());
    }
    let gpu = parray::gpu::backend()? == parray::gpu::Backend::Cuda;
    let sizes: Vec<usize> = match chosen {
        Some(n) => vec![n],
        None if gpu => vec![1024, 2048, 4096, 8192],
        None => vec![256, 512],
    };
    let repeats = if gpu { 10 } else { 1 };
    println!("backend: {}", if gpu { "cuda" } else { "emulate" });
    println!(
        "{:>5}  {:<20} {:>10} {:>9}  {:>9}  check (relative error)",
        "N", "layout", "time (ms)", "TFLOP/s", "of cuBLAS"
    );
    let mut ok = true;
    for n in sizes {
        let mut rows = Vec::new();
        match n {
            256 => n256::run(repeats, &mut rows)?,
            512 => n512::run(repeats, &mut rows)?,
            1024 => n1024::run(repeats, &mut rows)?,
            2048 => n2048::run(repeats, &mut rows)?,
            4096 => n4096::run(repeats, &mut rows)?,
            8192 => n8192::run(repeats, &mut rows)?,
            _ => {
                eprintln!("fig21_sgemm: N is one of 256, 512, 1024, 2048, 4096, 8192");
                std::process::exit(2);
            }
        }
        let cublas = rows.iter().find(|r| r.reference == "-").map(|r| r.tflops());
        for row in &rows {
            let share = cublas.map_or("-".to_string(), |c| {
                format!("{:.1}%", 100.0 * row.tflops() / c)
            });
            let check = if row.reference == "-" {
                "reference".to_string()
            } else {
                let good = row.error <= 1e-5;
                ok &= good;
                format!(
                    "{} ({:.1e} vs {})",
                    if good { "ok" } else { "FAILED" },
                    row.error,
                    row.reference
                )
            };
            println!(
                "{:>5}  {:<20} {:>10.3} {:>9.2}  {:>9}  {check}",
                row.n,
                row.layout,
                row.ms,
                row.tflops(),
                share
            );
        }
    }
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
