//! Rust back end of the body IR: the statements of a checked body as tokens, for the
//! threads of a pthd array or the CPU emulation of a cuda grid.
//!
//! Every node is written with the user's span, so rustc's messages and run-time panics
//! (bounds, overflow in debug builds) point at the user's statement. Element accesses go
//! through the runtime's `Access` and `AccessMut` (which take `&self`: the threads of an
//! array write through shared handles, as CUDA threads do), checked unless
//! [`crate::passes::bounds`] proved them in range. Under the emulation `usize` is `u32`, as in
//! the kernel: both compute index arithmetic in 32 bits.

use proc_macro2::{Delimiter, Group, Ident, Literal, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};

use crate::ir::{BinOp, Body, Check, Expr, ExprKind, Len, Lit, LocalId, Scalar, Stmt, Ty, UnOp};
use crate::passes::bounds::Proved;
use parray_layout::grid::HwIndex;

mod blocks;
pub mod elem;
pub mod hoist;
pub mod offsets;

pub use blocks::block_body_tokens;
use parray_layout::kinds::{ElemType, MemKind};

/// Which Rust the body becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// A pthd thread: `__parray_ctx` is the runtime's pthd `ThreadCtx`.
    Pthd,
    /// An emulated CUDA thread: `__parray_ctx` is the emulator's `ThreadCtx` (a body with
    /// `#sync` is written once per block by [`block_body_tokens`]).
    Emulate,
}

/// The local holding a thread index (`tid_0_1` -> `__parray_tid_0_1`).
pub fn tid_ident(path: &str) -> Ident {
    if path.is_empty() {
        Ident::new("__parray_tid", Span::call_site())
    } else {
        Ident::new(&format!("__parray_tid_{path}"), Span::call_site())
    }
}

/// The context every thread's body receives.
pub fn ctx_ident() -> Ident {
    Ident::new("__parray_ctx", Span::call_site())
}

/// The name the emulated body of a grid sized at run time finds its launch's thread
/// indices under (`parray::generic::KernelSource::tids`), bound by the detour.
pub fn launch_tids_ident() -> Ident {
    Ident::new("__parray_tids", Span::call_site())
}

/// The kernel's TMA maps ([`crate::ir::Tma::map`] indexes them), which the emulation of
/// its copies reads as the launch encodes them.
pub fn tma_maps_ident() -> Ident {
    Ident::new("__parray_tma_maps", Span::call_site())
}

/// The body's thread-index prologue and statements.
pub fn body_tokens(proved: &Proved, mode: Mode) -> TokenStream {
    let mut out = prologue_tokens(proved, mode);
    out.extend(stmts_tokens(proved, mode));
    out
}

/// The statements of the body.
pub fn stmts_tokens(proved: &Proved, mode: Mode) -> TokenStream {
    let body = proved.body();
    Writer::new(body, mode).stmts(&body.stmts)
}

/// The statements of the body, which a loop of host code holds (`host!`): the reads of
/// run-time types they make are added to the loop's `hoisted`, which the caller writes
/// before the loop ([`hoist`]).
pub fn stmts_tokens_in_loop(
    proved: &Proved,
    mode: Mode,
    hoisted: &mut hoist::Hoisted,
) -> TokenStream {
    let body = proved.body();
    let w = Writer::new(body, mode);
    hoisted.extend(
        body.stmts
            .iter()
            .flat_map(|s| hoist::reads(s, &body.array))
            .collect(),
    );
    *w.hoisted.borrow_mut() = Some(std::mem::take(hoisted));
    let out = w.stmts(&body.stmts);
    *hoisted = w.hoisted.take().expect("set above");
    out
}

/// The body's functions as Rust functions (items, so once before the statements that
/// call them, in any block); a cuda body's for the emulation.
pub fn functions_tokens(proved: &Proved, mode: Mode) -> TokenStream {
    let body = proved.body();
    let w = Writer::new(body, mode);
    body.functions
        .iter()
        .map(|f| {
            let name = function_ident(f);
            let params = f.params.iter().map(|p| {
                let l = body.local(*p);
                let id = w.local(*p);
                // A pointer it only reads is the kernel's argument as it is, a read or a
                // write handle.
                let ty = match l.ty {
                    Some(Ty::Ptr { elem, .. }) if f.writable.contains(p) => {
                        let elem = w.elem(elem);
                        quote!(::parray::PtrMut<'_, #elem>)
                    }
                    Some(Ty::Ptr { elem, .. }) => {
                        let elem = w.elem(elem);
                        quote!(impl ::parray::__private::Pointer<#elem>)
                    }
                    t => t.and_then(|t| w.annotation(t)).expect(
                        "checked: a function's parameter is a number, a vector, a record or a pointer",
                    ),
                };
                let mutable = l.mutable.then(|| quote!(mut));
                quote!(#mutable #id: #ty)
            });
            let ret = match f.ret {
                Ty::Unit => TokenStream::new(),
                t => {
                    let t = w
                        .annotation(t)
                        .expect("checked: a function returns a number or a vector");
                    quote!(-> #t)
                }
            };
            let stmts = w.stmts(&f.stmts);
            let value = f.value.as_ref().map(|v| w.expr(v));
            quote! {
                #[allow(non_snake_case, unused_parens, clippy::all)]
                fn #name(#(#params),*) #ret { #stmts #value }
            }
        })
        .collect()
}

/// The fields `pos.x` of a path `["pos", "x"]`, for `|e| &mut e.pos.x`.
fn field_path(path: &[&str], span: Span) -> TokenStream {
    let fields = path.iter().map(|f| Ident::new(f, span));
    quote_spanned!(span=> #(#fields).*)
}

/// The Rust name of a body's function (not the user's, which a pthd body calls).
fn function_ident(f: &crate::ir::Function) -> Ident {
    Ident::new(&format!("__parray_fn_{}", f.name), Span::call_site())
}

/// The `let`s of the thread indices the body uses, from the hardware indices.
pub fn prologue_tokens(proved: &Proved, mode: Mode) -> TokenStream {
    prologue(proved.body(), mode)
}

fn prologue(body: &Body, mode: Mode) -> TokenStream {
    let w = Writer::new(body, mode);
    let ctx = ctx_ident();
    let mut out = TokenStream::new();
    let index_ty = w.scalar(Scalar::Usize);
    for (k, (path, ix)) in body.tids.iter().enumerate() {
        let id = tid_ident(path);
        // The launch's own (a grid sized at run time), evaluated as given.
        if body.tids_at_launch && mode == Mode::Emulate {
            let tids = launch_tids_ident();
            out.extend(quote!(#[allow(unused_variables)] let #id: #index_ty =
                #ctx.tid_at(&#tids[#k]);));
            continue;
        }
        let off = parray_layout::Offset {
            expr: ix.expr.clone(),
            vars: ix.vars.clone(),
        };
        let value = offset_tokens(&off, &index_ty, &|v| {
            let hw = ix.hw.iter().find(|(id, _)| *id == v).map(|(_, h)| *h);
            match hw.expect("every variable is a hardware index") {
                HwIndex::Tid => quote!(#ctx.tid()),
                HwIndex::BlockIdx(a) => {
                    let f = axis(a);
                    quote!(#ctx.block_idx().#f)
                }
                HwIndex::ThreadIdx(a) => {
                    let f = axis(a);
                    quote!(#ctx.thread_idx().#f)
                }
            }
        });
        out.extend(quote!(#[allow(unused_variables)] let #id: #index_ty = #value;));
    }
    out
}

fn axis(a: usize) -> Ident {
    Ident::new(["x", "y", "z"][a], Span::call_site())
}

/// The number of elements of an array a body creates, a `usize`: its literal, or the
/// extent of its type `type_name` at the bound sizes (the detour checked them bound).
fn len_tokens(len: Len, type_name: &str, span: Span) -> TokenStream {
    match len {
        Len::Fixed(n) => {
            let n = Literal::usize_unsuffixed(n as usize);
            quote!(#n)
        }
        Len::AtRunTime => {
            let ty = Ident::new(type_name, span);
            quote_spanned!(span=> <#ty as ::parray::DataType>::extent())
        }
    }
}

/// An offset as Rust arithmetic in `ty` (`usize`, or `u32` under the emulation).
fn offset_tokens(
    off: &parray_layout::Offset,
    ty: &TokenStream,
    var: &dyn Fn(parray_layout::VarId) -> TokenStream,
) -> TokenStream {
    match off.as_const() {
        Some(c) => {
            let lit: Literal = format!("{c}{ty}").parse().expect("a literal");
            quote!(#lit)
        }
        None => offsets::to_tokens(off, var),
    }
}

struct Writer<'b> {
    body: &'b Body,
    mode: Mode,
    /// For an emulated body with barriers: the state of its stretches (see `blocks`).
    blocks: Option<blocks::Blocks>,
    /// The reads of run-time types hoisted before the outermost loop being written.
    hoisted: std::cell::RefCell<Option<hoist::Hoisted>>,
}

/// The binding of the `k`th host value a cuda body reads ([`Body::captures`]) in the
/// emulation: not the user's name, which may be a Rust `const` (a pattern in a `let`).
pub fn host_value_ident(k: usize) -> Ident {
    Ident::new(&format!("__parray_host{k}"), Span::call_site())
}

/// The name a body finds the run-time constant `name` under (a `usize` the detour reads
/// when it starts, [`ExprKind::RuntimeConst`]).
pub fn runtime_const_ident(name: &str) -> Ident {
    Ident::new(&format!("__parray_const_{name}"), Span::call_site())
}

/// The Rust type of a scalar under `mode` (`usize` is `u32` under the emulation).
pub fn scalar_tokens(s: Scalar, mode: Mode) -> TokenStream {
    if s.is_half() {
        let id = Ident::new(s.rust_name(), Span::call_site());
        return quote!(::parray::#id);
    }
    let name = match (s, mode) {
        (Scalar::Usize, Mode::Emulate) => "u32",
        _ => s.rust_name(),
    };
    let id = Ident::new(name, Span::call_site());
    quote!(#id)
}

/// The Rust type of one element of `e` under `mode`.
pub fn elem_tokens(e: ElemType, mode: Mode) -> TokenStream {
    let id = Ident::new(e.rust_type(), Span::call_site());
    match (Scalar::of_elem(e), e) {
        (Some(s), _) => scalar_tokens(s, mode),
        // The user's struct, in scope where its arrays are declared and used.
        (None, ElemType::Record(_)) => quote!(#id),
        (None, _) => quote!(::parray::#id),
    }
}

impl<'b> Writer<'b> {
    fn new(body: &'b Body, mode: Mode) -> Self {
        Writer {
            body,
            mode,
            blocks: None,
            hoisted: Default::default(),
        }
    }

    fn scalar(&self, s: Scalar) -> TokenStream {
        scalar_tokens(s, self.mode)
    }

    fn elem(&self, e: ElemType) -> TokenStream {
        elem_tokens(e, self.mode)
    }

    /// The annotation of a `let` of type `t`, where one can be written (a pointer is a
    /// read or a write handle, as what it points into: rustc infers which).
    fn annotation(&self, t: Ty) -> Option<TokenStream> {
        match t {
            Ty::Scalar(s) => Some(self.scalar(s)),
            Ty::Vector(e) => Some(self.elem(e)),
            Ty::Record(r) => Some(self.elem(ElemType::Record(r))),
            _ => None,
        }
    }

    /// The block's shared array `slot` of `len` elements of the type `type_name`, from
    /// `owner` (a thread's context, or the block of a body with barriers).
    #[allow(clippy::too_many_arguments)]
    fn shared_array(
        &self,
        owner: &TokenStream,
        elem: ElemType,
        len: Len,
        type_name: &str,
        soa: bool,
        slot: usize,
        span: Span,
    ) -> TokenStream {
        let el = self.elem(elem);
        let len = len_tokens(len, type_name, span);
        quote_spanned!(span=> #owner.shared_ptr::<#el>(#slot, #len, #type_name, #soa))
    }

    /// A thread's register array of the type `type_name`: its elements in an array where
    /// their number is a literal (a constant to rustc, as fast as a Rust array), else
    /// allocated at the bound sizes.
    fn registers(&self, elem: ElemType, len: Len, type_name: &str, span: Span) -> TokenStream {
        let el = self.elem(elem);
        let cell = quote!(::core::cell::UnsafeCell<#el>);
        let n = len_tokens(len, type_name, span);
        match len {
            Len::Fixed(_) => quote_spanned!(span=>
                ::parray::__private::Registers::<#el, [#cell; #n]>::new(#type_name)),
            Len::AtRunTime => quote_spanned!(span=>
                ::parray::__private::Registers::<#el, ::std::boxed::Box<[#cell]>>::with_len(#n, #type_name)),
        }
    }

    fn local(&self, id: LocalId) -> Ident {
        let l = self.body.local(id);
        Ident::new(&l.name, l.span.proc_macro())
    }

    /// A local as a value, at the span of its use (where a panic in the expression that
    /// uses it points); in a stretch, a local that lives across stretches is the thread's
    /// element of its per-thread vector.
    fn local_value(&self, id: LocalId, span: Span) -> TokenStream {
        if let Some(v) = self.blocks.as_ref().and_then(|b| b.spilled_value(id)) {
            return v;
        }
        if let Some(k) = self.body.captures.iter().position(|c| *c == id) {
            let name = host_value_ident(k);
            return quote!(#name);
        }
        let name = Ident::new(&self.body.local(id).name, span);
        quote!(#name)
    }

    fn stmts(&self, stmts: &[Stmt]) -> TokenStream {
        stmts.iter().map(|s| self.stmt(s)).collect()
    }

    /// The body of a loop of the thread's own (a `break` in it is the loop's).
    fn loop_body(&self, body: &[Stmt]) -> TokenStream {
        match &self.blocks {
            Some(b) => b.in_thread_loop(|| self.stmts(body)),
            None => self.stmts(body),
        }
    }

    fn stmt(&self, s: &Stmt) -> TokenStream {
        if let Some(b) = &self.blocks {
            if let Some(t) = b.stretch_stmt(self, s) {
                return t;
            }
        }
        if matches!(s, Stmt::For { .. } | Stmt::While { .. }) && self.hoisted.borrow().is_none() {
            let mut hoisted = hoist::Hoisted::default();
            hoisted.extend(hoist::reads(s, &self.body.array));
            if !hoisted.is_empty() {
                let span = s.loc().span.proc_macro();
                *self.hoisted.borrow_mut() = Some(hoisted);
                let looped = self.stmt(s);
                let hoisted = self.hoisted.take().expect("set above");
                return hoisted.around(looped, span);
            }
        }
        let ctx = ctx_ident();
        match s {
            Stmt::Let { local, init, loc } => {
                let l = self.body.local(*local);
                let name = self.local(*local);
                let mutability = l.mutable.then(|| quote!(mut));
                let ty = l.ty.and_then(|t| self.annotation(t)).map(|t| quote!(: #t));
                let init = init.as_ref().map(|e| {
                    let e = self.expr(e);
                    quote!(= #e)
                });
                quote_spanned!(loc.span.proc_macro()=> let #mutability #name #ty #init;)
            }
            Stmt::Create {
                local,
                type_name,
                elem,
                mem,
                len,
                soa,
                slot,
                loc,
            } => {
                let name = self.local(*local);
                let span = loc.span.proc_macro();
                let array = match mem {
                    MemKind::Smem => {
                        self.shared_array(&quote!(#ctx), *elem, *len, type_name, *soa, *slot, span)
                    }
                    _ => self.registers(*elem, *len, type_name, span),
                };
                quote_spanned!(span=> let #name = #array;)
            }
            Stmt::Expr { expr, loc } => {
                let e = self.expr(expr);
                quote_spanned!(loc.span.proc_macro()=> #e;)
            }
            Stmt::If {
                cond,
                then,
                els,
                loc,
            } => {
                let c = self.expr(cond);
                let t = self.stmts(then);
                let e = els.as_ref().map(|e| {
                    let e = self.stmts(e);
                    quote!(else { #e })
                });
                quote_spanned!(loc.span.proc_macro()=> if #c { #t } #e)
            }
            Stmt::While { cond, body, loc } => {
                let c = self.expr(cond);
                let b = self.loop_body(body);
                quote_spanned!(loc.span.proc_macro()=> while #c { #b })
            }
            Stmt::For {
                var,
                start,
                end,
                inclusive,
                body,
                loc,
                ..
            } => {
                let v = self.local(*var);
                let (s, e) = (self.expr(start), self.expr(end));
                let b = self.loop_body(body);
                let range = if *inclusive {
                    quote!(#s..=#e)
                } else {
                    quote!(#s..#e)
                };
                quote_spanned!(loc.span.proc_macro()=> for #v in #range { #b })
            }
            Stmt::Block { body, loc } => {
                let b = self.stmts(body);
                quote_spanned!(loc.span.proc_macro()=> { #b })
            }
            // Decided by `bounds::prove`; without its decision, the element loop.
            Stmt::Vectorised { scalar, .. } => self.stmts(scalar),
            // Element by element, each side's offsets evaluated at the bound sizes.
            Stmt::GenericCopy { scalar, .. } => self.stmts(scalar),
            Stmt::Mma { .. }
            | Stmt::MmaWait { .. }
            | Stmt::MmaCommit { .. }
            | Stmt::SetMaxNreg { .. }
            | Stmt::Matrices { .. } => {
                unreachable!("a warp collective is written by `blocks`")
            }
            // A pthd thread's copy moves at once: there is nothing to wait for.
            Stmt::Async { body, loc } if self.mode == Mode::Pthd => {
                let b = self.stmts(body);
                quote_spanned!(loc.span.proc_macro()=> { #b })
            }
            Stmt::Wait { .. } if self.mode == Mode::Pthd => TokenStream::new(),
            // The emulation's mbarrier model and TMA copies (SPEC 3.9, "TMA copies"); a
            // wait is the block's, written by `blocks`. (The front end refuses the forms in
            // a pthd body.)
            Stmt::MbarrierInit { bar, arrivals, loc } => {
                let (b, n) = (self.expr(bar), self.expr(arrivals));
                quote_spanned!(loc.span.proc_macro()=> #ctx.mbarrier_init(&(#b), #n);)
            }
            Stmt::MbarrierArrive { bar, loc } => {
                let b = self.expr(bar);
                quote_spanned!(loc.span.proc_macro()=> #ctx.mbarrier_arrive(&(#b));)
            }
            Stmt::Tma {
                src,
                offset,
                dst,
                bar,
                tma,
                loc,
            } => {
                let (s, o, d, b) = (
                    self.expr(src),
                    self.expr(offset),
                    self.expr(dst),
                    self.expr(bar),
                );
                // The map as the kernel has it (planned when the body was built, or at
                // the sizes its kernel was specialised at).
                let (maps, map) = (tma_maps_ident(), tma.map);
                let (bytes, decl) = (tma.box_bytes(), &tma.src_ty);
                quote_spanned!(loc.span.proc_macro()=> {
                    #ctx.tma_begin();
                    let __parray_src = #s;
                    let __parray_len = __parray_src.remaining();
                    ::parray::__private::tma_move(&__parray_src, ((#o) as usize, __parray_len), &(#d), &#maps[#map], #decl);
                    #ctx.tma_commit(&(#b), #bytes);
                })
            }
            Stmt::MbarrierWait { .. } => unreachable!("a `#wait .. parity` is written by `blocks`"),
            // The emulation holds the copy's stores until the thread's `#wait`.
            Stmt::Async { body, loc } => {
                let b = self.stmts(body);
                quote_spanned!(loc.span.proc_macro()=> {
                    #ctx.copy_async_begin();
                    #b
                    #ctx.copy_async_commit();
                })
            }
            Stmt::Wait { groups, loc } => {
                quote_spanned!(loc.span.proc_macro()=> #ctx.wait_async(#groups);)
            }
            Stmt::Sync { loc } => {
                // Under the emulation a body with barriers is written by `blocks`.
                let line = loc.line;
                quote_spanned!(loc.span.proc_macro()=> #ctx.sync(#line);)
            }
            Stmt::Break { loc } => quote_spanned!(loc.span.proc_macro()=> break;),
            Stmt::Continue { loc } => quote_spanned!(loc.span.proc_macro()=> continue;),
            Stmt::Return { loc } => quote_spanned!(loc.span.proc_macro()=> return;),
            Stmt::Print {
                pieces,
                args,
                newline,
                loc,
            } => {
                let fmt: String = pieces
                    .iter()
                    .map(|p| p.replace('{', "{{").replace('}', "}}"))
                    .collect::<Vec<_>>()
                    .join("{}");
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
                if *newline {
                    quote_spanned!(loc.span.proc_macro()=> ::std::println!(#fmt #(, #args)*);)
                } else {
                    quote_spanned!(loc.span.proc_macro()=> ::std::print!(#fmt #(, #args)*);)
                }
            }
        }
    }

    /// A `usize` of a type parameter (an offset, a size) as the body's `usize`: the
    /// emulation's is 32 bits, as the kernel's (the launch checked that it fits).
    fn generic_value(&self, value: TokenStream) -> TokenStream {
        match self.mode {
            Mode::Pthd => value,
            Mode::Emulate => quote!(::parray::__private::index32(#value)),
        }
    }

    /// An index value as the Rust `usize` that `Access` and the offset functions of data
    /// types take (the emulation's 32-bit `usize` widened).
    fn host_index(&self, e: &Expr) -> TokenStream {
        match (e.ty, self.mode) {
            (Ty::Scalar(Scalar::Usize), Mode::Pthd) => self.expr(e),
            (Ty::Host, _) => {
                let t = self.expr(e);
                quote_spanned!(e.span.proc_macro()=> ::parray::__private::ix(#t))
            }
            _ => {
                let t = self.operand(e, CAST);
                quote_spanned!(e.span.proc_macro()=> #t as usize)
            }
        }
    }

    /// A pointer-like operand as a borrowed `Access` value.
    fn access(&self, e: &Expr) -> TokenStream {
        let t = self.operand(e, UNARY);
        quote_spanned!(e.span.proc_macro()=> &#t)
    }

    /// An operand of an operator that binds with strength `min`: parenthesised if it binds
    /// less tightly (a cast always, as `a as u32 < b` would read as generics).
    fn operand(&self, e: &Expr, min: u8) -> TokenStream {
        let t = self.expr(e);
        let p = strength(e);
        if p < min || (matches!(e.kind, ExprKind::Cast(..)) && min < CAST) {
            let mut g = Group::new(Delimiter::Parenthesis, t);
            g.set_span(e.span.proc_macro());
            TokenTree::Group(g).into()
        } else {
            t
        }
    }

    fn expr(&self, e: &Expr) -> TokenStream {
        let span = e.span.proc_macro();
        match &e.kind {
            ExprKind::Lit(l) => self.lit(l, e.ty, span),
            ExprKind::Local(id) => self.local_value(*id, span),
            ExprKind::Capture(path) => path_tokens(path, span),
            // The path itself: the same value, and no literal for lints to question.
            ExprKind::NumberConst(c) => {
                let name = Ident::new(c.name, span);
                let ty = respan(scalar_tokens(c.ty, self.mode), span);
                if c.math {
                    quote_spanned!(span=> ::core::#ty::consts::#name)
                } else {
                    quote_spanned!(span=> #ty::#name)
                }
            }
            ExprKind::HostCall(path, args) => {
                let f = path_tokens(path, span);
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
                quote_spanned!(span=> #f(#(#args),*))
            }
            ExprKind::Tid(path) => {
                let id = tid_ident(path);
                quote!(#id)
            }
            ExprKind::Size(n) => self.lit(&Lit::Int(u128::from(*n), None), Ty::USIZE, span),
            ExprKind::Cnt(c) => quote_spanned!(span=> #c),
            ExprKind::Offset { off, args, of } => {
                let index_ty = self.scalar(Scalar::Usize);
                // Each variable is an operand of the offset's products and sums.
                // Debug builds check each index against its own dimension (the access
                // checks only the final offset); a thread index is in range by its type.
                let ty = &of.type_name;
                let render = |v: parray_layout::VarId| -> TokenStream {
                    let a = &args[v.0 as usize];
                    let size = Literal::u64_unsuffixed(off.vars.max(v) + 1);
                    let checked = |value: TokenStream| quote_spanned!(a.span.proc_macro()=> ::parray::__private::index_in(#value, #size, #ty));
                    match (a.ty, self.mode) {
                        (Ty::Host, _) => {
                            let t = self.expr(a);
                            quote_spanned!(a.span.proc_macro()=> ::parray::__private::ix_in(#t, #size, #ty))
                        }
                        (Ty::Scalar(Scalar::Usize), _) if matches!(a.kind, ExprKind::Tid(_)) => {
                            self.operand(a, ATOM)
                        }
                        (Ty::Scalar(Scalar::Usize), _) => checked(self.expr(a)),
                        _ => {
                            let t = self.operand(a, CAST);
                            checked(quote_spanned!(a.span.proc_macro()=> #t as #index_ty))
                        }
                    }
                };
                let mut out = offset_tokens(off, &index_ty, &render);
                // Index expressions the simplification dropped (an index into a dimension
                // of size 1 is 0) are still the user's code: borrow them so that no
                // variable looks unused.
                let used = off.expr.vars_used();
                let dropped: Vec<TokenStream> = args
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| !used.iter().any(|v| v.0 as usize == *k))
                    .filter(|(_, a)| !matches!(a.kind, ExprKind::Tid(_)))
                    .map(|(_, a)| self.expr(a))
                    .collect();
                if !dropped.is_empty() {
                    out = value_of_block(quote!({ let _ = (#(&#dropped,)*); #out }));
                }
                quote_spanned!(span=> #out)
            }
            ExprKind::GenericOffset {
                ty, index, args, ..
            } => {
                let args = args.iter().map(|a| self.host_index(a));
                let hoisted = self.hoisted.borrow();
                let hoisted = hoisted.as_ref();
                if index.is_top_level(ty) {
                    let value = match hoisted.and_then(|h| h.of_type(ty)) {
                        Some(h) => {
                            quote_spanned!(span=> ::parray::Offsets::offset_of(#h, &[#(#args),*]))
                        }
                        None => {
                            let ty_name = Ident::new(ty, span);
                            quote_spanned!(span=> <#ty_name as ::parray::DataType>::offset_of(&[#(#args),*]))
                        }
                    };
                    return self.generic_value(value);
                }
                let read = hoist::Hoist::Form(ty.clone(), index.clone());
                let form = match hoisted.and_then(|h| h.get(&read)) {
                    Some(h) => quote!(#h),
                    None => hoist::form_tokens(ty, index, span),
                };
                self.generic_value(value_of_block(quote_spanned!(span=> {
                    #form.at(&[#(#args),*])
                })))
            }
            ExprKind::RuntimeConst { name, .. } => {
                let id = runtime_const_ident(name);
                self.generic_value(quote_spanned!(span=> #id))
            }
            // The body's own thread array (its grid sized at run time), or a data type.
            ExprKind::GenericSize { ty, path, .. } => {
                let ty_name = Ident::new(ty, span);
                if *ty == self.body.array {
                    let ta = quote_spanned!(span=> <#ty_name as ::parray::ThreadArray>);
                    return self.generic_value(match path.as_slice() {
                        [] => quote_spanned!(span=> #ta::threads()),
                        [k] => quote_spanned!(span=> #ta::dim_size(#k)),
                        _ => value_of_block(hoist::size_tokens(&ta, ty, path, span)),
                    });
                }
                let hoisted = self.hoisted.borrow();
                let hoisted = hoisted.as_ref();
                let offsets = match hoisted.and_then(|h| h.of_type(ty)) {
                    Some(h) => h,
                    None => quote_spanned!(span=> <#ty_name as ::parray::DataType>::offsets()),
                };
                self.generic_value(match path.as_slice() {
                    [] => quote_spanned!(span=> ::parray::Offsets::size(#offsets)),
                    [k] => quote_spanned!(span=> ::parray::Offsets::dim(#offsets, #k)),
                    // A dimension below the top (of a declared type).
                    _ => match hoisted
                        .and_then(|h| h.get(&hoist::Hoist::Size(ty.clone(), path.clone())))
                    {
                        Some(h) => quote!(#h),
                        None => {
                            let dt = quote_spanned!(span=> <#ty_name as ::parray::DataType>);
                            value_of_block(hoist::size_tokens(&dt, ty, path, span))
                        }
                    },
                })
            }
            ExprKind::Unary(op, x) => {
                // `-(-x)` keeps its parentheses (rustc warns of `- -x`, which reads as C's
                // decrement).
                let x = match (op, &x.kind) {
                    (UnOp::Neg, ExprKind::Unary(UnOp::Neg, _)) => self.operand(x, UNARY + 1),
                    _ => self.operand(x, UNARY),
                };
                match op {
                    UnOp::Neg => quote_spanned!(span=> -#x),
                    UnOp::Not => quote_spanned!(span=> !#x),
                }
            }
            ExprKind::Binary(op, l, r) => {
                // `a + off` on a captured buffer: the closure only borrows it.
                // (Spanned as the macro's own code: whether the borrow is needed depends on
                // what was captured, which clippy's `op_ref` should not judge.)
                if *op == BinOp::Add && matches!(l.kind, ExprKind::Capture(_)) {
                    let (l, r) = (self.operand(l, UNARY), self.host_index(r));
                    return quote!(&#l + #r);
                }
                let p = crate::ir::precedence(*op);
                let pointer = matches!(
                    l.ty,
                    Ty::Ptr { .. }
                        | Ty::Array {
                            mem: MemKind::Smem,
                            ..
                        }
                );
                if *op == BinOp::Add && pointer {
                    let (l, r) = (self.operand(l, p), self.host_index(r));
                    return quote_spanned!(span=> #l + #r);
                }
                // Left-associative; comparisons do not chain.
                let (l, r) = (self.operand(l, p), self.operand(r, p + 1));
                let op = binop_tokens(*op, span);
                quote_spanned!(span=> #l #op #r)
            }
            ExprKind::Assign(op, place, value) => self.assign(*op, place, value, span),
            // `widen` leaves three conversions of halves: to `f32`, from `f32` and `f64`.
            ExprKind::Convert(..) => unreachable!("the type check makes a cast of it"),
            ExprKind::Cast(x, s) if s.is_half() => {
                let x_tokens = self.expr(x);
                if x.ty == Ty::Scalar(Scalar::F32) {
                    let t = self.scalar(*s);
                    quote_spanned!(span=> #t::from_f32(#x_tokens))
                } else {
                    // `half`'s `from_f64` would round twice (`parray_compiler::rounding`).
                    let f = Ident::new(&format!("{}_from_f64", s.rust_name()), span);
                    quote_spanned!(span=> ::parray::__private::#f(#x_tokens))
                }
            }
            ExprKind::Cast(x, s) if x.ty.scalar().is_some_and(Scalar::is_half) => {
                let x = self.operand(x, ATOM);
                quote_spanned!(span=> #x.to_f32())
            }
            ExprKind::Cast(x, s) => {
                let x = self.operand(x, CAST);
                let t = self.scalar(*s);
                quote_spanned!(span=> #x as #t)
            }
            ExprKind::Index(base, ix, check) => {
                let (b, i) = (self.access(base), self.host_index(ix));
                match check {
                    Check::Checked(_) => quote_spanned!(span=> ::parray::Access::load(#b, #i)),
                    // SAFETY (of the generated block): `bounds::prove` showed the offset
                    // below the extent the detour checked before starting. The user's
                    // expressions are evaluated outside the block.
                    Check::Proved => value_of_block(quote_spanned!(span=> {
                        let (__parray_b, __parray_at) = (#b, #i);
                        unsafe { ::parray::Access::load_unchecked(__parray_b, __parray_at) }
                    })),
                }
            }
            ExprKind::Vector {
                base,
                at,
                lanes,
                check,
                ..
            } => {
                let (b, i) = (self.access(base), self.host_index(at));
                match check {
                    Check::Checked(_) => {
                        let load = Ident::new(&format!("load{lanes}"), span);
                        quote_spanned!(span=> ::parray::Access::#load(#b, #i))
                    }
                    // SAFETY (of the generated block): `bounds::prove` showed every lane
                    // below the extent the detour checked before starting (and the first
                    // at a multiple of the lanes). The user's expressions are evaluated
                    // outside the block.
                    Check::Proved => {
                        let load = Ident::new(&format!("load{lanes}_unchecked"), span);
                        value_of_block(quote_spanned!(span=> {
                            let (__parray_b, __parray_at) = (#b, #i);
                            unsafe { ::parray::Access::#load(__parray_b, __parray_at) }
                        }))
                    }
                }
            }
            // An element's field alone (`Access::load_field`), which is all a GPU reads (a
            // field of a record inside it too: `|e| &mut e.pos.x`), of a record the body
            // knows.
            ExprKind::Field(..)
                if e.element_field()
                    .is_some_and(|(element, _)| matches!(element.ty, Ty::Record(_))) =>
            {
                let (element, path) = e.element_field().expect("matched above");
                let ExprKind::Index(base, ix, check) = &element.kind else {
                    unreachable!("an element")
                };
                let (b, i) = (self.access(base), self.host_index(ix));
                let f = field_path(&path, span);
                match check {
                    Check::Checked(_) => {
                        quote_spanned!(span=> ::parray::Access::load_field(#b, #i, |e| &mut e.#f))
                    }
                    // SAFETY (of the generated block): as for a proved load.
                    Check::Proved => value_of_block(quote_spanned!(span=> {
                        let (__parray_b, __parray_at) = (#b, #i);
                        unsafe { ::parray::Access::load_field_unchecked(__parray_b, __parray_at, |e| &mut e.#f) }
                    })),
                }
            }
            ExprKind::Field(base, name) => {
                let b = self.operand(base, ATOM);
                let f = Ident::new(name, span);
                quote_spanned!(span=> #b.#f)
            }
            ExprKind::Method(m, recv, args) => {
                let r = self.operand(recv, ATOM);
                let name = Ident::new(m.rust_name(), span);
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
                quote_spanned!(span=> #r.#name(#(#args),*))
            }
            ExprKind::Atomic(op, p, args, _) => {
                let p = self.access(p);
                let f = Ident::new(op.rust_name(), span);
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
                quote_spanned!(span=> ::parray::AccessMut::#f(#p, 0, #(#args),*))
            }
            ExprKind::ShflDown { slot, .. } => self.shuffled(*slot, span),
            ExprKind::Call(f, args, _) => {
                let name = function_ident(&self.body.functions[*f]);
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
                quote_spanned!(span=> #name(#(#args),*))
            }
            ExprKind::MakeVector(v, args) => {
                let t = self.elem(*v);
                let args: Vec<TokenStream> = args.iter().map(|a| self.expr(a)).collect();
                quote_spanned!(span=> #t::new(#(#args),*))
            }
            ExprKind::Select(c, a, b) => {
                let (c, a, b) = (self.expr(c), self.expr(a), self.expr(b));
                quote_spanned!(span=> if #c { #a } else { #b })
            }
            ExprKind::MakeRecord {
                record,
                path,
                fields,
                base,
            } => {
                let ty = match record {
                    Some(r) => self.elem(ElemType::Record(*r)),
                    None => path.parse().expect("the path of a struct literal"),
                };
                let fields = fields.iter().map(|(name, a)| {
                    let (f, a) = (Ident::new(name, span), self.expr(a));
                    quote_spanned!(span=> #f: #a)
                });
                let base = base.as_ref().map(|b| {
                    let b = self.expr(b);
                    quote_spanned!(span=> ..#b)
                });
                quote_spanned!(span=> #ty { #(#fields,)* #base })
            }
        }
    }

    /// `x = v`, `x op= v`; an element through `AccessMut::store`.
    /// `p[i].f = v` (or `op=`; `p[i].pos.x = v` through a record inside it): the field
    /// alone is written (`AccessMut::store_field`).
    fn assign_field(
        &self,
        op: Option<BinOp>,
        (base, ix, check): (&Expr, &Expr, &Check),
        path: &[&str],
        value: &Expr,
        span: Span,
    ) -> TokenStream {
        let (b, i) = (self.access(base), self.host_index(ix));
        let field = field_path(path, span);
        let proved = matches!(check, Check::Proved);
        let v = match op {
            Some(op) => {
                let (op, v) = (binop_tokens(op, span), self.operand(value, ATOM));
                let load = match proved {
                    // SAFETY (of the generated block): the element the proved store writes.
                    true => {
                        quote_spanned!(span=> unsafe { ::parray::Access::load_field_unchecked(__parray_b, __parray_at, |e| &mut e.#field) })
                    }
                    false => {
                        quote_spanned!(span=> ::parray::Access::load_field(__parray_b, __parray_at, |e| &mut e.#field))
                    }
                };
                quote_spanned!(span=> #load #op #v)
            }
            None => self.expr(value),
        };
        match check {
            Check::Checked(_) => quote_spanned!(span=> {
                let (__parray_b, __parray_at) = (#b, #i);
                let __parray_v = #v;
                ::parray::AccessMut::store_field(__parray_b, __parray_at, |e| &mut e.#field, __parray_v)
            }),
            // SAFETY (of the generated block): as for a proved store.
            Check::Proved => {
                quote_spanned!(span=> {
                    let (__parray_b, __parray_at) = (#b, #i);
                    let __parray_v = #v;
                    unsafe { ::parray::AccessMut::store_field_unchecked(__parray_b, __parray_at, |e| &mut e.#field, __parray_v) }
                })
            }
        }
    }

    fn assign(&self, op: Option<BinOp>, place: &Expr, value: &Expr, span: Span) -> TokenStream {
        // `x[i] op= v` is written `old op (v)`: `v` is the right operand of `op`, whole
        // (parenthesised even where `op` binds less tightly: `old << (1 + 1)` is what
        // clippy asks of shifts).
        let v = match (&place.kind, op) {
            (ExprKind::Index(..), Some(_)) => self.operand(value, ATOM),
            _ => self.expr(value),
        };
        if let ExprKind::Vector {
            base,
            at,
            lanes,
            check,
            ..
        } = &place.kind
        {
            let (b, i) = (self.access(base), self.host_index(at));
            return match check {
                Check::Checked(_) => {
                    let store = Ident::new(&format!("store{lanes}"), span);
                    quote_spanned!(span=> ::parray::AccessMut::#store(#b, #i, #v))
                }
                // SAFETY (of the generated block): as for a proved vector load.
                Check::Proved => {
                    let store = Ident::new(&format!("store{lanes}_unchecked"), span);
                    quote_spanned!(span=> {
                        let (__parray_b, __parray_at, __parray_v) = (#b, #i, #v);
                        unsafe { ::parray::AccessMut::#store(__parray_b, __parray_at, __parray_v) }
                    })
                }
            };
        }
        if let Some((element, path)) = place.element_field() {
            if let ExprKind::Index(base, ix, check) = &element.kind {
                return self.assign_field(op, (base, ix, check), &path, value, span);
            }
        }
        if let ExprKind::Index(base, ix, check) = &place.kind {
            let (b, i) = (self.access(base), self.host_index(ix));
            return match (op, check) {
                (None, Check::Checked(_)) => {
                    quote_spanned!(span=> ::parray::AccessMut::store(#b, #i, #v))
                }
                (Some(op), Check::Checked(_)) => {
                    let op = binop_tokens(op, span);
                    quote_spanned!(span=> {
                        let (__parray_b, __parray_at) = (#b, #i);
                        let __parray_old = ::parray::Access::load(__parray_b, __parray_at);
                        ::parray::AccessMut::store(__parray_b, __parray_at, __parray_old #op #v)
                    })
                }
                // SAFETY (of the generated blocks): as for a proved load; the user's
                // expressions are evaluated outside them.
                (None, Check::Proved) => quote_spanned!(span=> {
                    let (__parray_b, __parray_at, __parray_v) = (#b, #i, #v);
                    unsafe { ::parray::AccessMut::store_unchecked(__parray_b, __parray_at, __parray_v) }
                }),
                (Some(op), Check::Proved) => {
                    let op = binop_tokens(op, span);
                    quote_spanned!(span=> {
                        let (__parray_b, __parray_at) = (#b, #i);
                        let __parray_old = unsafe { ::parray::Access::load_unchecked(__parray_b, __parray_at) };
                        let __parray_v = __parray_old #op #v;
                        unsafe { ::parray::AccessMut::store_unchecked(__parray_b, __parray_at, __parray_v) }
                    })
                }
            };
        }
        let p = self.expr(place);
        // `p += off` moves a pointer by a Rust `usize` (the emulation's index is a `u32`).
        let v = if op == Some(BinOp::Add) && matches!(place.ty, Ty::Ptr { .. }) {
            self.host_index(value)
        } else {
            v
        };
        let v = match (&place.kind, &self.blocks) {
            (ExprKind::Local(id), Some(b)) => b.spilled_store(*id, v),
            _ => v,
        };
        match op {
            None => quote_spanned!(span=> #p = #v),
            Some(op) => {
                let op: TokenStream = format!("{}=", op.symbol()).parse().expect("an operator");
                let op = respan(op, span);
                quote_spanned!(span=> #p #op #v)
            }
        }
    }

    fn lit(&self, l: &Lit, ty: Ty, span: Span) -> TokenStream {
        if let (Lit::Float(digits, _), Ty::Scalar(s)) = (l, ty) {
            if let Some(bits) = crate::rounding::literal_bits(digits, s) {
                let t = self.scalar(s);
                return quote_spanned!(span=> #t::from_bits(#bits));
            }
        }
        let mut lit = match (l, ty) {
            (Lit::Bool(b), _) => return quote_spanned!(span=> #b),
            (Lit::Int(v, _), Ty::Host) => Literal::u128_unsuffixed(*v),
            (Lit::Float(d, _), Ty::Host) => d.parse::<TokenStream>().map_or_else(
                |_| Literal::f64_unsuffixed(0.0),
                |t| match t.into_iter().next() {
                    Some(TokenTree::Literal(l)) => l,
                    _ => Literal::f64_unsuffixed(0.0),
                },
            ),
            (Lit::Int(v, _), Ty::Scalar(s)) => {
                let suffix = match (s, self.mode) {
                    (Scalar::Usize, Mode::Emulate) => "u32",
                    _ => s.rust_name(),
                };
                let text = if s.is_float() {
                    format!("{v}.0{suffix}")
                } else {
                    format!("{v}{suffix}")
                };
                text.parse::<Literal>().expect("a literal")
            }
            (Lit::Float(d, _), Ty::Scalar(s)) => {
                let d = if d.contains(['.', 'e', 'E']) {
                    d.clone()
                } else {
                    format!("{d}.0")
                };
                let text = if d.contains(['e', 'E']) {
                    format!("{d}_{}", s.rust_name())
                } else {
                    format!("{d}{}", s.rust_name())
                };
                text.parse::<Literal>().expect("a literal")
            }
            _ => unreachable!("a literal of type {ty}"),
        };
        lit.set_span(span);
        quote!(#lit)
    }
}

/// A block that computes a value (a proved access evaluates the user's expressions
/// before its `unsafe` block), as an expression in every position: a bare block would be
/// read as a statement at the start of one (`{ .. } & 7`) and as the loop body after
/// `for i in 0..`.
fn value_of_block(block: TokenStream) -> TokenStream {
    quote!(::parray::__private::value(#block))
}

/// A Rust path written as text (`std::f32::consts::PI`), at the user's span.
/// A captured path (`x`, `std::f32::consts::PI`) as tokens at `span`.
pub fn path_tokens(path: &str, span: Span) -> TokenStream {
    respan(path.parse().expect("a path parses"), span)
}

/// Binding strengths in Rust: atoms (names, literals, calls, method calls), unary
/// operators, `as`, then the binary operators (`*` 10 ... `||` 2), assignments.
const ATOM: u8 = 20;
const UNARY: u8 = 15;
const CAST: u8 = 14;

fn strength(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Unary(..) => UNARY,
        ExprKind::Cast(..) => CAST,
        ExprKind::Binary(op, ..) => crate::ir::precedence(*op),
        ExprKind::Assign(..) | ExprKind::Select(..) => 0,
        ExprKind::Offset { off, .. } => {
            if off.as_const().is_some() {
                ATOM
            } else {
                crate::ir::precedence(BinOp::Add)
            }
        }
        _ => ATOM,
    }
}

fn binop_tokens(op: BinOp, span: Span) -> TokenStream {
    respan(op.symbol().parse().expect("an operator"), span)
}

fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut t| {
            t.set_span(span);
            t
        })
        .collect()
}
