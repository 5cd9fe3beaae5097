//! Seed 001's GPU hash table: 100 MiB of random `unsigned` keys (26 M entries; `--n N`
//! keys; `--small`: 2^20) inserted into 1024 buckets, each a linked list guarded by a lock taken with
//! `atomic_cas` and released with `atomic_exch`, the lanes of a warp taking their locks
//! one after another (the seed's loop over the 32 lanes). Entries are indices, not
//! pointers: `next[e]` is the entry after `e` in its bucket, `heads[b]` the first (the
//! head is swapped in with `atomic_exch`, so that the list is read and written at the
//! GPU's L2 inside the lock). Checked on the CPU: every entry found in its key's bucket,
//! exactly once; on a GPU, timed beside the seed's kernel with the same indices.

mod common;

use parray::prelude::*;

parray! {
    const ELEMENTS;                 // the keys, from the command line
    const ENTRIES = 1024;
    dmem unsigned [ELEMENTS] KEYS;
    dmem int [ELEMENTS] NEXT;
    dmem int [ENTRIES] BUCKETS;
    cuda(unsigned* keys, int n, int* next, int* heads, int* lock) [60][256] TABLE;
}

/// The seed's `add_to_table`, its `Entry` pointers as indices.
const SEED: &str = r#"
extern "C" __global__ void add_to_table(unsigned int *keys, int n, int *next, int *heads, int *lock) {
    int tid = threadIdx.x + blockIdx.x * blockDim.x;
    int stride = blockDim.x * gridDim.x;
    while (tid < n) {
        unsigned int key = keys[tid];
        unsigned hashValue = key % 1024;
        for (int i = 0; i < 32; i++) {
            if ((tid % 32) == i) {
                while (atomicCAS(&lock[hashValue], 0, 1) != 0);
                next[tid] = atomicExch(&heads[hashValue], tid);
                atomicExch(&lock[hashValue], 0);
            }
        }
        tid += stride;
    }
}
"#;

fn add_to_table(
    keys: &Array<KEYS>,
    n: i32,
    next: &mut Array<NEXT>,
    heads: &mut Array<BUCKETS>,
    locks: &mut Array<BUCKETS>,
) -> parray::Result<()> {
    detour!(TABLE(keys, n, next, heads, locks) {
        let mut t = $tid$;
        while t < (n as usize).min($size(KEYS)$) {
            let bucket = (keys[$KEYS[t]$] % $size(BUCKETS)$ as u32) as usize;
            for lane in 0..32 {
                if $tid$ % 32 == lane {
                    while atomic_cas(lock + $BUCKETS[bucket]$, 0, 1) != 0 {}
                    next[$NEXT[t]$] = atomic_exch(heads + $BUCKETS[bucket]$, t as i32);
                    atomic_exch(lock + $BUCKETS[bucket]$, 0);
                }
            }
            t += $size(TABLE)$;
        }
    })
}

fn main() -> parray::Result<()> {
    let n = common::size_arg(
        "hash_table",
        if common::small() {
            1 << 20
        } else {
            100 << 20 >> 2
        },
    );
    ELEMENTS.bind(n)?;
    let mut s = 0x9E37_79B9_7F4A_7C15u64;
    let keys: Vec<u32> = (0..n)
        .map(|_| {
            s ^= s >> 12;
            s ^= s << 25;
            s ^= s >> 27;
            (s.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 32) as u32
        })
        .collect();
    let mut dkeys = KEYS::create()?;
    dkeys.copy_from_slice(&keys)?;
    let (mut next, mut heads, mut locks) =
        (NEXT::create()?, BUCKETS::create()?, BUCKETS::create()?);
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let entries = host! { $size(BUCKETS)$ };
    let parray = common::median_time(repeats, true, || {
        heads.fill(-1)?;
        add_to_table(&dkeys, n as i32, &mut next, &mut heads, &mut locks)
    })?;
    let verify = |next: Vec<i32>, heads: Vec<i32>| {
        let mut seen = vec![false; n];
        let mut found = 0usize;
        for (b, &head) in heads.iter().enumerate() {
            let mut e = head;
            while e >= 0 {
                let k = e as usize;
                if k >= n || seen[k] || keys[k] as usize % entries != b {
                    return false;
                }
                seen[k] = true;
                found += 1;
                e = next[k];
            }
        }
        found == n
    };
    let ok = verify(next.to_vec()?, heads.to_vec()?) && locks.to_vec()?.iter().all(|&l| l == 0);
    let seed = if device {
        let count = n as i32;
        let t = common::median_time(repeats, true, || {
            heads.fill(-1)?;
            common::raw_kernel(
                "add_to_table",
                SEED,
                [60, 1, 1],
                [256, 1, 1],
                &[&dkeys, &count, &next, &heads, &locks],
            )
        })?;
        Some(t)
    } else {
        None
    };
    let seed_ok = !device || verify(next.to_vec()?, heads.to_vec()?);
    println!("backend: {backend}");
    common::seed_row(
        &format!("hash_table ({n} entries)"),
        backend,
        parray,
        seed,
        ok,
    );
    println!(
        "All {n} elements found in hash table: {}",
        if ok { "yes" } else { "no" }
    );
    common::check(ok && seed_ok);
    Ok(())
}
