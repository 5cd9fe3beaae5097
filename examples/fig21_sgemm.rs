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
//! kernel generated for row-major storage at N = 1024, `--source hip` the same in HIP C++.

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
                    let b2 = if $cnt(B_1_1_1)$ {
                        b1.load2(0)
                    } else {
                        Float2::new(b1[0], b1[$B_1_1_1[1]$])
                    };
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

use common::gemm::{self, Inputs, Row};

/// Fig 21 on the four layouts of one size, beside cuBLAS on a GPU.
macro_rules! at_size {
    ($module:ident, $n:literal) => {
        #[allow(dead_code)] // each size declares what every size may use
        pub mod $module {
            use super::*;

            common::gemm::square_layouts!(float, $n);

            /// The kernel the subprogram generates for row-major storage of this size: its
            /// CUDA C, or its HIP C++ for a CDNA GPU.
            pub fn source(hip: bool) -> &'static str {
                if hip {
                    sgemm!(@source hip(64) <ROWS>)
                } else {
                    sgemm!(@source <ROWS>)
                }
            }

            /// cuBLAS's row (on a GPU) and Fig 21's on row-major storage; the inputs.
            pub fn row_major(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<Inputs> {
                let inputs = Inputs::new::<ROWS, ROWS, ROWS>(($n, $n, $n), repeats, rows)?;
                rows.push(inputs.run::<H, H, H, ROWS, ROWS, ROWS, ROWS, ROWS, ROWS>(
                    "fig21", "row-major (Fig 13)", repeats, |a, b, c| sgemm!(<ROWS>(a, b, c)),
                )?);
                Ok(inputs)
            }

            pub fn run(repeats: usize, rows: &mut Vec<Row>) -> parray::Result<()> {
                let inputs = row_major(repeats, rows)?;
                rows.push(inputs.run::<H, H, H, HALVES, HALVES_STORE, HALVES, HALVES_STORE, HALVES, HALVES_STORE>(
                    "fig21", "halves (Fig 17)", repeats, |a, b, c| sgemm!(<HALVES>(a, b, c)),
                )?);
                rows.push(inputs.run::<H, H, H, STRIPS, STRIPS_STORE, STRIPS, STRIPS_STORE, STRIPS, STRIPS_STORE>(
                    "fig21", "strips (Fig 18a)", repeats, |a, b, c| sgemm!(<STRIPS>(a, b, c)),
                )?);
                rows.push(inputs.run::<H, H, H, BLOCKS, BLOCKS_STORE, BLOCKS, BLOCKS_STORE, BLOCKS, BLOCKS_STORE>(
                    "fig21", "blocks (Fig 18b)", repeats, |a, b, c| sgemm!(<BLOCKS>(a, b, c)),
                )?);
                Ok(())
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

/// Fig 21 at each size (N = 1024 to 8192 on a GPU, 256 and 512 under the emulation, or
/// `--n N`): the rows of the report, cuBLAS's among them on a GPU.
fn rows() -> parray::Result<Vec<Row>> {
    let repeats = gemm::repeats()?;
    let mut rows = Vec::new();
    for n in gemm::sizes(&[1024, 2048, 4096, 8192], &[256, 512])? {
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
    }
    Ok(rows)
}

/// Fig 21 (N/16 x N/256 blocks of 128 threads) and, on a GPU, cuBLAS on row-major
/// storage at N = 1024: rows of the main example's table.
pub fn matmul_rows() -> parray::Result<Vec<common::Run>> {
    let mut rows = Vec::new();
    n1024::row_major(gemm::repeats()?, &mut rows)?;
    rows.iter()
        .map(|r| match r.kernel {
            "cuBLAS" => r.to_run("cuBLAS SGEMM", 0),
            _ => r.to_run("fig21 SGEMM (#copy)", 1024 * 1024 / 32),
        })
        .collect()
}

/// Measures and prints the table; whether every result checked.
pub fn run() -> parray::Result<bool> {
    Ok(gemm::report(&rows()?))
}

fn main() -> parray::Result<()> {
    gemm::example_main(|hip| Ok(n1024::source(hip)), rows)
}
