//! Seed 003's y = a x^2 + b x + c over 2^24 floats (a = 2.5, b = 2, c = 1; `--n N`: N
//! floats, a run-time size, N a multiple of 256): on CPU threads (the seed's OpenMP loop)
//! and on a GPU (the seed's kernel) with the same body, word for word: only the
//! declarations of `X`, `PART` and `T` differ between the two modules, as in the paper's
//! Fig 10 and Fig 11. Checked against a CPU loop; on a GPU, timed beside the seed's kernel
//! compiled the same way.

mod common;

/// 16 CPU threads, each a contiguous part of N / 16 elements.
mod cpu {
    use parray::prelude::*;

    parray! {
        pub const N;
        pub paged float [N] X;
        float [[16][N / 16]#X] PART;
        pthd [16] T;
    }

    pub fn quadratic(x: &Array<X>, y: &mut Array<X>, a: f32, b: f32, c: f32) -> parray::Result<()> {
        detour!(T {
            for k in 0..$dim(PART_0_1)$ {
                let i = $PART[[[$tid$][k]]]$;
                y[i] = a * x[i] * x[i] + b * x[i] + c;
            }
        })
    }
}

/// One GPU thread per element, N / 256 blocks of 256.
mod gpu {
    use parray::prelude::*;

    parray! {
        pub const N;
        pub dmem float [N] X;
        float [[N][1]#X] PART;
        cuda(float* x, float* y, float a, float b, float c) [N / 256][256] T;
    }

    pub fn quadratic(x: &Array<X>, y: &mut Array<X>, a: f32, b: f32, c: f32) -> parray::Result<()> {
        detour!(T(x, y, a, b, c) {
            for k in 0..$dim(PART_0_1)$ {
                let i = $PART[[[$tid$][k]]]$;
                y[i] = a * x[i] * x[i] + b * x[i] + c;
            }
        })
    }
}

const SEED: &str = r#"
extern "C" __global__ void calculate(float *x, float *y, float a, float b, float c, int N) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < N) {
        y[i] = a * x[i] * x[i] + b * x[i] + c;
    }
}
"#;

fn main() -> parray::Result<()> {
    let (a, b, c) = (2.5f32, 2.0f32, 1.0f32);
    // One size for both modules (`const N;` in two blocks is one size).
    let n = common::size_arg("quadratic", 1 << 24);
    cpu::N.bind(n)?;
    let xs: Vec<f32> = (0..n).map(|i| (i % 1000) as f32 * 0.001 - 0.5).collect();
    let want: Vec<f32> = xs.iter().map(|&x| a * x * x + b * x + c).collect();
    let close = |y: &[f32]| {
        y.iter()
            .zip(&want)
            .all(|(g, w)| (g - w).abs() <= 1e-6 * w.abs().max(1.0))
    };
    let mut all = true;
    // CPU threads.
    let (mut hx, mut hy) = (cpu::X::create()?, cpu::X::create()?);
    hx.copy_from_slice(&xs)?;
    let cpu_s = common::median_time(5, false, || cpu::quadratic(&hx, &mut hy, a, b, c))?;
    let ok = close(hy.as_slice()?);
    common::seed_row(
        &format!("quadratic, pthd [16] ({n})"),
        "cpu",
        cpu_s,
        None,
        ok,
    );
    all &= ok;
    // The GPU.
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let (mut dx, mut dy) = (gpu::X::create()?, gpu::X::create()?);
    dx.copy_from_slice(&xs)?;
    let gpu_s = common::median_time(repeats, true, || gpu::quadratic(&dx, &mut dy, a, b, c))?;
    let ok = close(&dy.to_vec()?);
    let seed = if device {
        let count = n as i32;
        let t = common::median_time(repeats, true, || {
            common::raw_kernel(
                "calculate",
                SEED,
                [(n / 256) as u32, 1, 1],
                [256, 1, 1],
                &[&dx, &dy, &a, &b, &c, &count],
            )
        })?;
        all &= close(&dy.to_vec()?);
        Some(t)
    } else {
        None
    };
    println!("backend: {backend}");
    common::seed_row(&format!("quadratic, cuda ({n})"), backend, gpu_s, seed, ok);
    all &= ok;
    common::check(all);
    Ok(())
}
