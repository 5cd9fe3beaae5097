//! `#[derive(parray::Record)]`: a `#[repr(C)]` struct of element types as an element.
//!
//! The derive checks the struct (named fields of the type language's elements, no
//! padding), implements `parray::Element` for it with its description as a record, and
//! gives it a companion macro carrying `record P { ... }`, so that `parray!` blocks and
//! detours that name it learn its fields as they learn declarations (see `resolve`). A
//! field that is itself a record (`pos: Vec2`) is learnt from that record's companion,
//! asked for first, as a function asks for the records its signature names; the companion
//! then carries the inner record's declaration before its own.

use parray_compiler::back::rust::{elem::elem_type, elem_tokens, Mode};
use parray_layout::{ElemType, Record};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::resolve::{companion, drive, Carried, Entry, Kind, Outcome};

/// `#[derive(parray::Record)]`: the records its fields name are asked for first.
pub fn derive(input: TokenStream) -> TokenStream {
    drive(Kind::Record, Vec::new(), input, expand)
}

/// The derive, once `entries` carry the records its fields name (or asking for them).
pub fn expand(entries: &[Entry], input: TokenStream) -> syn::Result<Outcome> {
    let item: syn::DeriveInput = syn::parse2(input)?;
    let name = &item.ident;
    if let Some(g) = item.generics.params.first() {
        return Err(syn::Error::new_spanned(
            g,
            "a record is a struct of element types, without type or lifetime parameters",
        ));
    }
    let repr_c = item.attrs.iter().any(|a| {
        a.path().is_ident("repr")
            && a.parse_nested_meta(|m| match m.path.is_ident("C") {
                true => Ok(()),
                false => Err(m.error("")),
            })
            .is_ok()
    });
    if !repr_c {
        return Err(syn::Error::new(
            name.span(),
            format!("a record is laid out as C lays out a struct: add `#[repr(C)]` to `{name}`"),
        ));
    }
    let syn::Data::Struct(syn::DataStruct {
        fields: syn::Fields::Named(named),
        ..
    }) = &item.data
    else {
        return Err(syn::Error::new(
            name.span(),
            "a record is a struct with named fields (`struct P { pos: Float2, mass: f32 }`)",
        ));
    };
    let carried = crate::func::records(entries);
    let mut fields: Vec<(syn::Ident, ElemType, &syn::Type)> = Vec::new();
    let mut need: Vec<syn::Ident> = Vec::new();
    for f in &named.named {
        let field = f.ident.clone().expect("named");
        let elem = match field_elem(&f.ty)? {
            FieldType::Elem(e) => e,
            FieldType::Record(inner) => match carried.iter().find(|r| inner == r.name()) {
                Some(r) => ElemType::Record(*r),
                // A declared type's companion answered for that name.
                None if entries.iter().any(|e| *inner == e.name) => {
                    return Err(syn::Error::new_spanned(
                        &f.ty,
                        format!("`{inner}` is not a record: a record's field is an element type ({}) or a record (a `#[derive(parray::Record)]` struct)", element_names()),
                    ))
                }
                None => {
                    if !need.contains(inner) {
                        need.push(inner.clone());
                    }
                    continue;
                }
            },
        };
        fields.push((field, elem, &f.ty));
    }
    if !need.is_empty() {
        return Ok(Outcome::Need(need));
    }
    if fields.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "a record has at least one field",
        ));
    }
    let record = Record::intern(
        &name.to_string(),
        fields.iter().map(|(f, e, _)| (f.to_string(), *e)).collect(),
    );
    if let Some(at) = record.gap_after().map(|k| &fields[k].0) {
        return Err(syn::Error::new(
            at.span(),
            format!(
                "C leaves a gap in `{name}` after `{at}` ({} bytes of fields in {} bytes): a record has no padding, since its elements are copied and read word by word; order the fields from the largest alignment down, or add a field where the gap is",
                record.field_bytes(),
                record.size_bytes()
            ),
        ));
    }

    let elem = elem_type(ElemType::Record(record));
    let checks = fields.iter().map(|(f, e, written)| match e {
        // The record its companion described: the same size and alignment.
        ElemType::Record(r) => {
            let (size, align) = (r.size_bytes(), r.align_bytes());
            let message = format!(
                "the field `{f}` is the `{}` its companion described",
                r.name()
            );
            quote! {
                let _: fn(&#name) -> &#written = |r| &r.#f;
                assert!(
                    <#written as ::parray::Element>::ELEM.size_bytes() == #size
                        && <#written as ::parray::Element>::ELEM.align_bytes() == #align,
                    #message
                );
            }
        }
        _ => {
            let ty = elem_tokens(*e, Mode::Pthd);
            quote!(let _: fn(&#name) -> &#ty = |r| &r.#f;)
        }
    });
    let entry = Entry {
        name: name.to_string(),
        text: record.declaration(),
        alias: None,
        what: crate::resolve::Carried::Declaration,
    };
    let hidden = format_ident!(
        "__parray_record_{}_{:016x}",
        name,
        crate::resolve::fingerprint(&[(&entry.name, &entry.text)], name)
    );
    let vis = &item.vis;
    // The records inside it first (what their companions carried), then its own.
    let carried: Vec<Entry> = entries
        .iter()
        .filter(|e| e.what == Carried::Declaration)
        .cloned()
        .chain([entry])
        .collect();
    let companion = companion(&quote!(#vis), name, &hidden, &carried);
    Ok(Outcome::Done(quote! {
        // SAFETY: the struct is `#[repr(C)]` (checked above) of fields whose types are
        // elements (checked below, one by one: a record inside it is an `Element`, of the
        // size and alignment its companion described, padding-free by its own derive), so
        // it has C's layout of the record: the size and alignment `ELEM` gives (asserted
        // below), no padding (checked above), valid when all zero and for any bits, as
        // each field is.
        unsafe impl ::parray::Element for #name {
            const ELEM: ::parray::layout::ElemType = #elem;
        }
        // SAFETY: as for `Element`: plain bits of C's layout, shared with kernels as is.
        unsafe impl ::parray::__private::DeviceRepr for #name {}
        // SAFETY: each field is valid as zero bits.
        unsafe impl ::parray::__private::ValidAsZeroBits for #name {}
        const _: () = {
            #(#checks)*
            let elem = <#name as ::parray::Element>::ELEM;
            assert!(
                ::core::mem::size_of::<#name>() as u64 == elem.size_bytes()
                    && ::core::mem::align_of::<#name>() as u64 == elem.align_bytes(),
                "a record's Rust layout must be C's"
            );
        };
        #companion
    }))
}

/// What a field's type is: an element by its last name (`f32`, `parray::Float2`, `f16`...),
/// or a single upper-case name that may be a record (its companion says).
enum FieldType<'t> {
    Elem(ElemType),
    Record(&'t syn::Ident),
}

fn field_elem(ty: &syn::Type) -> syn::Result<FieldType<'_>> {
    let last = match ty {
        syn::Type::Path(p) if p.qself.is_none() => {
            p.path.segments.last().filter(|s| s.arguments.is_empty())
        }
        _ => None,
    };
    if let Some(s) = last {
        let word = s.ident.to_string();
        if let Some(e) = ElemType::ALL.into_iter().find(|e| e.rust_type() == word) {
            return Ok(FieldType::Elem(e));
        }
        // A struct's name (upper case) is most likely another record: by its name alone,
        // its companion's.
        let single = matches!(ty, syn::Type::Path(p) if p.path.segments.len() == 1 && p.path.leading_colon.is_none());
        if word.starts_with(|c: char| c.is_ascii_uppercase()) {
            return match single {
                true => Ok(FieldType::Record(&s.ident)),
                false => Err(syn::Error::new_spanned(
                    ty,
                    format!("a record inside a record is named by its name alone, its companion found where the struct is: import it (`use ...::{word};`) and write `{word}`"),
                )),
            };
        }
    }
    Err(syn::Error::new_spanned(
        ty,
        format!(
            "a record's field is an element type: one of {}, or a record (a `#[derive(parray::Record)]` struct)",
            element_names()
        ),
    ))
}

/// The element types' Rust names, for a message.
fn element_names() -> String {
    let all: Vec<&str> = ElemType::ALL.iter().map(|e| e.rust_type()).collect();
    all.join(", ")
}
