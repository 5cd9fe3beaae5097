//! The detour body subset on a cuda thread array gives what it gives on a pthd array: each
//! construct runs once on 2x8 CPU threads and once on a 2-block x 8-thread cuda grid (the
//! GPU where there is one, else the CPU emulation), and the outputs must agree exactly.
//! Constructs only a cuda body has (shared and register arrays) are checked against plain
//! Rust. On the GPU machine: `PARRAY_BACKEND=cuda cuda_bodies`.

use parray::prelude::*;

parray! {
    const LANES = 8;
    const ORIGIN = 0;
    int [16] OUT_IX;
    paged int [#OUT_IX_0] HOST_OUT;
    dmem int [#OUT_IX_0] DEV_OUT;
    paged float [16] HOST_F;
    dmem float [16] DEV_F;
    pthd [2][8] CPU;
    cuda(int* out, float* fout, int n) [2][8] GPU;
    smem int [8] SHARED;
    rmem float [4] REGS;
    cmem int [#OUT_IX_0] CONST_TABLE;
}

/// Run `body` on both arrays and compare the int and float outputs.
macro_rules! same_on_both {
    ($name:ident, |$out:ident, $fout:ident, $n:ident| $body:tt) => {
        #[test]
        fn $name() -> parray::Result<()> {
            let (mut host, mut hostf) = (HOST_OUT::create()?, HOST_F::create()?);
            {
                #[allow(unused_variables)]
                let ($out, $fout, $n) = (&mut host, &mut hostf, 5i32);
                detour!(CPU $body)?;
            }
            let (mut dev, mut devf) = (DEV_OUT::create()?, DEV_F::create()?);
            detour!(GPU(&mut dev, &mut devf, 5i32) $body)?;
            assert_eq!(host.to_vec()?, dev.to_vec()?, "int outputs differ");
            let (a, b) = (hostf.to_vec()?, devf.to_vec()?);
            for (x, y) in a.iter().zip(&b) {
                assert!((x - y).abs() <= 1e-5 * x.abs().max(1.0), "float outputs differ: {a:?} vs {b:?}");
            }
            Ok(())
        }
    };
}

same_on_both!(thread_indices, |out, fout, n| {
    out[$tid$] = ($tid_0$ * 100 + $tid_1$) as i32;
});

same_on_both!(arithmetic_and_casts, |out, fout, n| {
    let t = $tid$ as i32;
    let mut x = t * 3 - 7;
    x += n;
    x *= 2;
    x -= t % 3;
    out[$tid$] = x / 2 + (t << 2) - (x >> 1) + (t & 5) + (t | 8) + (t ^ 3);
    fout[$tid$] = t as f32 / 3.0f32 - 0.5f32;
});

same_on_both!(control_flow, |out, fout, n| {
    let t = $tid$ as i32;
    let mut acc = 0i32;
    let mut k = 0i32;
    while k < t {
        if k % 2 == 0 {
            acc += k;
        } else if k % 3 == 0 {
            acc -= 1;
        } else {
            acc += 100;
        }
        k += 1;
    }
    #[unroll]
    for j in 0..4 {
        if j == 2 {
            continue;
        }
        acc += j;
    }
    for j in 0..10 {
        if j > t {
            break;
        }
        acc += 1000;
    }
    out[$tid$] = if t > 7 { acc } else { -acc };
});

// `#[unroll(N)]` with N a size of a type (here 16 / 4): a tile type can carry its loop's
// unrolling. A loop of a run-time trip count, so that the remainder runs too.
same_on_both!(unroll_factor_from_a_type, |out, fout, n| {
    let mut acc = 0i32;
    #[unroll($dim(OUT_IX_0)$ / 4)]
    for j in 0..$tid$ + n as usize {
        acc += j as i32 * 3 - 1;
    }
    out[$tid$] = acc;
});

/// The factor is a number in the kernel, whichever form gave it.
#[test]
fn an_unroll_factor_from_a_type_is_a_number_in_the_kernel() -> parray::Result<()> {
    let (mut dev, mut devf) = (DEV_OUT::create()?, DEV_F::create()?);
    let source = kernel_source!(GPU(&mut dev, &mut devf, 5i32) {
        let mut acc = 0i32;
        #[unroll($dim(OUT_IX_0)$ / 4)]
        for j in 0..$tid$ + n as usize {
            acc += j as i32;
        }
        out[$tid$] = acc;
    })
    .to_string();
    assert!(source.contains("#pragma unroll 4\n"), "{source}");
    Ok(())
}

same_on_both!(math_methods, |out, fout, n| {
    let x = $tid$ as f32 + 0.25f32;
    fout[$tid$] = x.sqrt() + x.mul_add(2.0f32, 1.0f32) + x.min(3.0f32) + x.max(9.0f32) + (-x).abs() + x.floor();
    out[$tid$] = ($tid$ as i32).min(n).max(2);
});

same_on_both!(pointer_offsets, |out, fout, n| {
    let p = out + $OUT_IX[$tid$]$;
    p[0] = 7;
    let q = fout + $tid_0$ * 8;
    q[$tid_1$] = 2.5f32;
    q[$tid_1$] += 1.0f32;
});

/// A Rust constant: passed by value to a cuda body.
const SCALE: f32 = 0.25;

same_on_both!(constants, |out, fout, n| {
    let t = $tid$;
    // The number types' constants: the same values on every back end.
    let m = if t & 1 == 0 {
        f32::NEG_INFINITY
    } else {
        t as f32 * std::f32::consts::PI
    };
    let edges = f32::NAN.max(t as f32) + f64::INFINITY.min(t as f64) as f32;
    fout[$tid$] = m.max(f32::MIN) * SCALE + f32::EPSILON + (std::f64::consts::E as f32) + edges;
    // `parray!` constants (0 is one) and the integer types' bounds.
    let wrapped = (u32::MAX - 15 + t as u32) as i32;
    let low = (i32::MIN + 7) / 1000000 + (i64::MIN / 3000000000000i64) as i32;
    out[$tid$] = (t % LANES + $tid_0$ * ORIGIN) as i32 + wrapped + low * (t as i32 % 3);
});

same_on_both!(atomics, |out, fout, n| {
    atomic_add(out + 0, 1i32);
    atomic_add(out + ($tid_1$ + 1), $tid_0$ as i32);
});

parray! {
    dmem int [8] SUMS;
    cuda(int* sums) [4][8] REDUCE;
    dmem float [4][8] TABLE;
    cuda(float* table) [4][8] SQUARES;
}

#[test]
fn shared_memory_and_barriers() -> parray::Result<()> {
    // Each block sums its threads' ids through shared memory; thread 0 writes the sum.
    let mut sums = SUMS::create()?;
    sums.copy_from_slice(&[-1; 8])?;
    detour!(REDUCE(&mut sums) {
        let s = SHARED::create();
        s[$tid_1$] = $tid$ as i32;
        #sync;
        if $tid_1$ == 0 {
            let mut total = 0i32;
            for j in 0..$dim(SHARED)$ {
                total += s[j];
            }
            sums[$tid_0$] = total;
        }
    })?;
    let expected: Vec<i32> = (0..8)
        .map(|b| {
            if b < 4 {
                (0..8).map(|t| b * 8 + t).sum()
            } else {
                -1
            }
        })
        .collect();
    assert_eq!(sums.to_vec()?, expected);
    Ok(())
}

parray! {
    // 72 KiB of shared arrays: more than a kernel may declare statically.
    smem float [128][128] BIG;
    smem float [2048] MORE;
    dmem float [2][128] ROWS;
    cuda(float* rows) [2][128] BIG_BLOCKS;
}

/// Each block fills a 64 KiB array and an 8 KiB one, and each thread then sums a column of
/// the first and a stretch of the second: the kernel takes them from dynamic shared memory.
#[test]
fn shared_arrays_beyond_48_kib() -> parray::Result<()> {
    let mut rows = ROWS::create()?;
    detour!(BIG_BLOCKS(&mut rows) {
        let s = BIG::create();
        let m = MORE::create();
        for j in 0..$dim_1(BIG)$ {
            s[$BIG[$tid_1$][j]$] = ($tid_0$ * 1000 + $tid_1$ * 3 + j) as f32;
        }
        for j in 0..16 {
            m[$tid_1$ * 16 + j] = j as f32;
        }
        #sync;
        let mut total = 0.0f32;
        for i in 0..$dim_0(BIG)$ {
            total += s[$BIG[i][$tid_1$]$];
        }
        for j in 0..16 {
            total += m[(($tid_1$ + 1) % 128) * 16 + j];
        }
        rows[$ROWS[$tid_0$][$tid_1$]$] = total;
    })?;
    let expected: Vec<f32> = (0..2)
        .flat_map(|b| {
            (0..128).map(move |t| {
                let column: usize = (0..128).map(|i| b * 1000 + i * 3 + t).sum();
                (column + (0..16).sum::<usize>()) as f32
            })
        })
        .collect();
    assert_eq!(rows.to_vec()?, expected);
    let source = {
        let rows = ();
        kernel_source!(BIG_BLOCKS(rows) {
            let s = BIG::create();
            let m = MORE::create();
            s[0] = m[0];
            rows[0] = s[1];
        })
    };
    assert!(source.contains("extern __shared__ __align__(16) unsigned char parray_shared[];"));
    assert!(source.contains("float* const s = reinterpret_cast<float*>(parray_shared + 0);"));
    assert!(source.contains("float* const m = reinterpret_cast<float*>(parray_shared + 65536);"));
    Ok(())
}

#[test]
fn register_arrays() -> parray::Result<()> {
    let mut table = TABLE::create()?;
    detour!(SQUARES(&mut table) {
        let r = REGS::create();
        for j in 0..$size(REGS)$ {
            r[j] = ($tid$ + j) as f32;
        }
        let mut total = 0.0f32;
        for j in 0..$size(REGS)$ {
            total += r[j] * r[j];
        }
        table[$TABLE[$tid_0$][$tid_1$]$] = total;
    })?;
    let expected: Vec<f32> = (0..32)
        .map(|t| (0..4).map(|j| ((t + j) * (t + j)) as f32).sum())
        .collect();
    assert_eq!(table.to_vec()?, expected);
    Ok(())
}

parray! {
    pthd [2] TWO;
    dmem int [8] ROW;
    cuda(int* row, int base) [1][8] FILL;
}

#[test]
fn pthd_thread_detours_into_cuda() -> parray::Result<()> {
    // Each of two CPU threads launches its own kernels (the paper's nested detours).
    let mut rows = [ROW::create()?, ROW::create()?];
    {
        // One write handle per row: each thread launches into its own.
        let [r0, r1] = &mut rows;
        let handles = [r0.ptr_mut(), r1.ptr_mut()];
        let handles = &handles;
        detour!(TWO {
            launch_fill(handles, $tid$);
        })?;
    }
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            r.to_vec()?,
            (0..8).map(|t| (i * 100 + t) as i32).collect::<Vec<_>>()
        );
    }
    Ok(())
}

fn launch_fill(rows: &[PtrMut<i32>; 2], which: usize) {
    detour!(FILL(rows[which], (which * 100) as i32) {
        row[$tid_1$] = base + $tid_1$ as i32;
    })
    .expect("the inner detour runs");
}

// One meaning: an unsuffixed float literal is typed by its use, on the CPU and in the
// kernel alike. 2^24 + 1 is exact in f64 and rounds away in f32: a body that computed in
// `float` on the GPU would write 0 where Rust writes 1.
same_on_both!(float_literals_typed_by_use, |out, fout, n| {
    let mut t = 16777216.0;
    t += ($tid$ as f64) * 0.0 + 1.0f64;
    out[$tid$] = (t - 16777216.0) as i32;
    let mut u = 0.5;
    u *= $tid_1$ as f32;
    fout[$tid$] = u;
});

// `usize` arithmetic in a cuda body is 32-bit on the GPU and in the emulator (u32), so
// both compute what a pthd body computes as long as nothing exceeds 2^32 - 1.
same_on_both!(usize_arithmetic, |out, fout, n| {
    let big: usize = 65536;
    let m = big * 16384 + $tid$;
    out[$tid$] = (m % 1000) as i32;
});

parray! {
    paged long [16] HOST_L;
    dmem long [16] DEV_L;
    pthd [2][8] CPU_L;
    cuda(long* acc) [2][8] GPU_L;
}

#[test]
fn signed_64_bit_atomics() -> parray::Result<()> {
    // CUDA has no `atomicAdd(long long*, long long)`: the body's i64 atomic adds the same
    // bits through the unsigned one, and gives the old value.
    let mut host = HOST_L::create()?;
    {
        let acc = &mut host;
        detour!(CPU_L {
            let old = atomic_add(acc + 0, -3_000_000_000i64);
            atomic_add(acc + ($tid_1$ + 1), old / old.max(1) + $tid$ as i64);
        })?;
    }
    let mut dev = DEV_L::create()?;
    detour!(GPU_L(&mut dev) {
        let old = atomic_add(acc + 0, -3_000_000_000i64);
        atomic_add(acc + ($tid_1$ + 1), old / old.max(1) + $tid$ as i64);
    })?;
    let (h, d) = (host.to_vec()?, dev.to_vec()?);
    assert_eq!(h[0], -48_000_000_000);
    assert_eq!(h[0], d[0]);
    // The old values differ by schedule; the sum of the tids does not.
    let tids = |v: &[i64]| v[1..9].iter().map(|x| x.rem_euclid(1 << 20)).sum::<i64>();
    assert_eq!(tids(&h), tids(&d));
    Ok(())
}

parray! {
    dmem int [64] HALVES;
    cuda(int* out) [2][32] HALF_SYNC;
    cuda(int* out) [2][32] TWO_SYNCS;
    paged int [64] PAGED64;
    dmem int [4] SMALL;
    cuda(int* out) [2][32] OVERRUN;
}

/// Whether cuda detours run on the CPU emulation (where divergence and bounds are
/// checked; on a GPU both are undefined behaviour).
fn emulated() -> bool {
    parray::gpu::backend().is_ok_and(|b| b == parray::gpu::Backend::Emulate)
}

#[test]
fn a_sync_that_only_some_threads_reach_is_an_error_naming_it() {
    if !emulated() {
        return;
    }
    let mut out = HALVES::create().unwrap();
    let started = std::time::Instant::now();
    let sync_line = line!() + 3;
    let err = detour!(HALF_SYNC(&mut out) {
        if $tid_1$ < 16 {
            #sync;
        }
        out[$tid$] = 1;
    })
    .unwrap_err();
    assert!(
        started.elapsed().as_secs() < 10,
        "took {:?}",
        started.elapsed()
    );
    match &err {
        parray::Error::DivergentSync { line, .. } => assert_eq!(*line, sync_line, "{err}"),
        other => panic!("expected a divergent sync, got {other}"),
    }
    let at = format!("tests/cuda_bodies.rs:{sync_line}");
    assert!(err.to_string().contains(&at), "{err}");
}

#[test]
fn threads_at_two_different_syncs_are_an_error() {
    if !emulated() {
        return;
    }
    let mut out = HALVES::create().unwrap();
    let err = detour!(TWO_SYNCS(&mut out) {
        if $tid_1$ % 2 == 0 {
            #sync;
        } else {
            #sync;
        }
        out[$tid$] = 1;
    })
    .unwrap_err();
    assert!(matches!(err, parray::Error::DivergentSync { .. }), "{err}");
}

#[test]
fn a_paged_array_is_refused_as_a_kernel_argument_on_every_backend() {
    let mut paged = PAGED64::create().unwrap();
    let err = detour!(HALF_SYNC(&mut paged) {
        out[$tid$] = 1;
    })
    .unwrap_err();
    assert!(
        matches!(err, parray::Error::NotDeviceMemory { .. }),
        "{err}"
    );
}

#[test]
fn a_panic_names_the_statement_the_block_and_the_thread() {
    // On every backend: the emulation's handle panics, the GPU's kernel records the fault.
    let mut small = SMALL::create().unwrap();
    let line = line!() + 3;
    let err = detour!(OVERRUN(&mut small) {
        let i = $tid$;
        out[i] = 1;
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(&format!("tests/cuda_bodies.rs:{line}")),
        "{text}"
    );
    assert!(
        text.contains("block (") && text.contains("OVERRUN") && text.contains("out of bounds"),
        "{text}"
    );
}

#[test]
fn overflow_in_a_debug_build_names_the_statement() {
    // The GPU wraps; a debug build of the emulation stops at the statement that overflows
    // (its `usize` and `u32` are the kernel's 32 bits).
    if !emulated() || !cfg!(debug_assertions) {
        return;
    }
    let mut out = HALVES::create().unwrap();
    let line = line!() + 3;
    let err = detour!(OVERRUN(&mut out) {
        let big: u32 = 4_000_000_000;
        out[$tid$] = (big + $tid$ as u32 * 1_000_000_000) as i32;
    })
    .unwrap_err();
    let text = err.to_string();
    assert!(text.contains("overflow"), "{text}");
    assert!(
        text.contains(&format!("tests/cuda_bodies.rs:{line}")),
        "{text}"
    );
}

// Barriers inside loops, with `break`, `continue` and per-thread state across them, a
// pointer kept across a barrier: the same values as CPU threads compute (where `#sync`
// is a barrier of the whole array).
same_on_both!(barriers_in_loops, |out, fout, n| {
    let t = $tid$ as i32;
    let mut acc = 0i32;
    let mut k = 0i32;
    while k < 6 {
        acc += t * k;
        #sync;
        if k == 4 {
            break;
        }
        k += 1;
        if k == 2 {
            continue;
        }
        acc -= 1;
    }
    for j in 0..3 {
        #sync;
        if j == 1 {
            continue;
        }
        acc += j * 10 + n;
    }
    if n > 100 {
        return;
    }
    let p = out + $OUT_IX[$tid$]$;
    #sync;
    p[0] = acc;
    fout[$tid$] = acc as f32 * 0.5f32;
});

parray! {
    dmem float [4][8] TABLE2;
    cuda(float* table) [4][8] ROTATE;
    dmem int [64] TRIPS;
    cuda(int* out) [2][32] UNEVEN;
}

#[test]
fn registers_and_shared_memory_across_barriers() -> parray::Result<()> {
    // Each thread keeps registers across two barriers and reads its neighbour's value
    // from shared memory after each.
    let mut table = TABLE2::create()?;
    detour!(ROTATE(&mut table) {
        let s = SHARED::create();
        let r = REGS::create();
        for j in 0..$size(REGS)$ {
            r[j] = ($tid$ * 10 + j) as f32;
        }
        s[$tid_1$] = $tid_1$ as i32;
        #sync;
        let next = s[($tid_1$ + 1) % 8];
        #sync;
        s[$tid_1$] = next * 2;
        #sync;
        table[$TABLE2[$tid_0$][$tid_1$]$] = r[3] + s[($tid_1$ + 7) % 8] as f32;
    })?;
    let expected: Vec<f32> = (0..32)
        .map(|tid| {
            let t1 = tid % 8;
            (tid * 10 + 3) as f32 + (((t1 + 7) % 8 + 1) % 8 * 2) as f32
        })
        .collect();
    assert_eq!(table.to_vec()?, expected);
    Ok(())
}

#[test]
fn a_loop_around_a_sync_with_uneven_trips_is_an_error() {
    if !emulated() {
        return;
    }
    let mut out = TRIPS::create().unwrap();
    let err = detour!(UNEVEN(&mut out) {
        let mut k = 0u32;
        while k < ($tid_1$ as u32) % 3 {
            #sync;
            k += 1;
        }
        out[$tid$] = k as i32;
    })
    .unwrap_err();
    assert!(matches!(err, parray::Error::DivergentSync { .. }), "{err}");
}

// Barriers in both branches of an `if` inside a loop, and in a `while` nested in a `for`:
// the masks follow the threads through every construct.
same_on_both!(barriers_in_nested_constructs, |out, fout, n| {
    let t = $tid$ as i32;
    let mut acc = 0i32;
    for i in 0..4 {
        if i % 2 == 0 {
            #sync;
            acc += i;
            if acc > 1000 {
                return;
            }
        } else {
            acc -= 1;
            #sync;
        }
        let mut j = 0;
        while j < i {
            #sync;
            j += 1;
            acc += j * t;
        }
    }
    out[$tid$] = acc + n;
    fout[$tid$] = (acc % 7) as f32;
});

mod bytes {
    use parray::prelude::*;

    parray! {
        dmem uchar [256] BYTES;
        dmem unsigned [256] WIDE;
        cuda(uchar* b, unsigned* w) [2][128] BYTE_GRID;
    }

    #[test]
    fn uchar_elements_are_u8_and_unsigned_char() -> parray::Result<()> {
        let (mut b, mut w) = (BYTES::create()?, WIDE::create()?);
        let input: Vec<u8> = (0..256).map(|i| (i * 37 % 256) as u8).collect();
        b.copy_from_slice(&input)?;
        detour!(BYTE_GRID(&mut b, &mut w) {
            let v: u8 = b[$BYTES[$tid$]$];
            w[$WIDE[$tid$]$] = v as u32 + 1000;
            b[$BYTES[$tid$]$] = v / 2u8 + 100;
        })?;
        let (bs, ws) = (b.to_vec()?, w.to_vec()?);
        for (i, x) in input.iter().enumerate() {
            assert_eq!(ws[i], *x as u32 + 1000);
            assert_eq!(bs[i], x / 2 + 100);
        }
        let (b, w) = ((), ());
        let source = kernel_source!(BYTE_GRID(b, w) {
            b[$BYTES[$tid$]$] = 7;
            w[0] = 1;
        });
        assert!(
            source.contains("(unsigned char* b, unsigned* w"),
            "{source}"
        );
        assert!(source.contains("= (unsigned char)7;"), "{source}");
        Ok(())
    }
}

/// A stride loop (`while i < end { ...; i += step; }`, `i` unsigned, assigned only by that
/// last statement) bounds `i` below `end` in its body, so its accesses there are proved;
/// after the loop, or when `i` changes elsewhere, they stay checked.
#[test]
fn stride_loops_are_proved() {
    let (out, fout, n) = ((), (), ());
    let proved = kernel_source!(GPU(out, fout, n) {
        let mut i = $tid$;
        while i < 16 {
            out[$OUT_IX[i]$] = i as i32;
            i += $size(GPU)$;
        }
    });
    assert!(proved.contains("out[i] = (int)i;"), "{proved}");
    let after = kernel_source!(GPU(out, fout, n) {
        let mut i = $tid$;
        while i < 16 {
            i += $size(GPU)$;
        }
        out[$OUT_IX[i]$] = 1;
    });
    assert!(after.contains("parray_at(out, i,"), "{after}");
    let not_last = kernel_source!(GPU(out, fout, n) {
        let mut i = $tid_1$;
        while i < 16 {
            i += 8;
            out[$OUT_IX[i]$] = 2;
        }
    });
    assert!(not_last.contains("parray_at(out, i,"), "{not_last}");
    let twice = kernel_source!(GPU(out, fout, n) {
        let mut i = $tid_1$;
        if $tid_0$ == 1 {
            i = 15;
        }
        while i < 16 {
            out[$OUT_IX[i]$] = 3;
            i += 8;
        }
    });
    assert!(twice.contains("parray_at(out, i,"), "{twice}");
    // A run-time count capped by `min` bounds a stride loop.
    let capped = kernel_source!(GPU(out, fout, n) {
        let mut i = $tid$;
        while i < (n as usize).min($size(OUT_IX)$) {
            out[$OUT_IX[i]$] = 4;
            i += $size(GPU)$;
        }
    });
    assert!(capped.contains("out[i] = 4;"), "{capped}");
    // A mask bounds its result whatever it masks; an unmasked value stays checked.
    let masked = kernel_source!(GPU(out, fout, n) {
        let x = n * 7919;
        out[$OUT_IX[(x & 15) as usize]$] = 1;
    });
    assert!(
        masked.contains("out[((unsigned)(x & 15))] = 1;"),
        "{masked}"
    );
    let unmasked = kernel_source!(GPU(out, fout, n) {
        let x = n * 7919;
        out[$OUT_IX[(x | 15) as usize]$] = 1;
    });
    assert!(unmasked.contains("parray_at(out,"), "{unmasked}");
}

same_on_both!(a_stride_loop, |out, fout, n| {
    let mut i = $tid$;
    while i < 16 {
        out[$OUT_IX[i]$] = (i * 3) as i32;
        fout[i] = i as f32;
        i += $size(GPU)$;
    }
});

/// A cmem array is read from the kernel's constant bank (filled by the launch), the
/// threads at their own addresses and all at one: what the emulation reads from the array.
#[test]
fn constant_memory() -> parray::Result<()> {
    let squares: Vec<i32> = (0..16).map(|i| i * i - 7).collect();
    let mut table = CONST_TABLE::create()?;
    table.copy_from_slice(&squares)?;
    let mut fout = DEV_F::create()?;
    // The table is the kernel's `out` parameter, read as a cmem type.
    detour!(GPU(&table, &mut fout, 3i32) {
        let k = ($tid$ * 5) % 16;
        fout[$DEV_F[$tid$]$] = (out[$CONST_TABLE[k]$] + out[$CONST_TABLE[3]$] * n) as f32;
    })?;
    let want: Vec<f32> = (0..16)
        .map(|t| (squares[t * 5 % 16] + squares[3] * 3) as f32)
        .collect();
    assert_eq!(fout.to_vec()?, want);
    let source = {
        let (out, fout, n) = ((), (), ());
        kernel_source!(GPU(out, fout, n) {
            fout[$DEV_F[$tid$]$] = out[$CONST_TABLE[$tid$]$] as f32;
        })
    };
    assert!(source.contains("__constant__ int out[16];"), "{source}");
    assert!(
        source.contains("(int* __parray_constant_out, float* fout"),
        "{source}"
    );
    Ok(())
}

/// A cuda body reads host values by value: each becomes a kernel parameter after the
/// declared ones, of the type the body uses it as (`usize` checked to fit 32 bits).
#[test]
fn host_values_are_passed_by_value() -> parray::Result<()> {
    let (mut dev, mut devf) = (DEV_OUT::create()?, DEV_F::create()?);
    let stride: usize = 3;
    let bias = -2.5f64;
    detour!(GPU(&mut dev, &mut devf, 1i32) {
        let t = $tid$;
        out[t] = (t * stride % LANES) as i32 + n;
        fout[t] = (t as f64 * bias) as f32 * SCALE;
    })?;
    let want: Vec<i32> = (0..16).map(|t: i32| t * 3 % 8 + 1).collect();
    assert_eq!(dev.to_vec()?, want);
    let wantf: Vec<f32> = (0..16).map(|t| (t as f64 * -2.5) as f32 * 0.25).collect();
    assert_eq!(devf.to_vec()?, wantf);
    let source = {
        let (out, fout, n) = ((), (), ());
        kernel_source!(GPU(out, fout, n) {
            out[$tid$] = ($tid$ * stride) as i32;
            fout[$tid$] = (bias * 2.0f64) as f32 * SCALE;
        })
    };
    assert!(
        source
            .contains("(int* out, float* fout, int n, unsigned stride, double bias, float SCALE, "),
        "{source}"
    );
    Ok(())
}

#[test]
fn a_host_usize_past_32_bits_is_an_error_naming_it() {
    let (mut dev, devf) = (DEV_OUT::create().unwrap(), DEV_F::create().unwrap());
    let far = 1usize << 33;
    let err = detour!(GPU(&mut dev, &devf, 1i32) {
        let far: usize = far;
        out[$tid$] = (far % 7) as i32;
    })
    .unwrap_err();
    let message = err.to_string();
    assert!(message.contains("`far` = 8589934592"), "{message}");
    assert!(message.contains("32-bit `usize`"), "{message}");
}

parray! {
    dmem int [64 * 256] CHAIN;
    cuda(int* src, int* dst) [64][256] SHIFT;
}

/// Launches back to back, each reading what other blocks of the launch before it wrote: on
/// a GPU with programmatic dependent launch a kernel may start while the grid before it
/// still runs (SPEC 4.2), and one that did not wait for that grid would read elements it
/// had not written yet.
#[test]
fn each_launch_sees_the_whole_grid_before_it() -> parray::Result<()> {
    let (mut a, mut b) = (CHAIN::create()?, CHAIN::create()?);
    detour!(SHIFT(&a, &mut b) {
        dst[$tid$] = 0;
    })?;
    let steps = 100;
    for _ in 0..steps {
        // Element t from t + 7 * 256 + 1: seven blocks on.
        detour!(SHIFT(&b, &mut a) {
            dst[$tid$] = src[($tid$ + 1793) % 16384] + 1;
        })?;
        std::mem::swap(&mut a, &mut b);
    }
    assert!(
        b.to_vec()?.iter().all(|&x| x == steps),
        "a launch read a stale element"
    );
    Ok(())
}
