//! `parray explain`: a type's dimension tree, for a person to read (the text itself is
//! `parray_layout::explain`'s; this resolves the command line's names).

use parray_layout::DimRef;

use crate::diag::Failure;
use crate::input::Input;

/// The explanation of each `--type` (or of every declared type).
pub fn explain(input: &Input, names: &[String]) -> Result<String, Failure> {
    let targets = input.targets(names)?;
    Ok(parray_layout::explain::explain(
        &input.module,
        targets.iter().map(|t| {
            let dim = DimRef {
                ty: t.ty,
                node: t.node,
            };
            (t.name.as_str(), dim)
        }),
    ))
}
