//! Element types and records as Rust tokens that rebuild them: how `parray!` and the
//! bodies carry a declaration's element type into the program. Paths are the `parray`
//! crate's (`::parray::layout::...`).

use proc_macro2::TokenStream;
use quote::quote;

use parray_layout::kinds::{ElemType, Record};

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
