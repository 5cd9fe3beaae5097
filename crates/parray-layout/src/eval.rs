//! Fast evaluation of compiled offsets, for whoever evaluates one offset expression at
//! very many points (the `parray` command prints a million offsets of Fig 17's M; a
//! program tabulates a layout at run time).
//!
//! Walking the expression tree for every index is slow, so [`Program`] lowers it once: to a
//! flat sum `konst + sum(k * ((x / d) % m))` when every digit is a digit of one variable
//! (the common case: natural types, transposes, tilings), and otherwise to postfix code
//! for a small stack machine. Both compute exactly what [`LinearForm::eval`] computes (the same
//! wrapping arithmetic), which the unit tests below check.

use crate::expr::{LinearForm, Term};

/// A divisor or modulus, with powers of two lowered to shifts and masks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Div {
    One,
    Shift(u32),
    By(u64),
}

impl Div {
    fn new(d: u64) -> Div {
        if d == 1 {
            Div::One
        } else if d.is_power_of_two() {
            Div::Shift(d.trailing_zeros())
        } else {
            Div::By(d)
        }
    }

    #[inline(always)]
    fn div(self, x: u64) -> u64 {
        match self {
            Div::One => x,
            Div::Shift(s) => x >> s,
            Div::By(d) => x / d,
        }
    }

    #[inline(always)]
    fn rem(self, x: u64) -> u64 {
        match self {
            Div::One => 0,
            Div::Shift(s) => x & ((1u64 << s) - 1),
            Div::By(d) => x % d,
        }
    }
}

/// One term `k * ((x_var / div) % modulo)` of a flat sum.
#[derive(Debug, Clone, Copy)]
struct FlatTerm {
    k: u64,
    var: usize,
    div: Div,
    modulo: Option<Div>,
}

#[derive(Debug, Clone, Copy)]
enum Op {
    Const(u64),
    Var(usize),
    Mul(u64),
    Add,
    Div(Div),
    Rem(Div),
    Xor,
}

#[derive(Debug, Clone)]
enum Code {
    Flat { konst: u64, terms: Vec<FlatTerm> },
    Stack { ops: Vec<Op>, depth: usize },
}

/// An offset expression lowered for repeated evaluation.
#[derive(Debug, Clone)]
pub struct Program {
    code: Code,
    stack: Vec<u64>,
}

impl Program {
    pub fn new(e: &LinearForm) -> Program {
        if let Some((konst, terms)) = flat(e) {
            return Program {
                code: Code::Flat { konst, terms },
                stack: Vec::new(),
            };
        }
        let mut ops = Vec::new();
        lower(e, &mut ops);
        let depth = max_depth(&ops);
        Program {
            code: Code::Stack { ops, depth },
            stack: Vec::with_capacity(depth),
        }
    }

    /// True when the expression lowered to the flat sum (the fast path).
    #[cfg(test)]
    pub fn is_flat(&self) -> bool {
        matches!(self.code, Code::Flat { .. })
    }

    /// The value of the expression for the variable values `vars` (indexed by `VarId`).
    #[inline]
    pub fn eval(&mut self, vars: &[u64]) -> u64 {
        run(&self.code, &mut self.stack, vars)
    }

    /// [`Program::eval`] from a shared program: a stack program allocates its stack.
    #[inline]
    pub fn value(&self, vars: &[u64]) -> u64 {
        run(&self.code, &mut Vec::new(), vars)
    }
}

#[inline]
fn run(code: &Code, stack: &mut Vec<u64>, vars: &[u64]) -> u64 {
    match code {
        Code::Flat { konst, terms } => {
            let mut acc = *konst;
            for t in terms {
                let q = t.div.div(vars[t.var]);
                let v = match t.modulo {
                    Some(m) => m.rem(q),
                    None => q,
                };
                acc = acc.wrapping_add(t.k.wrapping_mul(v));
            }
            acc
        }
        Code::Stack { ops, depth } => {
            stack.clear();
            stack.reserve(*depth);
            for op in ops {
                match *op {
                    Op::Const(c) => stack.push(c),
                    Op::Var(v) => stack.push(vars[v]),
                    Op::Mul(k) => {
                        let top = stack.last_mut().expect("lowered code is balanced");
                        *top = top.wrapping_mul(k);
                    }
                    Op::Add => {
                        let b = stack.pop().expect("lowered code is balanced");
                        let top = stack.last_mut().expect("lowered code is balanced");
                        *top = top.wrapping_add(b);
                    }
                    Op::Div(d) => {
                        let top = stack.last_mut().expect("lowered code is balanced");
                        *top = d.div(*top);
                    }
                    Op::Rem(m) => {
                        let top = stack.last_mut().expect("lowered code is balanced");
                        *top = m.rem(*top);
                    }
                    Op::Xor => {
                        let b = stack.pop().expect("lowered code is balanced");
                        let top = stack.last_mut().expect("lowered code is balanced");
                        *top ^= b;
                    }
                }
            }
            stack.pop().unwrap_or(0)
        }
    }
}

/// The flat form, when every term is a variable or a digit of a bare variable.
fn flat(e: &LinearForm) -> Option<(u64, Vec<FlatTerm>)> {
    let mut terms = Vec::with_capacity(e.terms.len());
    for (k, t) in &e.terms {
        let term = match t {
            Term::Var(v) => FlatTerm {
                k: *k,
                var: v.0 as usize,
                div: Div::One,
                modulo: None,
            },
            Term::Digit { of, div, modulo } => FlatTerm {
                k: *k,
                var: of.as_var()?.0 as usize,
                div: Div::new(*div),
                modulo: modulo.map(Div::new),
            },
            Term::Xor { .. } => return None,
        };
        terms.push(term);
    }
    Some((e.konst, terms))
}

fn lower(e: &LinearForm, ops: &mut Vec<Op>) {
    let mut first = true;
    if e.konst != 0 || e.terms.is_empty() {
        ops.push(Op::Const(e.konst));
        first = false;
    }
    for (k, t) in &e.terms {
        match t {
            Term::Var(v) => ops.push(Op::Var(v.0 as usize)),
            Term::Digit { of, div, modulo } => {
                lower(of, ops);
                if *div != 1 {
                    ops.push(Op::Div(Div::new(*div)));
                }
                if let Some(m) = modulo {
                    ops.push(Op::Rem(Div::new(*m)));
                }
            }
            Term::Xor { a, b } => {
                lower(a, ops);
                lower(b, ops);
                ops.push(Op::Xor);
            }
        }
        if *k != 1 {
            ops.push(Op::Mul(*k));
        }
        if !first {
            ops.push(Op::Add);
        }
        first = false;
    }
}

fn max_depth(ops: &[Op]) -> usize {
    let (mut d, mut max) = (0usize, 0usize);
    for op in ops {
        match op {
            Op::Const(_) | Op::Var(_) => d += 1,
            Op::Add | Op::Xor => d -= 1,
            _ => {}
        }
        max = max.max(d);
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{offset_function, Module};

    fn check(src: &str) {
        let m = Module::parse(src).unwrap();
        let mut nodes = Vec::new();
        for t in m.types() {
            let mut todo = vec![t.root];
            while let Some(n) = todo.pop() {
                nodes.push(n);
                todo.extend(m.node(n).children.iter().copied());
            }
        }
        for n in nodes {
            let f = offset_function(&m, n, "i").unwrap();
            let mut p = Program::new(&f.expr);
            let mut slow = Program {
                code: Code::Stack {
                    ops: {
                        let mut ops = Vec::new();
                        lower(&f.expr, &mut ops);
                        ops
                    },
                    depth: 0,
                },
                stack: Vec::new(),
            };
            for i in 0..m.size(n).min(5000) {
                let want = f.expr.eval(&[i]);
                assert_eq!(p.eval(&[i]), want, "{} at {i}", f.to_source());
                assert_eq!(slow.eval(&[i]), want, "{} at {i}", f.to_source());
                assert_eq!(want, m.offset_at(n, i));
            }
        }
    }

    #[test]
    fn lowered_code_agrees_with_the_expression() {
        check("pinned float [[3][2]][4] A\nfloat [#A_1][#A_0] B");
        check("dmem float [2][1024][512] A\nfloat [#A_1][[#A_0][#A_2]] M");
        check("smem float2 [16][17] A\nsmem float2 [#A_0][16#A_1] B");
        check("dmem float [4][1024][256] A\nfloat [#A_1][[#A_0][#A_2]] M");
        check("dmem float [2][2][512][512] A\nfloat [[#A_0][#A_2]][[#A_1][#A_3]] M");
        check(
            "const N = 256
dmem float [N][N] type
dmem float [[N/16][[4][4]]#type_0][[N/32][32]#type_1] A
dmem float [[N/32][32]#type_0][[N/256][[128][2]]#type_1] B
dmem float [#A_0][#B_1] C
dmem float [#C_0_1][#C_1_1_1] C0
smem float [32][17] S
smem float [32#S_0][[4][4]#S_1] S0
float [5][7][3] X
float [[2][3]#X_1][[10][3]#X] Y
float [[3][7]#Y_1][[3]#Y_0] W
float [[#Y_1][#Y_0]] Z",
        );
        check("smem bf16 [[8][8]][[8 ^ T_0_1][8]] T\nbf16 [#T_1][#T_0] V");
    }

    #[test]
    fn stack_machine_on_nested_digits() {
        use crate::expr::Term;
        use crate::VarId;
        use std::sync::Arc;
        // 3 + 2*((x*5 + 1) / 3 % 7) + (x / 4)
        let inner = LinearForm {
            terms: vec![(5, Term::Var(VarId(0)))],
            konst: 1,
        };
        let e = LinearForm {
            terms: vec![
                (
                    2,
                    Term::Digit {
                        of: Arc::new(inner),
                        div: 3,
                        modulo: Some(7),
                    },
                ),
                (
                    1,
                    Term::Digit {
                        of: Arc::new(LinearForm::var(VarId(0))),
                        div: 4,
                        modulo: None,
                    },
                ),
            ],
            konst: 3,
        };
        let mut p = Program::new(&e);
        assert!(!p.is_flat());
        for x in 0..1000 {
            assert_eq!(p.eval(&[x]), e.eval(&[x]));
        }
    }
}
