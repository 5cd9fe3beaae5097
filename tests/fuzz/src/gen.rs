//! A seeded generator of random bodies. It writes any body of its subset, well defined or
//! not: [`crate::eval::run`] decides, and [`well_defined`] draws until one is.

use crate::ast::{BinOp, Body, Dim, Elem, Expr, Index, Stmt, Tid, Ty};
use crate::eval;

/// splitmix64: small, seedable, good enough to pick among constructs.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }

    /// True with probability `percent` / 100.
    pub fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }

    pub fn pick<T: Copy>(&mut self, xs: &[T]) -> T {
        xs[self.below(xs.len() as u64) as usize]
    }
}

/// Constructs that expose back-end bugs known when the fuzzer was written: off by default
/// so that CI stays green, each to be switched on (here, or by naming it in the
/// `PARRAY_FUZZ_ENABLE` environment variable at build time) when its fix lands.
#[derive(Clone, Debug, Default)]
pub struct Features {
    /// Bug 1: `out[i] *= 2 + 3` loses the parentheses of its operand on the CPU back
    /// ends (100 becomes 203, not 500). Off: a compound store's operand is parenthesised.
    pub compound_store_binop: bool,
    /// Bug 2: u8/i8 arithmetic in the CUDA C is done in `int`, without wrapping at 8 bits
    /// (`(c << 4) >> 4`, `!c as u32`). Off: no `<<` or `!` on u8/i8.
    pub narrow_shl_not: bool,
    /// Bug 3: `for i in 250u8..=255u8` never ends in the CUDA C. Off: the evaluator
    /// rejects an inclusive range to its type's maximum.
    pub inclusive_to_max: bool,
    /// Bug 4: `-(-x)` is written `--x` in the CUDA C. Off: no `-` directly on a negation or
    /// a negative literal.
    pub nested_neg: bool,
    /// Bug 5: a u64 index inside `$...$` makes the C offset 64 bits wide. Off: the
    /// evaluator rejects a 64-bit index in a `$...$` form.
    pub wide_offset_index: bool,
    /// Bug 6: `!($tid_1$ & 7usize) >> 28` is written with an `int` operand in the CUDA C
    /// (index arithmetic in int, SPEC 3.5). Off: no `!` on u32/usize.
    pub not_on_u32: bool,
    /// Bug 7: a proved access as the end of a `for` range, or first in a branch of an
    /// `if` value, fails to compile in Rust (it would break the whole generated file).
    /// Off: no output read in a `for` end or an `if` value's branch.
    pub proved_read_in_for_end_or_branch: bool,
    /// Bug 8: an unsuffixed literal in `atomic_add(out + k, 5)` on a pthd u32 array is
    /// typed i32 by rustc. Off: an atomic's operand never is a bare unsuffixed literal.
    pub unsuffixed_atomic_literal: bool,
    /// Found by this fuzzer: `$T[i]$ as u64` does not parse ("expected expression, found
    /// `as`") in an `if` condition, a `for` range's end or an `if` value's branch, even
    /// in parentheses (`if c { ($T[i]$) as u64 } else { .. }`). Off: no form in those, a form under a cast written `($T[i]$) as u64`, and a branch that starts
    /// with an element read parenthesised.
    pub bare_form_first_in_branch: bool,
    /// Found by this fuzzer: an element read of `out` inside the index of a `$T[...]$`
    /// form (`$T[out[$tid$] % 2u32][0u32]$`) makes the detour index `out` as `T` (a
    /// compile error: "an array of `..` cannot be indexed as `T`"). Off: no element read
    /// inside a `$...$` form.
    pub read_inside_form: bool,
}

impl Features {
    pub const NAMES: [&'static str; 10] = [
        "compound_store_binop",
        "narrow_shl_not",
        "inclusive_to_max",
        "nested_neg",
        "wide_offset_index",
        "not_on_u32",
        "proved_read_in_for_end_or_branch",
        "unsuffixed_atomic_literal",
        "bare_form_first_in_branch",
        "read_inside_form",
    ];

    /// The features named in `list` (comma-separated; `all` for every one) switched on.
    pub fn enabling(list: &str) -> Result<Features, String> {
        let mut f = Features::default();
        for name in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let all = name == "all";
            if !all && !Self::NAMES.contains(&name) {
                return Err(format!(
                    "unknown fuzzer feature `{name}` (known: {:?})",
                    Self::NAMES
                ));
            }
            let on = |n: &str| all || name == n;
            f.compound_store_binop |= on("compound_store_binop");
            f.narrow_shl_not |= on("narrow_shl_not");
            f.inclusive_to_max |= on("inclusive_to_max");
            f.nested_neg |= on("nested_neg");
            f.wide_offset_index |= on("wide_offset_index");
            f.not_on_u32 |= on("not_on_u32");
            f.proved_read_in_for_end_or_branch |= on("proved_read_in_for_end_or_branch");
            f.unsuffixed_atomic_literal |= on("unsuffixed_atomic_literal");
            f.bare_form_first_in_branch |= on("bare_form_first_in_branch");
            f.read_inside_form |= on("read_inside_form");
        }
        Ok(f)
    }
}

/// Where the shared array stands in a collective body: not yet written, each thread
/// writing (and reading) only its own element, or every thread reading any element.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Phase {
    Unwritten,
    Write,
    Read,
}

#[derive(Clone, Copy)]
struct Var {
    id: usize,
    ty: Ty,
    mutable: bool,
    /// Whether its value involves a `$T[...]$` form: such a value in an output index
    /// would make the detour check `out` against that type (3.5 "Bounds").
    offset: bool,
}

/// Where an expression stands, for the constructs that may not appear there.
#[derive(Clone, Copy, Default)]
struct Ctx {
    /// In an output index: no `$...$` form.
    no_offsets: bool,
    /// In a `for` end or an `if` value's branch (bug 7).
    no_out_read: bool,
    /// Its type comes from the context, so a literal may be unsuffixed.
    may_unsuffix: bool,
}

struct Gen<'a> {
    rng: Rng,
    f: &'a Features,
    body: Body,
    scopes: Vec<Vec<Var>>,
    next_var: usize,
    loops: u32,
    phase: Phase,
}

/// Draws bodies from `seed` until one is well defined on both `usize` widths (on the
/// cuda width alone for a collective body); returns it with its expected outputs on pthd
/// threads (None for a collective body) and on a cuda grid.
pub fn well_defined(seed: u64, f: &Features) -> (Body, Option<Vec<i64>>, Vec<i64>) {
    let mut rng = Rng::new(seed);
    loop {
        let body = generate(rng.next_u64(), f);
        let cuda = eval::run(&body, 32, f);
        let pthd = if body.collective {
            Ok(None)
        } else {
            eval::run(&body, 64, f).map(Some)
        };
        if let (Ok(pthd), Ok(cuda)) = (pthd, cuda) {
            return (body, pthd, cuda);
        }
    }
}

/// One random body, well defined or not.
pub fn generate(seed: u64, f: &Features) -> Body {
    let mut rng = Rng::new(seed);
    let collective = rng.chance(20);
    let threads = if collective {
        rng.pick(&[32, 64])
    } else {
        rng.pick(&[1, 2, 4, 5, 8, 16])
    };
    let elem = rng.pick(&Elem::ALL);
    let decls = (0..rng.below(3)).map(|_| declared(&mut rng)).collect();
    let body = Body {
        blocks: rng.pick(&[1, 2, 3]),
        threads,
        per_thread: rng.pick(&[1, 2, 4]),
        atomics: if elem.atomic() {
            rng.pick(&[0, 0, 1, 2])
        } else {
            0
        },
        elem,
        decls,
        shared: if collective && rng.chance(70) {
            Some(rng.pick(&Elem::ALL))
        } else {
            None
        },
        collective,
        stmts: Vec::new(),
    };
    let mut g = Gen {
        rng,
        f,
        body,
        scopes: vec![Vec::new()],
        next_var: 0,
        loops: 0,
        phase: Phase::Unwritten,
    };
    let mut stmts = Vec::new();
    let n = 2 + g.rng.below(6);
    for _ in 0..n {
        if g.body.collective && g.rng.chance(35) {
            g.collective(&mut stmts);
        }
        let s = g.stmt(0);
        stmts.push(s);
    }
    // Make what the locals hold visible: `^=` cannot overflow.
    let finals: Vec<Var> = g.scopes[0].iter().rev().take(3).copied().collect();
    for v in finals {
        let e = cast(Expr::Var(v.id), v.ty, elem.ty());
        let j = g.out_slot();
        stmts.push(Stmt::Store {
            j,
            op: Some(BinOp::Xor),
            e,
        });
    }
    g.body.stmts = stmts;
    g.body
}

fn cast(e: Expr, from: Ty, to: Ty) -> Expr {
    if from == to {
        e
    } else {
        Expr::Cast(Box::new(e), to)
    }
}

/// A declared type of one to three dimensions, a group sometimes: `[4][8]`, `[[2][2]][4]`.
fn declared(rng: &mut Rng) -> Vec<Dim> {
    // Two or three dimensions: `$T[[a][b]]$` of a type of one group dimension reads as
    // two indices of T (it is written `$T[[[a][b]]]$`).
    (0..2 + rng.below(2))
        .map(|_| {
            if rng.chance(25) {
                Dim::Group((0..2).map(|_| Dim::Leaf(rng.pick(&[2, 3, 4]))).collect())
            } else {
                Dim::Leaf(rng.pick(&[1, 2, 3, 4, 8]))
            }
        })
        .collect()
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    Expr::Bin(op, Box::new(l), Box::new(r))
}

/// Whether `e` has a type of its own (not only unsuffixed literals).
fn typed(e: &Expr) -> bool {
    match e {
        Expr::Lit { suffix, .. } => *suffix,
        Expr::Neg(x) | Expr::Not(x) | Expr::Paren(x) => typed(x),
        Expr::Bin(op, l, r) if !op.comparison() && !matches!(op, BinOp::Shl | BinOp::Shr) => {
            typed(l) || typed(r)
        }
        Expr::Bin(_, l, _) => typed(l),
        Expr::If(_, a, b) => typed(a) || typed(b),
        _ => true,
    }
}

impl Gen<'_> {
    fn vars(&self) -> impl Iterator<Item = &Var> {
        self.scopes.iter().flatten()
    }

    fn fresh(&mut self) -> usize {
        self.next_var += 1;
        self.next_var
    }

    /// A collective statement at the top level: `#sync`, a shared write, a shuffle.
    fn collective(&mut self, stmts: &mut Vec<Stmt>) {
        let shared = self.body.shared.is_some();
        match self.rng.below(3) {
            0 if shared && self.phase != Phase::Unwritten => {
                stmts.push(Stmt::Sync);
                self.phase = if self.phase == Phase::Write {
                    Phase::Read
                } else {
                    Phase::Write
                };
            }
            1 if shared && self.phase != Phase::Read => {
                let ty = self.body.shared.unwrap().ty();
                let e = self.expr(ty, 2, Ctx::default());
                stmts.push(Stmt::SharedStore { op: None, e });
                self.phase = Phase::Write;
            }
            _ => {
                let ty = self.rng.pick(&[Ty::I32, Ty::U32, Ty::I64, Ty::U64]);
                let x = self.expr(ty, 2, Ctx::default());
                let d = if self.rng.chance(70) {
                    Expr::Lit {
                        v: self.rng.pick(&[0, 1, 2, 4, 8, 16, 31, 40]),
                        ty: Ty::U32,
                        suffix: true,
                    }
                } else {
                    self.expr(Ty::U32, 2, Ctx::default())
                };
                let var = self.fresh();
                stmts.push(Stmt::Shfl { var, ty, x, d });
                self.scopes[0].push(Var {
                    id: var,
                    ty,
                    mutable: false,
                    offset: false,
                });
            }
        }
    }

    fn block(&mut self, depth: u32) -> Vec<Stmt> {
        self.scopes.push(Vec::new());
        let n = 1 + self.rng.below(3);
        let stmts = (0..n).map(|_| self.stmt(depth + 1)).collect();
        self.scopes.pop();
        stmts
    }

    fn out_slot(&mut self) -> Expr {
        let k = self.body.per_thread as i128;
        if k == 1 || self.rng.chance(60) {
            Expr::Lit {
                v: self.rng.below(k as u64) as i128,
                ty: Ty::Usize,
                suffix: false,
            }
        } else {
            let ctx = Ctx {
                no_offsets: true,
                ..Ctx::default()
            };
            self.expr(Ty::Usize, 2, ctx)
        }
    }

    fn int_ty(&mut self) -> Ty {
        // The narrow types often: that is where wrapping and promotion differ.
        self.rng.pick(&[
            Ty::I8,
            Ty::U8,
            Ty::U8,
            Ty::I8,
            Ty::I32,
            Ty::U32,
            Ty::I64,
            Ty::U64,
            Ty::Usize,
        ])
    }

    fn assign_op(&mut self, ty: Ty) -> Option<BinOp> {
        if self.rng.chance(30) {
            return None;
        }
        let op = self.rng.pick(&[
            BinOp::Add,
            BinOp::Sub,
            BinOp::Mul,
            BinOp::Div,
            BinOp::Rem,
            BinOp::And,
            BinOp::Or,
            BinOp::Xor,
            BinOp::Shl,
            BinOp::Shr,
        ]);
        if op == BinOp::Shl && ty.bits(32) == 8 && !self.f.narrow_shl_not {
            return Some(BinOp::Shr);
        }
        Some(op)
    }

    /// The operand of `x op= e`: a shift's amount, a divisor, or a value of `ty`.
    fn operand(&mut self, op: Option<BinOp>, ty: Ty, depth: u32) -> Expr {
        let ctx = Ctx {
            may_unsuffix: true,
            ..Ctx::default()
        };
        match op {
            Some(BinOp::Shl | BinOp::Shr) => self.shift_amount(ty, ctx),
            Some(BinOp::Div | BinOp::Rem) if self.rng.chance(70) => self.small_lit(ty, 1, 9),
            _ => self.expr(ty, depth, ctx),
        }
    }

    /// The operand of `a[i] op= e`. Bug 1: the CPU back ends lose its parentheses, so
    /// unless that is switched on it is no operator expression (parenthesised or not).
    fn store_operand(&mut self, op: Option<BinOp>, ty: Ty) -> Expr {
        loop {
            let e = self.operand(op, ty, 2);
            if op.is_none()
                || self.f.compound_store_binop
                || !matches!(e, Expr::Bin(..) | Expr::If(..))
            {
                return e;
            }
        }
    }

    fn stmt(&mut self, depth: u32) -> Stmt {
        let elem = self.body.elem.ty();
        loop {
            let choice = self.rng.below(100);
            match choice {
                0..=21 => {
                    let ty = self.int_ty();
                    let annotate = self.rng.chance(40);
                    let ctx = Ctx {
                        may_unsuffix: annotate,
                        ..Ctx::default()
                    };
                    let init = self.expr(ty, 3, ctx);
                    let var = self.fresh();
                    let offset = mentions_offset(&init, self);
                    let mutable = self.rng.chance(60);
                    self.scopes.last_mut().unwrap().push(Var {
                        id: var,
                        ty,
                        mutable,
                        offset,
                    });
                    return Stmt::Let {
                        var,
                        ty,
                        mutable,
                        annotate,
                        init,
                    };
                }
                22..=37 => {
                    let targets: Vec<Var> = self.vars().filter(|v| v.mutable).copied().collect();
                    if targets.is_empty() {
                        continue;
                    }
                    let v = self.rng.pick(&targets);
                    let op = self.assign_op(v.ty);
                    let e = self.operand(op, v.ty, 2);
                    if mentions_offset(&e, self) {
                        for var in self.scopes.iter_mut().flatten().filter(|x| x.id == v.id) {
                            var.offset = true;
                        }
                    }
                    return Stmt::Assign { var: v.id, op, e };
                }
                38..=55 => {
                    let j = self.out_slot();
                    let op = self.assign_op(elem);
                    let e = self.store_operand(op, elem);
                    return Stmt::Store { j, op, e };
                }
                56..=61 if self.phase == Phase::Write && self.body.shared.is_some() => {
                    let ty = self.body.shared.unwrap().ty();
                    let op = self.assign_op(ty);
                    let e = self.store_operand(op, ty);
                    return Stmt::SharedStore { op, e };
                }
                62..=71 if depth < 2 => {
                    let c = self.expr(Ty::Bool, 2, self.unformed(Ctx::default()));
                    let then = self.block(depth);
                    let els = self.rng.chance(50).then(|| self.block(depth));
                    return Stmt::If { c, then, els };
                }
                72..=77 if depth < 2 => {
                    let counter = self.fresh();
                    let limit = self.rng.pick(&[1, 2, 3, 5, 8]);
                    let c = self
                        .rng
                        .chance(40)
                        .then(|| self.expr(Ty::Bool, 2, self.unformed(Ctx::default())));
                    self.loops += 1;
                    let body = self.block(depth);
                    self.loops -= 1;
                    return Stmt::While {
                        counter,
                        limit,
                        c,
                        body,
                    };
                }
                78..=87 if depth < 2 => return self.for_loop(depth),
                88..=91 if self.loops > 0 => {
                    return if self.rng.chance(50) {
                        Stmt::Break
                    } else {
                        Stmt::Continue
                    };
                }
                92..=93 if !self.body.collective && depth > 0 => return Stmt::Return,
                94..=99 if self.body.atomics > 0 => {
                    let slot = self.rng.below(self.body.atomics as u64) as usize;
                    let ctx = Ctx {
                        may_unsuffix: self.f.unsuffixed_atomic_literal,
                        ..Ctx::default()
                    };
                    let v = if self.rng.chance(40) {
                        self.small_lit(elem, 0, 9)
                    } else {
                        self.expr(elem, 2, ctx)
                    };
                    let v = match v {
                        Expr::Lit { v, ty, .. } if !self.f.unsuffixed_atomic_literal => Expr::Lit {
                            v,
                            ty,
                            suffix: true,
                        },
                        other => other,
                    };
                    return Stmt::Atomic { slot, v };
                }
                _ => {}
            }
        }
    }

    fn for_loop(&mut self, depth: u32) -> Stmt {
        let ty = self.int_ty();
        let inclusive = self.rng.chance(40);
        let ctx = Ctx {
            no_out_read: !self.f.proved_read_in_for_end_or_branch,
            no_offsets: !self.f.bare_form_first_in_branch,
            may_unsuffix: true,
        };
        let (lo, hi) = if self.rng.chance(50) {
            // Near the type's maximum sometimes: `250u8..=255u8`.
            let max: i128 = match ty.bits(32) {
                8 if ty.signed() => 127,
                8 => 255,
                _ => 20,
            };
            let hi = max - self.rng.below(3) as i128;
            let lo = hi - self.rng.below(6) as i128;
            let near = self.rng.chance(50);
            let hi = if near { hi } else { self.rng.below(6) as i128 };
            let lo = if near { lo } else { 0 };
            (
                Expr::Lit {
                    v: lo,
                    ty,
                    suffix: true,
                },
                Expr::Lit {
                    v: hi,
                    ty,
                    suffix: self.rng.chance(50),
                },
            )
        } else {
            let lo = self.small_lit(ty, 0, 3);
            (lo, self.expr(ty, 2, ctx))
        };
        let var = self.fresh();
        self.scopes.push(vec![Var {
            id: var,
            ty,
            mutable: false,
            offset: false,
        }]);
        self.loops += 1;
        let body = self.block(depth);
        self.loops -= 1;
        self.scopes.pop();
        Stmt::For {
            var,
            ty,
            lo,
            hi,
            inclusive,
            body,
        }
    }

    /// A literal of `ty` in `lo..=hi`.
    fn small_lit(&mut self, ty: Ty, lo: i128, hi: i128) -> Expr {
        let v = lo + self.rng.below((hi - lo + 1) as u64) as i128;
        Expr::Lit {
            v,
            ty,
            suffix: true,
        }
    }

    fn lit(&mut self, ty: Ty, ctx: Ctx) -> Expr {
        let bits = ty.bits(32);
        let v: i128 = match self.rng.below(10) {
            0..=5 => self.rng.below(17) as i128,
            6 if ty.signed() => -(self.rng.below(17) as i128),
            7 => {
                // Near the top of the range, within it.
                let max = if ty.signed() {
                    (1i128 << (bits - 1)) - 1
                } else {
                    (1i128 << bits) - 1
                };
                max - self.rng.below(4) as i128
            }
            _ => self.rng.pick(&[15, 31, 100, 127, 200, 255, 1000, 65535]),
        };
        let (lo, hi) = if ty.signed() {
            (-(1i128 << (bits - 1)) + 1, (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        };
        Expr::Lit {
            v: v.clamp(lo, hi),
            ty,
            suffix: !(ctx.may_unsuffix && self.rng.chance(30)),
        }
    }

    fn shift_amount(&mut self, ty: Ty, ctx: Ctx) -> Expr {
        let bits = ty.bits(32) as u64;
        if self.rng.chance(75) {
            let amount_ty = self.rng.pick(&[Ty::I32, Ty::U32, Ty::U8, Ty::Usize]);
            Expr::Lit {
                v: self.rng.below(bits) as i128,
                ty: amount_ty,
                suffix: self.rng.chance(60),
            }
        } else {
            let amount_ty = self.int_ty();
            let e = self.expr(
                amount_ty,
                1,
                Ctx {
                    may_unsuffix: false,
                    ..ctx
                },
            );
            bin(
                BinOp::And,
                e,
                Expr::Lit {
                    v: 7,
                    ty: amount_ty,
                    suffix: true,
                },
            )
        }
    }

    /// An expression of `ty` (`Bool` for a condition), at most `depth` operators deep.
    fn expr(&mut self, ty: Ty, depth: u32, ctx: Ctx) -> Expr {
        if ty == Ty::Bool {
            return self.condition(depth, ctx);
        }
        let narrow = ty.bits(32) == 8;
        loop {
            let leaf = depth == 0 || self.rng.chance(25);
            let choice = if leaf {
                self.rng.below(40)
            } else {
                40 + self.rng.below(60)
            };
            match choice {
                0..=11 => return self.lit(ty, ctx),
                12..=25 => {
                    let vars: Vec<Var> = self
                        .vars()
                        .filter(|v| v.ty == ty && !(ctx.no_offsets && v.offset))
                        .copied()
                        .collect();
                    if !vars.is_empty() {
                        return Expr::Var(self.rng.pick(&vars).id);
                    }
                }
                26..=31 => {
                    let which = self.rng.pick(&[Tid::Flat, Tid::Block, Tid::Thread]);
                    return cast(Expr::Tid(which), Ty::Usize, ty);
                }
                32..=35 if !ctx.no_out_read => {
                    let j = self.out_slot();
                    let elem = self.body.elem.ty();
                    return cast(Expr::Out(Box::new(j)), elem, ty);
                }
                36..=39 if self.phase != Phase::Unwritten && !ctx.no_out_read => {
                    let st = self.body.shared.unwrap().ty();
                    let ix = if self.phase == Phase::Read && self.rng.chance(70) {
                        let ctx = Ctx {
                            may_unsuffix: false,
                            ..ctx
                        };
                        Some(Box::new(self.expr(Ty::Usize, 1, ctx)))
                    } else {
                        None
                    };
                    return cast(Expr::Shared(ix), st, ty);
                }
                40..=69 => {
                    let op = self.rng.pick(&[
                        BinOp::Add,
                        BinOp::Sub,
                        BinOp::Mul,
                        BinOp::Div,
                        BinOp::Rem,
                        BinOp::And,
                        BinOp::And,
                        BinOp::Or,
                        BinOp::Xor,
                        BinOp::Shl,
                        BinOp::Shr,
                    ]);
                    if op == BinOp::Shl && narrow && !self.f.narrow_shl_not {
                        continue;
                    }
                    let l = self.expr(ty, depth - 1, ctx);
                    let r = match op {
                        BinOp::Shl | BinOp::Shr => self.shift_amount(ty, ctx),
                        BinOp::Div | BinOp::Rem if self.rng.chance(60) => self.small_lit(ty, 1, 9),
                        BinOp::And if self.rng.chance(50) => {
                            let mask: i128 = self.rng.pick(&[1, 3, 7, 15, 255]);
                            let mask = if ty.signed() { mask.min(127) } else { mask };
                            Expr::Lit {
                                v: mask,
                                ty,
                                suffix: true,
                            }
                        }
                        _ => {
                            let inner = Ctx {
                                may_unsuffix: ctx.may_unsuffix || typed(&l),
                                ..ctx
                            };
                            self.expr(ty, depth - 1, inner)
                        }
                    };
                    return bin(op, l, r);
                }
                70..=75 if ty.signed() => {
                    let x = self.expr(ty, depth - 1, ctx);
                    let nested =
                        matches!(x, Expr::Neg(_)) || matches!(x, Expr::Lit { v, .. } if v < 0);
                    if nested && !self.f.nested_neg {
                        continue;
                    }
                    return Expr::Neg(Box::new(x));
                }
                76..=80 => {
                    if narrow && !self.f.narrow_shl_not {
                        continue;
                    }
                    if matches!(ty, Ty::U32 | Ty::Usize) && !self.f.not_on_u32 {
                        continue;
                    }
                    return Expr::Not(Box::new(self.expr(ty, depth - 1, ctx)));
                }
                81..=89 => {
                    let from = self.int_ty();
                    let x = self.expr(
                        from,
                        depth - 1,
                        Ctx {
                            may_unsuffix: false,
                            ..ctx
                        },
                    );
                    return cast(x, from, ty);
                }
                90..=94 => {
                    let c = self.condition(depth - 1, self.unformed(ctx));
                    let ctx = self.unformed(ctx);
                    let branch = Ctx {
                        no_out_read: ctx.no_out_read || !self.f.proved_read_in_for_end_or_branch,
                        may_unsuffix: false,
                        ..ctx
                    };
                    let a = self.branch(ty, depth - 1, branch);
                    let b = self.branch(ty, depth - 1, branch);
                    return Expr::If(Box::new(c), Box::new(a), Box::new(b));
                }
                95..=99 if !ctx.no_offsets && !self.body.decls.is_empty() => {
                    let d = self.rng.below(self.body.decls.len() as u64) as usize;
                    let dims = self.body.decls[d].clone();
                    let ixs = dims
                        .iter()
                        .map(|dim| self.index(dim, depth - 1, ctx))
                        .collect();
                    let form = Expr::Offset(d, ixs);
                    // Found by this fuzzer: `$T[i]$ as u64` does not parse in some places.
                    return if ty == Ty::Usize || self.f.bare_form_first_in_branch {
                        cast(form, Ty::Usize, ty)
                    } else {
                        cast(Expr::Paren(Box::new(form)), Ty::Usize, ty)
                    };
                }
                _ => {}
            }
        }
    }

    /// `ctx` in a condition or an `if` value: no `$...$` form there unless
    /// `bare_form_first_in_branch` (they do not parse in some of those places).
    fn unformed(&self, ctx: Ctx) -> Ctx {
        Ctx {
            no_offsets: ctx.no_offsets || !self.f.bare_form_first_in_branch,
            may_unsuffix: false,
            ..ctx
        }
    }

    /// An `if` value's branch (parenthesised where it starts with a form or a read, unless
    /// `bare_form_first_in_branch`).
    fn branch(&mut self, ty: Ty, depth: u32, ctx: Ctx) -> Expr {
        let e = self.expr(ty, depth, ctx);
        let alone = matches!(e, Expr::Offset(..) | Expr::Out(_) | Expr::Shared(_));
        if !self.f.bare_form_first_in_branch && starts_with_form(&e) && !alone {
            Expr::Paren(Box::new(e))
        } else {
            e
        }
    }

    /// An index of `dim`, mostly inside it: a literal, or something masked or reduced.
    fn index(&mut self, dim: &Dim, depth: u32, ctx: Ctx) -> Index {
        if let Dim::Group(children) = dim {
            if self.rng.chance(60) {
                return Index::Group(children.iter().map(|c| self.index(c, depth, ctx)).collect());
            }
        }
        let n = dim.size() as i128;
        // Inside the dimension for every thread: parray-core rejects at compile time an
        // index it finds outside for all of them, even where no thread evaluates it.
        let e = if self.rng.chance(30) {
            Expr::Lit {
                v: self.rng.below(n as u64) as i128,
                ty: self.int_ty(),
                suffix: true,
            }
        } else {
            let wide = if self.f.wide_offset_index {
                Ty::U64
            } else {
                Ty::U32
            };
            let ty = self.rng.pick(&[Ty::U8, Ty::U32, Ty::Usize, wide]);
            let ctx = Ctx {
                no_out_read: ctx.no_out_read || !self.f.read_inside_form,
                may_unsuffix: false,
                ..ctx
            };
            let x = self.expr(ty, depth, ctx);
            bin(
                BinOp::Rem,
                x,
                Expr::Lit {
                    v: n,
                    ty,
                    suffix: true,
                },
            )
        };
        Index::Flat(e)
    }

    fn condition(&mut self, depth: u32, ctx: Ctx) -> Expr {
        match self.rng.below(10) {
            0 => Expr::Bool(self.rng.chance(50)),
            1 if depth > 0 => {
                let op = self.rng.pick(&[BinOp::LAnd, BinOp::LOr]);
                let l = self.condition(depth - 1, ctx);
                let r = self.condition(depth - 1, ctx);
                bin(op, l, r)
            }
            2 if depth > 0 => Expr::Not(Box::new(self.condition(depth - 1, ctx))),
            _ => {
                let ty = self.int_ty();
                let op = self.rng.pick(&[
                    BinOp::Lt,
                    BinOp::Le,
                    BinOp::Gt,
                    BinOp::Ge,
                    BinOp::Eq,
                    BinOp::Ne,
                ]);
                let inner = Ctx {
                    may_unsuffix: false,
                    ..ctx
                };
                let l = self.expr(ty, depth.saturating_sub(1), inner);
                let r = self.expr(
                    ty,
                    depth.saturating_sub(1),
                    Ctx {
                        may_unsuffix: typed(&l),
                        ..inner
                    },
                );
                bin(op, l, r)
            }
        }
    }
}

/// Whether `e` written out starts with a `$...$` form or an element read.
fn starts_with_form(e: &Expr) -> bool {
    match e {
        Expr::Offset(..) | Expr::Out(_) | Expr::Shared(_) => true,
        Expr::Cast(x, _) | Expr::Bin(_, x, _) => starts_with_form(x),
        _ => false,
    }
}

/// Whether `e` involves a `$...$` form, directly or through a local that holds one.
fn mentions_offset(e: &Expr, g: &Gen) -> bool {
    match e {
        Expr::Offset(..) => true,
        Expr::Var(id) => g.vars().any(|v| v.id == *id && v.offset),
        Expr::Lit { .. } | Expr::Bool(_) | Expr::Tid(_) => false,
        Expr::Neg(x) | Expr::Not(x) | Expr::Cast(x, _) | Expr::Paren(x) => mentions_offset(x, g),
        Expr::Bin(_, l, r) => mentions_offset(l, g) || mentions_offset(r, g),
        Expr::If(c, a, b) => {
            mentions_offset(c, g) || mentions_offset(a, g) || mentions_offset(b, g)
        }
        Expr::Out(j) => mentions_offset(j, g),
        Expr::Shared(ix) => ix.as_deref().is_some_and(|x| mentions_offset(x, g)),
    }
}
