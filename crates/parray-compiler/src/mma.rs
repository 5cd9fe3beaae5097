//! The checks of `#mma D(d) += A(a) * B(b)` (SPEC 3.5, "MMA") on the declared types, which
//! decide the instruction: register fragments (SPEC 2.14) of the detour's cuda array make
//! a warp's `mma.sync.aligned.m16n8k16`, shared-memory tiles make a warpgroup's
//! `wgmma.mma_async m64nNk16`. The block is whole warps (warpgroups); each fragment's
//! holder and register of every element are the ones the instruction needs
//! ([`crate::ir::mma_isa`], [`crate::ir::wgmma_isa`]), and each tile's offsets are those of
//! a wgmma matrix descriptor ([`Descriptor`]), both computed from the type by the layout
//! crate's offsets.

use parray_layout::{ElemType, Holders, Module, NodeId, NodeKind, Swizzle, TypeClass};

use std::collections::HashMap;

use crate::ir::{
    mma_isa, visit_expr, visit_exprs, visit_stmts, wgmma_isa, Expr, ExprKind, Loc, Local, LocalId,
    Part, Stmt, MMA_K, MMA_M, MMA_N, WARP, WGMMA_M,
};

/// The threads of a warpgroup, which execute a wgmma together.
pub const WARPGROUP: u32 = 128;

/// The tensor-core instruction of an `#mma`: the operands' types decide it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Instruction {
    /// `mma.sync.aligned.m16n8k16` over a warp's register fragments.
    MmaSync,
    /// `wgmma.mma_async.sync.aligned.m64n{n}k16` over a warpgroup: A and B are tiles in
    /// shared memory read through matrix descriptors, D a fragment of `n / 2` registers.
    Wgmma { n: usize },
}

impl Instruction {
    /// The threads that execute it together.
    pub fn threads(self) -> u32 {
        match self {
            Instruction::MmaSync => WARP,
            Instruction::Wgmma { .. } => WARPGROUP,
        }
    }

    /// What the ISA calls one of its threads.
    fn holder(self) -> &'static str {
        match self {
            Instruction::MmaSync => "lane",
            Instruction::Wgmma { .. } => "thread",
        }
    }

    fn name(self) -> String {
        match self {
            Instruction::MmaSync => "mma.sync m16n8k16".to_string(),
            Instruction::Wgmma { n } => format!("wgmma m64n{n}k16"),
        }
    }

    /// Rows and columns of `op`: A is M x K, B is K x N, D is M x N.
    fn shape(self, op: Operand) -> (usize, usize) {
        let (m, n) = match self {
            Instruction::MmaSync => (MMA_M, MMA_N),
            Instruction::Wgmma { n } => (WGMMA_M, n),
        };
        match op {
            Operand::A => (m, MMA_K),
            Operand::B => (MMA_K, n),
            Operand::D => (m, n),
        }
    }

    /// The registers of one thread of a fragment `op`.
    fn part(self, op: Operand) -> u64 {
        let (r, c) = self.shape(op);
        (r * c) as u64 / u64::from(self.threads())
    }

    /// `(thread, register)` of element `[r][c]` of the fragment `op`.
    fn isa(self, op: Operand, r: usize, c: usize) -> (usize, usize) {
        match (self, op) {
            (Instruction::MmaSync, Operand::A) => mma_isa::a(r, c),
            (Instruction::MmaSync, Operand::B) => mma_isa::b(r, c),
            (Instruction::MmaSync, Operand::D) => mma_isa::c(r, c),
            (Instruction::Wgmma { .. }, _) => wgmma_isa::d(r, c),
        }
    }
}

/// An operand of the instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    A,
    B,
    /// The accumulator, C and D (`d` is both).
    D,
}

impl Operand {
    fn name(self) -> &'static str {
        match self {
            Operand::A => "A",
            Operand::B => "B",
            Operand::D => "D",
        }
    }

    /// What the rows and the columns index.
    fn axes(self) -> (&'static str, &'static str) {
        match self {
            Operand::A => ("m", "k"),
            Operand::B => ("k", "n"),
            Operand::D => ("m", "n"),
        }
    }
}

/// The names of the block's leaves of 4 threads of stride 32 (the warp in a warpgroup,
/// t2), 8 threads of stride 4 (the ISA's t1, its groupID) and 4 threads of stride 1 (t0),
/// each when it has it: `G_1_0`, `G_1_1`, `G_1_2` for `[[4][8][4]]`.
fn lane_digits(module: &Module, threads: &str) -> [Option<String>; 3] {
    fn find(module: &Module, node: NodeId, path: String, want: (u64, u64)) -> Option<String> {
        let n = module.node(node);
        match n.kind {
            NodeKind::Leaf { stride } if (n.size, stride) == want => Some(path),
            _ => n
                .children
                .iter()
                .enumerate()
                .find_map(|(k, c)| find(module, *c, format!("{path}_{k}"), want)),
        }
    }
    let Some(def) = module.type_def(threads) else {
        return [None, None, None];
    };
    let block = module.node(def.root).children[1];
    [(4, 32), (8, 4), (4, 1)].map(|want| find(module, block, format!("{threads}_1"), want))
}

/// Checks that the block of the cuda array `threads` is whole warps (warpgroups, for
/// wgmma) whose threads are its lowest dimensions (every dimension below the group's
/// threads a whole dimension of one group), as the instruction's collective needs.
pub fn check_block(module: &Module, threads: &str, instr: Instruction) -> Result<(), String> {
    let def = module
        .type_def(threads)
        .ok_or_else(|| format!("`{threads}` is not declared"))?;
    let block = module.node(def.root).children[1];
    let size = module.node(block).size;
    let group = u64::from(instr.threads());
    // The block's leaves, natural in a thread array: (size, stride).
    let all: Vec<(u64, u64)> = module
        .leaves(block)
        .into_iter()
        .filter_map(|l| match module.node(l).kind {
            NodeKind::Leaf { stride } => Some((module.node(l).size, stride)),
            _ => None,
        })
        .collect();
    let lanes: u64 = all
        .iter()
        .filter(|(_, stride)| *stride < group)
        .map(|(size, _)| size)
        .product();
    if !size.is_multiple_of(group) || lanes != group {
        return Err(match instr {
            Instruction::MmaSync => format!(
                "`#mma` is executed by the {WARP} lanes of each warp together: the block of `{threads}` ({size} threads) must be whole warps whose lanes are its last dimensions (`[[W][8][4]]`: W warps of 8 x 4 lanes)"
            ),
            Instruction::Wgmma { .. } => format!(
                "`#mma` of shared-memory tiles is a wgmma, executed by the {WARPGROUP} threads of each warpgroup together: the block of `{threads}` ({size} threads) must be whole warpgroups whose threads are its last dimensions (`[[4][8][4]]`: a warpgroup of 4 warps of 8 x 4 lanes, t2, t1 and t0; `[[W][[4][8][4]]]` for W of them)"
            ),
        });
    }
    Ok(())
}

/// Checks that the declared type `ty` is the fragment `op` of `instr` over the block of the
/// cuda array `threads`, element by element, and returns its element type; the error says
/// what is wrong and how to declare it.
pub fn check_operand(
    module: &Module,
    threads: &str,
    ty: &str,
    op: Operand,
    instr: Instruction,
) -> Result<ElemType, String> {
    let def = module
        .type_def(ty)
        .ok_or_else(|| format!("`{ty}` is not a declared type"))?;
    let (rows, cols) = instr.shape(op);
    let [t2, t1, t0] = lane_digits(module, threads);
    let t2 = t2.unwrap_or_else(|| format!("{threads}_1_0"));
    let (t1, t0) = match instr {
        Instruction::MmaSync => (
            t1.unwrap_or_else(|| format!("{threads}_1_1")),
            t0.unwrap_or_else(|| format!("{threads}_1_2")),
        ),
        Instruction::Wgmma { .. } => (
            t1.unwrap_or_else(|| format!("{threads}_1_1")),
            t0.unwrap_or_else(|| format!("{threads}_1_2")),
        ),
    };
    let input = |elem: ElemType| match elem {
        ElemType::Half => "half",
        _ => "bf16",
    };
    let elem = match def.class {
        TypeClass::Data { elem, .. } => elem,
        TypeClass::Thread(_) => return Err(format!("`{ty}` is a thread array, not a fragment")),
    };
    let how = |elem: ElemType| {
        match (instr, op) {
        (Instruction::MmaSync, Operand::A) => format!(
            "declare A's registers in the ISA's order and view them as rows and columns: `rmem {e} [2][2][#{t1}][#{t0}][2] {ty}_REGS;` `{e} [[#{ty}_REGS_1][#{ty}_REGS_2]][[#{ty}_REGS_0][#{ty}_REGS_3][#{ty}_REGS_4]] {ty};` (register v0 + 2 v1 + 4 v2 of lane t0 + 4 t1 holds A[t1 + 8 v1][2 t0 + v0 + 8 v2]); create `{ty}_REGS` and name `{ty}` here",
            e = input(elem)
        ),
        (Instruction::MmaSync, Operand::B) => format!(
            "declare B as k x n: `rmem {e} [[2][#{t0}][2]][#{t1}] {ty};` (register v0 + 2 v1 of lane t0 + 4 t1 holds B[2 t0 + v0 + 8 v1][t1])",
            e = input(elem)
        ),
        (Instruction::MmaSync, Operand::D) => format!(
            "declare it as m x n: `rmem float [[2][#{t1}]][[#{t0}][2]] {ty};` (register v0 + 2 v1 of lane t0 + 4 t1 holds D[t1 + 8 v1][2 t0 + v0])"
        ),
        (Instruction::Wgmma { n }, _) => format!(
            "declare its registers in the ISA's order and view them as m x n: `rmem float [{}][2][#{t2}][#{t1}][#{t0}][2] {ty}_REGS;` `float [[#{ty}_REGS_2][#{ty}_REGS_1][#{ty}_REGS_3]][[#{ty}_REGS_0][#{ty}_REGS_4][#{ty}_REGS_5]] {ty};` (register v0 + 2 v1 + 4 v2 of thread t0 + 4 t1 + 32 t2 of a warpgroup holds D[t1 + 8 v1 + 16 t2][2 t0 + v0 + 8 v2]); create `{ty}_REGS` and name `{ty}` here",
            n / 8
        ),
    }
    };
    let elem_ok = match op {
        Operand::A | Operand::B => matches!(elem, ElemType::Bf16 | ElemType::Half),
        Operand::D => elem == ElemType::Float,
    };
    if !elem_ok {
        let want = match op {
            Operand::A | Operand::B => "`bf16` or `half`",
            Operand::D => "`float` (the f32 accumulator)",
        };
        return Err(format!(
            "the elements of {} are {want}, not `{}`",
            op.name(),
            elem.c_name()
        ));
    }
    let dist = match &def.distribution {
        Some(d) if d.holders == Holders::Threads && d.over == threads => d,
        _ => {
            return Err(format!(
                "`{ty}` is not a fragment of `{threads}`'s block (SPEC 2.14): {}",
                how(elem)
            ))
        }
    };
    let dims = dims(module, def.root);
    if dims != [rows as u64, cols as u64] {
        let (r, c) = op.axes();
        return Err(format!(
            "{} is {rows} x {cols} ({r} x {c}), but `{ty}` is {}: {}",
            op.name(),
            dims.iter().map(|d| format!("[{d}]")).collect::<String>(),
            how(elem)
        ));
    }
    let part = instr.part(op);
    if dist.part != part {
        return Err(format!(
            "a {} keeps {part} registers of {}, but `{ty}` gives each thread {}: {}",
            instr.holder(),
            op.name(),
            dist.part,
            how(elem)
        ));
    }
    for r in 0..rows {
        for c in 0..cols {
            let o = module.offset_at(def.root, (r * cols + c) as u64);
            let got = (o / dist.part, o % dist.part);
            let (lane, reg) = instr.isa(op, r, c);
            if got != (lane as u64, reg as u64) {
                let (x, y) = op.axes();
                return Err(format!(
                    "`{ty}` is not {}'s {}: its element [{r}][{c}] ({x} = {r}, {y} = {c}) is register {} of thread {}, where the instruction keeps it in register {reg} of {} {lane}; {}",
                    instr.name(),
                    op.name(),
                    got.1,
                    got.0,
                    instr.holder(),
                    how(elem)
                ));
            }
        }
    }
    Ok(elem)
}

/// The sizes of the top-level dimensions of the type rooted at `root`.
fn dims(module: &Module, root: NodeId) -> Vec<u64> {
    module
        .node(root)
        .children
        .iter()
        .map(|c| module.node(*c).size)
        .collect()
}

/// The wgmma whose accumulator is the declared type `ty`: N is its columns, a multiple of 8
/// from 8 to 256 (the rest of its shape and its layout are checked by [`check_operand`]).
pub fn wgmma_of(module: &Module, ty: &str) -> Result<Instruction, String> {
    let def = module
        .type_def(ty)
        .ok_or_else(|| format!("`{ty}` is not a declared type"))?;
    match dims(module, def.root)[..] {
        [_, n] if n.is_multiple_of(8) && (8..=256).contains(&n) => Ok(Instruction::Wgmma { n: n as usize }),
        _ => Err(format!(
            "D of a wgmma (A and B shared tiles) is 64 x N (m x n), N a multiple of 8 from 8 to 256, but `{ty}` is {}",
            dims(module, def.root).iter().map(|d| format!("[{d}]")).collect::<String>()
        )),
    }
}

/// Whether `ty` is a declared data type that is not a fragment (distributed over a
/// block's threads, SPEC 2.14): A of a wgmma is such a tile (in shared memory), A of
/// mma.sync a fragment.
pub fn is_tile(module: &Module, ty: &str) -> bool {
    module.type_def(ty).is_some_and(|d| {
        matches!(d.class, TypeClass::Data { .. })
            && !d
                .distribution
                .as_ref()
                .is_some_and(|d| d.holders == Holders::Threads)
    })
}

/// Whether `s` only issues asynchronous wgmmas: an `#mma async`, or a `for` loop or a
/// block of such statements. A run of them is one group ([`commit_groups`]).
pub fn issues(s: &Stmt) -> bool {
    match s {
        Stmt::Mma { wgmma: Some(w), .. } => !w.wait,
        Stmt::For { body, .. } | Stmt::Block { body, .. } => only_issues(body),
        _ => false,
    }
}

fn only_issues(stmts: &[Stmt]) -> bool {
    !stmts.is_empty() && stmts.iter().all(issues)
}

/// Puts a [`Stmt::MmaCommit`] after each maximal run of statements that only issue
/// asynchronous wgmmas ([`issues`]) in every statement list of `stmts` (not inside a
/// run: a loop of issues is part of the run around it). A run is one group of the
/// warpgroup's wgmmas (SPEC 3.5, "Asynchronous"), so that a `#mma wait N` counts runs,
/// whatever their loops' trip counts.
pub fn commit_groups(stmts: &mut Vec<Stmt>) {
    let mut out = Vec::with_capacity(stmts.len());
    let mut run: Option<Loc> = None;
    for mut s in std::mem::take(stmts) {
        if issues(&s) {
            run = Some(s.loc());
            out.push(s);
            continue;
        }
        if let Some(loc) = run.take() {
            out.push(Stmt::MmaCommit { loc });
        }
        // Copies and the other statements with bodies hold no `#mma`.
        match &mut s {
            Stmt::If { then, els, .. } => {
                commit_groups(then);
                if let Some(e) = els {
                    commit_groups(e);
                }
            }
            Stmt::While { body, .. } | Stmt::For { body, .. } | Stmt::Block { body, .. } => {
                commit_groups(body)
            }
            _ => {}
        }
        out.push(s);
    }
    if let Some(loc) = run {
        out.push(Stmt::MmaCommit { loc });
    }
    *stmts = out;
}

/// The most groups the check counts in flight (more are as many).
const MANY: u32 = 1 << 16;

/// What may be in flight at a point of a body, over every path to it.
#[derive(Debug, Clone, Default)]
struct Flight {
    /// Committed groups not known to be complete, at most.
    groups: u32,
    /// Wgmmas issued since the last commit.
    open: bool,
    /// The accumulators they write (sorted), and an issue of them, for the messages.
    accs: Vec<LocalId>,
    issue: Option<Loc>,
}

impl Flight {
    fn busy(&self) -> bool {
        self.open || self.groups > 0
    }

    /// What is in flight after one path or the other.
    fn join(mut self, other: &Flight) -> Flight {
        self.groups = self.groups.max(other.groups);
        self.open |= other.open;
        for a in &other.accs {
            if !self.accs.contains(a) {
                self.accs.push(*a);
            }
        }
        self.accs.sort();
        self.issue = self.issue.or(other.issue);
        self
    }

    fn same(&self, other: &Flight) -> bool {
        (self.groups, self.open, &self.accs) == (other.groups, other.open, &other.accs)
    }

    /// The line of an issue in flight.
    fn line(&self) -> u32 {
        self.issue.map_or(0, |l| l.line)
    }
}

/// The local an operand of `#mma` names (the front end made it a local).
fn local_of(e: &Expr) -> Option<LocalId> {
    match e.kind {
        ExprKind::Local(id) => Some(id),
        _ => None,
    }
}

/// The check of [`check_waits`]: the body's locals, and which of them hold an accumulator
/// of asynchronous wgmmas (the accumulator itself, or a local given a value that names
/// one, `let p = acc;`), by that accumulator.
struct Waits<'a> {
    locals: &'a [Local],
    /// The type each accumulator is named with in its `#mma`s.
    types: &'a HashMap<LocalId, String>,
    holds: HashMap<LocalId, LocalId>,
}

type Failure = (Loc, String);

impl Waits<'_> {
    fn new<'a>(
        stmts: &[Stmt],
        locals: &'a [Local],
        types: &'a HashMap<LocalId, String>,
    ) -> Waits<'a> {
        let mut holds = HashMap::new();
        visit_stmts(stmts, &mut |s| {
            if let Stmt::Mma {
                wgmma: Some(_), d, ..
            } = s
            {
                if let Some(id) = local_of(d) {
                    holds.insert(id, id);
                }
            }
        });
        // Locals given a value that names an accumulator, until none is added.
        loop {
            let mut more = Vec::new();
            let mut names = |place: LocalId, value: &Expr| {
                if holds.contains_key(&place) {
                    return;
                }
                visit_expr(value, &mut |e| {
                    if let Some(acc) = local_of(e).and_then(|id| holds.get(&id)) {
                        more.push((place, *acc));
                    }
                });
            };
            visit_stmts(stmts, &mut |s| {
                if let Stmt::Let {
                    local,
                    init: Some(v),
                    ..
                } = s
                {
                    names(*local, v);
                }
            });
            visit_exprs(stmts, &mut |e| {
                if let ExprKind::Assign(_, place, value) = &e.kind {
                    if let Some(p) = local_of(place) {
                        names(p, value);
                    }
                }
            });
            if more.is_empty() {
                break;
            }
            holds.extend(more);
        }
        Waits {
            locals,
            types,
            holds,
        }
    }

    fn name(&self, id: LocalId) -> &str {
        self.locals
            .get(id.0 as usize)
            .map_or("?", |l| l.name.as_str())
    }

    /// `#mma wait N D(acc);` for the accumulator in flight in `f`.
    fn wait(&self, groups: u32, f: &Flight) -> String {
        let acc = f.accs.first().copied();
        let ty = acc
            .and_then(|a| self.types.get(&a))
            .map_or("D", |t| t.as_str());
        let name = acc.map_or("d", |a| self.name(a));
        format!("`#mma wait {groups} {ty}({name});`")
    }

    /// The error at `at` for a statement that names `local`, which holds the registers of
    /// the accumulator in flight in `f`.
    fn named(&self, at: Loc, local: LocalId, f: &Flight) -> Failure {
        let acc = self.holds[&local];
        let (name, acc_name) = (self.name(local), self.name(acc));
        let held = match local == acc {
            true => format!("`{name}` is the accumulator"),
            false => format!("`{name}` holds the registers of `{acc_name}`, the accumulator"),
        };
        (at, format!("{held} of the asynchronous `#mma` at line {}, which is in flight here: no statement may read or write its registers until the `#mma wait` that completes its group; write {} before this statement (or a `#mma wait N` that leaves only later groups in flight)", f.line(), self.wait(0, f)))
    }

    /// Refuses an expression of `e` that names the registers of an accumulator in flight.
    fn expr(&self, e: &Expr, f: &Flight, line: u32) -> Result<(), Failure> {
        if !f.busy() {
            return Ok(());
        }
        let mut found = None;
        visit_expr(e, &mut |x| {
            if let Some(id) = local_of(x).filter(|id| self.in_flight(*id, f)) {
                found = found.or(Some((x.span, id)));
            }
        });
        match found {
            Some((span, id)) => Err(self.named(Loc { span, line }, id, f)),
            None => Ok(()),
        }
    }

    /// Whether `id` holds the registers of an accumulator in flight in `f`.
    fn in_flight(&self, id: LocalId, f: &Flight) -> bool {
        self.holds.get(&id).is_some_and(|acc| f.accs.contains(acc))
    }

    /// Refuses a statement (its expressions and bodies) that names an accumulator in
    /// flight, or makes one anew.
    fn names(&self, s: &Stmt, f: &Flight) -> Result<(), Failure> {
        if !f.busy() {
            return Ok(());
        }
        let mut failed = Ok(());
        visit_stmts(std::slice::from_ref(s), &mut |s| {
            if failed.is_err() {
                return;
            }
            if let Stmt::Create { local, loc, .. } | Stmt::Let { local, loc, .. } = s {
                if self.in_flight(*local, f) {
                    failed = Err(self.named(*loc, *local, f));
                    return;
                }
            }
            s.for_each_part(&mut |part| {
                if let (Part::Expr(e), Ok(())) = (part, &failed) {
                    failed = self.expr(e, f, s.loc().line);
                }
            });
        });
        failed
    }

    fn stmts(&self, stmts: &[Stmt], mut f: Flight) -> Result<Flight, Failure> {
        for s in stmts {
            f = self.stmt(s, f)?;
        }
        Ok(f)
    }

    /// The body of an `if` branch or a `while`: a group it issues is completed in it, so
    /// that no group in flight is under a branch its wait is not.
    fn branch(&self, body: &[Stmt], f: Flight, what: &str) -> Result<Flight, Failure> {
        let end = self.stmts(body, f)?;
        let mut last = None;
        visit_stmts(body, &mut |s| {
            if matches!(s, Stmt::Mma { wgmma: Some(w), .. } if !w.wait) {
                last = Some(s.loc());
            }
        });
        match last {
            Some(at) if end.busy() => Err((at, format!("this asynchronous `#mma` is issued in {what}, and its group is still in flight where that ends: complete it there ({} before the end), or issue it outside, where its wait is", self.wait(0, &end)))),
            _ => Ok(end),
        }
    }

    /// A loop's state at its head (and after it), `body` run from there until nothing
    /// more may be in flight; `what`: the body is a branch's ([`Waits::branch`]).
    fn looped(&self, body: &[Stmt], entry: Flight, what: Option<&str>) -> Result<Flight, Failure> {
        let mut head = entry;
        for round in 0.. {
            let end = match what {
                Some(what) => self.branch(body, head.clone(), what)?,
                None => self.stmts(body, head.clone())?,
            };
            let mut next = head.clone().join(&end);
            if next.same(&head) {
                return Ok(head);
            }
            // A loop that commits more groups than it waits for: as many as counted.
            if round >= 2 {
                next.groups = MANY;
            }
            head = next;
        }
        unreachable!("the loop returns")
    }

    fn stmt(&self, s: &Stmt, mut f: Flight) -> Result<Flight, Failure> {
        match s {
            Stmt::Mma {
                wgmma: Some(w),
                d,
                loc,
                ..
            } => {
                let acc = local_of(d).expect("checked: D of #mma is a local array");
                if f.busy() && f.accs != [acc] {
                    return Err((*loc, format!("the asynchronous `#mma` at line {} into `{}` is in flight here: the wgmmas in flight write one accumulator (the wait that completes them names it, so that its registers stay in place); write {} before this `#mma`", f.line(), f.accs.first().map_or("?", |a| self.name(*a)), self.wait(0, &f))));
                }
                match w.wait {
                    // Issued, committed and waited for (`wait_group 0`): nothing is left.
                    true => Ok(Flight::default()),
                    false => {
                        f.open = true;
                        f.accs = vec![acc];
                        f.issue = Some(*loc);
                        Ok(f)
                    }
                }
            }
            Stmt::MmaCommit { .. } => {
                f.groups = (f.groups + u32::from(f.open)).min(MANY);
                f.open = false;
                Ok(f)
            }
            Stmt::MmaWait { d, groups, loc, .. } => {
                let acc =
                    local_of(d).expect("checked: the accumulator of #mma wait is a local array");
                if f.busy() && f.accs != [acc] {
                    let wanted = f.accs.first().map_or("?", |a| self.name(*a));
                    return Err((Loc { span: d.span, line: loc.line }, format!("this wait names `{}`, but the wgmmas in flight (the asynchronous `#mma` at line {}) write `{wanted}`: name their accumulator, {}, whose registers the wait keeps in place", self.name(acc), f.line(), self.wait(*groups, &f))));
                }
                f.groups = f.groups.min(*groups);
                if !f.busy() {
                    f = Flight::default();
                }
                Ok(f)
            }
            Stmt::If {
                cond, then, els, ..
            } => {
                self.expr(cond, &f, s.loc().line)?;
                let yes = self.branch(then, f.clone(), "an `if` branch")?;
                let no = match els {
                    Some(e) => self.branch(e, f, "an `else` branch")?,
                    None => f,
                };
                Ok(yes.join(&no))
            }
            Stmt::While { cond, body, .. } => {
                let head = self.looped(body, f, Some("a `while` loop"))?;
                self.expr(cond, &head, s.loc().line)?;
                Ok(head)
            }
            // A `for` loop may carry groups across its back-edge and out of it (a k-loop
            // that waits for all but the last k-tile's): its head joins both.
            Stmt::For {
                start, end, body, ..
            } => {
                let head = self.looped(body, f, None)?;
                self.expr(start, &head, s.loc().line)?;
                self.expr(end, &head, s.loc().line)?;
                Ok(head)
            }
            Stmt::Block { body, .. } => self.stmts(body, f),
            Stmt::Break { loc } | Stmt::Continue { loc } | Stmt::Return { loc } if f.busy() => {
                let what = match s {
                    Stmt::Break { .. } => "`break` leaves its loop",
                    Stmt::Continue { .. } => "`continue` skips to its loop's next iteration",
                    _ => "`return` ends the thread's body",
                };
                Err((*loc, format!("{what} with the asynchronous `#mma` at line {} in flight: complete it first ({}), so that every path from an issue meets its wait", f.line(), self.wait(0, &f))))
            }
            _ => {
                self.names(s, &f)?;
                Ok(f)
            }
        }
    }
}

/// Checks the asynchronous wgmmas of a body (SPEC 3.5, "Asynchronous"), its groups
/// committed ([`commit_groups`]): over every path, it counts the groups that may be in
/// flight (a `#mma wait N` leaves at most N; a `for` loop's head joins its entry and its
/// back-edge), and refuses, each at the offending token with the fix, a statement that
/// names (reads, writes, makes anew) the registers of an accumulator in flight, a wgmma
/// into another accumulator or a wait naming another while one is in flight, a group
/// issued in an `if` branch or a `while` body and still in flight where that ends, a
/// `break`, `continue` or `return` with one in flight, and a body that ends with one in
/// flight. What the tensor core reads of shared memory the emulation checks when it runs.
/// `types`: the type each accumulator is named with, for the messages.
pub fn check_waits(
    stmts: &[Stmt],
    locals: &[Local],
    types: &HashMap<LocalId, String>,
) -> Result<(), (Loc, String)> {
    let waits = Waits::new(stmts, locals, types);
    let end = waits.stmts(stmts, Flight::default())?;
    match end.issue {
        Some(at) if end.busy() => Err((at, format!("this asynchronous `#mma` is still in flight where the body ends (a GPU's warpgroup would exit with the tensor core writing its registers): write {} after it, before the end", waits.wait(0, &end)))),
        _ => Ok(()),
    }
}

/// A wgmma matrix descriptor of a 16-bit operand without its start address: the canonical
/// layout (CuTe's `make_gmma_desc`, `mma_sm90_desc.hpp`; the PTX ISA's "Shared memory
/// matrix layout"), K-major or (`mn_major`, the instruction's transpose bit) MN-major,
/// with the leading and stride byte offsets. Element `(mn, k)` (A's `[m][k]`, B's
/// `[k][n]`) is at [`Descriptor::address`] bytes past a start aligned to
/// [`Descriptor::alignment`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Descriptor {
    pub swizzle: Swizzle,
    pub mn_major: bool,
    /// The leading dimension byte offset (a multiple of 16, below 2^18).
    pub lbo: u64,
    /// The stride dimension byte offset (a multiple of 16, below 2^18).
    pub sbo: u64,
}

impl Descriptor {
    /// The byte address, from the start, of element `(mn, k)` (k below [`k_of`]) of
    /// elements of `bytes` bytes (2, or 4 for tf32). K-major: core matrices of 8 rows (mn)
    /// of 16 bytes (16 / `bytes` k) without a swizzle, the next 16 bytes of k at LBO; rows
    /// of the atom's width (k within the row) with one; groups of 8 rows at SBO. MN-major
    /// (16-bit elements only): 8 mn a 16-byte chunk, 8 k rows of chunks, without a swizzle
    /// mn's groups of 8 at SBO and k's at LBO; with one a row is 2^B chunks of mn, the next
    /// 8 x 2^B mn at LBO, the next 8 k at SBO.
    pub fn address(&self, mn: u64, k: u64, bytes: u64) -> u64 {
        let row = self.swizzle.row_bytes();
        let per = 16 / bytes;
        let linear = match (self.mn_major, self.swizzle) {
            (false, Swizzle::None) => {
                (mn % 8) * 16 + (mn / 8) * self.sbo + (k / per) * self.lbo + (k % per) * bytes
            }
            (false, _) => (mn % 8) * row + (mn / 8) * self.sbo + k * bytes,
            (true, Swizzle::None) => {
                (mn % per) * bytes + (mn / per) * self.sbo + (k % 8) * 16 + (k / 8) * self.lbo
            }
            (true, s) => {
                let chunks = 1 << s.b();
                (mn % per) * bytes
                    + ((mn / per) % chunks) * 16
                    + (mn / (per * chunks)) * self.lbo
                    + (k % 8) * row
                    + (k / 8) * self.sbo
            }
        };
        self.swizzle.apply(linear)
    }

    /// The alignment its start needs: the swizzle's atom (2^(7+B) bytes), for the XOR on
    /// absolute address bits to be the one on offsets; 16 unswizzled (a core matrix's row).
    pub fn alignment(&self) -> u64 {
        match self.swizzle {
            Swizzle::None => 16,
            s => s.atom_bytes(),
        }
    }

    /// The bytes past an aligned start that a K-major swizzled tile may also start at: its
    /// k16 step (32 bytes of its row) anywhere within the atom's first row, where the XOR
    /// of the start itself is zero (the k-step of a K-major tile, CUTLASS's descriptor
    /// iterator); 0 for other tiles, which start aligned. SPEC 3.5, "Alignment and the
    /// k-step".
    pub fn step_within_row(&self) -> u64 {
        match (self.mn_major, self.swizzle) {
            (false, s) if s != Swizzle::None => s.row_bytes() - K_BYTES,
            _ => 0,
        }
    }

    /// Whether a tile may start `start` bytes from its array's start (the array aligned to
    /// the atom): 16-byte units, and at an aligned start plus at most
    /// [`Descriptor::step_within_row`].
    pub fn start_allowed(&self, start: u64) -> bool {
        start.is_multiple_of(16) && start % self.alignment() <= self.step_within_row()
    }

    /// The byte, from its array's start, that the tensor core reads for the element at
    /// byte `offset` of the tile's type (`offset` from an aligned start, as the type's
    /// offsets are) where the tile starts `start` bytes into the array: the swizzle acts on
    /// the absolute address of the start plus the descriptor's linear offset, which is the
    /// type's offset unswizzled (the XOR is an involution). At an aligned start this is
    /// `start + offset`; at a k-step within the first row, the element that many bytes
    /// further along the row.
    pub fn read_byte(&self, start: u64, offset: u64) -> u64 {
        self.swizzle.apply(start + self.swizzle.apply(offset))
    }

    /// The descriptor's bits but the start address (bits 0-13) and the base offset (49-51,
    /// 0: the start is aligned): LBO >> 4 in 16-29, SBO >> 4 in 32-45, the swizzle in
    /// 62-63.
    pub fn bits(&self) -> u64 {
        ((self.lbo >> 4) & 0x3fff) << 16
            | ((self.sbo >> 4) & 0x3fff) << 32
            | self.swizzle.descriptor_bits() << 62
    }

    /// The candidate of `swizzle` and `major` for the byte offsets `at` gives (`None` past
    /// the operand) of elements of `bytes` bytes: LBO and SBO read where the canonical
    /// layout puts them, 0 where the operand is too small to use one.
    fn candidate(
        swizzle: Swizzle,
        mn_major: bool,
        bytes: u64,
        at: &dyn Fn(u64, u64) -> Option<u64>,
    ) -> Descriptor {
        let chunks = 1 << swizzle.b();
        let per = 16 / bytes;
        let (lbo, sbo) = match (mn_major, swizzle) {
            (false, Swizzle::None) => (at(0, per), at(8, 0)),
            // LBO is unused: K (32 bytes) is within a row; CUTLASS writes 1 (16 bytes).
            (false, _) => (Some(16), at(8, 0)),
            (true, Swizzle::None) => (at(0, 8), at(per, 0)),
            (true, _) => (at(per * chunks, 0), at(0, 8)),
        };
        Descriptor {
            swizzle,
            mn_major,
            lbo: lbo.unwrap_or(0),
            sbo: sbo.unwrap_or(0),
        }
    }
}

/// The k of one wgmma of elements of `bytes` bytes: 32 bytes of each row of A (16 bf16 or
/// f16, 8 tf32).
pub fn k_of(bytes: u64) -> usize {
    (K_BYTES / bytes) as usize
}

/// The bytes of k one wgmma reads of each row of A and column of B.
pub const K_BYTES: u64 = 32;

/// The matrix descriptor of the shared tile `ty` as the wgmma operand `op` (A 64 x k, B k
/// x n, k [`k_of`] its element: 16 of `bf16` or `half`, 8 of `float`, read as tf32): the
/// first of the canonical layouts (K-major first, swizzles from none to 128B; MN-major
/// only for 16-bit elements, the ISA's transpose being theirs alone) whose addresses are
/// the type's byte offsets for every element; the type's element type; and its offsets in
/// elements, row-major. Otherwise the error names the first element the layout of the
/// type's own swizzle cannot place, and a type that works.
pub fn descriptor(
    module: &Module,
    ty: &str,
    op: Operand,
    instr: Instruction,
) -> Result<(Descriptor, ElemType, Vec<u32>), String> {
    let def = module
        .type_def(ty)
        .ok_or_else(|| format!("`{ty}` is not a declared type"))?;
    let elem = match def.class {
        TypeClass::Data {
            elem: e @ (ElemType::Bf16 | ElemType::Half | ElemType::Float),
            ..
        } => e,
        TypeClass::Data { elem, .. } => {
            return Err(format!(
                "the elements of {} are `bf16`, `half` or `float` (read as tf32), not `{}`",
                op.name(),
                elem.c_name()
            ))
        }
        TypeClass::Thread(_) => return Err(format!("`{ty}` is a thread array, not a tile")),
    };
    let bytes = elem.size_bytes();
    let k_elems = k_of(bytes);
    let (_, n) = instr.shape(Operand::D);
    let (rows, cols) = match op {
        Operand::A => (WGMMA_M, k_elems),
        _ => (k_elems, n),
    };
    let e = elem.keyword();
    // A K-major 128B-swizzled tile: rows of 128 bytes in 16-byte chunks of `per`.
    let (per, row_elems) = (16 / bytes, 128 / bytes);
    let how = match op {
        Operand::A => format!(
            "a K-major 128B-swizzled 64 x {row_elems} tile, `smem {e} [[8][8]][[8 ^ T_0_1][{per}]] T;`, and A its first {k_elems} columns, `{e} [#T_0][[{}#T_1_0][#T_1_1]] {ty};`",
            k_elems as u64 / per
        ),
        _ => format!(
            "a K-major 128B-swizzled tile of n x {row_elems}, `smem {e} [[{}][8]][[8 ^ T_0_1][{per}]] T;`, and B its first {k_elems} k as k x n, `{e} [[{}#T_1_0][#T_1_1]][#T_0] {ty};`",
            n.div_ceil(8),
            k_elems as u64 / per
        ),
    };
    let dims = dims(module, def.root);
    if dims != [rows as u64, cols as u64] {
        let (r, c) = op.axes();
        return Err(format!(
            "{} is {rows} x {cols} ({r} x {c}) for `{e}` elements, but `{ty}` is {}: declare it so, e.g. {how}",
            op.name(),
            dims.iter().map(|d| format!("[{d}]")).collect::<String>(),
        ));
    }
    // (mn, k) of element [r][c]: A is m x k, B is k x n.
    let index = |mn: u64, k: u64| match op {
        Operand::A => mn * cols as u64 + k,
        _ => k * cols as u64 + mn,
    };
    let mns = match op {
        Operand::A => rows,
        _ => cols,
    } as u64;
    let k_elems = k_elems as u64;
    let at = |mn: u64, k: u64| {
        (mn < mns && k < k_elems).then(|| module.offset_at(def.root, index(mn, k)) * bytes)
    };
    // The first element a descriptor places elsewhere than the type.
    let misplaced = |d: &Descriptor| {
        (0..mns)
            .flat_map(|mn| (0..k_elems).map(move |k| (mn, k)))
            .find(|&(mn, k)| at(mn, k) != Some(d.address(mn, k, bytes)))
    };
    let fits = |v: u64| v.is_multiple_of(16) && v < 1 << 18;
    let majors: &[bool] = if bytes == 2 { &[false, true] } else { &[false] };
    let found = majors
        .iter()
        .flat_map(|&mn_major| Swizzle::ALL.map(|s| Descriptor::candidate(s, mn_major, bytes, &at)))
        .find(|d| fits(d.lbo) && fits(d.sbo) && misplaced(d).is_none());
    if let Some(d) = found {
        let offsets = (0..(rows * cols) as u64)
            .map(|i| module.offset_at(def.root, i) as u32)
            .collect();
        return Ok((d, elem, offsets));
    }
    // The layout the type's swizzle asks for, K-major, explains the mismatch.
    let swizzle = module
        .lookup(ty)
        .ok()
        .and_then(|d| module.swizzle_alignment(d))
        .and_then(Swizzle::of_alignment)
        .unwrap_or(Swizzle::None);
    let d = Descriptor::candidate(swizzle, false, bytes, &at);
    let (mn, k) = misplaced(&d).unwrap_or((0, 0));
    let (r, c) = match op {
        Operand::A => (mn, k),
        _ => (k, mn),
    };
    let (x, y) = op.axes();
    let got = at(mn, k).unwrap_or(0);
    let majors = if bytes == 2 {
        "K- or MN-major"
    } else {
        "K-major only: a tf32 wgmma reads both operands K-major, so B is stored n x k, its k contiguous"
    };
    Err(format!(
        "`{ty}` is not a tile a wgmma matrix descriptor can describe: no canonical layout ({majors}, unswizzled or 32/64/128B-swizzled) places every element where the type does; as the K-major {} layout (LBO {}, SBO {} bytes), its element [{r}][{c}] ({x} = {r}, {y} = {c}) is at byte {got}, where the descriptor reads byte {}; declare {how}",
        d.swizzle.name(),
        d.lbo,
        d.sbo,
        d.address(mn, k, bytes)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPES: &str = "
rmem bf16 [[2][#G_1_1]][[2][#G_1_2][2]] FA
rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS
bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA_ISA
rmem half [2][2][#G_1_1][#G_1_2][2] HA_REGS
half [[#HA_REGS_1][#HA_REGS_2]][[#HA_REGS_0][#HA_REGS_3][#HA_REGS_4]] HA
rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB
rmem bf16 [[2][#G_1_1]][[#G_1_2][2]] FB_ROWS
rmem float [[2][#G_1_1]][[#G_1_2][2]] FC
rmem float [[2][#G_1_1]][[2][#G_1_2]] FC_SWAPPED
rmem float [2][2][#G_1_1][#G_1_2] FC_FLAT
";

    fn module(block: &str) -> Module {
        Module::parse(&format!(
            "cuda(float* c) [2]{block} G\ncuda(float* c) [1][[8][4]] H\n{TYPES}"
        ))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_isa_fragments_pass() {
        let m = module("[[4][8][4]]");
        assert_eq!(check_block(&m, "G", Instruction::MmaSync), Ok(()));
        assert_eq!(
            check_operand(&m, "G", "FA_ISA", Operand::A, Instruction::MmaSync),
            Ok(ElemType::Bf16)
        );
        assert_eq!(
            check_operand(&m, "G", "HA", Operand::A, Instruction::MmaSync),
            Ok(ElemType::Half)
        );
        assert_eq!(
            check_operand(&m, "G", "FB", Operand::B, Instruction::MmaSync),
            Ok(ElemType::Bf16)
        );
        assert_eq!(
            check_operand(&m, "G", "FC", Operand::D, Instruction::MmaSync),
            Ok(ElemType::Float)
        );
    }

    #[test]
    fn each_mistake_says_which_element_and_how_to_declare_it() {
        let m = module("[[4][8][4]]");
        let e = |ty, op| check_operand(&m, "G", ty, op, Instruction::MmaSync).unwrap_err();
        let fa = e("FA", Operand::A);
        assert!(fa.contains("element [0][8] (m = 0, k = 8) is register 2 of thread 0, where the instruction keeps it in register 4 of lane 0"), "{fa}");
        assert!(
            fa.contains("`rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;`"),
            "{fa}"
        );
        let rows = e("FB_ROWS", Operand::B);
        assert!(rows.contains("element [0][1] (k = 0, n = 1) is register 1 of thread 0, where the instruction keeps it in register 0 of lane 4"), "{rows}");
        assert!(
            rows.contains("`rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB_ROWS;`"),
            "{rows}"
        );
        let swapped = e("FC_SWAPPED", Operand::D);
        assert!(swapped.contains("element [0][1]"), "{swapped}");
        let flat = e("FC_FLAT", Operand::D);
        assert!(
            flat.contains("D is 16 x 8 (m x n), but `FC_FLAT` is [2][2][8][4]"),
            "{flat}"
        );
        assert!(e("FC", Operand::A).contains("the elements of A are `bf16` or `half`, not `float`"));
        assert!(e("FA_ISA", Operand::D).contains("the elements of D are `float`"));
        // A fragment of another cuda array's block.
        let other = check_operand(&m, "H", "FC", Operand::D, Instruction::MmaSync).unwrap_err();
        assert!(
            other.contains("`FC` is not a fragment of `H`'s block"),
            "{other}"
        );
    }

    #[test]
    fn the_block_is_whole_warps_of_its_last_dimensions() {
        let block = |b: &str| Module::parse(&format!("cuda(float* c) [2]{b} G\n")).unwrap();
        for ok in ["[[4][8][4]]", "[[3][8][4]]", "[[2][32]]", "[32]"] {
            assert_eq!(
                check_block(&block(ok), "G", Instruction::MmaSync),
                Ok(()),
                "{ok}"
            );
        }
        for bad in ["[[8][3]]", "[64]", "[[4][16][4]]", "[[32][2]]"] {
            let e = check_block(&block(bad), "G", Instruction::MmaSync).unwrap_err();
            assert!(
                e.contains("must be whole warps whose lanes are its last dimensions"),
                "{bad}: {e}"
            );
        }
    }

    /// Tiles of every swizzle mode and both majors, as the canonical layouts lay them out.
    const TILES: &str = "
smem bf16 [[8][8]][[8 ^ T128_0_1][8]] T128
bf16 [#T128_0][[2#T128_1_0][#T128_1_1]] A128
smem bf16 [[8][4][2]][[4 ^ T64_0_1][8]] T64
bf16 [#T64_0][[2#T64_1_0][#T64_1_1]] A64
smem bf16 [[8][2][4]][[2 ^ A32_0_1][8]] A32
smem bf16 [8][2][8][8] TN
bf16 [[#TN_0][#TN_2]][[#TN_1][#TN_3]] AN
smem bf16 [2][8][8][8] TM
bf16 [[#TM_1][#TM_3]][[#TM_0][#TM_2]] AM
smem bf16 [64][16] ROWS
smem bf16 [[8][8]][[8 ^ BT_0_1][8]] BT
bf16 [[2#BT_1_0][#BT_1_1]][#BT_0] B128
rmem float [8][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_REGS
float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC
rmem float [[#G_1_0][2][#G_1_1]][[8][#G_1_2][2]] ACC_ROWS
smem float [[8][8]][[8 ^ FT_0_1][4]] FT
float [#FT_0][[2#FT_1_0][#FT_1_1]] FA
smem float [8][2][8][4] FTN
float [[#FTN_0][#FTN_2]][[#FTN_1][#FTN_3]] FAN
smem float [16][64] FK
smem int [[8][8]][[8 ^ IT_0_1][4]] IT
int [#IT_0][[2#IT_1_0][#IT_1_1]] IA
";

    fn tiles() -> Module {
        Module::parse(&format!("cuda(float* c) [2][[4][8][4]] G\n{TILES}"))
            .unwrap_or_else(|e| panic!("{e}"))
    }

    const N64: Instruction = Instruction::Wgmma { n: 64 };

    #[test]
    fn the_descriptor_model_is_the_ptx_isa_s_address_function() {
        // K-major 128B: 8 rows of 128 bytes, chunk ^ row (SPEC 2.5's table, in bytes).
        let d = Descriptor {
            swizzle: Swizzle::B128,
            mn_major: false,
            lbo: 16,
            sbo: 1024,
        };
        assert_eq!(
            [
                d.address(0, 0, 2),
                d.address(1, 0, 2),
                d.address(2, 8, 2),
                d.address(7, 15, 2)
            ],
            [0, 144, 304, 1006]
        );
        assert_eq!(d.address(9, 0, 2), 1024 + 144);
        assert_eq!(d.bits(), 0x4000_0040_0001_0000);
        // 64B: rows of 64 bytes, the chunk ^ bits 7-8 (two rows a step).
        let d = Descriptor {
            swizzle: Swizzle::B64,
            mn_major: false,
            lbo: 16,
            sbo: 512,
        };
        assert_eq!(
            [
                d.address(1, 0, 2),
                d.address(2, 0, 2),
                d.address(3, 9, 2),
                d.address(8, 0, 2)
            ],
            [64, 144, 194, 512]
        );
        assert_eq!(d.bits() >> 62, 2);
        // 32B: rows of 32 bytes, the chunk ^ bit 7 (four rows a step).
        let d = Descriptor {
            swizzle: Swizzle::B32,
            mn_major: false,
            lbo: 16,
            sbo: 256,
        };
        assert_eq!(
            [d.address(3, 8, 2), d.address(4, 0, 2), d.address(4, 8, 2)],
            [112, 144, 128]
        );
        assert_eq!(d.bits() >> 62, 3);
        // Unswizzled K-major: core matrices of 8 rows of 16 bytes, k's second half at LBO.
        let d = Descriptor {
            swizzle: Swizzle::None,
            mn_major: false,
            lbo: 128,
            sbo: 256,
        };
        assert_eq!(
            [
                d.address(1, 0, 2),
                d.address(0, 8, 2),
                d.address(8, 1, 2),
                d.address(9, 9, 2)
            ],
            [16, 128, 258, 256 + 16 + 128 + 2]
        );
        // Unswizzled MN-major: 8 m in a chunk, k's rows of chunks, m's groups at SBO.
        let d = Descriptor {
            swizzle: Swizzle::None,
            mn_major: true,
            lbo: 1024,
            sbo: 128,
        };
        assert_eq!(
            [
                d.address(1, 0, 2),
                d.address(0, 1, 2),
                d.address(8, 0, 2),
                d.address(0, 8, 2)
            ],
            [2, 16, 128, 1024]
        );
        // MN-major 128B: 64 mn a row of 128 bytes, k rows, the next 64 mn at LBO.
        let d = Descriptor {
            swizzle: Swizzle::B128,
            mn_major: true,
            lbo: 2048,
            sbo: 1024,
        };
        assert_eq!(
            [
                d.address(8, 0, 2),
                d.address(0, 1, 2),
                d.address(8, 1, 2),
                d.address(64, 0, 2),
                d.address(0, 8, 2)
            ],
            [16, 144, 128, 2048, 1024]
        );
    }

    #[test]
    fn each_canonical_tile_gets_its_descriptor() {
        let m = tiles();
        let desc = |ty, op| descriptor(&m, ty, op, N64).map(|(d, _, _)| d);
        let k = |swizzle, lbo, sbo| {
            Ok(Descriptor {
                swizzle,
                mn_major: false,
                lbo,
                sbo,
            })
        };
        assert_eq!(desc("A128", Operand::A), k(Swizzle::B128, 16, 1024));
        assert_eq!(desc("A64", Operand::A), k(Swizzle::B64, 16, 512));
        assert_eq!(desc("A32", Operand::A), k(Swizzle::B32, 16, 256));
        assert_eq!(desc("AN", Operand::A), k(Swizzle::None, 128, 256));
        assert_eq!(desc("B128", Operand::B), k(Swizzle::B128, 16, 1024));
        let mn = Descriptor {
            swizzle: Swizzle::None,
            mn_major: true,
            lbo: 1024,
            sbo: 128,
        };
        assert_eq!(desc("AM", Operand::A), Ok(mn));
        let (_, elem, offsets) = descriptor(&m, "A128", Operand::A, N64).unwrap();
        assert_eq!(
            (elem, offsets.len(), offsets[16], offsets[16 + 8]),
            (ElemType::Bf16, 1024, 72, 64)
        );
    }

    #[test]
    fn a_tile_no_descriptor_describes_names_its_first_misplaced_element() {
        let m = tiles();
        let e = descriptor(&m, "ROWS", Operand::A, N64).unwrap_err();
        assert!(
            e.contains("`ROWS` is not a tile a wgmma matrix descriptor can describe"),
            "{e}"
        );
        assert!(e.contains("as the K-major unswizzled layout (LBO 16, SBO 256 bytes), its element [1][0] (m = 1, k = 0) is at byte 32, where the descriptor reads byte 16"), "{e}");
        assert!(e.contains("`smem bf16 [[8][8]][[8 ^ T_0_1][8]] T;`"), "{e}");
        let e = descriptor(&m, "T128", Operand::A, N64).unwrap_err();
        assert!(
            e.contains("A is 64 x 16 (m x k) for `bf16` elements, but `T128` is [64][64]"),
            "{e}"
        );
        let e = descriptor(&m, "IA", Operand::B, N64).unwrap_err();
        assert!(
            e.contains("the elements of B are `bf16`, `half` or `float` (read as tf32), not `int`"),
            "{e}"
        );
        // A `float` A is 64 x 8 (32 bytes of k): the error names the element's shape.
        let e = descriptor(&m, "FK", Operand::A, N64).unwrap_err();
        assert!(
            e.contains("A is 64 x 8 (m x k) for `float` elements"),
            "{e}"
        );
    }

    #[test]
    fn float_tiles_are_tf32_operands_of_8_k_and_k_major_only() {
        let m = tiles();
        let desc = |ty, op| descriptor(&m, ty, op, N64).map(|(d, e, _)| (d, e));
        let k = |swizzle, lbo, sbo| Descriptor {
            swizzle,
            mn_major: false,
            lbo,
            sbo,
        };
        // Rows of 32 floats in the 128-byte swizzle: the bf16 tile's descriptor.
        assert_eq!(
            desc("FA", Operand::A),
            Ok((k(Swizzle::B128, 16, 1024), ElemType::Float))
        );
        // Core matrices of 8 rows of 4 floats; k's second 4 at LBO (128 bytes).
        assert_eq!(
            desc("FAN", Operand::A),
            Ok((k(Swizzle::None, 128, 256), ElemType::Float))
        );
        let d = k(Swizzle::B128, 16, 1024);
        // Element (mn, k) of 4 bytes: k * 4 along the row, the chunk (k / 4) ^ mn % 8
        // (element (9, 7): row 1 of the second group, chunk 1 ^ 1 = 0, byte 12 of it).
        assert_eq!(
            [
                d.address(0, 1, 4),
                d.address(1, 0, 4),
                d.address(1, 4, 4),
                d.address(9, 7, 4)
            ],
            [4, 144, 128, 1024 + 128 + 12]
        );
        assert_eq!(d.step_within_row(), 96);
    }

    #[test]
    fn the_wgmma_accumulator_is_checked_element_by_element() {
        let m = tiles();
        // A shared tile makes a wgmma; a fragment, or no type, mma.sync.
        assert!(is_tile(&m, "A128") && is_tile(&m, "T128"));
        assert!(!is_tile(&m, "ACC") && !is_tile(&m, "ACC_REGS") && !is_tile(&m, "NONE"));
        assert_eq!(wgmma_of(&m, "ACC"), Ok(N64));
        assert_eq!(check_block(&m, "G", N64), Ok(()));
        assert_eq!(
            check_operand(&m, "G", "ACC", Operand::D, N64),
            Ok(ElemType::Float)
        );
        let e = check_operand(&m, "G", "ACC_ROWS", Operand::D, N64).unwrap_err();
        assert!(e.contains("is not wgmma m64n64k16's D: its element"), "{e}");
        assert!(
            e.contains("`rmem float [8][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_ROWS_REGS;`"),
            "{e}"
        );
        assert!(wgmma_of(&m, "TN")
            .unwrap_err()
            .contains("D of a wgmma (A and B shared tiles) is 64 x N"));
        let block = |b: &str| Module::parse(&format!("cuda(float* c) [2]{b} G\n")).unwrap();
        for ok in ["[[4][8][4]]", "[[3][128]]", "[[4][32][4]]"] {
            assert_eq!(check_block(&block(ok), "G", N64), Ok(()), "{ok}");
        }
        for bad in ["[[2][8][4]]", "[[8][8][4]]", "[[64][4]]"] {
            let e = check_block(&block(bad), "G", N64).unwrap_err();
            assert!(
                e.contains("must be whole warpgroups whose threads are its last dimensions"),
                "{bad}: {e}"
            );
        }
    }
}
