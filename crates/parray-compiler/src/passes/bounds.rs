//! Which arrays a body reads, writes and indexes as which type, and which of its element
//! accesses are proved within bounds.
//!
//! Every access `x[e]` reaches an array through a *root*: a kernel parameter, a captured
//! host variable (pthd) or an array the body creates. Following `let p = x + e1` chains,
//! an access is `root[d + e]` for a displacement `d`. With an interval for every integer
//! expression (thread indices from the thread array, `for` variables from their constant
//! ranges, immutable locals from their initialisers, `$T[...]$` offsets from their type
//! when each index lies inside its dimension), the access is *proved* when the interval
//! of `d + e` lies in `[0, extent)`, the extent being the array's length for a created
//! array and, for a parameter or a capture, the largest extent of the types the body
//! indexes it as: the detour checks before starting that the array holds that many
//! elements (`IndexedAs` in the runtime). Proved accesses skip their run-time check.
//!
//! A body over types with sizes given at run time is compiled once for all of them on the
//! CPU (pthd, the emulation), where no interval bounds `$dim(T_0)$`. There the analysis
//! also bounds an integer expression from above by such a size (`passes/sizes.rs`): a
//! loop's variable below `$dim(T_0)$`, a `$T[...]$` offset below `T`'s extent where each
//! index lies below the size of each dimension it indexes (the sizes compared as
//! polynomials of the run-time sizes, `parray_layout::symbolic`), and an access is proved
//! when its offset lies below the extent of a type its root is indexed as, at every
//! binding. Only where the target's `usize` holds every size: a GPU's 32-bit index does
//! not (its kernel is specialised at the bound sizes, and proved with numbers).
//!
//! A vector access (`p.load4(e)`) is proved when all its lanes are, and when its first
//! lane is known to lie at a multiple of its lanes from the root's start: every integer
//! expression also gets the number of its low bits known to be zero (a multiple of 4 has
//! two), which holds under wrapping arithmetic too. A root's start is aligned: an array
//! the body creates is allocated so, and the detour checks before starting that an array
//! it is given starts at a multiple of the most lanes the body accesses it by
//! (`aligned_for` in the runtime). The same facts decide a `#copy`'s
//! [`Stmt::Vectorised`]: its vector loop where both sides are proved aligned.

use std::collections::HashMap;

use super::check::Typed;
use super::linear::{Atom, Linear};
use super::sizes::{below, Range};
use crate::CodeSpan;

use crate::ir::{
    visit_exprs, BinOp, Body, Check, Descriptor, Diag, Expr, ExprKind, Function, Guard, Indexed,
    Lit, LocalId, Poly, Root, Scalar, Stmt, Target, Ty, WholeVectors,
};

/// What the body does with one root.
#[derive(Debug, Clone)]
pub struct RootUse {
    pub root: Root,
    /// Stored to (`x[i] = v`, `x[i] += v`, `atomic_add`), directly or through a pointer
    /// derived from it.
    pub written: bool,
    /// The declared types whose `$T[...]$` forms index it (with their extents, `None` for
    /// a type parameter), in first-use order.
    pub indexed_as: Vec<Indexed>,
    /// The most lanes of a vector access through it (`p.load4(off)`: 4); 0 when it has
    /// none. An array given to the detour must start at a multiple of it.
    pub lanes: u8,
    /// Where the body first reaches it (for messages about it).
    pub span: CodeSpan,
}

/// The result of [`prove`].
#[derive(Debug, Clone, Default)]
pub struct Proof {
    pub roots: Vec<RootUse>,
    /// Element accesses in the body, and how many of them were proved.
    pub accesses: usize,
    pub proved: usize,
    /// What the body may not do, found by the proofs (at its token, in the order found):
    /// an index of a `$T[...]$` form out of its dimension for every thread and iteration
    /// (its interval lies wholly past it); a vector access whose first element is at one
    /// offset, not a multiple of its lanes, for every thread and iteration (each would
    /// fault on every run); an array indexed as a cmem type that a kernel cannot read
    /// from its constant bank (written, also indexed as another memory's type, or not a
    /// cuda kernel's parameter); in a cuda body, an access through a pointer whose array
    /// the analysis cannot name (a pointer assigned from two arrays), which a GPU cannot
    /// check.
    pub errors: Vec<Diag>,
}

impl Proof {
    pub fn root(&self, root: &Root) -> Option<&RootUse> {
        self.roots.iter().find(|r| r.root == *root)
    }
}

/// A typed body whose every element access [`prove`] marked proved or checked,
/// with what it found: what the back ends write. Only `prove` makes one, so no back end
/// writes an access unchecked that it did not prove.
#[derive(Debug, Clone)]
pub struct Proved {
    body: Body,
    proof: Proof,
}

impl Proved {
    pub fn body(&self) -> &Body {
        &self.body
    }

    pub fn proof(&self) -> &Proof {
        &self.proof
    }
}

/// Finds the body's roots and marks each access proved in bounds as [`Check::Proved`], and
/// every other with its root ([`Check::Checked`]), whatever marks the body had.
pub fn prove(typed: Typed) -> Proved {
    let mut body = typed.into_body();
    let proof = prove_body(&mut body);
    Proved { body, proof }
}

fn prove_body(body: &mut Body) -> Proof {
    // First each `#copy` that can move vectors keeps the loop its alignment allows.
    let read = body.clone();
    let mut facts = Facts::analyse(&read);
    choose_vectors(&mut body.stmts, &mut facts);
    drop_decided_branches(&mut body.stmts, &mut facts);
    // The facts read the body as it was; the marks go into the body itself.
    let read = body.clone();
    let facts = Facts::analyse(&read);
    let extents = Extents::of(&read, &facts);
    let mut proof = Proof {
        roots: facts.uses.clone(),
        ..Proof::default()
    };
    let mut facts = facts;
    mark(&mut body.stmts, &mut facts, &extents, &mut proof);
    let mut functions = std::mem::take(&mut body.functions);
    for f in &mut functions {
        mark_function(f, body, &mut proof.errors);
    }
    body.functions = functions;
    body.constants = constants(body, &proof.roots, &mut proof.errors);
    proof
}

/// What a cuda body may not do with a pointer whose array the analysis cannot name.
const UNNAMED_ARRAY: &str = "a GPU cannot check this access: the pointer is assigned from more than one array; use one pointer per array";

/// Marks the accesses of the function `f` of `body` checked, each with its root: the
/// pointer parameter it goes through, followed through the function's pointer locals
/// (`let p = a + off`, `p += k`). A parameter's extent is its caller's array's, unknown
/// here (the GPU passes it in, the CPU's handle carries it), so nothing in a function is
/// proved. Also the roots of the pointers it passes on, for the GPU's extents.
fn mark_function(f: &mut Function, body: &Body, errors: &mut Vec<Diag>) {
    fn root_of(e: &Expr, roots: &HashMap<LocalId, Root>) -> Option<Root> {
        match &e.kind {
            ExprKind::Local(id) => roots.get(id).cloned(),
            ExprKind::Binary(BinOp::Add, l, _) => root_of(l, roots),
            _ => None,
        }
    }
    fn lets(stmts: &[Stmt], out: &mut Vec<(LocalId, Expr)>) {
        for s in stmts {
            if let Stmt::Let {
                local,
                init: Some(e),
                ..
            } = s
            {
                out.push((*local, e.clone()));
            }
            s.for_each_part(&mut |part| {
                if let crate::ir::Part::Body(b) = part {
                    lets(b, out);
                }
            });
        }
    }
    let params: HashMap<LocalId, Root> = f
        .params
        .iter()
        .filter(|p| matches!(body.local(**p).ty, Some(Ty::Ptr { .. })))
        .map(|p| (*p, Root::Local(*p)))
        .collect();
    // Each value a pointer local is given: its `let`, its assignments (`p += k` keeps it).
    let mut given = Vec::new();
    lets(&f.stmts, &mut given);
    visit_exprs(&f.stmts, &mut |e| {
        if let ExprKind::Assign(None, place, value) = &e.kind {
            if let ExprKind::Local(id) = place.kind {
                given.push((id, (**value).clone()));
            }
        }
    });
    // A pointer local has the root of every value it is given, or none: found a link of
    // a chain (`let q = p + 1`) a round.
    let mut roots = params.clone();
    for _ in 0..=given.len() {
        let mut named: HashMap<LocalId, Option<Root>> = HashMap::new();
        for (id, value) in &given {
            if let Some(Ty::Ptr { .. }) = body.local(*id).ty {
                let root = root_of(value, &roots);
                let entry = named.entry(*id).or_insert_with(|| root.clone());
                if *entry != root {
                    *entry = None;
                }
            }
        }
        let next: HashMap<LocalId, Root> = params
            .clone()
            .into_iter()
            .chain(named.into_iter().filter_map(|(id, r)| Some((id, r?))))
            .collect();
        if next == roots {
            break;
        }
        roots = next;
    }
    let mut mark = |e: &mut Expr| match &mut e.kind {
        ExprKind::Index(base, _, check)
        | ExprKind::Vector { base, check, .. }
        | ExprKind::Atomic(_, base, _, check) => {
            let root = root_of(base, &roots);
            if root.is_none() {
                errors.push(Diag::new(base.span, UNNAMED_ARRAY));
            }
            *check = Check::Checked(root);
        }
        ExprKind::Call(_, args, call_roots) => {
            *call_roots = args
                .iter()
                .map(|a| {
                    let Ty::Ptr { .. } = a.ty else { return None };
                    let root = root_of(a, &roots);
                    if root.is_none() {
                        errors.push(Diag::new(a.span, UNNAMED_ARRAY));
                    }
                    root
                })
                .collect();
        }
        _ => {}
    };
    crate::ir::visit_exprs_mut(&mut f.stmts, &mut mark);
    if let Some(v) = &mut f.value {
        crate::ir::visit_expr_mut(v, &mut mark);
    }
}

/// The extent each root is known to have: checked by the detour, or created.
struct Extents {
    /// A number: a created array's length, or the largest extent of the types of literal
    /// sizes it is indexed as.
    known: HashMap<Root, u64>,
    /// For an array given to the detour, the extent of each type it is indexed as, as a
    /// polynomial of the run-time sizes: it holds each, at every binding.
    sizes: HashMap<Root, Vec<Poly>>,
}

impl Extents {
    fn of(body: &Body, facts: &Facts) -> Extents {
        // The extents of the run-time types, from their forms.
        let mut of_forms: HashMap<String, Poly> = HashMap::new();
        visit_exprs(&body.stmts, &mut |e| {
            if let ExprKind::GenericOffset {
                ty, sizes: Some(s), ..
            } = &e.kind
            {
                of_forms.insert(ty.clone(), s.extent.clone());
            }
        });
        let mut out = Extents {
            known: HashMap::new(),
            sizes: HashMap::new(),
        };
        for u in &facts.uses {
            if let Root::Local(id) = &u.root {
                if let Some(&len) = facts.created.get(id) {
                    out.known.insert(u.root.clone(), len);
                    continue;
                }
            }
            if let Some(e) = u.indexed_as.iter().filter_map(|t| t.extent).max() {
                out.known.insert(u.root.clone(), e);
            }
            let sizes = u.indexed_as.iter().filter_map(|t| match t.extent {
                Some(e) => Some(Poly::constant(i128::from(e))),
                None => of_forms.get(&t.type_name).cloned(),
            });
            out.sizes.insert(u.root.clone(), sizes.collect());
        }
        out
    }
}

/// The kernel parameters the body reads from constant memory, with their extents: those
/// it indexes as cmem types, which must be all the types it indexes them as, and which it
/// must not write. Anything else indexed as a cmem type is an error in `errors`.
fn constants(body: &Body, roots: &[RootUse], errors: &mut Vec<Diag>) -> Vec<(LocalId, u64)> {
    let mut out = Vec::new();
    for use_ in roots {
        let Some(cmem) = use_.indexed_as.iter().find(|t| t.constant) else {
            continue;
        };
        let (t, span) = (&cmem.type_name, use_.span);
        let param = match &use_.root {
            Root::Local(id) if body.params.iter().any(|(_, p)| p == id) => Some(*id),
            _ => None,
        };
        let fail = match (use_.indexed_as.iter().find(|o| !o.constant), param) {
            (Some(other), _) => format!(
                "this array is indexed as `{t}`, in constant memory (cmem), and as `{}`, which is not: \
                 a kernel reads an array from one memory",
                other.type_name
            ),
            _ if use_.written => format!(
                "`{t}` is in constant memory (cmem), which a kernel only reads: declare it dmem to write it"
            ),
            (None, Some(id)) if body.target == Target::Cuda => {
                let extent = use_.indexed_as.iter().filter_map(|t| t.extent).max();
                out.push((id, extent.unwrap_or(0)));
                continue;
            }
            _ => format!(
                "`{t}` is in constant memory (cmem), which cuda kernels read from their parameters: pass the array to a cuda detour"
            ),
        };
        errors.push(Diag::new(span, fail));
    }
    out
}

/// Replaces each [`Stmt::Vectorised`] by its vector loop when every vector access in it is
/// proved aligned and its guard (if any) true for every element, else by its element loop.
fn choose_vectors(stmts: &mut [Stmt], facts: &mut Facts) {
    in_loops(stmts, facts, &mut choose_vector);
}

/// [`choose_vectors`] of one statement (not of those inside it).
fn choose_vector(s: &mut Stmt, facts: &mut Facts) {
    if let Stmt::Vectorised {
        vector,
        scalar,
        guard,
        loc,
    } = s
    {
        let mut aligned = true;
        visit_exprs(vector.iter(), &mut |e| {
            if let ExprKind::Vector {
                base, at, lanes, ..
            } = &e.kind
            {
                aligned &= facts.aligned(base, at, *lanes);
            }
        });
        let one = |mut keep: Vec<Stmt>| match keep.len() {
            1 => keep.pop().expect("one statement"),
            _ => Stmt::Block {
                body: keep,
                loc: *loc,
            },
        };
        // The moves without a guard: vectors where aligned.
        let mut fast = |g: Option<&mut Guard>| match (aligned, g) {
            (true, _) => std::mem::take(vector),
            (false, Some(g)) => std::mem::take(&mut g.unguarded),
            (false, None) => std::mem::take(scalar),
        };
        *s = match guard {
            None => one(fast(None)),
            Some(g) if facts.always(g) => one(fast(Some(g))),
            // Where the guard only grows with the digits: the moves without it when
            // it holds at their largest values (a tile inside the data), else the
            // guarded ones: vector by vector where the vectors are aligned and their
            // lanes ordered digits (`copy::per_vector`), else element by element.
            // Where, besides, every vector lies wholly inside the data or wholly
            // outside: one test a vector (`copy::whole_vectors`), predicated in C, for
            // every tile. On the GPU, element by element is the guarded loop alone,
            // each element's move predicated: the test of the tile and its branch cost
            // more than they save (the SGEMM at 1000 x 999 x 777, kernel alone on an
            // H200: 59.5 us with them, 53.0 without).
            Some(g) if facts.grows_with_digits(g) => {
                let whole = g.whole.take().filter(|w| aligned && facts.lanes_agree(w));
                let per_vector = std::mem::take(&mut g.per_vector);
                let by_vectors = aligned && !per_vector.is_empty();
                match whole {
                    Some(whole) => one(whole.moves),
                    None if !by_vectors && facts.body.target == Target::Cuda => {
                        one(std::mem::take(scalar))
                    }
                    None => Stmt::If {
                        cond: g.at_most.clone(),
                        then: fast(Some(g)),
                        els: Some(match by_vectors {
                            true => per_vector,
                            false => std::mem::take(scalar),
                        }),
                        loc: *loc,
                    },
                }
            }
            Some(_) => one(std::mem::take(scalar)),
        };
    }
}

/// Applies `visit` to each statement of `stmts` and then to those inside it (as `visit`
/// left it), each loop's body with the loop's variable at its own range: two loops may
/// share a variable (a `#copy`'s vector loop and its element loop), so the range the
/// forward walk left last is not each loop's.
fn in_loops(stmts: &mut [Stmt], facts: &mut Facts, visit: &mut dyn FnMut(&mut Stmt, &mut Facts)) {
    for s in stmts {
        visit(s, facts);
        let own = facts.loop_range(s);
        facts.narrowed(own, |facts| {
            s.for_each_part_mut(&mut |part| {
                if let crate::ir::PartMut::Body(b) = part {
                    in_loops(b, facts, visit);
                }
            })
        });
    }
}

/// The locals `body` assigns anywhere.
fn assigned_locals(body: &Body) -> std::collections::HashSet<LocalId> {
    let mut out = std::collections::HashSet::new();
    visit_exprs(&body.stmts, &mut |e| {
        if let ExprKind::Assign(_, place, _) = &e.kind {
            if let ExprKind::Local(id) = place.kind {
                out.insert(id);
            }
        }
    });
    out
}

/// Replaces each `if` whose condition the intervals decide (`if $dim(T_0)$ == 1` at a
/// size the specialisation folded) by the branch it takes: a kernel holds no code it
/// never runs.
fn drop_decided_branches(stmts: &mut [Stmt], facts: &mut Facts) {
    in_loops(stmts, facts, &mut |s, facts| {
        if let Stmt::If {
            cond, then, els, ..
        } = s
        {
            let taken = match facts.decided(cond) {
                Some(true) => Some(std::mem::take(then)),
                Some(false) => Some(els.take().unwrap_or_default()),
                None => None,
            };
            if let Some(body) = taken {
                *s = Stmt::Block { body, loc: s.loc() };
            }
        }
    });
}

/// Low bits known to be zero in a value are counted up to this: enough for every
/// vector's lanes and for a wgmma tile's start (1024 bytes, 512 two-byte elements).
const TWOS: u32 = 16;

/// The low zero bits of `v` (all, for 0), up to [`TWOS`].
fn twos_of_constant(v: u128) -> u32 {
    if v == 0 {
        TWOS
    } else {
        v.trailing_zeros().min(TWOS)
    }
}

/// An inclusive range of values.
type Interval = (i128, i128);

/// A local's values inside a loop's body or an `if`'s branch.
enum Narrowed {
    Numbers(Interval),
    /// Up to a size given at run time.
    Sized(Range),
}

/// Where a pointer-valued expression points: its root, its displacement from the root's
/// first element when known, the low zero bits known of that displacement (whatever it
/// is), the same displacement as a sum (for the proofs under a guard) when known, and
/// the types of the forms that displaced it.
#[derive(Debug, Clone)]
struct Place {
    root: Root,
    displacement: Option<Interval>,
    linear: Option<Linear>,
    twos: u32,
    types: Vec<Indexed>,
}

impl Place {
    fn at(root: Root, displacement: Option<Interval>) -> Place {
        Place {
            root,
            linear: (displacement == Some((0, 0))).then(Linear::default),
            displacement,
            twos: TWOS,
            types: Vec::new(),
        }
    }
}

/// What the forward walk learned: ranges and low zero bits of integer locals, places of
/// pointer locals, created arrays, and what each root is used for.
struct Facts<'b> {
    body: &'b Body,
    ranges: HashMap<LocalId, Interval>,
    /// Immutable integer locals and loop variables bounded by a size given at run time.
    sized: HashMap<LocalId, Range>,
    twos: HashMap<LocalId, u32>,
    places: HashMap<LocalId, Place>,
    /// For each pointer local the body assigns: the low zero bits every value it is
    /// assigned has (an assumption for the walk, which [`Facts::analyse`] makes true).
    assigned_twos: HashMap<LocalId, u32>,
    created: HashMap<LocalId, u64>,
    /// For each immutable integer local, the forms its value was computed from.
    local_forms: HashMap<LocalId, Vec<Indexed>>,
    /// Immutable integer locals whose values are sums ([`Linear`]).
    sums: HashMap<LocalId, Linear>,
    /// The locals the body assigns (`i = ..`, `i += ..`): none is an [`Atom`].
    assigned: std::collections::HashSet<LocalId>,
    /// While marking: what the enclosing `if`s' conditions say in their branches, as
    /// `sum <= bound`.
    guards: Vec<(Linear, i128)>,
    uses: Vec<RootUse>,
}

impl<'b> Facts<'b> {
    fn new(body: &'b Body, assigned_twos: HashMap<LocalId, u32>) -> Self {
        let mut facts = Facts {
            body,
            ranges: HashMap::new(),
            sized: HashMap::new(),
            twos: HashMap::new(),
            places: HashMap::new(),
            assigned_twos,
            created: HashMap::new(),
            local_forms: HashMap::new(),
            sums: HashMap::new(),
            assigned: assigned_locals(body),
            guards: Vec::new(),
            uses: Vec::new(),
        };
        for (param, local) in &body.params {
            if param.pointer {
                let displacement = (!body.assigns(*local)).then_some((0, 0));
                let mut place = Place::at(Root::Local(*local), displacement);
                place.twos = facts.assigned_twos.get(local).copied().unwrap_or(TWOS);
                facts.places.insert(*local, place);
            }
        }
        facts
    }

    /// The facts of `body`: the forward walk, repeated until the low zero bits assumed of
    /// each assigned pointer hold for every value assigned to it (they only decrease).
    fn analyse(body: &'b Body) -> Self {
        let mut assumed = HashMap::new();
        loop {
            let mut facts = Facts::new(body, assumed);
            facts.stmts(&body.stmts);
            facts.forget_reassigned_roots();
            let found = facts.assigned_pointer_twos();
            if found == facts.assigned_twos {
                return facts;
            }
            assumed = found;
        }
    }

    /// For each pointer local the body assigns, the low zero bits of every value assigned
    /// to it, and of what was assumed (`p = q + e`: those of `q` and `e`; `p += e`: those
    /// of `p` and `e`).
    fn assigned_pointer_twos(&self) -> HashMap<LocalId, u32> {
        let mut out = self.assigned_twos.clone();
        visit_exprs(&self.body.stmts, &mut |e| {
            let ExprKind::Assign(op, place, value) = &e.kind else {
                return;
            };
            let ExprKind::Local(id) = place.kind else {
                return;
            };
            let Some(now) = self.places.get(&id).map(|p| p.twos) else {
                return;
            };
            let t = match op {
                None => self.place(value).map_or(0, |p| p.twos),
                Some(BinOp::Add) => now.min(self.twos_of(value)),
                Some(_) => 0,
            };
            let entry = out.entry(id).or_insert(TWOS);
            *entry = (*entry).min(t);
        });
        out
    }

    /// Whether an `ldmatrix` (`stmatrix`) of rows `base + at` whose per-thread moves are
    /// `scalar` (marked) is kept ([`Stmt::Matrices`]): `base` is a shared array the body
    /// created (named: the C declares it 16-byte aligned), every lane's row starts at a
    /// multiple of 8 elements (16 bytes) of it, and every move is proved in bounds (the
    /// warp's rows hold the moves' elements, `copy::matrices`).
    fn by_rows(&self, base: &Expr, at: &Expr, scalar: &[Stmt]) -> bool {
        let shared = match base.kind {
            ExprKind::Local(id) => matches!(
                self.body.local(id).ty,
                Some(Ty::Array {
                    mem: parray_layout::MemKind::Smem,
                    ..
                })
            ),
            _ => false,
        };
        let mut proved = true;
        visit_exprs(scalar, &mut |e| {
            if let ExprKind::Index(_, _, check) = &e.kind {
                proved &= matches!(check, Check::Proved);
            }
        });
        shared && proved && self.aligned(base, at, 8)
    }

    /// Proves that a wgmma's tile `tile` (a shared array plus an offset) holds every element
    /// the tensor core reads of it (`offsets`, from the tile's start) and starts where its
    /// `descriptor` allows, else says so: the instruction reads shared memory by its
    /// descriptor, past any check a body's accesses have, and its swizzle acts on absolute
    /// address bits, so an unproved tile is a compile error. A K-major swizzled tile may
    /// also start at an aligned place plus a step within its atom's first row
    /// ([`Descriptor::step_within_row`]): `sa + $AS[..]$ + 16 * s`, the aligned part proved
    /// with the whole rows its tile reads, the step's values multiples of 16 bytes within
    /// the row (its interval and low zero bits).
    fn tile_within(
        &self,
        tile: &Expr,
        offsets: &[u32],
        descriptor: &Descriptor,
        what: &str,
        proof: &mut Proof,
    ) {
        let reach = offsets.iter().copied().max().map_or(0, i128::from);
        let alignment = descriptor.alignment();
        // bf16 or half: 2 bytes an element.
        let mut outcome = self.region_within(tile, reach, 2, alignment);
        let row_step = descriptor.step_within_row();
        if let (Err(_), true, ExprKind::Binary(BinOp::Add, base, step)) =
            (&outcome, row_step > 0, &tile.kind)
        {
            let steps = self.interval(step).filter(|&(lo, hi)| {
                lo >= 0 && 2 * hi <= i128::from(row_step) && self.twos_of(step) >= 3
            });
            // The step stays within each row the aligned tile reads, and the swizzle
            // permutes a row's chunks: the reads are those rows, to the last one's end.
            if steps.is_some() {
                let row = i128::from(descriptor.swizzle.row_bytes() / 2);
                outcome = self.region_within(base, (reach / row + 1) * row - 1, 2, alignment);
            }
        }
        match outcome {
            Ok(()) => {}
            Err(Region::Outside(extent)) => proof.errors.push(Diag::new(
                tile.span,
                format!("{what} of this wgmma is not proved inside its shared array: the tensor core reads elements up to {reach} past this start, all of which must lie within {extent} elements for every thread (a wgmma's reads are not checked at run time); start the tile at a `$...$` form of the array's type whose indices stay inside their dimensions, e.g. `sa + $AS[st][0][2 * s][0][0]$` with `st = kt % 2` and `s` in `0..4`"),
            )),
            Err(Region::Misaligned(start_bytes)) => {
                let within = match row_step {
                    0 => String::new(),
                    step => format!(", or such a start plus a k-step of 16-byte units up to {step} bytes within its atom's first row (`sa + $AS[st][0][0]$ + 16 * s` with `s` in `0..4`)"),
                };
                proof.errors.push(Diag::new(
                    tile.span,
                    format!("{what} of this wgmma is not proved to start at a multiple of {alignment} bytes from its shared array's start (only of {start_bytes}){within}: its descriptor addresses 16-byte units and its swizzle acts on absolute address bits, so a tile must start where its type's pattern does; step through a K-major swizzled tile by its k-steps within the first row, an unswizzled tile of core matrices, or an MN-major swizzled one by whole rows of its atoms (SPEC 3.5, \"Alignment and the k-step\")"),
                ));
            }
        }
    }

    /// Proves that a TMA copy's box (`dst`, a shared array plus an offset, and the `n`
    /// elements of `elem_bytes` after it) lies inside its array and starts at a multiple of
    /// `alignment` bytes of it, and that its barrier `bar` is an element of its array,
    /// else says so (SPEC 3.9, "TMA copies"): TMA writes the box and arrives on the barrier
    /// past any check a body's accesses have, so an unproved box is a compile error.
    fn box_within(
        &self,
        dst: &Expr,
        (n, elem_bytes, alignment): (u64, u64, u64),
        proof: &mut Proof,
    ) {
        let reach = i128::from(n) - 1;
        match self.region_within(dst, reach, elem_bytes, alignment) {
            Ok(()) => {}
            Err(Region::Outside(extent)) => proof.errors.push(Diag::new(
                dst.span,
                format!("the box of this TMA copy is not proved inside its shared array: TMA writes {n} elements from this start, all of which must lie within {extent} elements for every thread (a TMA copy's writes are not checked at run time); start the stage at a `$...$` form of the array's type whose indices stay inside their dimensions, e.g. `st + $STAGES[64 * (k % 3)][0]$`"),
            )),
            Err(Region::Misaligned(start_bytes)) => proof.errors.push(Diag::new(
                dst.span,
                format!("the box of this TMA copy is not proved to start at a multiple of {alignment} bytes from its shared array's start (only of {start_bytes}): TMA writes a box at a multiple of 128 bytes, of the swizzle's 2^(7+B) where it swizzles, whose pattern acts on absolute address bits"),
            )),
        }
    }

    /// Proves that the barrier operand `bar` of a TMA form (a shared array of mbarriers
    /// plus an offset) is an element of its array, else says so.
    fn barrier_within(&self, bar: &Expr, proof: &mut Proof) {
        if let Err(Region::Outside(extent)) = self.region_within(bar, 0, 8, 8) {
            proof.errors.push(Diag::new(
                bar.span,
                format!("this mbarrier is not proved to lie within {extent} elements of its array for every thread (the barrier forms are not checked at run time): index the barriers with a value below their number, e.g. `full + k % S`"),
            ));
        }
    }

    /// Whether `reach` elements past `start` (a shared array the body created plus an
    /// offset) lie in the array, and `start` is `alignment` bytes aligned from the
    /// array's (elements of `elem_bytes`); else why not.
    fn region_within(
        &self,
        start: &Expr,
        reach: i128,
        elem_bytes: u64,
        alignment: u64,
    ) -> Result<(), Region> {
        let place = self.place(start);
        // The region's array is one the body created (the type check says so).
        let extent = place.as_ref().and_then(|p| match p.root {
            Root::Local(id) => self.created.get(&id).copied(),
            _ => None,
        });
        let within = place.as_ref().zip(extent).is_some_and(|(p, n)| {
            let n = i128::from(n);
            let by_intervals = p
                .displacement
                .is_some_and(|(lo, hi)| lo >= 0 && hi + reach < n);
            // Else its start as a sum of the loop's values (`s + $T[0][16 * k]$`).
            let by_sums = || {
                let last = p.linear.clone()?.add_scaled(&Linear::constant(reach), 1);
                Some(self.within_under_guards(&last, n))
            };
            by_intervals || by_sums() == Some(true)
        });
        if !within {
            let extent = extent.map_or("its".to_string(), |n| format!("its {n}"));
            return Err(Region::Outside(extent));
        }
        let start_bytes = elem_bytes
            .checked_shl(place.map_or(0, |p| p.twos))
            .unwrap_or(u64::MAX);
        if start_bytes < alignment {
            return Err(Region::Misaligned(start_bytes));
        }
        Ok(())
    }

    /// Whether the vector access `base.load{lanes}(at)` (or its store) is known to start at
    /// a multiple of `lanes` from its root's start.
    fn aligned(&self, base: &Expr, at: &Expr, lanes: u8) -> bool {
        let need = u32::from(lanes).trailing_zeros();
        self.place(base)
            .is_some_and(|p| p.twos.min(self.twos_of(at)) >= need)
    }

    /// The low bits known to be zero in the value of an integer expression (up to
    /// [`TWOS`]); they stay zero when the arithmetic wraps.
    fn twos_of(&self, e: &Expr) -> u32 {
        let t = match &e.kind {
            ExprKind::Lit(Lit::Int(v, _)) => twos_of_constant(*v),
            ExprKind::Size(n) => twos_of_constant(u128::from(*n)),
            ExprKind::Local(id) => self.twos.get(id).copied().unwrap_or(0),
            ExprKind::Offset { off, args, .. } => form_twos(&off.expr, &|v| {
                args.get(v.0 as usize).map_or(0, |a| self.twos_of(a))
            }),
            ExprKind::Cast(x, s) if s.is_int() => self.twos_of(x),
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (self.twos_of(l), self.twos_of(r));
                match op {
                    BinOp::Add | BinOp::Sub | BinOp::Rem | BinOp::BitOr | BinOp::BitXor => a.min(b),
                    BinOp::Mul => a + b,
                    BinOp::BitAnd => a.max(b),
                    BinOp::Shl => match &r.kind {
                        ExprKind::Lit(Lit::Int(k, _)) => a.saturating_add(*k as u32),
                        _ => a,
                    },
                    _ => 0,
                }
            }
            ExprKind::Select(_, a, b) => self.twos_of(a).min(self.twos_of(b)),
            _ => 0,
        };
        t.min(TWOS)
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        match s {
            Stmt::Let {
                local,
                init: Some(init),
                ..
            } => {
                self.uses_in(init);
                let fixed = !self.body.assigns(*local);
                // A pointer, or in a pthd body a value computed from a capture (rustc
                // types it; it counts only where it is indexed).
                if matches!(init.ty, Ty::Ptr { .. } | Ty::Host) {
                    if let Some(mut place) = self.place(init) {
                        if !fixed {
                            place.displacement = None;
                            let assumed = self.assigned_twos.get(local).copied();
                            place.twos = place.twos.min(assumed.unwrap_or(TWOS));
                        }
                        self.places.insert(*local, place);
                    }
                } else if fixed {
                    if let Some(r) = self.interval(init) {
                        self.ranges.insert(*local, r);
                    } else if let Some(r) = self.range(init) {
                        self.sized.insert(*local, r);
                    }
                    if let Some(sum) = self.linear(init) {
                        self.sums.insert(*local, sum);
                    }
                    let mut types = Vec::new();
                    forms(init, &self.local_forms, &mut types);
                    if !types.is_empty() {
                        self.local_forms.insert(*local, types);
                    }
                    self.twos.insert(*local, self.twos_of(init));
                }
            }
            Stmt::Create { local, len, .. } => {
                // An array sized at run time is known by the types it is indexed as (a
                // specialised body's is a number).
                if let Some(len) = len.fixed() {
                    self.created.insert(*local, len);
                }
                self.places
                    .insert(*local, Place::at(Root::Local(*local), Some((0, 0))));
            }
            Stmt::For {
                var,
                start,
                end,
                inclusive,
                body,
                ..
            } => {
                self.uses_in(start);
                self.uses_in(end);
                match self.for_range(start, end, *inclusive) {
                    Some(Narrowed::Numbers(r)) => {
                        self.ranges.insert(*var, r);
                    }
                    Some(Narrowed::Sized(r)) => {
                        self.sized.insert(*var, r);
                    }
                    None => {}
                }
                self.stmts(body);
            }
            Stmt::If {
                cond, then, els, ..
            } => {
                self.uses_in(cond);
                let guard = self.guard(cond);
                self.narrowed(guard, |facts| facts.stmts(then));
                if let Some(els) = els {
                    self.stmts(els);
                }
            }
            Stmt::While { cond, body, .. } => {
                self.uses_in(cond);
                let stride = self.stride_loop(cond, body);
                self.narrowed(stride, |facts| facts.stmts(body));
            }
            other => other.for_each_part(&mut |part| match part {
                crate::ir::Part::Expr(e) => self.uses_in(e),
                crate::ir::Part::Body(b) => self.stmts(b),
            }),
        }
    }

    /// The values of a `for` loop's variable in its body, from its start and end.
    fn for_range(&self, start: &Expr, end: &Expr, inclusive: bool) -> Option<Narrowed> {
        match (self.interval(start), self.interval(end)) {
            (Some((lo, _)), Some((_, hi))) => {
                let hi = if inclusive { hi } else { hi - 1 };
                Some(Narrowed::Numbers((lo, hi.max(lo))))
            }
            (Some((lo, _)), None) => self
                .range(end)
                .and_then(|e| Range::until(lo, &e, inclusive))
                .map(Narrowed::Sized),
            _ => None,
        }
    }

    /// The range of a loop's variable inside its body: a `for` loop's own, or a stride
    /// loop's ([`Facts::stride_loop`]); `None` for any other statement.
    fn loop_range(&self, s: &Stmt) -> Option<(LocalId, Narrowed)> {
        match s {
            Stmt::While { cond, body, .. } => self.stride_loop(cond, body),
            Stmt::For {
                var,
                start,
                end,
                inclusive,
                ..
            } => self.for_range(start, end, *inclusive).map(|r| (*var, r)),
            _ => None,
        }
    }

    /// The range of the variable of a stride loop, `while i < end { ...; i += step; }`,
    /// inside its body: `0..end` when `i` is unsigned, `end` is bounded, by numbers or a
    /// size given at run time (and does not depend on `i`), the body ends with `i += step`
    /// (`step >= 0`), and that is the only assignment to `i` in the whole body. Then `i`
    /// only grows, from wherever it started, and the body runs only while `i < end`, before
    /// its last statement changes `i`.
    fn stride_loop(&self, cond: &Expr, body: &[Stmt]) -> Option<(LocalId, Narrowed)> {
        let ExprKind::Binary(BinOp::Lt, var, end) = &cond.kind else {
            return None;
        };
        let i = unsigned_local(var)?;
        let Some(Stmt::Expr { expr: last, .. }) = body.last() else {
            return None;
        };
        let steps = matches!(&last.kind, ExprKind::Assign(Some(BinOp::Add), place, step)
            if matches!(place.kind, ExprKind::Local(id) if id == i)
                && self.interval(step).is_some_and(|(lo, _)| lo >= 0));
        if !steps || self.assignments(i) != 1 {
            return None;
        }
        match self.interval(end) {
            Some((_, hi)) => (hi >= 1).then_some((i, Narrowed::Numbers((0, hi - 1)))),
            None => Some((
                i,
                Narrowed::Sized(Range::until(0, &self.range(end)?, false)?),
            )),
        }
    }

    /// The range of `i` in the branch an `if i < end` (or `i <= end`) takes: below the
    /// bound, when `i` is an unsigned integer local that nothing assigns (a `let`, or a
    /// `for` variable within one iteration) and `end` is bounded, by numbers or a size
    /// given at run time. So `if k < n { .. }` guards the accesses of a tail as the prover
    /// sees them.
    fn guard(&self, cond: &Expr) -> Option<(LocalId, Narrowed)> {
        let (var, end, inclusive) = match &cond.kind {
            ExprKind::Binary(BinOp::Lt, var, end) => (var, end, false),
            ExprKind::Binary(BinOp::Le, var, end) => (var, end, true),
            _ => return None,
        };
        let i = unsigned_local(var)?;
        if self.assignments(i) != 0 {
            return None;
        }
        let Some((_, end_hi)) = self.interval(end) else {
            // Below a size given at run time (besides any numbers `i` has).
            let lo = match (self.ranges.get(&i), self.sized.get(&i)) {
                (Some(&(lo, _)), _) => lo,
                (None, Some(r)) => r.lo,
                (None, None) => 0,
            };
            let r = Range::until(lo, &self.range(end)?, inclusive)?;
            return Some((i, Narrowed::Sized(r)));
        };
        let below = if inclusive { end_hi } else { end_hi - 1 };
        let (lo, hi) = self.ranges.get(&i).copied().unwrap_or((0, below));
        (below >= lo).then_some((i, Narrowed::Numbers((lo, hi.min(below)))))
    }

    /// How many assignments (`i = ..`, `i += ..`) the body makes to the local `i`.
    fn assignments(&self, i: LocalId) -> usize {
        let mut n = 0;
        visit_exprs(&self.body.stmts, &mut |e| {
            if let ExprKind::Assign(_, place, _) = &e.kind {
                n += usize::from(matches!(place.kind, ExprKind::Local(id) if id == i));
            }
        });
        n
    }

    /// Runs `walk` with a local narrowed to its values in a loop's body or a branch.
    fn narrowed(&mut self, narrow: Option<(LocalId, Narrowed)>, walk: impl FnOnce(&mut Self)) {
        fn restore<T>(map: &mut HashMap<LocalId, T>, i: LocalId, outside: Option<T>) {
            match outside {
                Some(r) => map.insert(i, r),
                None => map.remove(&i),
            };
        }
        match narrow {
            None => walk(self),
            Some((i, Narrowed::Numbers(range))) => {
                let outside = self.ranges.insert(i, range);
                walk(self);
                restore(&mut self.ranges, i, outside);
            }
            Some((i, Narrowed::Sized(range))) => {
                let outside = self.sized.insert(i, range);
                walk(self);
                restore(&mut self.sized, i, outside);
            }
        }
    }

    /// A pointer local assigned (`p = q`) a pointer into another array than its first has
    /// no one root: forget it (its accesses are checked by the handle on the CPU, and
    /// cannot be on a GPU).
    fn forget_reassigned_roots(&mut self) {
        let mut assigned = Vec::new();
        visit_exprs(&self.body.stmts, &mut |e| {
            if let ExprKind::Assign(None, place, value) = &e.kind {
                if let ExprKind::Local(id) = place.kind {
                    assigned.push((id, (**value).clone()));
                }
            }
        });
        for (id, value) in assigned {
            let Some(root) = self.places.get(&id).map(|p| p.root.clone()) else {
                continue;
            };
            if self.place(&value).is_none_or(|p| p.root != root) {
                self.places.remove(&id);
            }
        }
    }

    /// Records the roots that `e` indexes, writes and indexes as which types.
    fn uses_in(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Index(base, at, _) => self.access(base, Some(at), false, 0),
            ExprKind::Vector {
                base, at, lanes, ..
            } => self.access(base, Some(at), false, *lanes),
            ExprKind::Assign(_, place, _) => match &place.kind {
                ExprKind::Index(base, at, _) => self.access(base, Some(at), true, 0),
                // A field of a record element (`p[i].vel = v`, `p[i].pos.x = v`).
                ExprKind::Field(..) => {
                    if let Some((element, _)) = place.element_field() {
                        if let ExprKind::Index(base, at, _) = &element.kind {
                            self.access(base, Some(at), true, 0)
                        }
                    }
                }
                ExprKind::Vector {
                    base, at, lanes, ..
                } => self.access(base, Some(at), true, *lanes),
                _ => {}
            },
            ExprKind::Atomic(_, p, _, _) => self.access(p, None, true, 0),
            // A pointer passed to a function is written where the function may write it.
            ExprKind::Call(f, args, _) => {
                let function = &self.body.functions[*f];
                for (a, p) in args.iter().zip(&function.params) {
                    if let Ty::Ptr { .. } = a.ty {
                        self.access(a, None, function.writable.contains(p), 0);
                    }
                }
            }
            _ => {}
        }
        e.for_each_child(&mut |c| self.uses_in(c));
    }

    fn access(&mut self, base: &Expr, at: Option<&Expr>, written: bool, lanes: u8) {
        let Some(Place {
            root, mut types, ..
        }) = self.place(base)
        else {
            return;
        };
        if let Some(at) = at {
            forms(at, &self.local_forms, &mut types);
        }
        let use_ = match self.uses.iter_mut().position(|u| u.root == root) {
            Some(i) => &mut self.uses[i],
            None => {
                self.uses.push(RootUse {
                    root,
                    written: false,
                    indexed_as: Vec::new(),
                    lanes: 0,
                    span: base.span,
                });
                self.uses.last_mut().expect("just pushed")
            }
        };
        use_.written |= written;
        use_.lanes = use_.lanes.max(lanes);
        for t in types {
            if !use_.indexed_as.contains(&t) {
                use_.indexed_as.push(t);
            }
        }
    }

    /// Where a pointer-valued expression points.
    fn place(&self, e: &Expr) -> Option<Place> {
        match &e.kind {
            ExprKind::Local(id) => self.places.get(id).cloned(),
            ExprKind::Capture(name) => Some(Place::at(Root::Capture(name.clone()), Some((0, 0)))),
            ExprKind::Binary(BinOp::Add, l, r) => {
                let mut p = self.place(l)?;
                p.displacement = p
                    .displacement
                    .zip(self.interval(r))
                    .map(|(a, b)| (a.0 + b.0, a.1 + b.1));
                p.linear = p
                    .linear
                    .zip(self.linear(r))
                    .map(|(a, b)| a.add_scaled(&b, 1));
                p.twos = p.twos.min(self.twos_of(r));
                forms(r, &self.local_forms, &mut p.types);
                Some(p)
            }
            _ => None,
        }
    }

    /// Whether a guarded copy's guard holds for every value of its digits (each below its
    /// size): the intervals decide it true.
    fn always(&mut self, guard: &Guard) -> bool {
        self.at_digits(guard, |facts| facts.decided(&guard.pred) == Some(true))
    }

    /// `f` of the facts with each digit of `guard` in its element loop's range, below its
    /// size (a one-dimensional copy's digit is `k`, which its vector loop shares).
    fn at_digits<T>(&mut self, guard: &Guard, f: impl FnOnce(&Self) -> T) -> T {
        let outside: Vec<_> = guard
            .digits
            .iter()
            .map(|&(d, size)| (d, self.ranges.insert(d, (0, size as i128 - 1))))
            .collect();
        let out = f(self);
        for (d, range) in outside {
            match range {
                Some(r) => self.ranges.insert(d, r),
                None => self.ranges.remove(&d),
            };
        }
        out
    }

    /// Whether a guarded copy's guard at a vector's first lane and at its last agree for
    /// every vector: each comparison of the two is the same, or is `a < b` (or `b > a`)
    /// at the first lane and `a + (w - 1) < b` at the last, with `w` (the lanes, a power
    /// of two) dividing both `a` and `b` (their low zero bits), so that `a < b` implies
    /// `a + w - 1 < b`.
    fn lanes_agree(&mut self, whole: &WholeVectors) -> bool {
        let Some(need) = whole
            .lanes
            .is_power_of_two()
            .then(|| whole.lanes.trailing_zeros())
        else {
            return false;
        };
        // The vector loop's variable ranges over the vectors while the sums are taken.
        let outside = whole
            .vector
            .map(|(v, count)| (v, self.ranges.insert(v, (0, i128::from(count) - 1))));
        let agree = self.comparisons_agree(&whole.first, &whole.last, whole.lanes, need);
        if let Some((v, range)) = outside {
            match range {
                Some(r) => self.ranges.insert(v, r),
                None => self.ranges.remove(&v),
            };
        }
        agree
    }

    /// [`Facts::lanes_agree`] of one condition at the first lane and at the last.
    fn comparisons_agree(&self, first: &Expr, last: &Expr, lanes: u64, need: u32) -> bool {
        fn sides(e: &Expr) -> Option<(&Expr, &Expr)> {
            match &e.kind {
                ExprKind::Binary(BinOp::Lt, a, b) | ExprKind::Binary(BinOp::Gt, b, a) => {
                    Some((a, b))
                }
                _ => None,
            }
        }
        match (&first.kind, &last.kind) {
            (ExprKind::Binary(BinOp::And, a0, b0), ExprKind::Binary(BinOp::And, a1, b1)) => {
                self.comparisons_agree(a0, a1, lanes, need)
                    && self.comparisons_agree(b0, b1, lanes, need)
            }
            _ => {
                let (Some((a0, b0)), Some((a1, b1))) = (sides(first), sides(last)) else {
                    return false;
                };
                let (Some(a0l), Some(b0l), Some(a1l), Some(b1l)) = (
                    self.linear(a0),
                    self.linear(b0),
                    self.linear(a1),
                    self.linear(b1),
                ) else {
                    return false;
                };
                let step = a1l.add_scaled(&a0l, -1);
                if !step.terms.is_empty() || b1l.add_scaled(&b0l, -1) != Linear::default() {
                    return false;
                }
                match step.konst {
                    0 => true,
                    s => {
                        s == lanes as i128 - 1
                            && self.twos_of(a0) >= need
                            && self.twos_of(b0) >= need
                    }
                }
            }
        }
    }

    /// Whether a guard holds wherever it holds at its digits' largest values: it is
    /// comparisons `a < b` (or `<=`, `>`, `>=`) of sums joined by `&&`, and in each the
    /// smaller side less the larger has no negative multiple of a digit (or of the index
    /// the digits are of).
    fn grows_with_digits(&mut self, guard: &Guard) -> bool {
        self.at_digits(guard, |facts| facts.grows_at_digits(guard))
    }

    /// [`Facts::grows_with_digits`], with the digits at their ranges.
    fn grows_at_digits(&self, guard: &Guard) -> bool {
        let mut said = Vec::new();
        if !self.facts_of(&guard.pred, &mut said) {
            return false;
        }
        // A XOR does not grow with its operands.
        if said
            .iter()
            .any(|(l, _)| l.terms.keys().any(|a| matches!(a, Atom::Xor(..))))
        {
            return false;
        }
        let of_digits = |a: &Atom| match a {
            Atom::Local(id) | Atom::Digit(id, ..) => guard.digits.iter().any(|(d, _)| d == id),
            Atom::Tid(_) | Atom::Xor(..) => false,
        };
        let ks: Vec<LocalId> = said
            .iter()
            .flat_map(|(l, _)| l.terms.keys())
            .filter_map(|a| match a {
                Atom::Digit(k, ..) => Some(*k),
                _ => None,
            })
            .collect();
        said.iter().all(|(l, _)| {
            l.terms.iter().all(|(a, c)| {
                *c >= 0
                    || !(of_digits(a)
                        || matches!(a, Atom::Digit(k, ..) | Atom::Local(k) if ks.contains(k)))
            })
        })
    }

    /// The value of a condition where the intervals decide it: comparisons of bounded
    /// values that do not overlap (or are one and the same number), joined by `&&`.
    fn decided(&self, cond: &Expr) -> Option<bool> {
        let sides = |a: &Expr, b: &Expr| Some((self.interval(a)?, self.interval(b)?));
        let below = |a: &Expr, b: &Expr, or_equal: bool| {
            let ((a_lo, a_hi), (b_lo, b_hi)) = sides(a, b)?;
            let slack = i128::from(or_equal);
            if a_hi < b_lo + slack {
                Some(true)
            } else if a_lo >= b_hi + slack {
                Some(false)
            } else {
                None
            }
        };
        let equal = |a: &Expr, b: &Expr| {
            let ((a_lo, a_hi), (b_lo, b_hi)) = sides(a, b)?;
            if a_lo == a_hi && (a_lo, a_hi) == (b_lo, b_hi) {
                Some(true)
            } else if a_hi < b_lo || b_hi < a_lo {
                Some(false)
            } else {
                None
            }
        };
        match &cond.kind {
            ExprKind::Lit(Lit::Bool(b)) => Some(*b),
            ExprKind::Binary(BinOp::And, a, b) => match (self.decided(a), self.decided(b)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            ExprKind::Binary(BinOp::Eq, a, b) => equal(a, b),
            ExprKind::Binary(BinOp::Ne, a, b) => equal(a, b).map(|e| !e),
            ExprKind::Binary(BinOp::Lt, a, b) => below(a, b, false),
            ExprKind::Binary(BinOp::Le, a, b) => below(a, b, true),
            ExprKind::Binary(BinOp::Gt, a, b) => below(b, a, false),
            ExprKind::Binary(BinOp::Ge, a, b) => below(b, a, true),
            _ => None,
        }
    }

    /// An integer expression as a sum of multiples of [`Atom`]s, exactly: each part of it
    /// that computes has an interval (its type holds it, nothing wraps).
    fn linear(&self, e: &Expr) -> Option<Linear> {
        let computed = |e: &Expr| self.interval(e).is_some();
        let local_atom = |id: LocalId| {
            (self.ranges.contains_key(&id) && !self.assigned.contains(&id))
                .then_some(Atom::Local(id))
        };
        let digit_of = |e: &Expr, div: u64, modulo: Option<u64>| match e.kind {
            ExprKind::Local(k) => local_atom(k).map(|_| self.digit(k, div, modulo)),
            _ => None,
        };
        let number = |e: &Expr| match e.kind {
            ExprKind::Size(n) => Some(n),
            ExprKind::Lit(Lit::Int(v, _)) => u64::try_from(v).ok(),
            _ => None,
        };
        match &e.kind {
            ExprKind::Lit(Lit::Int(v, _)) => Some(Linear::constant(*v as i128)),
            ExprKind::Size(n) => Some(Linear::constant(*n as i128)),
            ExprKind::Tid(path) => Some(Linear::atom(Atom::Tid(path.clone()))),
            ExprKind::Local(id) => match self.sums.get(id) {
                Some(sum) => Some(sum.clone()),
                None => local_atom(*id).map(Linear::atom),
            },
            _ if !computed(e) => None,
            ExprKind::Cast(x, s) if s.is_int() => self.linear(x),
            ExprKind::Offset { off, args, .. } => form_linear(
                &off.expr,
                &|v| self.linear(args.get(v.0 as usize)?),
                &|v, div, modulo| digit_of(args.get(v.0 as usize)?, div, modulo),
            ),
            ExprKind::Binary(op, l, r) => match op {
                BinOp::Add => Some(self.linear(l)?.add_scaled(&self.linear(r)?, 1)),
                BinOp::Sub => Some(self.linear(l)?.add_scaled(&self.linear(r)?, -1)),
                // A product of a number and a sum, the number a literal or a local's
                // (`let w = 256; w * bn`).
                BinOp::Mul => {
                    let (l, r) = (self.linear(l)?, self.linear(r)?);
                    match (l.terms.is_empty(), r.terms.is_empty()) {
                        (true, _) => Some(r.scaled(l.konst)),
                        (_, true) => Some(l.scaled(r.konst)),
                        _ => None,
                    }
                }
                BinOp::Div => digit_of(l, number(r)?, None),
                BinOp::Rem => match &l.kind {
                    ExprKind::Binary(BinOp::Div, k, d) => digit_of(k, number(d)?, number(r)),
                    _ => digit_of(l, 1, number(r)),
                },
                _ => None,
            },
            _ => None,
        }
    }

    /// `(k / div) % modulo` as a sum, in the simplest form `k`'s range allows: 0 where `k`
    /// stays below `div`, no remainder where `k / div` stays below `modulo`, and `k`
    /// itself where `div` is 1 as well. The offset compiler folds such digits in an
    /// offset (`(k / 4) * 999 + k % 4` is `k` for `k` below 4) while a guard names them
    /// as its closure's digits: one form for both lets the guard bound the offset.
    fn digit(&self, k: LocalId, div: u64, modulo: Option<u64>) -> Linear {
        let below = |end: Option<i128>| {
            self.ranges
                .get(&k)
                .zip(end)
                .is_some_and(|(&(lo, hi), end)| lo >= 0 && hi < end)
        };
        let div_i = i128::from(div);
        if below(Some(div_i)) {
            return Linear::constant(0);
        }
        let modulo = modulo.filter(|&m| !below(div_i.checked_mul(i128::from(m))));
        match (div, modulo) {
            (1, None) => Linear::atom(Atom::Local(k)),
            _ => Linear::atom(Atom::Digit(k, div, modulo)),
        }
    }

    /// The range of an atom: a thread index's, a local's, or a digit's of its local's.
    fn atom_range(&self, a: &Atom) -> Option<Interval> {
        match a {
            Atom::Tid(path) => {
                let (_, t) = self.body.tids.iter().find(|(p, _)| p == path)?;
                Some((0, t.expr.max(&t.vars) as i128))
            }
            Atom::Local(id) => self.ranges.get(id).copied(),
            Atom::Digit(k, div, modulo) => {
                let (lo, hi) = self.ranges.get(k).copied()?;
                let (lo, hi) = (lo / *div as i128, hi / *div as i128);
                Some(match modulo {
                    Some(m) if hi >= *m as i128 => (0, *m as i128 - 1),
                    _ => (lo, hi),
                })
            }
            // `Linear::max_under` bounds it from its operands' ranges.
            Atom::Xor(..) => None,
        }
    }

    /// What a condition says where it holds, as `sum <= bound` facts: each comparison of
    /// sums joined by `&&` (`a < b` is `a - b <= -1`). Whether that is all it says.
    fn facts_of(&self, cond: &Expr, out: &mut Vec<(Linear, i128)>) -> bool {
        let mut fact = |a: &Expr, b: &Expr, strict: bool| match (self.linear(a), self.linear(b)) {
            (Some(a), Some(b)) => {
                out.push((a.add_scaled(&b, -1), -i128::from(strict)));
                true
            }
            _ => false,
        };
        match &cond.kind {
            ExprKind::Binary(BinOp::And, a, b) => {
                let left = self.facts_of(a, out);
                self.facts_of(b, out) && left
            }
            ExprKind::Binary(BinOp::Lt, a, b) => fact(a, b, true),
            ExprKind::Binary(BinOp::Le, a, b) => fact(a, b, false),
            ExprKind::Binary(BinOp::Gt, a, b) => fact(b, a, true),
            ExprKind::Binary(BinOp::Ge, a, b) => fact(b, a, false),
            _ => false,
        }
    }

    /// Whether the sum `at` lies in `[0, end)` where the enclosing guards hold.
    fn within_under_guards(&self, at: &Linear, end: i128) -> bool {
        let range = |a: &Atom| self.atom_range(a);
        let lowest = at.clone().scaled(-1).max_under(&[], &range).map(|m| -m);
        let highest = at.max_under(&self.guards, &range);
        lowest.is_some_and(|lo| lo >= 0) && highest.is_some_and(|hi| hi < end)
    }

    /// The values an integer expression can take, when the analysis can bound them.
    fn interval(&self, e: &Expr) -> Option<Interval> {
        let r = match &e.kind {
            ExprKind::Lit(Lit::Int(v, _)) => (*v as i128, *v as i128),
            ExprKind::NumberConst(c) => {
                let usize_bits = if self.body.target == Target::Cuda {
                    32
                } else {
                    64
                };
                let v = c.int_value(usize_bits)?;
                (v, v)
            }
            ExprKind::Local(id) => *self.ranges.get(id)?,
            ExprKind::Size(n) => (*n as i128, *n as i128),
            // An element read lies in its type's range (a byte in `[0, 255]`).
            ExprKind::Index(..) => self.type_range(e.ty)?,
            ExprKind::Tid(path) => {
                let (_, t) = self.body.tids.iter().find(|(p, _)| p == path)?;
                (0, t.expr.max(&t.vars) as i128)
            }
            ExprKind::Offset { off, args, .. } => {
                // The offset's bound holds when every index lies inside its dimension; an
                // offset only grows with each index (its terms are positive multiples of
                // indices and of digits and XORs of them), so its largest value is that at
                // the indices' largest values (`$AS[st][0][2 * s][0][0]$` stays in `AS[1]`).
                let mut vars = off.vars.clone();
                for (k, a) in args.iter().enumerate() {
                    let var = parray_layout::VarId(k as u32);
                    let (lo, hi) = self.interval(a)?;
                    if lo < 0 || hi > i128::from(off.vars.max(var)) {
                        return None;
                    }
                    vars.bind(off.vars.name(var), hi as u64);
                }
                (off.expr.konst as i128, off.expr.max(&vars) as i128)
            }
            ExprKind::Cast(x, s) if s.is_int() => self.interval(x)?,
            // `x & m` with `m` in `[0, hi]` lies in `[0, hi]` whatever `x` is (two's
            // complement: the result has no bit `m` lacks): a table index `x & 0xff`.
            ExprKind::Binary(BinOp::BitAnd, l, r) => {
                let hi = [self.interval(l), self.interval(r)]
                    .into_iter()
                    .flatten()
                    .filter(|(lo, _)| *lo >= 0)
                    .map(|(_, hi)| hi)
                    .min()?;
                (0, hi)
            }
            // `x % m` of an unsigned `x` lies in `[0, m)` whatever `x` is (a stage
            // `kt % 2` of a loop over a size given at run time).
            ExprKind::Binary(BinOp::Rem, l, r)
                if self.type_range(l.ty).is_some_and(|(lo, _)| lo == 0)
                    && self.interval(l).is_none() =>
            {
                let (lo, hi) = self.interval(r)?;
                if lo <= 0 {
                    return None;
                }
                (0, hi - 1)
            }
            ExprKind::Binary(op, l, r) => {
                let (a, b) = (self.interval(l)?, self.interval(r)?);
                match op {
                    BinOp::Add => (a.0 + b.0, a.1 + b.1),
                    BinOp::Sub => (a.0 - b.1, a.1 - b.0),
                    BinOp::Mul if a.0 >= 0 && b.0 >= 0 => (a.0 * b.0, a.1 * b.1),
                    BinOp::Div if a.0 >= 0 && b.0 > 0 => (a.0 / b.1, a.1 / b.0),
                    BinOp::Rem if a.0 >= 0 && b.0 > 0 => (0, a.1.min(b.1 - 1)),
                    BinOp::Shr if a.0 >= 0 && b.0 >= 0 && b.1 < 64 => (a.0 >> b.1, a.1 >> b.0),
                    BinOp::Shl if a.0 >= 0 && b.0 >= 0 && b.1 < 64 => {
                        (a.0 << b.0, a.1.checked_shl(b.1 as u32)?)
                    }
                    _ => return None,
                }
            }
            ExprKind::Select(_, a, b) => {
                let (a, b) = (self.interval(a)?, self.interval(b)?);
                (a.0.min(b.0), a.1.max(b.1))
            }
            // `a.min(b)` lies below whichever of the two is bounded (`(n as usize).min(N)`
            // bounds a loop by a run-time count and by an array's size).
            ExprKind::Method(crate::ir::Method::Min, r, args) if matches!(e.ty, Ty::Scalar(s) if s.is_int()) =>
            {
                let (a, b) = (
                    self.interval(r),
                    args.first().and_then(|x| self.interval(x)),
                );
                let hi = [a, b].iter().flatten().map(|(_, hi)| *hi).min()?;
                let lo = match (a, b) {
                    (Some(a), Some(b)) => a.0.min(b.0),
                    _ => self.type_range(e.ty)?.0,
                };
                (lo, hi)
            }
            _ => return None,
        };
        // A value its type cannot hold wraps (or panics): nothing is known then.
        let (min, max) = self.type_range(e.ty)?;
        (r.0 >= min && r.1 <= max).then_some(r)
    }

    /// The values of an integer expression bounded by a size given at run time (where
    /// [`Facts::interval`] knows no numbers), of a type that holds every size: a run-time
    /// size, a loop's variable below one or a value computed from it by adding or taking
    /// away numbers, and a `$T[...]$` offset of a run-time type whose every index lies
    /// inside each dimension it indexes (below `T`'s extent: the offset algebra).
    fn range(&self, e: &Expr) -> Option<Range> {
        if self.type_range(e.ty)? != (0, i128::from(u64::MAX)) {
            return None;
        }
        match &e.kind {
            ExprKind::Local(id) => self.sized.get(id).cloned(),
            ExprKind::GenericSize { size: Some(s), .. } => Range::upto(1, s.clone(), 0),
            ExprKind::RuntimeConst { value: Some(v), .. } => Range::upto(0, v.clone(), 0),
            ExprKind::GenericOffset {
                args,
                sizes: Some(s),
                ..
            } => {
                let inside = args.len() == s.dims.len()
                    && args
                        .iter()
                        .zip(&s.dims)
                        .all(|(a, dims)| dims.iter().all(|d| self.below_end(a, (0, 0), d)));
                inside.then(|| Range::upto(0, s.extent.clone(), -1))?
            }
            ExprKind::Cast(x, s) if s.is_int() => self.range(x),
            ExprKind::Binary(BinOp::Add, l, r) => match (self.range(l), self.range(r)) {
                (Some(a), None) => a.plus(self.interval(r)?),
                (None, Some(b)) => b.plus(self.interval(l)?),
                _ => None,
            },
            ExprKind::Binary(BinOp::Sub, l, r) => self.range(l)?.minus(self.interval(r)?),
            _ => None,
        }
    }

    /// Whether every value of the integer expression `e`, with any of `add` added, lies in
    /// `[0, end)` at every binding of the run-time sizes.
    fn below_end(&self, e: &Expr, add: Interval, end: &Poly) -> bool {
        let by_numbers = self
            .interval(e)
            .is_some_and(|(lo, hi)| below(lo, &Poly::constant(hi), add, end));
        by_numbers
            || self
                .range(e)
                .is_some_and(|r| r.top().is_some_and(|top| below(r.lo, &top, add, end)))
    }

    /// Whether `e`, a 32-bit unsigned integer on a GPU, lies in `[0, i32::MAX]` and is
    /// computed only from such values (its children are marked first): C then computes it
    /// in `int` exactly, and the compiler may widen the address arithmetic it feeds, which
    /// NVRTC does not do for `unsigned` (measured: 3% of the tuned SGEMM on an H100).
    fn signed(&self, e: &Expr) -> bool {
        let small = |e: &Expr| {
            self.interval(e)
                .is_some_and(|(lo, hi)| lo >= 0 && hi <= i128::from(i32::MAX))
        };
        self.body.target == Target::Cuda
            && matches!(e.ty, Ty::Scalar(Scalar::U32 | Scalar::Usize))
            && small(e)
            && match &e.kind {
                ExprKind::Lit(_) | ExprKind::Size(_) | ExprKind::Local(_) | ExprKind::Tid(_) => {
                    true
                }
                // An index of a narrower or signed type is an `int` in C already.
                ExprKind::Offset { args, .. } => args.iter().all(|a| {
                    a.signed
                        || matches!(a.ty, Ty::Scalar(Scalar::I8 | Scalar::U8 | Scalar::I32))
                            && small(a)
                }),
                ExprKind::Binary(_, l, r) => l.signed && r.signed,
                _ => false,
            }
    }

    /// The values of an integer type, as the target computes it.
    fn type_range(&self, t: Ty) -> Option<Interval> {
        let s = match t {
            Ty::Scalar(s) => s,
            _ => return None,
        };
        Some(match s {
            Scalar::I8 => (i8::MIN.into(), i8::MAX.into()),
            Scalar::U8 => (0, u8::MAX.into()),
            Scalar::I32 => (i32::MIN.into(), i32::MAX.into()),
            Scalar::U32 => (0, u32::MAX.into()),
            Scalar::I64 => (i64::MIN.into(), i64::MAX.into()),
            Scalar::U64 => (0, u64::MAX.into()),
            Scalar::Usize if self.body.target == Target::Cuda => (0, u32::MAX.into()),
            Scalar::Usize => (0, u64::MAX.into()),
            Scalar::Bool | Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::Bf16 => return None,
        })
    }
}

/// The low bits known to be zero in an offset's form, `var(v)` giving its variable `v`'s:
/// a XOR has those its two operands share.
fn form_twos(
    form: &parray_layout::expr::LinearForm,
    var: &dyn Fn(parray_layout::VarId) -> u32,
) -> u32 {
    use parray_layout::expr::Term;
    let mut t = match form.konst {
        0 => TWOS,
        k => twos_of_constant(u128::from(k)),
    };
    for (c, term) in &form.terms {
        let of_term = match term {
            Term::Var(v) => var(*v),
            Term::Digit { .. } => 0,
            Term::Xor { a, b } => form_twos(a, var).min(form_twos(b, var)),
        };
        t = t.min(twos_of_constant(u128::from(*c)).saturating_add(of_term));
    }
    t.min(TWOS)
}

/// An offset's form as a sum of the body's atoms, `var(v)` giving its variable `v`'s and
/// `digit(v, div, modulo)` a digit of it; a swizzle's XOR of two forms is an
/// [`Atom::Xor`] of theirs. `None` where a part is not a sum.
fn form_linear(
    form: &parray_layout::expr::LinearForm,
    var: &dyn Fn(parray_layout::VarId) -> Option<Linear>,
    digit: &dyn Fn(parray_layout::VarId, u64, Option<u64>) -> Option<Linear>,
) -> Option<Linear> {
    use parray_layout::expr::Term;
    let mut sum = Linear::constant(form.konst as i128);
    for (c, term) in &form.terms {
        let part = match term {
            Term::Var(v) => var(*v)?,
            Term::Digit { of, div, modulo } => digit(of.as_var()?, *div, *modulo)?,
            Term::Xor { a, b } => Linear::atom(Atom::Xor(
                Box::new(form_linear(a, var, digit)?),
                Box::new(form_linear(b, var, digit)?),
            )),
        };
        sum = sum.add_scaled(&part, *c as i128);
    }
    Some(sum)
}

/// The types of the `$T[...]$` forms in `e`, and of those in the values of the immutable
/// locals it reads (`let i = $T[...]$; a[i]` indexes `a` as `T`), from `locals`.
fn forms(e: &Expr, locals: &HashMap<LocalId, Vec<Indexed>>, out: &mut Vec<Indexed>) {
    let found: Vec<Indexed> = match &e.kind {
        ExprKind::Offset { of, .. } => vec![of.clone()],
        ExprKind::GenericOffset { ty, .. } => vec![Indexed {
            type_name: ty.clone(),
            extent: None,
            constant: false,
        }],
        ExprKind::Local(id) => locals.get(id).cloned().unwrap_or_default(),
        _ => Vec::new(),
    };
    for t in found {
        if !out.contains(&t) {
            out.push(t);
        }
    }
    // An element read inside an offset (`$H[b[$B[i]$] as usize]$`) indexes its own array.
    if !matches!(e.kind, ExprKind::Index(..) | ExprKind::Vector { .. }) {
        e.for_each_child(&mut |c| forms(c, locals, out));
    }
}

/// Marks the proved accesses of `stmts`, counting them in `proof`.
/// The local `e` reads, when it is one of an unsigned integer type (a value that only
/// bounds from above need narrow).
fn unsigned_local(e: &Expr) -> Option<LocalId> {
    match (&e.kind, e.ty) {
        (
            ExprKind::Local(i),
            Ty::Scalar(Scalar::U8 | Scalar::U32 | Scalar::U64 | Scalar::Usize),
        ) => Some(*i),
        _ => None,
    }
}

/// Why a region of shared memory an instruction reads or writes past the checks is not
/// proved: outside its array (of the extent said), or its start aligned only to so many
/// bytes.
enum Region {
    Outside(String),
    Misaligned(u64),
}

fn mark(stmts: &mut [Stmt], facts: &mut Facts, extents: &Extents, proof: &mut Proof) {
    fn expr(e: &mut Expr, facts: &Facts, extents: &Extents, proof: &mut Proof) {
        if let ExprKind::Offset { off, args, of } = &e.kind {
            for (k, a) in args.iter().enumerate() {
                let size = off.vars.max(parray_layout::VarId(k as u32)) + 1;
                if let Some((lo, hi)) = facts.interval(a) {
                    if lo >= i128::from(size) {
                        proof.errors.push(Diag::new(
                            a.span,
                            format!(
                                "this index of `{}` is out of range for every thread: it takes the values {lo}..={hi}, and its dimension has {size} elements",
                                of.type_name
                            ),
                        ));
                    }
                }
            }
        }
        if let ExprKind::Call(_, args, roots) = &mut e.kind {
            *roots = args
                .iter()
                .map(|a| {
                    let Ty::Ptr { .. } = a.ty else { return None };
                    let root = facts.place(a).map(|p| p.root);
                    if root.is_none() && facts.body.target == Target::Cuda {
                        proof.errors.push(Diag::new(a.span, UNNAMED_ARRAY));
                    }
                    root
                })
                .collect();
        }
        let vector = match e.ty {
            Ty::Vector(v) => v.keyword(),
            _ => "vector",
        };
        // Each access: its base, the interval of its offset, its lanes (1: an element),
        // whether its alignment is known (an element's needs none) and, for a vector, the
        // span of its method.
        let zero = Expr::new(ExprKind::Size(0), e.span);
        let access = match &mut e.kind {
            ExprKind::Index(base, at, check) => {
                Some((&**base, &**at, facts.interval(at), 1, true, None, check))
            }
            ExprKind::Vector {
                base,
                at,
                lanes,
                check,
                method,
            } => {
                let aligned = facts.aligned(base, at, *lanes);
                let interval = facts.interval(at);
                Some((
                    &**base,
                    &**at,
                    interval,
                    *lanes,
                    aligned,
                    Some(*method),
                    check,
                ))
            }
            // `atomic_add(p, v)` (and the other atomics) update `p[0]`.
            ExprKind::Atomic(_, p, _, check) => {
                Some((&**p, &zero, Some((0, 0)), 1, true, None, check))
            }
            _ => None,
        };
        if let Some((base, index, at, lanes, aligned, method, check)) = access {
            proof.accesses += 1;
            let place = facts.place(base);
            if let (Some(method), Some(p), Some((i, _))) =
                (method, &place, at.filter(|(lo, hi)| lo == hi))
            {
                if let Some((d, _)) = p.displacement.filter(|(lo, hi)| lo == hi) {
                    if (d + i).rem_euclid(i128::from(lanes)) != 0 {
                        proof.errors.push(Diag::new(
                            method,
                            format!(
                                "this {vector} access is misaligned for every thread: its first element is at offset {} from the start of the array, not a multiple of {lanes}",
                                d + i
                            ),
                        ));
                    }
                }
            }
            let within = place.as_ref().is_some_and(|p| {
                let by_numbers = extents.known.get(&p.root).is_some_and(|&extent| {
                    let extent = extent as i128;
                    let by_intervals = p.displacement.zip(at).is_some_and(|(d, i)| {
                        d.0 + i.0 >= 0 && d.1 + i.1 + i128::from(lanes) - 1 < extent
                    });
                    // Else an offset past the data's intervals that its guards keep inside.
                    let by_guards = || {
                        let sum = p.linear.clone()?.add_scaled(&facts.linear(index)?, 1);
                        Some(facts.within_under_guards(&sum, extent - i128::from(lanes) + 1))
                    };
                    by_intervals || by_guards() == Some(true)
                });
                // Else inside the extent of a run-time type it is indexed as, at every
                // binding of its sizes.
                let by_sizes = || {
                    let (d_lo, d_hi) = p.displacement?;
                    let add = (d_lo, d_hi + i128::from(lanes) - 1);
                    let ends = extents.sizes.get(&p.root)?;
                    Some(ends.iter().any(|end| facts.below_end(index, add, end)))
                };
                by_numbers || by_sizes() == Some(true)
            });
            if within && aligned {
                *check = Check::Proved;
                proof.proved += 1;
            } else {
                if place.is_none() && facts.body.target == Target::Cuda {
                    proof.errors.push(Diag::new(base.span, UNNAMED_ARRAY));
                }
                *check = Check::Checked(place.map(|p| p.root));
            }
        }
        e.for_each_child_mut(&mut |c| expr(c, facts, extents, proof));
        e.signed = facts.signed(e);
        if !e.signed {
            e.for_each_child_mut(&mut unmark_leaf);
        }
    }
    /// A leaf (a constant offset, or one that is its index) is written in `int` only
    /// inside an `int` computation.
    fn unmark_leaf(e: &mut Expr) {
        let leaf = match &e.kind {
            ExprKind::Lit(_) | ExprKind::Size(_) | ExprKind::Local(_) | ExprKind::Tid(_) => true,
            ExprKind::Offset { off, .. } => {
                off.expr.konst == 0
                    && matches!(off.expr.terms[..], [(1, parray_layout::expr::Term::Var(_))])
                    || off.as_const().is_some()
            }
            _ => false,
        };
        if leaf && e.signed {
            e.signed = false;
            e.for_each_child_mut(&mut unmark_leaf);
        }
    }
    for s in stmts {
        // An `if i < end` narrows `i` in the branch it guards, not in the other.
        if let Stmt::If {
            cond, then, els, ..
        } = s
        {
            let guard = facts.guard(cond);
            let outer = facts.guards.len();
            let mut said = Vec::new();
            facts.facts_of(cond, &mut said);
            expr(cond, facts, extents, proof);
            unmark_leaf(cond);
            facts.guards.extend(said);
            facts.narrowed(guard, |facts| mark(then, facts, extents, proof));
            facts.guards.truncate(outer);
            if let Some(els) = els {
                mark(els, facts, extents, proof);
            }
            continue;
        }
        // A stride loop's variable has its range inside the loop (its condition has no
        // access but in its bound, which does not depend on the variable), and a `for`
        // loop's its own: two loops may share a variable (a `#copy`'s vector loop and its
        // element loop, each over its own range), so the range the forward walk left
        // last is not each loop's.
        let stride = facts.loop_range(s);
        facts.narrowed(stride, |facts| {
            s.for_each_part_mut(&mut |part| match part {
                crate::ir::PartMut::Expr(e) => {
                    expr(e, facts, extents, proof);
                    unmark_leaf(e);
                }
                crate::ir::PartMut::Body(b) => mark(b, facts, extents, proof),
            })
        });
        if let Stmt::Mma {
            a,
            b,
            wgmma: Some(w),
            ..
        } = s
        {
            let tiles = [
                (&*a, &w.a, &w.a_offsets, "A"),
                (&*b, &w.b, &w.b_offsets, "B"),
            ];
            for (tile, descriptor, offsets, what) in tiles {
                facts.tile_within(tile, offsets, descriptor, what, proof);
            }
        }
        match s {
            Stmt::Tma { dst, bar, tma, .. } => {
                let alignment = tma.swizzle.atom_bytes();
                facts.box_within(dst, (tma.box_elems, tma.elem_bytes, alignment), proof);
                facts.barrier_within(bar, proof);
            }
            Stmt::MbarrierInit { bar, .. }
            | Stmt::MbarrierArrive { bar, .. }
            | Stmt::MbarrierWait { bar, .. } => facts.barrier_within(bar, proof),
            _ => {}
        }
        if let Stmt::Matrices {
            base,
            at,
            scalar,
            loc,
            ..
        } = s
        {
            if !facts.by_rows(base, at, scalar) {
                *s = Stmt::Block {
                    body: std::mem::take(scalar),
                    loc: *loc,
                };
            }
        }
    }
}
