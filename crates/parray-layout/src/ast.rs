//! The syntax tree of the type language, as written: nothing resolved yet.

use crate::error::TextSpan;
use crate::kinds::{ElemType, MemKind, ThreadKind};

/// A whole source text: constants and declarations in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Program {
    pub items: Vec<Item>,
}

impl Program {
    /// The run-time sizes (`const N;`) and every item whose sizes use one, directly or
    /// through another item, in order: the names whose values are known only when the
    /// program runs.
    pub fn runtime_names(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for item in &self.items {
            let (name, unbound) = match item {
                Item::Const(c) => (&c.name.name, c.value.is_none()),
                Item::Type(t) => (&t.name.name, false),
                Item::Record(r) => (&r.name.name, false),
            };
            let uses = item.names_used().iter().any(|(n, _)| {
                let base = crate::path::DimPath::split(n).name;
                out.iter().any(|o| o == base)
            });
            if unbound || uses {
                out.push(name.clone());
            }
        }
        out
    }

    /// `name` and every name its item uses, directly or through other items.
    pub fn closure(&self, name: &str) -> Vec<String> {
        let mut out = vec![name.to_string()];
        let mut k = 0;
        while let Some(n) = out.get(k).cloned() {
            k += 1;
            let item = self.items.iter().find(|item| item.name().name == n);
            for (used, _) in item.map(Item::names_used).unwrap_or_default() {
                let base = crate::path::DimPath::split(&used).name.to_string();
                if !out.contains(&base) {
                    out.push(base);
                }
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    Const(ConstDecl),
    Type(TypeDecl),
    Record(RecordDecl),
}

/// `record P { float2 pos; int id; }`: a record element type, as a `#[derive(parray::Record)]`
/// struct hands it to the macros that name it.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordDecl {
    pub name: Ident,
    pub record: crate::kinds::Record,
}

/// A name as written, with its position.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Ident {
    pub name: String,
    pub span: TextSpan,
}

/// `const N = 1024`, or `const N;`: a size given when the program runs (a run-time size).
#[derive(Debug, Clone, PartialEq)]
pub struct ConstDecl {
    pub name: Ident,
    /// `None` for a run-time size: its value comes from outside (`Module::build`'s
    /// bindings, the CLI's `--const`, `parray::RuntimeSize::bind`).
    pub value: Option<SizeExpr>,
}

/// `[mem] elem dims NAME`, `#parray {...} NAME`, or a thread array `pthd dims NAME`.
#[derive(Debug, Clone, PartialEq)]
pub struct TypeDecl {
    pub name: Ident,
    pub kind: DeclKind,
    pub dims: Vec<Group>,
    /// The records the declaration names (its element, its parameters' types), as written.
    pub records: Vec<Ident>,
    /// The whole declaration.
    pub span: TextSpan,
}

#[derive(Debug, Clone, PartialEq)]
pub enum DeclKind {
    /// A data type; `mem` is `None` for a pure view; `soa`: its records are stored one
    /// array per field (`dmem soa Particle [N] Q`, SPEC 2.3).
    Data {
        mem: Option<MemKind>,
        elem: ElemType,
        soa: bool,
    },
    Thread(ThreadKind),
}

/// One bracketed group `[ ... ]`.
#[derive(Debug, Clone, PartialEq)]
pub struct Group {
    pub body: GroupBody,
    pub span: TextSpan,
    /// `[n ^ PATH]`: the leaf's digit is XORed with the digit of the leaf `PATH` of the
    /// same type before its stride applies (a swizzle, SPEC 2.5 rule 11). Parsed after
    /// any group body; only a natural leaf may have it (the resolver says so).
    pub xor: Option<Ident>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum GroupBody {
    /// `[n]`: a natural leaf.
    Size(SizeExpr),
    /// `[[a][b]...]`: a compound of groups.
    Compound(Vec<Group>),
    /// `[#R]`, `[n#R]`, `[[a][b]#R]`.
    Ref { shape: RefShape, target: Ident },
}

#[derive(Debug, Clone, PartialEq)]
pub enum RefShape {
    /// `#R`: all of R, with R's children.
    Whole,
    /// `n#R`: the first n elements of R, as a leaf.
    Sized(SizeExpr),
    /// `S#R`: the first |S| elements of R, indexed through the structure S.
    Structured(Vec<Group>),
}

/// An integer size expression: literals, constants, `dim(T)`, `+ - * /`, parentheses.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeExpr {
    pub kind: SizeExprKind,
    pub span: TextSpan,
}

#[derive(Debug, Clone, PartialEq)]
pub enum SizeExprKind {
    Lit(u64),
    Name(String),
    /// `dim(A_1)`: the size of a declared type or sub-dimension (how a subprogram's
    /// declarations take their sizes from its type parameter).
    Dim(Ident),
    Neg(Box<SizeExpr>),
    Bin(SizeOp, Box<SizeExpr>, Box<SizeExpr>),
}

/// An operator of a size expression (`N/16`, `2*M + 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SizeOp {
    Add,
    Sub,
    Mul,
    /// `a / b`, exact: a remainder is an error.
    Div,
    /// `ceil(a / b)`: the number of `b`-sized pieces that cover `a` (a thread array over
    /// data its tile does not divide; the last piece has a tail).
    CeilDiv,
}

/// An index expression `A[[2][i]][k]` naming a type (or sub-dimension) and its indices.
#[derive(Debug, Clone, PartialEq)]
pub struct IndexExpr {
    pub target: Ident,
    pub indices: Vec<Index>,
    pub span: TextSpan,
}

/// One index component: a flat value or a nested list applied to the children of a dimension.
#[derive(Debug, Clone, PartialEq)]
pub enum Index {
    Value(IndexValue, TextSpan),
    Nested(Vec<Index>, TextSpan),
}

impl Index {
    pub fn span(&self) -> TextSpan {
        match self {
            Index::Value(_, s) | Index::Nested(_, s) => *s,
        }
    }
}

/// The expression as [`crate::parse_index_expr`] reads it (`A[[2][i]][k]`): how a form is
/// carried to the place where its type's sizes are known.
impl std::fmt::Display for IndexExpr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.target.name)?;
        self.indices.iter().try_for_each(|i| write!(f, "{i}"))
    }
}

impl std::fmt::Display for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Index::Value(IndexValue::Const(c), _) => write!(f, "[{c}]"),
            Index::Value(IndexValue::Var(v), _) => write!(f, "[{v}]"),
            Index::Nested(list, _) => {
                f.write_str("[")?;
                list.iter().try_for_each(|i| write!(f, "{i}"))?;
                f.write_str("]")
            }
        }
    }
}

/// A flat index value: a constant or a symbolic variable (`i`, `tid_0`).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum IndexValue {
    Const(u64),
    Var(String),
}

impl Item {
    /// The names the item uses (constants in sizes, reference targets such as `A_1`), with
    /// the byte offset of each use, in order.
    pub fn names_used(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        match self {
            Item::Const(c) => {
                if let Some(v) = &c.value {
                    v.names_used(&mut out);
                }
            }
            Item::Type(t) => {
                out.extend(t.records.iter().map(|r| (r.name.clone(), r.span.start)));
                t.dims.iter().for_each(|g| g.names_used(&mut out));
            }
            // The records inside it (declared before it).
            Item::Record(r) => {
                out.extend(r.record.def().fields.iter().filter_map(|f| match f.elem {
                    crate::kinds::ElemType::Record(inner) => {
                        Some((inner.name().to_string(), r.name.span.start))
                    }
                    _ => None,
                }))
            }
        }
        out
    }

    /// The name the item declares.
    pub fn name(&self) -> &Ident {
        match self {
            Item::Const(c) => &c.name,
            Item::Type(t) => &t.name,
            Item::Record(r) => &r.name,
        }
    }
}

impl Group {
    fn names_used(&self, out: &mut Vec<(String, usize)>) {
        // A swizzle's partner is a leaf of the type being declared, not a name it uses.
        match &self.body {
            GroupBody::Size(e) => e.names_used(out),
            GroupBody::Compound(inner) => inner.iter().for_each(|c| c.names_used(out)),
            GroupBody::Ref { shape, target } => {
                match shape {
                    RefShape::Whole => {}
                    RefShape::Sized(e) => e.names_used(out),
                    RefShape::Structured(s) => s.iter().for_each(|c| c.names_used(out)),
                }
                out.push((target.name.clone(), target.span.start));
            }
        }
    }
}

impl SizeExpr {
    /// The constants the expression uses, with the byte offset of each use, in order.
    pub fn names(&self) -> Vec<(String, usize)> {
        let mut out = Vec::new();
        self.names_used(&mut out);
        out
    }

    fn names_used(&self, out: &mut Vec<(String, usize)>) {
        match &self.kind {
            SizeExprKind::Lit(_) => {}
            SizeExprKind::Name(n) => out.push((n.clone(), self.span.start)),
            SizeExprKind::Dim(t) => out.push((t.name.clone(), t.span.start)),
            SizeExprKind::Neg(a) => a.names_used(out),
            SizeExprKind::Bin(_, a, b) => {
                a.names_used(out);
                b.names_used(out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    /// An index as the parser reads one: a constant, a variable, or a nested list.
    fn index() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![
            (0u64..1000).prop_map(|c| format!("[{c}]")),
            "[a-z][a-z0-9_]{0,4}".prop_map(|v| format!("[{v}]")),
        ];
        leaf.prop_recursive(3, 12, 3, |inner| {
            prop::collection::vec(inner, 1..4).prop_map(|l| format!("[{}]", l.concat()))
        })
    }

    proptest! {
        /// What `Display` writes, the parser reads back as the same expression.
        #[test]
        fn an_index_expression_reads_back_as_written(
            name in "[A-Z][A-Z0-9]{0,3}(_[0-9]){0,2}",
            indices in prop::collection::vec(index(), 1..4),
        ) {
            let text = format!("{name}{}", indices.concat());
            let ie = crate::parse_index_expr(&text).unwrap();
            prop_assert_eq!(ie.to_string(), text.clone());
            let again = crate::parse_index_expr(&ie.to_string()).unwrap();
            prop_assert_eq!(again.to_string(), text);
        }
    }
}
