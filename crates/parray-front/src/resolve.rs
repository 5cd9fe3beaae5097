//! How a macro learns declarations made by other macro invocations.
//!
//! A proc macro sees only its own input, yet `$M[i][j]$` needs M's declaration. So every
//! declared name also gets a companion `macro_rules!` macro of the same name (imported with
//! the type by `use other::M;`) that hands its declaration text back to us. A macro that
//! needs names it has not seen expands to a call of the first one's companion, which calls
//! `::parray::__resume!` with the text added, and so on until all are known; then the
//! original input is processed with every declaration it needs (continuation passing).

use proc_macro2::{Ident, Literal, Span, TokenStream, TokenTree};
use quote::quote;
use syn::parse::{Parse, ParseStream};
use syn::{braced, bracketed, parenthesized, LitStr};

/// One declaration's text, as carried between macros: `(M "paged float [4][4] M")`, and
/// for a subprogram's import, the name of the type it is another name of:
/// `(T "float [#__A_1][#__A_0] T" M)`; or a function of the body language, its Rust
/// source: `(fn gelu "fn gelu(x: f32) -> f32 { ... }")`; or a declared name whose
/// declaration was not built (its error reported there): `(! K "")`.
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    pub text: String,
    pub alias: Option<String>,
    pub what: Carried,
}

/// What an [`Entry`] carries.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Carried {
    /// A declaration in the type language.
    Declaration,
    /// A `#[parray::func]` function (`text` is Rust).
    Func,
    /// A name whose declaration `parray!` could not build, and reported: a macro that
    /// uses it reports nothing more (`decl::not_built`), and `text` is empty.
    NotBuilt,
}

impl Entry {
    /// The same declaration under another name (`None` when the name is the same);
    /// `before`, the entries carried before it (the records a record's fields may be).
    fn renamed(&self, name: &str, before: &[Entry]) -> Option<Entry> {
        if name == self.name {
            return None;
        }
        if self.what != Carried::Declaration {
            // Called by the imported name; its text is the same function (or none).
            return Some(Entry {
                name: name.to_string(),
                ..self.clone()
            });
        }
        let records = crate::func::records(before);
        let program = parray_layout::parse_program_after(&self.text, &records).ok()?;
        let span = program.items.first()?.name().span;
        let mut text = self.text.clone();
        text.replace_range(span.start..span.end, name);
        Some(Entry {
            name: name.to_string(),
            text,
            alias: self.alias.clone(),
            what: Carried::Declaration,
        })
    }

    pub fn tokens(&self) -> TokenStream {
        let name = Ident::new(&self.name, proc_macro2::Span::call_site());
        let text = Literal::string(&self.text);
        let alias = self
            .alias
            .as_ref()
            .map(|a| Ident::new(a, proc_macro2::Span::call_site()));
        match self.what {
            Carried::Declaration => quote!((#name #text #alias)),
            Carried::Func => quote!((fn #name #text)),
            Carried::NotBuilt => quote!((! #name #text)),
        }
    }
}

/// Which macro the input belongs to.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Parray,
    Detour,
    Host,
    /// `kernel_source!`: a cuda detour's generated CUDA C, as a string.
    Source,
    /// A call of a `subprog!`'s macro.
    Subprog,
    /// `#[parray::func]` or `funcs!`: a function of the body language, made once the
    /// types its forms name are known.
    Func,
    /// A function's check, once the functions it calls are known.
    FuncCheck,
    /// `#[derive(parray::Record)]`, once the records its fields name are known.
    Record,
}

impl Kind {
    fn keyword(self) -> &'static str {
        match self {
            Kind::Parray => "parray",
            Kind::Detour => "detour",
            Kind::Host => "host",
            Kind::Source => "kernel_source",
            Kind::Subprog => "subprog",
            Kind::Func => "func",
            Kind::FuncCheck => "func_check",
            Kind::Record => "record",
        }
    }
}

/// What a macro needs or makes.
pub enum Outcome {
    Done(TokenStream),
    /// These names' declarations first (idents carry the user's spans).
    Need(Vec<Ident>),
}

/// A macro's input as resumed by `__resume!`: pending names, known declarations, the
/// macro kind and its original tokens.
pub struct Resumed {
    pub pending: Vec<Ident>,
    pub entries: Vec<Entry>,
    pub kind: Kind,
    pub input: TokenStream,
}

impl Parse for Resumed {
    fn parse(input: ParseStream) -> syn::Result<Self> {
        let pending_tokens;
        bracketed!(pending_tokens in input);
        let mut pending = Vec::new();
        while !pending_tokens.is_empty() {
            pending.push(pending_tokens.parse::<Ident>()?);
        }
        let entry_tokens;
        bracketed!(entry_tokens in input);
        let mut entries = Vec::new();
        let mut alias: Option<(Ident, usize)> = None;
        while !entry_tokens.is_empty() {
            let inner;
            parenthesized!(inner in entry_tokens);
            if inner.peek(syn::Token![=]) {
                inner.parse::<syn::Token![=]>()?;
                alias = Some((inner.call(syn::ext::IdentExt::parse_any)?, entries.len()));
                continue;
            }
            let what = if inner.parse::<Option<syn::Token![fn]>>()?.is_some() {
                Carried::Func
            } else if inner.parse::<Option<syn::Token![!]>>()?.is_some() {
                Carried::NotBuilt
            } else {
                Carried::Declaration
            };
            let name: Ident = inner.call(syn::ext::IdentExt::parse_any)?;
            let text: LitStr = inner.parse()?;
            let alias: Option<Ident> = inner.parse()?;
            entries.push(Entry {
                name: name.to_string(),
                text: text.value(),
                alias: alias.map(|a| a.to_string()),
                what,
            });
        }
        // The companion called under another name (`use m::A as B;`) appended its entries
        // after the marker, its own declaration last: declare it under that name too.
        if let Some((alias, at)) = alias {
            // Report a clash at the name that brought it in (it carries the user's span).
            for e in &entries[at..] {
                if let Some(o) = entries[..at]
                    .iter()
                    .find(|o| o.name == e.name && o.text != e.text)
                {
                    return Err(syn::Error::new(
                        alias.span(),
                        format!(
                            "`{alias}` brings a declaration `{}` that differs from the `{}` already in scope, `{}`: two different types named `{}` cannot meet in one macro",
                            e.text, o.name, o.text, e.name
                        ),
                    ));
                }
            }
            if let Some((own, before)) = entries.split_last().filter(|_| entries.len() > at) {
                if let Some(e) = own.renamed(&alias.to_string(), before) {
                    entries.push(e);
                }
            }
        }
        let kind: Ident = input.parse()?;
        let kind = match kind.to_string().as_str() {
            "parray" => Kind::Parray,
            "detour" => Kind::Detour,
            "host" => Kind::Host,
            "kernel_source" => Kind::Source,
            "subprog" => Kind::Subprog,
            "func" => Kind::Func,
            "func_check" => Kind::FuncCheck,
            "record" => Kind::Record,
            _ => return Err(syn::Error::new(kind.span(), "unknown parray macro kind")),
        };
        let body;
        braced!(body in input);
        let input: TokenStream = body.parse()?;
        Ok(Resumed {
            pending,
            entries,
            kind,
            input,
        })
    }
}

/// The word of `@in_subprog(A)`, which a subprogram's call writes before the input of each
/// macro of its body (`subprog`): `A` is a token of the call, at which the macro's errors
/// are resolved ([`crate::errors::anchored`]), so that each is reported once for all calls.
pub const IN_SUBPROG: &str = "in_subprog";

/// The input without its `@in_subprog(A)`, and the span of `A` if it had one.
fn in_subprog(input: &TokenStream) -> (Option<Span>, TokenStream) {
    let tts: Vec<TokenTree> = input.clone().into_iter().collect();
    match tts.as_slice() {
        [TokenTree::Punct(at), word, TokenTree::Group(anchor), rest @ ..]
            if at.as_char() == '@' && is_ident(word, IN_SUBPROG) =>
        {
            let span = anchor.stream().into_iter().next().map(|a| a.span());
            (span, rest.iter().cloned().collect())
        }
        _ => (None, input.clone()),
    }
}

/// Run `handler` on the input, or ask the companions of the names it needs.
pub fn drive(
    kind: Kind,
    entries: Vec<Entry>,
    input: TokenStream,
    handler: impl FnOnce(&[Entry], TokenStream) -> syn::Result<Outcome>,
) -> TokenStream {
    let (anchor, own) = in_subprog(&input);
    let e = match handler(&entries, own) {
        Ok(Outcome::Done(tokens)) => return tokens,
        Ok(Outcome::Need(names)) => return call_next(kind, &names, &entries, input),
        Err(e) => e,
    };
    let errors = match anchor {
        Some(a) => crate::errors::anchored(e, a),
        None => e,
    }
    .to_compile_error();
    match kind {
        Kind::Parray | Kind::Func | Kind::FuncCheck | Kind::Record => errors,
        // Detours and host blocks are expressions: keep all the errors inside one block.
        _ => quote!({ #errors }),
    }
}

/// `M! { @parray_callback [rest...] [entries...] kind { input } }`
pub fn call_next(
    kind: Kind,
    names: &[Ident],
    entries: &[Entry],
    input: TokenStream,
) -> TokenStream {
    let (first, rest) = names.split_first().expect("at least one name is needed");
    let entries = entries.iter().map(Entry::tokens);
    let kind = Ident::new(kind.keyword(), proc_macro2::Span::call_site());
    // `(= first)`: the name the companion is called by, which differs from the declared
    // name when the type was imported under another one.
    quote!(#first! { @parray_callback [#(#rest)*] [#(#entries)* (= #first)] #kind { #input } })
}

/// The companion macro of a declared name, carrying `entries` (its declaration and all it
/// depends on), and the `use` that gives it the declared name.
pub fn companion(
    vis: &TokenStream,
    name: &Ident,
    hidden: &Ident,
    entries: &[Entry],
) -> TokenStream {
    let own = entries.iter().map(Entry::tokens);
    quote! {
        #[doc(hidden)]
        // A block inside a function is fine: the companion is found through the `use` below.
        #[allow(non_local_definitions)]
        #[macro_export]
        macro_rules! #hidden {
            (@parray_callback [$($pending:tt)*] [$($payload:tt)*] $($rest:tt)*) => {
                ::parray::__resume! { [$($pending)*] [$($payload)* #(#own)*] $($rest)* }
            };
        }
        #[allow(unused_imports)]
        #vis use #hidden as #name;
    }
}

/// Merge entries by name; the same name with different texts is an error.
pub fn merge(entries: &[Entry], span: proc_macro2::Span) -> syn::Result<Vec<Entry>> {
    let mut out: Vec<Entry> = Vec::new();
    for e in entries {
        match out.iter().find(|o| o.name == e.name) {
            Some(o) if o.text == e.text => {}
            Some(o) => {
                return Err(syn::Error::new(
                    span,
                    format!(
                        "two different declarations named `{}` are in scope: `{}` and `{}`",
                        e.name, o.text, e.text
                    ),
                ))
            }
            None => out.push(e.clone()),
        }
    }
    Ok(out)
}

/// The declared name a `$...$` or `#` path refers to: the path without `_<digits>` suffixes.
pub fn base_name(path: &str) -> &str {
    parray_layout::DimPath::split(path).name
}

/// True when the token is the identifier `word`.
pub fn is_ident(tt: &TokenTree, word: &str) -> bool {
    matches!(tt, TokenTree::Ident(i) if i == word)
}

/// A name for a generated `#[macro_export]` macro, unique in the crate (which puts it at
/// the root): a hash of what it carries and of where it is made, by the invocation's
/// file, line and column and the span of `ident`.
pub fn fingerprint(payload: &[(&str, &str)], ident: &Ident) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for (name, text) in payload {
        name.hash(&mut h);
        text.hash(&mut h);
    }
    let site = proc_macro2::Span::call_site();
    let start = site.start();
    (
        site.file(),
        start.line,
        start.column,
        format!("{:?}", ident.span()),
    )
        .hash(&mut h);
    h.finish()
}
