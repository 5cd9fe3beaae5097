//! The kernels of one rank's side of a `#copy` between two natural types distributed by
//! one digit each (SPEC.md 3.12): [`parray_layout::copy::DigitExchange`]'s closed forms,
//! each size a literal.

use parray_layout::copy::{DigitExchange, RankDigit};
use parray_layout::{ElemType, LinearForm, Offset, Vars};

use super::build::{add, assign, bin, cast, index, lit, loc, mul, offset, refused, Builder};
use super::Kernel;
use crate::back::c::Dialect;
use crate::ir::{BinOp, Expr, Indexed, Scalar, Stmt};

/// What an exchange kernel does with one rank's elements (SPEC.md 3.12).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ExchangeStep {
    /// The source part into the send buffer, each rank's block in turn.
    Pack,
    /// The receive buffer, each rank's block in turn, into the destination part.
    Unpack,
    /// The source part straight into the destination part: every element stays on its
    /// rank.
    Local,
}

/// Threads per block of an exchange kernel (fewer where a run is shorter, more where
/// the ranks are more).
pub const EXCHANGE_BLOCK: u64 = 256;

/// The most threads of a block: a thread of each rank at least.
const MOST_BLOCK_THREADS: u64 = 1024;

/// The kernel `parray_exchange(T* from, T* to)` of one step of a copy between two
/// natural types distributed by one digit each, on rank `me`: one thread an element of
/// the part it walks (the source's for `Pack`, the destination's otherwise), by
/// [`DigitExchange`]'s formulas (`exchange` is `None` only for `Local`). `from` and `to`
/// are the parts, or the send and receive buffers of every rank's block.
///
/// Its thread array is the digits of the element index `k` that the walked part leaves
/// free, so that no index is divided: `k = (((t r + a) mid + m) r + b) lo + l` (`a` the
/// rank digit of the type whose digit is the higher, `b` the other's), and the walked
/// type's digit is `me`. The blocks are `[t][m][l / LT]`, the threads `[o][LT]` (`o` the
/// other type's digit, `LT` threads along a run, 256 in all where the run and the ranks
/// allow; those past a run's end idle). Indices
/// are 32-bit where both types' sizes fit in 31 bits, 64-bit otherwise (each array index
/// still 32-bit, as the body language's are). A rank holding no part of the type it
/// walks has nothing to move: that is an error here.
pub fn exchange_kernel(
    elem: ElemType,
    step: ExchangeStep,
    (src, dst): (&RankDigit, &RankDigit),
    exchange: Option<&DigitExchange>,
    me: u64,
    dialect: Dialect,
) -> parray_layout::Result<Kernel> {
    const NAME: &str = "parray_exchange";
    let walked = match step {
        ExchangeStep::Pack => src,
        ExchangeStep::Unpack | ExchangeStep::Local => dst,
    };
    let count = walked.part_of(me as usize);
    if count == 0 {
        return Err(refused(NAME, format!("rank {me} holds no part to move")));
    }
    // The rank's digit of the type it walks (its rank where the digit is the whole rank).
    let digit_me = me / walked.stride;
    // The digits' sizes: `(top, other ranks, mid, run)`. Without an exchange every element
    // stays on its rank: the walked part is `[top][run]`, its digit `me` between.
    let (top, ranks, mid, lo) = match (step, exchange) {
        (ExchangeStep::Pack | ExchangeStep::Unpack, Some(ex)) => {
            let r = ex.src.ranks;
            let (hi, lo) = (
                ex.src.below.max(ex.dst.below),
                ex.src.below.min(ex.dst.below),
            );
            (ex.src.size / (r * hi), r, hi / (r * lo), lo)
        }
        _ => (
            walked.size / (walked.ranks * walked.below),
            1,
            1,
            walked.below,
        ),
    };
    if ranks > MOST_BLOCK_THREADS {
        return Err(refused(
            NAME,
            format!(
                "a block holds one thread a rank, and {ranks} ranks exceed {MOST_BLOCK_THREADS}"
            ),
        ));
    }
    let along = lo.min((EXCHANGE_BLOCK / ranks).max(1));
    let runs = lo.div_ceil(along);
    let mut b = Builder::new(
        &format!(
            "#parray {{cuda({elem}* from, {elem}* to) [[{top}][{mid}][{runs}]][[{ranks}][{along}]]}} EXCHANGE"
        ),
        "EXCHANGE",
    )?;
    // 32-bit index arithmetic where every index fits; 64-bit otherwise.
    let ix = match src.size.max(dst.size) <= 1 << 31 {
        true => Scalar::Usize,
        false => Scalar::U64,
    };
    let c = |v: u64| lit(v, ix);
    let widen = |x: Expr| match ix {
        Scalar::Usize => x,
        _ => cast(x, ix),
    };
    let (from, to) = (b.param("from"), b.param("to"));
    let (t, m, run) = (
        widen(b.tid("0_0")),
        widen(b.tid("0_1")),
        widen(b.tid("0_2")),
    );
    let (o, lane) = (widen(b.tid("1_0")), widen(b.tid("1_1")));
    let mut stmts = Vec::new();
    let l = b.let_(&mut stmts, "l", add(mul(run, c(along)), lane));
    // Element `j` of the walked part and its place in the other side, from the digits.
    let (j, at) = match (step, exchange) {
        (ExchangeStep::Local, _) => {
            let j = add(mul(t.clone(), c(lo)), l.clone());
            let at = match (src.ranks, dst.ranks) {
                // The source's digit is the destination's: the parts are in one order.
                (r_s, r_d) if r_s == r_d && src.below == dst.below => j.clone(),
                // The source is whole on every rank: the element's own `k`.
                (1, _) => add(
                    mul(add(mul(t, c(dst.ranks)), c(digit_me)), c(lo)),
                    l.clone(),
                ),
                _ => {
                    return Err(refused(
                        NAME,
                        "a local step moves between parts of one digit, or from a whole source",
                    ))
                }
            };
            (j, at)
        }
        (_, Some(ex)) => {
            // The walked type's digit is the higher (`a`) or the lower (`b`) of `k`.
            let walked_high = walked.below > ex.src.below.min(ex.dst.below);
            let j = match walked_high {
                true => add(
                    mul(
                        add(
                            mul(add(mul(t.clone(), c(mid)), m.clone()), c(ranks)),
                            o.clone(),
                        ),
                        c(lo),
                    ),
                    l.clone(),
                ),
                false => add(
                    mul(
                        add(
                            mul(add(mul(t.clone(), c(ranks)), o.clone()), c(mid)),
                            m.clone(),
                        ),
                        c(lo),
                    ),
                    l.clone(),
                ),
            };
            // The other side: block `o` (the peer's), `k` without the two digits within it.
            let in_block = add(mul(add(mul(t, c(mid)), m), c(lo)), l.clone());
            (j, add(mul(o, c(ex.block())), in_block))
        }
        (_, None) => return Err(refused(NAME, "a pack or unpack step needs its exchange")),
    };
    // Element `i` of a buffer of `len` elements, an index the prover bounds by `len`.
    let buffer = |what: &str, len: u64, i: Expr| {
        let mut vars = Vars::new();
        let v = vars.bind("i", len - 1);
        let of = Indexed {
            type_name: what.to_string(),
            extent: Some(len),
            constant: false,
        };
        offset(
            Offset {
                expr: LinearForm::var(v),
                vars,
            },
            match ix {
                Scalar::Usize => i,
                _ => cast(i, Scalar::Usize),
            },
            of,
        )
    };
    let (s_part, d_part) = (src.size / src.ranks, dst.size / dst.ranks);
    let mv = match (step, exchange) {
        (ExchangeStep::Pack, Some(ex)) => assign(
            index(to, buffer("the send buffer", ex.block() * ranks, at)),
            index(from, buffer("the source part", s_part, j)),
        ),
        (ExchangeStep::Unpack, Some(ex)) => assign(
            index(to, buffer("the destination part", d_part, j)),
            index(from, buffer("the receive buffer", ex.block() * ranks, at)),
        ),
        _ => assign(
            index(to, buffer("the destination part", d_part, j)),
            index(from, buffer("the source part", s_part, at)),
        ),
    };
    // Threads past a run's end (where the threads along it do not divide it) move nothing.
    stmts.push(match lo.is_multiple_of(along) {
        true => mv,
        false => Stmt::If {
            cond: bin(BinOp::Lt, l, c(lo)),
            then: vec![mv],
            els: None,
            loc: loc(),
        },
    });
    b.finish(NAME, stmts, dialect)
}
