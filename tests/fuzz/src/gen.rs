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
    /// Its type comes from the context, so a literal may be unsuffixed.
    may_unsuffix: bool,
}

struct Gen {
    rng: Rng,
    body: Body,
    scopes: Vec<Vec<Var>>,
    next_var: usize,
    loops: u32,
    phase: Phase,
}

/// Draws bodies from `seed` until one is well defined on both `usize` widths (on the
/// cuda width alone for a collective body); returns it with its expected outputs on pthd
/// threads (None for a collective body) and on a cuda grid.
pub fn well_defined(seed: u64) -> (Body, Option<Vec<i64>>, Vec<i64>) {
    let mut rng = Rng::new(seed);
    loop {
        let body = generate(rng.next_u64());
        let cuda = eval::run(&body, 32);
        let pthd = if body.collective {
            Ok(None)
        } else {
            eval::run(&body, 64).map(Some)
        };
        if let (Ok(pthd), Ok(cuda)) = (pthd, cuda) {
            return (body, pthd, cuda);
        }
    }
}

/// One random body, well defined or not.
pub fn generate(seed: u64) -> Body {
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

impl Gen {
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

    fn assign_op(&mut self) -> Option<BinOp> {
        if self.rng.chance(30) {
            return None;
        }
        Some(self.rng.pick(&BinOp::ARITHMETIC))
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

    /// The operand of `a[i] op= e` (an operator expression often: the CPU back ends once
    /// lost its parentheses).
    fn store_operand(&mut self, op: Option<BinOp>, ty: Ty) -> Expr {
        self.operand(op, ty, 2)
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
                    let op = self.assign_op();
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
                    let op = self.assign_op();
                    let e = self.store_operand(op, elem);
                    return Stmt::Store { j, op, e };
                }
                56..=61 if self.phase == Phase::Write && self.body.shared.is_some() => {
                    let ty = self.body.shared.unwrap().ty();
                    let op = self.assign_op();
                    let e = self.store_operand(op, ty);
                    return Stmt::SharedStore { op, e };
                }
                62..=71 if depth < 2 => {
                    let c = self.expr(
                        Ty::Bool,
                        2,
                        Ctx {
                            may_unsuffix: false,
                            ..Ctx::default()
                        },
                    );
                    let then = self.block(depth);
                    let els = self.rng.chance(50).then(|| self.block(depth));
                    return Stmt::If { c, then, els };
                }
                72..=77 if depth < 2 => {
                    let counter = self.fresh();
                    let limit = self.rng.pick(&[1, 2, 3, 5, 8]);
                    let c = self.rng.chance(40).then(|| {
                        self.expr(
                            Ty::Bool,
                            2,
                            Ctx {
                                may_unsuffix: false,
                                ..Ctx::default()
                            },
                        )
                    });
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
                        may_unsuffix: true,
                        ..Ctx::default()
                    };
                    let v = if self.rng.chance(40) {
                        self.small_lit(elem, 0, 9)
                    } else {
                        self.expr(elem, 2, ctx)
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
            may_unsuffix: true,
            ..Ctx::default()
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
                32..=35 => {
                    let j = self.out_slot();
                    let elem = self.body.elem.ty();
                    return cast(Expr::Out(Box::new(j)), elem, ty);
                }
                36..=39 if self.phase != Phase::Unwritten => {
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
                    // `&` a little more often: masks keep values small.
                    let op = if self.rng.chance(9) {
                        BinOp::And
                    } else {
                        self.rng.pick(&BinOp::ARITHMETIC)
                    };
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
                    return Expr::Neg(Box::new(self.expr(ty, depth - 1, ctx)));
                }
                76..=80 => {
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
                    let c = self.condition(
                        depth - 1,
                        Ctx {
                            may_unsuffix: false,
                            ..ctx
                        },
                    );
                    let ctx = Ctx {
                        may_unsuffix: false,
                        ..ctx
                    };
                    let branch = Ctx {
                        may_unsuffix: false,
                        ..ctx
                    };
                    let a = self.expr(ty, depth - 1, branch);
                    let b = self.expr(ty, depth - 1, branch);
                    return Expr::If(Box::new(c), Box::new(a), Box::new(b));
                }
                // No form in an output's index: a `$T[...]$` in an index types the array
                // as `T` (SPEC 3.5, "Bounds"), which the output array is not.
                95..=99 if !ctx.no_offsets && !self.body.decls.is_empty() => {
                    let d = self.rng.below(self.body.decls.len() as u64) as usize;
                    let dims = self.body.decls[d].clone();
                    let ixs = dims
                        .iter()
                        .map(|dim| self.index(dim, depth - 1, ctx))
                        .collect();
                    let form = Expr::Offset(d, ixs);
                    return cast(form, Ty::Usize, ty);
                }
                _ => {}
            }
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
        // Inside the dimension for every thread: parray-layout rejects at compile time an
        // index it finds outside for all of them, even where no thread evaluates it.
        let e = if self.rng.chance(30) {
            Expr::Lit {
                v: self.rng.below(n as u64) as i128,
                ty: self.int_ty(),
                suffix: true,
            }
        } else {
            let ty = self.rng.pick(&[Ty::U8, Ty::U32, Ty::Usize, Ty::U64]);
            let ctx = Ctx {
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
