//! The parser of the textual type language (grammar: SPEC.md, "Types").
//!
//! nom supplies the lexical pieces (blanks and comments, identifiers, literals); the
//! structure is recursive descent over them so that every error can say exactly which
//! token is wrong and where. Nesting depth is bounded so that no input overflows the stack.

use nom::branch::alt;
use nom::bytes::complete::{tag, take_until, take_while, take_while1};
use nom::character::complete::{multispace1, not_line_ending};
use nom::combinator::{recognize, value};
use nom::multi::many0;
use nom::sequence::pair;
use nom::IResult;

use crate::ast::*;
use crate::error::{Error, ErrorKind, Result, TextSpan};
use crate::kinds::{ElemType, MemKind, Param, ThreadKind};

/// Deepest bracket or parenthesis nesting accepted.
pub const MAX_DEPTH: usize = 128;

/// Words that cannot name a type or constant.
const RESERVED: &[&str] = &["pthd", "mpi", "cuda", "const", "parray"];

/// Parse a whole program: constants and declarations.
pub fn parse_program(src: &str) -> Result<Program> {
    parse_program_reporting_all(src).map_err(|mut errors| errors.swap_remove(0))
}

/// [`parse_program`], going on after a declaration that does not parse (at the `;` that
/// ends it) so that every bad declaration is reported, in source order.
pub fn parse_program_reporting_all(src: &str) -> std::result::Result<Program, Vec<Error>> {
    parse_reporting_all(src, &[])
}

/// [`parse_program`] of a program that follows the declarations of `records` (a record's
/// field may be one of them, as it may be a record declared before it in `src`): one
/// carried declaration after those carried before it.
pub fn parse_program_after(src: &str, records: &[crate::kinds::Record]) -> Result<Program> {
    parse_reporting_all(src, records).map_err(|mut errors| errors.swap_remove(0))
}

fn parse_reporting_all(
    src: &str,
    records: &[crate::kinds::Record],
) -> std::result::Result<Program, Vec<Error>> {
    let mut p = Parser::new(src);
    p.declared_records = records.to_vec();
    let (mut items, mut errors) = (Vec::new(), Vec::new());
    loop {
        p.skip();
        if p.at_end() {
            break;
        }
        let start = p.pos;
        match p.item() {
            Ok(item) => items.push(item),
            Err(e) => {
                errors.push(e);
                p.pos = end_of_item(src, start);
            }
        }
        p.skip();
        p.eat(';');
    }
    match errors.is_empty() {
        true => Ok(Program { items }),
        false => Err(errors),
    }
}

/// Where the declaration starting at `start` ends: its `;` outside brackets, or the end.
fn end_of_item(src: &str, start: usize) -> usize {
    let mut depth = 0i32;
    for (i, c) in src[start..].char_indices() {
        match c {
            '[' | '{' | '(' => depth += 1,
            ']' | '}' | ')' => depth -= 1,
            ';' if depth <= 0 => return start + i,
            _ => {}
        }
    }
    src.len()
}

/// Declaration text as a person writes it: `[1000][1000]#A_0` and `cuda(float* y)`, not
/// the tokens' `[ 1000 ] [ 1000 ] # A_0` and `cuda ( float * y )` (the text a macro's
/// tokens give, in messages).
pub fn as_written(text: &str) -> String {
    text.replace("[ ", "[")
        .replace(" ]", "]")
        .replace("] [", "][")
        .replace("# ", "#")
        .replace("] #", "]#")
        .replace(" ( ", "(")
        .replace(" )", ")")
        .replace(" * ", "* ")
        .replace(" , ", ", ")
}

/// Parse an index expression such as `A[[2][1]][3]` or `M_1[k]`.
pub fn parse_index_expr(src: &str) -> Result<IndexExpr> {
    let mut p = Parser::new(src);
    p.skip();
    let start = p.pos;
    let target = p.ident("a type name")?;
    let mut indices = Vec::new();
    p.skip();
    while p.peek() == Some('[') {
        indices.push(p.index(0)?);
        p.skip();
    }
    if indices.is_empty() {
        return Err(p.error_here("expected `[` after the type name"));
    }
    p.expect_end()?;
    Ok(IndexExpr {
        target,
        indices,
        span: p.span_from(start),
    })
}

/// Parse a size expression on its own (used for `--const NAME=VALUE`).
pub fn parse_size_expr(src: &str) -> Result<SizeExpr> {
    let mut p = Parser::new(src);
    p.skip();
    let e = p.size_expr(0)?;
    p.expect_end()?;
    Ok(e)
}

fn blank(i: &str) -> IResult<&str, ()> {
    value(
        (),
        many0(alt((
            value((), multispace1),
            value((), pair(tag("//"), not_line_ending)),
            value((), pair(pair(tag("/*"), take_until("*/")), tag("*/"))),
        ))),
    )(i)
}

fn identifier(i: &str) -> IResult<&str, &str> {
    recognize(pair(
        take_while1(|c: char| c.is_ascii_alphabetic() || c == '_'),
        take_while(|c: char| c.is_ascii_alphanumeric() || c == '_'),
    ))(i)
}

fn number(i: &str) -> IResult<&str, &str> {
    take_while1(|c: char| c.is_ascii_digit())(i)
}

struct Parser<'a> {
    src: &'a str,
    pos: usize,
    /// Record names the declaration being read uses as element types.
    records: Vec<Ident>,
    /// The records read so far, which a later record's field may be (a record inside a
    /// record: its declaration comes first, as a companion carries it).
    declared_records: Vec<crate::kinds::Record>,
}

impl<'a> Parser<'a> {
    fn new(src: &'a str) -> Self {
        Parser {
            src,
            pos: 0,
            records: Vec::new(),
            declared_records: Vec::new(),
        }
    }

    fn rest(&self) -> &'a str {
        &self.src[self.pos..]
    }

    fn advance_to(&mut self, rest: &'a str) {
        self.pos = self.src.len() - rest.len();
    }

    fn skip(&mut self) {
        if let Ok((rest, ())) = blank(self.rest()) {
            self.advance_to(rest);
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.src.len()
    }

    fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    /// Whether the next character after blanks is `c` (not consumed).
    fn next_is(&mut self, c: char) -> bool {
        self.skip();
        self.peek() == Some(c)
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += c.len_utf8();
            true
        } else {
            false
        }
    }

    fn span(&self, start: usize, end: usize) -> TextSpan {
        TextSpan::locate(self.src, start, end)
    }

    fn span_from(&self, start: usize) -> TextSpan {
        self.span(start, self.pos)
    }

    /// The span of the token at the cursor (one word, number or character).
    fn token_here(&self) -> (TextSpan, String) {
        let rest = self.rest();
        let len = identifier(rest)
            .or_else(|_| number(rest))
            .map(|(r, _)| rest.len() - r.len())
            .unwrap_or_else(|_| rest.chars().next().map_or(0, char::len_utf8));
        (self.span(self.pos, self.pos + len), rest[..len].to_string())
    }

    fn error_here(&self, expected: &str) -> Error {
        let (span, tok) = self.token_here();
        let found = if tok.is_empty() {
            "the end of the input".to_string()
        } else {
            format!("`{tok}`")
        };
        Error::new(
            ErrorKind::Syntax,
            span,
            format!("{expected}, found {found}"),
        )
    }

    fn expect(&mut self, c: char, what: &str) -> Result<()> {
        self.skip();
        if self.eat(c) {
            Ok(())
        } else {
            Err(self.error_here(&format!("expected `{c}` {what}")))
        }
    }

    fn expect_end(&mut self) -> Result<()> {
        self.skip();
        if self.at_end() {
            Ok(())
        } else {
            Err(self.error_here("unexpected trailing input: expected the end"))
        }
    }

    fn word(&mut self) -> Option<(&'a str, TextSpan)> {
        let (rest, w) = identifier(self.rest()).ok()?;
        let start = self.pos;
        self.advance_to(rest);
        Some((w, self.span_from(start)))
    }

    fn peek_word(&self) -> Option<&'a str> {
        identifier(self.rest()).ok().map(|(_, w)| w)
    }

    fn ident(&mut self, what: &str) -> Result<Ident> {
        self.skip();
        match self.word() {
            Some((w, span)) => Ok(Ident {
                name: w.to_string(),
                span,
            }),
            None => Err(self.error_here(&format!("expected {what} (an identifier)"))),
        }
    }

    /// A name being declared: an identifier that is not a keyword.
    fn decl_name(&mut self) -> Result<Ident> {
        self.skip();
        if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            let (span, tok) = self.token_here();
            let bad_len = take_while::<_, _, nom::error::Error<&str>>(|c: char| {
                c.is_ascii_alphanumeric() || c == '_'
            })(self.rest())
            .map(|(r, _)| self.rest().len() - r.len())
            .unwrap_or(tok.len());
            let span = self.span(span.start, span.start + bad_len);
            let bad = &self.src[span.start..span.end];
            return Err(Error::new(
                ErrorKind::Syntax,
                span,
                format!("`{bad}` is not a name: a name is an identifier ([A-Za-z_][A-Za-z0-9_]*)"),
            ));
        }
        let id = self.ident("the declared name")?;
        if is_reserved(&id.name) {
            return Err(Error::new(
                ErrorKind::Syntax,
                id.span,
                format!("`{}` is a keyword and cannot be a name", id.name),
            ));
        }
        Ok(id)
    }

    fn item(&mut self) -> Result<Item> {
        let start = self.pos;
        if self.peek_word() == Some("const") {
            self.word();
            let name = self.decl_name()?;
            self.skip();
            // `const N;` (no value): a size the program gives when it runs.
            let value = if self.peek() == Some('=') {
                self.expect('=', "after the constant's name")?;
                self.skip();
                Some(self.size_expr(0)?)
            } else {
                None
            };
            return Ok(Item::Const(ConstDecl { name, value }));
        }
        if self.peek_word() == Some("record") {
            self.word();
            return self.record();
        }
        self.records.clear();
        if self.peek() == Some('#') {
            self.pos += 1;
            self.skip();
            if self.peek_word() != Some("parray") {
                return Err(self.error_here("expected `#parray`, a constant or a declaration"));
            }
            self.word();
            self.expect('{', "after `#parray`")?;
            let (kind, dims) = self.decl_body()?;
            self.expect('}', "to close `#parray {`")?;
            let name = self.decl_name()?;
            return Ok(Item::Type(TypeDecl {
                name,
                kind,
                dims,
                records: std::mem::take(&mut self.records),
                span: self.span_from(start),
            }));
        }
        let (kind, dims) = self.decl_body()?;
        let name = self.decl_name()?;
        Ok(Item::Type(TypeDecl {
            name,
            kind,
            dims,
            records: std::mem::take(&mut self.records),
            span: self.span_from(start),
        }))
    }

    /// `record P { float2 pos; int id; }` (after `record`).
    fn record(&mut self) -> Result<Item> {
        let name = self.decl_name()?;
        self.expect('{', "after the record's name")?;
        let mut fields: Vec<(String, ElemType)> = Vec::new();
        loop {
            self.skip();
            if self.eat('}') {
                break;
            }
            let Some((ty, span)) = self.word() else {
                return Err(self.error_here("expected a field's element type or `}`"));
            };
            let inner = self.declared_records.iter().find(|r| r.name() == ty);
            let elem = ElemType::from_keyword(ty)
                .or(inner.map(|r| ElemType::Record(*r)))
                .ok_or_else(|| {
                    let msg = format!(
                        "a record's field is one of {} or a record declared before it (not `{ty}`)",
                        elem_list()
                    );
                    Error::new(ErrorKind::Syntax, span, msg)
                })?;
            let field = self.ident("a field name")?;
            if fields.iter().any(|(f, _)| *f == field.name) {
                let msg = format!("duplicate field `{}`", field.name);
                return Err(Error::new(ErrorKind::Duplicate, field.span, msg));
            }
            fields.push((field.name, elem));
            self.expect(';', "after a field")?;
        }
        if fields.is_empty() {
            let msg = format!("record `{}` has no fields", name.name);
            return Err(Error::new(ErrorKind::Syntax, name.span, msg));
        }
        let record = crate::kinds::Record::intern(&name.name, fields);
        self.declared_records.push(record);
        Ok(Item::Record(RecordDecl { name, record }))
    }

    /// An element type: a keyword, or a record's name ([`Record::named`]), which building
    /// the module resolves against the program's `record` items.
    ///
    /// [`Record::named`]: crate::kinds::Record::named
    fn elem(&mut self, word: &str, span: TextSpan) -> ElemType {
        ElemType::from_keyword(word).unwrap_or_else(|| {
            self.records.push(Ident {
                name: word.to_string(),
                span,
            });
            ElemType::Record(crate::kinds::Record::named(word))
        })
    }

    /// `[mem] elem dims` or `thread dims`.
    fn decl_body(&mut self) -> Result<(DeclKind, Vec<Group>)> {
        self.skip();
        let save = self.pos;
        let Some((w, span)) = self.word() else {
            return Err(self.error_here(
                "expected a declaration (a memory kind, element type or thread kind)",
            ));
        };
        let kind = if let Some(mem) = MemKind::from_keyword(w) {
            self.skip();
            let soa = self.soa();
            if let (Some(at), Some(why)) = (soa, soa_refused(Some(mem))) {
                return Err(Error::new(ErrorKind::Syntax, at, why));
            }
            self.skip();
            let save = self.pos;
            match self.word() {
                Some((e, espan)) if ElemType::from_keyword(e).is_some() || is_record_name(e) => {
                    soa_of_record(soa, e)?;
                    DeclKind::Data {
                        mem: Some(mem),
                        elem: self.elem(e, espan),
                        soa: soa.is_some(),
                    }
                }
                Some((e, espan)) => {
                    return Err(Error::new(
                        ErrorKind::Syntax,
                        espan,
                        format!(
                            "unknown element type `{e}` (expected one of {}, or a record: a `#[derive(parray::Record)]` struct)",
                            elem_list()
                        ),
                    ))
                }
                None => {
                    self.pos = save;
                    return Err(self.error_here("expected an element type"));
                }
            }
        } else if ElemType::from_keyword(w).is_some() || is_record_name(w) && self.next_is('[') {
            DeclKind::Data {
                mem: None,
                elem: self.elem(w, span),
                soa: false,
            }
        } else if let (SOA, Some(why)) = (w, soa_refused(None)) {
            return Err(Error::new(ErrorKind::Syntax, span, why));
        } else if w == "pthd" {
            DeclKind::Thread(ThreadKind::Pthd)
        } else if w == "mpi" {
            DeclKind::Thread(ThreadKind::Mpi)
        } else if w == "cuda" {
            DeclKind::Thread(ThreadKind::Cuda(self.params()?))
        } else {
            self.pos = save;
            self.skip();
            // A word followed by an element type is a misspelt memory kind.
            let after = {
                let mut q = Parser {
                    pos: span.end,
                    ..Parser::new(self.src)
                };
                q.skip();
                q.peek_word().and_then(ElemType::from_keyword)
            };
            let msg = if after.is_some() {
                format!(
                    "unknown memory kind `{w}` (expected one of {})",
                    MemKind::ALL.map(|m| m.keyword()).join(", ")
                )
            } else {
                format!(
                    "expected a declaration: unknown memory kind, element type or thread kind `{w}` (element types: {})",
                    elem_list()
                )
            };
            return Err(Error::new(ErrorKind::Syntax, span, msg));
        };
        let dims = self.dims()?;
        Ok((kind, dims))
    }

    /// The word `soa`, if it comes next: its span.
    fn soa(&mut self) -> Option<TextSpan> {
        if self.peek_word() != Some(SOA) {
            return None;
        }
        self.word().map(|(_, span)| span)
    }

    /// `( float* a, int n )`
    fn params(&mut self) -> Result<Vec<Param>> {
        self.expect('(', "after `cuda`")?;
        let mut params = Vec::new();
        self.skip();
        if self.eat(')') {
            return Ok(params);
        }
        loop {
            self.skip();
            let soa = self.soa();
            self.skip();
            let Some((ty, span)) = self.word() else {
                return Err(self.error_here("expected a parameter type"));
            };
            soa_of_record(soa, ty)?;
            if ElemType::from_keyword(ty).is_none() && !is_record_name(ty) {
                return Err(Error::new(
                    ErrorKind::Syntax,
                    span,
                    format!(
                        "unknown parameter type `{ty}` (expected one of {}, or a record)",
                        elem_list()
                    ),
                ));
            }
            let elem = self.elem(ty, span);
            self.skip();
            let pointer = self.eat('*');
            if let (Some(at), false) = (soa, pointer) {
                return Err(Error::new(
                    ErrorKind::Syntax,
                    at,
                    format!("`soa` says how the records a pointer reaches are stored: write `soa {ty}* name`"),
                ));
            }
            let name = self.ident("a parameter name")?;
            if params.iter().any(|p: &Param| p.name == name.name) {
                return Err(Error::new(
                    ErrorKind::Duplicate,
                    name.span,
                    format!("duplicate parameter `{}`", name.name),
                ));
            }
            params.push(Param {
                elem,
                pointer,
                soa: soa.is_some(),
                name: name.name,
            });
            self.skip();
            if self.eat(')') {
                return Ok(params);
            }
            if !self.eat(',') {
                return Err(self.error_here("expected `,` or `)` in the parameter list"));
            }
        }
    }

    fn dims(&mut self) -> Result<Vec<Group>> {
        self.skip();
        let mut groups = Vec::new();
        while self.peek() == Some('[') {
            groups.push(self.group(0)?);
            self.skip();
        }
        if groups.is_empty() {
            return Err(self.error_here("expected `[` to start the dimensions"));
        }
        Ok(groups)
    }

    fn check_depth(&self, depth: usize) -> Result<()> {
        if depth >= MAX_DEPTH {
            let (span, _) = self.token_here();
            return Err(Error::new(
                ErrorKind::Limit,
                span,
                format!("nesting deeper than {MAX_DEPTH} levels"),
            ));
        }
        Ok(())
    }

    fn group(&mut self, depth: usize) -> Result<Group> {
        self.check_depth(depth)?;
        self.skip();
        let start = self.pos;
        if !self.eat('[') {
            return Err(self.error_here("expected `[`"));
        }
        self.skip();
        let body = match self.peek() {
            Some('[') => {
                let mut inner = Vec::new();
                while self.peek() == Some('[') {
                    inner.push(self.group(depth + 1)?);
                    self.skip();
                }
                if self.eat('#') {
                    GroupBody::Ref {
                        shape: RefShape::Structured(inner),
                        target: self.ident("a referenced type after `#`")?,
                    }
                } else {
                    GroupBody::Compound(inner)
                }
            }
            Some('#') => {
                self.pos += 1;
                GroupBody::Ref {
                    shape: RefShape::Whole,
                    target: self.ident("a referenced type after `#`")?,
                }
            }
            Some(']') => return Err(self.error_here("expected a size, `[` or `#` in the group")),
            _ => {
                let size = self.size_expr(depth + 1)?;
                self.skip();
                if self.eat('#') {
                    GroupBody::Ref {
                        shape: RefShape::Sized(size),
                        target: self.ident("a referenced type after `#`")?,
                    }
                } else {
                    GroupBody::Size(size)
                }
            }
        };
        self.skip();
        let xor = match self.eat('^') {
            true => Some(self.ident("the leaf whose digit the group's is XORed with, after `^`")?),
            false => None,
        };
        self.skip();
        if !self.eat(']') {
            let open = self.span(start, start + 1);
            let e = self.error_here(&format!(
                "expected `]` to close the `[` at line {}, column {}",
                open.line, open.col
            ));
            return Err(e);
        }
        Ok(Group {
            body,
            span: self.span_from(start),
            xor,
        })
    }

    /// Precedence climbing over `+ -` and `* /`.
    fn size_expr(&mut self, depth: usize) -> Result<SizeExpr> {
        self.check_depth(depth)?;
        let mut lhs = self.size_term(depth)?;
        loop {
            self.skip();
            let op = match self.peek() {
                Some('+') => SizeOp::Add,
                Some('-') => SizeOp::Sub,
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.size_term(depth)?;
            lhs = bin(self, op, lhs, rhs);
        }
    }

    fn size_term(&mut self, depth: usize) -> Result<SizeExpr> {
        let mut lhs = self.size_atom(depth)?;
        loop {
            self.skip();
            let op = match self.peek() {
                Some('*') => SizeOp::Mul,
                Some('/') if !self.rest().starts_with("//") && !self.rest().starts_with("/*") => {
                    SizeOp::Div
                }
                _ => return Ok(lhs),
            };
            self.pos += 1;
            let rhs = self.size_atom(depth)?;
            lhs = bin(self, op, lhs, rhs);
        }
    }

    fn size_atom(&mut self, depth: usize) -> Result<SizeExpr> {
        self.check_depth(depth)?;
        self.skip();
        let start = self.pos;
        match self.peek() {
            Some('(') => {
                self.pos += 1;
                let inner = self.size_expr(depth + 1)?;
                self.skip();
                if !self.eat(')') {
                    return Err(self.error_here("expected `)` to close `(`"));
                }
                Ok(SizeExpr {
                    kind: inner.kind,
                    span: self.span_from(start),
                })
            }
            Some('-') => {
                self.pos += 1;
                let inner = self.size_atom(depth + 1)?;
                Ok(SizeExpr {
                    kind: SizeExprKind::Neg(Box::new(inner)),
                    span: self.span_from(start),
                })
            }
            Some(c) if c.is_ascii_digit() => {
                let (rest, digits) = number(self.rest()).expect("a digit is here");
                self.advance_to(rest);
                let span = self.span_from(start);
                if identifier(rest).is_ok() {
                    return Err(self.error_here(&format!(
                        "expected an operator, `]` or `#` after the number `{digits}`"
                    )));
                }
                let v = digits.parse::<u64>().map_err(|_| {
                    Error::new(
                        ErrorKind::Size,
                        span,
                        format!("the number `{digits}` does not fit in 64 bits"),
                    )
                })?;
                Ok(SizeExpr {
                    kind: SizeExprKind::Lit(v),
                    span,
                })
            }
            _ => match self.word() {
                Some(("dim", _)) if self.rest().trim_start().starts_with('(') => {
                    self.skip();
                    self.pos += 1;
                    let target = self.ident("a type or sub-dimension (`dim(A_1)`)")?;
                    self.skip();
                    if !self.eat(')') {
                        return Err(self.error_here("expected `)` to close `dim(`"));
                    }
                    Ok(SizeExpr {
                        kind: SizeExprKind::Dim(target),
                        span: self.span_from(start),
                    })
                }
                Some(("ceil", _)) if self.rest().trim_start().starts_with('(') => {
                    self.skip();
                    self.pos += 1;
                    let inner = self.size_expr(depth + 1)?;
                    self.skip();
                    if !self.eat(')') {
                        return Err(self.error_here("expected `)` to close `ceil(`"));
                    }
                    let span = self.span_from(start);
                    match inner.kind {
                        SizeExprKind::Bin(SizeOp::Div, a, b) => Ok(SizeExpr {
                            kind: SizeExprKind::Bin(SizeOp::CeilDiv, a, b),
                            span,
                        }),
                        _ => Err(Error::new(
                            ErrorKind::Syntax,
                            span,
                            "`ceil` takes one division: `ceil(N / 256)`, the pieces of 256 that cover N",
                        )),
                    }
                }
                Some((w, span)) => Ok(SizeExpr {
                    kind: SizeExprKind::Name(w.to_string()),
                    span,
                }),
                None => Err(self.error_here("expected a size (a number, a constant or `(`)")),
            },
        }
    }

    /// One index component `[3]`, `[i]` or `[[2][1]]`.
    fn index(&mut self, depth: usize) -> Result<Index> {
        self.check_depth(depth)?;
        self.skip();
        let start = self.pos;
        if !self.eat('[') {
            return Err(self.error_here("expected `[`"));
        }
        self.skip();
        let idx = if self.peek() == Some('[') {
            let mut inner = Vec::new();
            while self.peek() == Some('[') {
                inner.push(self.index(depth + 1)?);
                self.skip();
            }
            Index::Nested(inner, TextSpan::default())
        } else if self.peek().is_some_and(|c| c.is_ascii_digit()) {
            let vstart = self.pos;
            let (rest, digits) = number(self.rest()).expect("a digit is here");
            self.advance_to(rest);
            let v = digits.parse::<u64>().map_err(|_| {
                Error::new(
                    ErrorKind::Index,
                    self.span_from(vstart),
                    format!("the index `{digits}` does not fit in 64 bits"),
                )
            })?;
            Index::Value(IndexValue::Const(v), TextSpan::default())
        } else {
            let id = self.ident("an index (a number, a variable or `[`)")?;
            Index::Value(IndexValue::Var(id.name), TextSpan::default())
        };
        self.skip();
        if !self.eat(']') {
            let open = self.span(start, start + 1);
            return Err(self.error_here(&format!(
                "expected `]` to close the `[` at line {}, column {}",
                open.line, open.col
            )));
        }
        let span = self.span_from(start);
        Ok(match idx {
            Index::Nested(v, _) => Index::Nested(v, span),
            Index::Value(v, _) => Index::Value(v, span),
        })
    }
}

fn bin(p: &Parser, op: SizeOp, lhs: SizeExpr, rhs: SizeExpr) -> SizeExpr {
    let span = p.span(lhs.span.start, rhs.span.end);
    SizeExpr {
        kind: SizeExprKind::Bin(op, Box::new(lhs), Box::new(rhs)),
        span,
    }
}

fn is_reserved(w: &str) -> bool {
    RESERVED.contains(&w)
        || MemKind::from_keyword(w).is_some()
        || ElemType::from_keyword(w).is_some()
}

/// The word that stores a record array one array per field (`dmem soa Particle [N] Q`).
const SOA: &str = "soa";

/// Why `soa` may not follow the memory kind `mem` (`None`: a view), if it may not: where
/// there is no storage of one's own to arrange, and for the memory kinds whose arrays
/// are not kept one array per field.
fn soa_refused(mem: Option<MemKind>) -> Option<&'static str> {
    Some(match mem {
        Some(MemKind::Paged | MemKind::Pinned | MemKind::Dmem | MemKind::Smem) => return None,
        Some(MemKind::Cmem) => "`soa` is not for cmem, whose reads go through the constant bank (one address per warp is broadcast, nothing to coalesce): declare the record array `cmem` (whole records), or `dmem soa`",
        Some(MemKind::Rmem) => "`soa` is not for rmem, one thread's registers, which have no layout to coalesce: declare the record array `rmem` (whole records)",
        None => "`soa` follows a memory kind (`dmem soa Particle [N] Q`): a view has no storage of its own to arrange (a view of an SoA array reaches its fields as they are stored)",
    })
}

/// `soa` (at its span) must be followed by a record's name, `elem`.
fn soa_of_record(soa: Option<TextSpan>, elem: &str) -> Result<()> {
    match soa {
        Some(at) if !is_record_name(elem) => Err(Error::new(
            ErrorKind::Syntax,
            at,
            format!("`soa` stores a record array one array per field, and `{elem}` is not a record (a `#[derive(parray::Record)]` struct): drop `soa`"),
        )),
        _ => Ok(()),
    }
}

/// A word that names a record where an element type goes: a Rust struct's name, which
/// starts with an upper-case letter (every element keyword is lower-case).
fn is_record_name(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_uppercase())
}

fn elem_list() -> String {
    ElemType::ALL.map(|e| e.keyword()).join(", ")
}

#[cfg(test)]
mod tests {
    /// A declaration's tokens read as it was written, and parse to the same program.
    #[test]
    fn tokens_read_as_written() {
        let tokens = "dmem float [ [ M / 128 ] [ 8 ] # TA ] AL";
        let written = super::as_written(tokens);
        assert_eq!(written, "dmem float [[M / 128][8]#TA] AL");
        let program = |text: &str| {
            let full = format!("const M = 256; dmem float [16] TA; {text};");
            super::parse_program(&full)
                .map(|p| p.items.len())
                .map_err(|e| e.to_string())
        };
        assert_eq!(program(&written), Ok(3));
        assert_eq!(program(tokens), Ok(3));
        let cuda = "cuda ( float * y , int n ) [ [ HUGE ] [ 2 ] ] [ 32 ] TALL";
        assert_eq!(
            super::as_written(cuda),
            "cuda(float* y, int n) [[HUGE][2]][32] TALL"
        );
        assert_eq!(program(&super::as_written(cuda)), Ok(3));
    }
}
