//! The fuzzer's own syntax tree of a detour body: the subset of SPEC.md 3.5 that the
//! generator writes and the evaluator runs, independent of parray-compiler's body IR (a bug
//! shared by the two would otherwise go unseen).

/// A scalar type of a body. `Usize` is 64 bits on pthd threads and 32 in a cuda body.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Ty {
    I8,
    U8,
    I32,
    U32,
    I64,
    U64,
    Usize,
    Bool,
}

impl Ty {
    pub const INTS: [Ty; 7] = [
        Ty::I8,
        Ty::U8,
        Ty::I32,
        Ty::U32,
        Ty::I64,
        Ty::U64,
        Ty::Usize,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Ty::I8 => "i8",
            Ty::U8 => "u8",
            Ty::I32 => "i32",
            Ty::U32 => "u32",
            Ty::I64 => "i64",
            Ty::U64 => "u64",
            Ty::Usize => "usize",
            Ty::Bool => "bool",
        }
    }

    pub fn signed(self) -> bool {
        matches!(self, Ty::I8 | Ty::I32 | Ty::I64)
    }

    /// The width in bits, `usize_bits` for `usize`.
    pub fn bits(self, usize_bits: u32) -> u32 {
        match self {
            Ty::I8 | Ty::U8 => 8,
            Ty::I32 | Ty::U32 => 32,
            Ty::I64 | Ty::U64 => 64,
            Ty::Usize => usize_bits,
            Ty::Bool => 1,
        }
    }
}

/// The element type of a body's output array (and of its shared array).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Elem {
    Int,
    Unsigned,
    Long,
    UChar,
}

impl Elem {
    pub const ALL: [Elem; 4] = [Elem::Int, Elem::Unsigned, Elem::Long, Elem::UChar];

    /// The keyword in a `parray!` declaration.
    pub fn keyword(self) -> &'static str {
        match self {
            Elem::Int => "int",
            Elem::Unsigned => "unsigned",
            Elem::Long => "long",
            Elem::UChar => "uchar",
        }
    }

    pub fn ty(self) -> Ty {
        match self {
            Elem::Int => Ty::I32,
            Elem::Unsigned => Ty::U32,
            Elem::Long => Ty::I64,
            Elem::UChar => Ty::U8,
        }
    }

    /// `atomic_add` takes `int`, `unsigned` and `long` elements.
    pub fn atomic(self) -> bool {
        self != Elem::UChar
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    Xor,
    Shl,
    Shr,
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    LAnd,
    LOr,
}

impl BinOp {
    /// The arithmetic, bit and shift operators (those of compound assignment too).
    pub const ARITHMETIC: [BinOp; 10] = [
        BinOp::Add,
        BinOp::Sub,
        BinOp::Mul,
        BinOp::Div,
        BinOp::Rem,
        BinOp::And,
        BinOp::Or,
        BinOp::Xor,
        BinOp::Shl,
        BinOp::Shr,
    ];

    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&",
            BinOp::Or => "|",
            BinOp::Xor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::LAnd => "&&",
            BinOp::LOr => "||",
        }
    }

    /// Rust's precedence, higher binds tighter.
    pub fn prec(self) -> u8 {
        match self {
            BinOp::LOr => 1,
            BinOp::LAnd => 2,
            BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge | BinOp::Eq | BinOp::Ne => 3,
            BinOp::Or => 4,
            BinOp::Xor => 5,
            BinOp::And => 6,
            BinOp::Shl | BinOp::Shr => 7,
            BinOp::Add | BinOp::Sub => 8,
            BinOp::Mul | BinOp::Div | BinOp::Rem => 9,
        }
    }

    pub fn comparison(self) -> bool {
        self.prec() == 3
    }
}

/// One dimension of a declared type: a leaf of `n` elements or a group of children.
#[derive(Clone, Debug)]
pub enum Dim {
    Leaf(u32),
    Group(Vec<Dim>),
}

impl Dim {
    pub fn size(&self) -> u32 {
        match self {
            Dim::Leaf(n) => *n,
            Dim::Group(c) => c.iter().map(Dim::size).product(),
        }
    }

    /// The declaration text: `[4]`, `[[2][2]]`.
    pub fn text(&self) -> String {
        match self {
            Dim::Leaf(n) => format!("[{n}]"),
            Dim::Group(c) => format!("[{}]", c.iter().map(Dim::text).collect::<String>()),
        }
    }
}

/// An index of one dimension in a `$T[...]$` form: flat, or one per child of a group.
#[derive(Clone, Debug)]
pub enum Index {
    Flat(Expr),
    Group(Vec<Index>),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Tid {
    /// `$tid$`
    Flat,
    /// `$tid_0$`, the block (pthd: the row)
    Block,
    /// `$tid_1$`, the thread in its block
    Thread,
}

#[derive(Clone, Debug)]
pub enum Expr {
    /// An integer literal of its type; `suffix: false` leaves the type to inference.
    Lit {
        v: i128,
        ty: Ty,
        suffix: bool,
    },
    Bool(bool),
    Var(usize),
    Tid(Tid),
    Neg(Box<Expr>),
    Not(Box<Expr>),
    Bin(BinOp, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Ty),
    If(Box<Expr>, Box<Expr>, Box<Expr>),
    /// Parentheses the printer would not need.
    Paren(Box<Expr>),
    /// `$T[...]$` of the body's declared type number `decl`.
    Offset(usize, Vec<Index>),
    /// This thread's output element `out[$tid$ * K + j]`, `j` a `usize` below K.
    Out(Box<Expr>),
    /// The shared array: `s[$tid_1$]` (None) or `s[e % THREADS]`.
    Shared(Option<Box<Expr>>),
}

#[derive(Clone, Debug)]
pub enum Stmt {
    Let {
        var: usize,
        ty: Ty,
        mutable: bool,
        annotate: bool,
        init: Expr,
    },
    Assign {
        var: usize,
        op: Option<BinOp>,
        e: Expr,
    },
    /// `out[$tid$ * K + j] op= e`
    Store {
        j: Expr,
        op: Option<BinOp>,
        e: Expr,
    },
    /// `s[$tid_1$] op= e`
    SharedStore {
        op: Option<BinOp>,
        e: Expr,
    },
    If {
        c: Expr,
        then: Vec<Stmt>,
        els: Option<Vec<Stmt>>,
    },
    /// `let mut wN = 0i32; while wN < limit [&& c] { wN += 1; body }`: the counter
    /// first, so that `continue` cannot skip it.
    While {
        counter: usize,
        limit: i32,
        c: Option<Expr>,
        body: Vec<Stmt>,
    },
    For {
        var: usize,
        ty: Ty,
        lo: Expr,
        hi: Expr,
        inclusive: bool,
        body: Vec<Stmt>,
    },
    Break,
    Continue,
    Return,
    /// `atomic_add(out + (OWNED + slot), v);`
    Atomic {
        slot: usize,
        v: Expr,
    },
    Sync,
    /// `let vN = shfl_down(x, d);`
    Shfl {
        var: usize,
        ty: Ty,
        x: Expr,
        d: Expr,
    },
}

/// A generated body and the arrays it runs on.
#[derive(Clone, Debug)]
pub struct Body {
    pub blocks: u32,
    pub threads: u32,
    /// Output elements each thread owns.
    pub per_thread: u32,
    /// Output elements after the owned ones, updated only by `atomic_add`.
    pub atomics: u32,
    pub elem: Elem,
    /// The declared types of its `$...$` forms (dimensions of each).
    pub decls: Vec<Vec<Dim>>,
    /// The element type of its shared array, if it creates one (a cuda-only body).
    pub shared: Option<Elem>,
    /// Whether it has `#sync`, a shared array or a shuffle: it runs on cuda grids only.
    pub collective: bool,
    pub stmts: Vec<Stmt>,
}

impl Body {
    pub fn owned(&self) -> u32 {
        self.blocks * self.threads * self.per_thread
    }

    pub fn len(&self) -> u32 {
        self.owned() + self.atomics
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
