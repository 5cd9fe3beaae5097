//! The offset compiler: an index expression on a type becomes a simplified [`LinearForm`].
//!
//! Rule 8 of PARRAY.md decides how indices apply to a dimension; rules 1 to 5 give each
//! dimension's offset function, composed here symbolically with the smart constructors of
//! `expr`, which assume that every index lies inside the dimension it indexes.

use crate::ast::{Index, IndexExpr, IndexValue};
use crate::error::{Error, ErrorKind, Result, TextSpan};
use crate::expr::{digit, xor, LinearForm, Vars};
use crate::path::child_name;
use crate::rules::{Coupling, Domain};
use crate::tree::{Module, NodeId, NodeKind, Work};

/// Largest offset expression (in IR nodes) the compiler builds before giving up.
pub const MAX_EXPR_WEIGHT: usize = 10_000;

/// A compiled offset: the simplified expression and its index variables with their ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offset {
    pub expr: LinearForm,
    pub vars: Vars,
}

impl Offset {
    /// C/Rust source of the offset, variables by name.
    pub fn to_source(&self) -> String {
        self.expr.to_source(&self.vars)
    }

    pub fn as_const(&self) -> Option<u64> {
        self.expr.as_const()
    }

    /// For the offset function of one flat index `k` ([`offset_function`]): whether
    /// `off(v*q + r) == off(v*q) + r` and `off(v*q)` is a multiple of `v` for every `q` and
    /// `r < v`, i.e. the layout moves in aligned runs of `v` consecutive elements (CuTe's
    /// common vector of a layout, for one width). Decided on the simplified form: `k`
    /// itself is a term (or `k % m` with `v | m`), and every other term and the constant
    /// move in whole runs of `v`: a multiple of `v` times a value that is one over each
    /// run, a digit `(k / d) % m` with `v | d` or a swizzle's XOR of forms of such digits
    /// (rule 11: the 128-byte mode XORs the 16-byte chunk's index, above a vector of 4
    /// floats, so each vector stays whole).
    pub fn aligned_runs(&self, v: u64) -> bool {
        use crate::expr::Term;
        // The term that moves with `k % v`: `k`, or `k % m` with `m` a multiple of `v`.
        let unit = |c: u64, t: &Term| {
            c == 1
                && match t {
                    Term::Var(_) => true,
                    Term::Digit { of, div, modulo } => {
                        *div == 1
                            && of.as_var().is_some()
                            && modulo.is_none_or(|m| m.is_multiple_of(v))
                    }
                    Term::Xor { .. } => false,
                }
        };
        // A term of one value over each run: of `k / d` with `v | d` alone.
        fn per_run(t: &Term, v: u64) -> bool {
            match t {
                Term::Var(_) => false,
                Term::Digit { of, div, .. } => div.is_multiple_of(v) && of.as_var().is_some(),
                Term::Xor { a, b } => [a, b]
                    .iter()
                    .all(|f| f.terms.iter().all(|(_, t)| per_run(t, v))),
            }
        }
        self.expr.konst.is_multiple_of(v)
            && self.expr.terms.iter().filter(|(c, t)| unit(*c, t)).count() == 1
            && self
                .expr
                .terms
                .iter()
                .all(|(c, t)| unit(*c, t) || c.is_multiple_of(v) && per_run(t, v))
    }
}

/// A layout of rows: element `k` at `start + (k / width) * pitch + k % width`, `width`
/// consecutive elements per row and rows `pitch` apart (`pitch >= width`). Contiguous
/// order is one row of all the elements; a padded matrix, `[#P_0][W#P_1]` with `P`
/// declared `[H][PITCH]`, is `H` rows of `W` elements `PITCH` apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rows {
    pub start: u64,
    pub width: u64,
    pub pitch: u64,
}

impl Rows {
    /// The same elements as rows of `width` (a divisor of a contiguous layout's one row);
    /// `None` when the layout is not contiguous and its rows are not that wide.
    pub fn split(self, n: u64, width: u64) -> Option<Rows> {
        if self.width == width {
            Some(self)
        } else if self.width == n && n.is_multiple_of(width) {
            Some(Rows {
                start: self.start,
                width,
                pitch: width,
            })
        } else {
            None
        }
    }

    /// One past the last offset of `n` elements: how much of an array the rows reach.
    pub fn end(self, n: u64) -> u64 {
        self.start + (n / self.width - 1) * self.pitch + self.width
    }
}

impl Offset {
    /// For the offset function of one flat index `k` below `n` ([`offset_function`]): its
    /// rows ([`Rows`]), when it has the form `start + pitch * (k / width) + k % width` (or
    /// `start + k`, one row). Decided on the simplified form.
    pub fn rows(&self, n: u64) -> Option<Rows> {
        use crate::expr::Term;
        let start = self.expr.konst;
        let of_k = |of: &LinearForm| of.as_var().is_some();
        match self.expr.terms.as_slice() {
            [(1, Term::Var(_))] => Some(Rows {
                start,
                width: n,
                pitch: n,
            }),
            [a, b] => {
                let (column, row) = match (a, b) {
                    ((1, Term::Digit { div: 1, .. }), _) => (a, b),
                    _ => (b, a),
                };
                let width = match column {
                    (
                        1,
                        Term::Digit {
                            of,
                            div: 1,
                            modulo: Some(w),
                        },
                    ) if of_k(of) => *w,
                    _ => return None,
                };
                match row {
                    (pitch, Term::Digit { of, div, modulo })
                        if of_k(of)
                            && *div == width
                            && *pitch >= width
                            && n.is_multiple_of(width)
                            && modulo.is_none_or(|m| m * width >= n) =>
                    {
                        Some(Rows {
                            start,
                            width,
                            pitch: *pitch,
                        })
                    }
                    _ => None,
                }
            }
            _ => None,
        }
    }
}

/// The widest of `widths` (tried in order) by which a copy of `n` elements from the
/// layout `src` to the layout `dst` (offset functions of one flat index) can move whole
/// vectors: `n` is a multiple of it and both layouts move in aligned runs of it
/// ([`Offset::aligned_runs`]). How the remap kernel of a `#copy` between arrays and a
/// `#copy` in a detour body decide to move vectors.
pub fn common_vector(src: &Offset, dst: &Offset, n: u64, widths: &[u64]) -> Option<u64> {
    widths
        .iter()
        .copied()
        .find(|&w| w > 1 && n.is_multiple_of(w) && src.aligned_runs(w) && dst.aligned_runs(w))
}

/// Compile `T[...]...` (the paper's `$T[...]$`).
pub fn compile(module: &Module, ie: &IndexExpr) -> Result<Offset> {
    compile_with(module, ie, Vars::new())
}

/// [`compile`] with some variables' ranges already known (thread indices, say): each
/// variable's range is the tightest of these and of the dimensions it indexes.
pub fn compile_with(module: &Module, ie: &IndexExpr, vars: Vars) -> Result<Offset> {
    let dim = module.resolve(&ie.target)?;
    let mut c = Compiler::new(module, vars, dim.node);
    let index = whole_index(ie);
    // The first pass only gathers every variable's range (the tightest over all its
    // uses); the second simplifies with all of them known.
    c.index(dim.node, &index, &ie.target.name)?;
    c.coupling = Coupling::over(module, dim.node);
    let expr = c.index(dim.node, &index, &ie.target.name)?;
    let expr = c.finish(expr);
    Ok(Offset { expr, vars: c.vars })
}

/// The dimensions each variable of `ie` indexes, in first-use order (`A[i][i]` on `[4][3]`:
/// `i` indexes `A_0` and `A_1`). The compiled offset is the type's own only where every
/// variable lies below the size of each (variables are not range-checked at run time).
pub fn indexed_dimensions(module: &Module, ie: &IndexExpr) -> Result<Vec<(String, NodeId)>> {
    let dim = module.resolve(&ie.target)?;
    let mut c = Compiler::new(module, Vars::new(), dim.node);
    c.index(dim.node, &whole_index(ie), &ie.target.name)?;
    Ok(c.indexed)
}

/// The indices of `ie` as one index of its target (several: a nested list of them).
fn whole_index(ie: &IndexExpr) -> Index {
    match ie.indices.as_slice() {
        [one] => one.clone(),
        many => Index::Nested(many.to_vec(), ie.span),
    }
}

/// `T[v0][v1]...`, one variable per top-level dimension of the type or dimension `name`,
/// built without text: how a program evaluates a layout it chose at run time.
pub fn index_function(module: &Module, name: &str, vars: &[&str]) -> Result<Offset> {
    let here = TextSpan::default();
    let ie = IndexExpr {
        target: crate::ast::Ident {
            name: name.to_string(),
            span: here,
        },
        indices: vars
            .iter()
            .map(|v| Index::Value(IndexValue::Var(v.to_string()), here))
            .collect(),
        span: here,
    };
    compile(module, &ie)
}

/// The offset function of a dimension as a formula of one flat index called `var`.
pub fn offset_function(module: &Module, node: NodeId, var: &str) -> Result<Offset> {
    offset_function_by(module, node, var, 1)
}

/// The offset function of a dimension at every `step`-th element, `off(step * var)`, as a
/// formula of `var` (below `size / step`), simplified as [`offset_function`]'s: the offset
/// of each vector of a copy that moves `step` elements at a time.
///
/// # Panics
/// If `step` is 0 or does not divide the dimension's size.
pub fn offset_function_by(module: &Module, node: NodeId, var: &str, step: u64) -> Result<Offset> {
    let size = module.size(node);
    assert!(
        step > 0 && size.is_multiple_of(step),
        "a step of {step} over {size} elements"
    );
    let mut vars = Vars::new();
    let v = vars.bind(var, size / step - 1);
    let index = if size == step {
        LinearForm::constant(0)
    } else {
        LinearForm::var(v).scale(step)
    };
    let mut c = Compiler::new(module, vars, node);
    let expr = c.flat(node, index, TextSpan::default())?;
    let expr = c.finish(expr);
    Ok(Offset { expr, vars: c.vars })
}

struct Compiler<'m> {
    module: &'m Module,
    vars: Vars,
    /// Steps left: the composition of views of views must not walk every path.
    work: Work,
    /// Each variable and each dimension it indexes ([`indexed_dimensions`]).
    indexed: Vec<(String, NodeId)>,
    /// The dimension whose offsets are compiled.
    top: NodeId,
    /// The swizzled leaves and partners met by the walks of one pass (rule 11).
    coupling: Coupling<LinearForm>,
}

impl<'m> Compiler<'m> {
    /// A compiler of offsets of the dimension `top`.
    fn new(module: &'m Module, vars: Vars, top: NodeId) -> Self {
        Compiler {
            module,
            vars,
            work: Work::new(),
            indexed: Vec::new(),
            top,
            coupling: Coupling::over(module, top),
        }
    }

    /// The offset `walked` of a pass's walks, with the swizzled leaves' offsets added.
    fn finish(&mut self, walked: LinearForm) -> LinearForm {
        let next = Coupling::over(self.module, self.top);
        let coupling = std::mem::replace(&mut self.coupling, next);
        let forms = Forms { vars: &self.vars };
        walked.add(&coupling.finish(&forms), &self.vars)
    }

    /// One index component applied to a node (rule 8).
    fn index(&mut self, node: NodeId, idx: &Index, name: &str) -> Result<LinearForm> {
        match idx {
            Index::Value(v, span) => {
                let e = self.value(node, v, *span, name)?;
                self.flat(node, e, *span)
            }
            // `[[x]]` is `[x]`, except on a dimension with one sub-dimension, where rule 8
            // (k = 1) applies `[x]` to that sub-dimension (`x` may be nested for it).
            Index::Nested(list, _)
                if list.len() == 1 && self.module.node(node).children.len() != 1 =>
            {
                self.index(node, &list[0], name)
            }
            Index::Nested(list, span) => {
                let n = self.module.node(node);
                self.check_arity(node, list.len(), *span, name)?;
                match n.kind {
                    NodeKind::Compound => {
                        let mut sum = LinearForm::constant(0);
                        for (k, (child, sub)) in n.children.iter().zip(list).enumerate() {
                            let part = self.index(*child, sub, &child_name(name, k))?;
                            sum = sum.add(&part, &self.vars);
                        }
                        Ok(sum)
                    }
                    _ => {
                        let flat = self.flatten(node, list, name)?;
                        self.flat(node, flat, *span)
                    }
                }
            }
        }
    }

    fn check_arity(&self, node: NodeId, given: usize, span: TextSpan, name: &str) -> Result<()> {
        let have = self.module.node(node).children.len();
        if have == given {
            return Ok(());
        }
        let msg = if have == 0 {
            format!("`{name}` is a leaf dimension and takes one index, but {given} were given")
        } else {
            let dims = if have == 1 {
                "sub-dimension"
            } else {
                "sub-dimensions"
            };
            let were = if given == 1 {
                "index was"
            } else {
                "indices were"
            };
            let mut msg = format!("`{name}` has {have} {dims}, but {given} {were} given");
            // `X[[i][j]]` meant for the sub-dimensions of X's one sub-dimension.
            let only = &self.module.node(node).children;
            if have == 1 && self.module.node(only[0]).children.len() == given {
                let idx: String = (0..given).map(|k| format!("[i{k}]")).collect();
                msg += &format!(
                    ": its one sub-dimension `{name}_0` has {given}; index them nested, `{name}[[{idx}]]`, or through it, `{name}_0{idx}`"
                );
            }
            msg
        };
        Err(Error::new(ErrorKind::Index, span, msg))
    }

    /// A flat index value at a dimension of size n: a constant below n, or a variable
    /// whose range becomes `[0, n)`.
    fn value(
        &mut self,
        node: NodeId,
        v: &IndexValue,
        span: TextSpan,
        name: &str,
    ) -> Result<LinearForm> {
        let size = self.module.size(node);
        match v {
            IndexValue::Const(c) if *c >= size => Err(Error::new(
                ErrorKind::Index,
                span,
                format!("index {c} is out of range for `{name}` (size {size})"),
            )),
            IndexValue::Const(c) => Ok(LinearForm::constant(*c)),
            // An index into a dimension of size 1 can only be 0.
            IndexValue::Var(name) => {
                if !self.indexed.iter().any(|(n, d)| n == name && *d == node) {
                    self.indexed.push((name.clone(), node));
                }
                let v = self.vars.bind(name, size - 1);
                Ok(if self.vars.max(v) == 0 {
                    LinearForm::constant(0)
                } else {
                    LinearForm::var(v)
                })
            }
        }
    }

    /// Indices given through a structure, flattened row-major into one index of `node`.
    fn flatten(&mut self, node: NodeId, list: &[Index], name: &str) -> Result<LinearForm> {
        let children = self.module.node(node).children.clone();
        let mut flat = LinearForm::constant(0);
        let mut weight: u64 = children.iter().map(|c| self.module.size(*c)).product();
        for (k, (child, sub)) in children.iter().zip(list).enumerate() {
            weight /= self.module.size(*child);
            let part = self.flatten_one(*child, sub, &child_name(name, k))?;
            flat = flat.add(&part.scale(weight), &self.vars);
        }
        Ok(flat)
    }

    fn flatten_one(&mut self, node: NodeId, idx: &Index, name: &str) -> Result<LinearForm> {
        match idx {
            Index::Value(v, span) => self.value(node, v, *span, name),
            Index::Nested(list, _)
                if list.len() == 1 && self.module.node(node).children.len() != 1 =>
            {
                self.flatten_one(node, &list[0], name)
            }
            Index::Nested(list, span) => {
                self.check_arity(node, list.len(), *span, name)?;
                self.flatten(node, list, name)
            }
        }
    }

    /// `off_node(e)` for a flat index `e` (rules 1 to 5).
    fn flat(&mut self, node: NodeId, e: LinearForm, span: TextSpan) -> Result<LinearForm> {
        let forms = Forms { vars: &self.vars };
        self.module
            .offset_in(&forms, node, e, &mut self.coupling, &mut self.work)
            .map_err(|mut err| {
                err.span = span;
                err
            })
    }
}

/// The offset rules on linear forms, built with `expr`'s smart constructors.
struct Forms<'v> {
    vars: &'v Vars,
}

impl Domain for Forms<'_> {
    type Value = LinearForm;

    fn zero(&self) -> LinearForm {
        LinearForm::constant(0)
    }
    fn is_zero(&self, v: &LinearForm) -> bool {
        v.as_const() == Some(0)
    }
    fn fold(&self, v: &LinearForm) -> Option<u64> {
        v.as_const()
    }
    fn number(&self, n: u64) -> LinearForm {
        LinearForm::constant(n)
    }
    fn scale(&self, v: &LinearForm, k: u64) -> LinearForm {
        v.scale(k)
    }
    fn add(&self, a: &LinearForm, b: &LinearForm) -> LinearForm {
        a.add(b, self.vars)
    }
    fn digit(&self, v: &LinearForm, weight: u64, size: u64) -> LinearForm {
        digit(v, weight, Some(size), self.vars)
    }
    fn xor(&self, a: &LinearForm, b: &LinearForm) -> LinearForm {
        xor(a, b)
    }
    /// Building a form costs about its size again: charged, so that compositions of large
    /// forms stop long before they take seconds.
    fn charge(&self, v: &LinearForm, work: &mut Work) -> Result<()> {
        work.spend(v.weight() as u64)?;
        if v.weight() > MAX_EXPR_WEIGHT {
            return Err(Error::new(
                ErrorKind::Limit,
                TextSpan::default(),
                format!("the offset expression grows beyond {MAX_EXPR_WEIGHT} operations"),
            ));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_function_is_the_parsed_index_expression() {
        let m = Module::parse("dmem float [2][1024][512] A\nfloat [#A_1][[#A_0][#A_2]] M").unwrap();
        let built = index_function(&m, "M", &["i", "j"]).unwrap();
        let parsed = compile(&m, &crate::parse_index_expr("M[i][j]").unwrap()).unwrap();
        assert_eq!(built, parsed);
        assert_eq!(built.to_source(), "i * 512 + (j / 512) * 524288 + j % 512");
        assert!(index_function(&m, "Q", &["i"]).is_err());
    }
}
