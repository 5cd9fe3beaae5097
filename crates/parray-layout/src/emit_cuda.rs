//! CUDA C back end: offsets as C integer arithmetic for generated kernels.

use crate::expr::{Render, VarId};
use crate::offsets::Offset;

/// The offset as a C expression (a sum: parenthesise it to use it as an operand); `var`
/// names each variable (e.g. `tid_0` -> `blockIdx.x`).
pub fn to_c(off: &Offset, var: &dyn Fn(VarId) -> String) -> String {
    Render {
        expr: &off.expr,
        var,
    }
    .to_string()
}

/// The offset as a C expression with each variable written by its own name.
pub fn to_c_named(off: &Offset) -> String {
    to_c(off, &|v| off.vars.name(v).to_string())
}
