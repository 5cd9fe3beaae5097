//! Seed 001's histogram of 100 MiB of random bytes (`--n N` bytes; `--small`: 1 MiB), in
//! its two kernels:
//! every thread adding to the global histogram with `atomic_add`, and each block counting
//! into a shared histogram first, then adding its 256 counts to the global one. Both are
//! grid-stride loops over `uchar` elements on the seed's grid (two blocks per SM of an
//! H100: 264 x 256 threads). Checked exactly against a CPU count; on a GPU, each is timed
//! beside the seed's kernel compiled the same way.

mod common;

use parray::prelude::*;

parray! {
    const MAX;                      // the bytes, from the command line
    dmem uchar [MAX] BYTES;
    dmem unsigned [256] HISTO;
    smem unsigned [256] TMP;
    cuda(uchar* buffer, int n, unsigned* histo) [264][256] HIST;
}

/// The seed's two kernels.
const SEED: &str = r#"
extern "C" __global__ void histo_global(unsigned char *buffer, long size, unsigned int *histo) {
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&(histo[buffer[i]]), 1);
        i += stride;
    }
}
extern "C" __global__ void histo_shared(unsigned char *buffer, long size, unsigned int *histo) {
    __shared__ unsigned int tmp[256];
    tmp[threadIdx.x] = 0;
    __syncthreads();
    int i = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (i < size) {
        atomicAdd(&(tmp[buffer[i]]), 1);
        i += stride;
    }
    __syncthreads();
    atomicAdd(&(histo[threadIdx.x]), tmp[threadIdx.x]);
}
"#;

fn global_atomics(bytes: &Array<BYTES>, n: i32, h: &mut Array<HISTO>) -> parray::Result<()> {
    detour!(HIST(bytes, n, h) {
        let mut i = $tid$;
        while i < (n as usize).min($size(BYTES)$) {
            atomic_add(histo + $HISTO[buffer[$BYTES[i]$] as usize]$, 1);
            i += $size(HIST)$;
        }
    })
}

fn shared_atomics(bytes: &Array<BYTES>, n: i32, h: &mut Array<HISTO>) -> parray::Result<()> {
    detour!(HIST(bytes, n, h) {
        let tmp = TMP::create();
        tmp[$tid_1$] = 0;
        #sync;
        let mut i = $tid$;
        while i < (n as usize).min($size(BYTES)$) {
            atomic_add(tmp + $TMP[buffer[$BYTES[i]$] as usize]$, 1);
            i += $size(HIST)$;
        }
        #sync;
        atomic_add(histo + $HISTO[$tid_1$]$, tmp[$tid_1$]);
    })
}

type Kernel = fn(&Array<BYTES>, i32, &mut Array<HISTO>) -> parray::Result<()>;

fn main() -> parray::Result<()> {
    let n = common::size_arg(
        "histogram",
        if common::small() { 1 << 20 } else { 100 << 20 },
    );
    MAX.bind(n)?;
    let mut s = 0x2545_F491_4F6C_DD1Du64;
    let data: Vec<u8> = (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 56) as u8
        })
        .collect();
    let mut expected = [0u32; 256];
    for &b in &data {
        expected[b as usize] += 1;
    }
    let mut bytes = BYTES::create()?;
    bytes.copy_from_slice(&data)?;
    let mut histo = HISTO::create()?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    println!("backend: {backend}");
    let mut all = true;
    let kernels: [(&str, &str, Kernel); 2] = [
        ("histogram, global atomics", "histo_global", global_atomics),
        ("histogram, shared atomics", "histo_shared", shared_atomics),
    ];
    for (name, seed_name, kernel) in kernels {
        let parray = common::median_time(repeats, true, || {
            histo.fill(0)?;
            kernel(&bytes, n as i32, &mut histo)
        })?;
        let ok = histo.to_vec()? == expected;
        let seed = if device {
            let t = common::median_time(repeats, true, || {
                histo.fill(0)?;
                let size = n as i64;
                common::raw_kernel(
                    seed_name,
                    SEED,
                    [264, 1, 1],
                    [256, 1, 1],
                    &[&bytes, &size, &histo],
                )
            })?;
            Some(t)
        } else {
            None
        };
        common::seed_row(name, backend, parray, seed, ok);
        all &= ok;
    }
    println!(
        "{} bytes, {} in the fullest bin",
        n,
        expected.iter().max().unwrap_or(&0)
    );
    common::check(all);
    Ok(())
}
