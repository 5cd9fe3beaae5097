//! Rules 1 to 5 of PARRAY.md, a dimension's offset function, walked once for any domain of
//! flat indices: numbers (the offset of one element, [`Module::offset_at`]) or linear forms
//! (the offset expression of an index expression, the offset compiler's).

use crate::error::Result;
use crate::tree::{Module, NodeId, NodeKind, Work};

/// What the offset rules compute on: each rule scales, adds or takes digits of a flat index.
pub(crate) trait Domain {
    type Value;

    fn zero(&self) -> Self::Value;
    fn is_zero(&self, v: &Self::Value) -> bool;
    /// A constant `v` as a number, for a domain that walks it faster as [`Numbers`].
    fn fold(&self, v: &Self::Value) -> Option<u64>;
    fn number(&self, n: u64) -> Self::Value;
    fn scale(&self, v: &Self::Value, k: u64) -> Self::Value;
    fn add(&self, a: &Self::Value, b: &Self::Value) -> Self::Value;
    /// `(v / weight) % size`, `v` lying within the dimension it indexes.
    fn digit(&self, v: &Self::Value, weight: u64, size: u64) -> Self::Value;
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
    fn charge(&self, _: &u64, _: &mut Work) -> Result<()> {
        Ok(())
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
        self.offset_in(&Numbers, n, i, work)
    }

    /// `off_n(i)`: the offset of flat index `i` of node `n` (rules 1 to 5), in domain `d`,
    /// within a budget of work. A constant index is walked as a number, whatever the
    /// domain: its offset is a constant.
    pub(crate) fn offset_in<D: Domain>(
        &self,
        d: &D,
        n: NodeId,
        i: D::Value,
        work: &mut Work,
    ) -> Result<D::Value> {
        work.step()?;
        if let Some(c) = d.fold(&i) {
            return Ok(d.number(self.offset_in(&Numbers, n, c, work)?));
        }
        let node = self.node(n);
        let out = match node.kind {
            // Rule 1: a leaf is its stride times the index.
            NodeKind::Leaf { stride } => d.scale(&i, stride),
            // Rules 3 and 4: a reference and a prefix view are their target's offsets.
            NodeKind::Prefix { target } => self.offset_in(d, target, i, work)?,
            // Rule 5: a strided view scales the index into its target.
            NodeKind::Strided { target, weight } => {
                self.offset_in(d, target, d.scale(&i, weight), work)?
            }
            // Rule 2: a compound adds its children's offsets of the index's digits.
            NodeKind::Compound => self.compound_offset(d, n, &i, work)?,
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
        work: &mut Work,
    ) -> Result<D::Value> {
        let mut sum = d.zero();
        let mut weight = 1;
        for c in self.node(n).children.iter().rev() {
            let size = self.size(*c);
            let digit = d.digit(i, weight, size);
            // Every offset function maps 0 to 0: a zero digit costs nothing (and types
            // that share subtrees need not be walked path by path).
            if !d.is_zero(&digit) {
                sum = d.add(&self.offset_in(d, *c, digit, work)?, &sum);
            }
            weight *= size;
        }
        Ok(sum)
    }
}
