//! The kernels the runtime builds for copies, as the C writer prints them.

use parray_compiler::back::c::Dialect;
use parray_compiler::kernels::{exchange_kernel, ExchangeStep};
use parray_layout::copy::{DigitExchange, RankDigit};
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
