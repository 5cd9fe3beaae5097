//! Reading the declarations and resolving names given on the command line.

use std::io::Read;

use parray_layout::ast::{Item, Program};
use parray_layout::parser::parse_size_expr;
use parray_layout::tree::LookupError;
use parray_layout::{compile, parse_index_expr, Error, Module, NodeId, Offset, TextSpan};

use crate::diag::{snippet, Failure, Source};

/// The input file: its name for messages, its text, and the parsed program.
pub struct Input {
    pub name: String,
    pub text: String,
    pub program: Program,
    pub module: Module,
}

impl Input {
    /// Read `path` (`-` is standard input), parse it and resolve it with the `--const`s.
    pub fn load(path: &str, consts: &[String]) -> Result<Input, Failure> {
        let (overrides, used_by_consts) = parse_consts(consts)?;
        let (name, bytes) = if path == "-" {
            let mut bytes = Vec::new();
            std::io::stdin()
                .lock()
                .read_to_end(&mut bytes)
                .map_err(|e| Failure::input(format!("cannot read standard input: {e}")))?;
            ("<stdin>".to_string(), bytes)
        } else {
            let bytes = std::fs::read(path)
                .map_err(|e| Failure::input(format!("cannot read `{path}`: {}", io_reason(&e))))?;
            (path.to_string(), bytes)
        };
        let text = match String::from_utf8(bytes) {
            Ok(t) => t,
            Err(e) => {
                let good = e.utf8_error().valid_up_to();
                let bytes = e.into_bytes();
                let text = String::from_utf8_lossy(&bytes).into_owned();
                // Locate the first bad byte in the valid prefix (a lossy copy keeps it).
                let prefix = std::str::from_utf8(&bytes[..good]).expect("valid up to here");
                let span = TextSpan::locate(prefix, good, good);
                return Err(Failure::input(format!(
                    "{name}: line {}, column {}: the input is not valid UTF-8 text",
                    span.line, span.col
                ))
                .with_snippet(snippet(
                    &Source {
                        name: &name,
                        text: &text,
                    },
                    TextSpan::locate(&text, good, good + 1),
                )));
            }
        };
        let program =
            parray_layout::parse_program(&text).map_err(|e| file_error(&name, &text, e))?;
        // A `--const` for a name the file neither declares nor uses would be ignored.
        for (c, _) in &overrides {
            let known = program.items.iter().any(
                |item| matches!(item, parray_layout::ast::Item::Const(k) if k.name.name == *c),
            ) || program
                .items
                .iter()
                .flat_map(parray_layout::ast::Item::names_used)
                .any(|(n, _)| n == *c)
                || used_by_consts.contains(c);
            if !known {
                return Err(Failure::input(format!(
                    "in --const {c}=...: {name} neither declares nor uses a constant `{c}`"
                )));
            }
        }
        let module = Module::build(&program, &overrides)
            .map_err(|e| file_error(&name, &text, locate_in_decl(e, &program)))?;
        Ok(Input {
            name,
            text,
            program,
            module,
        })
    }

    /// An error about the file's text.
    pub fn error(&self, e: Error) -> Failure {
        file_error(&self.name, &self.text, locate_in_decl(e, &self.program))
    }

    /// The dimensions to work on: the `--type` names, or every declared type.
    pub fn targets(&self, names: &[String]) -> Result<Vec<Target>, Failure> {
        if names.is_empty() {
            return Ok(self
                .module
                .types()
                .iter()
                .enumerate()
                .map(|(ty, t)| Target {
                    name: t.name.clone(),
                    ty,
                    node: t.root,
                    from_flag: false,
                })
                .collect());
        }
        names.iter().map(|n| self.target(n)).collect()
    }

    /// The file's one data type, for commands that draw one (`--type` left out).
    pub fn only_data_type(&self) -> Result<String, Failure> {
        let data: Vec<&str> = self
            .module
            .types()
            .iter()
            .filter(|t| matches!(t.class, parray_layout::TypeClass::Data { .. }))
            .map(|t| t.name.as_str())
            .collect();
        match data.as_slice() {
            [one] => Ok(one.to_string()),
            [] => Err(Failure::input(
                "the file declares no data type to draw".to_string(),
            )),
            many => Err(Failure::input(format!(
                "the file declares {} data types: name one with --type ({})",
                many.len(),
                many.join(", ")
            ))),
        }
    }

    /// One `--type NAME`.
    pub fn target(&self, name: &str) -> Result<Target, Failure> {
        match self.module.lookup(name) {
            Ok(d) => Ok(Target {
                name: name.to_string(),
                ty: d.ty,
                node: d.node,
                from_flag: true,
            }),
            Err(e) => {
                let msg = match e {
                    LookupError::Unknown => {
                        let declared: Vec<&str> = self
                            .module
                            .types()
                            .iter()
                            .map(|t| t.name.as_str())
                            .collect();
                        if declared.is_empty() {
                            format!("unknown type `{name}`: the input declares no types")
                        } else {
                            format!("unknown type `{name}` (declared: {})", declared.join(", "))
                        }
                    }
                    e => e.message(name),
                };
                Err(Failure::input(format!("in --type {name}: {msg}")))
            }
        }
    }

    /// `offset_function(node, var)`, with errors placed at the target's declaration.
    pub fn offset_function(&self, t: &Target, var: &str) -> Result<Offset, Failure> {
        parray_layout::offset_function(&self.module, t.node, var)
            .map_err(|e| self.target_error(t, e))
    }

    /// An error about a target: on the command line (`--type`) or at its declaration.
    pub fn target_error(&self, t: &Target, e: Error) -> Failure {
        if t.from_flag {
            Failure::input(format!("in --type {}: {}", t.name, e.message))
        } else {
            let def = &self.module.types()[t.ty];
            let mut e = e.in_decl(&def.name);
            if e.span.line == 0 {
                e.span = def.span;
            }
            self.error(e)
        }
    }

    /// Compile an `EXPR` argument.
    pub fn compile_arg(&self, expr: &str) -> Result<Offset, Failure> {
        let arg_error = |e: Error| {
            Failure::input(format!("in expression `{expr}`: {e}")).with_snippet(snippet(
                &Source {
                    name: "<expression>",
                    text: expr,
                },
                e.span,
            ))
        };
        let ie = parse_index_expr(expr).map_err(arg_error)?;
        compile(&self.module, &ie).map_err(arg_error)
    }
}

/// A dimension named on the command line or a declared type.
pub struct Target {
    pub name: String,
    /// Index of the declared type it belongs to.
    pub ty: usize,
    pub node: NodeId,
    /// Named by `--type` (errors point at the command line).
    pub from_flag: bool,
}

fn io_reason(e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => "no such file".to_string(),
        std::io::ErrorKind::PermissionDenied => "permission denied".to_string(),
        _ => e.to_string(),
    }
}

fn file_error(name: &str, text: &str, e: Error) -> Failure {
    let snip = snippet(&Source { name, text }, e.span);
    Failure::input(e.to_string()).with_snippet(snip)
}

/// Errors that the library raises without a position (limits met while resolving a
/// declaration) get the position of the declaration they occurred in.
fn locate_in_decl(mut e: Error, program: &Program) -> Error {
    if e.span.line != 0 {
        return e;
    }
    if let Some(d) = &e.decl {
        let span = program.items.iter().find_map(|item| match item {
            Item::Type(t) if &t.name.name == d => Some(t.span),
            Item::Const(c) if &c.name.name == d => {
                Some(c.value.as_ref().map_or(c.name.span, |v| v.span))
            }
            _ => None,
        });
        if let Some(span) = span {
            e.span = span;
        }
    }
    e
}

/// The `--const`s: each name with its value, and the names their values use.
type Consts = (Vec<(String, u64)>, Vec<String>);

/// `--const NAME=VALUE`s, evaluated in order (a value may use the constants before it),
/// and the names their values use.
fn parse_consts(consts: &[String]) -> Result<Consts, Failure> {
    let mut out: Vec<(String, u64)> = Vec::new();
    let mut used = Vec::new();
    for c in consts {
        let Some((name, value)) = c.split_once('=') else {
            return Err(Failure::input(format!(
                "in --const {c}: expected NAME=VALUE (for example --const N=256)"
            )));
        };
        let name = name.trim();
        let ident = name
            .chars()
            .next()
            .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_')
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if !ident {
            return Err(Failure::input(format!(
                "in --const {c}: `{name}` is not a name: a name is an identifier ([A-Za-z_][A-Za-z0-9_]*)"
            )));
        }
        let value_error = |e: Error| {
            Failure::input(format!("in --const {c}: {e}")).with_snippet(snippet(
                &Source {
                    name: "<--const value>",
                    text: value,
                },
                e.span,
            ))
        };
        let expr = parse_size_expr(value).map_err(|e| {
            // The parser's expectations come from a dimension's brackets; a value is a size
            // expression alone.
            let mut e = e;
            if let Some((before, _)) = e.message.split_once(", `]` or `#`") {
                e.message = format!(
                    "{before}{}",
                    &e.message[before.len() + ", `]` or `#`".len()..]
                );
            }
            value_error(e)
        })?;
        used.extend(expr.names().into_iter().map(|(n, _)| n));
        let scope = Module::build(&Program { items: Vec::new() }, &out).map_err(value_error)?;
        let v = scope.eval_size(&expr).map_err(value_error)?;
        out.retain(|(n, _)| n != name);
        out.push((name.to_string(), v));
    }
    Ok((out, used))
}
