//! `#[parray::func]` and `parray::funcs!`: a function of the body language, written once
//! in Rust and called from cuda bodies (lowered into their IR, a `__device__` function on
//! the GPU) and, as the plain Rust function it also is, from pthd and mpi bodies and host
//! code. `funcs!` takes functions whose bodies hold `$...$` forms, which the attribute
//! cannot (rustc parses its function first); both make each function by one path.
//!
//! The declarations of the types its forms name are asked for first (as `host!` asks):
//! then the Rust function has its forms compiled as host code's, and a companion macro
//! carries those declarations and its source to a detour that calls it (see `resolve`).
//! Last, it is checked where it is defined (its callees' companions asked first). A
//! generic one (`fn sq<T: parray::Num>`) is lowered at each call, an instance the type
//! check types by that call.

use proc_macro2::{Ident, Span, TokenStream};
use quote::format_ident;
use quote::quote_spanned;
use syn::parse::Parser;
use syn::spanned::Spanned;
use syn::visit::Visit;
use syn::visit_mut::VisitMut;

use crate::dollar::Forms;
use crate::resolve::{companion, drive, Carried, Entry, Kind, Outcome};

/// The intrinsics a cuda body calls by a single name: not functions.
const INTRINSICS: [&str; 4] = ["atomic_add", "atomic_exch", "atomic_cas", "shfl_down"];

/// `#[parray::func] fn name(..) -> T { .. }`: the attribute. rustc parses its function
/// first, where `$` is no Rust expression: a `$...$` form is rustc's error, then ours
/// saying where forms go, and the function is made as `funcs!` makes it (so that its
/// callers report nothing more).
pub fn define(attr: TokenStream, item: TokenStream) -> TokenStream {
    if let Some(t) = attr.into_iter().next() {
        return syn::Error::new(t.span(), "`#[parray::func]` takes no arguments")
            .to_compile_error();
    }
    match first_dollar(item.clone()) {
        Some(at) => {
            let mut out = syn::Error::new(at, "a `$...$` form cannot be in a `#[parray::func]` function (rustc parses it before the attribute runs, and `$` is no Rust expression): write the function in `parray::funcs! { fn ... }`, which takes forms").to_compile_error();
            out.extend(define_all(item));
            out
        }
        None => function(item),
    }
}

/// The span of the first `$` in `tokens`.
fn first_dollar(tokens: TokenStream) -> Option<Span> {
    tokens.into_iter().find_map(|t| match t {
        proc_macro2::TokenTree::Punct(p) if p.as_char() == '$' => Some(p.span()),
        proc_macro2::TokenTree::Group(g) => first_dollar(g.stream()),
        _ => None,
    })
}

/// `parray::funcs! { fn f(..) -> T { .. } fn g(..) { .. } }`: functions as the attribute
/// makes them, whose bodies may hold `$...$` forms of the types they name.
pub fn define_all(input: TokenStream) -> TokenStream {
    let items = crate::dollar::preprocess(input).and_then(|tokens| {
        (|input: syn::parse::ParseStream| {
            let mut items = Vec::new();
            while !input.is_empty() {
                items.push(input.parse::<syn::ItemFn>()?);
            }
            Ok(items)
        })
        .parse2(tokens)
    });
    match items {
        Ok(items) => items.iter().map(|f| function(quote::quote!(#f))).collect(),
        Err(e) => e.to_compile_error(),
    }
}

/// One function, the attribute's or `funcs!`'s (its forms already placeholders): the
/// types its forms name are asked for first (as `host!` asks), then [`expand`] makes it.
fn function(item: TokenStream) -> TokenStream {
    drive(Kind::Func, Vec::new(), item, expand)
}

/// The function with its forms compiled as `host!` compiles them, and its companion
/// (carrying the declarations its forms name, then its source) at once (functions that
/// call each other each need the other's; a companion of a type never needs a function's),
/// then its check, which first asks the companions of what it calls.
pub fn expand(entries: &[Entry], item: TokenStream) -> syn::Result<Outcome> {
    let parsed: syn::ItemFn = syn::parse2(item.clone())?;
    let mut names = Vec::new();
    crate::detour::dollar_names(&quote::quote!(#parsed), &mut names);
    let resolved = match crate::detour::module_for(entries, names, &[])? {
        Ok(resolved) => resolved,
        Err(need) => return Ok(Outcome::Need(need)),
    };
    let mut errors: Vec<syn::Error> = Vec::new();
    let name = parsed.sig.ident.clone();
    let own = Entry {
        name: name.to_string(),
        text: item.to_string(),
        alias: None,
        what: Carried::Func,
    };
    let hidden = format_ident!(
        "__parray_fn_{}_{:016x}",
        name,
        crate::resolve::fingerprint(&[(&own.name, &own.text)], &name)
    );
    let mut rust = parsed.clone();
    // A run-time type's forms are computed from its bound sizes, as `host!` computes them.
    let mut forms = Forms::new(&resolved.module, None);
    forms.runtime = resolved.runtime.clone();
    let not_built: Vec<&str> = entries
        .iter()
        .filter(|e| e.what == Carried::NotBuilt)
        .map(|e| e.name.as_str())
        .collect();
    if let Err(e) = crate::host::translate(&mut forms, &not_built, &mut rust.block.stmts) {
        errors.push(e);
    }
    Accesses {
        function: name.to_string(),
    }
    .visit_block_mut(&mut rust.block);
    let mut out = quote::quote!(#rust);
    // Its own entry last: a companion called by another name renames its last entry.
    let carried: Vec<Entry> = entries.iter().cloned().chain([own]).collect();
    let vis = &parsed.vis;
    out.extend(companion(&quote::quote!(#vis), &name, &hidden, &carried));
    // Its forms' errors are the ones to see: the check would find them again. A name
    // whose declaration was not built has its error there, and nothing more.
    match crate::errors::in_source_order(errors.into_iter().flatten()) {
        Some(e) => out.extend(e.to_compile_error()),
        None if !not_built.is_empty() => {}
        None => out.extend(drive(Kind::FuncCheck, entries.to_vec(), item, check)),
    }
    Ok(Outcome::Done(out))
}

/// The Rust of a function's element accesses through its pointers (`parray::Ptr`,
/// `parray::PtrMut`), as a pthd body writes them: `a[i]` is `Access::load(&a, i)`, `a[i] =
/// v` `AccessMut::store(&a, i, v)` (a field of an element, `a[i].f = v`, `store_field`),
/// `a[i] += v` a load and a store, `a.load4(i)` `Access::load4(&a, i)`; each checked.
/// A shuffle, `shfl_down(v, d)`, is `__private::shfl_down_outside_warp`: the plain Rust
/// of a collective function has no warp (SPEC 3.5, "Functions").
struct Accesses {
    /// The function's name, for a shuffle's panic.
    function: String,
}

impl VisitMut for Accesses {
    fn visit_expr_mut(&mut self, e: &mut syn::Expr) {
        let span = e.span();
        let (place, op, value) = match e {
            syn::Expr::Assign(a) => (&mut *a.left, None, &mut *a.right),
            syn::Expr::Binary(b) if compound(&b.op).is_some() => {
                (&mut *b.left, compound(&b.op), &mut *b.right)
            }
            _ => {
                syn::visit_mut::visit_expr_mut(self, e);
                *e = match &*e {
                    syn::Expr::Call(c) if is_shuffle(c) => {
                        let (args, f) = (&c.args, &self.function);
                        syn::parse_quote_spanned!(span=> ::parray::__private::shfl_down_outside_warp(#f, #args))
                    }
                    syn::Expr::Index(ix) => {
                        let (b, i) = (&ix.expr, &ix.index);
                        syn::parse_quote_spanned!(span=> ::parray::Access::load(&(#b), #i))
                    }
                    syn::Expr::MethodCall(m)
                        if matches!(m.method.to_string().as_str(), "load2" | "load4") =>
                    {
                        let (recv, method, args) = (&m.receiver, &m.method, &m.args);
                        syn::parse_quote_spanned!(span=> ::parray::Access::#method(&(#recv), #args))
                    }
                    syn::Expr::MethodCall(m)
                        if matches!(m.method.to_string().as_str(), "store2" | "store4") =>
                    {
                        let (recv, method, args) = (&m.receiver, &m.method, &m.args);
                        syn::parse_quote_spanned!(span=> ::parray::AccessMut::#method(&(#recv), #args))
                    }
                    _ => return,
                };
                return;
            }
        };
        self.visit_expr_mut(value);
        // The element written, and the field of it (`a[i].f`, or `a[i].pos.x` through a
        // record inside it).
        let mut members: Vec<syn::Member> = Vec::new();
        let mut under = &*place;
        while let syn::Expr::Field(f) = under {
            members.push(f.member.clone());
            under = &f.base;
        }
        members.reverse();
        if !matches!(under, syn::Expr::Index(_)) {
            self.visit_expr_mut(place);
            return;
        }
        let mut element = &mut *place;
        while let syn::Expr::Field(f) = element {
            element = &mut f.base;
        }
        let syn::Expr::Index(element) = element else {
            unreachable!("an element, found above")
        };
        let field = (!members.is_empty()).then(|| quote::quote!(#(#members).*));
        self.visit_expr_mut(&mut element.expr);
        self.visit_expr_mut(&mut element.index);
        let (b, i) = (&element.expr, &element.index);
        let store = match (field, op) {
            (None, None) => {
                quote_spanned!(span=> ::parray::AccessMut::store(__parray_p, __parray_i, __parray_v))
            }
            (None, Some(op)) => quote_spanned!(span=>
                ::parray::AccessMut::store(__parray_p, __parray_i, ::parray::Access::load(__parray_p, __parray_i) #op __parray_v)),
            (Some(f), None) => quote_spanned!(span=>
                ::parray::AccessMut::store_field(__parray_p, __parray_i, |__parray_e| &mut __parray_e.#f, __parray_v)),
            (Some(f), Some(op)) => quote_spanned!(span=>
                ::parray::AccessMut::store_field(__parray_p, __parray_i, |__parray_e| &mut __parray_e.#f,
                    ::parray::Access::load(__parray_p, __parray_i).#f #op __parray_v)),
        };
        // The place, then the value, as Rust evaluates an assignment to an element.
        *e = syn::parse_quote_spanned!(span=> {
            let (__parray_p, __parray_i) = (&(#b), #i);
            let __parray_v = #value;
            #store
        });
    }
}

/// The operator of a compound assignment (`+` of `+=`).
fn compound(op: &syn::BinOp) -> Option<syn::BinOp> {
    let text = quote::quote!(#op).to_string();
    syn::parse_str(text.strip_suffix('=')?).ok()
}

/// The check of a function, once the companions of what it calls have been asked: what a
/// cuda body calling it would lower and type, with its errors where it is written. The
/// entries start with the declarations its forms name.
pub fn check(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    let item: syn::ItemFn = syn::parse2(input)?;
    let name = item.sig.ident.clone();
    // Itself is not asked for: calling itself is the recursion its lowering reports. The
    // records its signature names are asked for as the functions it calls are.
    let mut names = called_in(&item);
    names.extend(records_named(&item.sig));
    let need: Vec<Ident> = missing(&names, entries)
        .into_iter()
        .filter(|n| *n != name)
        .collect();
    if !need.is_empty() {
        return Ok(Outcome::Need(need));
    }
    let mut sources = sources(entries)?;
    sources.retain(|(n, _)| name != n);
    sources.push((name.to_string(), item));
    // The types the forms of it and of its callees name: all carried in by now.
    let resolved = match crate::detour::module_for(entries, Vec::new(), &[])? {
        Ok(resolved) => resolved,
        Err(_) => unreachable!("no names asked for"),
    };
    crate::lower::check_function(&name, &sources, &records(entries), &resolved)?;
    Ok(Outcome::Done(TokenStream::new()))
}

/// The names statements call as functions (`f(x)`, not `T::new(x)` or an intrinsic), the
/// records they build (`P { .. }`) and the names a call's turbofish gives that may be
/// records (`pick::<Particle>(..)`), each once, in order, with the span of its first use.
pub fn called(stmts: &[syn::Stmt]) -> Vec<Ident> {
    struct Calls(Vec<Ident>);
    impl<'a> Visit<'a> for Calls {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            if let Some(id) = callee(&c.func) {
                let is_new = !self.0.contains(id);
                if is_new && !INTRINSICS.contains(&id.to_string().as_str()) {
                    self.0.push(id.clone());
                }
            }
            // A record a function's turbofish gives (`pick::<Particle>(..)`) is learnt as a
            // signature's.
            let turbofish = match &*c.func {
                syn::Expr::Path(p) if callee(&c.func).is_some() => {
                    match &p.path.segments[0].arguments {
                        syn::PathArguments::AngleBracketed(a) => a.args.iter().collect(),
                        _ => Vec::new(),
                    }
                }
                _ => Vec::new(),
            };
            for t in turbofish {
                if let Some(id) = match t {
                    syn::GenericArgument::Type(t) => record_named(t),
                    _ => None,
                } {
                    if !self.0.contains(id) {
                        self.0.push(id.clone());
                    }
                }
            }
            syn::visit::visit_expr_call(self, c);
        }
        // A record a body builds (`Particle { .. }`) is learnt from its companion too.
        fn visit_expr_struct(&mut self, s: &'a syn::ExprStruct) {
            if let Some(id) = s.path.get_ident() {
                if s.qself.is_none() && !self.0.contains(id) {
                    self.0.push(id.clone());
                }
            }
            syn::visit::visit_expr_struct(self, s);
        }
        // `$...$` forms and `#copy` are the detour's; their tokens hold no calls.
        fn visit_macro(&mut self, _: &'a syn::Macro) {}
    }
    let mut calls = Calls(Vec::new());
    stmts.iter().for_each(|s| calls.visit_stmt(s));
    calls.0
}

/// What a function's body calls and builds, as [`called`], but its own type parameters
/// (`g::<T>(x)` names no record).
fn called_in(item: &syn::ItemFn) -> Vec<Ident> {
    let generic: Vec<&Ident> = item.sig.generics.type_params().map(|t| &t.ident).collect();
    let mut names = called(&item.block.stmts);
    names.retain(|n| !generic.contains(&n));
    names
}

/// The name a call's function expression calls, a single name with its type arguments
/// if any (`f`, `f::<bf16>`): a function of the body language (or an intrinsic).
pub fn callee(func: &syn::Expr) -> Option<&Ident> {
    match func {
        syn::Expr::Path(p)
            if p.qself.is_none()
                && p.path.leading_colon.is_none()
                && p.path.segments.len() == 1 =>
        {
            Some(&p.path.segments[0].ident)
        }
        _ => None,
    }
}

/// The functions among `names`, and those the carried functions call, that no entry
/// carries yet: what to ask the companions for.
pub fn missing(names: &[Ident], entries: &[Entry]) -> Vec<Ident> {
    let mut wanted: Vec<Ident> = names.to_vec();
    for e in entries.iter().filter(|e| e.what == Carried::Func) {
        if let Ok(item) = syn::parse_str::<syn::ItemFn>(&e.text) {
            let mut names = called_in(&item);
            names.extend(records_named(&item.sig));
            for callee in names {
                // Its tokens came from a string: their spans are no better than the call site.
                let callee = Ident::new(&callee.to_string(), Span::call_site());
                if !wanted.contains(&callee) {
                    wanted.push(callee);
                }
            }
        }
    }
    wanted
        .into_iter()
        .filter(|n| !entries.iter().any(|e| *n == e.name))
        .collect()
}

/// The names a signature gives its parameters' and result's types that may be records,
/// each once, at its first use (see [`record_named`]), but its type parameters. A name that
/// is not a record is asked for all the same: its companion is the record's, whose derive
/// gives it (without one, the error says to import it, as for a type).
pub fn records_named(sig: &syn::Signature) -> Vec<Ident> {
    let generic: Vec<&Ident> = sig.generics.type_params().map(|t| &t.ident).collect();
    let inputs = sig.inputs.iter().filter_map(|a| match a {
        syn::FnArg::Typed(t) => Some(&*t.ty),
        syn::FnArg::Receiver(_) => None,
    });
    let output = match &sig.output {
        syn::ReturnType::Type(_, t) => Some(&**t),
        syn::ReturnType::Default => None,
    };
    let mut out: Vec<Ident> = Vec::new();
    for id in inputs.chain(output).flat_map(record_named) {
        if !generic.contains(&id) && !out.contains(id) {
            out.push(id.clone());
        }
    }
    out
}

/// The name of a type that may be a record: a single upper-case name that is no vector
/// (`Float2`...), or a pointer's element (`parray::Ptr<'_, Particle>`). A type parameter
/// is such a name too: the caller knows which names are its.
fn record_named(ty: &syn::Type) -> Option<&Ident> {
    let syn::Type::Path(p) = ty else {
        return None;
    };
    let last = p.path.segments.last()?;
    // A pointer's element (`parray::Ptr<'_, Particle>`).
    let pointed = match &last.arguments {
        syn::PathArguments::AngleBracketed(a)
            if ["Ptr", "PtrMut"].contains(&&*last.ident.to_string()) =>
        {
            a.args.iter().find_map(|g| match g {
                syn::GenericArgument::Type(syn::Type::Path(p)) => p.path.segments.last(),
                _ => None,
            })
        }
        _ => None,
    };
    let last = pointed.unwrap_or(last);
    let word = last.ident.to_string();
    let upper = word.starts_with(|c: char| c.is_ascii_uppercase());
    let vector = parray_layout::ElemType::ALL
        .iter()
        .any(|e| e.rust_type() == word);
    (p.qself.is_none() && last.arguments.is_empty() && upper && !vector).then_some(&last.ident)
}

/// The records the entries carry (their derives' `record P { ... }`).
pub fn records(entries: &[Entry]) -> Vec<parray_layout::Record> {
    crate::decl::parsed_entries(entries)
        .filter_map(|(_, p)| p.ok())
        .flat_map(|p| p.items)
        .filter_map(|item| match item {
            parray_layout::ast::Item::Record(r) => Some(r.record),
            _ => None,
        })
        .collect()
}

/// The function `name` of `funcs` as a value: a generic one at `f32` (a `parray::Num`).
pub fn as_value(name: &Ident, funcs: &[(String, syn::ItemFn)]) -> TokenStream {
    let params = funcs
        .iter()
        .find(|(n, _)| name == n)
        .map_or(0, |(_, item)| item.sig.generics.params.len());
    match params {
        0 => quote::quote!(#name),
        n => {
            let types = std::iter::repeat_n(quote::quote!(f32), n);
            quote::quote!(#name::<#(#types),*>)
        }
    }
}

/// Whether `c` is `shfl_down(..)`, the warp shuffle.
fn is_shuffle(c: &syn::ExprCall) -> bool {
    matches!(&*c.func, syn::Expr::Path(p) if p.qself.is_none() && p.path.is_ident("shfl_down"))
}

/// Whether the function `name` of `funcs` is collective: it shuffles, itself or through a
/// function it calls (then a cuda body inlines it at each call, SPEC 3.5, "Functions").
pub fn collective(name: &str, funcs: &[(String, syn::ItemFn)]) -> bool {
    struct Shuffles(bool);
    impl<'a> Visit<'a> for Shuffles {
        fn visit_expr_call(&mut self, c: &'a syn::ExprCall) {
            self.0 |= is_shuffle(c);
            syn::visit::visit_expr_call(self, c);
        }
    }
    let (mut seen, mut todo) = (Vec::new(), vec![name.to_string()]);
    while let Some(n) = todo.pop() {
        if seen.contains(&n) {
            continue;
        }
        let Some((_, item)) = funcs.iter().find(|(f, _)| *f == n) else {
            continue;
        };
        let mut found = Shuffles(false);
        found.visit_block(&item.block);
        if found.0 {
            return true;
        }
        todo.extend(called(&item.block.stmts).iter().map(Ident::to_string));
        seen.push(n);
    }
    false
}

/// The carried functions' sources, by the name they are called by.
pub fn sources(entries: &[Entry]) -> syn::Result<Vec<(String, syn::ItemFn)>> {
    entries
        .iter()
        .filter(|e| e.what == Carried::Func)
        .map(|e| {
            syn::parse_str::<syn::ItemFn>(&e.text)
                .map(|item| (e.name.clone(), item))
                .map_err(|err| {
                    syn::Error::new(
                        Span::call_site(),
                        format!("carried function `{}`: {err}", e.name),
                    )
                })
        })
        .collect()
}
