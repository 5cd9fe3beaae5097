//! `detour!(T { body })` and `host! { ... }`.

use parray_core::{Module, ThreadKind, TypeClass};
use proc_macro2::{Delimiter, Ident, Span, TokenStream, TokenTree};
use quote::quote;
use syn::parse::Parser;

use crate::body::{Mode, Translator};
use crate::decl::entries_program;
use crate::dollar::{preprocess, tid_path, Forms, Threads, DOLLAR};
use crate::resolve::{base_name, merge, Entry, Outcome};

/// Declared names the `$...$` forms of `tokens` refer to.
fn dollar_names(tokens: &TokenStream, out: &mut Vec<Ident>) {
    let tts: Vec<TokenTree> = tokens.clone().into_iter().collect();
    for (i, tt) in tts.iter().enumerate() {
        match tt {
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
    let mut forms = Forms::new(
        &module,
        Some(Threads {
            name: name.clone(),
            root: def.root,
            module: &module,
        }),
    );
    let mut tr = Translator::new(&mut forms, Mode::Detour);
    tr.translate(&mut stmts)?;
    match kind {
        ThreadKind::Pthd => {
            if let Some(a) = args {
                return Err(syn::Error::new(
                    a.span(),
                    "a pthd detour takes no argument list: its body captures host variables",
                ));
            }
            Ok(Outcome::Done(pthd(
                &forms,
                &name,
                module.size(def.root),
                &stmts,
            )))
        }
        ThreadKind::Cuda(_) | ThreadKind::Mpi => Err(syn::Error::new(
            array.span(),
            format!(
                "detours on `{}` thread arrays are not implemented yet",
                kind.keyword()
            ),
        )),
    }
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
        out.extend(quote!(let #id: usize = #value;));
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
