//! Run-time sizes at compile time. A `const N;` has no value until the program binds it,
//! so the declarations that use it (the run-time types) are resolved here with a probe
//! value, to check their structure (names, references, ranks, memory kinds) and nothing
//! else: no number of a run-time type may reach generated code. Their forms become
//! run-time forms (the generic path, `dollar.rs`), and their items read the module the
//! runtime builds from the bound values (`decl.rs`).

use parray_layout::ast::{Item, Program};
use parray_layout::Module;

/// The value every run-time size takes while its declarations are checked at compile
/// time: 2^12 * 3^2 * 5 * 7, which tiles of powers of two up to 4096 and of 3, 5, 7 and 9
/// divide, and whose cube fits in 64 bits.
pub const PROBE: u64 = (1 << 12) * 9 * 5 * 7;

/// A module resolved at compile time, and the names in it whose sizes are known only
/// when the program runs.
pub struct Resolved {
    pub module: Module,
    pub runtime: Vec<String>,
    /// The declarations resolved, for a second look at other sizes.
    pub program: Program,
}

/// Resolve `program`, each run-time size at [`PROBE`].
pub fn resolve(program: &Program) -> parray_layout::Result<Resolved> {
    Ok(Resolved {
        module: build_at_probe(program)?,
        runtime: program.runtime_names(),
        program: program.clone(),
    })
}

/// Why the cuda thread array `name` of `resolved` cannot have its sizes given at run
/// time, if it cannot: its block is numbers, so that its thread indices are the same
/// expressions of the hardware's at every size its grid fits the hardware's as it does
/// at the probe (the emulation computes them as the kernel does; a kernel specialised at
/// sizes where they are not is refused at its launch).
pub fn runtime_grid_refusal(resolved: &Resolved, name: &str) -> Option<String> {
    // The declarations again with every run-time size at twice the probe: a number that
    // differs between the two is one given at run time (a build it cannot do compares
    // nothing).
    let twice: Vec<(String, u64)> = probe(&resolved.program)
        .into_iter()
        .map(|(n, v)| (n, 2 * v))
        .collect();
    let moved = Module::build(&resolved.program, &twice).ok()?;
    let (a, b) = (&resolved.module, &moved);
    let (Ok(ra), Ok(rb)) = (a.lookup(name), b.lookup(name)) else {
        return None;
    };
    let (top_a, top_b) = (&a.node(ra.node).children, &b.node(rb.node).children);
    if top_a.len() != 2 || top_b.len() != 2 {
        return None;
    }
    // The block's whole tree, size by size.
    let mut stack = vec![(top_a[1], top_b[1])];
    while let Some((x, y)) = stack.pop() {
        if a.size(x) != b.size(y) {
            return Some(FIXED_BLOCK.into());
        }
        stack.extend(
            a.node(x)
                .children
                .iter()
                .copied()
                .zip(b.node(y).children.iter().copied()),
        );
    }
    None
}

/// `program`'s module with each run-time size at [`PROBE`]; its errors name no probe
/// number. A grid sized at run time is held to CUDA's limits when its sizes are bound
/// (the kernel's specialisation), not at the probe's large numbers.
pub fn build_at_probe(program: &Program) -> parray_layout::Result<Module> {
    Module::build_with_grids_later(program, &probe(program), &program.runtime_names())
        .map_err(|e| block_at_run_time(program, e))
}

/// A cuda array refused at the probe (over CUDA's limits) because a run-time size sizes
/// its block: said so, without the probe's numbers.
fn block_at_run_time(program: &Program, e: parray_layout::Error) -> parray_layout::Error {
    let Some(decl) = e
        .decl
        .clone()
        .filter(|d| program.runtime_names().contains(d))
    else {
        return e;
    };
    let part = program.items.iter().find_map(|item| match item {
        Item::Type(t) if t.name.name == decl => t.dims.iter().position(|d| d.span == e.span),
        _ => None,
    });
    let why = match part {
        Some(1) => FIXED_BLOCK,
        _ => return e,
    };
    parray_layout::Error::new(
        e.kind,
        e.span,
        format!("`{decl}` has a size given at run time, but {why}"),
    )
    .in_decl(&decl)
}

/// Why a cuda array cannot be sized at run time as declared.
const FIXED_BLOCK: &str =
    "a block's sizes are numbers (the grid may be sized at run time: `[ceil(N / 256)][256]`)";

/// The probe binding of each run-time size of `program`.
pub fn probe(program: &Program) -> Vec<(String, u64)> {
    program
        .items
        .iter()
        .filter_map(|item| match item {
            Item::Const(c) if c.value.is_none() => Some((c.name.name.clone(), PROBE)),
            _ => None,
        })
        .collect()
}
