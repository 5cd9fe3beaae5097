//! `#[derive(parray::Record)]`: a `#[repr(C)]` struct of element types as an element.
//!
//! The derive checks the struct (named fields of the type language's elements, no
//! padding), implements `parray::Element` for it with its description as a record, and
//! gives it a companion macro carrying `record P { ... }`, so that `parray!` blocks and
//! detours that name it learn its fields as they learn declarations (see `resolve`).

use parray_compiler::back::rust::{elem_tokens, module::elem_type, Mode};
use parray_layout::{ElemType, Record};
use proc_macro2::TokenStream;
use quote::{format_ident, quote};

use crate::resolve::{companion, Entry};

pub fn derive(input: TokenStream) -> syn::Result<TokenStream> {
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
    let mut fields: Vec<(syn::Ident, ElemType)> = Vec::new();
    for f in &named.named {
        let field = f.ident.clone().expect("named");
        let elem = field_elem(&f.ty, name, &field)?;
        fields.push((field, elem));
    }
    if fields.is_empty() {
        return Err(syn::Error::new(
            name.span(),
            "a record has at least one field",
        ));
    }
    let record = Record::intern(
        &name.to_string(),
        fields.iter().map(|(f, e)| (f.to_string(), *e)).collect(),
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
    let checks = fields.iter().map(|(f, e)| {
        let ty = elem_tokens(*e, Mode::Pthd);
        quote!(let _: fn(&#name) -> &#ty = |r| &r.#f;)
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
    let companion = companion(&quote!(#vis), name, &hidden, &[entry]);
    Ok(quote! {
        // SAFETY: the struct is `#[repr(C)]` (checked above) of fields whose types are
        // elements (checked below, one by one), so it has C's layout of the record: the
        // size and alignment `ELEM` gives (asserted below), no padding (checked above),
        // valid when all zero and for any bits, as each field is.
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
    })
}

/// The element a field's type is (`f32`, `parray::Float2`, `f16`...), by its last name;
/// `record` and `field` name the record and the field, for the error.
fn field_elem(ty: &syn::Type, record: &syn::Ident, field: &syn::Ident) -> syn::Result<ElemType> {
    let named = match ty {
        syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last().and_then(|s| {
            let word = s.ident.to_string();
            match s.arguments.is_empty() {
                true => ElemType::ALL.into_iter().find(|e| e.rust_type() == word),
                false => None,
            }
        }),
        _ => None,
    };
    named.ok_or_else(|| {
        let all: Vec<&str> = ElemType::ALL.iter().map(|e| e.rust_type()).collect();
        // A struct's name (upper case, no arguments) is most likely another record.
        let nested = match ty {
            syn::Type::Path(p) if p.qself.is_none() => p.path.segments.last().filter(|s| {
                s.arguments.is_empty() && s.ident.to_string().starts_with(|c: char| c.is_ascii_uppercase())
            }),
            _ => None,
        };
        let message = match nested {
            Some(inner) => format!(
                "`{}` is not an element type: a record inside a record is not supported yet (SPEC.md 3.7); write its fields in `{record}` itself, one `{field}_<name>` per field of `{}`, or keep the `{}`s in an array of their own",
                inner.ident, inner.ident, inner.ident
            ),
            None => format!(
                "a record's field is an element type: one of {} (a record inside a record is not supported yet)",
                all.join(", ")
            ),
        };
        syn::Error::new_spanned(ty, message)
    })
}
