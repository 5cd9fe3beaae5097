//! The kernels of one rank's side of a `#copy` between two natural types distributed by
//! one digit each (SPEC.md 3.12): [`parray_layout::copy::DigitExchange`]'s closed forms,
//! each size a literal.

use parray_layout::copy::{DigitExchange, RankDigit};
use parray_layout::{ElemType, LinearForm, Offset, Vars};

use super::build::{add, assign, bin, cast, e, index, lit, loc, mul, offset, refused, Builder};
use super::Kernel;
use crate::back::c::Dialect;
use crate::ir::{BinOp, Expr, ExprKind, Indexed, Scalar, Stmt};

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

/// Threads per block of an exchange kernel.
pub const EXCHANGE_BLOCK: u64 = 256;

/// The most blocks of an exchange kernel: its threads stride over the rest.
const MOST_BLOCKS: u64 = 1 << 20;

/// The kernel `parray_exchange(T* from, T* to)` of one step of a copy between two
/// natural types distributed by one digit each, on rank `me`: thread `j`
/// of a grid-stride loop moves element `j` of the part it walks (the source's for `Pack`,
/// the destination's otherwise), by [`DigitExchange`]'s formulas (`exchange` is `None`
/// only for `Local`). `from` and `to` are the parts, or the send and receive buffers of
/// every rank's block. Indices are 32-bit where both types' sizes fit in 31 bits, 64-bit
/// otherwise (each array index still 32-bit, as the body language's are). A rank holding
/// no part of the type it walks has nothing to move: that is an error here.
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
    let blocks = count.div_ceil(EXCHANGE_BLOCK).clamp(1, MOST_BLOCKS);
    let mut b = Builder::new(
        &format!(
            "#parray {{cuda({elem}* from, {elem}* to) [{blocks}][{EXCHANGE_BLOCK}]}} EXCHANGE"
        ),
        "EXCHANGE",
    )?;
    // 32-bit index arithmetic where every index fits, and so does `j` plus the grid's
    // stride; 64-bit otherwise.
    let ix = match src.size.max(dst.size) <= 1 << 31 {
        true => Scalar::Usize,
        false => Scalar::U64,
    };
    let c = |v: u64| lit(v, ix);
    let (from, to) = (b.param("from"), b.param("to"));
    let tid = b.tid("");
    let j_local = b.local("j", true, Some(crate::ir::Ty::Scalar(ix)));
    let j = e(ExprKind::Local(j_local));
    let mut body = Vec::new();
    // `k` of element `j` of this rank's part of a type.
    let k_of = |d: &RankDigit| {
        let (below, ranks) = (c(d.below), c(d.ranks));
        add(
            mul(
                add(
                    mul(bin(BinOp::Div, j.clone(), below.clone()), ranks),
                    c(digit_me),
                ),
                below.clone(),
            ),
            bin(BinOp::Rem, j.clone(), below),
        )
    };
    let k = b.let_(
        &mut body,
        "k",
        k_of(match step {
            ExchangeStep::Pack => src,
            _ => dst,
        }),
    );
    let div = |x: Expr, v: u64| bin(BinOp::Div, x, c(v));
    let rem = |x: Expr, v: u64| bin(BinOp::Rem, x, c(v));
    // The digit of a type in `k`: the rank that holds element `k`.
    let digit = |d: &RankDigit| rem(div(k.clone(), d.below), d.ranks);
    // Element `k`'s place in its block: `k` without the two rank digits.
    let in_block = |ex: &DigitExchange| {
        let r = ex.src.ranks;
        let (hi, lo) = (
            ex.src.below.max(ex.dst.below),
            ex.src.below.min(ex.dst.below),
        );
        let mid = hi / (r * lo);
        add(
            mul(
                add(
                    mul(div(k.clone(), r * hi), c(mid)),
                    rem(div(k.clone(), r * lo), mid),
                ),
                c(lo),
            ),
            rem(k.clone(), lo),
        )
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
        (ExchangeStep::Pack, Some(ex)) => {
            let all = ex.block() * ex.src.ranks;
            let at = add(mul(digit(dst), c(ex.block())), in_block(ex));
            assign(
                index(to, buffer("the send buffer", all, at)),
                index(from, buffer("the source part", s_part, j.clone())),
            )
        }
        (ExchangeStep::Unpack, Some(ex)) => {
            let all = ex.block() * ex.src.ranks;
            let at = add(mul(digit(src), c(ex.block())), in_block(ex));
            assign(
                index(to, buffer("the destination part", d_part, j.clone())),
                index(from, buffer("the receive buffer", all, at)),
            )
        }
        (ExchangeStep::Local, _) => {
            let at = add(
                mul(div(k.clone(), src.ranks * src.below), c(src.below)),
                rem(k.clone(), src.below),
            );
            assign(
                index(to, buffer("the destination part", d_part, j.clone())),
                index(from, buffer("the source part", s_part, at)),
            )
        }
        (_, None) => return Err(refused(NAME, "a pack or unpack step needs its exchange")),
    };
    body.push(mv);
    body.push(Stmt::Expr {
        expr: e(ExprKind::Assign(
            Some(BinOp::Add),
            Box::new(j.clone()),
            Box::new(c(blocks * EXCHANGE_BLOCK)),
        )),
        loc: loc(),
    });
    let stmts = vec![
        Stmt::Let {
            local: j_local,
            init: Some(match ix {
                Scalar::Usize => tid,
                _ => cast(tid, ix),
            }),
            loc: loc(),
        },
        Stmt::While {
            cond: bin(BinOp::Lt, j, c(count)),
            body,
            loc: loc(),
        },
    ];
    b.finish(NAME, stmts, dialect)
}
