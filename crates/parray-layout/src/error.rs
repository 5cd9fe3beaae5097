//! Errors of the type language: every one names what is wrong and where.

use std::fmt;

/// A region of the source text: byte range plus the 1-based line and column of its start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct TextSpan {
    pub start: usize,
    pub end: usize,
    pub line: u32,
    pub col: u32,
}

impl TextSpan {
    /// The span of `text[start..end]` within `text`.
    pub fn locate(text: &str, start: usize, end: usize) -> TextSpan {
        let start = start.min(text.len());
        let before = &text[..start];
        let line = before.matches('\n').count() as u32 + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = text[line_start..start].chars().count() as u32 + 1;
        TextSpan {
            start,
            end: end.max(start).min(text.len()),
            line,
            col,
        }
    }
}

/// What went wrong, for programs that react to the kind of error (tests, the macro front end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The text does not follow the grammar (brackets, trailing tokens, bad names...).
    Syntax,
    /// A name that is not declared (type, constant, sub-dimension).
    Unknown,
    /// A name declared twice.
    Duplicate,
    /// A size that is zero, negative, inexact, divided by zero, or overflows u64.
    Size,
    /// A structural rule of section 3 is broken (natural leaf in an artificial type, `n#R` too large...).
    Structure,
    /// An index with the wrong shape or out of range.
    Index,
    /// The input is too deep or too large to process safely.
    Limit,
    /// A run-time size (`const N;`) that was given no value.
    Unbound,
}

/// An error of the type language, with the declaration it occurred in and its source position.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    pub span: TextSpan,
    /// The declaration being processed, when there is one.
    pub decl: Option<String>,
}

impl Error {
    pub fn new(kind: ErrorKind, span: TextSpan, message: impl Into<String>) -> Self {
        Error {
            kind,
            message: message.into(),
            span,
            decl: None,
        }
    }

    /// Attach the declaration name, unless one is already there.
    pub fn in_decl(mut self, decl: &str) -> Self {
        if self.decl.is_none() {
            self.decl = Some(decl.to_string());
        }
        self
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}, column {}: ", self.span.line, self.span.col)?;
        if let Some(d) = &self.decl {
            write!(f, "in declaration `{d}`: ")?;
        }
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

pub type Result<T, E = Error> = std::result::Result<T, E>;
