//! A block reduction through shared memory: 1<<20 floats, 256-thread blocks, a halving
//! loop with a `#sync` per step, thread 0 of each block writing its block's sum. Checks
//! the total against an f64 sum on the CPU and prints the time (on the CPU emulation, the
//! cost of emulating barriers; on a GPU, beside a copy of the same bytes).

mod common;

use parray::prelude::*;

parray! {
    pub #parray {dmem float [4096 * 256]} DATA
    pub #parray {dmem float [4096]} PARTIAL
    #parray {cuda(float* data, float* partial) [4096][256]} REDUCE
    #parray {smem float [256]} CACHE
}

pub fn reduce(data: &Array<DATA>, partial: &mut Array<PARTIAL>) -> parray::Result<()> {
    detour!(REDUCE(data, partial) {
        let cache = CACHE::create();
        cache[$tid_1$] = data[$tid$];
        #sync;
        let mut s = $dim(CACHE)$ / 2;
        while s > 0 {
            if $tid_1$ < s {
                cache[$tid_1$] += cache[$tid_1$ + s];
            }
            #sync;
            s /= 2;
        }
        if $tid_1$ == 0 {
            partial[$tid_0$] = cache[0];
        }
    })
}

fn main() -> parray::Result<()> {
    let n = host! { $size(DATA)$ };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64);
    let values = common::random_values(n, seed);
    let (mut data, mut partial) = (DATA::create()?, PARTIAL::create()?);
    data.copy_from_slice(&values)?;
    let (backend, repeats) = common::backend(true)?;
    // The emulation is timed over a few runs too: it is the figure this example is for.
    let repeats = repeats.max(3);
    let time = common::median_time(repeats, true, || reduce(&data, &mut partial))?;
    let total: f64 = partial.to_vec()?.iter().map(|&x| f64::from(x)).sum();
    let expected: f64 = values.iter().map(|&x| f64::from(x)).sum();
    // Each block adds 256 values in f32: allow a few ulps per addition.
    let ok = (total - expected).abs() <= 1e-5 * values.iter().map(|x| x.abs() as f64).sum::<f64>();
    println!("backend: {backend}");
    println!("block reduction of {n} floats (256-thread blocks, 9 barriers each): {time}");
    if backend == "cuda" {
        let other = DATA::create()?;
        let copy = common::device_copy_time(&data, &other, n * 4)?;
        println!("device-to-device copy of the same bytes: {copy}");
    }
    println!("sum {total:.3}, f64 reference {expected:.3}");
    println!("check: {}", if ok { "ok" } else { "FAILED" });
    if !ok {
        std::process::exit(1);
    }
    Ok(())
}
