//! Writes a body as detour-body source, with Rust's precedence and no more parentheses
//! than Rust needs (so that a back end that loses a needed pair shows).

use crate::ast::{BinOp, Body, Expr, Index, Stmt, Tid};
use std::fmt::Write;

/// The names a body's text refers to: its declared types' and its shared array type's.
pub struct Names {
    pub decls: Vec<String>,
    pub shared: String,
}

const PREC_IF: u8 = 0;
const PREC_CAST: u8 = 10;
const PREC_UNARY: u8 = 11;
const PREC_ATOM: u8 = 12;

pub fn var(id: usize) -> String {
    format!("v{id}")
}

struct Printer<'a> {
    body: &'a Body,
    names: &'a Names,
    out: String,
}

/// The body's statements, one per line, indented by `indent` spaces.
pub fn body_text(body: &Body, names: &Names, indent: usize) -> String {
    let mut p = Printer {
        body,
        names,
        out: String::new(),
    };
    if body.shared.is_some() {
        p.line(indent, &format!("let s = {}::create();", names.shared));
    }
    for s in &body.stmts {
        p.stmt(s, indent);
    }
    p.out
}

fn prec(e: &Expr) -> u8 {
    match e {
        Expr::Lit { v, .. } if *v < 0 => PREC_UNARY,
        Expr::Neg(_) | Expr::Not(_) => PREC_UNARY,
        Expr::Bin(op, ..) => op.prec(),
        Expr::Cast(..) => PREC_CAST,
        Expr::If(..) => PREC_IF,
        _ => PREC_ATOM,
    }
}

impl Printer<'_> {
    fn line(&mut self, indent: usize, text: &str) {
        let _ = writeln!(self.out, "{:indent$}{text}", "");
    }

    fn block(&mut self, stmts: &[Stmt], indent: usize) {
        for s in stmts {
            self.stmt(s, indent + 4);
        }
    }

    fn stmt(&mut self, s: &Stmt, indent: usize) {
        match s {
            Stmt::Let {
                var: v,
                ty,
                mutable,
                annotate,
                init,
            } => {
                let m = if *mutable { "mut " } else { "" };
                let t = if *annotate {
                    format!(": {}", ty.name())
                } else {
                    String::new()
                };
                let text = format!("let {m}{}{t} = {};", var(*v), self.expr(init, 0));
                self.line(indent, &text);
            }
            Stmt::Assign { var: v, op, e } => {
                let text = format!("{} {}= {};", var(*v), op_text(*op), self.expr(e, 0));
                self.line(indent, &text);
            }
            Stmt::Store { j, op, e } => {
                let target = self.out_access(j);
                let text = format!("{target} {}= {};", op_text(*op), self.expr(e, 0));
                self.line(indent, &text);
            }
            Stmt::SharedStore { op, e } => {
                let text = format!("s[$tid_1$] {}= {};", op_text(*op), self.expr(e, 0));
                self.line(indent, &text);
            }
            Stmt::If { c, then, els } => {
                let text = format!("if {} {{", self.expr(c, 1));
                self.line(indent, &text);
                self.block(then, indent);
                if let Some(els) = els {
                    self.line(indent, "} else {");
                    self.block(els, indent);
                }
                self.line(indent, "}");
            }
            Stmt::While {
                counter,
                limit,
                c,
                body,
            } => {
                let w = format!("w{counter}");
                self.line(indent, &format!("let mut {w} = 0i32;"));
                let cond = match c {
                    Some(c) => format!(" && {}", self.expr(c, BinOp::LAnd.prec() + 1)),
                    None => String::new(),
                };
                self.line(indent, &format!("while {w} < {limit}i32{cond} {{"));
                self.line(indent + 4, &format!("{w} += 1;"));
                self.block(body, indent);
                self.line(indent, "}");
            }
            Stmt::For {
                var: v,
                lo,
                hi,
                inclusive,
                body,
                ..
            } => {
                let dots = if *inclusive { "..=" } else { ".." };
                // Casts parenthesised: `x as u8 {` reads as well, but a reader should not
                // have to wonder.
                let text = format!(
                    "for {} in {}{dots}{} {{",
                    var(*v),
                    self.expr(lo, PREC_UNARY),
                    self.expr(hi, PREC_UNARY)
                );
                self.line(indent, &text);
                self.block(body, indent);
                self.line(indent, "}");
            }
            Stmt::Break => self.line(indent, "break;"),
            Stmt::Continue => self.line(indent, "continue;"),
            Stmt::Return => self.line(indent, "return;"),
            Stmt::Atomic { slot, v } => {
                let text = format!(
                    "atomic_add(out + {}, {});",
                    self.body.owned() as usize + slot,
                    self.expr(v, 0)
                );
                self.line(indent, &text);
            }
            Stmt::Sync => self.line(indent, "#sync;"),
            Stmt::Shfl { var: v, x, d, .. } => {
                let text = format!(
                    "let {} = shfl_down({}, {});",
                    var(*v),
                    self.expr(x, 0),
                    self.expr(d, 0)
                );
                self.line(indent, &text);
            }
        }
    }

    fn out_access(&self, j: &Expr) -> String {
        let k = self.body.per_thread;
        if k == 1 {
            return "out[$tid$]".into();
        }
        let j = match j {
            Expr::Lit { v, .. } if *v < k as i128 => v.to_string(),
            other => format!("({} & {})", self.expr(other, BinOp::And.prec() + 1), k - 1),
        };
        format!("out[$tid$ * {k} + {j}]")
    }

    fn index(&self, ix: &Index) -> String {
        match ix {
            Index::Flat(e) => format!("[{}]", self.expr(e, 0)),
            Index::Group(c) => format!("[{}]", c.iter().map(|i| self.index(i)).collect::<String>()),
        }
    }

    /// `e` in a place that needs precedence `min` or higher.
    fn expr(&self, e: &Expr, min: u8) -> String {
        let text = match e {
            Expr::Lit { v, ty, suffix } => {
                let s = if *suffix { ty.name() } else { "" };
                format!("{v}{s}")
            }
            Expr::Bool(b) => b.to_string(),
            Expr::Var(v) => var(*v),
            Expr::Tid(Tid::Flat) => "$tid$".into(),
            Expr::Tid(Tid::Block) => "$tid_0$".into(),
            Expr::Tid(Tid::Thread) => "$tid_1$".into(),
            Expr::Neg(x) | Expr::Not(x) => {
                let sign = if matches!(e, Expr::Neg(_)) { "-" } else { "!" };
                // `-(-x)`, `!(-1i32)`: a unary operand of a unary operator in parentheses.
                let inner = if prec(x) <= PREC_UNARY {
                    format!("({})", self.expr(x, 0))
                } else {
                    self.expr(x, PREC_UNARY)
                };
                format!("{sign}{inner}")
            }
            Expr::Bin(op, l, r) => {
                let p = op.prec();
                // A cast left of `<` or `<<` would start generic arguments.
                let lmin = if ends_with_cast(l) && (op.comparison() || p == 7) {
                    PREC_ATOM
                } else if op.comparison() {
                    p + 1
                } else {
                    p
                };
                format!(
                    "{} {} {}",
                    self.expr(l, lmin),
                    op.symbol(),
                    self.expr(r, p + 1)
                )
            }
            Expr::Cast(x, ty) => format!("{} as {}", self.expr(x, PREC_CAST), ty.name()),
            Expr::If(c, a, b) => format!(
                "if {} {{ {} }} else {{ {} }}",
                self.expr(c, 1),
                self.expr(a, 0),
                self.expr(b, 0)
            ),
            Expr::Offset(d, ixs) => format!(
                "${}{}$",
                self.names.decls[*d],
                ixs.iter().map(|i| self.index(i)).collect::<String>()
            ),
            Expr::Paren(x) => format!("({})", self.expr(x, 0)),
            Expr::Out(j) => self.out_access(j),
            Expr::Shared(None) => "s[$tid_1$]".into(),
            Expr::Shared(Some(i)) => format!(
                "s[{} % {}]",
                self.expr(i, BinOp::Rem.prec()),
                self.body.threads
            ),
        };
        if prec(e) < min {
            format!("({text})")
        } else {
            text
        }
    }
}

/// Whether `e` written out ends in `as T` (which a following `<` would extend into
/// generic arguments).
fn ends_with_cast(e: &Expr) -> bool {
    match e {
        Expr::Cast(..) => true,
        Expr::Bin(op, _, r) => prec(r) > op.prec() && ends_with_cast(r),
        _ => false,
    }
}

fn op_text(op: Option<BinOp>) -> &'static str {
    op.map_or("", BinOp::symbol)
}
