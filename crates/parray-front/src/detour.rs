//! `detour!(T { body })` and `host! { ... }`.

use parray_compiler::back::c::{self as emit_c, Dialect};
use parray_compiler::back::rust::{self as emit_rust, Mode};
use parray_compiler::ir::{Root, Target, Ty};
use parray_compiler::passes::bounds::Proved;
use parray_compiler::passes::bounds::{self, Proof, RootUse};
use parray_layout::symbolic::Sizes;
use parray_layout::{CudaGrid, Module, ThreadKind, TypeClass};
use proc_macro2::{Delimiter, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::Token;

use crate::decl::entries_program;
use crate::dollar::{preprocess, tid_path, Forms, Threads, TypeParam, COPY, DOLLAR, MMA};
use crate::lower::lower;
use crate::resolve::{base_name, merge, Carried, Entry, Outcome};
use crate::shapes::Resolved;

/// Declared names the body refers to: in `$...$` forms, and types it creates (`S::create()`).
/// Type parameters are left out by the caller.
pub fn dollar_names(tokens: &TokenStream, out: &mut Vec<Ident>) {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(ty)
                if matches!(&tts[i + 1..], [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(f), ..]
                    if a.as_char() == ':' && b.as_char() == ':' && f == "create") =>
            {
                out.push(ty.clone());
            }
            // `#copy S(p) to D(q)`: both types.
            TokenTree::Ident(id) if *id == COPY => {
                if let Some(TokenTree::Group(g)) = tts.get(i + 2) {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    for (k, t) in inner.iter().enumerate() {
                        if let TokenTree::Ident(t) = t {
                            let after_to =
                                k > 0 && matches!(&inner[k - 1], TokenTree::Ident(w) if w == "to");
                            // The source's type is first, after `async` in `#copy async`.
                            let first = k == 0 && t != "async"
                                || k == 1
                                    && matches!(&inner[0], TokenTree::Ident(a) if a == "async");
                            if first || after_to {
                                out.push(t.clone());
                            }
                        }
                    }
                    dollar_names(&g.stream(), out);
                }
            }
            // `#mma D(d) += A(a) * B(b)`: the three types, each before its place.
            TokenTree::Ident(id) if *id == MMA => {
                if let Some(TokenTree::Group(g)) = tts.get(i + 2) {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    for pair in inner.windows(2) {
                        if let [TokenTree::Ident(t), TokenTree::Group(p)] = pair {
                            if p.delimiter() == Delimiter::Parenthesis {
                                out.push(t.clone());
                            }
                        }
                    }
                    dollar_names(&g.stream(), out);
                }
            }
            TokenTree::Ident(id) if *id == DOLLAR => {
                if let Some(TokenTree::Group(g)) = tts.get(i + 2) {
                    let inner: Vec<TokenTree> = g.stream().into_iter().collect();
                    match inner.as_slice() {
                        [TokenTree::Ident(w), ..] if tid_path(&w.to_string()).is_some() => {}
                        [TokenTree::Ident(_), TokenTree::Group(arg)]
                            if arg.delimiter() == Delimiter::Parenthesis =>
                        {
                            if let Some(TokenTree::Ident(t)) = arg.stream().into_iter().next() {
                                out.push(t);
                            }
                        }
                        [TokenTree::Ident(t), ..] => out.push(t.clone()),
                        _ => {}
                    }
                    dollar_names(&g.stream(), out);
                }
            }
            TokenTree::Group(g) => dollar_names(&g.stream(), out),
            _ => {}
        }
    }
}

/// `<T, U>` before a detour's thread array or a `host!` block: the type parameters its
/// forms may name (`$T[i][j]$`), and the tokens after them.
fn type_parameters(tts: &[TokenTree]) -> syn::Result<(Vec<Ident>, &[TokenTree])> {
    let is = |tt: Option<&TokenTree>, c: char| matches!(tt, Some(TokenTree::Punct(p)) if p.as_char() == c);
    if !is(tts.first(), '<') {
        return Ok((Vec::new(), tts));
    }
    let mut params = Vec::new();
    let mut k = 1;
    loop {
        match tts.get(k) {
            Some(TokenTree::Ident(t)) => params.push(t.clone()),
            other => {
                let span = other.map_or_else(Span::call_site, TokenTree::span);
                return Err(syn::Error::new(
                    span,
                    "expected a type parameter: `<T>` or `<T, U>`",
                ));
            }
        }
        k += 1;
        if is(tts.get(k), '>') {
            return Ok((params, &tts[k + 1..]));
        }
        if !is(tts.get(k), ',') {
            let span = tts.get(k).map_or_else(Span::call_site, TokenTree::span);
            return Err(syn::Error::new(
                span,
                "expected `,` or `>` after a type parameter",
            ));
        }
        k += 1;
    }
}

/// The declarations needed and not yet carried in, or the module built from those carried
/// (run-time sizes at their probe, `shapes`).
pub fn module_for(
    entries: &[Entry],
    names: Vec<Ident>,
    generics: &[Ident],
) -> syn::Result<Result<Resolved, Vec<Ident>>> {
    let mut need: Vec<Ident> = Vec::new();
    for n in names {
        let base = base_name(&n.to_string()).to_string();
        if generics.iter().any(|g| *g == base) {
            continue;
        }
        if !entries.iter().any(|e| e.name == base) && !need.iter().any(|m| *m == base) {
            need.push(Ident::new(&base, n.span()));
        }
    }
    if !need.is_empty() {
        return Ok(Err(need));
    }
    let entries = merge(entries, Span::call_site())?;
    let program = entries_program(&entries)?;
    let resolved = crate::shapes::resolve(&program)
        .map_err(|e| syn::Error::new(Span::call_site(), e.to_string()))?;
    Ok(Ok(resolved))
}

pub fn expand_host(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    let tts: Vec<TokenTree> = input.into_iter().collect();
    let (generics, rest) = type_parameters(&tts)?;
    let body = preprocess(rest.iter().cloned().collect())?;
    let mut names = Vec::new();
    dollar_names(&body, &mut names);
    let Resolved {
        module, runtime, ..
    } = match module_for(entries, names, &generics)? {
        Ok(m) => m,
        Err(need) => return Ok(Outcome::Need(need)),
    };
    let mut stmts = syn::Block::parse_within.parse2(body)?;
    let mut forms = Forms::new(&module, None);
    forms.runtime = runtime;
    forms.generics = generics.into_iter().map(TypeParam::new).collect();
    let not_built: Vec<&str> = entries
        .iter()
        .filter(|e| e.what == Carried::NotBuilt)
        .map(|e| e.name.as_str())
        .collect();
    crate::host::translate(&mut forms, &not_built, &mut stmts)?;
    Ok(Outcome::Done(quote!({ #(#stmts)* })))
}

pub fn expand(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    expand_detour(entries, input, false)
}

pub fn expand_source(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    expand_detour(entries, input, true)
}

/// `kernel_source!`'s dialect, written before the detour: `hip(64):` for the 64-lane
/// wavefronts of a CDNA GPU, `hip(32):` for RDNA's 32 lanes, CUDA without one; and the
/// tokens after it.
fn source_dialect(tts: &[TokenTree]) -> syn::Result<(Dialect, &[TokenTree])> {
    let usage = "the HIP source is `kernel_source!(hip(64): T(args) { body })` for a CDNA GPU (64-lane wavefronts), `hip(32):` for RDNA (32)";
    let is_colon = |tt: &TokenTree| matches!(tt, TokenTree::Punct(p) if p.as_char() == ':');
    match tts {
        [TokenTree::Ident(word), TokenTree::Group(g), colon, rest @ ..]
            if word == "hip" && g.delimiter() == Delimiter::Parenthesis && is_colon(colon) =>
        {
            let wavefront = syn::parse2::<syn::LitInt>(g.stream())
                .and_then(|n| n.base10_parse::<u32>())
                .ok()
                .filter(|n| matches!(n, 32 | 64))
                .ok_or_else(|| syn::Error::new(g.span(), usage))?;
            Ok((Dialect::Hip { wavefront }, rest))
        }
        [TokenTree::Ident(word), colon, ..] if word == "hip" && is_colon(colon) => {
            Err(syn::Error::new(word.span(), usage))
        }
        _ => Ok((Dialect::Cuda, tts)),
    }
}

fn expand_detour(entries: &[Entry], input: TokenStream, source_only: bool) -> syn::Result<Outcome> {
    let all: Vec<TokenTree> = input.into_iter().collect();
    let (dialect, all) = if source_only {
        source_dialect(&all)?
    } else {
        (Dialect::Cuda, all.as_slice())
    };
    let (generics, tts) = type_parameters(all)?;
    let (array, args, body) = match tts {
        [TokenTree::Ident(t), TokenTree::Group(b)] if b.delimiter() == Delimiter::Brace => {
            (t.clone(), None, b.clone())
        }
        [TokenTree::Ident(t), TokenTree::Group(a), TokenTree::Group(b)]
            if a.delimiter() == Delimiter::Parenthesis && b.delimiter() == Delimiter::Brace =>
        {
            (t.clone(), Some(a.clone()), b.clone())
        }
        _ => {
            let span = tts.first().map_or_else(Span::call_site, TokenTree::span);
            return Err(syn::Error::new(
                span,
                "expected `detour!(THREADS { body })` or `detour!(THREADS(args) { body })`",
            ));
        }
    };
    let body_tokens = preprocess(body.stream())?;
    let mut names = vec![array.clone()];
    dollar_names(&body_tokens, &mut names);
    names.extend(min_blocks_name(&body_tokens));
    let resolved = match module_for(entries, names, &generics)? {
        Ok(m) => m,
        Err(need) => return Ok(Outcome::Need(need)),
    };
    // A name whose declaration was not built: its error is the one to see, and the
    // detour a value of its type (never run: the program does not compile), its arguments
    // used.
    if entries.iter().any(|e| e.what == Carried::NotBuilt) {
        let args = args.map(|a| a.stream());
        let value = match source_only {
            true => quote!(""),
            false => quote!(::core::result::Result::<(), ::parray::Error>::Ok(())),
        };
        return Ok(Outcome::Done(quote!({
            let _ = || {
                let _ = (#args);
            };
            #value
        })));
    }
    let name = array.to_string();
    // A cuda array whose grid is sized at run time: its kernel is made at its launch.
    let runtime_threads = resolved.runtime.contains(&name);
    if let Some(why) = runtime_threads
        .then(|| crate::shapes::runtime_grid_refusal(&resolved, &name))
        .flatten()
    {
        return Err(syn::Error::new(
            array.span(),
            format!("`{name}` has a size given at run time, but {why}"),
        ));
    }
    let Resolved {
        module,
        runtime,
        program,
    } = resolved;
    let def = module.type_def(&name).ok_or_else(|| {
        syn::Error::new(
            array.span(),
            format!("`{name}` is a sub-dimension; a detour runs on a declared thread array"),
        )
    })?;
    let kind = match &def.class {
        TypeClass::Thread(k) => k.clone(),
        TypeClass::Data { .. } => {
            return Err(syn::Error::new(
                array.span(),
                format!("`{name}` is a data type; a detour runs on a thread array (`pthd`, `cuda(...)` or `mpi`)"),
            ))
        }
    };
    let (attrs, stmts) = (|input: syn::parse::ParseStream| {
        Ok((
            input.call(syn::Attribute::parse_inner)?,
            syn::Block::parse_within(input)?,
        ))
    })
    .parse2(body_tokens)?;
    let min_blocks = min_blocks_per_sm(&attrs, &module, &runtime)?;
    let mut forms = Forms::new(
        &module,
        Some(Threads {
            name: name.clone(),
            root: def.root,
            module: &module,
        }),
    );
    forms.generics = generics.into_iter().map(TypeParam::new).collect();
    forms.runtime = runtime;
    forms.sizes = Sizes::of(&program, &module);
    let site = quote_spanned!(array.span()=> ::parray::__private::DetourSite {
        array: #name,
        file: ::std::file!(),
        line: ::std::line!(),
    });
    match kind {
        ThreadKind::Pthd | ThreadKind::Mpi => {
            let (a_kind, runner) = match kind {
                ThreadKind::Pthd => ("a pthd", quote!(pthd_detour)),
                _ => ("an mpi", quote!(mpi_detour)),
            };
            if runtime_threads {
                return Err(syn::Error::new(
                    array.span(),
                    format!("`{name}` has a size given at run time; {a_kind} array's threads are a number for now (a cuda array's grid may be sized at run time)"),
                ));
            }
            if let Some(a) = args {
                return Err(syn::Error::new(
                    a.span(),
                    format!(
                        "{a_kind} detour takes no argument list: its body captures host variables"
                    ),
                ));
            }
            if source_only {
                let language = match dialect {
                    Dialect::Cuda => "CUDA",
                    Dialect::Hip { .. } => "HIP",
                };
                return Err(syn::Error::new(
                    array.span(),
                    format!("`{name}` is {a_kind} array: only cuda detours have {language} source"),
                ));
            }
            if let Some((_, attr)) = min_blocks {
                return Err(syn::Error::new(
                    attr,
                    format!("`min_blocks_per_sm` bounds a cuda kernel's registers; {a_kind} detour has none"),
                ));
            }
            let body = lower(&mut forms, Target::Pthd, &[], &stmts, body.span(), &[], &[])?.typed;
            let body = bounds::prove(body);
            refused(body.proof())?;
            let types = type_checks(&forms.generics, false);
            let consts = ConstReads::of(&body.body().runtime_consts(), false);
            Ok(Outcome::Done(host_threads(
                &body,
                &site,
                types,
                &consts,
                module.size(def.root),
                runner,
            )))
        }
        ThreadKind::Cuda(params) => {
            let Some(args) = args else {
                return Err(syn::Error::new(
                    array.span(),
                    format!("a cuda detour passes its kernel's arguments: `detour!({name}({}) {{ ... }})`", params.iter().map(|p| p.name.as_str()).collect::<Vec<_>>().join(", ")),
                ));
            };
            let args =
                Punctuated::<syn::Expr, Token![,]>::parse_terminated.parse2(args.stream())?;
            if args.len() != params.len() {
                return Err(syn::Error::new(
                    args.span(),
                    format!(
                        "`{name}` takes {} arguments ({}), {} given",
                        params.len(),
                        params
                            .iter()
                            .map(|p| p.to_string())
                            .collect::<Vec<_>>()
                            .join(", "),
                        args.len()
                    ),
                ));
            }
            // A grid sized at run time is checked when its kernel is made; here its block.
            let grid = match runtime_threads {
                true => CudaGrid::of_block(&module, def.root),
                false => CudaGrid::of(&module, def.root),
            }
            .map_err(|e| syn::Error::new(array.span(), e))?;
            // The functions the body calls, and theirs, carried in first.
            let calls = crate::func::called(&stmts);
            let need = crate::func::missing(&calls, entries);
            if !need.is_empty() {
                return Ok(Outcome::Need(need));
            }
            let funcs = crate::func::sources(entries)?;
            let lowered = lower(
                &mut forms,
                Target::Cuda,
                &params,
                &stmts,
                body.span(),
                &funcs,
                &crate::func::records(entries),
            )?;
            // `$size(G)$` of a grid sized at run time is resolved with the grid, not as a
            // type argument.
            forms.generics.retain(|g| g.name != name);
            let folded = lowered.folded_checks();
            let launch_bounds = min_blocks.map(|(n, _)| (grid.block.iter().product(), n));
            let mut lowered_body = lowered.lowered;
            lowered_body.launch_bounds = launch_bounds;
            let mut body = lowered.typed;
            if launch_bounds.is_none() {
                setmaxnreg_needs_launch_bounds(body.body())?;
            }
            body.set_launch_bounds(launch_bounds);
            if runtime_threads {
                body.set_tids_at_launch();
            }
            let body = bounds::prove(body);
            refused(body.proof())?;
            let kernel = format!("parray_{name}_{}", array.span().start().line);
            // An AMD GPU's launch limits (`grid::HIP`): its LDS is 64 KiB.
            let on_amd = grid.fits(body.body().shared_layout().1, &parray_layout::grid::HIP);
            if let (true, Dialect::Hip { .. }, Err(reason)) = (source_only, dialect, &on_amd) {
                return Err(syn::Error::new(
                    array.span(),
                    format!("`{name}` cannot run on an AMD GPU: {reason}"),
                ));
            }
            let site_ident = Ident::new("__parray_site", Span::call_site());
            let consts = ConstReads::of(&body.body().runtime_consts(), true);
            let specialise = || {
                let args = type_args(&forms.generics, &forms.literal);
                let threads = quote!(::parray::generic::RuntimeGrid::of::<#array>());
                let build =
                    parray_compiler::embed::body(&lowered_body, &quote!(::parray::__private::ir));
                let values = consts.named_values();
                quote!({
                    fn __parray_lowered() -> ::parray::__private::ir::Body { #build }
                    ::parray::generic::specialise(__parray_lowered, #kernel, &#args, #threads, &#values, #site_ident)
                })
            };
            // The source of a detour over types of sizes given at run time (or naming such
            // a size) exists once they are bound: a `Result`, CUDA's or (for 64-lane
            // wavefronts) HIP's.
            let at_launch = runtime_threads || !forms.generics.is_empty() || !consts.is_empty();
            let runtime_only = at_launch && forms.generics.iter().all(|g| g.runtime);
            if source_only && runtime_only {
                let which = match dialect {
                    Dialect::Cuda => quote!(source),
                    Dialect::Hip { wavefront: 64 } => quote!(hip),
                    Dialect::Hip { .. } => {
                        let g = &forms.generics[0];
                        return Err(syn::Error::new(g.name.span(), format!("{}: its kernel is made when the program runs, in CUDA and in HIP C++ for 64-lane wavefronts (`hip(64):`)", g.what())));
                    }
                };
                let types = type_checks(&forms.generics, true);
                let reads = &consts.checks;
                let args = args.iter();
                let made = specialise();
                return Ok(Outcome::Done(quote!({
                    #folded
                    let _ = || { #( let _ = &(#args); )* };
                    let __parray_site: &'static ::parray::DetourSite = &#site;
                    (|| -> ::parray::Result<&'static str> {
                        #types
                        #reads
                        ::core::result::Result::Ok(#made?.#which)
                    })()
                })));
            }
            if source_only {
                if let Some(g) = forms.generics.iter().find(|g| !g.runtime) {
                    let message = match dialect {
                        Dialect::Cuda => "the source of a generic detour exists once it is instantiated: set `PARRAY_DUMP_SOURCE=1` and run it",
                        Dialect::Hip { .. } => "the source of a generic detour exists once it is instantiated, at its launch: set `PARRAY_DUMP_SOURCE=hip` and run it",
                    };
                    return Err(syn::Error::new(g.name.span(), message));
                }
                let source = emit_c::kernel(&body, &kernel, dialect);
                // The arguments are checked to exist (and used), as a detour's would be.
                let args = args.iter();
                return Ok(Outcome::Done(quote!({
                    #folded
                    let _ = || { #( let _ = &(#args); )* };
                    #source
                })));
            }
            // The kernel: written here for literal types; for types known when the program
            // runs, made from the body at its first launch with them (`specialise`).
            let source = if !at_launch {
                let source = emit_c::kernel(&body, &kernel, dialect);
                let checked = match emit_c::checked_arrays(&body) {
                    Some(names) => quote!(::core::option::Option::Some(&[#(#names),*])),
                    None => quote!(::core::option::Option::None),
                };
                // `PARRAY_DUMP_SOURCE=hip` shows any detour's HIP C++ (SPEC.md 4.8).
                let hip = emit_c::hip_kernel(&body, &kernel, &grid);
                let [gx, gy, gz] = grid.grid;
                let [bx, by, bz] = grid.block;
                // Checked against the device's limit at launch (the emulator's is the same).
                let shared_bytes =
                    u32::try_from(body.body().dynamic_shared_bytes()).unwrap_or(u32::MAX);
                // The TMA copies' maps, planned here.
                let maps = body.body().tma_copies().into_iter().map(|t| {
                    let plan = t.planned();
                    let dims = plan.dims.iter().map(|d| {
                        let (b, s) = (d.box_size, d.stride);
                        quote!(::parray::layout::tma::TmaDim { box_size: #b, stride: #s })
                    });
                    let swizzle = format_ident!("{}", format!("{:?}", plan.swizzle));
                    let zero_fill = plan.zero_fill;
                    quote!(::parray::gpu::TmaMap { dims: &[#(#dims),*], swizzle: ::parray::layout::Swizzle::#swizzle, zero_fill: #zero_fill })
                });
                quote!(::parray::generic::KernelSource {
                    source: #source,
                    checked: #checked,
                    shape: ::parray::gpu::CudaGrid::new([#gx, #gy, #gz], [#bx, #by, #bz]),
                    tids: &[],
                    hip: #hip,
                    shared_bytes: #shared_bytes,
                    tma: &[#(#maps),*],
                })
            } else {
                let made = specialise();
                quote!(*#made?)
            };
            let mut types = type_checks(&forms.generics, true);
            types.extend(folded);
            // The functions it calls are used (by the GPU), and are functions where it is
            // (the records it builds are named by the generated Rust).
            let records = crate::func::records(entries);
            let built = |f: &Ident| records.iter().any(|r| f == r.name());
            types.extend(calls.iter().filter(|f| !built(f)).map(|f| {
                let f = crate::func::as_value(f, &funcs);
                quote!(let _ = #f;)
            }));
            Ok(Outcome::Done(cuda(
                &body,
                (&kernel, source),
                types,
                &consts,
                &args,
                &site,
            )))
        }
    }
}

/// What the prover refused ([`Proof::errors`]), each at its token.
fn refused(proof: &Proof) -> syn::Result<()> {
    let errors = proof
        .errors
        .iter()
        .map(|d| syn::Error::new(d.span.proc_macro(), &d.message));
    match crate::errors::in_source_order(errors) {
        Some(errors) => Err(errors),
        None => Ok(()),
    }
}

/// Before a detour starts: each array it indexes as a declared type holds that type's
/// extent (a compile-time error when its type is not one the declared type views).
fn extent_checks(
    use_: Option<&RootUse>,
    value: &TokenStream,
    name: &str,
    on_host: bool,
) -> TokenStream {
    let Some(use_) = use_ else {
        return TokenStream::new();
    };
    let site = Ident::new("__parray_site", Span::call_site());
    use_.indexed_as
        .iter()
        .map(|t| {
            let ty = Ident::new(&t.type_name, use_.span.proc_macro());
            // A pthd body's threads are host code: no dmem.
            let check = if on_host {
                quote!(indexed_on_host)
            } else {
                quote!(indexed_as)
            };
            quote_spanned!(use_.span.proc_macro()=>
                ::parray::__private::#check::<#ty, _>(&(#value), #name, #site)?;
            )
        })
        .collect()
}

/// Before a detour starts: an array the body accesses by vectors starts at a multiple of
/// their lanes (the accesses are aligned from the array's start, or checked from it).
fn alignment_check(use_: Option<&RootUse>, value: &TokenStream, name: &str) -> TokenStream {
    let Some(use_) = use_.filter(|u| u.lanes > 1) else {
        return TokenStream::new();
    };
    let site = Ident::new("__parray_site", Span::call_site());
    let lanes = usize::from(use_.lanes);
    quote_spanned!(use_.span.proc_macro()=>
        ::parray::__private::aligned_for(&(#value), #lanes, #name, #site)?;
    )
}

/// The type arguments of a generic detour, as the runtime checks them.
fn type_args(generics: &[TypeParam], literal: &[Ident]) -> TokenStream {
    let args = generics.iter().map(|g| {
        let (name, alias, dims) = (&g.name, g.name.to_string(), g.dims);
        let indices = match g.indices {
            Some(n) => quote!(::core::option::Option::Some(#n)),
            None => quote!(::core::option::Option::None),
        };
        quote!(::parray::generic::TypeArg::of::<#name>(#alias, #indices, #dims))
    });
    // The literal types a copy of run-time types names, bound as they are.
    let literal = literal.iter().map(|l| {
        let alias = l.to_string();
        quote!(::parray::generic::TypeArg::of::<#l>(#alias, ::core::option::Option::None, 0))
    });
    quote!([#(#args,)* #(#literal),*])
}

/// Before a generic detour starts: its type arguments have what its body asks of them.
fn type_checks(generics: &[TypeParam], cuda: bool) -> TokenStream {
    if generics.is_empty() {
        return TokenStream::new();
    }
    let args = type_args(generics, &[]);
    let site = Ident::new("__parray_site", Span::call_site());
    quote!(::parray::generic::check_types(&#args, #cuda, #site)?;)
}

/// The detour's expression: the checks, then `run` (a `Result`) unless one failed; `run`
/// sees `prepared`, computed after the checks, as `__parray_prepared`.
fn checked(
    site: &TokenStream,
    checks: TokenStream,
    prepared: TokenStream,
    run: TokenStream,
) -> TokenStream {
    quote! {{
        let __parray_site: &'static ::parray::DetourSite = &#site;
        #[allow(clippy::redundant_closure_call)]
        let __parray_checked = (|| -> ::parray::Result<_> { #checks Ok(#prepared) })();
        match __parray_checked {
            ::core::result::Result::Err(e) => ::core::result::Result::Err(e),
            ::core::result::Result::Ok(__parray_prepared) => #run,
        }
    }}
}

/// A cuda detour: the kernel's launch, and the same body for the CPU emulation (once per
/// block, in masked stretches between barriers, when it has `#sync`). Arrays the body
/// writes are borrowed exclusively (write handles), the others shared.
#[allow(clippy::too_many_arguments)]
fn cuda(
    proved: &Proved,
    (kernel, source): (&str, TokenStream),
    types: TokenStream,
    consts: &ConstReads,
    args: &Punctuated<syn::Expr, Token![,]>,
    site: &TokenStream,
) -> TokenStream {
    let ctx = emit_rust::ctx_ident();
    let mut checks = types;
    checks.extend(consts.checks.clone());
    let mut bind_args = TokenStream::new();
    let mut bind_params = TokenStream::new();
    let mut arg_refs = Vec::new();
    // A kernel with checked accesses also takes how many elements each pointer reaches
    // (whether it has them is the kernel's, decided at its first launch for a specialised
    // one).
    let (body, proof) = (proved.body(), proved.proof());
    let mut extents = Vec::new();
    for (i, ((p, local), a)) in body.params.iter().zip(args).enumerate() {
        let hidden = format_ident!("__parray_arg{i}");
        let l = body.local(*local);
        let name = Ident::new(&l.name, l.span.proc_macro());
        let elem = emit_rust::elem_tokens(p.elem, Mode::Pthd);
        let allow = quote!(#[allow(unused_mut, unused_variables)]);
        if p.pointer {
            let use_ = proof.root(&Root::Local(*local));
            let (soa, site) = (p.soa, Ident::new("__parray_site", Span::call_site()));
            let param = &l.name;
            checks.extend(quote_spanned!(a.span()=>
                ::parray::__private::arranged(&(#a), #soa, #param, #site)?;
            ));
            checks.extend(extent_checks(use_, &quote!(#a), &l.name, false));
            checks.extend(alignment_check(use_, &quote!(#a), &l.name));
            let handle = if use_.is_some_and(|u| u.written) {
                quote_spanned!(a.span()=> { use ::parray::__private::Writable as _; (#a).parray_writable() })
            } else {
                quote_spanned!(a.span()=> { use ::parray::__private::Handles as _; (#a).parray_handle() })
            };
            // The kernel's view of its argument, once per launch; its errors name the
            // parameter, as the GPU's fault record does.
            let param_name = &l.name;
            let view = format_ident!("__parray_view{i}");
            bind_args.extend(quote_spanned!(a.span()=>
                let #hidden = #handle;
                let #view = #hidden.in_kernel().as_parameter(#param_name);
            ));
            bind_params.extend(quote!(#allow let mut #name = #view;));
            let n = format_ident!("__parray_n{i}");
            bind_args.extend(quote!(let #n: usize = #hidden.remaining();));
            extents.push(quote!(&#n as &dyn ::parray::gpu::KernelArg));
        } else {
            bind_args.extend(quote_spanned!(a.span()=> let #hidden: #elem = #a;));
            bind_params.extend(quote!(#allow let mut #name = #hidden;));
        }
        arg_refs.push(quote!(&#hidden as &dyn ::parray::gpu::KernelArg));
    }
    // Host values the body reads, by value, after the declared parameters; a type error
    // between the host's and the body's is rustc's, at the name in the body.
    for (k, id) in body.captures.iter().enumerate() {
        let l = body.local(*id);
        let span = l.span.proc_macro();
        let name = Ident::new(&l.name, span);
        let hidden = emit_rust::host_value_ident(k);
        let ty = l.ty.expect("checked: a host value's type");
        if ty == Ty::USIZE {
            let (label, site) = (&l.name, Ident::new("__parray_site", Span::call_site()));
            checks.extend(quote_spanned!(span=>
                ::parray::__private::host_index(#name, #label, #site)?;
            ));
            bind_args.extend(quote_spanned!(span=> let #hidden: u32 = #name as u32;));
        } else {
            // At the name: rustc's "expected due to this" points there.
            let ty: TokenStream = emit_rust::scalar_tokens(
                ty.scalar().expect("checked: a host value is a number"),
                Mode::Emulate,
            )
            .into_iter()
            .map(|mut t| {
                t.set_span(span);
                t
            })
            .collect();
            bind_args.extend(quote_spanned!(span=> let #hidden: #ty = #name;));
        }
        arg_refs.push(quote!(&#hidden as &dyn ::parray::gpu::KernelArg));
    }
    let functions = emit_rust::functions_tokens(proved, Mode::Emulate);
    let (closure, run) = if body.collective() {
        // Once per block: the stretches between collective statements (barriers,
        // shuffles) loop over the block's threads.
        let block = emit_rust::block_body_tokens(proved);
        (
            quote!(move |__parray_block: &::parray::gpu::emulate::BlockThreads| {
                #functions
                #bind_params
                ::parray::__private::run_block(__parray_block, async { #block });
            }),
            quote!(::parray::gpu::detour_cuda_blocks),
        )
    } else {
        let prologue = emit_rust::prologue_tokens(proved, Mode::Emulate);
        let stmts = emit_rust::stmts_tokens(proved, Mode::Emulate);
        (
            quote!(move |#ctx: &::parray::gpu::emulate::ThreadCtx| { #functions #bind_params #prologue #stmts }),
            quote!(::parray::gpu::detour_cuda),
        )
    };
    let constants = emit_c::constant_symbols(proved)
        .into_iter()
        .map(|(i, name)| quote!((#i, #name)));
    // Each TMA copy's map, encoded at the launch over its parameter's array (SPEC 3.9):
    // as the kernel has it (planned when the body was built, or at the sizes it was
    // specialised at).
    let maps = emit_rust::tma_maps_ident();
    let tma = body.tma_copies().into_iter().map(|t| {
        let (i, decl, map) = (t.param, &t.src_ty, t.map);
        let n = format_ident!("__parray_n{i}");
        let elem = parray_compiler::back::rust::elem::elem_type(body.params[i].0.elem);
        quote!(::parray::gpu::TmaArg {
            param: #i,
            decl: #decl,
            elem: #elem,
            map: #maps[#map],
            len: #n as u64,
        })
    });
    let declared = arg_refs.len();
    let launch_tids = emit_rust::launch_tids_ident();
    let unpack = consts.unpack();
    let launch = quote! {{
        #unpack
        #bind_args
        #[allow(unused_variables)]
        let #maps = __parray_prepared.tma;
        let __parray_launch = ::parray::gpu::Launch {
            kernel: #kernel,
            source: ::std::borrow::Cow::Borrowed(__parray_prepared.source),
            shape: __parray_prepared.shape,
            shared_bytes: __parray_prepared.shared_bytes,
            site: __parray_site,
            checked: __parray_prepared.checked,
            hip_source: ::core::option::Option::Some(__parray_prepared.hip),
            constants: &[#(#constants),*],
            tma: ::std::vec![#(#tma),*],
        };
        #[allow(unused_variables)]
        let #launch_tids = __parray_prepared.tids;
        #[allow(unused_labels, unused_mut, unused_variables, clippy::needless_range_loop)]
        let __parray_body = #closure;
        let __parray_args: &[&dyn ::parray::gpu::KernelArg] = &[#(#arg_refs,)* #(#extents),*];
        let __parray_args = match __parray_prepared.checked {
            ::core::option::Option::Some(_) => __parray_args,
            ::core::option::Option::None => &__parray_args[..#declared],
        };
        // SAFETY: the kernel's parameters are the declaration's, then the host values' (of
        // the types the check gave them, `unsigned` for `usize`), then, for a kernel with
        // checked accesses, the extent of each pointer; the arguments were bound above to
        // exactly those types.
        unsafe { #run(&__parray_launch, __parray_args, __parray_body) }
    }};
    checked(site, checks, consts.prepared(source), launch)
}

/// A pthd or mpi detour: the body once per CPU thread (pthd) or once on this process, as
/// its rank (mpi), run by the runtime's `runner`. A captured array the body writes is
/// borrowed exclusively for the detour (a write handle shadows its name), the others are
/// captured by reference.
fn host_threads(
    proved: &Proved,
    site: &TokenStream,
    types: TokenStream,
    consts: &ConstReads,
    threads: u64,
    runner: TokenStream,
) -> TokenStream {
    let ctx = emit_rust::ctx_ident();
    let proof = proved.proof();
    let stmts = emit_rust::body_tokens(proved, Mode::Pthd);
    let threads = threads as usize;
    let mut checks = types;
    checks.extend(consts.checks.clone());
    let mut writers = TokenStream::new();
    for use_ in &proof.roots {
        let Root::Capture(path) = &use_.root else {
            continue;
        };
        let value = emit_rust::path_tokens(path, use_.span.proc_macro());
        checks.extend(extent_checks(Some(use_), &value, path, true));
        checks.extend(alignment_check(Some(use_), &value, path));
        if use_.written && !path.contains("::") {
            let name = Ident::new(path, use_.span.proc_macro());
            writers.extend(quote_spanned!(use_.span.proc_macro()=>
                let #name = { use ::parray::__private::Writable as _; #name.parray_writable() };
            ));
        }
    }
    let unpack = consts.unpack();
    let run = quote! {{
        #unpack
        #writers
        let __parray_body = |#ctx: &::parray::__private::PthdCtx| { #stmts };
        ::parray::__private::#runner(__parray_site, #threads, __parray_body)
    }};
    checked(site, checks, consts.prepared(quote!(())), run)
}

/// The run-time constants a body names (`const N;`, `const M = N / 16;`), read once when
/// its detour starts, after its checks: an unbound size is `Error::Unbound` then, before
/// anything runs. The values travel from the checks to the run beside the prepared value,
/// and the body finds each under [`emit_rust::runtime_const_ident`].
struct ConstReads {
    names: Vec<Ident>,
    /// `let __parray_const_N: usize = N.value()?;` for each (and, for a cuda body, whose
    /// `usize` is 32 bits, the check that it fits).
    checks: TokenStream,
}

impl ConstReads {
    fn of(names: &[String], cuda: bool) -> ConstReads {
        let names: Vec<Ident> = names
            .iter()
            .map(|n| Ident::new(n, Span::call_site()))
            .collect();
        let site = Ident::new("__parray_site", Span::call_site());
        let checks = names
            .iter()
            .map(|n| {
                let (value, label) = (
                    emit_rust::runtime_const_ident(&n.to_string()),
                    n.to_string(),
                );
                let fits =
                    cuda.then(|| quote!(::parray::__private::host_index(#value, #label, #site)?;));
                quote!(let #value: usize = ::parray::RuntimeSize::value(&#n)?; #fits)
            })
            .collect();
        ConstReads { names, checks }
    }

    fn is_empty(&self) -> bool {
        self.names.is_empty()
    }

    fn values(&self) -> Vec<Ident> {
        self.names
            .iter()
            .map(|n| emit_rust::runtime_const_ident(&n.to_string()))
            .collect()
    }

    /// `[("N", value), ...]`, what a kernel is specialised with.
    fn named_values(&self) -> TokenStream {
        let pairs = self.names.iter().zip(self.values()).map(|(n, v)| {
            let n = n.to_string();
            quote!((#n, #v))
        });
        quote!([#(#pairs),*])
    }

    /// The prepared value with the constants beside it.
    fn prepared(&self, prepared: TokenStream) -> TokenStream {
        let (values, k) = (self.values(), self.names.len());
        quote!((#prepared, { let values: [usize; #k] = [#(#values),*]; values }))
    }

    /// The run's first statement: the prepared value and the constants, by name.
    fn unpack(&self) -> TokenStream {
        let values = self.values();
        quote!(let (__parray_prepared, [#(#values),*]) = __parray_prepared;)
    }
}

/// A `#setmaxnreg` in a kernel without `#![min_blocks_per_sm(N)]` is an error at it: ptxas
/// ignores the instruction where it cannot tell the kernel's registers at entry, and says
/// so only in its log (C7508, seen on an H200).
fn setmaxnreg_needs_launch_bounds(body: &parray_compiler::ir::Body) -> syn::Result<()> {
    let mut at = None;
    parray_compiler::ir::visit_stmts(&body.stmts, &mut |s| {
        if let parray_compiler::ir::Stmt::SetMaxNreg { loc, .. } = s {
            at.get_or_insert(loc.span.proc_macro());
        }
    });
    match at {
        Some(span) => Err(syn::Error::new(
            span,
            "`#setmaxnreg` needs the kernel's block size at entry, or ptxas ignores it (C7508, in its log only): declare `#![min_blocks_per_sm(N)]` first in the body (N blocks a multiprocessor: 1 for a warp-specialised kernel)",
        )),
        None => Ok(()),
    }
}

/// The constant a body's `#![min_blocks_per_sm(NAME)]` names, to be carried in as the
/// `$...$` forms' names are.
fn min_blocks_name(body: &TokenStream) -> Option<Ident> {
    let tts: Vec<TokenTree> = body.clone().into_iter().collect();
    tts.windows(3).find_map(|w| match w {
        [TokenTree::Punct(h), TokenTree::Punct(b), TokenTree::Group(g)]
            if h.as_char() == '#' && b.as_char() == '!' && g.delimiter() == Delimiter::Bracket =>
        {
            match &g.stream().into_iter().collect::<Vec<_>>()[..] {
                [TokenTree::Ident(a), TokenTree::Group(args)] if a == "min_blocks_per_sm" => {
                    match &args.stream().into_iter().collect::<Vec<_>>()[..] {
                        [TokenTree::Ident(n)] => Some(n.clone()),
                        _ => None,
                    }
                }
                _ => None,
            }
        }
        _ => None,
    })
}

/// A body's inner attribute `#![min_blocks_per_sm(N)]` (CUDA's `__launch_bounds__`: the
/// compiler keeps each thread's registers few enough for N blocks on a multiprocessor),
/// with its span; the only inner attribute a body takes. N is a literal or a `parray!`
/// constant of `module` (a subprogram's, which may differ from one call's types to
/// another's), not one given at run time (`runtime`): the kernel is declared with it.
fn min_blocks_per_sm(
    attrs: &[syn::Attribute],
    module: &Module,
    runtime: &[String],
) -> syn::Result<Option<(u32, Span)>> {
    let mut found = None;
    for attr in attrs {
        let usage = "the only inner attribute of a detour body is `#![min_blocks_per_sm(N)]`, N a positive integer or a `parray!` constant";
        if !attr.path().is_ident("min_blocks_per_sm") || found.is_some() {
            return Err(syn::Error::new(attr.meta.span(), usage));
        }
        let n = match attr.parse_args::<syn::Expr>() {
            Ok(syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Int(n),
                ..
            })) => n.base10_parse::<u64>().ok(),
            Ok(syn::Expr::Path(p)) => match p.path.get_ident().map(Ident::to_string) {
                Some(name) if runtime.contains(&name) => {
                    return Err(syn::Error::new(
                        p.span(),
                        format!("`{name}` is given at run time, but `min_blocks_per_sm` is part of the kernel's declaration: give a literal or a constant of numbers"),
                    ))
                }
                Some(name) => module.constant(&name),
                None => None,
            },
            _ => None,
        };
        let n = n
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| *n > 0)
            .ok_or_else(|| syn::Error::new(attr.meta.span(), usage))?;
        found = Some((n, attr.meta.span()));
    }
    Ok(found)
}
