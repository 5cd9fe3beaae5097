//! Fig 7 of the paper: a matrix transpose through a padded shared-memory tile. The tile
//! type A is 16x17 so that the column reads hit 16 different banks; B views its first 16
//! columns. Run at the paper's 128x128 float2 and, on a GPU, at 8192x8192 float as
//! bandwidth beside a copy kernel of the same bytes. At that size one element per thread
//! leaves the memory system idle, so the big version gives each thread of a 32x8 block
//! four rows of a 32x32 tile: the rows split as `[[4][8]]` in the types, and the body
//! loops over the `[4]`.

mod common;

use parray::gpu::Timing;
use parray::prelude::*;

parray! {
    pub #parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA
    #parray {cuda(float2* worki, float2* worko) [[128/16][128/16]][[16][16]]} MYCUDATA
    #parray {smem float2 [16][17]} A
    #parray {smem float2 [#A_0][16#A_1]} B
}

parray! {
    pub #parray {dmem float [[8192/32][[4][8]]][[8192/32][32]]} BIG
    #parray {cuda(float* worki, float* worko) [[8192/32][8192/32]][[8][32]]} BIGCUDA
    #parray {smem float [[4][8]][33]} T
    #parray {smem float [#T_0][32#T_1]} TV
    #parray {cuda(float* worki, float* worko) [8192*8192/1024][1024]} COPY
}

/// The paper's body, as in Fig 7.
pub fn transpose(adri: &Array<DATA>, adro: &mut Array<DATA>) -> parray::Result<()> {
    detour!(MYCUDATA(adri, adro) {
        let tile = A::create();
        tile[$B[$tid_1_0$][$tid_1_1$]$] = worki[$DATA[[$tid_0_0$][$tid_1_0$]][[$tid_0_1$][$tid_1_1$]]$];
        #sync;
        worko[$DATA[[$tid_0_1$][$tid_1_0$]][[$tid_0_0$][$tid_1_1$]]$] = tile[$B[$tid_1_1$][$tid_1_0$]$];
    })
}

/// The same transpose on the 8192x8192 types, four rows of the tile per thread.
pub fn transpose_big(adri: &Array<BIG>, adro: &mut Array<BIG>) -> parray::Result<()> {
    detour!(BIGCUDA(adri, adro) {
        let tile = T::create();
        #[unroll]
        for j in 0..$dim(T_0_0)$ {
            tile[$TV[[j][$tid_1_0$]][$tid_1_1$]$] = worki[$BIG[[$tid_0_0$][[j][$tid_1_0$]]][[$tid_0_1$][$tid_1_1$]]$];
        }
        #sync;
        #[unroll]
        for j in 0..$dim(T_0_0)$ {
            worko[$BIG[[$tid_0_1$][[j][$tid_1_0$]]][[$tid_0_0$][$tid_1_1$]]$] = tile[$TV[$tid_1_1$][j * 8 + $tid_1_0$]$];
        }
    })
}

/// The same transpose without the tile and its barrier: each thread moves its four
/// elements straight from input to output (the emulation's baseline for barriers).
pub fn transpose_big_direct(adri: &Array<BIG>, adro: &mut Array<BIG>) -> parray::Result<()> {
    detour!(BIGCUDA(adri, adro) {
        #[unroll]
        for j in 0..$dim(T_0_0)$ {
            worko[$BIG[[$tid_0_1$][[$tid_1_1$ / 8][$tid_1_1$ % 8]]][[$tid_0_0$][j * 8 + $tid_1_0$]]$] = worki[$BIG[[$tid_0_0$][[j][$tid_1_0$]]][[$tid_0_1$][$tid_1_1$]]$];
        }
    })
}

/// `transpose_big` without its `#sync`: wrong (threads read tile entries before others
/// write them), and used only to time what the emulation of the barrier itself costs.
pub fn transpose_big_unsynced(adri: &Array<BIG>, adro: &mut Array<BIG>) -> parray::Result<()> {
    detour!(BIGCUDA(adri, adro) {
        let tile = T::create();
        #[unroll]
        for j in 0..$dim(T_0_0)$ {
            tile[$TV[[j][$tid_1_0$]][$tid_1_1$]$] = worki[$BIG[[$tid_0_0$][[j][$tid_1_0$]]][[$tid_0_1$][$tid_1_1$]]$];
        }
        #[unroll]
        for j in 0..$dim(T_0_0)$ {
            worko[$BIG[[$tid_0_1$][[j][$tid_1_0$]]][[$tid_0_0$][$tid_1_1$]]$] = tile[$TV[$tid_1_1$][j * 8 + $tid_1_0$]$];
        }
    })
}

/// The baseline: a copy of the same bytes, one element per thread.
pub fn copy_big(adri: &Array<BIG>, adro: &mut Array<BIG>) -> parray::Result<()> {
    detour!(COPY(adri, adro) {
        worko[$tid$] = worki[$tid$];
    })
}

/// Transpose `n x n` values with `run`, check the result exactly, return the median time.
fn measure<T: DataType>(
    n: usize,
    make: impl Fn(f32, f32) -> T::Elem,
    run: impl Fn(&Array<T>, &mut Array<T>) -> parray::Result<()>,
    transposes: bool,
) -> parray::Result<(Timing, bool)>
where
    T::Elem: PartialEq,
{
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(7, |d| d.as_nanos() as u64);
    let (xs, ys) = (
        common::random_values(n * n, seed),
        common::random_values(n * n, seed + 1),
    );
    let input: Vec<T::Elem> = xs.iter().zip(&ys).map(|(x, y)| make(*x, *y)).collect();
    let (mut i, mut o) = (Array::<T>::new()?, Array::<T>::new()?);
    i.copy_from_slice(&input)?;
    o.copy_from_slice(&vec![make(f32::NAN, f32::NAN); n * n])?;
    let (_, repeats) = common::backend(true)?;
    let time = common::median_time(repeats, true, || run(&i, &mut o))?;
    let out = o.to_vec()?;
    let ok = (0..n * n).all(|x| {
        let (r, c) = (x / n, x % n);
        let from = if transposes { c * n + r } else { x };
        out[x] == input[from]
    });
    Ok((time, ok))
}

fn main() -> parray::Result<()> {
    let n = host! { $dim_0(DATA)$ };
    let (time, ok) = measure(n, Float2::new, transpose, true)?;
    let (backend, _) = common::backend(true)?;
    println!("backend: {backend}");
    println!("transpose {n}x{n} float2: {time}");
    let mut all_ok = ok;
    if backend == "cuda" {
        let big = host! { $dim_0(BIG)$ };
        let bytes = 2.0 * (big * big * 4) as f64;
        let (t, ok_t) = measure(big, |x, _| x, transpose_big, true)?;
        let (c, ok_c) = measure(big, |x, _| x, copy_big, false)?;
        let (i, o) = (BIG::create()?, BIG::create()?);
        let d2d = common::device_copy_time(&i, &o, big * big * 4)?;
        let rate = |t: Timing| bytes / t.seconds() / 1e9;
        println!("transpose {big}x{big} float: {t}, {:.0} GB/s", rate(t));
        println!("copy detour:            {c}, {:.0} GB/s", rate(c));
        println!("device-to-device copy:  {d2d}, {:.0} GB/s", rate(d2d));
        println!(
            "transpose / device-to-device copy bandwidth: {:.1}%",
            100.0 * d2d.ms / t.ms
        );
        all_ok &= ok_t && ok_c;
    } else if std::env::args().any(|a| a == "--emulated-8192") {
        // What emulating a barrier costs: the tiled transpose (one `#sync` per block)
        // against the same transpose without the tile, both on the CPU emulation, the
        // median of 5 runs each (the results checked once).
        let big = host! { $dim_0(BIG)$ };
        let (_, ok_t) = measure(big, |x, _| x, transpose_big, true)?;
        let (_, ok_d) = measure(big, |x, _| x, transpose_big_direct, true)?;
        let (i, mut o) = (BIG::create()?, BIG::create()?);
        let t = common::median_time(5, true, || transpose_big(&i, &mut o))?;
        let d = common::median_time(5, true, || transpose_big_direct(&i, &mut o))?;
        let u = common::median_time(5, true, || transpose_big_unsynced(&i, &mut o))?;
        println!("transpose {big}x{big} float, tiled with #sync: {t:.0}");
        println!("transpose {big}x{big} float, direct, no barrier: {d:.0}");
        println!("tiled body without its #sync (wrong, timing only): {u:.0}");
        println!(
            "tiled with #sync / direct: {:.2}x; / the same body without #sync: {:.2}x",
            t.ms / d.ms,
            t.ms / u.ms
        );
        all_ok &= ok_t && ok_d;
    } else {
        println!("(the 8192x8192 bandwidth run needs a GPU; on the emulation: --emulated-8192)");
    }
    println!("check: {}", if all_ok { "ok" } else { "FAILED" });
    if !all_ok {
        std::process::exit(1);
    }
    Ok(())
}
