//! `parray copy FILE --from S --to D`: the plan of `#copy S(a) to D(b)` between arrays, as
//! the runtime does it (`parray_layout::copy`), and the remap kernel when a device runs one.

use parray_layout::copy::Place;
use parray_layout::{MemKind, TypeClass};

use crate::diag::Failure;
use crate::input::Input;

pub fn plan(input: &Input, from: &str, to: &str) -> Result<String, Failure> {
    let (s, d) = (input.target(from)?, input.target(to)?);
    let m = &input.module;
    let side = |t: &crate::input::Target| {
        let def = &m.types()[t.ty];
        match &def.class {
            TypeClass::Data { mem, elem, .. } => Ok((*mem, *elem)),
            TypeClass::Thread(_) => Err(bad(format!(
                "`{}` is a thread array; `#copy` copies data types",
                t.name
            ))),
        }
    };
    let ((s_mem, s_elem), (d_mem, d_elem)) = (side(&s)?, side(&d)?);
    let (n, k) = (m.size(s.node), m.size(d.node));
    if n != k {
        return Err(bad(format!(
            "`#copy` copies element k to element k: `{from}` has {n} elements and `{to}` has {k}"
        )));
    }
    if s_elem != d_elem {
        return Err(bad(format!(
            "`#copy` copies elements unchanged: `{from}` holds {s_elem} and `{to}` holds {d_elem}"
        )));
    }
    // A shared destination exists only in a cuda body, where the copy from global memory
    // may be TMA's; a view may be of either.
    let tma = match (s_mem, d_mem) {
        (None | Some(MemKind::Dmem), Some(MemKind::Smem)) => Some(tma(m, from, to, true)),
        (None | Some(MemKind::Dmem), None) => tma(m, from, to, false).into(),
        _ => None,
    }
    .flatten();
    if d_mem == Some(MemKind::Smem) {
        return Ok(tma.unwrap_or_default());
    }
    // Where an array of a type can be: a memory kind's place; a view, either. A second
    // GPU is shown for a destination that can be on one when the source is on GPU 0.
    let places = |mem: Option<MemKind>| match mem {
        Some(MemKind::Dmem | MemKind::Cmem) => vec![Place::Gpu(0)],
        Some(_) => vec![Place::Host],
        None => vec![Place::Host, Place::Gpu(0)],
    };
    let at = |place: Place| match place {
        Place::Host => "in host memory",
        Place::Gpu(0) => "on a GPU",
        Place::Gpu(_) => "on another GPU",
    };
    let mut text = String::new();
    for s_at in places(s_mem) {
        let mut d_places = places(d_mem);
        if s_at == Place::Gpu(0) && d_places.contains(&Place::Gpu(0)) {
            d_places.push(Place::Gpu(1));
        }
        for d_at in d_places {
            let path = parray_layout::copy::plan((m, from, s_at), (m, to, d_at))
                .map_err(|e| bad(e.to_string()))?;
            text += &format!(
                "{from} ({}) to {to} ({}): {path:?}: {path}\n",
                at(s_at),
                at(d_at)
            );
            if path.remaps_on_device() && s_at == d_at {
                let kernel = parray_compiler::kernels::remap_kernel(
                    "parray_copy",
                    s_elem,
                    (m, from),
                    (m, to),
                    parray_compiler::back::c::Dialect::Cuda,
                )
                .map_err(|e| bad(e.to_string()))?;
                text += &format!(
                    "  kernel: <<<{:?}, {:?}>>>\n{}",
                    kernel.grid.grid, kernel.grid.block, kernel.source
                );
            }
        }
    }
    Ok(text + &tma.unwrap_or_default())
}

/// The copy of a global tile into shared memory by TMA: the tensor map's box (the
/// planner's, `parray_layout::tma::plan`), or, where `refusal`, the rule that refuses it.
fn tma(m: &parray_layout::Module, from: &str, to: &str, refusal: bool) -> Option<String> {
    let plan = match parray_layout::tma::plan(m, from, to) {
        Ok(plan) => plan,
        Err(e) => {
            return refusal.then(|| {
                format!(
                "{from} (global memory) to {to} (shared memory), in a cuda body: not by TMA: {}\n",
                e.message
            )
            })
        }
    };
    let dims: Vec<String> = plan
        .dims
        .iter()
        .map(|d| format!("{} at stride {}", d.box_size, d.stride))
        .collect();
    Some(format!(
        "{from} (global memory) to {to} (shared memory), in a cuda body: by TMA, {} bytes a copy: a {}-dimensional box, innermost first: {} (elements of {from}'s array); {}; the stage at a multiple of {} bytes\n",
        plan.box_bytes(),
        plan.dims.len(),
        dims.join(", "),
        match plan.swizzle.span() {
            None => "no swizzle".to_string(),
            Some(span) => format!("the {span}-byte swizzle"),
        },
        plan.swizzle.atom_bytes(),
    ))
}

fn bad(message: String) -> Failure {
    Failure {
        message,
        snippet: None,
        code: crate::diag::EXIT_INPUT,
    }
}
