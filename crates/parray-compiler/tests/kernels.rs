//! The kernels the runtime builds for copies, as the C writer prints them.

use parray_compiler::back::c::Dialect;
use parray_compiler::ir::Indexed;
use parray_compiler::kernels::{exchange_kernel, rows_kernel, ExchangeStep, Rows2d};
use parray_layout::copy::{flat_offsets, DigitExchange, RankDigit};
use parray_layout::eval::Program;
use parray_layout::{ElemType, Module};

/// The slab FFT's transpose on 4 ranks, as rank 1's GPU runs it: every access proved
/// (the kernels are built only so), the part walked by a grid-stride loop.
#[test]
fn exchange_kernels() {
    let m = Module::parse(
        "mpi [4] P
         dmem float2 [[#P][128]][512][512] SLABS_X
         dmem float2 [512][[#P][128]][512] SLABS_Y",
    )
    .unwrap();
    let (x, y) = (
        RankDigit::of(&m, "SLABS_X").unwrap(),
        RankDigit::of(&m, "SLABS_Y").unwrap(),
    );
    let ex = DigitExchange::of(x, y).unwrap();
    let kernels: Vec<String> = [
        ExchangeStep::Pack,
        ExchangeStep::Unpack,
        ExchangeStep::Local,
    ]
    .into_iter()
    .map(|step| {
        let k = exchange_kernel(
            ElemType::Float2,
            step,
            (&x, &y),
            Some(&ex),
            1,
            Dialect::Cuda,
        )
        .unwrap();
        format!("// {step:?}: {:?}\n{}", k.grid, k.source)
    })
    .collect();
    insta::assert_snapshot!(kernels.join("\n"));
}

/// A rank that holds no part has nothing to move: no kernel.
#[test]
fn no_exchange_kernel_for_a_rank_without_a_part() {
    let m = Module::parse(
        "mpi [4] P
         dmem float [[#P][128]][64] X
         dmem float [64][[#P][128]] Y",
    )
    .unwrap();
    let (x, y) = (
        RankDigit::of(&m, "X").unwrap(),
        RankDigit::of(&m, "Y").unwrap(),
    );
    let ex = DigitExchange::of(x, y).unwrap();
    let err = exchange_kernel(
        ElemType::Float,
        ExchangeStep::Pack,
        (&x, &y),
        Some(&ex),
        4,
        Dialect::Cuda,
    )
    .unwrap_err();
    assert!(err.message.contains("rank 4 holds no part"), "{err}");
}

/// The two sides of a 2-D copy of rows: row `r`, word `c` at `r * pitch + c`, and
/// storage that ends where the last row does (the copy's arrays may end there).
#[test]
fn rows_sides_are_the_rows_and_end_with_the_last() {
    let rows = Rows2d {
        word: ElemType::UChar,
        height: 3,
        width: 5,
        src_pitch: 7,
        dst_pitch: 5,
    };
    let m = rows.module().unwrap();
    for (ty, pitch) in [("FROM", 7), ("TO", 5)] {
        let (n, off) = flat_offsets(&m, ty).unwrap();
        assert_eq!(n, 15);
        let mut at = Program::new(&off.expr);
        let offsets: Vec<u64> = (0..n).map(|k| at.eval(&[k])).collect();
        let want: Vec<u64> = (0..n).map(|k| k / 5 * pitch + k % 5).collect();
        assert_eq!(offsets, want, "{ty}");
        assert_eq!(Indexed::of_type(&m, ty).extent, Some(2 * pitch + 5), "{ty}");
    }
}

/// The rows kernel of fft3d's gather at N = 1024 on 2 ranks (a chunk of 128 planes, the
/// peer's 4 MiB half of each, into a packed staging array): 16-byte words, sizes folded.
#[test]
fn rows_kernel_of_a_gather() {
    let gather = Rows2d {
        word: ElemType::Int4,
        height: 128,
        width: 1 << 18,
        src_pitch: 1 << 19,
        dst_pitch: 1 << 18,
    };
    let k = rows_kernel("parray_rows", gather, Dialect::Cuda).unwrap();
    insta::assert_snapshot!(format!("// {:?}\n{}", k.grid, k.source));
}
