//! `parray! { ... }`: declarations in the paper's notation become Rust items.
//!
//! Each declared type becomes a unit struct carrying its constants and its run-time value
//! (the resolved tree, through `parray::DataType::module`), plus a companion macro of the
//! same name that carries its declaration to other macros (see `resolve`).

use std::collections::HashSet;

use parray_layout::ast::{DeclKind, Item, Program};
use parray_layout::{Holders, MemKind, Module, ThreadKind, TypeClass};
use proc_macro2::{Ident, Span, TokenStream, TokenTree};
use quote::{format_ident, quote};

use crate::resolve::{base_name, companion, merge, Carried, Entry, Outcome};
use crate::text::SourceMap;

/// A block split into visibilities and type-language text.
struct Block {
    map: SourceMap,
    /// For each `pub`, the byte offset of the declaration it applies to, and its tokens.
    vis: Vec<(usize, TokenStream)>,
    /// For each `@alias(X)` (a subprogram's import, `subprog`), the byte offset of the
    /// declaration that is X's under another name: it becomes `type NAME = X`.
    aliases: Vec<(usize, TokenStream)>,
}

fn split_visibility(input: TokenStream) -> Block {
    let mut tokens = Vec::new();
    let mut vis = Vec::new();
    let mut aliases = Vec::new();
    let mut pending: Option<TokenStream> = None;
    let mut pending_alias: Option<TokenStream> = None;
    let mut iter = input.into_iter().peekable();
    while let Some(tt) = iter.next() {
        if matches!(&tt, TokenTree::Punct(p) if p.as_char() == '@')
            && matches!(iter.peek(), Some(t) if crate::resolve::is_ident(t, "alias"))
        {
            iter.next();
            if let Some(TokenTree::Group(g)) = iter.next() {
                pending_alias = Some(g.stream());
            }
            continue;
        }
        if crate::resolve::is_ident(&tt, "pub") {
            let mut v: TokenStream = tt.into();
            if let Some(TokenTree::Group(g)) = iter.peek() {
                if g.delimiter() == proc_macro2::Delimiter::Parenthesis {
                    v.extend([iter.next().expect("peeked")]);
                }
            }
            pending = Some(v);
            continue;
        }
        if let Some(v) = pending.take() {
            vis.push((tokens.len(), v));
        }
        if let Some(a) = pending_alias.take() {
            aliases.push((tokens.len(), a));
        }
        tokens.push(tt);
    }
    let map = SourceMap::new(tokens.into_iter().collect());
    let at = |i: usize| map.top_starts.get(i).copied().unwrap_or(usize::MAX);
    let vis = vis.into_iter().map(|(i, v)| (at(i), v)).collect();
    let aliases = aliases.into_iter().map(|(i, a)| (at(i), a)).collect();
    Block { map, vis, aliases }
}

/// Parse the carried declarations of other blocks into one program prefix.
pub fn entries_program(entries: &[Entry]) -> syn::Result<Program> {
    let mut items = Vec::new();
    for (e, p) in parsed_entries(entries) {
        let p = p.map_err(|err| {
            syn::Error::new(
                Span::call_site(),
                format!("carried declaration `{}`: {err}", e.name),
            )
        })?;
        items.extend(p.items);
    }
    Ok(Program { items })
}

/// Each carried declaration of `entries`, parsed after the records carried before it
/// (a record inside a record is carried before it: `record::expand`).
pub fn parsed_entries(
    entries: &[Entry],
) -> impl Iterator<Item = (&Entry, parray_layout::Result<Program>)> {
    let mut records: Vec<parray_layout::Record> = Vec::new();
    entries
        .iter()
        .filter(|e| e.what == Carried::Declaration)
        .map(move |e| {
            let p = parray_layout::parse_program_after(&e.text, &records);
            if let Ok(p) = &p {
                records.extend(p.items.iter().filter_map(|item| match item {
                    Item::Record(r) => Some(r.record),
                    _ => None,
                }));
            }
            (e, p)
        })
}

/// The text of each item of `program` within `text`.
fn item_text(item: &Item, text: &str) -> (String, String) {
    match item {
        Item::Const(c) => (
            c.name.name.clone(),
            match &c.value {
                Some(v) => format!(
                    "const {} = {}",
                    c.name.name,
                    &text[v.span.start..v.span.end]
                ),
                None => format!("const {}", c.name.name),
            },
        ),
        Item::Type(t) => (
            t.name.name.clone(),
            text[t.span.start..t.span.end].to_string(),
        ),
        Item::Record(r) => (r.name.name.clone(), r.record.declaration()),
    }
}

pub fn expand(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    // A companion carries what its block declared before it: two names of one block bring
    // the first one twice.
    let entries = &merge(entries, Span::call_site())?;
    let block = split_visibility(input);
    let program =
        parray_layout::parse_program_reporting_all(&block.map.text).map_err(|errors| {
            let mut errors = errors.iter().map(|e| block.map.error(e));
            let mut all = errors.next().expect("at least one error");
            errors.for_each(|e| all.combine(e));
            all
        })?;

    // Names used but declared neither here nor in what was carried in: ask for them.
    let known: HashSet<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    let mut declared = HashSet::new();
    let mut need: Vec<Ident> = Vec::new();
    for item in &program.items {
        for (name, at) in item.names_used() {
            let base = base_name(&name).to_string();
            if !declared.contains(&base)
                && !known.contains(base.as_str())
                && !need.iter().any(|n| *n == base)
            {
                need.push(Ident::new(&base, block.map.span_at(at)));
            }
        }
        let name = item.name();
        if let Item::Record(r) = item {
            return Err(syn::Error::new(
                block.map.span_at(r.name.span.start),
                format!(
                    "a record is declared in Rust, not in `parray!`: `#[derive(Clone, Copy, Default, parray::Record)] #[repr(C)] struct {} {{ ... }}`, then name it as an element (`dmem {} [N] P;`)",
                    r.name.name, r.name.name
                ),
            ));
        }
        if base_name(&name.name) != name.name {
            return Err(syn::Error::new(
                block.map.span_at(name.span.start),
                format!(
                    "`{}` ends in `_<digits>`, which names a sub-dimension inside `$...$`; choose another name",
                    name.name
                ),
            ));
        }
        declared.insert(name.name.clone());
    }
    if !need.is_empty() {
        return Ok(Outcome::Need(need));
    }

    // Each declaration on its own: a bad one is reported (once) and not built, and the good
    // ones stay usable; one that uses a name not built (here or carried in as such) is not
    // built either, silently (its error is that one's).
    let mut full = entries_program(entries)?;
    let carried = full.items.len();
    let mut errors = Vec::new();
    let mut failed: Vec<String> = entries
        .iter()
        .filter(|e| e.what == Carried::NotBuilt)
        .map(|e| e.name.clone())
        .collect();
    let mut not_built: Vec<&Item> = Vec::new();
    for item in &program.items {
        let mut trial = full.clone();
        trial.items.push(item.clone());
        match crate::shapes::build_at_probe(&trial) {
            Ok(_) => full.items.push(item.clone()),
            Err(e) => {
                let uses_failed = item
                    .names_used()
                    .iter()
                    .any(|(n, _)| failed.iter().any(|f| f == base_name(n)));
                if !uses_failed {
                    errors.push(block.map.error(&e));
                }
                failed.push(item.name().name.clone());
                not_built.push(item);
            }
        }
    }
    let crate::shapes::Resolved {
        module, runtime, ..
    } = crate::shapes::resolve(&full).map_err(|e| block.map.error(&e))?;
    // What each alias of this block and of the carried ones names (two names of one type
    // must not get the same `ViewOf` impl twice).
    let mut aliases: Vec<(String, String)> = entries
        .iter()
        .filter_map(|e| e.alias.clone().map(|a| (e.name.clone(), a)))
        .collect();

    let mut out = TokenStream::new();
    // What a good declaration's companion carries: no name that was not built.
    let mut payload: Vec<Entry> = entries
        .iter()
        .filter(|e| e.what != Carried::NotBuilt)
        .cloned()
        .collect();
    // Where a declaration starts, where its `pub` and `@alias` are found: a constant at
    // its `const` keyword, just before the name.
    let start_of = |item: &Item| match item {
        Item::Const(c) => block.map.text[..c.name.span.start]
            .rfind("const")
            .unwrap_or(c.name.span.start),
        Item::Type(t) => t.span.start,
        Item::Record(r) => r.name.span.start,
    };
    let vis_of = |item: &Item| {
        block
            .vis
            .iter()
            .find(|(at, _)| *at == start_of(item))
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    for item in &full.items[carried..] {
        let (name_ident, start) = (item.name(), start_of(item));
        let (name, text) = item_text(item, &block.map.text);
        let target = block
            .aliases
            .iter()
            .find(|(at, _)| *at == start)
            .map(|(_, target)| target.clone());
        let alias = target.as_ref().map(ToString::to_string);
        if let Some(a) = &alias {
            aliases.push((name.clone(), a.clone()));
        }
        payload.push(Entry {
            name,
            text,
            alias,
            what: Carried::Declaration,
        });
        let payload = merge(&payload, Span::call_site())?;
        let vis = vis_of(item);
        let ident = Ident::new(&name_ident.name, block.map.span_at(name_ident.span.start));
        let hidden = format_ident!(
            "__parray_{}_{:016x}",
            name_ident.name,
            fingerprint(&payload, &ident)
        );
        out.extend(companion(&vis, &ident, &hidden, &payload));
        // A constant given or derived at run time has no number here (`const N;` is its
        // own `RuntimeSize`, bound by name, so a carried one needs no alias).
        let runtime_const = matches!(item, Item::Const(c) if runtime.contains(&c.name.name));
        if let Some(target) = target {
            out.extend(match item {
                Item::Const(_) if runtime_const => TokenStream::new(),
                Item::Const(_) => quote!(#[allow(dead_code)] #vis const #ident: usize = #target;),
                Item::Type(_) => quote!(#[allow(dead_code)] #vis type #ident = #target;),
                Item::Record(_) => TokenStream::new(),
            });
            continue;
        }
        out.extend(match item {
            Item::Const(c) if c.value.is_none() => {
                let name = &c.name.name;
                quote!(#vis static #ident: ::parray::RuntimeSize = ::parray::RuntimeSize::new(#name);)
            }
            // A constant computed from run-time sizes: its value follows theirs, from its
            // declarations and those it uses, built when first read.
            Item::Const(_) if runtime_const => {
                let name = &name_ident.name;
                let uses = full.closure(name);
                let text: String = payload
                    .iter()
                    .filter(|e| uses.contains(&e.name))
                    .map(|e| e.text.as_str())
                    .collect::<Vec<_>>()
                    .join("\n");
                quote! {
                    #[allow(dead_code)]
                    #vis static #ident: ::parray::RuntimeSize = ::parray::RuntimeSize::derived(#name, #text, {
                        static MODULE: ::std::sync::OnceLock<&'static ::parray::layout::Module> = ::std::sync::OnceLock::new();
                        &MODULE
                    });
                }
            }
            Item::Const(c) => {
                let v = proc_macro2::Literal::u64_unsuffixed(
                    module.constant(&c.name.name).expect("declared"),
                );
                quote!(#vis const #ident: usize = #v;)
            }
            Item::Type(_) => {
                let (views, storage) =
                    view_impls(&module, &full, &name_ident.name, &ident, &aliases);
                // The declarations its module is built from: for a run-time type those it
                // uses (built when the program runs, from their sizes only); for a type of
                // numbers, all before it but the run-time ones (which it does not use).
                let is_runtime = runtime.contains(&name_ident.name);
                let uses = full.closure(&name_ident.name);
                let text: Vec<Entry> = payload
                    .iter()
                    .filter(|e| match is_runtime {
                        true => uses.contains(&e.name),
                        false => !runtime.contains(&e.name),
                    })
                    .cloned()
                    .collect();
                let mut items = type_items(
                    &module,
                    &name_ident.name,
                    (&vis, &ident),
                    &text,
                    storage.as_ref(),
                    is_runtime,
                );
                items.extend(views);
                items
            }
            // Refused above: a record comes from its derive.
            Item::Record(_) => TokenStream::new(),
        });
    }
    // The names not built are declared all the same, as placeholders: their uses compile
    // without an error of their own.
    let mut all = entries_program(entries)?;
    all.items.extend(program.items.iter().cloned());
    let runtime_names = all.runtime_names();
    // (Once a name, and not for a second declaration of a name that has one.)
    let mut declared: Vec<&str> = entries.iter().map(|e| e.name.as_str()).collect();
    declared.extend(full.items[carried..].iter().map(|i| i.name().name.as_str()));
    for item in not_built {
        let name = item.name();
        if declared.contains(&name.name.as_str()) {
            continue;
        }
        declared.push(&name.name);
        let ident = Ident::new(&name.name, block.map.span_at(name.span.start));
        let vis = vis_of(item);
        let placeholder = match item {
            // A size given or derived at run time has no Rust item.
            Item::Const(_) if runtime_names.contains(&name.name) => TokenStream::new(),
            // Any number would do; 1 divides.
            Item::Const(_) => quote!(#[allow(dead_code)] #vis const #ident: usize = 1;),
            Item::Type(t) => {
                let rank = t.dims.len().max(1);
                let elem = match t.kind {
                    DeclKind::Data { elem, .. } => elem_tokens(elem),
                    DeclKind::Thread(_) => quote!(()),
                };
                quote! {
                    #[allow(dead_code, non_camel_case_types, clippy::upper_case_acronyms)]
                    #vis type #ident = ::parray::__private::NotBuilt<#elem, #rank>;
                }
            }
            // Refused above: a record comes from its derive.
            Item::Record(_) => TokenStream::new(),
        };
        out.extend(not_built_items(&vis, &ident, placeholder));
    }
    if let Some(errors) = crate::errors::in_source_order(errors) {
        out.extend(errors.to_compile_error());
    }
    Ok(Outcome::Done(out))
}

/// The items of a name whose declaration was not built (its error reported there): a
/// companion that carries it as such, so that a macro that uses the name expands to a
/// placeholder and reports nothing more (`Carried::NotBuilt`), and `placeholder`, the Rust
/// item of that name that Rust code using it compiles against.
pub fn not_built_items(vis: &TokenStream, ident: &Ident, placeholder: TokenStream) -> TokenStream {
    let entry = Entry {
        name: ident.to_string(),
        text: String::new(),
        alias: None,
        what: Carried::NotBuilt,
    };
    let hidden = format_ident!(
        "__parray_{}_{:016x}",
        ident,
        fingerprint(std::slice::from_ref(&entry), ident)
    );
    let mut out = companion(vis, ident, &hidden, &[entry]);
    out.extend(placeholder);
    out
}

/// A name for the companion macro, unique in the crate (`#[macro_export]` puts it at the root).
fn fingerprint(payload: &[Entry], ident: &Ident) -> u64 {
    let payload: Vec<(&str, &str)> = payload.iter().map(|e| (&*e.name, &*e.text)).collect();
    crate::resolve::fingerprint(&payload, ident)
}

/// The items of the type `name`; `storage` is, for a view, a type it views that host code
/// can create (what `create` on the view points to).
/// A run-time type (`runtime`) reads its numbers from the module the runtime builds from
/// the bound sizes; `module`'s are a probe's (`shapes`).
fn type_items(
    module: &Module,
    name: &str,
    (vis, ident): (&TokenStream, &Ident),
    payload: &[Entry],
    storage: Option<&Ident>,
    runtime: bool,
) -> TokenStream {
    let def = module.type_def(name).expect("declared");
    let text: String = payload
        .iter()
        .map(|e| e.text.as_str())
        .collect::<Vec<_>>()
        .join("\n");
    let doc = format!(
        "Parray type `{}`.",
        payload.last().map_or("", |e| e.text.as_str())
    );
    let module_fn = if runtime {
        // Built when first asked for, from the text and the bound sizes (`RuntimeSize`).
        quote! {
            fn module() -> &'static ::parray::layout::Module {
                ::parray::__private::module_or_panic(Self::try_module())
            }
            fn try_module() -> ::parray::Result<&'static ::parray::layout::Module> {
                static MODULE: ::std::sync::OnceLock<&'static ::parray::layout::Module> = ::std::sync::OnceLock::new();
                ::parray::__private::runtime_module(&MODULE, #text, #name)
            }
        }
    } else {
        // The type's declarations carried as their text, parsed at the first use: as
        // Rust expressions that rebuild the resolved module they were most of a large
        // program's code (its build time), and the text resolves here already.
        if let Err(e) = Module::parse(&text) {
            return syn::Error::new(ident.span(), e.to_string()).to_compile_error();
        }
        quote! {
            fn module() -> &'static ::parray::layout::Module {
                static MODULE: ::std::sync::OnceLock<::parray::layout::Module> = ::std::sync::OnceLock::new();
                ::parray::__private::literal_module(&MODULE, #text)
            }
        }
    };
    let head = quote! {
        #[doc = #doc]
        // The paper's names are capitals (`MY_TA`), wherever the block is written.
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        #vis struct #ident;
    };
    match &def.class {
        TypeClass::Data { mem, elem, soa } => {
            let elem_ty: TokenStream = elem_tokens(*elem);
            let mem_tokens = match mem {
                Some(m) => {
                    let m = mem_ident(*m);
                    quote!(::core::option::Option::Some(::parray::MemKind::#m))
                }
                None => quote!(::core::option::Option::None),
            };
            let create = create_fns(vis, ident, *mem, storage);
            // Over mpi ranks (a fragment, over a block's threads, is only in bodies).
            let distributed = def
                .distribution
                .as_ref()
                .is_some_and(|d| d.holders == Holders::Ranks);
            if runtime && def.distribution.is_some() {
                return syn::Error::new(ident.span(), format!("`{name}` has sizes given at run time; a distributed type's sizes are numbers for now")).to_compile_error();
            }
            let numbers = match runtime {
                false => offset_fns(module, name, def.root),
                true => runtime_offset_fns(module, name, def.root),
            };
            quote! {
                #head
                impl ::parray::DataType for #ident {
                    type Elem = #elem_ty;
                    const NAME: &'static str = #name;
                    const MEM: ::core::option::Option<::parray::MemKind> = #mem_tokens;
                    const SOA: bool = #soa;
                    const DISTRIBUTED: bool = #distributed;
                    #numbers
                    #module_fn
                }
                #create
            }
        }
        TypeClass::Thread(ThreadKind::Pthd | ThreadKind::Mpi) if runtime => syn::Error::new(
            ident.span(),
            format!("`{name}` has a size given at run time; a pthd or mpi array's threads are a number for now (a cuda array's grid may be sized at run time)"),
        )
        .to_compile_error(),
        TypeClass::Thread(kind) => {
            let kind = match kind {
                ThreadKind::Pthd => quote!(Pthd),
                ThreadKind::Mpi => quote!(Mpi),
                ThreadKind::Cuda(_) => quote!(Cuda),
            };
            quote! {
                #head
                impl ::parray::ThreadArray for #ident {
                    const NAME: &'static str = #name;
                    const KIND: ::parray::ThreadArrayKind = ::parray::ThreadArrayKind::#kind;
                    #module_fn
                }
                // As on a view (`create_fns`): never callable, so that a call says what
                // a thread array is for.
                impl #ident {
                    #[doc(hidden)]
                    #[allow(private_bounds)]
                    #vis fn create() -> ::parray::Result<()>
                    where
                        for<'a> #ident: ::parray::__private::IsThreadArray,
                    {
                        ::core::result::Result::Ok(())
                    }
                }
            }
        }
    }
}

/// `create()` and `create_on(device)`: `#create` for a type that host code can create
/// (paged, pinned, dmem). Views and smem/rmem types get the same functions under a bound
/// that no type meets, whose message (`#[diagnostic::on_unimplemented]`) is the error at
/// the user's call: what the type is and what to create instead. The bound is written
/// `for<'a>` so that it is checked at each call, not at the definition (where a bound on
/// no type parameter that does not hold is an error, even uncalled).
fn create_fns(
    vis: &TokenStream,
    ident: &Ident,
    mem: Option<MemKind>,
    storage: Option<&Ident>,
) -> TokenStream {
    let refused = match (mem, storage) {
        (Some(MemKind::Paged | MemKind::Pinned | MemKind::Dmem | MemKind::Cmem), _) => None,
        (Some(MemKind::Smem | MemKind::Rmem), _) => {
            Some(quote!(::parray::__private::OnlyInCudaBodies))
        }
        (None, Some(s)) => Some(quote!(::parray::__private::IsViewOf<#s>)),
        (None, None) => Some(quote!(::parray::__private::IsView)),
    };
    let (attrs, bound) = match refused {
        None => (
            [
                quote!(#[doc = " `#create`: storage for one value of this type (its extent), freed on drop."]),
                quote!(#[doc = " `#create` on `device` (dmem goes there)."]),
            ],
            None,
        ),
        Some(never) => (
            [
                quote!(#[doc(hidden)] #[allow(private_bounds)]),
                quote!(#[doc(hidden)] #[allow(private_bounds)]),
            ],
            Some(quote!(where for<'a> #ident: #never)),
        ),
    };
    let [create_attr, create_on_attr] = attrs;
    quote! {
        impl #ident {
            #create_attr
            #vis fn create() -> ::parray::Result<::parray::Array<#ident>> #bound {
                ::parray::Array::new()
            }

            #create_on_attr
            #vis fn create_on(device: &::parray::Device) -> ::parray::Result<::parray::Array<#ident>> #bound {
                ::parray::Array::new_on(device)
            }
        }
    }
}

/// The offset function of a type, for `DataType`: `M::offset_of(&[i, j])` (the offset
/// compiler's simplified expression, as `$M[i][j]$` gives it; `M::offset([i, j])` is it),
/// each index checked against its dimension in every build.
fn offset_fns(module: &Module, name: &str, root: parray_layout::NodeId) -> TokenStream {
    let kids = &module.node(root).children;
    let sizes: Vec<u64> = if kids.is_empty() {
        vec![module.size(root)]
    } else {
        kids.iter().map(|c| module.size(*c)).collect()
    };
    let rank = sizes.len();
    let names: Vec<String> = (0..rank).map(|d| format!("i{d}")).collect();
    let vars: Vec<&str> = names.iter().map(String::as_str).collect();
    let idents: Vec<Ident> = names.iter().map(|n| format_ident!("{n}")).collect();
    let checks = idents.iter().zip(&sizes).enumerate().map(|(d, (i, size))| {
        let size = *size as usize;
        quote! {
            if #i >= #size {
                ::parray::__private::index_out_of_range(#name, #d, #i, #size)
            }
        }
    });
    let value = match parray_layout::index_function(module, name, &vars) {
        Ok(off) => parray_compiler::back::rust::offsets::to_tokens(&off, &|v| {
            let id = format_ident!("{}", off.vars.name(v));
            quote!(#id)
        }),
        // Past the offset compiler's limits (`$...$` forms on it fail to compile too).
        Err(_) => quote!(::parray::__private::offset_too_complex(#name)),
    };
    let dims = sizes.iter().map(|s| *s as usize);
    let (size, extent) = (module.size(root) as usize, module.extent(root) as usize);
    quote! {
        const RANK: usize = #rank;
        const FIXED_SIZE: ::core::option::Option<usize> = ::core::option::Option::Some(#size);

        #[inline]
        fn size() -> usize {
            #size
        }

        #[inline]
        fn extent() -> usize {
            #extent
        }

        #[inline]
        fn dims() -> &'static [usize] {
            &[#(#dims),*]
        }

        #[inline]
        #[track_caller]
        #[allow(unused_variables)]
        fn offset_of(index: &[usize]) -> usize {
            let [#(#idents),*] = match <[usize; #rank]>::try_from(index) {
                ::core::result::Result::Ok(index) => index,
                ::core::result::Result::Err(_) => {
                    ::parray::__private::wrong_rank(#name, #rank, index.len())
                }
            };
            #(#checks)*
            #value
        }

        type Offsets = ::parray::__private::FixedOffsets<Self>;

        #[inline(always)]
        fn offsets() -> Self::Offsets {
            ::parray::__private::FixedOffsets::new()
        }
    }
}

/// [`offset_fns`] of a run-time type: its numbers read from its module, built from the bound
/// sizes when first asked for; offsets by the evaluator of the offset compiler's form
/// (`parray::__private::BoundOffsets`), each index checked.
fn runtime_offset_fns(module: &Module, name: &str, root: parray_layout::NodeId) -> TokenStream {
    let kids = &module.node(root).children;
    let rank = kids.len().max(1);
    quote! {
        const RANK: usize = #rank;
        const FIXED_SIZE: ::core::option::Option<usize> = ::core::option::Option::None;

        fn size() -> usize {
            Self::module().size(Self::dim().node) as usize
        }

        fn extent() -> usize {
            Self::module().extent(Self::dim().node) as usize
        }

        fn dims() -> &'static [usize] {
            static DIMS: ::std::sync::OnceLock<::std::vec::Vec<usize>> = ::std::sync::OnceLock::new();
            DIMS.get_or_init(|| ::parray::__private::runtime_dims(Self::module(), #name))
        }

        #[track_caller]
        fn offset_of(index: &[usize]) -> usize {
            ::parray::Offsets::offset_of(Self::offsets(), index)
        }

        type Offsets = ::parray::__private::BoundOffsets<#rank>;

        #[track_caller]
        fn offsets() -> Self::Offsets {
            static OFFSETS: ::std::sync::OnceLock<::parray::__private::BoundOffsets<#rank>> = ::std::sync::OnceLock::new();
            *OFFSETS.get_or_init(|| {
                ::parray::__private::BoundOffsets::new(Self::module(), #name, Self::dims())
            })
        }
    }
}

/// For each type `S` whose dimensions `V` refers to (directly or through other types), the
/// views that fit (every type views itself by a blanket impl): `V` views `S` (and `S` views `V`: a
/// storage type declared on a layout's dimensions is indexed by that layout) where the
/// elements are the same, the memory kinds agree (or the view has none) and the view's
/// extent (a covering type's, the data's: 2.4) fits in the storage's. Also the first of those types that `name` views and that
/// host code can create (paged, pinned, dmem), if any.
fn view_impls(
    module: &Module,
    program: &Program,
    name: &str,
    ident: &Ident,
    aliases: &[(String, String)],
) -> (TokenStream, Option<Ident>) {
    // A type whose pieces cover data past its end reaches as far as the data does.
    let data = |n: &str| match module.type_def(n) {
        Some(d) => match d.class {
            // Two types of their own memory kinds keep their records alike (a view has none).
            TypeClass::Data { mem, elem, soa } => {
                let extent = module.extent(d.root);
                let mem = mem.map(|m| (m, soa));
                Some((mem, elem, d.covers.map_or(extent, |c| c.min(extent))))
            }
            _ => None,
        },
        None => None,
    };
    let Some((mem, elem, extent)) = data(name) else {
        return (TokenStream::new(), None);
    };
    // The declared names an item uses (constants too: they are not data types below).
    let refs = |n: &str| -> Vec<String> {
        program
            .items
            .iter()
            .filter(|item| matches!(item, Item::Type(t) if t.name.name == n))
            .flat_map(Item::names_used)
            .map(|(name, _)| base_name(&name).to_string())
            .collect()
    };
    let mut seen = vec![name.to_string()];
    let mut todo = refs(name);
    while let Some(n) = todo.pop() {
        if !seen.contains(&n) {
            todo.extend(refs(&n));
            seen.push(n);
        }
    }
    let fits = |view: (Option<(MemKind, bool)>, u64), storage: (Option<(MemKind, bool)>, u64)| {
        (view.0.is_none() || view.0 == storage.0) && view.1 <= storage.1
    };
    let mut out = TokenStream::new();
    // The Rust type each name is: an alias (a subprogram's import) is its target's.
    let rust_type = |n: &str| {
        aliases
            .iter()
            .find(|(a, _)| a == n)
            .map_or(n.to_string(), |(_, t)| t.clone())
    };
    let mut done: Vec<String> = vec![rust_type(name)];
    let mut storage = None;
    for s in &seen[1..] {
        let Some((smem, selem, sextent)) = data(s) else {
            continue;
        };
        if done.contains(&rust_type(s)) {
            continue;
        }
        done.push(rust_type(s));
        if selem != elem {
            continue;
        }
        let s = Ident::new(s, ident.span());
        if fits((mem, extent), (smem, sextent)) {
            out.extend(quote!(impl ::parray::ViewOf<#s> for #ident {}));
            if storage.is_none()
                && matches!(
                    smem,
                    Some((
                        MemKind::Paged | MemKind::Pinned | MemKind::Dmem | MemKind::Cmem,
                        _
                    ))
                )
            {
                storage = Some(s.clone());
            }
        }
        if fits((smem, sextent), (mem, extent)) {
            out.extend(quote!(impl ::parray::ViewOf<#ident> for #s {}));
        }
    }
    (out, storage)
}

fn mem_ident(m: MemKind) -> Ident {
    Ident::new(
        match m {
            MemKind::Paged => "Paged",
            MemKind::Pinned => "Pinned",
            MemKind::Dmem => "Dmem",
            MemKind::Cmem => "Cmem",
            MemKind::Smem => "Smem",
            MemKind::Rmem => "Rmem",
        },
        Span::call_site(),
    )
}

/// The Rust type of an element, as a path the user's crate can name.
pub fn elem_tokens(e: parray_layout::ElemType) -> TokenStream {
    parray_compiler::back::rust::elem_tokens(e, parray_compiler::back::rust::Mode::Pthd)
}
