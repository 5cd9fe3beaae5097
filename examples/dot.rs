//! Seed 001's dot product: N floats (33 * 1024, or `--n N`), 32 blocks of 256 threads,
//! each thread a grid-stride sum, each block a shared-memory tree reduction, the 32
//! partial sums added on the host; the seed's closed-form check, a[i] = i, b[i] = 2i
//! gives 2 * sum of i^2.
//! On a GPU, timed beside the seed's kernel compiled the same way.

mod common;

use parray::prelude::*;

parray! {
    const N;                                        // the number of floats
    const THREADS = 256;
    const BLOCKS = 32;
    dmem float [N] V;
    dmem float [BLOCKS] PARTIAL;
    smem float [THREADS] CACHE;
    cuda(float* a, float* b, float* c) [BLOCKS][THREADS] DOT;
}

/// The seed's kernel (its `N`, `threadsPerBlock` written in) for `n` floats.
fn seed_kernel(n: usize) -> &'static str {
    let source = format!(
        r#"
extern "C" __global__ void dot(float *a, float *b, float *c) {{
    __shared__ float cache[256];
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int cacheIndex = threadIdx.x;
    float tmp = 0;
    while (tid < {n}) {{
        tmp += a[tid] * b[tid];
        tid += blockDim.x * gridDim.x;
    }}
    cache[cacheIndex] = tmp;
    __syncthreads();
    int i = blockDim.x / 2;
    while (i != 0) {{
        if (cacheIndex < i) cache[cacheIndex] += cache[cacheIndex + i];
        __syncthreads();
        i /= 2;
    }}
    if (cacheIndex == 0) c[blockIdx.x] = cache[0];
}}
"#
    );
    // One per run, kept for the launches.
    Box::leak(source.into_boxed_str())
}

fn dot(a: &Array<V>, b: &Array<V>, c: &mut Array<PARTIAL>) -> parray::Result<()> {
    detour!(DOT(a, b, c) {
        let cache = CACHE::create();
        let mut tmp = 0.0f32;
        let mut i = $tid$;
        while i < $size(V)$ {
            tmp += a[$V[i]$] * b[$V[i]$];
            i += $size(DOT)$;
        }
        cache[$tid_1$] = tmp;
        #sync;
        let mut half = $size(CACHE)$ / 2;
        while half != 0 {
            if $tid_1$ < half {
                cache[$tid_1$] += cache[$tid_1$ + half];
            }
            #sync;
            half /= 2;
        }
        if $tid_1$ == 0 {
            c[$PARTIAL[$tid_0$]$] = cache[0];
        }
    })
}

fn main() -> parray::Result<()> {
    N.bind(common::size_arg("dot", 33 * 1024))?;
    let n = host! { $size(V)$ };
    let (mut a, mut b, mut c) = (V::create()?, V::create()?, PARTIAL::create()?);
    a.copy_from_slice(&(0..n).map(|i| i as f32).collect::<Vec<_>>())?;
    b.copy_from_slice(&(0..n).map(|i| (i * 2) as f32).collect::<Vec<_>>())?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let parray = common::median_time(repeats, true, || dot(&a, &b, &mut c))?;
    let sum: f64 = c.to_vec()?.iter().map(|&x| f64::from(x)).sum();
    // The seed's check: 2 * sum_squares(N - 1), sum_squares(x) = x (x + 1) (2x + 1) / 6.
    let x = n as f64 - 1.0;
    let exact = 2.0 * (x * (x + 1.0) * (2.0 * x + 1.0) / 6.0);
    println!("backend: {backend}");
    println!("Does GPU value {sum:.6e} == {exact:.6e}?");
    let ok = ((sum - exact) / exact).abs() < 1e-6;
    let seed = if device {
        let t = common::median_time(repeats, true, || {
            common::raw_kernel(
                "dot",
                seed_kernel(n),
                [32, 1, 1],
                [256, 1, 1],
                &[&a, &b, &c],
            )
        })?;
        Some(t)
    } else {
        None
    };
    common::seed_row(&format!("dot ({n} floats)"), backend, parray, seed, ok);
    common::check(ok);
    Ok(())
}
