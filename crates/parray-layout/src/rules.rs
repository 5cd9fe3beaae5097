//! Rules 1 to 5 of PARRAY.md, a dimension's offset function, walked once for any domain of
//! flat indices: numbers (the offset of one element, [`Module::offset_at`]) or linear forms
//! (the offset expression of an index expression, the offset compiler's).
//!
//! A swizzle (rule 11) couples two leaves: what the coupled leaf contributes depends on
//! its partner's digit, which the walk may meet before or after it. A walk therefore
//! gathers both digits in a [`Coupling`] and adds the coupled leaves' offsets once it is
//! over ([`Coupling::finish`]): over one flat index ([`Module::offset_at`]) or over all the
//! indices of one index expression (the offset compiler).

use crate::error::Result;
use crate::tree::{Module, NodeId, NodeKind, Work};

/// What the offset rules compute on: each rule scales, adds or takes digits of a flat index.
pub(crate) trait Domain {
    type Value: Clone;

    fn zero(&self) -> Self::Value;
    fn is_zero(&self, v: &Self::Value) -> bool;
    /// A constant `v` as a number, for a domain that walks it faster as [`Numbers`].
    fn fold(&self, v: &Self::Value) -> Option<u64>;
    fn number(&self, n: u64) -> Self::Value;
    fn scale(&self, v: &Self::Value, k: u64) -> Self::Value;
    fn add(&self, a: &Self::Value, b: &Self::Value) -> Self::Value;
    /// `(v / weight) % size`, `v` lying within the dimension it indexes.
    fn digit(&self, v: &Self::Value, weight: u64, size: u64) -> Self::Value;
    /// `a ^ b` (bitwise), both digits of power-of-two dimensions.
    fn xor(&self, a: &Self::Value, b: &Self::Value) -> Self::Value;
    /// Charges the work of having built `v` (or refuses a value too large to build on).
    fn charge(&self, v: &Self::Value, work: &mut Work) -> Result<()>;
}

/// Offsets of single elements.
pub(crate) struct Numbers;

impl Domain for Numbers {
    type Value = u64;

    fn zero(&self) -> u64 {
        0
    }
    fn is_zero(&self, v: &u64) -> bool {
        *v == 0
    }
    fn fold(&self, _: &u64) -> Option<u64> {
        None
    }
    fn number(&self, n: u64) -> u64 {
        n
    }
    fn scale(&self, v: &u64, k: u64) -> u64 {
        v * k
    }
    fn add(&self, a: &u64, b: &u64) -> u64 {
        a + b
    }
    fn digit(&self, v: &u64, weight: u64, size: u64) -> u64 {
        v / weight % size
    }
    fn xor(&self, a: &u64, b: &u64) -> u64 {
        a ^ b
    }
    fn charge(&self, _: &u64, _: &mut Work) -> Result<()> {
        Ok(())
    }
}

/// The digits one walk has met of swizzled leaves and of their partners (rule 11).
pub(crate) struct Coupling<V> {
    /// Whether the walk couples anything: otherwise a swizzled leaf is a plain leaf.
    on: bool,
    /// Each swizzled leaf met: its stride, its partner and its digit.
    leaves: Vec<(u64, NodeId, V)>,
    /// Each partner met, with its digit.
    partners: Vec<(NodeId, V)>,
}

impl<V: Clone> Coupling<V> {
    /// For a walk over the dimension `top` (all of one index expression's indices are
    /// walks over it): on when a swizzle acts on its offsets.
    pub(crate) fn over(m: &Module, top: NodeId) -> Self {
        Coupling {
            on: !m.couplings(top).is_empty(),
            leaves: Vec::new(),
            partners: Vec::new(),
        }
    }

    /// The coupled leaves' offsets, `(digit ^ partner's digit) * stride` each, the
    /// partner's digit 0 where the walk did not meet it: what the walk left out.
    pub(crate) fn finish<D: Domain<Value = V>>(self, d: &D) -> V {
        let mut sum = d.zero();
        for (stride, partner, x) in &self.leaves {
            let digit = match self.partners.iter().find(|(p, _)| p == partner) {
                Some((_, y)) if !d.is_zero(y) => d.xor(x, y),
                _ => x.clone(),
            };
            sum = d.add(&sum, &d.scale(&digit, *stride));
        }
        sum
    }
}

impl Module {
    /// The offset of element `i` (flat) of node `n`, straight from the node definitions.
    pub fn offset_at(&self, n: NodeId, i: u64) -> u64 {
        self.eval(n, i, &mut Work::unlimited())
            .expect("unlimited work never runs out")
    }

    /// [`Module::offset_at`], within a budget of work.
    pub(crate) fn eval(&self, n: NodeId, i: u64, work: &mut Work) -> Result<u64> {
        let mut coupling = Coupling::over(self, n);
        let walked = self.offset_in(&Numbers, n, i, &mut coupling, work)?;
        Ok(walked + coupling.finish(&Numbers))
    }

    /// `off_n(i)`: the offset of flat index `i` of node `n` (rules 1 to 5), in domain `d`,
    /// within a budget of work, less the offsets of the swizzled leaves that `coupling`
    /// gathers (rule 11: [`Coupling::finish`] adds them). A constant index is walked as a
    /// number, whatever the domain: its offset is a constant.
    pub(crate) fn offset_in<D: Domain>(
        &self,
        d: &D,
        n: NodeId,
        i: D::Value,
        coupling: &mut Coupling<D::Value>,
        work: &mut Work,
    ) -> Result<D::Value> {
        work.step()?;
        if let Some(c) = d.fold(&i) {
            let mut numbers = Coupling {
                on: coupling.on,
                leaves: Vec::new(),
                partners: Vec::new(),
            };
            let off = self.offset_in(&Numbers, n, c, &mut numbers, work)?;
            let number = |(a, v): (NodeId, u64)| (a, d.number(v));
            coupling
                .partners
                .extend(numbers.partners.into_iter().map(number));
            coupling
                .leaves
                .extend((numbers.leaves.into_iter()).map(|(s, p, v)| (s, p, d.number(v))));
            return Ok(d.number(off));
        }
        let node = self.node(n);
        let out = match node.kind {
            // Rule 1: a leaf is its stride times the index.
            NodeKind::Leaf { stride } => {
                if coupling.on && !self.reached(n).is_empty() {
                    coupling.partners.push((n, i.clone()));
                }
                d.scale(&i, stride)
            }
            // Rule 11: a swizzled leaf's offset waits for its partner's digit.
            NodeKind::Xor { stride, partner } if coupling.on => {
                coupling.leaves.push((stride, partner, i));
                d.zero()
            }
            NodeKind::Xor { stride, .. } => d.scale(&i, stride),
            // Rules 3 and 4: a reference and a prefix view are their target's offsets.
            NodeKind::Prefix { target } => self.offset_in(d, target, i, coupling, work)?,
            // Rule 5: a strided view scales the index into its target.
            NodeKind::Strided { target, weight } => {
                self.offset_in(d, target, d.scale(&i, weight), coupling, work)?
            }
            // Rule 2: a compound adds its children's offsets of the index's digits.
            NodeKind::Compound => self.compound_offset(d, n, &i, coupling, work)?,
        };
        d.charge(&out, work)?;
        Ok(out)
    }

    /// Rule 2 for compound `n`: the sum of each child's offset of its digit of `i`, the
    /// last child's digit the fastest.
    fn compound_offset<D: Domain>(
        &self,
        d: &D,
        n: NodeId,
        i: &D::Value,
        coupling: &mut Coupling<D::Value>,
        work: &mut Work,
    ) -> Result<D::Value> {
        let mut sum = d.zero();
        let mut weight = 1;
        for c in self.node(n).children.iter().rev() {
            let size = self.size(*c);
            let digit = d.digit(i, weight, size);
            // Every offset function maps 0 to 0: a zero digit costs nothing (and types
            // that share subtrees need not be walked path by path), except below a
            // swizzled leaf, whose zero digit XORs its partner's.
            let swizzled = || {
                (self.reached(*c).iter())
                    .any(|(l, _)| matches!(self.node(*l).kind, NodeKind::Xor { .. }))
            };
            if !d.is_zero(&digit) || (coupling.on && swizzled()) {
                sum = d.add(&self.offset_in(d, *c, digit, coupling, work)?, &sum);
            }
            weight *= size;
        }
        Ok(sum)
    }
}
