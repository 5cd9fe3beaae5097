//! A lowered body as Rust code that rebuilds it in the program. A cuda body whose forms
//! name types known only when it runs (a generic detour's parameters, types of sizes
//! given at run time) is carried into the program so, and made into its kernel there,
//! once per set of types ([`crate::kernels::specialised_kernel`]): the whole road (check,
//! proofs, the C writer) then runs with every size a number, as it does at compile time
//! for a body of literal types.
//!
//! Post-condition: [`body`]'s expression evaluates to a body equal to its argument in
//! every field but the spans (a program holds no token spans: its kernels' `#line`
//! directives come from [`Loc::line`] and [`Body::file`]).

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

use crate::ir::{
    Body, Check, CodeSpan, CopyEnd, CopyGuard, CopySpec, ElemType, Expr, ExprKind, Function, Guard,
    HwIndex, Indexed, LinearForm, Lit, Loc, Local, LocalId, NumberConst, Offset, Param, Root,
    RuntimeIndex, Stmt, Term, ThreadIndex, Ty, VarId, Vars, WholeVectors,
};

/// An expression, with `ir` the path of [`crate::ir`] where it is compiled, that builds
/// `body`.
pub fn body(body: &Body, ir: &TokenStream) -> TokenStream {
    body.rebuild(ir)
}

/// What builds a value of the IR, as Rust code.
trait Rebuild {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream;
}

/// Enums whose variants carry nothing: their `Debug` name is the variant's.
macro_rules! by_name {
    ($($ty:ident),*) => {$(
        impl Rebuild for crate::ir::$ty {
            fn rebuild(&self, ir: &TokenStream) -> TokenStream {
                let v = Ident::new(&format!("{self:?}"), Span::call_site());
                quote!(#ir::$ty::#v)
            }
        }
    )*};
}

by_name!(Target, Scalar, MemKind, UnOp, BinOp, Method, AtomicOp, Bound);

impl Rebuild for crate::ir::Record {
    fn rebuild(&self, _: &TokenStream) -> TokenStream {
        crate::back::rust::elem::record(*self)
    }
}

impl Rebuild for crate::ir::ElemType {
    fn rebuild(&self, _: &TokenStream) -> TokenStream {
        crate::back::rust::elem::elem_type(*self)
    }
}

/// Numbers and `bool`: quote writes them as suffixed literals.
macro_rules! by_quote {
    ($($ty:ty),*) => {$(
        impl Rebuild for $ty {
            fn rebuild(&self, _: &TokenStream) -> TokenStream {
                quote!(#self)
            }
        }
    )*};
}

by_quote!(u8, u32, u64, u128, usize, bool);

impl Rebuild for String {
    fn rebuild(&self, _: &TokenStream) -> TokenStream {
        quote!(::std::string::String::from(#self))
    }
}

impl<T: Rebuild> Rebuild for Option<T> {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            Some(x) => {
                let x = x.rebuild(ir);
                quote!(::core::option::Option::Some(#x))
            }
            None => quote!(::core::option::Option::None),
        }
    }
}

impl<T: Rebuild> Rebuild for Vec<T> {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let items = self.iter().map(|x| x.rebuild(ir));
        quote!(::std::vec![#(#items),*])
    }
}

impl<T: Rebuild> Rebuild for Box<T> {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let x = (**self).rebuild(ir);
        quote!(::std::boxed::Box::new(#x))
    }
}

impl<A: Rebuild, B: Rebuild> Rebuild for (A, B) {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (a, b) = (self.0.rebuild(ir), self.1.rebuild(ir));
        quote!((#a, #b))
    }
}

impl Rebuild for CodeSpan {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        quote!(#ir::CodeSpan::call_site())
    }
}

impl Rebuild for LocalId {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let n = self.0.rebuild(ir);
        quote!(#ir::LocalId(#n))
    }
}

impl Rebuild for VarId {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let n = self.0.rebuild(ir);
        quote!(#ir::VarId(#n))
    }
}

impl Rebuild for crate::ir::Len {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            crate::ir::Len::Fixed(n) => quote!(#ir::Len::Fixed(#n)),
            crate::ir::Len::AtRunTime => quote!(#ir::Len::AtRunTime),
        }
    }
}

impl Rebuild for Loc {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (span, line) = (self.span.rebuild(ir), self.line.rebuild(ir));
        quote!(#ir::Loc { span: #span, line: #line })
    }
}

impl Rebuild for Ty {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            Ty::Scalar(s) => {
                let s = s.rebuild(ir);
                quote!(#ir::Ty::Scalar(#s))
            }
            Ty::Vector(e) => {
                let e = e.rebuild(ir);
                quote!(#ir::Ty::Vector(#e))
            }
            Ty::Ptr { elem, soa } => {
                let (elem, soa) = (elem.rebuild(ir), soa.rebuild(ir));
                quote!(#ir::Ty::Ptr { elem: #elem, soa: #soa })
            }
            Ty::Record(r) => {
                let e = crate::back::rust::elem::elem_type(ElemType::Record(*r));
                quote!(#ir::Ty::of_elem(#e))
            }
            Ty::Array {
                elem,
                mem,
                len,
                soa,
            } => {
                let (elem, mem, len, soa) = (
                    elem.rebuild(ir),
                    mem.rebuild(ir),
                    len.rebuild(ir),
                    soa.rebuild(ir),
                );
                quote!(#ir::Ty::Array { elem: #elem, mem: #mem, len: #len, soa: #soa })
            }
            Ty::Unit => quote!(#ir::Ty::Unit),
            Ty::Host => quote!(#ir::Ty::Host),
            Ty::Generic(n) => {
                let n = n.rebuild(ir);
                quote!(#ir::Ty::Generic(#n))
            }
            Ty::PtrTo(n) => {
                let n = n.rebuild(ir);
                quote!(#ir::Ty::PtrTo(#n))
            }
            Ty::Infer(n) => {
                let n = n.rebuild(ir);
                quote!(#ir::Ty::Infer(#n))
            }
        }
    }
}

impl Rebuild for Param {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (elem, pointer, soa, name) = (
            self.elem.rebuild(ir),
            self.pointer.rebuild(ir),
            self.soa.rebuild(ir),
            self.name.rebuild(ir),
        );
        quote!(#ir::Param { elem: #elem, pointer: #pointer, soa: #soa, name: #name })
    }
}

impl Rebuild for Local {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let Local {
            name,
            span,
            mutable,
            ty,
            param,
        } = self;
        let (name, span, mutable, ty, param) = (
            name.rebuild(ir),
            span.rebuild(ir),
            mutable.rebuild(ir),
            ty.rebuild(ir),
            param.rebuild(ir),
        );
        quote!(#ir::Local { name: #name, span: #span, mutable: #mutable, ty: #ty, param: #param })
    }
}

/// The variables of a form, bound in order (so with the same numbers).
impl Rebuild for Vars {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let binds = (0..self.len() as u32).map(|v| {
            let (name, max) = (self.name(VarId(v)), self.max(VarId(v)));
            quote!(vars.bind(#name, #max);)
        });
        quote!({
            let mut vars = #ir::Vars::new();
            #(#binds)*
            vars
        })
    }
}

impl Rebuild for Term {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            Term::Var(v) => {
                let v = v.rebuild(ir);
                quote!(#ir::Term::Var(#v))
            }
            Term::Digit { of, div, modulo } => {
                let (of, div, modulo) = ((**of).rebuild(ir), div.rebuild(ir), modulo.rebuild(ir));
                quote!(#ir::Term::Digit { of: ::std::sync::Arc::new(#of), div: #div, modulo: #modulo })
            }
            Term::Xor { a, b } => {
                let (a, b) = ((**a).rebuild(ir), (**b).rebuild(ir));
                quote!(#ir::Term::Xor { a: ::std::sync::Arc::new(#a), b: ::std::sync::Arc::new(#b) })
            }
        }
    }
}

impl Rebuild for crate::ir::Tma {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (src_ty, dst_ty) = (self.src_ty.rebuild(ir), self.dst_ty.rebuild(ir));
        let (param, map) = (self.param.rebuild(ir), self.map.rebuild(ir));
        let swizzle = |s: crate::ir::Swizzle| Ident::new(&format!("{s:?}"), Span::call_site());
        let plan = match &self.plan {
            Some(plan) => {
                let elem_bytes = plan.elem_bytes;
                let dims = plan.dims.iter().map(|d| {
                    let (b, s) = (d.box_size, d.stride);
                    quote!(#ir::TmaDim { box_size: #b, stride: #s })
                });
                let sw = swizzle(plan.swizzle);
                quote!(::core::option::Option::Some(#ir::TmaPlan { elem_bytes: #elem_bytes, dims: ::std::vec![#(#dims),*], swizzle: #ir::Swizzle::#sw }))
            }
            None => quote!(::core::option::Option::None),
        };
        let (box_elems, elem_bytes) = (self.box_elems, self.elem_bytes);
        let sw = swizzle(self.swizzle);
        quote!(#ir::Tma {
            src_ty: #src_ty,
            dst_ty: #dst_ty,
            param: #param,
            plan: #plan,
            box_elems: #box_elems,
            elem_bytes: #elem_bytes,
            swizzle: #ir::Swizzle::#sw,
            map: #map,
        })
    }
}

impl Rebuild for crate::ir::Wgmma {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (n, a, b) = (self.n.rebuild(ir), self.a.rebuild(ir), self.b.rebuild(ir));
        let (ao, bo) = (self.a_offsets.rebuild(ir), self.b_offsets.rebuild(ir));
        let wait = self.wait.rebuild(ir);
        quote!(#ir::Wgmma { n: #n, a: #a, b: #b, a_offsets: #ao, b_offsets: #bo, wait: #wait })
    }
}

impl Rebuild for crate::mma::Descriptor {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let swizzle = Ident::new(&format!("{:?}", self.swizzle), Span::call_site());
        let (mn_major, lbo, sbo) = (self.mn_major, self.lbo, self.sbo);
        quote!(#ir::Descriptor { swizzle: #ir::Swizzle::#swizzle, mn_major: #mn_major, lbo: #lbo, sbo: #sbo })
    }
}

impl Rebuild for LinearForm {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (terms, konst) = (self.terms.rebuild(ir), self.konst.rebuild(ir));
        quote!(#ir::LinearForm { terms: #terms, konst: #konst })
    }
}

impl Rebuild for Offset {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (expr, vars) = (self.expr.rebuild(ir), self.vars.rebuild(ir));
        quote!(#ir::Offset { expr: #expr, vars: #vars })
    }
}

impl Rebuild for HwIndex {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            HwIndex::Tid => quote!(#ir::HwIndex::Tid),
            HwIndex::BlockIdx(a) => quote!(#ir::HwIndex::BlockIdx(#a)),
            HwIndex::ThreadIdx(a) => quote!(#ir::HwIndex::ThreadIdx(#a)),
        }
    }
}

impl Rebuild for ThreadIndex {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (expr, vars, hw) = (
            self.expr.rebuild(ir),
            self.vars.rebuild(ir),
            self.hw.rebuild(ir),
        );
        quote!(#ir::ThreadIndex { expr: #expr, vars: #vars, hw: #hw })
    }
}

impl Rebuild for NumberConst {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (ty, name, math) = (self.ty.rebuild(ir), self.name, self.math);
        quote!(#ir::NumberConst { ty: #ty, name: #name, math: #math })
    }
}

impl Rebuild for Root {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            Root::Local(id) => {
                let id = id.rebuild(ir);
                quote!(#ir::Root::Local(#id))
            }
            Root::Capture(path) => {
                let path = path.rebuild(ir);
                quote!(#ir::Root::Capture(#path))
            }
        }
    }
}

impl Rebuild for Check {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            Check::Checked(root) => {
                let root = root.rebuild(ir);
                quote!(#ir::Check::Checked(#root))
            }
            Check::Proved => quote!(#ir::Check::Proved),
        }
    }
}

impl Rebuild for Indexed {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (type_name, extent, constant) = (
            self.type_name.rebuild(ir),
            self.extent.rebuild(ir),
            self.constant.rebuild(ir),
        );
        quote!(#ir::Indexed { type_name: #type_name, extent: #extent, constant: #constant })
    }
}

impl Rebuild for RuntimeIndex {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (text, vars) = (self.text.rebuild(ir), self.vars.rebuild(ir));
        quote!(#ir::RuntimeIndex { text: #text, vars: #vars })
    }
}

impl Rebuild for CopyEnd {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (ty, base, offsets) = (
            self.ty.rebuild(ir),
            self.base.rebuild(ir),
            self.offsets.rebuild(ir),
        );
        quote!(#ir::CopyEnd { ty: #ty, base: #base, offsets: #offsets })
    }
}

impl Rebuild for CopySpec {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let CopySpec {
            src,
            dst,
            k,
            vectors,
            guard,
            threads,
            span,
            loc,
        } = self;
        let (src, dst, k, vectors, guard, threads, span, loc) = (
            src.rebuild(ir),
            dst.rebuild(ir),
            k.rebuild(ir),
            vectors.rebuild(ir),
            guard.rebuild(ir),
            threads.rebuild(ir),
            span.rebuild(ir),
            loc.rebuild(ir),
        );
        quote!(#ir::CopySpec { src: #src, dst: #dst, k: #k, vectors: #vectors, guard: #guard, threads: #threads, span: #span, loc: #loc })
    }
}

impl Rebuild for CopyGuard {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (digits, pred, fill) = (
            self.digits.rebuild(ir),
            self.pred.rebuild(ir),
            self.fill.rebuild(ir),
        );
        quote!(#ir::CopyGuard { digits: #digits, pred: #pred, fill: #fill })
    }
}

impl Rebuild for Guard {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (digits, pred, unguarded, at_most, per_vector, whole) = (
            self.digits.rebuild(ir),
            self.pred.rebuild(ir),
            self.unguarded.rebuild(ir),
            self.at_most.rebuild(ir),
            self.per_vector.rebuild(ir),
            self.whole.rebuild(ir),
        );
        quote!(#ir::Guard { digits: #digits, pred: #pred, unguarded: #unguarded, at_most: #at_most, per_vector: #per_vector, whole: #whole })
    }
}

impl Rebuild for WholeVectors {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (first, last, lanes, vector, moves) = (
            self.first.rebuild(ir),
            self.last.rebuild(ir),
            self.lanes.rebuild(ir),
            self.vector.rebuild(ir),
            self.moves.rebuild(ir),
        );
        quote!(#ir::WholeVectors { first: #first, last: #last, lanes: #lanes, vector: #vector, moves: #moves })
    }
}

impl Rebuild for Lit {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        match self {
            Lit::Int(v, suffix) => {
                let (v, suffix) = (v.rebuild(ir), suffix.rebuild(ir));
                quote!(#ir::Lit::Int(#v, #suffix))
            }
            Lit::Float(digits, suffix) => {
                let (digits, suffix) = (digits.rebuild(ir), suffix.rebuild(ir));
                quote!(#ir::Lit::Float(#digits, #suffix))
            }
            Lit::Bool(b) => quote!(#ir::Lit::Bool(#b)),
        }
    }
}

impl Rebuild for Expr {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let (kind, span, ty, signed) = (
            self.kind.rebuild(ir),
            self.span.rebuild(ir),
            self.ty.rebuild(ir),
            self.signed,
        );
        quote!(#ir::Expr { kind: #kind, span: #span, ty: #ty, signed: #signed })
    }
}

impl Rebuild for ExprKind {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let r = |x: &dyn Rebuild| x.rebuild(ir);
        let k = quote!(#ir::ExprKind);
        match self {
            ExprKind::Lit(l) => {
                let l = r(l);
                quote!(#k::Lit(#l))
            }
            ExprKind::Local(id) => {
                let id = r(id);
                quote!(#k::Local(#id))
            }
            ExprKind::Capture(name) => {
                let name = r(name);
                quote!(#k::Capture(#name))
            }
            ExprKind::NumberConst(c) => {
                let c = r(c);
                quote!(#k::NumberConst(#c))
            }
            ExprKind::HostCall(name, args) => {
                let (name, args) = (r(name), r(args));
                quote!(#k::HostCall(#name, #args))
            }
            ExprKind::Tid(path) => {
                let path = r(path);
                quote!(#k::Tid(#path))
            }
            ExprKind::Size(n) => {
                let n = r(n);
                quote!(#k::Size(#n))
            }
            ExprKind::Cnt(b) => quote!(#k::Cnt(#b)),
            ExprKind::Offset { off, args, of } => {
                let (off, args, of) = (r(off), r(args), r(of));
                quote!(#k::Offset { off: #off, args: #args, of: #of })
            }
            // What holds at every binding is for the proofs of the body compiled once for
            // all sizes: the specialisation, which this rebuilds for, folds the forms.
            ExprKind::GenericOffset {
                ty, index, args, ..
            } => {
                let (ty, index, args) = (r(ty), r(index), r(args));
                quote!(#k::GenericOffset { ty: #ty, index: #index, args: #args, sizes: ::core::option::Option::None })
            }
            ExprKind::GenericSize { ty, path, .. } => {
                let (ty, path) = (r(ty), r(path));
                quote!(#k::GenericSize { ty: #ty, path: #path, size: ::core::option::Option::None })
            }
            ExprKind::RuntimeConst { name, .. } => {
                quote!(#k::RuntimeConst { name: ::std::string::String::from(#name), value: ::core::option::Option::None })
            }
            ExprKind::Unary(op, x) => {
                let (op, x) = (r(op), r(x));
                quote!(#k::Unary(#op, #x))
            }
            ExprKind::Binary(op, a, b) => {
                let (op, a, b) = (r(op), r(a), r(b));
                quote!(#k::Binary(#op, #a, #b))
            }
            ExprKind::Assign(op, place, value) => {
                let (op, place, value) = (r(op), r(place), r(value));
                quote!(#k::Assign(#op, #place, #value))
            }
            ExprKind::Cast(x, s) => {
                let (x, s) = (r(x), r(s));
                quote!(#k::Cast(#x, #s))
            }
            ExprKind::Convert(x, t, from) => {
                let (x, t, from) = (r(x), r(t), r(from));
                quote!(#k::Convert(#x, #t, #from))
            }
            ExprKind::Index(base, at, check) => {
                let (base, at, check) = (r(base), r(at), r(check));
                quote!(#k::Index(#base, #at, #check))
            }
            ExprKind::Vector {
                base,
                at,
                lanes,
                check,
                method,
            } => {
                let (base, at, lanes, check, method) =
                    (r(base), r(at), r(lanes), r(check), r(method));
                quote!(#k::Vector { base: #base, at: #at, lanes: #lanes, check: #check, method: #method })
            }
            ExprKind::Field(x, lane) => {
                let (x, lane) = (r(x), r(lane));
                quote!(#k::Field(#x, #lane))
            }
            ExprKind::Method(m, receiver, args) => {
                let (m, receiver, args) = (r(m), r(receiver), r(args));
                quote!(#k::Method(#m, #receiver, #args))
            }
            ExprKind::Atomic(op, p, args, check) => {
                let (op, p, args, check) = (r(op), r(p), r(args), r(check));
                quote!(#k::Atomic(#op, #p, #args, #check))
            }
            ExprKind::ShflDown { value, delta, slot } => {
                let (value, delta, slot) = (r(value), r(delta), r(slot));
                quote!(#k::ShflDown { value: #value, delta: #delta, slot: #slot })
            }
            ExprKind::MakeVector(e, args) => {
                let (e, args) = (r(e), r(args));
                quote!(#k::MakeVector(#e, #args))
            }
            ExprKind::Select(c, a, b) => {
                let (c, a, b) = (r(c), r(a), r(b));
                quote!(#k::Select(#c, #a, #b))
            }
            ExprKind::MakeRecord {
                record,
                path,
                fields,
                base,
            } => {
                let (record, path, fields, base) = (r(record), r(path), r(fields), r(base));
                quote!(#k::MakeRecord { record: #record, path: #path, fields: #fields, base: #base })
            }
            ExprKind::Call(f, args, roots) => {
                let (f, args, roots) = (r(f), r(args), r(roots));
                quote!(#k::Call(#f, #args, #roots))
            }
        }
    }
}

impl Rebuild for Stmt {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let r = |x: &dyn Rebuild| x.rebuild(ir);
        let s = quote!(#ir::Stmt);
        match self {
            Stmt::Let { local, init, loc } => {
                let (local, init, loc) = (r(local), r(init), r(loc));
                quote!(#s::Let { local: #local, init: #init, loc: #loc })
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
                let (local, type_name, elem, mem, len, soa, slot, loc) = (
                    r(local),
                    r(type_name),
                    r(elem),
                    r(mem),
                    r(len),
                    r(soa),
                    r(slot),
                    r(loc),
                );
                quote!(#s::Create { local: #local, type_name: #type_name, elem: #elem, mem: #mem, len: #len, soa: #soa, slot: #slot, loc: #loc })
            }
            Stmt::Expr { expr, loc } => {
                let (expr, loc) = (r(expr), r(loc));
                quote!(#s::Expr { expr: #expr, loc: #loc })
            }
            Stmt::If {
                cond,
                then,
                els,
                loc,
            } => {
                let (cond, then, els, loc) = (r(cond), r(then), r(els), r(loc));
                quote!(#s::If { cond: #cond, then: #then, els: #els, loc: #loc })
            }
            Stmt::While { cond, body, loc } => {
                let (cond, body, loc) = (r(cond), r(body), r(loc));
                quote!(#s::While { cond: #cond, body: #body, loc: #loc })
            }
            Stmt::For {
                var,
                start,
                end,
                inclusive,
                unroll,
                body,
                loc,
            } => {
                let (var, start, end, inclusive, unroll, body, loc) = (
                    r(var),
                    r(start),
                    r(end),
                    r(inclusive),
                    r(unroll),
                    r(body),
                    r(loc),
                );
                quote!(#s::For { var: #var, start: #start, end: #end, inclusive: #inclusive, unroll: #unroll, body: #body, loc: #loc })
            }
            Stmt::Block { body, loc } => {
                let (body, loc) = (r(body), r(loc));
                quote!(#s::Block { body: #body, loc: #loc })
            }
            Stmt::Sync { loc } => {
                let loc = r(loc);
                quote!(#s::Sync { loc: #loc })
            }
            Stmt::Async { body, loc } => {
                let (body, loc) = (r(body), r(loc));
                quote!(#s::Async { body: #body, loc: #loc })
            }
            Stmt::Wait { groups, loc } => {
                let (groups, loc) = (r(groups), r(loc));
                quote!(#s::Wait { groups: #groups, loc: #loc })
            }
            Stmt::Mma {
                input,
                a,
                b,
                d,
                wgmma,
                loc,
            } => {
                let (input, a, b, d, wgmma, loc) = (r(input), r(a), r(b), r(d), r(wgmma), r(loc));
                quote!(#s::Mma { input: #input, a: #a, b: #b, d: #d, wgmma: #wgmma, loc: #loc })
            }
            Stmt::MmaWait {
                d,
                regs,
                groups,
                loc,
            } => {
                let (d, regs, groups, loc) = (r(d), r(regs), r(groups), r(loc));
                quote!(#s::MmaWait { d: #d, regs: #regs, groups: #groups, loc: #loc })
            }
            Stmt::MmaCommit { loc } => {
                let loc = r(loc);
                quote!(#s::MmaCommit { loc: #loc })
            }
            Stmt::SetMaxNreg { inc, regs, loc } => {
                let loc = r(loc);
                quote!(#s::SetMaxNreg { inc: #inc, regs: #regs, loc: #loc })
            }
            Stmt::Matrices {
                store,
                matrices,
                trans,
                regs,
                base,
                at,
                scalar,
                loc,
            } => {
                let (store, matrices, trans, regs, base, at, scalar, loc) = (
                    r(store),
                    r(matrices),
                    r(trans),
                    r(regs),
                    r(base),
                    r(at),
                    r(scalar),
                    r(loc),
                );
                quote!(#s::Matrices { store: #store, matrices: #matrices, trans: #trans, regs: #regs, base: #base, at: #at, scalar: #scalar, loc: #loc })
            }
            Stmt::Break { loc } => {
                let loc = r(loc);
                quote!(#s::Break { loc: #loc })
            }
            Stmt::Continue { loc } => {
                let loc = r(loc);
                quote!(#s::Continue { loc: #loc })
            }
            Stmt::Return { loc } => {
                let loc = r(loc);
                quote!(#s::Return { loc: #loc })
            }
            Stmt::Vectorised {
                vector,
                scalar,
                guard,
                loc,
            } => {
                let (vector, scalar, guard, loc) = (r(vector), r(scalar), r(guard), r(loc));
                quote!(#s::Vectorised { vector: #vector, scalar: #scalar, guard: #guard, loc: #loc })
            }
            Stmt::GenericCopy { copy, scalar, loc } => {
                let (copy, scalar, loc) = (r(copy), r(scalar), r(loc));
                quote!(#s::GenericCopy { copy: #copy, scalar: #scalar, loc: #loc })
            }
            Stmt::Tma {
                src,
                offset,
                dst,
                bar,
                tma,
                loc,
            } => {
                let (src, offset, dst, bar, tma, loc) =
                    (r(src), r(offset), r(dst), r(bar), r(tma), r(loc));
                quote!(#s::Tma { src: #src, offset: #offset, dst: #dst, bar: #bar, tma: #tma, loc: #loc })
            }
            Stmt::MbarrierInit { bar, arrivals, loc } => {
                let (bar, arrivals, loc) = (r(bar), r(arrivals), r(loc));
                quote!(#s::MbarrierInit { bar: #bar, arrivals: #arrivals, loc: #loc })
            }
            Stmt::MbarrierArrive { bar, loc } => {
                let (bar, loc) = (r(bar), r(loc));
                quote!(#s::MbarrierArrive { bar: #bar, loc: #loc })
            }
            Stmt::MbarrierWait { bar, parity, loc } => {
                let (bar, parity, loc) = (r(bar), r(parity), r(loc));
                quote!(#s::MbarrierWait { bar: #bar, parity: #parity, loc: #loc })
            }
            Stmt::Print {
                pieces,
                args,
                newline,
                loc,
            } => {
                let (pieces, args, newline, loc) = (r(pieces), r(args), r(newline), r(loc));
                quote!(#s::Print { pieces: #pieces, args: #args, newline: #newline, loc: #loc })
            }
        }
    }
}

impl Rebuild for Function {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let Function {
            name,
            span,
            generics,
            type_args,
            params,
            writable,
            ret,
            stmts,
            value,
        } = self;
        let (name, span, generics, type_args) = (
            name.rebuild(ir),
            span.rebuild(ir),
            generics.rebuild(ir),
            type_args.rebuild(ir),
        );
        let (params, writable, ret, stmts, value) = (
            params.rebuild(ir),
            writable.rebuild(ir),
            ret.rebuild(ir),
            stmts.rebuild(ir),
            value.rebuild(ir),
        );
        quote!(#ir::Function { name: #name, span: #span, generics: #generics, type_args: #type_args, params: #params, writable: #writable, ret: #ret, stmts: #stmts, value: #value })
    }
}

impl Rebuild for Body {
    fn rebuild(&self, ir: &TokenStream) -> TokenStream {
        let Body {
            target,
            array,
            file,
            params,
            captures,
            functions,
            type_params,
            locals,
            tids,
            tids_at_launch,
            stmts,
            launch_bounds,
            constants,
        } = self;
        let r = |x: &dyn Rebuild| x.rebuild(ir);
        let (target, array, file, params, captures, functions, locals, tids, stmts) = (
            r(target),
            r(array),
            r(file),
            r(params),
            r(captures),
            r(functions),
            r(locals),
            r(tids),
            r(stmts),
        );
        let (tids_at_launch, launch_bounds, constants, type_params) = (
            r(tids_at_launch),
            r(launch_bounds),
            r(constants),
            r(type_params),
        );
        quote!(#ir::Body {
            target: #target,
            array: #array,
            file: #file,
            params: #params,
            captures: #captures,
            functions: #functions,
            type_params: #type_params,
            locals: #locals,
            tids: #tids,
            tids_at_launch: #tids_at_launch,
            stmts: #stmts,
            launch_bounds: #launch_bounds,
            constants: #constants,
        })
    }
}
