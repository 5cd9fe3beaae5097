//! Seed 001's first kernel, `c[i] = a[i] + b[i]` on ints, one thread per element (the
//! seed's 10 blocks of one thread, here N elements in blocks of 256, the last block's tail
//! guarded; N = 2^20, or `--n N`). Checks against a CPU sum and, on a GPU, times the
//! detour beside the seed's kernel compiled the same way.

mod common;

use parray::prelude::*;

parray! {
    const N;                                        // the number of elements
    dmem int [N] V;
    cuda(int* a, int* b, int* c) [ceil(N / 256)][256] ADD;
}

/// The seed's kernel for `n` elements, indexed by the whole grid as the detour is.
fn seed_kernel(n: usize) -> &'static str {
    let source = format!(
        r#"
extern "C" __global__ void add(int* a, int* b, int* c) {{
    int tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid < {n}) {{
        c[tid] = a[tid] + b[tid];
    }}
}}
"#
    );
    // One per run, kept for the launches.
    Box::leak(source.into_boxed_str())
}

fn main() -> parray::Result<()> {
    N.bind(common::size_arg("vector_add", 1 << 20))?;
    let n = host! { $size(V)$ };
    let (mut a, mut b, mut c) = (V::create()?, V::create()?, V::create()?);
    a.copy_from_slice(&(0..n as i32).map(|i| -i).collect::<Vec<_>>())?;
    b.copy_from_slice(&(0..n as i32).map(|i| i * (i % 1000)).collect::<Vec<_>>())?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let parray = common::median_time(repeats, true, || {
        detour!(ADD(&a, &b, &mut c) {
            let i = $tid$;
            if i < $size(V)$ {
                c[$V[i]$] = a[$V[i]$] + b[$V[i]$];
            }
        })
    })?;
    let got = c.to_vec()?;
    let ok = (0..n).all(|i| got[i] == -(i as i32) + i as i32 * (i as i32 % 1000));
    let seed = if device {
        c.fill(0)?;
        let t = common::median_time(repeats, true, || {
            common::raw_kernel(
                "add",
                seed_kernel(n),
                [n.div_ceil(256) as u32, 1, 1],
                [256, 1, 1],
                &[&a, &b, &c],
            )
        })?;
        Some(t)
    } else {
        None
    };
    println!("backend: {backend}");
    common::seed_row(&format!("vector_add ({n} ints)"), backend, parray, seed, ok);
    common::check(ok && (!device || c.to_vec()? == got));
    Ok(())
}
