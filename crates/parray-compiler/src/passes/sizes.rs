//! Bounds up to sizes given at run time, for the proofs of a body compiled once for all
//! of them (pthd and the emulation; a cuda kernel is specialised at the bound sizes and
//! proved with numbers).
//!
//! The intervals of the prover know no number for `$dim(PART_0_1)$` of a run-time type.
//! What holds at every binding is that `k` of `for k in 0..$dim(PART_0_1)$` lies below
//! that size, whatever it is: a [`Range`] `lo ..= q + c` with `q` a polynomial of the
//! run-time sizes (`parray_layout::symbolic`). Then the index `k` of `$PART[[[$tid$][k]]]$`
//! lies inside the dimension it indexes (of that same size), the form's offset below the
//! extent of `PART`, and an access by it inside an array that the detour checked holds
//! that extent ([`below`]).

use parray_layout::symbolic::Poly;

/// The values `lo ..= q + c` of an integer expression at every binding of the run-time
/// sizes, `q` a size or an extent of run-time types (below 2^64 at every binding) and
/// `c <= 0`: an unsigned 64-bit type holds them, so no arithmetic computing them wraps.
#[derive(Debug, Clone, PartialEq)]
pub struct Range {
    pub lo: i128,
    q: Poly,
    c: i128,
}

impl Range {
    /// `lo ..= size + c`, for `size` a size or an extent, when `lo >= 0` and `c <= 0`.
    pub fn upto(lo: i128, size: Poly, c: i128) -> Option<Range> {
        (lo >= 0 && c <= 0).then_some(Range { lo, q: size, c })
    }

    /// The values of a loop's variable from `start` to `end` (`..=end` when `inclusive`).
    pub fn until(start: i128, end: &Range, inclusive: bool) -> Option<Range> {
        Range::upto(start, end.q.clone(), end.c - i128::from(!inclusive))
    }

    /// `self + [a, b]`, where it stays below the size.
    pub fn plus(&self, (a, b): (i128, i128)) -> Option<Range> {
        Range::upto(self.lo + a, self.q.clone(), self.c + b)
    }

    /// `self - [a, b]`, where nothing wraps below 0.
    pub fn minus(&self, (a, b): (i128, i128)) -> Option<Range> {
        Range::upto(self.lo - b, self.q.clone(), self.c - a)
    }

    /// The largest value, `q + c`.
    pub fn top(&self) -> Option<Poly> {
        self.q.add(&Poly::constant(self.c))
    }
}

/// Whether values from `lo` up to `top`, each with any of `add` added, lie in `[0, end)` at
/// every binding: `lo + add.0 >= 0` and `end - top - add.1 - 1` is at least 0.
pub fn below(lo: i128, top: &Poly, add: (i128, i128), end: &Poly) -> bool {
    let room = end.sub(top).and_then(|r| r.sub(&Poly::constant(add.1 + 1)));
    lo + add.0 >= 0 && room.is_some_and(|r| r.nonnegative())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parray_layout::symbolic::Atom;
    use proptest::prelude::*;

    fn size(name: &str) -> Poly {
        Poly::atom(Atom::Size(name.into()))
    }

    /// A loop to a size stays below it, and below nothing smaller; a bound of the other
    /// size or one past the end proves nothing.
    #[test]
    fn a_loop_to_a_size_stays_below_it() {
        let (n, m) = (size("N"), size("M"));
        let dim = Range::upto(1, n.clone(), 0).unwrap();
        let k = Range::until(0, &dim, false).unwrap();
        let top = k.top().unwrap();
        assert!(below(0, &top, (0, 0), &n));
        assert!(!below(0, &top, (0, 0), &m), "another size");
        assert!(!below(0, &top, (0, 1), &n), "one past");
        assert!(!below(-1, &top, (0, 0), &n), "below 0");
        let inclusive = Range::until(0, &dim, true).unwrap();
        assert!(!below(0, &inclusive.top().unwrap(), (0, 0), &n), "0..=N");
        // k + 1 <= N, not below it; k + 1 - 1 is; k + 2 is no range (it may pass N).
        let next = k.plus((1, 1)).unwrap();
        assert!(!below(0, &next.top().unwrap(), (0, 0), &n));
        assert!(below(
            0,
            &next.minus((1, 1)).unwrap().top().unwrap(),
            (0, 0),
            &n
        ));
        assert_eq!(k.plus((2, 2)), None);
        // k - 1 may wrap (k may be 0): no range.
        assert_eq!(k.minus((1, 1)), None);
        // Below N, below 2N too.
        let twice = n.add(&n).unwrap();
        assert!(below(0, &top, (0, 0), &twice));
        // A number below a size proves nothing, but below a size it is part of does.
        assert!(!below(0, &Poly::constant(0), (0, 0), &n));
        assert!(below(
            0,
            &Poly::constant(15),
            (0, 0),
            &n.add(&Poly::constant(16)).unwrap()
        ));
    }

    /// `N / 4`, as the size of a declared dimension.
    fn quarter() -> Poly {
        let program = parray_layout::parse_program("const N;\npaged float [N / 4] Q;").unwrap();
        let module = parray_layout::Module::build(&program, &[("N".into(), 64)]).unwrap();
        let sizes = parray_layout::symbolic::Sizes::of(&program, &module);
        sizes
            .size(module.lookup("Q_0").unwrap().node)
            .unwrap()
            .clone()
    }

    /// `c0 + c1 N + c2 M + c3 N M + c4 N / 4` from small multiples.
    fn poly(c: [i8; 5]) -> Poly {
        let (n, m) = (size("N"), size("M"));
        let terms = [
            Poly::constant(1),
            n.clone(),
            m.clone(),
            n.mul(&m).unwrap(),
            quarter(),
        ];
        terms.iter().zip(c).fold(Poly::constant(0), |acc, (t, k)| {
            let scaled = t.mul(&Poly::constant(i128::from(k))).unwrap();
            acc.add(&scaled).unwrap()
        })
    }

    proptest! {
        /// What `below` says of polynomials holds of their values at every binding tried:
        /// of an end a little above or below the values, or equal to them.
        #[test]
        fn below_holds_at_every_binding(
            lo in -2i128..3,
            top in proptest::array::uniform5(-3i8..4),
            (k, term, by) in (-1i8..3, 1usize..6, 0i8..2),
            add in (-2i128..3, 0i128..3),
        ) {
            // The end: the values' top, plus a number, plus `by` times one of the terms.
            let mut more = [k, 0, 0, 0, 0];
            if let Some(c) = more.get_mut(term) {
                *c += by;
            }
            let (top, end) = (poly(top), poly(top).add(&poly(more)).unwrap());
            if below(lo, &top, add, &end) {
                prop_assert!(lo + add.0 >= 0);
                for (n, m) in [(4, 4), (4, 8), (64, 4), (400, 1200)] {
                    let at = |a: &Atom| match a {
                        Atom::Size(s) if s == "N" => Some(n),
                        Atom::Size(_) => Some(m),
                        _ => None,
                    };
                    let (t, e) = (top.eval(&at).unwrap(), end.eval(&at).unwrap());
                    prop_assert!(t + add.1 < e, "{top:?} + {} < {end:?} at N = {n}, M = {m}", add.1);
                }
            }
        }
    }
}
