//! The errors of one macro invocation, reported together and in the order of the source.

use proc_macro2::{Punct, Spacing, Span, TokenStream, TokenTree};

/// All of `errors` as one error (rustc shows each at its span), sorted by line and column
/// so that a file's messages read top to bottom; `None` when there are none.
pub fn in_source_order(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    let mut errors: Vec<syn::Error> = errors.into_iter().collect();
    errors.sort_by_key(|e| {
        let start = e.span().start();
        (start.line, start.column)
    });
    combined(errors)
}

fn combined(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })
}

/// `errors` at the same tokens, each span resolved at `anchor` (given the hygiene of
/// `anchor`'s token). A subprogram's body is expanded once per call, and the tokens of
/// each expansion carry that call's mark, so an error at a token of the body would be
/// one error per call; resolved at a token of the call's own (hygiene the calls share),
/// the same message at the same token is the same error, which rustc reports once.
pub fn anchored(errors: syn::Error, anchor: Span) -> syn::Error {
    combined(errors.into_iter().map(|e| {
        // An error spans from its first token to its last: its compile_error's ends.
        let tokens: Vec<TokenTree> = e.to_compile_error().into_iter().collect();
        let ends: TokenStream = [tokens.first(), tokens.last()]
            .into_iter()
            .flatten()
            .map(|tt| {
                let mut end = Punct::new('.', Spacing::Alone);
                end.set_span(tt.span().resolved_at(anchor));
                TokenTree::Punct(end)
            })
            .collect();
        syn::Error::new_spanned(ends, e)
    }))
    .expect("an error holds at least one message")
}
