//! The independent evaluator: what a body computes by SPEC.md 3.5's rules (Rust's, at each
//! type's width; `usize` 32 bits in a cuda body), over all the threads of the grid, or
//! why it is not well defined (overflow, division by zero, a shift by the width or more,
//! an index out of its dimension, a race, a loop too long).

use crate::ast::{BinOp, Body, Dim, Elem, Expr, Index, Stmt, Tid, Ty};

/// Statements a thread may execute before the body counts as too long.
const STEPS: u32 = 4000;

/// The output array's initial element `i`: varied, small, negative too where signed.
pub fn initial(i: usize, elem: Elem) -> i64 {
    let v = ((i * 37 + 11) % 97) as i64;
    match elem {
        Elem::Int | Elem::Long => v - 40,
        Elem::Unsigned | Elem::UChar => v,
    }
}

/// Why a body has no expected output.
pub type Reject = String;

/// A value and its type.
#[derive(Clone, Copy, Debug)]
struct Val(i128, Ty);

enum Flow {
    Normal,
    Break,
    Continue,
    Return,
}

struct Thread {
    tid: u32,
    env: Vec<Option<Val>>,
    done: bool,
    steps: u32,
}

/// Who touched a shared element since the last `#sync`.
#[derive(Clone, Copy, Default)]
struct Touch {
    writer: Option<u32>,
    reader: Option<u32>,
    /// More than one thread read it.
    readers: bool,
}

struct Machine<'a> {
    body: &'a Body,
    usize_bits: u32,
    out: Vec<i128>,
    /// Per atomic slot: the sum of the positive and of the negative additions.
    atomic_pos: Vec<i128>,
    atomic_neg: Vec<i128>,
    /// Per block: the shared array's elements and who touched each in this phase.
    shared: Vec<Vec<Option<i128>>>,
    touched: Vec<Vec<Touch>>,
}

/// The output `body` leaves in its array, run with `usize` of `usize_bits` (64 on pthd
/// threads, 32 in a cuda body), or why it has none.
pub fn run(body: &Body, usize_bits: u32) -> Result<Vec<i64>, Reject> {
    let threads = body.blocks * body.threads;
    let vars = max_var(&body.stmts) + 1;
    let elem = body.elem;
    let mut m = Machine {
        body,
        usize_bits,
        out: (0..body.len() as usize)
            .map(|i| initial(i, elem) as i128)
            .collect(),
        atomic_pos: vec![0; body.atomics as usize],
        atomic_neg: vec![0; body.atomics as usize],
        shared: vec![vec![None; body.threads as usize]; body.blocks as usize],
        touched: vec![vec![Touch::default(); body.threads as usize]; body.blocks as usize],
    };
    let mut ts: Vec<Thread> = (0..threads)
        .map(|tid| Thread {
            tid,
            env: vec![None; vars],
            done: false,
            steps: 0,
        })
        .collect();
    // Threads run in lockstep, one top-level statement at a time: a collective (`#sync`,
    // a shuffle) stands at the top level only, so every thread meets it there.
    for s in &body.stmts {
        match s {
            Stmt::Sync => {
                if ts.iter().any(|t| t.done) {
                    return Err("#sync after a return".into());
                }
                for b in &mut m.touched {
                    b.fill(Touch::default());
                }
            }
            Stmt::Shfl { var, ty, x, d } => m.shuffle(&mut ts, *var, *ty, x, d)?,
            _ => {
                for t in ts.iter_mut().filter(|t| !t.done) {
                    if let Flow::Return = m.stmt(t, s)? {
                        t.done = true;
                    }
                }
            }
        }
    }
    let owned = body.owned() as usize;
    let ty = elem.ty();
    for a in 0..body.atomics as usize {
        let init = m.out[owned + a];
        m.fit(init + m.atomic_pos[a], ty)?;
        m.fit(init + m.atomic_neg[a], ty)?;
        m.out[owned + a] = init + m.atomic_pos[a] + m.atomic_neg[a];
    }
    Ok(m.out.iter().map(|&v| v as i64).collect())
}

fn max_var(stmts: &[Stmt]) -> usize {
    let mut n = 0;
    for s in stmts {
        n = n.max(match s {
            Stmt::Let { var, .. } | Stmt::Shfl { var, .. } => *var,
            Stmt::For { var, body, .. } => (*var).max(max_var(body)),
            Stmt::While { counter, body, .. } => (*counter).max(max_var(body)),
            Stmt::If { then, els, .. } => max_var(then).max(els.as_deref().map_or(0, max_var)),
            _ => 0,
        });
    }
    n
}

impl Machine<'_> {
    fn range(&self, ty: Ty) -> (i128, i128) {
        let bits = ty.bits(self.usize_bits);
        if ty.signed() {
            (-(1i128 << (bits - 1)), (1i128 << (bits - 1)) - 1)
        } else {
            (0, (1i128 << bits) - 1)
        }
    }

    /// `v` if it lies in `ty`'s range: Rust's debug builds panic otherwise.
    fn fit(&self, v: i128, ty: Ty) -> Result<i128, Reject> {
        let (lo, hi) = self.range(ty);
        if v < lo || v > hi {
            Err(format!("{v} overflows {}", ty.name()))
        } else {
            Ok(v)
        }
    }

    /// `v` truncated to `ty`'s width and sign-extended where signed: Rust's `as`.
    fn wrap(&self, v: i128, ty: Ty) -> i128 {
        let bits = ty.bits(self.usize_bits);
        let low = (v as u128) & ((1u128 << bits) - 1);
        if ty.signed() && low >> (bits - 1) == 1 {
            low as i128 - (1i128 << bits)
        } else {
            low as i128
        }
    }

    fn step(&self, t: &mut Thread) -> Result<(), Reject> {
        t.steps += 1;
        if t.steps > STEPS {
            Err("runs too long".into())
        } else {
            Ok(())
        }
    }

    fn block(&mut self, t: &mut Thread, stmts: &[Stmt]) -> Result<Flow, Reject> {
        for s in stmts {
            match self.stmt(t, s)? {
                Flow::Normal => {}
                other => return Ok(other),
            }
        }
        Ok(Flow::Normal)
    }

    fn out_index(&mut self, t: &mut Thread, j: &Expr) -> Result<usize, Reject> {
        let j = self.expr(t, j)?.0;
        let k = self.body.per_thread as i128;
        // `$tid$ * K + (j & (K - 1))`, computed as usize.
        let base = self.fit(t.tid as i128 * k, Ty::Usize)?;
        let ix = self.fit(base + (j & (k - 1)), Ty::Usize)?;
        Ok(ix as usize)
    }

    fn stmt(&mut self, t: &mut Thread, s: &Stmt) -> Result<Flow, Reject> {
        self.step(t)?;
        match s {
            Stmt::Let { var, ty, init, .. } => {
                let v = self.expr(t, init)?;
                t.env[*var] = Some(Val(v.0, *ty));
            }
            Stmt::Assign { var, op, e } => {
                let old = t.env[*var].expect("assigned before its let");
                let v = self.expr(t, e)?;
                let new = match op {
                    None => v.0,
                    Some(op) => self.binary(*op, old, v)?.0,
                };
                t.env[*var] = Some(Val(new, old.1));
            }
            Stmt::Store { j, op, e } => {
                let i = self.out_index(t, j)?;
                let ty = self.body.elem.ty();
                // Rust evaluates the value before the place of `a[i] op= v`... and the
                // place of `a[i] = v` first; neither has side effects here.
                let v = self.expr(t, e)?;
                let new = match op {
                    None => v.0,
                    Some(op) => self.binary(*op, Val(self.out[i], ty), v)?.0,
                };
                self.out[i] = new;
            }
            Stmt::SharedStore { op, e } => {
                let v = self.expr(t, e)?;
                let (b, l) = self.lane(t);
                let ty = self
                    .body
                    .shared
                    .expect("a shared store without an array")
                    .ty();
                let new = match op {
                    None => v.0,
                    Some(op) => {
                        let old = self.shared_read(t, l)?;
                        self.binary(*op, Val(old, ty), v)?.0
                    }
                };
                let touch = &mut self.touched[b][l];
                if touch.writer.is_some_and(|w| w != t.tid)
                    || touch.readers
                    || touch.reader.is_some_and(|r| r != t.tid)
                {
                    return Err("a race on a shared element".into());
                }
                touch.writer = Some(t.tid);
                self.shared[b][l] = Some(new);
            }
            Stmt::If { c, then, els } => {
                return if self.expr(t, c)?.0 != 0 {
                    self.block(t, then)
                } else if let Some(els) = els {
                    self.block(t, els)
                } else {
                    Ok(Flow::Normal)
                };
            }
            Stmt::While {
                counter,
                limit,
                c,
                body,
            } => {
                t.env[*counter] = Some(Val(0, Ty::I32));
                loop {
                    self.step(t)?;
                    let w = t.env[*counter].unwrap().0;
                    if w >= *limit as i128 {
                        break;
                    }
                    if let Some(c) = c {
                        if self.expr(t, c)?.0 == 0 {
                            break;
                        }
                    }
                    t.env[*counter] = Some(Val(w + 1, Ty::I32));
                    match self.block(t, body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        Flow::Normal | Flow::Continue => {}
                    }
                }
            }
            Stmt::For {
                var,
                ty,
                lo,
                hi,
                inclusive,
                body,
            } => {
                // Rust evaluates both ends once, before the first iteration.
                let lo = self.expr(t, lo)?.0;
                let hi = self.expr(t, hi)?.0;
                let mut i = lo;
                while if *inclusive { i <= hi } else { i < hi } {
                    self.step(t)?;
                    t.env[*var] = Some(Val(i, *ty));
                    match self.block(t, body)? {
                        Flow::Break => break,
                        Flow::Return => return Ok(Flow::Return),
                        Flow::Normal | Flow::Continue => {}
                    }
                    i += 1;
                }
            }
            Stmt::Break => return Ok(Flow::Break),
            Stmt::Continue => return Ok(Flow::Continue),
            Stmt::Return => return Ok(Flow::Return),
            Stmt::Atomic { slot, v } => {
                let v = self.expr(t, v)?.0;
                if v >= 0 {
                    self.atomic_pos[*slot] += v;
                } else {
                    self.atomic_neg[*slot] += v;
                }
            }
            Stmt::Sync | Stmt::Shfl { .. } => {
                return Err("a collective below the top level".into());
            }
        }
        Ok(Flow::Normal)
    }

    /// The thread's block and its index in the block.
    fn lane(&self, t: &Thread) -> (usize, usize) {
        let n = self.body.threads;
        ((t.tid / n) as usize, (t.tid % n) as usize)
    }

    fn shared_read(&mut self, t: &Thread, l: usize) -> Result<i128, Reject> {
        let (b, _) = self.lane(t);
        let touch = &mut self.touched[b][l];
        if touch.writer.is_some_and(|w| w != t.tid) {
            return Err("a race on a shared element".into());
        }
        match touch.reader {
            Some(r) if r != t.tid => touch.readers = true,
            _ => touch.reader = Some(t.tid),
        }
        self.shared[b][l].ok_or_else(|| "reads an unwritten shared element".into())
    }

    /// `let v = shfl_down(x, d);` in every thread: lane `l` of a warp of 32 takes lane
    /// `l + d % 32`'s `x`, or its own where that is past the warp.
    fn shuffle(
        &mut self,
        ts: &mut [Thread],
        var: usize,
        ty: Ty,
        x: &Expr,
        d: &Expr,
    ) -> Result<(), Reject> {
        if ts.iter().any(|t| t.done) || !self.body.threads.is_multiple_of(32) {
            return Err("a shuffle without whole warps".into());
        }
        let mut ops = Vec::with_capacity(ts.len());
        for t in ts.iter_mut() {
            self.step(t)?;
            ops.push((self.expr(t, x)?.0, self.expr(t, d)?.0));
        }
        for (k, t) in ts.iter_mut().enumerate() {
            let lane = k % 32;
            let src = lane + (ops[k].1 % 32) as usize;
            let v = if src < 32 {
                ops[k - lane + src].0
            } else {
                ops[k].0
            };
            t.env[var] = Some(Val(v, ty));
        }
        Ok(())
    }

    fn tid(&self, t: &Thread, which: Tid) -> i128 {
        let n = self.body.threads;
        (match which {
            Tid::Flat => t.tid,
            Tid::Block => t.tid / n,
            Tid::Thread => t.tid % n,
        }) as i128
    }

    /// The row-major flat index of `ix` in `dim`, each index inside its dimension.
    fn index(&mut self, t: &mut Thread, dim: &Dim, ix: &Index) -> Result<i128, Reject> {
        match (dim, ix) {
            (_, Index::Flat(e)) => {
                let v = self.expr(t, e)?;
                if v.0 < 0 || v.0 >= dim.size() as i128 {
                    return Err("an index outside its dimension".into());
                }
                Ok(v.0)
            }
            (Dim::Group(children), Index::Group(ixs)) => {
                let mut off = 0;
                for (c, i) in children.iter().zip(ixs) {
                    off = off * c.size() as i128 + self.index(t, c, i)?;
                }
                Ok(off)
            }
            (Dim::Leaf(_), Index::Group(_)) => Err("a group index of a leaf".into()),
        }
    }

    fn expr(&mut self, t: &mut Thread, e: &Expr) -> Result<Val, Reject> {
        Ok(match e {
            Expr::Lit { v, ty, .. } => Val(self.fit(*v, *ty)?, *ty),
            Expr::Bool(b) => Val(*b as i128, Ty::Bool),
            Expr::Var(v) => t.env[*v].expect("read before its let"),
            Expr::Tid(which) => Val(self.fit(self.tid(t, *which), Ty::Usize)?, Ty::Usize),
            Expr::Neg(x) => {
                let v = self.expr(t, x)?;
                Val(self.fit(-v.0, v.1)?, v.1)
            }
            Expr::Not(x) => {
                let v = self.expr(t, x)?;
                if v.1 == Ty::Bool {
                    Val(1 - v.0, Ty::Bool)
                } else {
                    Val(self.wrap(!v.0, v.1), v.1)
                }
            }
            Expr::Bin(op, l, r) => {
                let l = self.expr(t, l)?;
                match op {
                    BinOp::LAnd if l.0 == 0 => Val(0, Ty::Bool),
                    BinOp::LOr if l.0 != 0 => Val(1, Ty::Bool),
                    _ => {
                        let r = self.expr(t, r)?;
                        self.binary(*op, l, r)?
                    }
                }
            }
            Expr::Cast(x, ty) => {
                let v = self.expr(t, x)?;
                Val(self.wrap(v.0, *ty), *ty)
            }
            Expr::If(c, a, b) => {
                if self.expr(t, c)?.0 != 0 {
                    self.expr(t, a)?
                } else {
                    self.expr(t, b)?
                }
            }
            Expr::Offset(d, ixs) => {
                let dims = self.body.decls[*d].clone();
                let mut off = 0;
                for (dim, ix) in dims.iter().zip(ixs) {
                    off = off * dim.size() as i128 + self.index(t, dim, ix)?;
                }
                Val(self.fit(off, Ty::Usize)?, Ty::Usize)
            }
            Expr::Paren(x) => self.expr(t, x)?,
            Expr::Out(j) => {
                let i = self.out_index(t, j)?;
                Val(self.out[i], self.body.elem.ty())
            }
            Expr::Shared(ix) => {
                let ty = self
                    .body
                    .shared
                    .expect("a shared read without an array")
                    .ty();
                let l = match ix {
                    None => self.lane(t).1,
                    Some(e) => {
                        let v = self.expr(t, e)?.0;
                        (v % self.body.threads as i128) as usize
                    }
                };
                Val(self.shared_read(t, l)?, ty)
            }
        })
    }

    /// `l op r` on values of one type (a shift's amount of any integer type).
    fn binary(&self, op: BinOp, l: Val, r: Val) -> Result<Val, Reject> {
        let (a, b, ty) = (l.0, r.0, l.1);
        let v = match op {
            BinOp::Add => self.fit(a + b, ty)?,
            BinOp::Sub => self.fit(a - b, ty)?,
            // Two u64 values' product may not fit even an i128.
            BinOp::Mul => self.fit(a.checked_mul(b).ok_or("overflows i128")?, ty)?,
            BinOp::Div | BinOp::Rem => {
                if b == 0 {
                    return Err("division by zero".into());
                }
                // i128 divides as Rust does (towards zero, the remainder the dividend's
                // sign); MIN / -1 and MIN % -1 overflow in Rust.
                self.fit(a / b, ty)?;
                if op == BinOp::Div {
                    a / b
                } else {
                    a % b
                }
            }
            BinOp::And => a & b,
            BinOp::Or => a | b,
            BinOp::Xor => a ^ b,
            BinOp::Shl | BinOp::Shr => {
                if b < 0 || b >= ty.bits(self.usize_bits) as i128 {
                    return Err("a shift by the width or more".into());
                }
                if op == BinOp::Shl {
                    self.wrap(((a as u128) << b) as i128, ty)
                } else {
                    a >> b
                }
            }
            BinOp::Lt => return Ok(Val((a < b) as i128, Ty::Bool)),
            BinOp::Le => return Ok(Val((a <= b) as i128, Ty::Bool)),
            BinOp::Gt => return Ok(Val((a > b) as i128, Ty::Bool)),
            BinOp::Ge => return Ok(Val((a >= b) as i128, Ty::Bool)),
            BinOp::Eq => return Ok(Val((a == b) as i128, Ty::Bool)),
            BinOp::Ne => return Ok(Val((a != b) as i128, Ty::Bool)),
            BinOp::LAnd => return Ok(Val((a != 0 && b != 0) as i128, Ty::Bool)),
            BinOp::LOr => return Ok(Val((a != 0 || b != 0) as i128, Ty::Bool)),
        };
        Ok(Val(v, ty))
    }
}
