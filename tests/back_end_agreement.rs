//! Bodies on which the back ends disagreed (found by differential testing, issue 25), each
//! run on 2x8 pthd threads and on a 2x8 cuda grid (the GPU under `PARRAY_BACKEND=cuda`,
//! else the CPU emulation) and compared with values computed here in plain Rust. The
//! bugs in the CUDA C (2-6) show only where the C runs: on the GPU machine, and in the
//! differential fuzzer's host build of the kernels (`tests/fuzz`); here each also pins
//! the C construct that was wrong.

use parray::prelude::*;

parray! {
    int [16] IX;
    paged int [#IX_0] HOST_I;
    dmem int [#IX_0] DEV_I;
    paged unsigned [#IX_0] HOST_U;
    dmem unsigned [#IX_0] DEV_U;
    pthd [2][8] CPU;
    cuda(int* out, unsigned* uout) [2][8] GPU;
    smem int [8] SHARED;
    int [4][4] V;
    int [1][4] W;
    dmem int [#V_0][#V_1] INPUT;
    paged int [#V_0][#V_1] HOST_INPUT;
    cuda(int* out, int* inp) [2][8] READS;
}

/// Runs `body` on the pthd array (`out`, `uout` captured) and on the cuda grid (`out`,
/// `uout` parameters), and gives each one's two outputs.
macro_rules! on_both {
    (|$out:ident, $uout:ident| $body:tt) => {{
        let (mut host, mut hostu) = (HOST_I::create()?, HOST_U::create()?);
        {
            #[allow(unused_variables)]
            let ($out, $uout) = (&mut host, &mut hostu);
            detour!(CPU $body)?;
        }
        let (mut dev, mut devu) = (DEV_I::create()?, DEV_U::create()?);
        detour!(GPU(&mut dev, &mut devu) $body)?;
        let source = kernel_source!(GPU(dev, devu) $body);
        (
            (host.to_vec()?, hostu.to_vec()?),
            (dev.to_vec()?, devu.to_vec()?),
            source,
        )
    }};
}

/// Bug 1: `x[i] op= v` was written `old op v` without parentheses on the CPU back ends
/// (`out[i] *= 2 + 3` gave 203).
#[test]
fn compound_assignment_to_an_element_takes_the_whole_value() -> parray::Result<()> {
    let (cpu, gpu, _) = on_both!(|out, uout| {
        out[$tid$] = 100;
        out[$tid$] *= 2 + 3;
        out[$tid$] -= 1 + $tid$ as i32;
        uout[$tid$] = 1;
        uout[$tid$] += 1 ^ 6;
        uout[$tid$] <<= 1 + 1;
    });
    let want_i: Vec<i32> = (0..16).map(|t| 500 - (1 + t)).collect();
    let want_u: Vec<u32> = vec![(1 + (1 ^ 6)) << 2; 16];
    assert_eq!(cpu, (want_i.clone(), want_u.clone()), "pthd");
    assert_eq!(gpu, (want_i, want_u), "cuda");
    Ok(())
}

parray! {
    dmem int [2][8] SUMS;
    cuda(int* sums) [2][8] SHARED_GRID;
}

/// Bug 1 on a shared array, which only a cuda body has.
#[test]
fn compound_assignment_to_a_shared_element() -> parray::Result<()> {
    let mut sums = SUMS::create()?;
    detour!(SHARED_GRID(&mut sums) {
        let s = SHARED::create();
        s[$tid_1$] = $tid_1$ as i32;
        s[$tid_1$] += 1 ^ 6;
        s[$tid_1$] *= 2 + 1;
        sums[$tid$] = s[$tid_1$];
    })?;
    let want: Vec<i32> = (0..16).map(|t| ((t % 8) + (1 ^ 6)) * 3).collect();
    assert_eq!(sums.to_vec()?, want);
    Ok(())
}

/// Bug 2: C computes `u8`/`i8` arithmetic in `int`, so a result that Rust wraps at 8
/// bits (a shift that drops bits, `!`) must be converted back before it is read.
#[test]
fn eight_bit_arithmetic_wraps_at_eight_bits() -> parray::Result<()> {
    let (cpu, gpu, source) = on_both!(|out, uout| {
        let c = ($tid$ * 37 + 11) as u8;
        let d = ($tid$ * 5) as i8 - 40;
        uout[$tid$] = ((c << 4) >> 4) as u32 + ((!c) as u32) * 256 + ((c << 3) as u32) * 65536;
        let shifted = (d << 2) >> 1;
        out[$tid$] = shifted as i32 * 1000 + (!d) as i32 + (if c << 4 > 100 { 1 } else { 0 });
    });
    let want_u: Vec<u32> = (0..16u32)
        .map(|t| {
            let c = (t * 37 + 11) as u8;
            ((c << 4) >> 4) as u32 + (!c as u32) * 256 + ((c << 3) as u32) * 65536
        })
        .collect();
    let want_i: Vec<i32> = (0..16i32)
        .map(|t| {
            let c = (t * 37 + 11) as u8;
            let d = (t * 5) as i8 - 40;
            ((d << 2) >> 1) as i32 * 1000 + (!d) as i32 + i32::from(c << 4 > 100)
        })
        .collect();
    assert_eq!(cpu, (want_i.clone(), want_u.clone()), "pthd");
    assert_eq!(gpu, (want_i, want_u), "cuda");
    assert!(
        source.contains("(unsigned char)(c << 4) >> 4"),
        "the shifted u8 is cut to 8 bits before it is shifted back:\n{source}"
    );
    assert!(
        source.contains("signed char d"),
        "i8 is `signed char`:\n{source}"
    );
    Ok(())
}

/// Found by the fuzzer after bug 2's fix: `x /= !c` on a `u8` divided by C's `int`
/// complement of `c` (a negative number), not by its 8 bits.
#[test]
fn an_eight_bit_divisor_is_cut_to_eight_bits() -> parray::Result<()> {
    let (cpu, gpu, source) = on_both!(|out, uout| {
        let mut q = 200u8;
        q /= !(if $tid_1$ == 6 { 200u8 } else { 250u8 });
        let mut r = 100u8;
        r %= !($tid_1$ as u8 + 240u8);
        uout[$tid$] = q as u32 * 1000 + r as u32;
    });
    let want: Vec<u32> = (0..16u32)
        .map(|t| {
            let q = 200u8 / !(if t % 8 == 6 { 200u8 } else { 250u8 });
            let r = 100u8 % !(t as u8 % 8 + 240);
            q as u32 * 1000 + r as u32
        })
        .collect();
    assert_eq!(cpu.1, want, "pthd");
    assert_eq!(gpu.1, want, "cuda");
    assert!(source.contains("/= (unsigned char)(~"), "{source}");
    Ok(())
}

/// Bug 3: `for i in a..=b` where `b` is its type's largest value never ended in C
/// (`i <= 255` holds for every `unsigned char`).
#[test]
fn an_inclusive_range_to_the_types_maximum_ends() -> parray::Result<()> {
    let (cpu, gpu, source) = on_both!(|out, uout| {
        let mut sum = 0u32;
        for i in 250u8..=255u8 {
            sum += i as u32;
        }
        let top = 4294967295u32 - $tid$ as u32 % 2;
        for j in 4294967290u32..=top {
            sum += j - 4294967290u32;
        }
        uout[$tid$] = sum;
        let mut n = 0i32;
        for k in 2147483645i32..=2147483647i32 {
            n += k - 2147483640;
        }
        out[$tid$] = n;
    });
    let want_u: Vec<u32> = (0..16u32)
        .map(|t| (250..=255u32).sum::<u32>() + (0..=5 - t % 2).sum::<u32>())
        .collect();
    let want_i = vec![5 + 6 + 7; 16];
    assert_eq!(cpu, (want_i.clone(), want_u.clone()), "pthd");
    assert_eq!(gpu, (want_i, want_u), "cuda");
    assert!(
        !source.contains("i <= 255"),
        "no loop test that every value passes:\n{source}"
    );
    Ok(())
}

/// Bug 4: `-(-x)` was written `--x`, a decrement.
#[test]
fn a_negated_negation_is_not_a_decrement() -> parray::Result<()> {
    let (cpu, gpu, source) = on_both!(|out, uout| {
        let x = $tid$ as i32 - 3;
        let y = -(-x);
        out[$tid$] = y * 100 + x + -(-7);
    });
    let want: Vec<i32> = (0..16).map(|t| (t - 3) * 101 + 7).collect();
    assert_eq!(cpu.0, want, "pthd");
    assert_eq!(gpu.0, want, "cuda");
    assert!(!source.contains("--"), "no decrement:\n{source}");
    Ok(())
}

/// Bugs 5 and 6 are about a cuda body's 32-bit `usize` (a pthd body's is 64 bits): a
/// `u64` index made the offset 64-bit in C (an ambiguous `max`), and `!` of index
/// arithmetic written in `int` was negative.
#[test]
fn offsets_and_their_complements_are_32_bit_unsigned() -> parray::Result<()> {
    let (mut dev, mut devu) = (DEV_I::create()?, DEV_U::create()?);
    macro_rules! on_gpu {
        ($body:tt) => {{
            detour!(GPU(&mut dev, &mut devu) $body)?;
            kernel_source!(GPU(dev, devu) $body)
        }};
    }
    let source = on_gpu!({
        let x = $tid$ as u64 * 3;
        uout[$tid$] = ($V[x % 2][3]$.max($dim_1(V)$) + $V[x % 4][x % 4]$ * 2) as u32;
        out[$tid$] = (!($tid_1$ & 7usize) >> 28) as i32 + (!$V[$tid_0$][1]$ >> 30) as i32 * 100;
    });
    let want_u: Vec<u32> = (0..16u32)
        .map(|t| {
            let x = t * 3;
            ((x % 2) * 4 + 3).max(4) + ((x % 4) * 4 + x % 4) * 2
        })
        .collect();
    let want_i: Vec<i32> = (0..16u32)
        .map(|t| ((!((t % 8) & 7)) >> 28) as i32 + ((!((t / 8) * 4 + 1)) >> 30) as i32 * 100)
        .collect();
    assert_eq!(devu.to_vec()?, want_u);
    assert_eq!(dev.to_vec()?, want_i);
    assert!(
        !source.contains("~((int)"),
        "no complement of an `int`:\n{source}"
    );
    assert!(
        source.contains("(unsigned)(x % 2ull)"),
        "a u64 index is cut to the offset's 32 bits:\n{source}"
    );
    Ok(())
}

/// Bug 7: a proved access was written as a block, which rustc read as a loop's body after
/// `for i in 0..` and as a statement at the start of an `if` value's branch; so was a
/// `$T[...]$` form with an index into a dimension of size 1 (found by the fuzzer).
#[test]
fn a_proved_access_is_an_expression_anywhere() -> parray::Result<()> {
    let values: Vec<i32> = (0..16).map(|k| k * 3 + 1).collect();
    let (mut input, mut cpu_in) = (INPUT::create()?, HOST_INPUT::create()?);
    input.copy_from_slice(&values)?;
    cpu_in.copy_from_slice(&values)?;
    let (mut dev, mut cpu_out) = (DEV_I::create()?, HOST_I::create()?);
    macro_rules! reading {
        (|$out:ident, $inp:ident| $body:tt) => {{
            detour!(READS(&mut dev, &input) $body)?;
            let ($out, $inp) = (&mut cpu_out, &cpu_in);
            detour!(CPU $body)?;
        }};
    }
    reading!(|out, inp| {
        let first = inp[$V[0][$tid_1$ % 4]$];
        let mut n = 0i32;
        for i in 0u32..inp[$V[2][3]$] as u32 % 7 {
            n += i as i32;
        }
        let v = if $tid_1$ > 3 { inp[$V[0][3]$] & 7 } else { 1 };
        for j in 0u32..$W[$tid_1$ / 8][2]$ as u32 {
            n += j as i32;
        }
        let w = if $tid_1$ > 5 { $W[$tid_0$ / 2][3]$ as i32 + 1 } else { 0 };
        out[$tid$] = first + n * 100 + v * 10000 + w * 1000000;
    });
    let want: Vec<i32> = (0..16)
        .map(|t| {
            let n: i32 = (0..(values[11] as u32 % 7) as i32).sum::<i32>() + (0..2).sum::<i32>();
            let v = if t % 8 > 3 { values[3] & 7 } else { 1 };
            let w = if t % 8 > 5 { 4 } else { 0 };
            values[t as usize % 4] + n * 100 + v * 10000 + w * 1000000
        })
        .collect();
    assert_eq!(dev.to_vec()?, want, "cuda");
    assert_eq!(cpu_out.to_vec()?, want, "pthd");
    Ok(())
}

/// Bug 8: an unsuffixed literal in an atomic on a captured array was typed `i32`, so the
/// body of a `u32` array compiled in a cuda body and not on pthd threads.
#[test]
fn an_atomics_literal_takes_the_element_type() -> parray::Result<()> {
    let (cpu, gpu, _) = on_both!(|out, uout| {
        atomic_add(uout + $tid_0$, 5);
        atomic_add(out + ($tid_1$ % 4), 2);
    });
    let mut want_u = vec![0u32; 16];
    want_u[0] = 40;
    want_u[1] = 40;
    let mut want_i = vec![0i32; 16];
    want_i[..4].fill(8);
    assert_eq!(cpu, (want_i.clone(), want_u.clone()), "pthd");
    assert_eq!(gpu, (want_i, want_u), "cuda");
    Ok(())
}
