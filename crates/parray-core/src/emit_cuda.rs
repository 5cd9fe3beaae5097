//! CUDA C back end: offsets as C integer arithmetic for generated kernels.

use crate::expr::{Render, VarId};
use crate::offsets::Offset;

/// The offset as a C expression; `var` names each variable (e.g. `tid_0` -> `blockIdx.x`).
pub fn to_c(off: &Offset, var: &dyn Fn(VarId) -> String) -> String {
    let text = Render {
        expr: &off.expr,
        var,
    }
    .to_string();
    if off.as_const().is_some() || off.expr.as_var().is_some() || !text.contains(' ') {
        text
    } else {
        format!("({text})")
    }
}

/// The offset as a C expression with each variable written by its own name.
pub fn to_c_named(off: &Offset) -> String {
    to_c(off, &|v| off.vars.name(v).to_string())
}
