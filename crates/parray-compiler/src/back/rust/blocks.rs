//! The Rust of a cuda body with barriers, for the CPU emulation: run once per block, each
//! stretch between barriers a plain loop over the threads present there.
//!
//! A GPU runs a block's threads in lockstep between barriers; so does this code, with a
//! mask of the threads present (SIMT without the hardware). A statement that contains no
//! `#sync` belongs to a *stretch*: `for t in 0..n { if mask[t] { ..thread t's code.. } }`.
//! A statement that contains one is written at block level: `#sync` checks that every
//! thread is present (`BlockThreads::sync`, else `DivergentSync`); an `if`, `while` or
//! `for` evaluates its condition per present thread into a new mask and runs its body for
//! that mask; `break`, `continue` and `return` in a stretch take the thread out of the
//! masks they leave. A local that lives across stretches becomes a vector with one value
//! per thread (`__parray_s<id>`); a shared array is one per block, created before the
//! first stretch. The stretches keep the plain loops of a body without barriers, and with
//! them the CPU's overlap of one thread's memory accesses with the next's.
//!
//! The body is an `async` block that `run_block` polls: a `#wait` on an mbarrier is
//! pending while its phase cannot complete. An `if` with an `else` whose branches wait on
//! mbarriers (a producer's role and its consumers', SPEC 3.9) runs its branches as two
//! futures that `join` interleaves, each running on until a wait the other must complete;
//! the per-thread vectors both branches use are then kept in one `RefCell`, borrowed by
//! each stretch for its loop (no stretch awaits).

use std::cell::{Cell, RefCell};
use std::collections::HashMap;

use proc_macro2::{Ident, Span, TokenStream};
use quote::{format_ident, quote, quote_spanned};

use super::{ctx_ident, prologue, Mode, Writer};
use crate::ir::{visit_exprs, Body, ExprKind, LocalId, Part, Stmt, Ty};
use crate::passes::bounds::Proved;
use parray_layout::kinds::MemKind;

/// The block's threads, as `detour!` binds them.
fn block_ident() -> Ident {
    Ident::new("__parray_block", Span::call_site())
}

fn thread_ident() -> Ident {
    Ident::new("__parray_t", Span::call_site())
}

fn count_ident() -> Ident {
    Ident::new("__parray_n", Span::call_site())
}

/// The label of a stretch's per-thread block (left by `break`, `continue`, `return`).
fn stretch_label() -> TokenStream {
    use proc_macro2::{Punct, Spacing, TokenTree};
    [
        TokenTree::Punct(Punct::new('\'', Spacing::Joint)),
        TokenTree::Ident(Ident::new("__parray_stretch", Span::call_site())),
    ]
    .into_iter()
    .collect()
}

/// How a local that lives across stretches is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Spill {
    /// A number or vector: `Vec<T>`.
    Value,
    /// A pointer: `Vec<Option<handle>>` (pointers have no default value).
    Pointer,
    /// A thread's register array: `Vec<Registers<T, N>>`.
    Registers,
}

/// A construct around the statement being written: its mask of present threads and, for a
/// loop, the threads that left it for good (`break`, or a false condition).
#[derive(Clone)]
struct Frame {
    mask: Ident,
    broke: Option<Ident>,
}

/// The state of the writer of a body with barriers.
pub(super) struct Blocks {
    spilled: HashMap<LocalId, Spill>,
    /// Shared arrays, created once per block before the first stretch.
    shared: Vec<LocalId>,
    frames: RefCell<Vec<Frame>>,
    /// Loops of the thread's own around the statement being written, in its stretch.
    thread_loops: Cell<usize>,
    fresh: Cell<usize>,
    /// Inside the branches of a role `if` ([`Writer::roles`]): the `RefCell` of the
    /// per-thread vectors both branches use, and their names, which each stretch borrows.
    joint: RefCell<Option<(Ident, Vec<Ident>)>>,
}

/// The body of a cuda detour with barriers as the emulation runs it: the statements of an
/// `async` block, which the closure `|__parray_block: &BlockThreads| { .. }` gives to
/// `run_block` (after the parameters' bindings).
pub fn block_body_tokens(proved: &Proved) -> TokenStream {
    let body = proved.body();
    let blocks = Blocks::plan(body);
    let mut w = Writer::new(body, Mode::Emulate);
    let (n, block) = (count_ident(), block_ident());
    let mut out = quote!(let #n = #block.len(););
    // Shared arrays: one per block.
    for s in walk_stmts(&body.stmts) {
        if let Stmt::Create {
            local,
            type_name,
            elem,
            mem: MemKind::Smem,
            len,
            soa,
            slot,
            loc,
        } = s
        {
            let name = w.local(*local);
            let span = loc.span.proc_macro();
            let array = w.shared_array(&quote!(#block), *elem, *len, type_name, *soa, *slot, span);
            out.extend(quote_spanned!(span=> let #name = #array;));
        }
    }
    // Locals that live across stretches: a value per thread.
    let mut spilled: Vec<_> = blocks.spilled.iter().map(|(id, k)| (*id, *k)).collect();
    spilled.sort_by_key(|(id, _)| id.0);
    for (id, kind) in spilled {
        let v = spill_ident(id);
        let l = body.local(id);
        let init = match (kind, l.ty) {
            _ if l.param => {
                let p = w.local(id);
                quote!(::std::vec![#p; #n])
            }
            (Spill::Value, Some(t)) => {
                let t = w.annotation(t).expect("a number or a vector");
                quote!(::std::vec![<#t as ::core::default::Default>::default(); #n])
            }
            (Spill::Pointer, _) => quote!(::std::vec![::core::option::Option::None; #n]),
            (Spill::Registers, Some(Ty::Array { elem, len, .. })) => {
                let name = register_name(body, id);
                let array = w.registers(elem, len, &name, Span::call_site());
                quote!((0..#n).map(|_| #array).collect::<::std::vec::Vec<_>>())
            }
            _ => unreachable!("a spilled local has a type"),
        };
        out.extend(quote!(#[allow(unused_mut)] let mut #v = #init;));
    }
    let alive = format_ident!("__parray_alive");
    out.extend(quote!(let mut #alive = ::std::vec![true; #n];));
    blocks.frames.borrow_mut().push(Frame {
        mask: alive,
        broke: None,
    });
    w.blocks = Some(blocks);
    out.extend(w.block_stmts(&body.stmts));
    out
}

/// The operands of the shuffle `slot`, one per thread: its values and its deltas.
fn shuffle_idents(slot: usize) -> (Ident, Ident) {
    (
        format_ident!("__parray_shv{}", slot),
        format_ident!("__parray_shd{}", slot),
    )
}

/// Applies `f` to each `shfl_down` of `e` (the checker allows none inside another).
fn shuffles(e: &crate::ir::Expr, f: &mut dyn FnMut(&crate::ir::Expr)) {
    if matches!(e.kind, ExprKind::ShflDown { .. }) {
        f(e);
    } else {
        e.for_each_child(&mut |c| shuffles(c, f));
    }
}

fn spill_ident(id: LocalId) -> Ident {
    format_ident!("__parray_s{}", id.0)
}

/// The type name a register array was created with.
fn register_name(body: &Body, id: LocalId) -> String {
    walk_stmts(&body.stmts)
        .find_map(|s| match s {
            Stmt::Create {
                local, type_name, ..
            } if *local == id => Some(type_name.clone()),
            _ => None,
        })
        .unwrap_or_default()
}

/// Every statement of `stmts`, at any depth, outermost first.
fn walk_stmts(stmts: &[Stmt]) -> impl Iterator<Item = &Stmt> {
    fn go<'s>(stmts: &'s [Stmt], all: &mut Vec<&'s Stmt>) {
        for s in stmts {
            all.push(s);
            s.for_each_part(&mut |part| {
                if let Part::Body(b) = part {
                    go(b, all);
                }
            });
        }
    }
    let mut all = Vec::new();
    go(stmts, &mut all);
    all.into_iter()
}

/// The locals declared in `stmts` (by `let`, a created array or a `for`), at any depth.
fn declared(stmts: &[&Stmt]) -> Vec<LocalId> {
    let mut out = Vec::new();
    for s in stmts {
        for s in walk_stmts(std::slice::from_ref(*s)) {
            match s {
                Stmt::Let { local, .. } | Stmt::Create { local, .. } => out.push(*local),
                Stmt::For { var, .. } => out.push(*var),
                _ => {}
            }
        }
    }
    out
}

/// How often each local is read or written in `stmts`.
fn uses(stmts: &[&Stmt]) -> HashMap<LocalId, usize> {
    let mut count = HashMap::new();
    visit_exprs(stmts.iter().copied(), &mut |e| {
        if let ExprKind::Local(id) = e.kind {
            *count.entry(id).or_insert(0) += 1;
        }
    });
    count
}

impl Blocks {
    /// Which locals live across stretches, and which arrays are the block's.
    fn plan(body: &Body) -> Blocks {
        let all: Vec<&Stmt> = body.stmts.iter().collect();
        let total = uses(&all);
        let mut spilled = HashMap::new();
        let mut shared = Vec::new();
        let kind = |id: LocalId| match body.local(id).ty {
            Some(Ty::Ptr { .. }) if !body.local(id).param => Spill::Pointer,
            Some(Ty::Array { .. }) => Spill::Registers,
            _ => Spill::Value,
        };
        // A stretch's locals used outside it; a block-level `for` variable always.
        let mut stretches = Vec::new();
        collect_stretches(&body.stmts, &mut stretches, &mut |var| {
            spilled.insert(var, Spill::Value);
        });
        for stretch in &stretches {
            let inside = uses(stretch);
            for id in declared(stretch) {
                if total.get(&id).copied().unwrap_or(0) > inside.get(&id).copied().unwrap_or(0) {
                    spilled.insert(id, kind(id));
                }
            }
        }
        // A parameter a thread assigns is the thread's own.
        for (_, id) in &body.params {
            if body.assigns(*id) {
                spilled.insert(*id, Spill::Value);
            }
        }
        for s in walk_stmts(&body.stmts) {
            if let Stmt::Create {
                local,
                mem: MemKind::Smem,
                ..
            } = s
            {
                spilled.remove(local);
                shared.push(*local);
            }
        }
        Blocks {
            spilled,
            shared,
            frames: RefCell::new(Vec::new()),
            thread_loops: Cell::new(0),
            fresh: Cell::new(0),
            joint: RefCell::new(None),
        }
    }

    /// A local's value in a stretch, when it lives across stretches.
    pub(super) fn spilled_value(&self, id: LocalId) -> Option<TokenStream> {
        let v = spill_ident(id);
        let t = thread_ident();
        Some(match self.spilled.get(&id)? {
            Spill::Value | Spill::Registers => quote!(#v[#t]),
            Spill::Pointer => quote!(#v[#t].expect("assigned before use")),
        })
    }

    /// The value stored into a spilled local (a pointer is kept as `Some`).
    pub(super) fn spilled_store(&self, id: LocalId, value: TokenStream) -> TokenStream {
        match self.spilled.get(&id) {
            Some(Spill::Pointer) => quote!(::core::option::Option::Some(#value)),
            _ => value,
        }
    }

    /// Writes the statements inside a loop of the thread's own.
    pub(super) fn in_thread_loop(&self, f: impl FnOnce() -> TokenStream) -> TokenStream {
        self.thread_loops.set(self.thread_loops.get() + 1);
        let out = f();
        self.thread_loops.set(self.thread_loops.get() - 1);
        out
    }

    fn fresh(&self, what: &str) -> Ident {
        let k = self.fresh.get();
        self.fresh.set(k + 1);
        format_ident!("__parray_{}{}", what, k)
    }

    fn mask(&self) -> Ident {
        self.frames.borrow().last().expect("a frame").mask.clone()
    }

    /// In a branch of a role `if`: the per-thread vectors the two branches share, borrowed
    /// from their `RefCell` under their own names until the end of the enclosing block
    /// (a stretch, or a statement that awaits nothing).
    fn borrow_joint(&self) -> TokenStream {
        let Some((cell, names)) = self.joint.borrow().clone() else {
            return TokenStream::new();
        };
        let held = format_ident!("__parray_joint_held");
        quote! {
            let mut #held = #cell.borrow_mut();
            #[allow(unused_variables)]
            let (#(#names,)*) = &mut *#held;
        }
    }

    /// The names of the per-thread vectors a role `if`'s branches share: every spilled
    /// local and every mask of the constructs around it.
    fn joint_names(&self) -> Vec<Ident> {
        let mut spilled: Vec<LocalId> = self.spilled.keys().copied().collect();
        spilled.sort_by_key(|id| id.0);
        let mut names: Vec<Ident> = spilled.into_iter().map(spill_ident).collect();
        for f in self.frames.borrow().iter() {
            names.push(f.mask.clone());
            names.extend(f.broke.clone());
        }
        names
    }

    /// A statement of a stretch that reads differently there: the thread's part of a
    /// spilled local, a shared array already created, leaving the stretch.
    pub(super) fn stretch_stmt(&self, w: &Writer, s: &Stmt) -> Option<TokenStream> {
        let t = thread_ident();
        let label = stretch_label();
        Some(match s {
            Stmt::Let { local, init, loc } if self.spilled.contains_key(local) => {
                let v = spill_ident(*local);
                match init {
                    Some(e) => {
                        let e = self.spilled_store(*local, w.expr(e));
                        quote_spanned!(loc.span.proc_macro()=> #v[#t] = #e;)
                    }
                    None => TokenStream::new(),
                }
            }
            Stmt::Create { local, .. } if self.shared.contains(local) => TokenStream::new(),
            Stmt::Create {
                local,
                type_name,
                elem,
                len,
                loc,
                ..
            } if self.spilled.contains_key(local) => {
                let v = spill_ident(*local);
                let span = loc.span.proc_macro();
                let array = w.registers(*elem, *len, type_name, span);
                quote_spanned!(span=> #v[#t] = #array;)
            }
            Stmt::Return { loc } => {
                let masks: Vec<Ident> = self
                    .frames
                    .borrow()
                    .iter()
                    .map(|f| f.mask.clone())
                    .collect();
                quote_spanned!(loc.span.proc_macro()=> { #(#masks[#t] = false;)* break #label; })
            }
            Stmt::Break { loc } | Stmt::Continue { loc } if self.thread_loops.get() == 0 => {
                // Leaves the block-level loop around the stretch: out of every mask up to
                // the loop's, and, for `break`, out of the loop for good.
                let frames = self.frames.borrow();
                let at = frames
                    .iter()
                    .rposition(|f| f.broke.is_some())
                    .expect("checked: inside a loop");
                let masks: Vec<Ident> = frames[at..].iter().map(|f| f.mask.clone()).collect();
                let broke = match s {
                    Stmt::Break { .. } => {
                        let b = frames[at].broke.clone().expect("a loop");
                        quote!(#b[#t] = true;)
                    }
                    _ => TokenStream::new(),
                };
                quote_spanned!(loc.span.proc_macro()=> { #broke #(#masks[#t] = false;)* break #label; })
            }
            _ => return None,
        })
    }
}

/// Whether `stmts` wait on an mbarrier somewhere.
fn waits(stmts: &[Stmt]) -> bool {
    walk_stmts(stmts).any(|s| matches!(s, Stmt::MbarrierWait { .. }))
}

/// The stretches of `stmts` (maximal runs of statements that are not collective), in every
/// block-level construct, and the variables of block-level `for` loops and shuffled
/// `let`s (`var`).
fn collect_stretches<'s>(
    stmts: &'s [Stmt],
    out: &mut Vec<Vec<&'s Stmt>>,
    var: &mut dyn FnMut(LocalId),
) {
    let mut run = Vec::new();
    for s in stmts {
        if !s.is_collective() {
            run.push(s);
            continue;
        }
        if !run.is_empty() {
            out.push(std::mem::take(&mut run));
        }
        match s {
            Stmt::If { then, els, .. } => {
                collect_stretches(then, out, var);
                if let Some(e) = els {
                    collect_stretches(e, out, var);
                }
            }
            Stmt::While { body, .. } | Stmt::Block { body, .. } => {
                collect_stretches(body, out, var)
            }
            Stmt::For { var: v, body, .. } => {
                var(*v);
                collect_stretches(body, out, var);
            }
            // A `let` whose value is shuffled: its local lives across the two stretches
            // of the shuffle (block_stmt).
            Stmt::Let { local, .. } => var(*local),
            _ => {}
        }
    }
    if !run.is_empty() {
        out.push(run);
    }
}

impl Writer<'_> {
    fn blocks(&self) -> &Blocks {
        self.blocks.as_ref().expect("writing a body with barriers")
    }

    /// Statements at block level: stretches, and the constructs that contain `#sync`.
    fn block_stmts(&self, stmts: &[Stmt]) -> TokenStream {
        let mut out = TokenStream::new();
        let mut run: Vec<&Stmt> = Vec::new();
        for s in stmts {
            if s.is_collective() {
                out.extend(self.stretch(&run));
                run.clear();
                out.extend(self.block_stmt(s));
            } else {
                run.push(s);
            }
        }
        out.extend(self.stretch(&run));
        out
    }

    /// A loop over the threads of the current mask running `code` for each.
    fn per_thread(&self, mask: &Ident, skip: TokenStream, code: TokenStream) -> TokenStream {
        let (n, t, block, ctx) = (count_ident(), thread_ident(), block_ident(), ctx_ident());
        let prologue = prologue(self.body, Mode::Emulate);
        let joint = self.blocks().borrow_joint();
        quote! {{
            #joint
            for #t in 0..#n {
                if !#mask[#t] #skip {
                    continue;
                }
                let #ctx = #block.thread(#t);
                #prologue
                #code
            }
        }}
    }

    /// A stretch: the statements, for each present thread.
    fn stretch(&self, run: &[&Stmt]) -> TokenStream {
        if run.is_empty() {
            return TokenStream::new();
        }
        let label = stretch_label();
        let code: TokenStream = run.iter().map(|s| self.stmt(s)).collect();
        let mask = self.blocks().mask();
        self.per_thread(&mask, TokenStream::new(), quote!(#label: { #code }))
    }

    /// A statement that contains `#sync`, at block level.
    fn block_stmt(&self, s: &Stmt) -> TokenStream {
        let b = self.blocks();
        let (n, t, block) = (count_ident(), thread_ident(), block_ident());
        let outer = b.mask();
        match s {
            Stmt::Sync { loc } => {
                let line = loc.line;
                quote_spanned!(loc.span.proc_macro()=> if !#block.sync(#line, &#outer) { return; })
            }
            // Each thread's tile pointers, then the warpgroup's product.
            Stmt::Mma {
                a: tile_a,
                b: tile_b,
                d,
                wgmma: Some(w),
                loc,
                ..
            } => {
                let ExprKind::Local(d) = d.kind else {
                    unreachable!("checked: D of #mma is a local array")
                };
                let (d, line, cols) = (spill_ident(d), loc.line, w.n as usize);
                let (pa, pb) = (b.fresh("a"), b.fresh("b"));
                let (ea, eb) = (self.expr(tile_a), self.expr(tile_b));
                let pointers = self.per_thread(
                    &outer,
                    TokenStream::new(),
                    quote!(#pa[#t] = ::core::option::Option::Some(#ea); #pb[#t] = ::core::option::Option::Some(#eb);),
                );
                let (ao, bo) = (&w.a_offsets, &w.b_offsets);
                let joint = b.borrow_joint();
                let [da, db] = [&w.a, &w.b].map(|d| {
                    let swizzle = format_ident!("{}", format!("{:?}", d.swizzle));
                    let (mn_major, lbo, sbo) = (d.mn_major, d.lbo, d.sbo);
                    quote!(::parray::__private::ir::Descriptor { swizzle: ::parray::__private::ir::Swizzle::#swizzle, mn_major: #mn_major, lbo: #lbo, sbo: #sbo })
                });
                let asynchronous = !w.wait;
                quote_spanned!(loc.span.proc_macro()=> {
                    let mut #pa = ::std::vec![::core::option::Option::None; #n];
                    let mut #pb = ::std::vec![::core::option::Option::None; #n];
                    #pointers
                    {
                        #joint
                        ::parray::__private::wgmma_m64nk(&#outer, [&#pa, &#pb], [&[#(#ao),*], &[#(#bo),*]], [#da, #db], &#d, #cols, (#line, #asynchronous));
                    }
                })
            }
            // The emulation computes each wgmma where it is issued; the groups it counts,
            // and what their tiles are, are for its checks of what runs meanwhile.
            Stmt::MmaCommit { loc } => {
                let line = loc.line;
                quote_spanned!(loc.span.proc_macro()=> #block.wgmma_commit(&#outer, #line);)
            }
            // Each thread's barrier and parity, then the block's waits (SPEC 3.9).
            Stmt::MbarrierWait { bar, parity, loc } => {
                let line = loc.line;
                let (pb, pp) = (b.fresh("b"), b.fresh("p"));
                let (eb, ep) = (self.expr(bar), self.expr(parity));
                let each = self.per_thread(
                    &outer,
                    TokenStream::new(),
                    quote!(#pb[#t] = ::core::option::Option::Some(#eb); #pp[#t] = #ep;),
                );
                quote_spanned!(loc.span.proc_macro()=> {
                    let mut #pb = ::std::vec![::core::option::Option::None; #n];
                    let mut #pp = ::std::vec![0u32; #n];
                    #each
                    #block.mbarrier_wait(&#outer, &#pb, &#pp, #line).await;
                })
            }
            Stmt::SetMaxNreg { loc, .. } => {
                let line = loc.line;
                quote_spanned!(loc.span.proc_macro()=> #block.setmaxnreg(&#outer, #line);)
            }
            Stmt::MmaWait { groups, loc, .. } => {
                let line = loc.line;
                quote_spanned!(loc.span.proc_macro()=> #block.wgmma_wait(&#outer, #groups, #line);)
            }
            Stmt::Mma { a, b, d, loc, .. } => {
                // Each operand, a register array used past its stretch, is one per thread.
                let spilled = |e: &crate::ir::Expr| match e.kind {
                    ExprKind::Local(id) => spill_ident(id),
                    _ => unreachable!("checked: an operand of #mma is a local array"),
                };
                let joint = self.blocks().borrow_joint();
                let (a, b, d, line) = (spilled(a), spilled(b), spilled(d), loc.line);
                quote_spanned!(loc.span.proc_macro()=> { #joint ::parray::__private::mma_m16n8k16(&#outer, &#a, &#b, &#d, #line); })
            }
            // Every lane of a warp there, then each thread's own moves: the elements
            // the warp's ldmatrix (stmatrix) moves into (from) its registers.
            Stmt::Matrices {
                store, scalar, loc, ..
            } => {
                let instruction = match store {
                    true => "an stmatrix",
                    false => "an ldmatrix",
                };
                let line = loc.line;
                let moves: TokenStream = scalar.iter().map(|s| self.stmt(s)).collect();
                let moves = self.per_thread(&outer, TokenStream::new(), moves);
                quote_spanned!(loc.span.proc_macro()=> {
                    ::parray::__private::whole_warps(&#outer, "#copy", #instruction, #line);
                    #moves
                })
            }
            Stmt::Block { body, .. } => {
                let inner = self.block_stmts(body);
                quote!({ #inner })
            }
            Stmt::If {
                cond, then, els, ..
            } => {
                let (yes, no) = (b.fresh("m"), b.fresh("m"));
                let c = self.expr(cond);
                let eval = self.per_thread(
                    &outer,
                    TokenStream::new(),
                    quote! {
                        let __parray_c: bool = #c;
                        #yes[#t] = __parray_c;
                        #no[#t] = !__parray_c;
                    },
                );
                let roles = els
                    .as_ref()
                    .filter(|e| b.joint.borrow().is_none() && (waits(then) || waits(e)));
                let branches = match roles {
                    Some(els) => self.roles((&yes, then), (&no, els)),
                    None => {
                        let then = self.framed(&yes, None, then);
                        let els = els.as_ref().map(|e| self.framed(&no, None, e));
                        quote! {
                            if #yes.contains(&true) { #then }
                            if #no.contains(&true) { #els }
                        }
                    }
                };
                quote! {{
                    let mut #yes = ::std::vec![false; #n];
                    let mut #no = ::std::vec![false; #n];
                    #eval
                    #branches
                }}
            }
            Stmt::While { cond, body, .. } => {
                let (m, broke) = (b.fresh("m"), b.fresh("b"));
                let c = self.expr(cond);
                let eval = self.per_thread(
                    &outer,
                    quote!(|| #broke[#t]),
                    quote! {
                        if #c { #m[#t] = true; } else { #broke[#t] = true; }
                    },
                );
                let body = self.framed(&m, Some(&broke), body);
                quote! {{
                    let mut #broke = ::std::vec![false; #n];
                    loop {
                        let mut #m = ::std::vec![false; #n];
                        #eval
                        if !#m.contains(&true) { break; }
                        #body
                    }
                }}
            }
            Stmt::For {
                var,
                start,
                end,
                inclusive,
                body,
                ..
            } => {
                let (m, broke, ends, first) =
                    (b.fresh("m"), b.fresh("b"), b.fresh("e"), b.fresh("first"));
                let v = spill_ident(*var);
                let ty = self
                    .body
                    .local(*var)
                    .ty
                    .and_then(|t| self.annotation(t))
                    .expect("a for variable is a number");
                let (s, e) = (self.expr(start), self.expr(end));
                let bounds = self.per_thread(
                    &outer,
                    TokenStream::new(),
                    quote! {
                        #v[#t] = #s;
                        #ends[#t] = #e;
                    },
                );
                let cmp = if *inclusive { quote!(<=) } else { quote!(<) };
                let step = self.per_thread(
                    &outer,
                    quote!(|| #broke[#t]),
                    quote! {
                        if !#first { #v[#t] += 1; }
                        if #v[#t] #cmp #ends[#t] { #m[#t] = true; } else { #broke[#t] = true; }
                    },
                );
                let body = self.framed(&m, Some(&broke), body);
                quote! {{
                    let mut #ends: ::std::vec::Vec<#ty> = ::std::vec![::core::default::Default::default(); #n];
                    #bounds
                    let mut #broke = ::std::vec![false; #n];
                    let mut #first = true;
                    loop {
                        let mut #m = ::std::vec![false; #n];
                        #step
                        #first = false;
                        if !#m.contains(&true) { break; }
                        #body
                    }
                }}
            }
            Stmt::Let { loc, .. } | Stmt::Expr { loc, .. } => {
                // A statement with shuffles: each shuffle's operands, for every present
                // thread; then the statement, each shuffle reading its lane's operand.
                let mut vectors = TokenStream::new();
                let mut operands = TokenStream::new();
                s.for_each_part(&mut |part| {
                    let crate::ir::Part::Expr(e) = part else {
                        return;
                    };
                    shuffles(e, &mut |e| {
                        let ExprKind::ShflDown { value, delta, slot } = &e.kind else {
                            unreachable!("a shuffle")
                        };
                        let (v, d) = shuffle_idents(*slot);
                        let ty = self.annotation(e.ty).expect("checked: a number");
                        vectors.extend(quote! {
                            let mut #v: ::std::vec::Vec<#ty> = ::std::vec![::core::default::Default::default(); #n];
                            let mut #d: ::std::vec::Vec<u32> = ::std::vec![0; #n];
                        });
                        let (value, delta) = (self.expr(value), self.expr(delta));
                        operands.extend(quote! { #v[#t] = #value; #d[#t] = #delta; });
                    });
                });
                let operands = self.per_thread(&outer, TokenStream::new(), operands);
                let stmt = self.stretch(&[s]);
                quote_spanned!(loc.span.proc_macro()=> { #vectors #operands #stmt })
            }
            other => unreachable!("a statement that is not collective is in a stretch: {other:?}"),
        }
    }

    /// `shfl_down(value, delta)` in the statement after its operands were gathered: the
    /// value of the lane `delta` above this thread's, checked that its warp is all there.
    pub(super) fn shuffled(&self, slot: usize, span: Span) -> TokenStream {
        let (v, d) = shuffle_idents(slot);
        let (mask, t) = (self.blocks().mask(), thread_ident());
        quote_spanned!(span=> ::parray::__private::shfl_down(&#mask, &#v, &#d, #t))
    }

    /// The branches of an `if` with an `else`, either waiting on mbarriers: a producer's
    /// role and its consumers' (SPEC 3.9, "Roles"), the one waiting for what the other
    /// does. For the threads of each (`yes`, `no`), the two branches as futures that the
    /// block runs interleaved (`join`), each running on until a wait the other must
    /// complete; the per-thread vectors both use are borrowed from one `RefCell` by each
    /// stretch. A branch that stops the body (a diverged `#sync`) stops the other, and the
    /// body after them.
    fn roles(&self, (yes, then): (&Ident, &[Stmt]), (no, els): (&Ident, &[Stmt])) -> TokenStream {
        let b = self.blocks();
        let block = block_ident();
        let cell = b.fresh("joint");
        let names = b.joint_names();
        b.joint.replace(Some((cell.clone(), names.clone())));
        let then = self.framed(yes, None, then);
        let els = self.framed(no, None, els);
        b.joint.replace(None);
        quote! {
            {
                let #cell = ::core::cell::RefCell::new((#(&mut #names,)*));
                let __parray_then = async { if #yes.contains(&true) { #then } };
                let __parray_else = async { if #no.contains(&true) { #els } };
                ::parray::__private::join(#block, __parray_then, __parray_else).await;
            }
            if #block.failed() { return; }
        }
    }

    /// `stmts` at block level for the threads of `mask` (and a loop's `broke`).
    fn framed(&self, mask: &Ident, broke: Option<&Ident>, stmts: &[Stmt]) -> TokenStream {
        let b = self.blocks();
        b.frames.borrow_mut().push(Frame {
            mask: mask.clone(),
            broke: broke.cloned(),
        });
        let out = self.block_stmts(stmts);
        b.frames.borrow_mut().pop();
        out
    }
}
