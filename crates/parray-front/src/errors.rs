//! The errors of one macro invocation, reported together and in the order of the source.

/// All of `errors` as one error (rustc shows each at its span), sorted by line and column
/// so that a file's messages read top to bottom; `None` when there are none.
pub fn in_source_order(errors: impl IntoIterator<Item = syn::Error>) -> Option<syn::Error> {
    let mut errors: Vec<syn::Error> = errors.into_iter().collect();
    errors.sort_by_key(|e| {
        let start = e.span().start();
        (start.line, start.column)
    });
    errors.into_iter().reduce(|mut all, e| {
        all.combine(e);
        all
    })
}
