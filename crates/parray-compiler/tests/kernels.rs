//! The kernels the runtime builds for copies, as the C writer prints them.

use parray_compiler::back::c::{exchange_kernel, ExchangeStep};
use parray_layout::copy::{DigitExchange, RankDigit};
use parray_layout::{ElemType, Module};

/// The slab FFT's transpose on 4 ranks, as the GPU runs it.
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
    .map(|step| exchange_kernel(ElemType::Float2, step, &x, &y, Some(&ex)))
    .collect();
    insta::assert_snapshot!(kernels.join("\n"));
}
