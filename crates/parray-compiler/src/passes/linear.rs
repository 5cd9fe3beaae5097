//! Sums of multiples of a body's values, for the proofs under a guard.
//!
//! An access past the data of a tile is guarded by a comparison of the element's
//! coordinates (`row < m && col < k`), while the access's offset is `row * k + col`: no
//! interval of the offset shows it inside the data, but the offset is a sum of multiples
//! of the same values the guard bounds. Written as [`Linear`] sums of [`Atom`]s, the
//! offset is `λ1 * (row - m) + λ2 * (col - k) + rest` with `λ1, λ2 >= 0`, so that under the
//! guard (`row - m <= -1`, `col - k <= -1`) it is at most `-λ1 - λ2 + max(rest)`
//! ([`Linear::max_under`]).

use std::collections::BTreeMap;

use crate::ir::LocalId;

/// A value the sums are over: it does not change where the guard holds.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Atom {
    /// A thread index (`$tid_0_1$`).
    Tid(String),
    /// A local the analysis does not expand: a `for` variable, or an unassigned local
    /// whose value is not a sum.
    Local(LocalId),
    /// `(k / div) % modulo` of a local `k` (`modulo` `None`: no remainder): a digit of a
    /// `#copy`'s element index.
    Digit(LocalId, u64, Option<u64>),
    /// `a ^ b` (bitwise) of two sums: a swizzled offset's XOR of a leaf's digit with its
    /// partner's (SPEC 2.5, rule 11). Not a sum of its operands, but where both lie in
    /// `[0, 2^k)` so does it ([`Linear::max_under`]).
    Xor(Box<Linear>, Box<Linear>),
}

/// `konst + sum(coefficient * atom)`, exactly (no arithmetic of it wraps).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Default)]
pub struct Linear {
    pub terms: BTreeMap<Atom, i128>,
    pub konst: i128,
}

impl Linear {
    pub fn constant(v: i128) -> Linear {
        Linear {
            terms: BTreeMap::new(),
            konst: v,
        }
    }

    pub fn atom(a: Atom) -> Linear {
        Linear {
            terms: BTreeMap::from([(a, 1)]),
            konst: 0,
        }
    }

    /// `self + c * other`.
    pub fn add_scaled(mut self, other: &Linear, c: i128) -> Linear {
        for (a, v) in &other.terms {
            let sum = self.terms.get(a).copied().unwrap_or(0) + c * v;
            match sum {
                0 => self.terms.remove(a),
                s => self.terms.insert(a.clone(), s),
            };
        }
        self.konst += c * other.konst;
        self
    }

    pub fn scaled(self, c: i128) -> Linear {
        Linear::default().add_scaled(&self, c)
    }

    /// The values of `self` with each atom in its range (`range`): `None` where an atom
    /// has none.
    pub fn range(&self, range: &dyn Fn(&Atom) -> Option<(i128, i128)>) -> Option<(i128, i128)> {
        let lowest = -self.clone().scaled(-1).max_under(&[], range)?;
        Some((lowest, self.max_under(&[], range)?))
    }

    /// The largest value of `self` where every fact `l <= u` of `facts` holds, each atom
    /// in its range (`range`; an [`Atom::Xor`] in `[0, 2^k)` where both its operands are,
    /// [`parray_layout::expr::xor_max`]): each fact whose terms `self` holds as one
    /// positive multiple of them is taken out at its bound (facts of more terms first), the
    /// rest at its atoms' bounds.
    /// `None` where an atom left has no range. Of facts of the same terms (`c + e <= 999`
    /// and `c + e + 1 <= 999`, nested guards of one copy's vector and its lane) the
    /// tightest is taken.
    pub fn max_under(
        &self,
        facts: &[(Linear, i128)],
        range: &dyn Fn(&Atom) -> Option<(i128, i128)>,
    ) -> Option<i128> {
        // Each fact as `terms <= u - konst`, the tightest of those of the same terms.
        let mut tight: Vec<(Linear, i128)> = Vec::new();
        for (l, u) in facts {
            let bound = u - l.konst;
            match tight.iter_mut().find(|(t, _)| t.terms == l.terms) {
                Some((_, b)) => *b = (*b).min(bound),
                None => tight.push((
                    Linear {
                        terms: l.terms.clone(),
                        konst: 0,
                    },
                    bound,
                )),
            }
        }
        // A fact of more terms first: taken out, it bounds more of the sum at once, where
        // one of its atoms alone (`w < 2` around `row + 8 y < m`, `row` of `64 w + ..`)
        // would take that atom's multiple and leave the larger fact unmatched.
        tight.sort_by_key(|(l, _)| std::cmp::Reverse(l.terms.len()));
        let mut rest = self.clone();
        let mut bound = 0;
        for (l, u) in &tight {
            let Some((a, c)) = l.terms.iter().next() else {
                continue;
            };
            let have = rest.terms.get(a).copied().unwrap_or(0);
            if have <= 0 || have % c != 0 {
                continue;
            }
            let lambda = have / c;
            if lambda <= 0
                || l.terms
                    .iter()
                    .any(|(a, c)| rest.terms.get(a).copied().unwrap_or(0) != lambda * c)
            {
                continue;
            }
            rest = rest.add_scaled(l, -lambda);
            bound += lambda * u;
        }
        let mut max = bound + rest.konst;
        for (a, c) in &rest.terms {
            let (lo, hi) = match a {
                Atom::Xor(x, y) => xor_range(x.range(range)?, y.range(range)?)?,
                _ => range(a)?,
            };
            max += if *c > 0 { c * hi } else { c * lo };
        }
        Some(max)
    }
}

/// The values of `x ^ y` for `x` and `y` in the ranges `a` and `b`: `[0, 2^k)` where both
/// lie in it (two's complement bits are not the offset compiler's: `None` for a negative
/// operand).
fn xor_range(a: (i128, i128), b: (i128, i128)) -> Option<(i128, i128)> {
    if a.0 < 0 || b.0 < 0 {
        return None;
    }
    let (x, y) = (u64::try_from(a.1).ok()?, u64::try_from(b.1).ok()?);
    Some((0, i128::from(parray_layout::expr::xor_max(x, y))))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid(name: &str) -> Linear {
        Linear::atom(Atom::Tid(name.into()))
    }

    /// A tile's element `row * k + col` under `row < m && col < k` is at most `m * k - 1`,
    /// however far the tile's rows and columns reach past the data; without the guard it
    /// is at most what the ranges give.
    #[test]
    fn a_guarded_offset_is_bounded_by_its_guards() {
        let (m, k) = (1000i128, 777i128);
        // row = 128 * t0 + t1, col = 16 * t2 + t3; rows reach 1023, columns 783.
        let row = tid("t0").scaled(128).add_scaled(&tid("t1"), 1);
        let col = tid("t2").scaled(16).add_scaled(&tid("t3"), 1);
        let offset = row.clone().scaled(k).add_scaled(&col, 1);
        let range = |a: &Atom| match a {
            Atom::Tid(n) if n == "t0" => Some((0, 7)),
            Atom::Tid(n) if n == "t1" => Some((0, 127)),
            Atom::Tid(n) if n == "t2" => Some((0, 48)),
            _ => Some((0, 15)),
        };
        let facts = [
            (row.add_scaled(&Linear::constant(m), -1), -1),
            (col.add_scaled(&Linear::constant(k), -1), -1),
        ];
        assert_eq!(offset.max_under(&facts, &range), Some(m * k - 1));
        assert_eq!(offset.max_under(&[], &range), Some(1023 * k + 783));
        // A fact the offset does not hold as a multiple of its terms is not used.
        let skew = offset.add_scaled(&tid("t1"), 1);
        assert_eq!(
            skew.max_under(&facts[..1], &range),
            Some(1023 * k + 783 + 127)
        );
    }

    /// Of two guards on the same sum, the tighter bounds the offset, whichever comes
    /// first: `row < m && col + 8v < k` (a vector's first lane) around `row < m && col +
    /// 8v + 1 < k` (its second) keeps `row * k + col + 8v + 1` below `m * k`.
    #[test]
    fn the_tightest_of_guards_on_one_sum_bounds_the_offset() {
        let (m, k) = (1000i128, 1000i128);
        let row = tid("t0").scaled(128).add_scaled(&tid("t1"), 1);
        let col = tid("t2")
            .scaled(4)
            .add_scaled(&Linear::atom(Atom::Local(LocalId(7))), 8);
        let range = |a: &Atom| match a {
            Atom::Tid(n) if n == "t0" => Some((0, 7)),
            Atom::Tid(n) if n == "t1" => Some((0, 127)),
            Atom::Tid(_) => Some((0, 1)),
            _ => Some((0, 1)),
        };
        let below = |l: &Linear, plus: i128, of: i128| {
            (
                l.clone()
                    .add_scaled(&Linear::constant(plus), 1)
                    .add_scaled(&Linear::constant(of), -1),
                -1,
            )
        };
        let offset = row
            .clone()
            .scaled(k)
            .add_scaled(&col, 1)
            .add_scaled(&Linear::constant(1), 1);
        let (first, second) = (below(&col, 0, k), below(&col, 1, k));
        let row_fact = below(&row, 0, m);
        for facts in [
            [row_fact.clone(), first.clone(), second.clone()],
            [row_fact.clone(), second.clone(), first.clone()],
        ] {
            assert_eq!(offset.max_under(&facts, &range), Some(m * k - 1));
        }
        // The first lane's guard alone lets the offset reach `m * k`.
        assert_eq!(offset.max_under(&[row_fact, first], &range), Some(m * k));
    }

    /// A guard on one atom of a larger guarded sum (`w < 2` around `row < m`, where `row`
    /// is `64 w + t`: a consumer warpgroup's rows of a tile of C) does not take that
    /// atom's multiple out before the larger fact can: `row * k + col` under both is at
    /// most `m * k - 1`, whichever order the facts come in.
    #[test]
    fn a_fact_of_one_atom_leaves_the_larger_guard_its_atoms() {
        let (m, k) = (1000i128, 1000i128);
        let row = tid("w").scaled(64).add_scaled(&tid("t"), 1);
        let col = tid("c");
        let offset = row.clone().scaled(k).add_scaled(&col, 1);
        let range = |a: &Atom| match a {
            Atom::Tid(n) if n == "w" => Some((0, 2)),
            Atom::Tid(n) if n == "t" => Some((0, 63)),
            _ => Some((0, 1023)),
        };
        let below = |l: &Linear, of: i128| (l.clone().add_scaled(&Linear::constant(of), -1), -1);
        let (w_fact, row_fact, col_fact) = (below(&tid("w"), 2), below(&row, m), below(&col, k));
        for facts in [
            [w_fact.clone(), row_fact.clone(), col_fact.clone()],
            [row_fact.clone(), col_fact.clone(), w_fact.clone()],
        ] {
            assert_eq!(offset.max_under(&facts, &range), Some(m * k - 1));
        }
        // The one-atom fact alone bounds only its atom: rows up to 64 * 1 + 63.
        assert_eq!(
            offset.max_under(&[w_fact, col_fact], &range),
            Some(127 * k + k - 1)
        );
    }

    /// The 128-byte swizzle's offset `64 * row + 8 * ((c / 8) ^ (row % 8)) + c % 8`: the
    /// XOR of two digits below 8 is below 8, so under `row < 16` the offset is at most
    /// `64 * 15 + 8 * 7 + 7 = 1023`, what it would be without the XOR.
    #[test]
    fn a_xor_of_operands_below_a_power_of_two_stays_below_it() {
        let (row, chunk, lane, row_digit) = (
            Linear::atom(Atom::Local(LocalId(0))),
            Linear::atom(Atom::Digit(LocalId(1), 8, None)),
            Linear::atom(Atom::Digit(LocalId(1), 1, Some(8))),
            Linear::atom(Atom::Digit(LocalId(0), 1, Some(8))),
        );
        let xor = Linear::atom(Atom::Xor(Box::new(chunk), Box::new(row_digit)));
        let offset = row
            .clone()
            .scaled(64)
            .add_scaled(&xor, 8)
            .add_scaled(&lane, 1);
        // row up to 31 (two tiles' rows), c up to 63.
        let range = |a: &Atom| match a {
            Atom::Local(LocalId(0)) => Some((0, 31)),
            Atom::Digit(LocalId(1), 8, None) => Some((0, 7)),
            Atom::Digit(_, 1, Some(8)) => Some((0, 7)),
            _ => None,
        };
        let under_16 = [(row.add_scaled(&Linear::constant(16), -1), -1)];
        assert_eq!(offset.max_under(&under_16, &range), Some(1023));
        assert_eq!(offset.range(&range), Some((0, 31 * 64 + 63)));
        // Operands up to 4 and 2: at most 7, below the power of two above 4 (the most
        // they reach is 4 ^ 2 = 6: the bound is sound, not exact).
        let small = |a: &Atom| match a {
            Atom::Local(LocalId(0)) => Some((0, 4)),
            _ => Some((0, 2)),
        };
        let x = Linear::atom(Atom::Xor(
            Box::new(Linear::atom(Atom::Local(LocalId(0)))),
            Box::new(Linear::atom(Atom::Local(LocalId(1)))),
        ));
        assert_eq!(x.range(&small), Some((0, 7)));
    }

    /// A XOR bounds nothing where an operand has no range, or may be negative (its bits
    /// are then not an offset's digit's).
    #[test]
    fn a_xor_with_an_unbounded_operand_has_no_bound() {
        let x = Linear::atom(Atom::Xor(
            Box::new(Linear::atom(Atom::Local(LocalId(0)))),
            Box::new(Linear::atom(Atom::Local(LocalId(1)))),
        ));
        let unbounded = |a: &Atom| match a {
            Atom::Local(LocalId(0)) => Some((0, 7)),
            _ => None,
        };
        assert_eq!(x.max_under(&[], &unbounded), None);
        let negative = |a: &Atom| match a {
            Atom::Local(LocalId(0)) => Some((0, 7)),
            _ => Some((-1, 7)),
        };
        assert_eq!(x.max_under(&[], &negative), None);
        // Nor does a fact about the operand alone: `l1 <= 7` says nothing of the XOR's
        // other operand.
        let fact = [(Linear::atom(Atom::Local(LocalId(1))), 7)];
        assert_eq!(x.scaled(8).max_under(&fact, &unbounded), None);
    }
}
