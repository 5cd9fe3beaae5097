//! Sizes as expressions of the sizes given at run time (`const N;`, SPEC.md 2.4).
//!
//! At compile time a run-time type is resolved with each run-time size at a probe value,
//! and none of its numbers there holds at another binding. Its tree of dimensions does
//! (sizes do not change the tree), and so does each dimension's size as an expression of
//! the run-time sizes: the part `[N / 16]` of `[[16][N / 16]#X]` has `N / 16` elements at
//! every `N` the declaration takes. [`Sizes`] gives each dimension's size so, in a normal
//! form ([`Poly`]: a sum of products of run-time sizes, each with a rational multiple) in
//! which sizes that arithmetic makes equal at every binding are one value, and the extent
//! of each type whose forms stay inside it. The bounds prover compares them
//! (parray-compiler's `passes::bounds`).

use std::collections::{BTreeMap, HashMap, HashSet};

use crate::ast::{Group, GroupBody, Item, Program, RefShape, SizeExpr, SizeExprKind, SizeOp};
use crate::tree::{Module, NodeId};

/// A value a size is built from, other than numbers.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Atom {
    /// A run-time size (`N` of `const N;`): positive wherever it is bound.
    Size(String),
    /// The extent of the declared type of this name, a view (its extent is no product of
    /// sizes): positive.
    Extent(String),
    /// `num / den` (`ceil`: `ceil(num / den)`) where `den` is not a number: a value of its
    /// own, not known to be positive (a constant's value may pass through negatives).
    Quotient { num: Poly, den: Poly, ceil: bool },
}

/// `num / den` in lowest terms, `den > 0`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Ratio {
    num: i128,
    den: i128,
}

impl Ratio {
    fn new(num: i128, den: i128) -> Option<Ratio> {
        if den == 0 {
            return None;
        }
        let g = gcd(num.unsigned_abs(), den.unsigned_abs());
        let g = i128::try_from(g).ok()?;
        let sign = den.signum();
        Some(Ratio {
            num: num.checked_div(g)?.checked_mul(sign)?,
            den: den.checked_div(g)?.checked_mul(sign)?,
        })
    }

    fn integer(v: i128) -> Ratio {
        Ratio { num: v, den: 1 }
    }

    fn add(self, o: Ratio) -> Option<Ratio> {
        let num = self
            .num
            .checked_mul(o.den)?
            .checked_add(o.num.checked_mul(self.den)?)?;
        Ratio::new(num, self.den.checked_mul(o.den)?)
    }

    fn mul(self, o: Ratio) -> Option<Ratio> {
        Ratio::new(self.num.checked_mul(o.num)?, self.den.checked_mul(o.den)?)
    }

    fn as_integer(self) -> Option<i128> {
        (self.den == 1).then_some(self.num)
    }
}

fn gcd(a: u128, b: u128) -> u128 {
    match b {
        0 => a.max(1),
        _ => gcd(b, a % b),
    }
}

/// Products more than this many in one [`Poly`] are not followed (the walk gives up on
/// that size): real declarations have a handful.
const MAX_TERMS: usize = 64;

/// A sum of products of [`Atom`]s, each with a rational multiple, in a normal form: two
/// that are equal as polynomials are equal values ([`Poly::sub`] of them is zero).
/// Every operation is exact; one that overflows is `None`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Poly {
    /// Each product as its sorted atoms (`[]`: the constant), with its multiple, never 0.
    terms: BTreeMap<Vec<Atom>, Ratio>,
}

impl Poly {
    pub fn constant(v: i128) -> Poly {
        let mut p = Poly::default();
        p.add_term(Vec::new(), Ratio::integer(v));
        p
    }

    pub fn atom(a: Atom) -> Poly {
        Poly {
            terms: BTreeMap::from([(vec![a], Ratio::integer(1))]),
        }
    }

    fn add_term(&mut self, product: Vec<Atom>, r: Ratio) -> Option<()> {
        let sum = match self.terms.get(&product) {
            Some(have) => have.add(r)?,
            None => r,
        };
        match sum.num {
            0 => self.terms.remove(&product),
            _ => self.terms.insert(product, sum),
        };
        (self.terms.len() <= MAX_TERMS).then_some(())
    }

    pub fn add(&self, o: &Poly) -> Option<Poly> {
        let mut out = self.clone();
        for (product, r) in &o.terms {
            out.add_term(product.clone(), *r)?;
        }
        Some(out)
    }

    pub fn sub(&self, o: &Poly) -> Option<Poly> {
        self.add(&o.scale(Ratio::integer(-1))?)
    }

    pub fn mul(&self, o: &Poly) -> Option<Poly> {
        let mut out = Poly::default();
        for (a, x) in &self.terms {
            for (b, y) in &o.terms {
                let mut product: Vec<Atom> = a.iter().chain(b).cloned().collect();
                product.sort();
                out.add_term(product, x.mul(*y)?)?;
            }
        }
        Some(out)
    }

    fn scale(&self, r: Ratio) -> Option<Poly> {
        let mut out = Poly::default();
        for (product, x) in &self.terms {
            out.add_term(product.clone(), x.mul(r)?)?;
        }
        Some(out)
    }

    /// The value when the polynomial is a number.
    fn as_constant(&self) -> Option<Ratio> {
        match self.terms.iter().next() {
            None => Some(Ratio::integer(0)),
            Some((product, r)) if product.is_empty() && self.terms.len() == 1 => Some(*r),
            Some(_) => None,
        }
    }

    /// `num / den`, exact (a size's division is: the declaration refuses a binding that
    /// leaves a remainder), or `ceil(num / den)`.
    fn divide(num: Poly, den: Poly, ceil: bool) -> Option<Poly> {
        match (num.as_constant(), den.as_constant()) {
            (Some(n), Some(d)) => {
                let (n, d) = (n.as_integer()?, d.as_integer()?);
                if d == 0 || (!ceil && n % d != 0) {
                    return None;
                }
                Some(Poly::constant(match ceil {
                    true => n.div_euclid(d) + i128::from(n.rem_euclid(d) != 0),
                    false => n / d,
                }))
            }
            (_, Some(d)) if !ceil && d.num != 0 => num.scale(Ratio::new(d.den, d.num)?),
            _ => Some(Poly::atom(Atom::Quotient { num, den, ceil })),
        }
    }

    /// Whether the value is at least 0 at every binding: every multiple is, and every
    /// product is of atoms known to be positive (no quotient).
    pub fn nonnegative(&self) -> bool {
        self.terms.iter().all(|(product, r)| {
            r.num >= 0
                && product
                    .iter()
                    .all(|a| matches!(a, Atom::Size(_) | Atom::Extent(_)))
        })
    }

    /// The value where each run-time size and extent has the value `value` gives it;
    /// `None` where one has none, or a quotient or the value is not a whole number.
    pub fn eval(&self, value: &dyn Fn(&Atom) -> Option<i128>) -> Option<i128> {
        let mut sum = Ratio::integer(0);
        for (product, r) in &self.terms {
            let mut term = *r;
            for a in product {
                let v = match a {
                    Atom::Quotient { num, den, ceil } => {
                        let q = Poly::divide(
                            Poly::constant(num.eval(value)?),
                            Poly::constant(den.eval(value)?),
                            *ceil,
                        )?;
                        q.as_constant()?.as_integer()?
                    }
                    _ => value(a)?,
                };
                term = term.mul(Ratio::integer(v))?;
            }
            sum = sum.add(term)?;
        }
        sum.as_integer()
    }
}

/// The sizes of a module's dimensions and the extents of its types, as [`Poly`]s of its
/// run-time sizes, where they are known: what holds of them at every binding.
#[derive(Debug, Clone, Default)]
pub struct Sizes {
    nodes: HashMap<NodeId, Poly>,
    extents: HashMap<String, Poly>,
    consts: HashMap<String, Poly>,
}

impl Sizes {
    /// Those of `module`, resolved from `program` with its run-time sizes at any values (a
    /// probe's). Each size is the one its declaration gives (a leaf's expression, a
    /// compound's product, a reference's target's), kept only where it has the module's
    /// value at those values.
    pub fn of(program: &Program, module: &Module) -> Sizes {
        let mut walk = Walk {
            module,
            consts: HashMap::new(),
            covering: HashSet::new(),
            sizes: Sizes::default(),
        };
        for item in &program.items {
            walk.item(item);
        }
        Sizes {
            consts: walk.consts,
            ..walk.sizes
        }
    }

    /// The value of the constant `name` (`const N;`, `const M = N / 16;`).
    pub fn constant(&self, name: &str) -> Option<&Poly> {
        self.consts.get(name)
    }

    /// The size of the dimension `node`.
    pub fn size(&self, node: NodeId) -> Option<&Poly> {
        self.nodes.get(&node)
    }

    /// The extent of the declared type `name`: its size for a natural type, else the atom
    /// [`Atom::Extent`]. `None` for a type whose pieces may cover data past its end (its
    /// forms reach past the data, SPEC.md 2.4), or that is distributed over mpi ranks.
    pub fn extent(&self, name: &str) -> Option<&Poly> {
        self.extents.get(name)
    }
}

struct Walk<'m> {
    module: &'m Module,
    consts: HashMap<String, Poly>,
    /// The types whose pieces may cover data past its end, at some binding.
    covering: HashSet<String>,
    sizes: Sizes,
}

impl Walk<'_> {
    fn item(&mut self, item: &Item) {
        match item {
            Item::Const(c) => {
                let name = &c.name.name;
                let value = match &c.value {
                    None => Some(Poly::atom(Atom::Size(name.clone()))),
                    Some(e) => self.eval(e),
                };
                let here = self.module.constant(name).map(i128::from);
                if let Some(v) = value.filter(|v| here.is_some() && self.at_probe(v) == here) {
                    self.consts.insert(name.clone(), v);
                }
            }
            Item::Type(t) => {
                let name = &t.name.name;
                let Some(def) = self.module.type_def(name) else {
                    return;
                };
                let root = def.root;
                let children = self.module.node(root).children.clone();
                for (g, &n) in t.dims.iter().zip(&children) {
                    self.group(g, n);
                }
                let size = self.product(&children);
                self.record(root, size);
                if t.dims.iter().any(|g| self.may_cover(g)) {
                    self.covering.insert(name.clone());
                    return;
                }
                let extent = match (def.distribution.is_some(), def.natural) {
                    (true, _) => None,
                    (false, true) => self.sizes.nodes.get(&root).cloned(),
                    (false, false) => Some(Poly::atom(Atom::Extent(name.clone()))),
                };
                let here = Some(i128::from(self.module.extent(root)));
                if let Some(e) = extent.filter(|e| self.at_probe(e) == here) {
                    self.sizes.extents.insert(name.clone(), e);
                }
            }
            // An element type: no sizes.
            Item::Record(_) => {}
        }
    }

    /// The sizes of the group `g`, built as the node `n`, and of the groups inside it.
    fn group(&mut self, g: &Group, n: NodeId) {
        let size = match &g.body {
            GroupBody::Size(e)
            | GroupBody::Ref {
                shape: RefShape::Sized(e),
                ..
            } => self.eval(e),
            GroupBody::Compound(inner)
            | GroupBody::Ref {
                shape: RefShape::Structured(inner),
                ..
            } => {
                let children = self.module.node(n).children.clone();
                for (c, &id) in inner.iter().zip(&children) {
                    self.group(c, id);
                }
                self.product(&children)
            }
            // `n` is the node referenced, walked with its type (or, over an mpi array, a
            // copy of its dimension, left unknown).
            GroupBody::Ref {
                shape: RefShape::Whole,
                ..
            } => return,
        };
        self.record(n, size);
    }

    /// Whether the group `g` may cover data past its end at some binding: a structured
    /// reference counting pieces with `ceil` (only such a structure may, 2.4), or a
    /// reference to a type that may.
    fn may_cover(&self, g: &Group) -> bool {
        match &g.body {
            GroupBody::Size(_) => false,
            GroupBody::Compound(inner) => inner.iter().any(|c| self.may_cover(c)),
            GroupBody::Ref { shape, target } => {
                let covering = self.module.lookup(&target.name).map_or(true, |r| {
                    self.covering.contains(&self.module.types()[r.ty].name)
                });
                covering
                    || matches!(shape, RefShape::Structured(groups) if groups.first().is_some_and(crate::build::counts_pieces))
            }
        }
    }

    fn product(&self, nodes: &[NodeId]) -> Option<Poly> {
        nodes.iter().try_fold(Poly::constant(1), |acc, n| {
            acc.mul(self.sizes.nodes.get(n)?)
        })
    }

    /// Keeps `size` as the node's where it is the node's size at the probe.
    fn record(&mut self, n: NodeId, size: Option<Poly>) {
        let here = Some(i128::from(self.module.size(n)));
        if let Some(s) = size.filter(|s| self.at_probe(s) == here) {
            self.sizes.nodes.insert(n, s);
        }
    }

    /// The value of `p` with the module's numbers (the probe's).
    fn at_probe(&self, p: &Poly) -> Option<i128> {
        p.eval(&|a| match a {
            Atom::Size(n) => self.module.constant(n).map(i128::from),
            Atom::Extent(t) => {
                let def = self.module.type_def(t)?;
                Some(i128::from(self.module.extent(def.root)))
            }
            Atom::Quotient { .. } => None,
        })
    }

    fn eval(&self, e: &SizeExpr) -> Option<Poly> {
        match &e.kind {
            SizeExprKind::Lit(v) => Some(Poly::constant(i128::from(*v))),
            SizeExprKind::Name(n) => self.consts.get(n).cloned(),
            SizeExprKind::Dim(t) => {
                let d = self.module.resolve(t).ok()?;
                self.sizes.nodes.get(&d.node).cloned()
            }
            SizeExprKind::Neg(a) => Poly::constant(0).sub(&self.eval(a)?),
            SizeExprKind::Bin(op, a, b) => {
                let (x, y) = (self.eval(a)?, self.eval(b)?);
                match op {
                    SizeOp::Add => x.add(&y),
                    SizeOp::Sub => x.sub(&y),
                    SizeOp::Mul => x.mul(&y),
                    SizeOp::Div => Poly::divide(x, y, false),
                    SizeOp::CeilDiv => Poly::divide(x, y, true),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n() -> Poly {
        Poly::atom(Atom::Size("N".into()))
    }

    #[test]
    fn equal_sizes_are_one_polynomial() {
        let sixteenth = Poly::divide(n(), Poly::constant(16), false).unwrap();
        // (N / 16) * 16 is N; N / 16 / 2 is N / 32.
        assert_eq!(sixteenth.mul(&Poly::constant(16)).unwrap(), n());
        let half = Poly::divide(sixteenth.clone(), Poly::constant(2), false).unwrap();
        assert_eq!(half, Poly::divide(n(), Poly::constant(32), false).unwrap());
        // N - N / 16 - 1 is no number: not known to be at least 0; N - N / 16 is.
        let rest = n().sub(&sixteenth).unwrap();
        assert!(rest.nonnegative());
        assert!(!rest.sub(&Poly::constant(1)).unwrap().nonnegative());
        // ceil(N / 256) is a value of its own, and not known to be positive.
        let ceil = Poly::divide(n(), Poly::constant(256), true).unwrap();
        assert!(!ceil.nonnegative());
        assert_eq!(ceil.sub(&ceil).unwrap(), Poly::constant(0));
        let at = |v: i128| move |a: &Atom| matches!(a, Atom::Size(_)).then_some(v);
        assert_eq!(ceil.eval(&at(1000)), Some(4));
        assert_eq!(rest.eval(&at(1024)), Some(960));
    }
}
