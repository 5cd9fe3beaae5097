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
}

/// Resolve `program`, each run-time size at [`PROBE`].
pub fn resolve(program: &Program) -> parray_layout::Result<Resolved> {
    let module = Module::build(program, &probe(program))?;
    Ok(Resolved {
        module,
        runtime: program.runtime_names(),
    })
}

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
