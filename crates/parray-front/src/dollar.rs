//! The paper's `$...$` forms inside macro bodies.
//!
//! Before syn sees a body, every `$ ... $` becomes a placeholder macro call
//! `__parray_dollar!( ... )` (nested forms first) and every `#sync`/`#sync_1` a call of
//! `__parray_sync!`, so that the body parses as Rust. The placeholders are then compiled
//! by parray-layout into the simplified expressions: offsets, sizes, `cnt`, thread indices.

use parray_compiler::ir::{Expr, ExprKind, FormSizes, Indexed, Poly, RuntimeIndex};
use parray_layout::ast::{Ident as CoreIdent, Index, IndexExpr, IndexValue};
use parray_layout::expr::Vars;
use parray_layout::path::child_name;
use parray_layout::symbolic::Sizes;
use parray_layout::{compile_with, indexed_dimensions, DimPath, Module, NodeId};
use proc_macro2::{Delimiter, Group, Ident, Punct, Spacing, Span, TokenStream, TokenTree};
use quote::quote;

pub const DOLLAR: &str = "__parray_dollar";
pub const SYNC: &str = "__parray_sync";
pub const COPY: &str = "__parray_copy";
pub const MMA: &str = "__parray_mma";
pub const WAIT: &str = "__parray_wait";
pub const MBARRIER: &str = "__parray_mbarrier";
pub const SETMAXNREG: &str = "__parray_setmaxnreg";

/// `#copy S(a) to D(b)` as written, in a body or in host code: the two types and the two
/// places (pointers in a body, arrays in host code), and its guard, parsed in one place.
pub struct CopyForm {
    /// `#copy async ...` (SPEC 3.9, "Asynchronous copies"): the `async` token.
    pub asynchronous: Option<Ident>,
    pub src_ty: Ident,
    pub src: TokenStream,
    pub dst_ty: Ident,
    pub dst: TokenStream,
    pub guard: Option<CopyGuardForm>,
    /// `on B(b)` after `#copy async S(p) to D(q)`: a TMA copy completing on the mbarrier
    /// `b` of type `B` (SPEC 3.9, "TMA copies").
    pub on: Option<(Ident, TokenStream)>,
}

/// `if |i, j| PRED else FILL` after a `#copy`: the names the closure binds, its
/// condition, and the fill (if any).
pub struct CopyGuardForm {
    pub span: Span,
    pub names: Vec<Ident>,
    pub pred: syn::Expr,
    pub fill: Option<syn::Expr>,
}

impl syn::parse::Parse for CopyGuardForm {
    fn parse(input: syn::parse::ParseStream) -> syn::Result<Self> {
        let span = input.parse::<syn::Token![if]>()?.span;
        let closure: syn::ExprClosure = input.parse().map_err(|e| {
            syn::Error::new(
                e.span(),
                "expected `if |i, j| CONDITION` (the digits of element k over the source's dimensions, or `|k|`), then `else FILL` or nothing",
            )
        })?;
        let mut names = Vec::new();
        for p in &closure.inputs {
            match p {
                syn::Pat::Ident(p) if p.by_ref.is_none() && p.mutability.is_none() => {
                    names.push(p.ident.clone())
                }
                other => {
                    return Err(syn::Error::new_spanned(
                        other,
                        "a guard's closure binds plain names: `|i, j|`",
                    ))
                }
            }
        }
        if names.is_empty() {
            return Err(syn::Error::new_spanned(
                closure.or1_token,
                "a guard's closure names element k (`|k|`) or its digits over the source's dimensions (`|i, j|`)",
            ));
        }
        let fill = match input.parse::<Option<syn::Token![else]>>()? {
            Some(_) => Some(input.parse()?),
            None => None,
        };
        Ok(CopyGuardForm {
            span,
            names,
            pred: *closure.body,
            fill,
        })
    }
}

impl CopyForm {
    /// The parts of `#copy`'s placeholder `mac`; an error at it when they are not there.
    pub fn parse(mac: &syn::Macro) -> syn::Result<CopyForm> {
        use proc_macro2::TokenTree as T;
        let mut tts: Vec<T> = mac.tokens.clone().into_iter().collect();
        let asynchronous = match tts.first() {
            Some(T::Ident(a)) if a == "async" => Some(a.clone()),
            _ => None,
        };
        if asynchronous.is_some() {
            tts.remove(0);
        }
        let (copy, mut guard) = tts.split_at(tts.len().min(5));
        let mut on = None;
        if let [T::Ident(word), rest @ ..] = guard {
            if word == "on" {
                match rest {
                    [T::Ident(b), T::Group(g), rest @ ..]
                        if g.delimiter() == Delimiter::Parenthesis =>
                    {
                        on = Some((b.clone(), g.stream()));
                        guard = rest;
                    }
                    _ => {
                        return Err(syn::Error::new(
                            word.span(),
                            "expected `on B(b)` after `#copy async S(p) to D(q)`: the mbarrier `b`, of a shared array of `mbarrier`s of type B, that the TMA copy completes on",
                        ))
                    }
                }
                if asynchronous.is_none() {
                    return Err(syn::Error::new(
                        word.span(),
                        "a copy `on` an mbarrier is a TMA copy, which completes later: write `#copy async S(p) to D(q) on B(b);`",
                    ));
                }
                if let Some(t) = guard.first() {
                    return Err(syn::Error::new(
                        t.span(),
                        "a TMA copy moves its whole box (no guard): TMA fills what lies past the tensor's extent with zeros",
                    ));
                }
            }
        }
        match copy {
            [T::Ident(s), T::Group(p), T::Ident(to), T::Ident(d), T::Group(q)]
                if to == "to"
                    && p.delimiter() == Delimiter::Parenthesis
                    && q.delimiter() == Delimiter::Parenthesis =>
            {
                let guard = match guard {
                    [] => None,
                    _ => Some(syn::parse2(guard.iter().cloned().collect())?),
                };
                Ok(CopyForm {
                    asynchronous,
                    src_ty: s.clone(),
                    src: p.stream(),
                    dst_ty: d.clone(),
                    dst: q.stream(),
                    guard,
                    on,
                })
            }
            _ => Err(syn::Error::new(
                syn::spanned::Spanned::span(mac),
                "expected `#copy S(a) to D(b);` (or `#copy S(a) to D(b) if |i, j| CONDITION else FILL;`, or `#copy async ...` in a cuda body): element k of `a`, an array or pointer of type S, goes to element k of `b` (of type D)",
            )),
        }
    }
}

/// Replace `$...$` and `#sync...` by placeholder macro calls, recursively.
pub fn preprocess(tokens: TokenStream) -> syn::Result<TokenStream> {
    let mut out = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    while let Some(tt) = iter.next() {
        match tt {
            TokenTree::Punct(p) if p.as_char() == '$' => {
                let mut inner = Vec::new();
                loop {
                    match iter.next() {
                        Some(TokenTree::Punct(q)) if q.as_char() == '$' => break,
                        Some(t) => inner.push(t),
                        None => {
                            return Err(syn::Error::new(
                                p.span(),
                                "this `$` is never closed: write `$...$`",
                            ))
                        }
                    }
                }
                if inner.is_empty() {
                    return Err(syn::Error::new(p.span(), "empty `$$`"));
                }
                let inner = preprocess(inner.into_iter().collect())?;
                out.extend(placeholder(DOLLAR, p.span(), inner));
            }
            // `#copy S(p) to D(q);`, `#mma D(d) += A(a) * B(b);`, `#wait N;`, `#mbarrier
            // ...;` and `#setmaxnreg ...;`: the tokens
            // up to the `;`, as one placeholder call.
            TokenTree::Punct(p)
                if p.as_char() == '#'
                    && matches!(iter.peek(), Some(TokenTree::Ident(i)) if i == "copy" || i == "mma" || i == "wait" || i == "mbarrier" || i == "setmaxnreg") =>
            {
                let name = match iter.next() {
                    Some(TokenTree::Ident(i)) if i == "mma" => MMA,
                    Some(TokenTree::Ident(i)) if i == "wait" => WAIT,
                    Some(TokenTree::Ident(i)) if i == "mbarrier" => MBARRIER,
                    Some(TokenTree::Ident(i)) if i == "setmaxnreg" => SETMAXNREG,
                    _ => COPY,
                };
                let mut inner = Vec::new();
                while let Some(t) =
                    iter.next_if(|t| !matches!(t, TokenTree::Punct(s) if s.as_char() == ';'))
                {
                    inner.push(t);
                }
                let inner = preprocess(inner.into_iter().collect())?;
                out.extend(placeholder(name, p.span(), inner));
            }
            TokenTree::Punct(p) if p.as_char() == '#' => match iter.peek() {
                Some(TokenTree::Ident(i)) if i.to_string().starts_with("sync") => {
                    let i = i.clone();
                    iter.next();
                    let mut call = placeholder(SYNC, p.span(), quote!(#i));
                    call.push(TokenTree::Punct(Punct::new(';', Spacing::Alone)));
                    // `#sync;` keeps working with its own semicolon.
                    if matches!(iter.peek(), Some(TokenTree::Punct(s)) if s.as_char() == ';') {
                        call.pop();
                    }
                    out.extend(call);
                }
                _ => out.push(TokenTree::Punct(p)),
            },
            TokenTree::Group(g) => {
                let mut ng = Group::new(g.delimiter(), preprocess(g.stream())?);
                ng.set_span(g.span());
                out.push(TokenTree::Group(ng));
            }
            other => out.push(other),
        }
    }
    Ok(out.into_iter().collect())
}

fn placeholder(name: &str, span: Span, inner: TokenStream) -> Vec<TokenTree> {
    let mut g = Group::new(Delimiter::Parenthesis, inner);
    g.set_span(span);
    let mut bang = Punct::new('!', Spacing::Alone);
    bang.set_span(span);
    vec![
        TokenTree::Ident(Ident::new(name, span)),
        TokenTree::Punct(bang),
        TokenTree::Group(g),
    ]
}

/// Which thread array the code runs on, for `$tid...$`.
pub struct Threads<'m> {
    pub name: String,
    pub root: NodeId,
    pub module: &'m Module,
}

/// Everything needed to compile `$...$` forms, and what they used.
pub struct Forms<'m> {
    pub module: &'m Module,
    pub threads: Option<Threads<'m>>,
    /// Thread-index paths used (`""` for `tid`, `"0_1"` for `tid_0_1`), in first-use order.
    pub tids_used: Vec<String>,
    /// The type parameters the code is generic over (`detour!(<T> ...)`), and the run-time
    /// types its forms name (compiled as they are for a type parameter).
    pub generics: Vec<TypeParam>,
    /// The names whose sizes are given at run time (`shapes`): their numbers in `module`
    /// are a probe's, never to be used.
    pub runtime: Vec<String>,
    /// Types of literal sizes a `#copy` with a run-time type names: given to the kernel's
    /// specialisation with the run-time ones (their forms elsewhere stay compiled here).
    pub literal: Vec<Ident>,
    /// What holds of `module`'s sizes at every binding of its run-time sizes (empty where
    /// the code is compiled for no proofs of a body).
    pub sizes: Sizes,
    /// Where the code names the run-time types its forms name, if not at the forms: in a
    /// function a cuda body calls, the call (its tokens come through its companion, and
    /// the body names the types where it is, so they must be in scope there).
    pub named_at: Option<Span>,
    fresh: usize,
}

/// A type parameter of generic code, and what its forms ask of the type it will be (checked
/// when the code is instantiated).
pub struct TypeParam {
    pub name: Ident,
    /// Indices its `$T[...]$` forms give (`None`: no such form).
    pub indices: Option<usize>,
    /// Top-level dimensions its `$dim(T_k)$` forms reach (largest `k` plus one).
    pub dims: usize,
    /// A declared type with sizes given at run time, not a parameter.
    pub runtime: bool,
}

impl TypeParam {
    pub fn new(name: Ident) -> Self {
        TypeParam {
            name,
            indices: None,
            dims: 0,
            runtime: false,
        }
    }

    /// Why its forms are restricted, for a message: `` `T` is a type parameter ``.
    pub fn what(&self) -> String {
        match self.runtime {
            false => format!("`{}` is a type parameter", self.name),
            true => format!("`{}` has sizes given at run time", self.name),
        }
    }
}

/// One parsed index component of a `$...$` offset, with the span of its brackets.
enum IndexTok {
    Nested(Vec<IndexTok>, Span),
    Expr(TokenStream, Span),
}

impl<'m> Forms<'m> {
    pub fn new(module: &'m Module, threads: Option<Threads<'m>>) -> Self {
        Forms {
            module,
            threads,
            tids_used: Vec::new(),
            generics: Vec::new(),
            runtime: Vec::new(),
            literal: Vec::new(),
            sizes: Sizes::default(),
            named_at: None,
            fresh: 0,
        }
    }

    /// Whether `name` is a declared type, not a type parameter standing for another.
    fn declared(&self, name: &str) -> bool {
        self.generic(name).is_none_or(|g| self.generics[g].runtime)
    }

    /// The size of the dimension `path` of the declared type `ty` at every binding of the
    /// run-time sizes, where it is known.
    pub fn dim_size(&self, ty: &str, path: &[usize]) -> Option<Poly> {
        let dim = path.iter().fold(ty.to_string(), |d, &k| child_name(&d, k));
        let node = self.module.lookup(&dim).ok()?.node;
        self.declared(ty).then(|| self.sizes.size(node).cloned())?
    }

    /// What holds of the form `ie` of the declared type `ty`, its variables `vars` in the
    /// order of its arguments, at every binding of the run-time sizes, where it is known.
    pub fn form_sizes(&self, ty: &str, ie: &IndexExpr, vars: &[String]) -> Option<Box<FormSizes>> {
        let extent = self.sizes.extent(ty).filter(|_| self.declared(ty))?.clone();
        let indexed = indexed_dimensions(self.module, ie).ok()?;
        let dims = vars
            .iter()
            .map(|v| {
                let of_v = indexed.iter().filter(|(name, _)| name == v);
                of_v.map(|(_, d)| self.sizes.size(*d).cloned()).collect()
            })
            .collect::<Option<Vec<Vec<Poly>>>>()?;
        Some(Box::new(FormSizes { dims, extent }))
    }

    /// The type parameter `name`, if the code is generic over it.
    fn generic(&self, name: &str) -> Option<usize> {
        self.generics.iter().position(|g| g.name == name)
    }

    /// `name`, a type of literal sizes, given to the kernel's specialisation as it is.
    pub fn bind_literal(&mut self, name: &str, span: Span) {
        if !self.literal.iter().any(|l| l == name) {
            self.literal.push(Ident::new(name, span));
        }
    }

    /// `name`, a run-time type, taken as a type parameter bound to itself from its first
    /// form on (its forms are computed when the program runs, `shapes`).
    pub fn take_runtime(&mut self, name: &str, span: Span) {
        if self.runtime.iter().any(|r| r == name) && self.generic(name).is_none() {
            let mut param = TypeParam::new(Ident::new(name, self.named_at.unwrap_or(span)));
            param.runtime = true;
            self.generics.push(param);
        }
    }

    /// Whether `name` names a run-time size or type, whose numbers here are a probe's.
    pub fn is_runtime(&self, name: &str) -> bool {
        self.runtime
            .iter()
            .any(|r| r == crate::resolve::base_name(name))
    }

    /// `$size(T)$`, `$dim(T_k)$` or `$dim_k(T)$` of a type parameter.
    fn generic_size(
        &mut self,
        query: &Query,
        word: &str,
        arg: &str,
        span: Span,
    ) -> syn::Result<Form> {
        let path = DimPath::split(arg);
        let ty = path.name.to_string();
        let dims: Vec<usize> = path
            .children
            .into_iter()
            .chain(DimPath::split(word).children)
            .collect();
        let g = self.generic(&ty).expect("a type parameter");
        match (query, dims.as_slice()) {
            // Any dimension of a declared type, checked to exist here at the probe.
            (Query::Size, _) if self.generics[g].runtime => {
                let dim = dims
                    .iter()
                    .fold(ty.clone(), |path, &k| child_name(&path, k));
                self.lookup(&dim, span)?;
                let size = self.dim_size(&ty, &dims);
                Ok(Form::GenericSize {
                    ty,
                    path: dims,
                    size,
                })
            }
            (Query::Size, []) => Ok(Form::GenericSize {
                ty,
                path: dims,
                size: None,
            }),
            (Query::Size, [k]) => {
                self.generics[g].dims = self.generics[g].dims.max(k + 1);
                Ok(Form::GenericSize {
                    ty,
                    path: dims,
                    size: None,
                })
            }
            (Query::Cnt, _) if self.generics[g].runtime => Err(syn::Error::new(
                span,
                format!("{}: `$cnt({ty})$` (whether it is contiguous) is not implemented yet for run-time types", self.generics[g].what()),
            )),
            _ => Err(syn::Error::new(
                span,
                format!("{}: only `$size({ty})$` and the sizes of its top-level dimensions (`$dim({ty}_0)$`) are known before it is instantiated", self.generics[g].what()),
            )),
        }
    }

    /// `$T[i][j]$` of a type parameter: one flat index per top-level dimension.
    fn generic_offset(&mut self, head: &Ident, rest: &[TokenTree]) -> syn::Result<Form> {
        let mut indices = Vec::new();
        for tt in rest {
            let index = match tt {
                TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket => parse_index(g)?,
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "expected `[index]` after the type name",
                    ))
                }
            };
            match index {
                IndexTok::Expr(tokens, _) => indices.push(syn::parse2::<syn::Expr>(tokens)?),
                IndexTok::Nested(_, at) => {
                    let g =
                        &self.generics[self.generic(&head.to_string()).expect("a type parameter")];
                    return Err(syn::Error::new(
                        at,
                        format!("{}: index each of its top-level dimensions once (`${head}[i][j]$`); nested indices need its declaration, known only when it is instantiated", g.what()),
                    ));
                }
            }
        }
        let k = self.generic(&head.to_string()).expect("a type parameter");
        match self.generics[k].indices {
            None => self.generics[k].indices = Some(indices.len()),
            Some(rank) if rank != indices.len() => {
                return Err(syn::Error::new(
                    head.span(),
                    format!("`{head}` is indexed with {} indices here and {rank} elsewhere; a type has one number of top-level dimensions", indices.len()),
                ))
            }
            Some(_) => {}
        }
        Ok(Form::GenericOffset {
            ty: head.clone(),
            indices,
        })
    }

    /// Parse and compile the inside of one `$...$`.
    pub fn form(&mut self, tokens: TokenStream, span: Span) -> syn::Result<Form> {
        let tts: Vec<TokenTree> = tokens.into_iter().collect();
        let Some(TokenTree::Ident(head)) = tts.first() else {
            return Err(syn::Error::new(span, "expected a `$...$` form: `$T[i]...$`, `$dim(T)$`, `$size(T)$`, `$cnt(T)$` or `$tid...$`"));
        };
        let word = head.to_string();
        if let Some(path) = tid_path(&word) {
            if tts.len() != 1 {
                return Err(syn::Error::new(
                    tts[1].span(),
                    "unexpected tokens after a thread index",
                ));
            }
            self.use_tid(&path, head.span())?;
            return Ok(Form::Tid(path));
        }
        if let Some(query) = query_kind(&word) {
            let (arg, arg_span) = match tts.get(1) {
                Some(TokenTree::Group(g))
                    if g.delimiter() == Delimiter::Parenthesis && tts.len() == 2 =>
                {
                    (g.stream().to_string().replace(' ', ""), g.span())
                }
                _ => {
                    return Err(syn::Error::new(
                        head.span(),
                        format!("expected `{word}(TYPE)`"),
                    ))
                }
            };
            self.take_runtime(DimPath::split(&arg).name, arg_span);
            if self.generic(DimPath::split(&arg).name).is_some() {
                return self.generic_size(&query, &word, &arg, arg_span);
            }
            let dim = DimPath::split(&word)
                .children
                .into_iter()
                .fold(arg, |path, k| child_name(&path, k));
            let dim = self.lookup(&dim, arg_span)?;
            return Ok(match query {
                Query::Size => Form::Size(self.module.size(dim)),
                Query::Cnt => Form::Cnt(
                    self.module
                        .is_contiguous(dim)
                        .map_err(|e| syn::Error::new(arg_span, e.message))?,
                ),
            });
        }
        let base = DimPath::split(&word).name.to_string();
        self.take_runtime(&base, head.span());
        match self.generic(&base).map(|g| self.generics[g].runtime) {
            // A run-time type: compiled here at the probe (its errors are compile errors),
            // carried as the offset compiler's text to the bound sizes.
            Some(true) => {
                let (ie, off, atoms) = self.offset_parts(head, &tts[1..], span)?;
                let vars: Vec<String> = off.vars.names().map(str::to_string).collect();
                let sizes = self.form_sizes(&base, &ie, &vars);
                Ok(Form::RuntimeOffset {
                    ty: base,
                    index: RuntimeIndex {
                        text: ie.to_string(),
                        vars,
                    },
                    atoms,
                    sizes,
                })
            }
            Some(false) => self.generic_offset(head, &tts[1..]),
            None => self.offset(head, &tts[1..], span),
        }
    }

    pub fn use_tid(&mut self, path: &str, span: Span) -> syn::Result<NodeId> {
        let node = self.tid_node(path, span)?;
        if !self.tids_used.iter().any(|p| p == path) {
            self.tids_used.push(path.to_string());
        }
        Ok(node)
    }

    fn lookup(&self, name: &str, span: Span) -> syn::Result<NodeId> {
        let id = CoreIdent {
            name: name.to_string(),
            span: parray_layout::TextSpan::default(),
        };
        self.module
            .resolve(&id)
            .map(|d| d.node)
            .map_err(|e| syn::Error::new(span, e.message))
    }

    pub fn tid_node(&self, path: &str, span: Span) -> syn::Result<NodeId> {
        let Some(t) = &self.threads else {
            return Err(syn::Error::new(
                span,
                "`$tid...$` is only meaningful inside a detour, where a thread array runs the code (a function of the body language takes it as a parameter: pass `$tid$` from the body)",
            ));
        };
        let name = if path.is_empty() {
            t.name.clone()
        } else {
            format!("{}_{path}", t.name)
        };
        self.lookup(&name, span).map_err(|_| {
            syn::Error::new(
                span,
                format!("the thread array `{}` has no dimension `{name}`", t.name),
            )
        })
    }

    fn offset(&mut self, head: &Ident, rest: &[TokenTree], span: Span) -> syn::Result<Form> {
        let (_, off, atoms) = self.offset_parts(head, rest, span)?;
        let head = head.to_string();
        Ok(Form::Offset {
            off,
            atoms,
            of: Indexed::of_type(self.module, crate::resolve::base_name(&head)),
        })
    }

    /// `$T[...]$` compiled: the index expression, its offset, and what each of the
    /// offset's variables stands for.
    fn offset_parts(
        &mut self,
        head: &Ident,
        rest: &[TokenTree],
        span: Span,
    ) -> syn::Result<CompiledOffset> {
        let mut indices = Vec::new();
        for tt in rest {
            match tt {
                TokenTree::Group(g) if g.delimiter() == Delimiter::Bracket => {
                    indices.push(parse_index(g)?)
                }
                other => {
                    return Err(syn::Error::new(
                        other.span(),
                        "expected `[index]` after the type name",
                    ));
                }
            }
        }
        if indices.is_empty() {
            return Err(syn::Error::new(
                head.span(),
                format!("expected `{head}[...]`: an offset needs at least one index"),
            ));
        }
        let mut vars = Vars::new();
        let mut atoms: Vec<(String, Atom)> = Vec::new();
        let mut spans = Vec::new();
        let core_indices = indices
            .iter()
            .map(|ix| self.core_index(ix, &mut vars, &mut atoms, &mut spans))
            .collect::<syn::Result<Vec<_>>>()?;
        let ie = IndexExpr {
            target: CoreIdent {
                name: head.to_string(),
                span: parray_layout::TextSpan::default(),
            },
            indices: core_indices,
            span: parray_layout::TextSpan::default(),
        };
        // The core reports an index's error at its `Span::start`, a 1-based position in
        // `spans` (0: no index in particular).
        let off = compile_with(self.module, &ie, vars).map_err(|e| {
            let at = e
                .span
                .start
                .checked_sub(1)
                .and_then(|k| spans.get(k))
                .copied();
            syn::Error::new(at.unwrap_or(span), e.message)
        })?;
        Ok((ie, off, atoms))
    }

    fn core_index(
        &mut self,
        ix: &IndexTok,
        vars: &mut Vars,
        atoms: &mut Vec<(String, Atom)>,
        spans: &mut Vec<Span>,
    ) -> syn::Result<Index> {
        let (IndexTok::Nested(_, at) | IndexTok::Expr(_, at)) = ix;
        spans.push(*at);
        let dummy = parray_layout::TextSpan {
            start: spans.len(),
            end: spans.len(),
            line: 0,
            col: 0,
        };
        Ok(match ix {
            IndexTok::Nested(list, _) => Index::Nested(
                list.iter()
                    .map(|i| self.core_index(i, vars, atoms, spans))
                    .collect::<syn::Result<_>>()?,
                dummy,
            ),
            IndexTok::Expr(tokens, _) => {
                let expr: syn::Expr = syn::parse2(tokens.clone())?;
                if let syn::Expr::Lit(syn::ExprLit {
                    lit: syn::Lit::Int(i),
                    ..
                }) = &expr
                {
                    return Ok(Index::Value(
                        IndexValue::Const(i.base10_parse::<u64>()?),
                        dummy,
                    ));
                }
                // A thread index: its range is known, which may simplify the offset.
                if let syn::Expr::Macro(m) = &expr {
                    if let [TokenTree::Ident(w)] = m
                        .mac
                        .tokens
                        .clone()
                        .into_iter()
                        .collect::<Vec<_>>()
                        .as_slice()
                    {
                        if let (true, Some(path)) =
                            (m.mac.path.is_ident(DOLLAR), tid_path(&w.to_string()))
                        {
                            let node = self.use_tid(&path, w.span())?;
                            let name = if path.is_empty() {
                                "tid".to_string()
                            } else {
                                format!("tid_{path}")
                            };
                            vars.bind(&name, self.module.size(node) - 1);
                            atoms.push((name.clone(), Atom::Tid(path)));
                            return Ok(Index::Value(IndexValue::Var(name), dummy));
                        }
                    }
                }
                // Any other index: one variable per distinct expression text.
                let text = quote!(#expr).to_string();
                let name = match atoms
                    .iter()
                    .find(|(_, a)| matches!(a, Atom::Expr(e) if quote!(#e).to_string() == text))
                {
                    Some((n, _)) => n.clone(),
                    None => {
                        let name = match &expr {
                            syn::Expr::Path(p) if p.path.get_ident().is_some() => {
                                p.path.get_ident().expect("checked").to_string()
                            }
                            _ => {
                                self.fresh += 1;
                                format!("__parray_i{}", self.fresh)
                            }
                        };
                        atoms.push((name.clone(), Atom::Expr(Box::new(expr))));
                        name
                    }
                };
                Index::Value(IndexValue::Var(name), dummy)
            }
        })
    }
}

/// A `$T[...]$` compiled: the index expression, its offset, and what each of the
/// offset's variables stands for.
type CompiledOffset = (IndexExpr, parray_layout::Offset, Vec<(String, Atom)>);

/// A compiled `$...$` form, before it is written for a target.
pub enum Form {
    /// `$tid$`, `$tid_0_1$`: the path after `tid`.
    Tid(String),
    /// `$dim(T)$`, `$size(T)$`, `$dim_0_1(T)$`.
    Size(u64),
    /// `$cnt(T)$`.
    Cnt(bool),
    /// `$T[...]$`: the simplified offset and what each of its variables stands for.
    Offset {
        off: parray_layout::Offset,
        atoms: Vec<(String, Atom)>,
        of: Indexed,
    },
    /// `$T[i][j]$` of a type parameter `T`: its indices, one per top-level dimension.
    GenericOffset { ty: Ident, indices: Vec<syn::Expr> },
    /// `$T[...]$` of a type with sizes given at run time (`ty`, the declared type), and
    /// what holds of it at every binding of them.
    RuntimeOffset {
        ty: String,
        index: RuntimeIndex,
        atoms: Vec<(String, Atom)>,
        sizes: Option<Box<FormSizes>>,
    },
    /// `$size(T)$`, `$dim(T_k)$`, or (of a run-time type) the size of any dimension, and
    /// (of a run-time type) that size at every binding of its sizes.
    GenericSize {
        ty: String,
        path: Vec<usize>,
        size: Option<Poly>,
    },
}

impl Form {
    /// The form as an IR expression, `index` lowering each index expression the user
    /// wrote: the one way a form enters the IR, from a detour body and from host code.
    pub fn lower(self, span: Span, index: &mut dyn FnMut(&syn::Expr) -> Expr) -> Expr {
        let kind = match self {
            Form::Tid(path) => ExprKind::Tid(path),
            Form::Size(n) => ExprKind::Size(n),
            Form::Cnt(c) => ExprKind::Cnt(c),
            Form::GenericOffset { ty, indices } => ExprKind::GenericOffset {
                index: RuntimeIndex::top_level(&ty.to_string(), indices.len()),
                ty: ty.to_string(),
                args: indices.iter().map(&mut *index).collect(),
                sizes: None,
            },
            Form::RuntimeOffset {
                ty,
                index: form,
                atoms,
                sizes,
            } => ExprKind::GenericOffset {
                args: args(form.vars.iter().map(String::as_str), &atoms, span, index),
                ty,
                index: form,
                sizes,
            },
            Form::GenericSize { ty, path, size } => ExprKind::GenericSize { ty, path, size },
            Form::Offset { off, atoms, of } => ExprKind::Offset {
                args: args(off.vars.names(), &atoms, span, index),
                off,
                of,
            },
        };
        Expr::new(kind, span)
    }
}

/// One argument per variable of an offset, in the order of `vars`.
fn args<'v>(
    vars: impl Iterator<Item = &'v str>,
    atoms: &[(String, Atom)],
    span: Span,
    index: &mut dyn FnMut(&syn::Expr) -> Expr,
) -> Vec<Expr> {
    vars.map(
        |name| match atoms.iter().find(|(n, _)| n == name).map(|(_, a)| a) {
            Some(Atom::Tid(path)) => Expr::new(ExprKind::Tid(path.clone()), span),
            Some(Atom::Expr(e)) => index(e),
            None => unreachable!("every variable is an atom"),
        },
    )
    .collect()
}

/// What an offset's variable stands for.
pub enum Atom {
    Tid(String),
    /// An index expression written by the user (evaluated where the variable appears;
    /// index expressions are pure, so this only costs time if they are expensive).
    Expr(Box<syn::Expr>),
}

enum Query {
    Size,
    Cnt,
}

fn query_kind(word: &str) -> Option<Query> {
    if DimPath::after("dim", word).is_some() || DimPath::after("size", word).is_some() {
        Some(Query::Size)
    } else if word == "cnt" {
        Some(Query::Cnt)
    } else {
        None
    }
}

/// `tid` -> `""`, `tid_0_1` -> `"0_1"`; `None` for other words.
pub fn tid_path(word: &str) -> Option<String> {
    let children = DimPath::after("tid", word)?;
    let path: Vec<String> = children.iter().map(usize::to_string).collect();
    Some(path.join("_"))
}

fn parse_index(g: &Group) -> syn::Result<IndexTok> {
    let tts: Vec<TokenTree> = g.stream().into_iter().collect();
    if tts.is_empty() {
        return Err(syn::Error::new(g.span(), "empty index `[]`"));
    }
    let all_brackets = tts
        .iter()
        .all(|t| matches!(t, TokenTree::Group(h) if h.delimiter() == Delimiter::Bracket));
    if all_brackets {
        let list = tts
            .iter()
            .map(|t| match t {
                TokenTree::Group(h) => parse_index(h),
                _ => unreachable!("all are bracket groups"),
            })
            .collect::<syn::Result<Vec<_>>>()?;
        return Ok(IndexTok::Nested(list, g.span()));
    }
    Ok(IndexTok::Expr(g.stream(), g.span()))
}
