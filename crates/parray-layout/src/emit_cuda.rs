//! CUDA C back end: offsets as C integer arithmetic for generated kernels.

use crate::expr::{Render, VarId};
use crate::offsets::Offset;

/// The offset as a C expression (a sum: parenthesise it to use it as an operand); `var`
/// names each variable (e.g. `tid_0` -> `blockIdx.x`).
pub fn to_c(off: &Offset, var: &dyn Fn(VarId) -> String) -> String {
    Render {
        expr: &off.expr,
        var,
        bits: false,
    }
    .to_string()
}

/// [`to_c`] for an offset computed in C's `int` over indices known to be non-negative:
/// a power-of-two digit is a shift and a mask, which `int` division would not be (it
/// rounds towards zero, so the compiler adds a sign fix-up).
pub fn to_c_int(off: &Offset, var: &dyn Fn(VarId) -> String) -> String {
    Render {
        expr: &off.expr,
        var,
        bits: true,
    }
    .to_string()
}

/// The offset as a C expression with each variable written by its own name.
pub fn to_c_named(off: &Offset) -> String {
    to_c(off, &|v| off.vars.name(v).to_string())
}
