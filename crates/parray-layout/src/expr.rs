//! The offset IR: a sum of constant-weighted terms, kept simplified as it is built.
//!
//! Offsets only ever multiply by constants, so every offset is a *linear form*
//! `c0 + k1*t1 + k2*t2 + ...` with non-negative constants, whose terms are index variables
//! or *digits* `(e / d) % m` of smaller forms (and, for a swizzle, the bitwise XOR
//! `a ^ b` of two digits, SPEC 2.5 rule 11). The smart constructors below keep that form
//! canonical using the range of every variable (an index is always inside its dimension):
//! constants fold, equal terms merge, a division or remainder that the ranges make
//! redundant disappears, and adjacent digits of one value coalesce back into the value
//! (`(x / 512) * 512 + x % 512 == x`), as CuTe's `coalesce` merges modes.

use std::fmt;
use std::sync::Arc;

/// An index variable, numbered within one [`Vars`] table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VarId(pub u32);

/// One term of a linear form.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Term {
    Var(VarId),
    /// `(of / div) % modulo`; `modulo == None` means no remainder.
    Digit {
        of: Arc<LinearForm>,
        div: u64,
        modulo: Option<u64>,
    },
    /// `a ^ b` (bitwise): a swizzled leaf's digit XOR its partner's (rule 11).
    Xor {
        a: Arc<LinearForm>,
        b: Arc<LinearForm>,
    },
}

/// A linear form `konst + sum(coeff * term)`; every coefficient is positive.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct LinearForm {
    pub terms: Vec<(u64, Term)>,
    pub konst: u64,
}

/// The index variables of an expression: their names and the largest value each can take.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Vars {
    names: Vec<String>,
    max: Vec<u64>,
}

impl Vars {
    pub fn new() -> Self {
        Self::default()
    }

    /// The variable called `name`, created with bound `max` or narrowed to it.
    pub fn bind(&mut self, name: &str, max: u64) -> VarId {
        if let Some(i) = self.names.iter().position(|n| n == name) {
            self.max[i] = self.max[i].min(max);
            return VarId(i as u32);
        }
        self.names.push(name.to_string());
        self.max.push(max);
        VarId(self.names.len() as u32 - 1)
    }

    pub fn id(&self, name: &str) -> Option<VarId> {
        self.names
            .iter()
            .position(|n| n == name)
            .map(|i| VarId(i as u32))
    }

    pub fn name(&self, v: VarId) -> &str {
        &self.names[v.0 as usize]
    }

    pub fn max(&self, v: VarId) -> u64 {
        self.max[v.0 as usize]
    }

    pub fn len(&self) -> usize {
        self.names.len()
    }

    pub fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().map(String::as_str)
    }
}

impl LinearForm {
    pub fn constant(c: u64) -> LinearForm {
        LinearForm {
            terms: Vec::new(),
            konst: c,
        }
    }

    pub fn var(v: VarId) -> LinearForm {
        LinearForm {
            terms: vec![(1, Term::Var(v))],
            konst: 0,
        }
    }

    pub fn is_const(&self) -> bool {
        self.terms.is_empty()
    }

    pub fn as_const(&self) -> Option<u64> {
        self.is_const().then_some(self.konst)
    }

    /// The form is exactly the variable `v`.
    pub fn as_var(&self) -> Option<VarId> {
        match self.terms.as_slice() {
            [(1, Term::Var(v))] if self.konst == 0 => Some(*v),
            _ => None,
        }
    }

    /// The largest value the form takes when each variable stays within its bound.
    pub fn max(&self, vars: &Vars) -> u64 {
        self.terms.iter().fold(self.konst, |acc, (k, t)| {
            acc.saturating_add(k.saturating_mul(t.max(vars)))
        })
    }

    /// Evaluate with concrete variable values (indexed by `VarId`).
    pub fn eval(&self, values: &[u64]) -> u64 {
        self.terms.iter().fold(self.konst, |acc, (k, t)| {
            acc.wrapping_add(k.wrapping_mul(t.eval(values)))
        })
    }

    /// Number of IR nodes, a measure of the cost of the generated code.
    pub fn weight(&self) -> usize {
        1 + self.terms.iter().map(|(_, t)| t.weight()).sum::<usize>()
    }

    /// Every variable the form mentions, in first-use order.
    pub fn vars_used(&self) -> Vec<VarId> {
        fn walk(e: &LinearForm, out: &mut Vec<VarId>) {
            for (_, t) in &e.terms {
                match t {
                    Term::Var(v) if !out.contains(v) => out.push(*v),
                    Term::Var(_) => {}
                    Term::Digit { of, .. } => walk(of, out),
                    Term::Xor { a, b } => {
                        walk(a, out);
                        walk(b, out);
                    }
                }
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }

    /// `self * k`.
    pub fn scale(&self, k: u64) -> LinearForm {
        if k == 0 {
            return LinearForm::constant(0);
        }
        LinearForm {
            terms: self.terms.iter().map(|(c, t)| (c * k, t.clone())).collect(),
            konst: self.konst * k,
        }
    }

    /// `self + other`, merged and coalesced.
    pub fn add(&self, other: &LinearForm, vars: &Vars) -> LinearForm {
        let mut out = self.clone();
        out.konst += other.konst;
        for (k, t) in &other.terms {
            out.push_term(*k, t.clone());
        }
        out.coalesce(vars);
        out
    }

    fn push_term(&mut self, k: u64, t: Term) {
        match self.terms.iter_mut().find(|(_, u)| *u == t) {
            Some((c, _)) => *c += k,
            None => self.terms.push((k, t)),
        }
    }

    /// Merge pairs `k*((x/d)%n) + k*n*((x/(d*n))%m)` into `k*((x/d)%(n*m))` until none is left.
    fn coalesce(&mut self, vars: &Vars) {
        'again: loop {
            for a in 0..self.terms.len() {
                let (
                    ka,
                    Term::Digit {
                        of: xa,
                        div: da,
                        modulo: Some(na),
                    },
                ) = &self.terms[a]
                else {
                    continue;
                };
                for b in 0..self.terms.len() {
                    let (
                        kb,
                        Term::Digit {
                            of: xb,
                            div: db,
                            modulo: mb,
                        },
                    ) = &self.terms[b]
                    else {
                        continue;
                    };
                    if a == b || xa != xb || *db != da * na || *kb != ka * na {
                        continue;
                    }
                    let merged = digit(xa, *da, mb.map(|m| m * na), vars).scale(*ka);
                    let (hi, lo) = (a.max(b), a.min(b));
                    self.terms.remove(hi);
                    self.terms.remove(lo);
                    let rest = std::mem::take(self);
                    *self = rest.add(&merged, vars);
                    continue 'again;
                }
            }
            return;
        }
    }

    /// The form with every coefficient and the constant divided by `g` (rounding the
    /// constant down: callers divide out a factor of every coefficient).
    fn divide_exact(&self, g: u64) -> LinearForm {
        LinearForm {
            terms: self.terms.iter().map(|(k, t)| (k / g, t.clone())).collect(),
            konst: self.konst / g,
        }
    }

    /// Remove the terms whose coefficient is a multiple of `m` (they vanish modulo `m`).
    fn drop_multiples(&self, m: u64) -> LinearForm {
        LinearForm {
            terms: self
                .terms
                .iter()
                .filter(|(k, _)| k % m != 0)
                .cloned()
                .collect(),
            konst: self.konst % m,
        }
    }

    pub fn single_term(&self) -> Option<&Term> {
        match self.terms.as_slice() {
            [(1, t)] if self.konst == 0 => Some(t),
            _ => None,
        }
    }

    /// The form with each variable `v` replaced by `with[v]`, a form of the variables
    /// `vars`, simplified by the smart constructors as it is rebuilt: `(x % 8)` of `x =
    /// a + 8 b` with `a < 8` is `a`. For every assignment of values to `vars` at which each
    /// of `with` lies within the range of the variable it replaces (the ranges `self` was
    /// simplified with), the result evaluates to what `self` evaluates to at those values.
    pub fn substitute(&self, with: &[LinearForm], vars: &Vars) -> LinearForm {
        self.terms
            .iter()
            .fold(LinearForm::constant(self.konst), |acc, (k, t)| {
                let t = match t {
                    Term::Var(v) => with[v.0 as usize].clone(),
                    Term::Digit { of, div, modulo } => {
                        digit(&of.substitute(with, vars), *div, *modulo, vars)
                    }
                    Term::Xor { a, b } => xor(&a.substitute(with, vars), &b.substitute(with, vars)),
                };
                acc.add(&t.scale(*k), vars)
            })
    }
}

impl Term {
    fn max(&self, vars: &Vars) -> u64 {
        match self {
            Term::Var(v) => vars.max(*v),
            Term::Digit { of, div, modulo } => {
                let q = of.max(vars) / div;
                modulo.map_or(q, |m| q.min(m - 1))
            }
            Term::Xor { a, b } => xor_max(a.max(vars), b.max(vars)),
        }
    }

    fn eval(&self, values: &[u64]) -> u64 {
        match self {
            Term::Var(v) => values[v.0 as usize],
            Term::Digit { of, div, modulo } => {
                let q = of.eval(values) / div;
                modulo.map_or(q, |m| q % m)
            }
            Term::Xor { a, b } => a.eval(values) ^ b.eval(values),
        }
    }

    fn weight(&self) -> usize {
        match self {
            Term::Var(_) => 1,
            Term::Digit { of, .. } => 1 + of.weight(),
            Term::Xor { a, b } => 1 + a.weight() + b.weight(),
        }
    }
}

fn gcd(mut a: u64, mut b: u64) -> u64 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

/// `(e / d) % m` (no remainder when `m` is `None`), simplified. `d` and `m` are positive.
pub fn digit(e: &LinearForm, d: u64, m: Option<u64>, vars: &Vars) -> LinearForm {
    digit_in(e, d, m, vars, Radices::Split)
}

/// [`digit`] without splitting mixed radices: a thread index as a digit of the flat
/// thread id (`(threadIdx.x + threadIdx.y * 16) / 32`, not `threadIdx.y / 2`). The same
/// values; the tuned SGEMM's schedule, tuned with these, ran 2-3% slower on an H200 with
/// the split ones (ptxas orders them differently).
pub fn flat_digit(e: &LinearForm, d: u64, m: Option<u64>, vars: &Vars) -> LinearForm {
    digit_in(e, d, m, vars, Radices::Whole)
}

/// Whether [`divide`] and [`remainder`] split mixed radices ([`mixed_radix_split`]).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Radices {
    Split,
    Whole,
}

fn digit_in(e: &LinearForm, d: u64, m: Option<u64>, vars: &Vars, radices: Radices) -> LinearForm {
    let quotient = divide(e, d, vars, radices);
    match m {
        Some(m) => remainder(&quotient, m, vars, radices),
        None => quotient,
    }
}

/// The largest value `x ^ y` can take for `x <= a` and `y <= b` (unsigned) is at most
/// this: no bit of the XOR is above the highest bit of the larger bound, so a swizzle's
/// XOR of two digits below a power of two `2^k` stays below it (SPEC 2.5, rule 11). The
/// one statement of that rule, for the offset compiler and the body's bounds prover.
pub fn xor_max(a: u64, b: u64) -> u64 {
    match a.max(b) {
        0 => 0,
        m => u64::MAX >> m.leading_zeros(),
    }
}

/// `a ^ b` (bitwise), simplified: XOR with 0 is the other operand, constants fold.
pub fn xor(a: &LinearForm, b: &LinearForm) -> LinearForm {
    match (a.as_const(), b.as_const()) {
        (Some(x), Some(y)) => LinearForm::constant(x ^ y),
        (Some(0), _) => b.clone(),
        (_, Some(0)) => a.clone(),
        _ => LinearForm {
            terms: vec![(
                1,
                Term::Xor {
                    a: Arc::new(a.clone()),
                    b: Arc::new(b.clone()),
                },
            )],
            konst: 0,
        },
    }
}

/// `e / d`, simplified.
fn divide(e: &LinearForm, d: u64, vars: &Vars, radices: Radices) -> LinearForm {
    if d == 1 {
        return e.clone();
    }
    if let Some(c) = e.as_const() {
        return LinearForm::constant(c / d);
    }
    if e.max(vars) < d {
        return LinearForm::constant(0);
    }
    // e = d*q + r exactly, with q taking every term whose coefficient d divides.
    let mut q = LinearForm::constant(e.konst / d);
    let mut r = LinearForm::constant(e.konst % d);
    for (k, t) in &e.terms {
        if k % d == 0 {
            q.terms.push((k / d, t.clone()));
        } else {
            r.terms.push((*k, t.clone()));
        }
    }
    if r.max(vars) < d {
        return q;
    }
    // floor((K*h + s) / (K*d')) == floor(h / d') when s < K: the digits below K stay below.
    if let Some((k, high, _)) = mixed_radix_split(&r, d, vars, radices) {
        return q.add(&divide(&high, d / k, vars, radices), vars);
    }
    // floor((g*r' + s) / (g*d')) == floor(r' / d') when s < g: divide out the common factor.
    let g = r.terms.iter().fold(d, |g, (k, _)| gcd(g, *k));
    if g > 1 {
        return q.add(&divide(&r.divide_exact(g), d / g, vars, radices), vars);
    }
    let term = match r.single_term() {
        // (x / d1) / d == x / (d1*d)
        Some(Term::Digit {
            of,
            div,
            modulo: None,
        }) => Term::Digit {
            of: of.clone(),
            div: div * d,
            modulo: None,
        },
        // ((x / d1) % m1) / d == (x / (d1*d)) % (m1/d) when d divides m1
        Some(Term::Digit {
            of,
            div,
            modulo: Some(m1),
        }) if m1 % d == 0 => {
            return q.add(&digit_in(of, div * d, Some(m1 / d), vars, radices), vars);
        }
        _ => Term::Digit {
            of: Arc::new(r),
            div: d,
            modulo: None,
        },
    };
    let mut out = q;
    out.push_term(1, term);
    out.coalesce(vars);
    out
}

/// `e` as `K*h + s` with `K > 1` dividing `d`, `h` the terms whose coefficients `K`
/// divides (over `K`) and `s < K` the rest (every term and the constant are non-negative):
/// the largest such `K` among the coefficients, where one is, as `(K, h, s)`. Then `e / d`
/// is `h / (d/K)` and `e % d` is `K*(h % (d/K)) + s`: the digits of a mixed radix (a
/// column `256*bn + 2t` of a strip 1024 wide is in strip `bn / 4`, at `256*(bn % 4) + 2t`).
/// `None` also where `radices` keeps them whole.
fn mixed_radix_split(
    e: &LinearForm,
    d: u64,
    vars: &Vars,
    radices: Radices,
) -> Option<(u64, LinearForm, LinearForm)> {
    if radices == Radices::Whole {
        return None;
    }
    let mut ks: Vec<u64> = e
        .terms
        .iter()
        .map(|(k, _)| *k)
        .filter(|&k| k > 1 && d.is_multiple_of(k))
        .collect();
    ks.sort_unstable_by(|a, b| b.cmp(a));
    ks.dedup();
    ks.into_iter().find_map(|k| {
        let (high, low): (Vec<_>, Vec<_>) = e
            .terms
            .iter()
            .cloned()
            .partition(|(c, _)| c.is_multiple_of(k));
        let low = LinearForm {
            terms: low,
            konst: e.konst,
        };
        (!high.is_empty() && low.max(vars) < k).then(|| {
            let high = LinearForm {
                terms: high,
                konst: 0,
            };
            (k, high.divide_exact(k), low)
        })
    })
}

/// `e % m`, simplified.
fn remainder(e: &LinearForm, m: u64, vars: &Vars, radices: Radices) -> LinearForm {
    if m == 1 {
        return LinearForm::constant(0);
    }
    if let Some(c) = e.as_const() {
        return LinearForm::constant(c % m);
    }
    if e.max(vars) < m {
        return e.clone();
    }
    let r = e.drop_multiples(m);
    if r.max(vars) < m {
        return r;
    }
    // (K*h + s) % (K*m') == K*(h % m') + s when s < K.
    if let Some((k, high, low)) = mixed_radix_split(&r, m, vars, radices) {
        return remainder(&high, m / k, vars, radices)
            .scale(k)
            .add(&low, vars);
    }
    // (g*r') % (g*m') == g * (r' % m'): take the common factor out.
    let g = r.terms.iter().fold(gcd(m, r.konst), |g, (k, _)| gcd(g, *k));
    if g > 1 {
        return remainder(&r.divide_exact(g), m / g, vars, radices).scale(g);
    }
    let term = match r.single_term() {
        // (x / d) % m
        Some(Term::Digit {
            of,
            div,
            modulo: None,
        }) => Term::Digit {
            of: of.clone(),
            div: *div,
            modulo: Some(m),
        },
        // ((x / d) % m1) % m == (x / d) % m when m divides m1
        Some(Term::Digit {
            of,
            div,
            modulo: Some(m1),
        }) if m1 % m == 0 => Term::Digit {
            of: of.clone(),
            div: *div,
            modulo: Some(m),
        },
        _ => Term::Digit {
            of: Arc::new(r),
            div: 1,
            modulo: Some(m),
        },
    };
    LinearForm {
        terms: vec![(1, term)],
        konst: 0,
    }
}

/// Writes a form as C/Rust arithmetic (the two agree on `+ * / %` and their precedence).
pub struct Render<'a, F: Fn(VarId) -> String> {
    pub expr: &'a LinearForm,
    pub var: F,
}

impl<F: Fn(VarId) -> String> Render<'_, F> {
    fn write_expr(&self, e: &LinearForm, out: &mut String) {
        let mut first = true;
        for (k, t) in &e.terms {
            if !first {
                out.push_str(" + ");
            }
            first = false;
            self.write_term(t, *k != 1, out);
            if *k != 1 {
                out.push_str(" * ");
                out.push_str(&k.to_string());
            }
        }
        if e.konst != 0 || first {
            if !first {
                out.push_str(" + ");
            }
            out.push_str(&e.konst.to_string());
        }
    }

    fn write_term(&self, t: &Term, multiplied: bool, out: &mut String) {
        match t {
            Term::Var(v) => out.push_str(&(self.var)(*v)),
            Term::Digit { of, div, modulo } => {
                if multiplied {
                    out.push('(');
                }
                if of.single_term().is_some_and(|t| matches!(t, Term::Var(_))) {
                    self.write_expr(of, out);
                } else {
                    out.push('(');
                    self.write_expr(of, out);
                    out.push(')');
                }
                if *div != 1 {
                    out.push_str(&format!(" / {div}"));
                }
                if let Some(m) = modulo {
                    out.push_str(&format!(" % {m}"));
                }
                if multiplied {
                    out.push(')');
                }
            }
            // `^` binds looser than `+` and `*` (and, in C, than comparisons): always
            // parenthesised, and so is each operand that is more than a name or a number.
            Term::Xor { a, b } => {
                out.push('(');
                self.write_operand(a, out);
                out.push_str(" ^ ");
                self.write_operand(b, out);
                out.push(')');
            }
        }
    }

    fn write_operand(&self, e: &LinearForm, out: &mut String) {
        let simple = e.is_const() || e.as_var().is_some();
        if !simple {
            out.push('(');
        }
        self.write_expr(e, out);
        if !simple {
            out.push(')');
        }
    }
}

impl<F: Fn(VarId) -> String> fmt::Display for Render<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut s = String::new();
        self.write_expr(self.expr, &mut s);
        f.write_str(&s)
    }
}

impl LinearForm {
    /// The form as C/Rust source, naming each variable with `vars`.
    pub fn to_source(&self, vars: &Vars) -> String {
        Render {
            expr: self,
            var: |v| vars.name(v).to_string(),
        }
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The 128-byte swizzle's offset of `[r][c]` on rows of 64 (`r * 64 + c % 8 + ((c / 8)
    /// ^ (r % 8)) * 8`) at an ldmatrix lane's row start (`r = t0 + 4 p + 8 q`, `c = 8 q`
    /// with `t0 < 4`, `p, q < 2`) loses every division and remainder, and agrees with the
    /// form it came from at every value.
    #[test]
    fn substitution_simplifies_digits_away() {
        let mut old = Vars::new();
        let (r, c) = (old.bind("r", 15), old.bind("c", 15));
        let (r, c) = (LinearForm::var(r), LinearForm::var(c));
        let swizzled = r.scale(64).add(&digit(&c, 1, Some(8), &old), &old).add(
            &xor(&digit(&c, 8, None, &old), &digit(&r, 1, Some(8), &old)).scale(8),
            &old,
        );
        let mut new = Vars::new();
        let (t0, p, q) = (new.bind("t0", 3), new.bind("p", 1), new.bind("q", 1));
        let v = LinearForm::var;
        let row = v(t0).add(&v(p).scale(4), &new).add(&v(q).scale(8), &new);
        let col = v(q).scale(8);
        let got = swizzled.substitute(&[row.clone(), col.clone()], &new);
        fn digits(e: &LinearForm) -> bool {
            e.terms.iter().any(|(_, t)| match t {
                Term::Var(_) => false,
                Term::Digit { .. } => true,
                Term::Xor { a, b } => digits(a) || digits(b),
            })
        }
        assert!(!digits(&got), "{}", got.to_source(&new));
        for values in (0..4).flat_map(|a| (0..2).flat_map(move |b| (0..2).map(move |c| [a, b, c])))
        {
            let at = [row.eval(&values), col.eval(&values)];
            assert_eq!(got.eval(&values), swizzled.eval(&at), "{values:?}");
        }
    }
}
