//! `parray copy FILE --from S --to D`: the plan of `#copy S(a) to D(b)` between arrays, as
//! the runtime does it (`parray_core::copy`), and the remap kernel when a device runs one.

use parray_core::{MemKind, TypeClass};

use crate::diag::Failure;
use crate::input::Input;

pub fn plan(input: &Input, from: &str, to: &str) -> Result<String, Failure> {
    let (s, d) = (input.target(from)?, input.target(to)?);
    let m = &input.module;
    let side = |t: &crate::input::Target| {
        let def = &m.types()[t.ty];
        match &def.class {
            TypeClass::Data { mem, elem } => Ok((*mem, *elem)),
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
    let where_ = |mem: Option<MemKind>| match mem {
        Some(MemKind::Dmem) => ("on a GPU", true),
        Some(_) => ("in host memory", false),
        // A view is where its storage is: both cases.
        None => ("where its storage is", false),
    };
    let mut text = String::new();
    let gpu_choices = |mem: Option<MemKind>| match mem {
        None => vec![false, true],
        Some(_) => vec![where_(mem).1],
    };
    for s_gpu in gpu_choices(s_mem) {
        for d_gpu in gpu_choices(d_mem) {
            let path = parray_core::copy::plan((m, from, s_gpu), (m, to, d_gpu))
                .map_err(|e| bad(e.to_string()))?;
            let at = |gpu: bool| if gpu { "on a GPU" } else { "in host memory" };
            text += &format!(
                "{from} ({}) to {to} ({}): {path:?}: {path}\n",
                at(s_gpu),
                at(d_gpu)
            );
            if path.remaps_on_device() && s_gpu && d_gpu {
                let kernel = parray_core::body::emit_c::remap_kernel(
                    "parray_copy",
                    s_elem,
                    (m, from),
                    (m, to),
                )
                .map_err(|e| bad(e.to_string()))?;
                text += &format!(
                    "  kernel: <<<{:?}, {:?}>>>\n{}",
                    kernel.grid, kernel.block, kernel.source
                );
            }
        }
    }
    Ok(text)
}

fn bad(message: String) -> Failure {
    Failure {
        message,
        snippet: None,
        code: crate::diag::EXIT_INPUT,
    }
}
