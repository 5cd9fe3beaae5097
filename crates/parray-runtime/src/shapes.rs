//! Sizes given when the program runs (`const N;` in a `parray!` block): each is bound once
//! per process, and a type whose sizes use one is resolved from its declarations and the
//! bound values when it is first used, then kept (a value never changes once bound, so
//! neither does a module built from it). Layer 3 (arrays and types).

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use parray_layout::ast::Item;
use parray_layout::eval::Program;
use parray_layout::{ErrorKind, Module};

use crate::error::{Error, Result};

/// A run-time size, `const N;` in a `parray!` block: `N.bind(n)?` gives it its value, once
/// per process. Sizes are one per program by name: two blocks that declare `const N;`
/// declare the same size.
///
/// A constant computed from run-time sizes (`const M = N / 16;`) is one too: its value
/// follows theirs, and it cannot be bound itself.
#[derive(Debug)]
pub struct RuntimeSize {
    name: &'static str,
    /// For a computed constant: its declarations (and those it uses), and their module,
    /// built from the bound sizes at the first read and kept, as a run-time type's is.
    derived: Option<(&'static str, &'static OnceLock<&'static Module>)>,
}

/// Bound values, by name.
fn bound() -> &'static Mutex<HashMap<&'static str, u64>> {
    static BOUND: OnceLock<Mutex<HashMap<&'static str, u64>>> = OnceLock::new();
    BOUND.get_or_init(Default::default)
}

impl RuntimeSize {
    #[doc(hidden)]
    pub const fn new(name: &'static str) -> Self {
        RuntimeSize {
            name,
            derived: None,
        }
    }

    #[doc(hidden)]
    pub const fn derived(
        name: &'static str,
        text: &'static str,
        module: &'static OnceLock<&'static Module>,
    ) -> Self {
        RuntimeSize {
            name,
            derived: Some((text, module)),
        }
    }

    /// The size's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// Give the size its value, for the rest of the process. Binding it again to the same
    /// value is a no-op; to another is `Error::Shape` (types built from the first value
    /// may be in use), as is zero. A declaration that cannot take the value (a tile that
    /// does not divide it) is an error where the type is first used (`create()`, a
    /// detour), naming the declaration and the constraint.
    pub fn bind(&self, value: usize) -> Result<()> {
        let refuse = |reason: String| Error::Shape {
            size: self.name,
            value: value as u64,
            reason,
        };
        if self.derived.is_some() {
            return Err(refuse(
                "it is computed from other sizes: bind the sizes it is computed from".into(),
            ));
        }
        if value == 0 {
            return Err(refuse("a size must be positive".into()));
        }
        let mut bound = bound().lock().unwrap_or_else(|e| e.into_inner());
        match bound.get(self.name) {
            Some(&v) if v != value as u64 => Err(refuse(format!(
                "it is already bound to {v}, and a size keeps its value for the process"
            ))),
            _ => {
                bound.insert(self.name, value as u64);
                Ok(())
            }
        }
    }

    /// The bound value (a computed constant's value), if any.
    pub fn get(&self) -> Option<usize> {
        if self.derived.is_some() {
            return self.value().ok();
        }
        let bound = bound().lock().unwrap_or_else(|e| e.into_inner());
        bound.get(self.name).map(|&v| v as usize)
    }

    /// The value, or `Error::Unbound` naming the size that is not bound yet
    /// (`Error::Declaration` where a computed constant's declarations cannot take the
    /// bound values). What a body that names the size reads when its detour starts.
    pub fn value(&self) -> Result<usize> {
        let unbound = |size: &str| Error::Unbound {
            type_name: self.name,
            size: size.to_string(),
        };
        match self.derived {
            None => self.get().ok_or_else(|| unbound(self.name)),
            Some((text, cell)) => {
                let module = runtime_module(cell, text, self.name)?;
                let v = module
                    .constant(self.name)
                    .ok_or_else(|| unbound(self.name))?;
                Ok(v as usize)
            }
        }
    }
}

/// Every run-time size bound so far and its value, by name.
pub fn bound_values() -> Vec<(&'static str, u64)> {
    let bound = bound().lock().unwrap_or_else(|e| e.into_inner());
    let mut values: Vec<(&'static str, u64)> = bound.iter().map(|(n, v)| (*n, *v)).collect();
    values.sort();
    values
}

/// The module of a type whose sizes are all numbers, declared by `text` (its declarations
/// and those it uses), resolved at its first use and kept in the type's own `cell`.
pub fn literal_module(cell: &'static OnceLock<Module>, text: &'static str) -> &'static Module {
    cell.get_or_init(|| {
        // `parray!` resolved this very text when it expanded.
        Module::parse(text).unwrap_or_else(|e| {
            panic!("parray: declarations that resolved at compile time do not at run time ({e}):\n{text}")
        })
    })
}

/// The module of the run-time type `name` declared by `text` (its declarations and those
/// it uses), built from the bound sizes at its first use and kept in the type's own `cell`
/// for the process (a bound value never changes, so neither does the module).
pub fn runtime_module(
    cell: &'static OnceLock<&'static Module>,
    text: &'static str,
    name: &'static str,
) -> Result<&'static Module> {
    if let Some(m) = cell.get() {
        return Ok(m);
    }
    let refuse = |sizes: String, declaration: String, reason: String| Error::Declaration {
        type_name: name,
        sizes,
        declaration,
        reason,
    };
    // Parsed at compile time already: an error here is the text's, said as it is.
    let program = parray_layout::parse_program(text)
        .map_err(|e| refuse(String::new(), text.to_string(), e.to_string()))?;
    let bindings: Vec<(String, u64)> = bound_values()
        .into_iter()
        .map(|(n, v)| (n.to_string(), v))
        .collect();
    let module = Module::build(&program, &bindings).map_err(|e| match e.kind {
        ErrorKind::Unbound => Error::Unbound {
            type_name: name,
            size: e.message.split('`').nth(1).unwrap_or_default().to_string(),
        },
        _ => {
            let runtime = program.runtime_names();
            let declaration = program.items.iter().find_map(|item| match item {
                Item::Type(t) if Some(&t.name.name) == e.decl.as_ref() => {
                    Some(parray_layout::as_written(&text[t.span.start..t.span.end]))
                }
                // A constant computed from run-time sizes: its line.
                Item::Const(c) if c.name.name == name => text
                    .lines()
                    .find(|l| l.trim_start().starts_with(&format!("const {name}")))
                    .map(|l| parray_layout::as_written(l.trim())),
                _ => None,
            });
            refuse(
                bindings
                    .iter()
                    .filter(|(n, _)| runtime.contains(n))
                    .map(|(n, v)| format!("{n} = {v}"))
                    .collect::<Vec<_>>()
                    .join(", "),
                declaration.unwrap_or_default(),
                e.message,
            )
        }
    })?;
    // Kept for the process, as the modules of literal types are (two threads racing here
    // each build one; the second is leaked unused).
    let module: &'static Module = Box::leak(Box::new(module));
    Ok(cell.get_or_init(|| module))
}

/// A type's module where no `Result` can be returned (`DataType::module`): an unbound
/// size or a declaration that cannot take it is a panic with the error's message. Arrays
/// and detours ask `DataType::try_module` first and return the error instead.
#[track_caller]
pub fn module_or_panic(module: Result<&'static Module>) -> &'static Module {
    module.unwrap_or_else(|e| panic!("{e}"))
}

/// The sizes of the top-level dimensions of `name` in `module`.
pub fn runtime_dims(module: &Module, name: &str) -> Vec<usize> {
    let root = module.lookup(name).expect("a declared type resolves").node;
    let kids = &module.node(root).children;
    if kids.is_empty() {
        return vec![module.size(root) as usize];
    }
    kids.iter().map(|&c| module.size(c) as usize).collect()
}

/// A run-time type's sizes and offset function, resolved once (`DataType::offsets`): its
/// top-level sizes and the form `NAME[i0][i1]` with one index per top-level dimension,
/// copied out of the module where a loop of a body starts, so that the loop reads them
/// from registers (SPEC.md 3.1).
#[derive(Clone, Copy)]
pub struct BoundOffsets<const RANK: usize> {
    name: &'static str,
    dims: [usize; RANK],
    size: usize,
    form: FormAt,
}

impl<const RANK: usize> BoundOffsets<RANK> {
    /// The offsets of the type `name` of `module` (built from the bound sizes), whose
    /// top-level sizes are `dims`; its form kept for the process, as the module is.
    pub fn new(module: &Module, name: &'static str, dims: &[usize]) -> Self {
        let index = parray_compiler::ir::RuntimeIndex::top_level(name, RANK);
        let vars: Vec<&str> = index.vars.iter().map(String::as_str).collect();
        let form: &'static RuntimeForm = Box::leak(Box::new(RuntimeForm::new(
            module,
            index.text.clone(),
            &vars,
        )));
        let root = module.lookup(name).expect("a declared type resolves").node;
        BoundOffsets {
            name,
            dims: dims.try_into().expect("one size per top-level dimension"),
            size: module.size(root) as usize,
            form: form.hoisted(),
        }
    }
}

impl<const RANK: usize> crate::types::Offsets for BoundOffsets<RANK> {
    #[inline(always)]
    fn size(self) -> usize {
        self.size
    }

    #[inline(always)]
    fn dim(self, k: usize) -> usize {
        self.dims[k]
    }

    #[inline(always)]
    #[track_caller]
    fn offset_of(self, index: &[usize]) -> usize {
        if index.len() != RANK {
            crate::types::wrong_rank(self.name, RANK, index.len());
        }
        for (d, (&i, &size)) in index.iter().zip(&self.dims).enumerate() {
            if i >= size {
                crate::types::index_out_of_range(self.name, d, i, size);
            }
        }
        self.form.at(index)
    }

    #[inline(always)]
    fn is_strided(self) -> bool {
        self.form.is_strided()
    }
}

/// A `$...$` offset form of a run-time type in a body that the CPU runs (pthd, the
/// emulation): the text the front end compiled at its probe (`parray_compiler::ir::RuntimeIndex`),
/// compiled again at the bound sizes, once per site, as a kernel's specialisation compiles
/// it; then evaluated. Its accesses are checked where they are made.
pub struct RuntimeForm {
    text: String,
    program: std::result::Result<Program, parray_layout::Error>,
    /// The form as `konst + sum of coef[v] * arg v`, where it is that (a strided layout,
    /// the common case): `[konst, coef...]` for up to 7 arguments.
    linear: Option<[usize; 8]>,
}

impl RuntimeForm {
    /// The form `text` of `module`, its variables `vars` in the order of its arguments.
    pub fn new(module: &Module, text: impl Into<String>, vars: &[&str]) -> Self {
        let text = text.into();
        let offset = parray_layout::parse_index_expr(&text).and_then(|ie| {
            let mut known = parray_layout::Vars::new();
            for v in vars {
                known.bind(v, u64::MAX);
            }
            parray_layout::compile_with(module, &ie, known)
        });
        let linear = offset.as_ref().ok().and_then(|off| linear(&off.expr));
        RuntimeForm {
            text,
            program: offset.map(|off| Program::new(&off.expr)),
            linear,
        }
    }

    /// The form as a value a loop holds in registers ([`FormAt`]).
    pub fn hoisted(&'static self) -> FormAt {
        FormAt {
            linear: self.linear,
            form: self,
        }
    }

    /// The offset at the argument values `args`. A form that does not fit its type at
    /// the bound sizes is a panic naming it (a cuda detour's launch, which makes the
    /// kernel first, returns that error before any thread runs).
    #[inline]
    #[track_caller]
    pub fn at(&self, args: &[usize]) -> usize {
        evaluate(&self.linear, self, args)
    }

    /// The offset by the offset compiler's program (a form with digits).
    #[track_caller]
    fn by_program(&self, args: &[usize]) -> usize {
        let program = self
            .program
            .as_ref()
            .unwrap_or_else(|e| panic!("`${}$` at the bound sizes: {e}", self.text));
        // Without allocating, for up to 8 arguments.
        let mut vars = [0u64; 8];
        match args.len() <= vars.len() {
            true => {
                for (v, &a) in vars.iter_mut().zip(args) {
                    *v = a as u64;
                }
                program.value(&vars[..args.len()]) as usize
            }
            false => {
                let vars: Vec<u64> = args.iter().map(|&a| a as u64).collect();
                program.value(&vars) as usize
            }
        }
    }
}

/// A [`RuntimeForm`] where a loop of a body starts: its multiples copied out (a value the
/// loop keeps in registers, where the form's own fields are memory a store in the loop
/// might change, for all the optimiser knows).
#[derive(Clone, Copy)]
pub struct FormAt {
    linear: Option<[usize; 8]>,
    form: &'static RuntimeForm,
}

impl FormAt {
    /// Whether the form is a sum of multiples of its arguments (no digits).
    #[inline(always)]
    pub fn is_strided(self) -> bool {
        self.linear.is_some()
    }

    /// [`RuntimeForm::at`].
    #[inline(always)]
    #[track_caller]
    pub fn at(self, args: &[usize]) -> usize {
        evaluate(&self.linear, self.form, args)
    }
}

/// The offset of `form` at `args`: `c[0] + sum of c[1 + v] * args[v]` where its multiples
/// `linear` are known (wherever they are held), else by its program.
#[inline(always)]
#[track_caller]
fn evaluate(linear: &Option<[usize; 8]>, form: &RuntimeForm, args: &[usize]) -> usize {
    match linear {
        Some(c) => {
            let terms = c[1..].iter().zip(args);
            terms.fold(c[0], |acc, (k, a)| acc.wrapping_add(k.wrapping_mul(*a)))
        }
        None => form.by_program(args),
    }
}

/// `[konst, coef of variable 0, 1, ...]` of `e` when it is a sum of multiples of its
/// variables (no digits), of at most 7 of them, and each number fits a `usize`.
fn linear(e: &parray_layout::LinearForm) -> Option<[usize; 8]> {
    let mut c = [0usize; 8];
    c[0] = usize::try_from(e.konst).ok()?;
    for (k, t) in &e.terms {
        let parray_layout::expr::Term::Var(v) = t else {
            return None;
        };
        let slot = c.get_mut(1 + v.0 as usize)?;
        *slot = slot.checked_add(usize::try_from(*k).ok()?)?;
    }
    Some(c)
}

/// The size of the dimension `dim` (`AL_1_0`) of `module`, a run-time type's.
#[track_caller]
pub fn dim_size(module: &Module, dim: &str) -> usize {
    match module.lookup(dim) {
        Ok(d) => module.size(d.node) as usize,
        // The front end found it at the probe, and sizes do not change the tree.
        Err(_) => panic!("`{dim}` is no dimension of its type at the bound sizes"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A form's value, by its sum of multiples where it is one and by its program where
    /// it has digits, is the offset compiler's for every index.
    #[test]
    fn a_run_time_form_evaluates_as_the_offset_compiler_says() {
        let m = Module::parse(
            "#parray {paged float [6][10]} A\n\
             #parray {float [#A_1][#A_0]} T\n\
             #parray {float [[#A_1][#A_0]]} TF",
        )
        .unwrap();
        // (form, its variables, whether it is a sum of multiples of them)
        let cases: [(&'static str, &[&str], bool); 3] = [
            ("A[i][j]", &["i", "j"], true),
            ("T[j][i]", &["j", "i"], true),
            ("TF[k]", &["k"], false), // (k % 6) * 10 + k / 6: digits
        ];
        for (text, vars, linear) in cases {
            let form = RuntimeForm::new(&m, text, vars);
            assert_eq!(form.linear.is_some(), linear, "{text}");
            let ie = parray_layout::parse_index_expr(text).unwrap();
            let off = parray_layout::compile(&m, &ie).unwrap();
            for a in 0..6 {
                for b in 0..6 {
                    let args = [a, b];
                    let args = &args[..vars.len()];
                    let values: Vec<u64> = off
                        .vars
                        .names()
                        .map(|n| args[vars.iter().position(|v| *v == n).unwrap()] as u64)
                        .collect();
                    assert_eq!(
                        form.at(args) as u64,
                        off.expr.eval(&values),
                        "{text} {args:?}"
                    );
                }
            }
        }
    }
}
