//! `detour!(T { body })` and `host! { ... }`.

use parray_core::{Module, ThreadKind, TypeClass};
use proc_macro2::{Delimiter, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote, quote_spanned};
use syn::parse::Parser;
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::Token;

use crate::body::{Mode, Translator};
use crate::cuda::{tid_name, Emitter};
use crate::decl::entries_program;
use crate::dollar::{preprocess, tid_path, Forms, Threads, DOLLAR};
use crate::resolve::{base_name, merge, Entry, Outcome};

/// Declared names the body refers to: in `$...$` forms, and types it creates (`S::create()`).
fn dollar_names(tokens: &TokenStream, out: &mut Vec<Ident>) {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
            TokenTree::Ident(ty)
                if matches!(&tts[i + 1..], [TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Ident(f), ..]
                    if a.as_char() == ':' && b.as_char() == ':' && f == "create") =>
            {
                out.push(ty.clone());
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

/// The declarations needed and not yet carried in, or the module built from those carried.
fn module_for(entries: &[Entry], names: Vec<Ident>) -> syn::Result<Result<Module, Vec<Ident>>> {
    let mut need: Vec<Ident> = Vec::new();
    for n in names {
        let base = base_name(&n.to_string()).to_string();
        if !entries.iter().any(|e| e.name == base) && !need.iter().any(|m| *m == base) {
            need.push(Ident::new(&base, n.span()));
        }
    }
    if !need.is_empty() {
        return Ok(Err(need));
    }
    let entries = merge(entries, Span::call_site())?;
    let program = entries_program(&entries)?;
    let module = Module::build(&program, &[])
        .map_err(|e| syn::Error::new(Span::call_site(), e.to_string()))?;
    Ok(Ok(module))
}

pub fn expand_host(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    let body = preprocess(input)?;
    let mut names = Vec::new();
    dollar_names(&body, &mut names);
    let module = match module_for(entries, names)? {
        Ok(m) => m,
        Err(need) => return Ok(Outcome::Need(need)),
    };
    let mut stmts = syn::Block::parse_within.parse2(body)?;
    let mut forms = Forms::new(&module, None);
    Translator::new(&mut forms, Mode::Host).translate(&mut stmts)?;
    Ok(Outcome::Done(quote!({ #(#stmts)* })))
}

pub fn expand(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    expand_detour(entries, input, false)
}

pub fn expand_source(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    expand_detour(entries, input, true)
}

fn expand_detour(entries: &[Entry], input: TokenStream, source_only: bool) -> syn::Result<Outcome> {
    let tts: Vec<TokenTree> = input.into_iter().collect();
    let (array, args, body) = match tts.as_slice() {
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
    let module = match module_for(entries, names)? {
        Ok(m) => m,
        Err(need) => return Ok(Outcome::Need(need)),
    };
    let name = array.to_string();
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
    let mut stmts = syn::Block::parse_within.parse2(body_tokens)?;
    let threads = || Threads {
        name: name.clone(),
        root: def.root,
        module: &module,
    };
    let size = module.size(def.root);
    match kind {
        ThreadKind::Pthd => {
            if let Some(a) = args {
                return Err(syn::Error::new(
                    a.span(),
                    "a pthd detour takes no argument list: its body captures host variables",
                ));
            }
            if source_only {
                return Err(syn::Error::new(
                    array.span(),
                    format!("`{name}` is a pthd array: only cuda detours have CUDA source"),
                ));
            }
            let mut forms = Forms::new(&module, Some(threads()));
            Translator::new(&mut forms, Mode::Pthd).translate(&mut stmts)?;
            Ok(Outcome::Done(pthd(&forms, &name, size, &stmts)))
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
            let shape = CudaShape::of(&module, def.root);
            let kernel_name = format!("parray_{name}_{}", array.span().unwrap().line());
            let mut forms = Forms::new(&module, Some(threads()));
            let kernel =
                Emitter::new(&mut forms, &module).kernel(&kernel_name, &params, &stmts, "")?;
            let c_tids = shape.c_tid_lets(&forms);
            let source = kernel
                .source
                .replacen(") {\n", &format!(") {{\n{c_tids}"), 1);
            if source_only {
                return Ok(Outcome::Done(quote!(#source)));
            }
            let mut emu_forms = Forms::new(&module, Some(threads()));
            let mut tr = Translator::new(&mut emu_forms, Mode::Emulate);
            tr.translate(&mut stmts)?;
            Ok(Outcome::Done(cuda(
                &emu_forms,
                &shape,
                &kernel_name,
                &source,
                kernel.syncs,
                &params,
                &args,
                &stmts,
                &array,
                body.span(),
            )))
        }
        ThreadKind::Mpi => Err(syn::Error::new(
            array.span(),
            "detours on `mpi` thread arrays are not implemented yet",
        )),
    }
}

/// A cuda thread array's grid and block, `[x, y, z]`, and the axis of each dimension.
struct CudaShape {
    grid: [u64; 3],
    block: [u64; 3],
    /// Per top-level dimension (grid, block): its children's axes, outermost first.
    axes: [Vec<usize>; 2],
    /// Threads per block.
    block_threads: u64,
}

impl CudaShape {
    /// PARRAY.md section 4: each of the two dimensions maps its children, outermost first,
    /// to z, y, x (a leaf to x alone). parray-core validated the shape.
    fn of(module: &Module, root: parray_core::NodeId) -> Self {
        let top = &module.node(root).children;
        let dims = |n: parray_core::NodeId| -> Vec<u64> {
            let node = module.node(n);
            if node.children.is_empty() {
                vec![node.size]
            } else {
                node.children.iter().map(|c| module.size(*c)).collect()
            }
        };
        let (g, b) = (dims(top[0]), dims(top[1]));
        let xyz = |d: &[u64]| {
            let mut v = [1u64; 3];
            for (k, s) in d.iter().rev().enumerate() {
                v[k] = *s;
            }
            v
        };
        let axes = |d: &[u64]| (0..d.len()).map(|k| d.len() - 1 - k).collect::<Vec<_>>();
        CudaShape {
            grid: xyz(&g),
            block: xyz(&b),
            axes: [axes(&g), axes(&b)],
            block_threads: b.iter().product(),
        }
    }

    /// `const unsigned tid_0 = blockIdx.x;` for each thread index the body uses, written
    /// from the flat id `tid = tid_0 * |T_1| + tid_1` by the offset simplifier.
    fn c_tid_lets(&self, forms: &Forms) -> String {
        let mut vars = parray_core::Vars::new();
        let mut flat = [
            parray_core::Expr::constant(0),
            parray_core::Expr::constant(0),
        ];
        for (d, (prefix, dims)) in [("blockIdx", &self.grid), ("threadIdx", &self.block)]
            .into_iter()
            .enumerate()
        {
            let axes = &self.axes[d];
            let mut weight = 1;
            for &axis in axes.iter().rev() {
                let v = vars.bind(
                    &format!("{prefix}.{}", ["x", "y", "z"][axis]),
                    dims[axis] - 1,
                );
                flat[d] = flat[d].add(&parray_core::Expr::var(v).scale(weight), &vars);
                weight *= dims[axis];
            }
        }
        let tid = flat[0].scale(self.block_threads).add(&flat[1], &vars);
        let mut out = String::new();
        for path in &forms.tids_used {
            let e = forms.tid_from_flat(path, &tid, &vars);
            let off = parray_core::Offset {
                expr: e,
                vars: vars.clone(),
            };
            out.push_str(&format!(
                "    const unsigned {} = {};\n",
                tid_name(path),
                parray_core::emit_cuda::to_c_named(&off)
            ));
        }
        out
    }
}

#[allow(clippy::too_many_arguments)]
fn cuda(
    forms: &Forms,
    shape: &CudaShape,
    kernel: &str,
    source: &str,
    syncs: bool,
    params: &[parray_core::Param],
    args: &Punctuated<syn::Expr, Token![,]>,
    stmts: &[syn::Stmt],
    array: &Ident,
    body: Span,
) -> TokenStream {
    let tid = Forms::tid_ident("");
    let lets = tid_lets(forms, &tid);
    let [gx, gy, gz] = shape.grid.map(|v| v as u32);
    let [bx, by, bz] = shape.block.map(|v| v as u32);
    let block_threads = shape.block_threads as usize;
    let mut bind_args = TokenStream::new();
    let mut bind_params = TokenStream::new();
    let mut arg_refs = Vec::new();
    for (i, (p, a)) in params.iter().zip(args).enumerate() {
        let hidden = format_ident!("__parray_arg{i}");
        // The body names the parameters: give them the body's hygiene.
        let name = Ident::new(&p.name, body);
        let elem = crate::decl::elem_tokens(p.elem);
        if p.pointer {
            bind_args.extend(quote_spanned!(a.span()=> let #hidden: ::parray::Ptr<#elem> = ::parray::Access::ptr(&(#a));));
            bind_params
                .extend(quote!(#[allow(unused_mut, unused_variables)] let mut #name = #hidden;));
        } else {
            bind_args.extend(quote_spanned!(a.span()=> let #hidden: #elem = #a;));
            bind_params.extend(quote!(#[allow(unused_variables)] let #name = #hidden;));
        }
        arg_refs.push(quote!(&#hidden as &dyn ::parray::gpu::KernelArg));
    }
    let location = quote_spanned!(array.span()=> concat!(file!(), ":", line!()));
    quote! {{
        #bind_args
        let __parray_launch = ::parray::gpu::Launch {
            kernel: #kernel,
            source: ::std::borrow::Cow::Borrowed(#source),
            grid: [#gx, #gy, #gz],
            block: [#bx, #by, #bz],
            shared_bytes: 0,
            syncs: #syncs,
            location: #location,
        };
        let __parray_body = |__parray_ectx: &::parray::gpu::emulate::ThreadCtx| {
            let __parray_ctx = ::parray::__private::EmuCtx(__parray_ectx);
            #[allow(unused_variables)]
            let #tid: usize = __parray_ectx.block_id() * #block_threads + __parray_ectx.thread_id();
            #lets
            #bind_params
            #(#stmts)*
        };
        // SAFETY: the kernel's parameters are the declaration's, and the arguments were
        // bound above to exactly those types.
        unsafe { ::parray::gpu::detour_cuda(&__parray_launch, &[#(#arg_refs),*], __parray_body) }
    }}
}

/// The prologue that defines each thread index the body uses, from the flat `tid`.
fn tid_lets(forms: &Forms, tid: &Ident) -> TokenStream {
    let mut vars = parray_core::Vars::new();
    let flat = vars.bind(
        "__parray_tid",
        forms
            .threads
            .as_ref()
            .map_or(0, |t| t.module.size(t.root) - 1),
    );
    let mut out = TokenStream::new();
    for path in &forms.tids_used {
        if path.is_empty() {
            continue;
        }
        let e = forms.tid_from_flat(path, &parray_core::Expr::var(flat), &vars);
        let off = parray_core::Offset {
            expr: e,
            vars: vars.clone(),
        };
        let value = parray_core::emit_rust::to_tokens(&off, &|_| quote!(#tid));
        let id = Forms::tid_ident(path);
        out.extend(quote!(#[allow(unused_variables)] let #id: usize = #value;));
    }
    out
}

fn pthd(forms: &Forms, name: &str, threads: u64, stmts: &[syn::Stmt]) -> TokenStream {
    let tid = Forms::tid_ident("");
    let lets = tid_lets(forms, &tid);
    let threads = threads as usize;
    quote! {{
        let __parray_body = |__parray_ctx: &::parray::__private::PthdCtx| {
            #[allow(unused_variables)]
            let #tid: usize = __parray_ctx.tid();
            #lets
            #(#stmts)*
        };
        ::parray::__private::pthd_detour(#name, #threads, __parray_body)
    }}
}
