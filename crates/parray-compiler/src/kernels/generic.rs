//! What a generic detour's kernel needs of the type it is instantiated with: the offset
//! function of its `$T[i][j]$` forms and the sizes of its `$size(T)$` and `$dim(T_k)$`,
//! prepended to the kernel's source when the detour first runs with that type.

use parray_layout::Module;

use super::build::{e, refused, Builder};
use crate::back::c::{self as emit_c, Dialect};
use crate::ir::{ExprKind, Function, Indexed, Ty};
use crate::passes::{bounds, check};

/// The body function a kernel calls for `$T[...]$` of its type parameter `ty`. Names
/// beginning with `__parray` are the compiler's.
pub fn generic_offset_function(ty: &str) -> String {
    format!("__parray_offset_{ty}")
}

/// The C constant of `$size(T)$` (`dim: None`) or `$dim(T_k)$` of a type parameter.
pub fn generic_size_name(ty: &str, dim: Option<usize>) -> String {
    match dim {
        None => format!("PARRAY_SIZE_{ty}"),
        Some(k) => format!("PARRAY_DIM_{ty}_{k}"),
    }
}

/// The prelude of a kernel with `$...$` forms of the type parameter `alias` instantiated
/// with the declared type `name` of `module`: its sizes, and its offset function (one
/// index per top-level dimension) as a body function, folded by the offset compiler as
/// for a named type and written by the C writer.
pub fn generic_prelude(module: &Module, name: &str, alias: &str) -> parray_layout::Result<String> {
    let def = module.resolve(&parray_layout::ast::Ident {
        name: name.to_string(),
        span: parray_layout::TextSpan::default(),
    })?;
    let kids = &module.node(def.node).children;
    let sizes: Vec<u64> = if kids.is_empty() {
        vec![module.size(def.node)]
    } else {
        kids.iter().map(|c| module.size(*c)).collect()
    };
    let vars: Vec<String> = (0..sizes.len()).map(|d| format!("i{d}")).collect();
    let names: Vec<&str> = vars.iter().map(String::as_str).collect();
    let off = parray_layout::index_function(module, name, &names)?;
    // A body of no thread array: only its function is written.
    let mut b = Builder::new("#parray {cuda() [1][1]} PRELUDE", "PRELUDE")?;
    let params: Vec<_> = vars
        .iter()
        .map(|v| b.local(v, false, Some(Ty::USIZE)))
        .collect();
    let value = e(ExprKind::Offset {
        off,
        args: params.iter().map(|p| e(ExprKind::Local(*p))).collect(),
        of: Indexed::of_type(module, name),
    });
    let function = Function {
        name: generic_offset_function(alias),
        span: crate::CodeSpan::call_site(),
        params,
        ret: Ty::USIZE,
        stmts: Vec::new(),
        value: Some(value),
    };
    let body = b.into_body(vec![function]);
    let typed = check::check(body).map_err(|failed| {
        let why: Vec<String> = failed.1.into_iter().map(|d| d.message).collect();
        refused("generic prelude", why.join("; "))
    })?;
    let mut text = format!(
        "#define {} {}\n",
        generic_size_name(alias, None),
        emit_c::unsigned_literal(module.size(def.node))
    );
    for (k, size) in sizes.iter().enumerate() {
        text += &format!(
            "#define {} {}\n",
            generic_size_name(alias, Some(k)),
            emit_c::unsigned_literal(*size)
        );
    }
    text += &emit_c::functions_source(&bounds::prove(typed), Dialect::Cuda);
    Ok(text)
}
