//! Tokens to type-language text, remembering which token each byte came from, so that an
//! error of the parray-layout parser points at the offending token.

use proc_macro2::{Delimiter, Span, TokenStream, TokenTree};

/// Text made of tokens, and the span of every token by byte range.
pub struct SourceMap {
    pub text: String,
    spans: Vec<(usize, usize, Span)>,
    /// Byte offset of each top-level token.
    pub top_starts: Vec<usize>,
}

impl SourceMap {
    pub fn new(tokens: TokenStream) -> Self {
        let mut map = SourceMap {
            text: String::new(),
            spans: Vec::new(),
            top_starts: Vec::new(),
        };
        for tt in tokens {
            map.top_starts
                .push(map.text.len() + usize::from(!map.text.is_empty()));
            map.push_stream(tt.into());
        }
        map
    }

    fn push(&mut self, s: &str, span: Span) {
        if !self.text.is_empty() {
            self.text.push(' ');
        }
        let start = self.text.len();
        self.text.push_str(s);
        self.spans.push((start, self.text.len(), span));
    }

    fn push_stream(&mut self, tokens: TokenStream) {
        for tt in tokens {
            match tt {
                TokenTree::Group(g) => {
                    let (open, close) = match g.delimiter() {
                        Delimiter::Parenthesis => ("(", ")"),
                        Delimiter::Brace => ("{", "}"),
                        Delimiter::Bracket => ("[", "]"),
                        Delimiter::None => ("", ""),
                    };
                    self.push(open, g.span_open());
                    self.push_stream(g.stream());
                    self.push(close, g.span_close());
                }
                TokenTree::Ident(i) => self.push(&i.to_string(), i.span()),
                TokenTree::Punct(p) => self.push(&p.as_char().to_string(), p.span()),
                TokenTree::Literal(l) => self.push(&l.to_string(), l.span()),
            }
        }
    }

    /// The span of the token covering byte `at` (or the last token, at the end).
    pub fn span_at(&self, at: usize) -> Span {
        self.spans
            .iter()
            .find(|(s, e, _)| at >= *s && at < *e)
            .or_else(|| self.spans.iter().rev().find(|(s, _, _)| *s <= at))
            .or(self.spans.last())
            .map_or_else(Span::call_site, |(_, _, sp)| *sp)
    }

    /// A compile error at the token where parray-layout found the problem.
    pub fn error(&self, e: &parray_layout::Error) -> syn::Error {
        let mut msg = e.message.clone();
        if let Some(d) = &e.decl {
            msg = format!("in declaration `{d}`: {msg}");
        }
        syn::Error::new(self.span_at(e.span.start), msg)
    }
}
