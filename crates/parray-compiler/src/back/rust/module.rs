//! A resolved [`Module`] as Rust tokens that rebuild it ([`Module::from_parts`]): how
//! `parray!` carries its declarations into the program as data, so that a type's run-time
//! value (`DataType::module`) needs no parsing. Paths are the `parray` crate's
//! (`::parray::layout::...`).

use proc_macro2::TokenStream;
use quote::quote;

use parray_layout::error::TextSpan;
use parray_layout::kinds::{ElemType, MemKind, Param, Record, ThreadKind};
use parray_layout::tree::{
    Distribution, Holders, Module, Node, NodeId, NodeKind, TypeClass, TypeDef,
};

/// An expression of type `::parray::layout::Module` equal to `module`.
pub fn module_tokens(module: &Module) -> TokenStream {
    let nodes = module.nodes().iter().map(node);
    let types = module.types().iter().map(type_def);
    let consts = module
        .constants()
        .into_iter()
        .map(|(name, v)| quote!((::std::string::String::from(#name), #v)));
    quote! {
        ::parray::layout::Module::from_parts(
            ::std::vec![#(#nodes),*],
            ::std::vec![#(#types),*],
            ::std::vec![#(#consts),*],
        )
    }
}

fn id(n: NodeId) -> TokenStream {
    let k = n.0;
    quote!(::parray::layout::NodeId(#k))
}

fn node(n: &Node) -> TokenStream {
    let (size, max_offset, height) = (n.size, n.max_offset, n.height);
    let kind = match &n.kind {
        NodeKind::Leaf { stride } => quote!(::parray::layout::NodeKind::Leaf { stride: #stride }),
        NodeKind::Xor { stride, partner } => {
            let p = id(*partner);
            quote!(::parray::layout::NodeKind::Xor { stride: #stride, partner: #p })
        }
        NodeKind::Compound => quote!(::parray::layout::NodeKind::Compound),
        NodeKind::Prefix { target } => {
            let t = id(*target);
            quote!(::parray::layout::NodeKind::Prefix { target: #t })
        }
        NodeKind::Strided { target, weight } => {
            let t = id(*target);
            quote!(::parray::layout::NodeKind::Strided { target: #t, weight: #weight })
        }
    };
    let children = n.children.iter().map(|c| id(*c));
    quote! {
        ::parray::layout::Node {
            size: #size,
            kind: #kind,
            children: ::std::vec![#(#children),*],
            max_offset: #max_offset,
            height: #height,
        }
    }
}

fn type_def(t: &TypeDef) -> TokenStream {
    let (name, natural, root) = (&t.name, t.natural, id(t.root));
    let class = match &t.class {
        TypeClass::Data { mem, elem, soa } => {
            let mem = match mem {
                Some(m) => {
                    let m = mem_kind(*m);
                    quote!(::core::option::Option::Some(#m))
                }
                None => quote!(::core::option::Option::None),
            };
            let elem = elem_type(*elem);
            quote!(::parray::layout::TypeClass::Data { mem: #mem, elem: #elem, soa: #soa })
        }
        TypeClass::Thread(kind) => {
            let kind = match kind {
                ThreadKind::Pthd => quote!(::parray::layout::ThreadKind::Pthd),
                ThreadKind::Mpi => quote!(::parray::layout::ThreadKind::Mpi),
                ThreadKind::Cuda(params) => {
                    let params = params.iter().map(param);
                    quote!(::parray::layout::ThreadKind::Cuda(
                        ::std::vec![#(#params),*]
                    ))
                }
            };
            quote!(::parray::layout::TypeClass::Thread(#kind))
        }
    };
    let span = span(t.span);
    let distribution = match &t.distribution {
        Some(Distribution {
            over,
            holders,
            ranks,
            part,
            leaves,
        }) => {
            let holders = match holders {
                Holders::Ranks => quote!(::parray::layout::Holders::Ranks),
                Holders::Threads => quote!(::parray::layout::Holders::Threads),
            };
            let leaves = leaves.iter().map(|l| l.0);
            quote! {
                ::core::option::Option::Some(::parray::layout::Distribution {
                    over: ::std::string::String::from(#over),
                    holders: #holders,
                    ranks: #ranks,
                    part: #part,
                    leaves: ::std::vec![#(::parray::layout::NodeId(#leaves)),*],
                })
            }
        }
        None => quote!(::core::option::Option::None),
    };
    let covers = match t.covers {
        Some(c) => quote!(::core::option::Option::Some(#c)),
        None => quote!(::core::option::Option::None),
    };
    quote! {
        ::parray::layout::TypeDef {
            name: ::std::string::String::from(#name),
            class: #class,
            root: #root,
            natural: #natural,
            distribution: #distribution,
            covers: #covers,
            span: #span,
        }
    }
}

fn param(p: &Param) -> TokenStream {
    let (elem, pointer, soa, name) = (elem_type(p.elem), p.pointer, p.soa, &p.name);
    quote! {
        ::parray::layout::Param { elem: #elem, pointer: #pointer, soa: #soa, name: ::std::string::String::from(#name) }
    }
}

fn span(s: TextSpan) -> TokenStream {
    let (start, end, line, col) = (s.start, s.end, s.line, s.col);
    quote!(::parray::layout::TextSpan { start: #start, end: #end, line: #line, col: #col })
}

fn mem_kind(m: MemKind) -> TokenStream {
    let v = proc_macro2::Ident::new(&format!("{m:?}"), proc_macro2::Span::call_site());
    quote!(::parray::layout::MemKind::#v)
}

/// The expression of an element type in a program: a record's description is a constant
/// the compiler promotes to a `'static` (what `#[derive(parray::Record)]` writes too).
pub fn elem_type(e: ElemType) -> TokenStream {
    let ElemType::Record(r) = e else {
        let v = proc_macro2::Ident::new(&format!("{e:?}"), proc_macro2::Span::call_site());
        return quote!(::parray::layout::ElemType::#v);
    };
    let r = record(r);
    quote!(::parray::layout::ElemType::Record(#r))
}

/// The expression of a record in a program: a block of one constant per record, those
/// inside it first, each description a constant the compiler promotes to a `'static` (a
/// record inside a record is the constant before it, by name: a call would not be
/// promoted).
pub fn record(r: Record) -> TokenStream {
    /// `r` after the records inside it, each once.
    fn inner_first(r: Record, out: &mut Vec<Record>) {
        if out.contains(&r) {
            return;
        }
        for f in r.def().fields {
            if let ElemType::Record(inner) = f.elem {
                inner_first(inner, out);
            }
        }
        out.push(r);
    }
    let mut all = Vec::new();
    inner_first(r, &mut all);
    let ident = |k: usize| {
        proc_macro2::Ident::new(
            &format!("__PARRAY_RECORD_{k}"),
            proc_macro2::Span::call_site(),
        )
    };
    let consts = all.iter().enumerate().map(|(k, r)| {
        let name = r.name();
        let fields = r.def().fields.iter().map(|f| {
            let elem = match f.elem {
                ElemType::Record(inner) => {
                    let at = ident(
                        all.iter()
                            .position(|x| *x == inner)
                            .expect("declared before"),
                    );
                    quote!(::parray::layout::ElemType::Record(#at))
                }
                e => elem_type(e),
            };
            let name = f.name;
            quote!(::parray::layout::Field { name: #name, elem: #elem })
        });
        let id = ident(k);
        quote! {
            const #id: ::parray::layout::Record = ::parray::layout::Record::new(
                &::parray::layout::RecordDef { name: #name, fields: &[#(#fields),*] },
            );
        }
    });
    let last = ident(all.len() - 1);
    quote!({ #(#consts)* #last })
}
