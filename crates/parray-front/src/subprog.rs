//! `subprog!`: the paper's `#subprog NAME(args, type)`, a subprogram written once against
//! type parameters and instantiated, at each call, for the caller's types.
//!
//! `subprog! { fn sgemm<T>(a, b, c) { parray! { ... #T_0 ... } detour!(...) } }` defines
//! a macro `sgemm!`. A call `sgemm!(<M>(&a, &b, &mut c))` learns M's declaration (and what
//! M is built on) through M's companion, as every macro here does (`resolve`), and expands
//! to the body with those declarations imported under the parameter's name: `T` is M
//! (`type T = M`), and each type M depends on, `X`, is imported as `__X` (`type __X = X`),
//! so that the subprogram's own names (Fig 21 declares an `A`) cannot meet the caller's.
//! Every offset is then folded for the caller's layout exactly as for a named type.
//! Before expanding, the call resolves the subprogram's declarations for these types: a
//! type it cannot take (N not a multiple of a tile) is an error at the type argument that
//! names the type and the constraint.

use std::collections::HashSet;

use parray_layout::ast::{Item, Program};
use parray_layout::ElemType;
use proc_macro2::{Delimiter, Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};
use syn::parse::{Parse, ParseStream};
use syn::punctuated::Punctuated;
use syn::{braced, parenthesized, Token};

use crate::decl::not_built_items;
use crate::dollar::preprocess;
use crate::resolve::{base_name, Carried, Entry, Outcome};
use crate::text::SourceMap;

/// The definition: `#[attrs] vis fn name<T, U>(a, mut b) { body }`.
struct Definition {
    attrs: Vec<syn::Attribute>,
    vis: syn::Visibility,
    name: Ident,
    types: Vec<Ident>,
    params: Vec<(Option<Token![mut]>, Ident)>,
    output: syn::ReturnType,
    body: TokenStream,
}

impl Parse for Definition {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let attrs = input.call(syn::Attribute::parse_outer)?;
        let vis: syn::Visibility = input.parse()?;
        input.parse::<Token![fn]>()?;
        let name: Ident = input.parse()?;
        let mut types = Vec::new();
        if input.peek(Token![<]) {
            input.parse::<Token![<]>()?;
            while !input.peek(Token![>]) {
                if input.peek(Token![type]) {
                    let kw: Token![type] = input.parse()?;
                    return Err(syn::Error::new(
                        kw.span,
                        "`type` is a Rust keyword: name the type parameter `T` (or `TYPE`) and write `#T_0` in the declarations",
                    ));
                }
                types.push(input.parse()?);
                if !input.peek(Token![>]) {
                    input.parse::<Token![,]>()?;
                }
            }
            input.parse::<Token![>]>()?;
        }
        if types.is_empty() {
            return Err(syn::Error::new(
                name.span(),
                format!("a subprogram takes at least one type parameter: `fn {name}<T>(...)`"),
            ));
        }
        let list;
        parenthesized!(list in input);
        let params = Punctuated::<(Option<Token![mut]>, Ident), Token![,]>::parse_terminated_with(
            &list,
            |p| Ok((p.parse()?, p.parse()?)),
        )?
        .into_iter()
        .collect();
        let output = input.parse()?;
        let body;
        braced!(body in input);
        let body: TokenStream = body.parse()?;
        Ok(Definition {
            attrs,
            vis,
            name,
            types,
            params,
            output,
            body,
        })
    }
}

/// `subprog! { fn name<T>(params) { body } }`: the macro `name!`.
pub fn define(input: TokenStream) -> syn::Result<TokenStream> {
    let def: Definition = syn::parse2(input)?;
    // The body travels through `macro_rules!`, where `$` means something: write the forms
    // as the placeholders the other macros take (they are left as they are there).
    let body = preprocess(def.body)?;
    let Definition {
        attrs,
        vis,
        name,
        types,
        params,
        output,
        ..
    } = def;
    let params = params.iter().map(|(m, p)| quote!(#m #p));
    let hidden = format_ident!(
        "__parray_subprog_{}_{:016x}",
        name,
        crate::resolve::fingerprint(&[], &name)
    );
    let usage = format!(
        "Call as `{name}!(<{}>({}))`.",
        types.iter().map(|_| "Type").collect::<Vec<_>>().join(", "),
        (0..params.len())
            .map(|k| format!("arg{k}"))
            .collect::<Vec<_>>()
            .join(", ")
    );
    Ok(quote! {
        #[doc(hidden)]
        #[allow(non_local_definitions)]
        #[macro_export]
        macro_rules! #hidden {
            ($($call:tt)*) => {
                ::parray::__subprog_call! {
                    [] [] subprog {
                        #name (#(#types),*) (#(#params),*) (#output) { #body }
                        $($call)*
                    }
                }
            };
        }
        #(#attrs)*
        #[doc = ""]
        #[doc = #usage]
        #[allow(unused_imports)]
        #vis use #hidden as #name;
    })
}

/// A call as the definition's macro hands it on: the definition, then `<M>(args)`.
struct Call {
    name: Ident,
    types: Vec<Ident>,
    params: Vec<TokenStream>,
    output: TokenStream,
    body: TokenStream,
    type_args: Vec<Ident>,
    args: Vec<syn::Expr>,
    /// `name!(@source <M>)`: the CUDA C of the body's cuda detour for these types, as
    /// `kernel_source!` gives it (for reading and snapshot tests), instead of running; with
    /// the tokens of `kernel_source!`'s dialect (`hip(64):` for `@source hip(64) <M>`).
    source: Option<TokenStream>,
    /// The call's tokens, for errors about the call as a whole.
    span: Span,
}

impl Parse for Call {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let name: Ident = input.parse()?;
        let types;
        parenthesized!(types in input);
        let types = Punctuated::<Ident, Token![,]>::parse_terminated(&types)?
            .into_iter()
            .collect();
        let params;
        parenthesized!(params in input);
        let params = Punctuated::<TokenStream, Token![,]>::parse_terminated_with(&params, |p| {
            let m: Option<Token![mut]> = p.parse()?;
            let i: Ident = p.parse()?;
            Ok(quote!(#m #i))
        })?
        .into_iter()
        .collect();
        let output;
        parenthesized!(output in input);
        let output: TokenStream = output.parse()?;
        let body;
        braced!(body in input);
        let body: TokenStream = body.parse()?;
        let span = input.span();
        let usage = |span| {
            syn::Error::new(
                span,
                format!("call a subprogram with its types and arguments: `{name}!(<M>(a, b))`"),
            )
        };
        let mut source = None;
        if input.peek(Token![@]) {
            input.parse::<Token![@]>()?;
            let word: Ident = input.parse()?;
            if word != "source" {
                return Err(syn::Error::new(
                    word.span(),
                    format!(
                        "`{name}!(@source <M>)` gives the kernel's source; `@{word}` is not a mode"
                    ),
                ));
            }
            // `@source hip(64) <M>`: `kernel_source!` checks the wavefront.
            source = Some(if input.peek(syn::Ident) {
                let dialect: Ident = input.parse()?;
                let wavefront: TokenTree = input.parse()?;
                quote!(#dialect #wavefront :)
            } else {
                TokenStream::new()
            });
        }
        if !input.peek(Token![<]) {
            return Err(usage(input.span()));
        }
        input.parse::<Token![<]>()?;
        let mut type_args = Vec::new();
        while !input.peek(Token![>]) {
            type_args.push(input.parse().map_err(|e| usage(e.span()))?);
            if !input.peek(Token![>]) {
                input.parse::<Token![,]>()?;
            }
        }
        input.parse::<Token![>]>()?;
        let args = if source.is_some() && input.is_empty() {
            Vec::new()
        } else {
            let list;
            parenthesized!(list in input);
            Punctuated::<syn::Expr, Token![,]>::parse_terminated(&list)?
                .into_iter()
                .collect()
        };
        if !input.is_empty() {
            return Err(input.error("unexpected tokens after the subprogram's arguments"));
        }
        Ok(Call {
            name,
            types,
            params,
            output,
            body,
            type_args,
            args,
            source,
            span,
        })
    }
}

impl Call {
    /// The element parameters: each type parameter this call gives an element type
    /// (`bf16`, `half`, `float`, ...) rather than a declared type, with its element.
    fn elements(&self) -> Vec<(Ident, ElemType)> {
        self.types
            .iter()
            .zip(&self.type_args)
            .filter_map(|(param, arg)| {
                ElemType::from_keyword(&arg.to_string()).map(|e| (param.clone(), e))
            })
            .collect()
    }

    fn is_element(&self, arg: &Ident) -> bool {
        ElemType::from_keyword(&arg.to_string()).is_some()
    }
}

/// `body` with each element parameter's name replaced where the body's macros read it:
/// in a `parray!` block by the element's keyword (`half`), in a detour body (`detour!`,
/// `kernel_source!`) by its Rust name (`f16`), as those languages name elements. Rust code
/// elsewhere names the parameter, a type alias of the element's Rust type (`instantiate`).
fn with_elements(
    body: TokenStream,
    elements: &[(Ident, ElemType)],
    within: Option<&str>,
) -> TokenStream {
    if elements.is_empty() {
        return body;
    }
    let mut out: Vec<TokenTree> = Vec::new();
    for tt in body {
        let tt = match tt {
            TokenTree::Group(g) => {
                let inner = match out.as_slice() {
                    [.., TokenTree::Ident(m), TokenTree::Punct(bang)]
                        if bang.as_char() == '!' && within.is_none() =>
                    {
                        ["parray", "detour", "kernel_source"]
                            .into_iter()
                            .find(|k| m == k)
                    }
                    _ => None,
                };
                let stream = with_elements(g.stream(), elements, inner.or(within));
                let mut group = proc_macro2::Group::new(g.delimiter(), stream);
                group.set_span(g.span());
                TokenTree::Group(group)
            }
            TokenTree::Ident(id) => match (elements.iter().find(|(p, _)| *p == id), within) {
                (Some((_, e)), Some("parray")) => {
                    TokenTree::Ident(Ident::new(e.keyword(), id.span()))
                }
                (Some((_, e)), Some(_)) => TokenTree::Ident(Ident::new(e.rust_type(), id.span())),
                _ => TokenTree::Ident(id),
            },
            tt => tt,
        };
        out.push(tt);
    }
    out.into_iter().collect()
}

/// The `parray!` blocks written directly in the body, as token streams.
fn declaration_blocks(body: &TokenStream) -> Vec<TokenStream> {
    let tts: Vec<TokenTree> = body.clone().into_iter().collect();
    let mut out = Vec::new();
    for (i, tt) in tts.iter().enumerate() {
        if let (TokenTree::Ident(m), Some(TokenTree::Punct(bang)), Some(TokenTree::Group(g))) =
            (tt, tts.get(i + 1), tts.get(i + 2))
        {
            if m == "parray" && bang.as_char() == '!' && g.delimiter() != Delimiter::None {
                out.push(g.stream());
            }
        }
    }
    out
}

/// Visibility tokens are not type-language text.
fn without_visibility(tokens: TokenStream) -> TokenStream {
    let mut out = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        if crate::resolve::is_ident(&tt, "pub") {
            if matches!(iter.peek(), Some(TokenTree::Group(g)) if g.delimiter() == Delimiter::Parenthesis)
            {
                iter.next();
            }
            continue;
        }
        out.push(tt);
    }
    out.into_iter().collect()
}

/// `declaration` with each declared or used name renamed by `rename` (paths keep their
/// `_<digits>` suffixes): how an imported declaration takes its name in the subprogram.
fn renamed(text: &str, rename: &dyn Fn(&str) -> String) -> syn::Result<String> {
    let program = parray_layout::parse_program(text)
        .map_err(|e| syn::Error::new(Span::call_site(), format!("carried declaration: {e}")))?;
    let mut edits: Vec<(usize, usize, String)> = Vec::new();
    for item in &program.items {
        let name = item.name();
        edits.push((
            name.span.start,
            name.span.end,
            rename(&name.name).to_string(),
        ));
        for (used, at) in item.names_used() {
            let base = base_name(&used);
            edits.push((at, at + base.len(), rename(base)));
        }
    }
    edits.sort_by_key(|e| std::cmp::Reverse(e.0));
    let mut out = text.to_string();
    for (start, end, new) in edits {
        out.replace_range(start..end, &new);
    }
    Ok(out)
}

/// Whether the entry carries a record (`record Particle { ... }`, its derive's companion).
fn is_record_entry(e: &Entry) -> bool {
    e.what == Carried::Declaration
        && parray_layout::parse_program(&e.text)
            .is_ok_and(|p| matches!(p.items.as_slice(), [Item::Record(_)]))
}

/// The entries `name` needs, itself last, in the order `entries` has them (deps first).
fn closure<'e>(entries: &'e [Entry], roots: &[String]) -> Vec<&'e Entry> {
    let mut needed: HashSet<String> = HashSet::new();
    let mut todo: Vec<String> = roots.to_vec();
    while let Some(n) = todo.pop() {
        if !needed.insert(n.clone()) {
            continue;
        }
        if let Some(e) = entries.iter().find(|e| e.name == n) {
            if let Ok(p) = parray_layout::parse_program(&e.text) {
                for item in &p.items {
                    todo.extend(
                        item.names_used()
                            .into_iter()
                            .map(|(u, _)| base_name(&u).to_string()),
                    );
                }
            }
        }
    }
    // Companions carry what their block declared before them: a name may come twice.
    let mut out: Vec<&Entry> = Vec::new();
    for e in entries.iter().filter(|e| needed.contains(&e.name)) {
        if !out.iter().any(|o| o.name == e.name) {
            out.push(e);
        }
    }
    out
}

/// The handler of a call (run by `resolve::drive` once the type arguments are known).
/// Its errors, as those of the macros in the body it expands to, are resolved at the call's
/// first type argument: a mistake in the body is one error, whatever the number of calls.
pub fn expand_call(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    let mut call: Call = syn::parse2(input)?;
    let elements = call.elements();
    call.body = with_elements(std::mem::take(&mut call.body), &elements, None);
    let anchor = call.type_args.first().map_or(call.span, Ident::span);
    instantiate(entries, &call).map_err(|e| crate::errors::anchored(e, anchor))
}

/// [`expand_call`] of a parsed call.
fn instantiate(entries: &[Entry], call: &Call) -> syn::Result<Outcome> {
    let name = &call.name;
    let args_given =
        call.args.len() == call.params.len() || (call.source.is_some() && call.args.is_empty());
    if call.type_args.len() != call.types.len() || !args_given {
        let list = |n: usize, what: &str| format!("{n} {what}{}", if n == 1 { "" } else { "s" });
        return Err(syn::Error::new(
            call.span,
            format!(
                "`{name}` takes {} and {}, but this call gives {} and {}: `{name}!(<{}>({}))`",
                list(call.types.len(), "type"),
                list(call.params.len(), "argument"),
                list(call.type_args.len(), "type"),
                list(call.args.len(), "argument"),
                call.types
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
                call.params
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", "),
            ),
        ));
    }

    // The subprogram's own declarations, and the outside names they and the type
    // arguments need.
    let blocks: Vec<SourceMap> = declaration_blocks(&call.body)
        .into_iter()
        .map(|b| SourceMap::new(without_visibility(b)))
        .collect();
    let mut own = Program { items: Vec::new() };
    for b in &blocks {
        let p = parray_layout::parse_program(&b.text).map_err(|e| b.error(&e))?;
        own.items.extend(p.items);
    }
    let params: Vec<String> = call.types.iter().map(ToString::to_string).collect();
    let declared: HashSet<String> = own.items.iter().map(|i| i.name().name.clone()).collect();
    let known: HashSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let mut need: Vec<Ident> = Vec::new();
    for arg in call.type_args.iter().filter(|a| !call.is_element(a)) {
        if !known.contains(arg.to_string().as_str()) && !need.contains(arg) {
            need.push(arg.clone());
        }
    }
    let mut outside: Vec<String> = Vec::new();
    for item in &own.items {
        for (used, _) in item.names_used() {
            let base = base_name(&used).to_string();
            if declared.contains(&base) || params.contains(&base) || outside.contains(&base) {
                continue;
            }
            outside.push(base.clone());
            if !known.contains(base.as_str()) {
                // Found where the call is, as the type arguments are.
                need.push(Ident::new(&base, call.type_args[0].span()));
            }
        }
    }
    if !need.is_empty() {
        return Ok(Outcome::Need(need));
    }

    // The imports: each type argument under its parameter's name, what it is built on
    // under `__X`; the outside names the declarations use, under their own.
    let args: Vec<String> = call.type_args.iter().map(ToString::to_string).collect();
    // A size given at run time keeps its name: it is bound by name (`N.bind(n)`).
    let given_at_run_time = |n: &str| {
        entries
            .iter()
            .any(|e| e.name == n && e.text.trim() == format!("const {n}"))
    };
    // A record keeps its name too: the generated Rust names its struct, the caller's.
    let is_record = |n: &str| entries.iter().any(|e| e.name == n && is_record_entry(e));
    let private = |n: &str| {
        if outside.iter().any(|o| o == n) || given_at_run_time(n) || is_record(n) {
            n.to_string()
        } else {
            format!("__{n}")
        }
    };
    let mut imports: Vec<(String, String, Ident)> = Vec::new(); // (name, text, alias of)
    let mut roots = args.clone();
    roots.extend(outside.iter().cloned());
    // A name whose declaration was not built (and reported) is not imported: the body's
    // declarations that use it are not built either, silently, and a parameter it is given
    // for is declared as not built.
    let reached = closure(entries, &roots);
    let any_not_built = reached.iter().any(|e| e.what == Carried::NotBuilt);
    for e in reached.iter().filter(|e| e.what == Carried::Declaration) {
        let text = renamed(&e.text, &private)?;
        let target = Ident::new(&e.name, call.type_args[0].span());
        imports.push((private(&e.name), text, target));
    }
    let mut params_not_built = TokenStream::new();
    // An element parameter is an alias of the element's Rust type for the body's Rust code.
    let mut element_aliases = TokenStream::new();
    for (param, e) in call.elements() {
        let rust = crate::decl::elem_tokens(e);
        element_aliases
            .extend(quote!(#[allow(dead_code, non_camel_case_types)] type #param = #rust;));
    }
    for ((param, arg), arg_ident) in params.iter().zip(&args).zip(&call.type_args) {
        if call.is_element(arg_ident) {
            continue;
        }
        let Some(e) = entries.iter().find(|e| e.name == *arg) else {
            return Err(syn::Error::new(
                arg_ident.span(),
                format!("`{arg}` is not a declared type"),
            ));
        };
        if e.what == Carried::NotBuilt {
            let param = Ident::new(param, arg_ident.span());
            let alias = quote!(#[allow(dead_code, non_camel_case_types)] type #param = #arg_ident;);
            params_not_built.extend(not_built_items(&TokenStream::new(), &param, alias));
            continue;
        }
        let text = renamed(&e.text, &|n| {
            if n == arg.as_str() {
                param.clone()
            } else {
                private(n)
            }
        })?;
        imports.push((param.clone(), text, arg_ident.clone()));
    }

    // Resolve the subprogram's declarations for these types now, to say which type and
    // which constraint when they do not fit.
    let mut program = Program { items: Vec::new() };
    for (_, text, _) in &imports {
        let p = parray_layout::parse_program(text).map_err(|e| {
            syn::Error::new(
                call.type_args[0].span(),
                format!("carried declaration: {e}"),
            )
        })?;
        program.items.extend(p.items);
    }
    let carried = program.items.len();
    // The error at the type argument an item of the subprogram's uses (the first's if none).
    let cannot_take = |program: &Program, item: &Item, why: &str| {
        let arg = call
            .types
            .iter()
            .zip(&call.type_args)
            .find(|(p, _)| uses(program, carried, item, &p.to_string()))
            .unwrap_or((&call.types[0], &call.type_args[0]));
        let described = entries
            .iter()
            .find(|en| *arg.1 == en.name)
            .map_or(String::new(), |en| {
                format!(" (`{}`)", parray_layout::as_written(&en.text))
            });
        syn::Error::new(
            arg.1.span(),
            format!(
                "`{name}` cannot take `{}`{described} as `{}`: in its declaration `{}`: {why}",
                arg.1,
                arg.0,
                item_name(item),
            ),
        )
    };
    // (Not with a name not built: the body's declarations that use it are left out.)
    for (k, item) in own.items.iter().enumerate().filter(|_| !any_not_built) {
        program.items.push(item.clone());
        // Sizes given at run time at the probe: their constraints are checked when bound.
        if let Err(e) = crate::shapes::build_at_probe(&program) {
            let mut err = cannot_take(&program, item, &e.message);
            err.combine(locate(&blocks, k).error(&e));
            return Err(err);
        }
    }
    // Each view the subprogram takes of its type parameters lines up with the caller's
    // storage (at sizes known now; a run-time size's are not).
    if !any_not_built && program.runtime_names().is_empty() {
        let module = crate::shapes::build_at_probe(&program).map_err(|e| {
            syn::Error::new(
                call.type_args[0].span(),
                format!("carried declaration: {e}"),
            )
        })?;
        let params: Vec<String> = call.types.iter().map(ToString::to_string).collect();
        for item in &own.items {
            if let Some(why) = crate::lineup::misaligned(&module, item_name(item), &params) {
                return Err(cannot_take(&program, item, &why));
            }
        }
    }

    let mut import_tokens = TokenStream::new();
    // A record is not declared again: the body's blocks ask its companion (in scope where
    // the call is, as its struct is), as the caller's did.
    for (_, text, target) in imports.iter().filter(|(n, _, _)| !is_record(n)) {
        let text: TokenStream = text.parse().map_err(|e| {
            syn::Error::new(target.span(), format!("carried declaration `{text}`: {e}"))
        })?;
        import_tokens.extend(quote!(@alias(#target) #text));
    }
    let imports = quote!(::parray::parray! { #import_tokens } #params_not_built #element_aliases);
    let bindings: Vec<&TokenStream> = call.params.iter().collect();
    if let Some(dialect) = &call.source {
        return Ok(Outcome::Done(source_of(call, dialect, &imports)?));
    }
    let values = &call.args;
    let body = in_subprog(call.body.clone(), &call.type_args[0]);
    let output = &call.output;
    // The imports live outside the body's block: items of a block are visible in all of
    // it, and `type __A = A` must not find a subprogram's own `A`.
    Ok(Outcome::Done(quote! {{
        #imports
        (|| #output {
            let (#(#bindings,)*) = (#(#values,)*);
            #body
        })()
    }}))
}

/// `body` with `@in_subprog(anchor)` before the input of each of its macros (`parray!`,
/// `detour!`, `host!`, `kernel_source!`), at any depth: their errors are resolved at the
/// call's `anchor` (`resolve::drive`).
fn in_subprog(body: TokenStream, anchor: &Ident) -> TokenStream {
    let mut out: Vec<TokenTree> = Vec::new();
    for tt in body {
        let tt = match tt {
            TokenTree::Group(g) => {
                let mut stream = in_subprog(g.stream(), anchor);
                let is_macro = matches!(out.as_slice(), [.., TokenTree::Ident(m), TokenTree::Punct(bang)]
                    if bang.as_char() == '!'
                        && ["parray", "detour", "host", "kernel_source"].iter().any(|k| m == k));
                if is_macro {
                    let word = Ident::new(crate::resolve::IN_SUBPROG, anchor.span());
                    stream = quote!(@#word(#anchor) #stream);
                }
                let mut marked = proc_macro2::Group::new(g.delimiter(), stream);
                marked.set_span(g.span());
                TokenTree::Group(marked)
            }
            tt => tt,
        };
        out.push(tt);
    }
    out.into_iter().collect()
}

/// `name!(@source <M>)`: the body's declarations, then `kernel_source!` of its detour, in
/// `dialect` (the tokens before the detour in `kernel_source!`), after `imports` (the
/// declarations of the call's types).
fn source_of(
    call: &Call,
    dialect: &TokenStream,
    imports: &TokenStream,
) -> syn::Result<TokenStream> {
    let tts: Vec<TokenTree> = call.body.clone().into_iter().collect();
    let mut blocks = TokenStream::new();
    let mut detour = None;
    for (i, tt) in tts.iter().enumerate() {
        if let (TokenTree::Ident(m), Some(TokenTree::Punct(bang)), Some(TokenTree::Group(g))) =
            (tt, tts.get(i + 1), tts.get(i + 2))
        {
            if bang.as_char() != '!' {
                continue;
            }
            if m == "parray" {
                blocks.extend(quote!(::parray::parray! #g));
            } else if m == "detour" && detour.is_none() {
                detour = Some(g.clone());
            }
        }
    }
    let name = &call.name;
    let Some(detour) = detour else {
        return Err(syn::Error::new(
            call.span,
            format!("`{name}` has no `detour!` of its own whose source could be shown"),
        ));
    };
    let detour = detour.stream();
    // The arguments only need to exist for `kernel_source!`.
    let params: Vec<&TokenStream> = call.params.iter().collect();
    let units = params.iter().map(|_| quote!(()));
    Ok(quote! {{
        #imports
        {
            #blocks
            #[allow(unused_variables)]
            let (#(#params,)*) = (#(#units,)*);
            ::parray::kernel_source!(#dialect #detour)
        }
    }})
}

/// Whether `item` (the last of `program`) uses `param`, directly or through earlier items.
fn uses(program: &Program, carried: usize, item: &Item, param: &str) -> bool {
    let mut seen: HashSet<String> = HashSet::new();
    let mut todo: Vec<String> = item
        .names_used()
        .into_iter()
        .map(|(u, _)| base_name(&u).to_string())
        .collect();
    while let Some(n) = todo.pop() {
        if n == param {
            return true;
        }
        if !seen.insert(n.clone()) {
            continue;
        }
        for it in &program.items[carried..] {
            if item_name(it) == n {
                todo.extend(
                    it.names_used()
                        .into_iter()
                        .map(|(u, _)| base_name(&u).to_string()),
                );
            }
        }
    }
    false
}

fn item_name(item: &Item) -> &str {
    &item.name().name
}

/// The block that holds the subprogram's `k`-th declaration.
fn locate(blocks: &[SourceMap], mut k: usize) -> &SourceMap {
    for b in blocks {
        let n = parray_layout::parse_program(&b.text).map_or(0, |p| p.items.len());
        if k < n {
            return b;
        }
        k -= n;
    }
    blocks.last().expect("a declaration is in some block")
}
