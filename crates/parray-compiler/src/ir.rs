//! The body IR: a detour body, lowered once from Rust syntax, typed once, then written
//! for every back end (Rust for pthd threads and the CPU emulation of cuda grids, CUDA C
//! for the GPU).
//!
//! The front end (parray-front's `lower`) resolves names to [`LocalId`]s and compiles the
//! `$...$` forms; the type check (`passes::check`) infers and checks types with Rust's
//! rules (unsuffixed literals take their type from use, else `i32`/`f64`); the back ends
//! (`back`) print the proved body. The IR uses no pass: the passes use it. Spans are data: each node keeps the user's span, so errors,
//! `#line` directives and panics point at the user's code.

// The type language's values a body holds, named here so that the IR is one vocabulary
// (`embed` rebuilds a body from these paths).
pub use parray_layout::expr::{LinearForm, Term, VarId, Vars};
pub use parray_layout::grid::{HwIndex, ThreadIndex};
pub use parray_layout::kinds::{ElemType, MemKind, Param, Record};
pub use parray_layout::offsets::Offset;
pub use parray_layout::symbolic::Poly;
pub use parray_layout::tma::{TmaDim, TmaPlan};
pub use parray_layout::Swizzle;

pub use crate::mma::Descriptor;
pub use crate::number_const::{NumberConst, NUMBER_CONSTS};
pub use crate::CodeSpan;

/// Which threads run the body.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// CPU threads: Rust only; the body may capture host variables.
    Pthd,
    /// A CUDA grid: CUDA C on the GPU and the same body as Rust on the CPU emulation; the
    /// body sees only its kernel parameters and its own locals.
    Cuda,
}

/// A scalar type of the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scalar {
    Bool,
    I8,
    U8,
    I32,
    U32,
    I64,
    U64,
    /// Rust's index type. In a cuda body it is 32 bits wide on every back end (CUDA's
    /// `unsigned`, the emulator's `u32`), as index arithmetic on a GPU should be.
    Usize,
    F32,
    F64,
    /// IEEE binary16 (`half::f16`, CUDA's `__half`). Arithmetic on it is computed in `f32`
    /// and rounded back, on every back end ([`crate::passes::widen`]).
    F16,
    /// bfloat16 (`half::bf16`, CUDA's `__nv_bfloat16`), computed as [`Scalar::F16`] is.
    Bf16,
}

impl Scalar {
    pub const ALL: [Scalar; 12] = [
        Scalar::Bool,
        Scalar::I8,
        Scalar::U8,
        Scalar::I32,
        Scalar::U32,
        Scalar::I64,
        Scalar::U64,
        Scalar::Usize,
        Scalar::F32,
        Scalar::F64,
        Scalar::F16,
        Scalar::Bf16,
    ];

    /// The Rust name as written in a body (`usize` for [`Scalar::Usize`]).
    pub fn rust_name(self) -> &'static str {
        match self {
            Scalar::Bool => "bool",
            Scalar::I8 => "i8",
            Scalar::U8 => "u8",
            Scalar::I32 => "i32",
            Scalar::U32 => "u32",
            Scalar::I64 => "i64",
            Scalar::U64 => "u64",
            Scalar::Usize => "usize",
            Scalar::F32 => "f32",
            Scalar::F64 => "f64",
            Scalar::F16 => "f16",
            Scalar::Bf16 => "bf16",
        }
    }

    pub fn from_rust_name(s: &str) -> Option<Scalar> {
        Scalar::ALL.into_iter().find(|t| t.rust_name() == s)
    }

    pub fn is_int(self) -> bool {
        !matches!(self, Scalar::Bool) && !self.is_float()
    }

    pub fn is_float(self) -> bool {
        matches!(self, Scalar::F32 | Scalar::F64) || self.is_half()
    }

    /// `f16` or `bf16`: a 16-bit float, stored as such and computed in `f32`.
    pub fn is_half(self) -> bool {
        matches!(self, Scalar::F16 | Scalar::Bf16)
    }

    pub fn is_signed(self) -> bool {
        matches!(self, Scalar::I8 | Scalar::I32 | Scalar::I64)
    }

    /// The scalar an element of this type is, for scalar elements.
    pub fn of_elem(e: ElemType) -> Option<Scalar> {
        Some(match e {
            ElemType::Float => Scalar::F32,
            ElemType::Double => Scalar::F64,
            ElemType::Int => Scalar::I32,
            ElemType::Unsigned => Scalar::U32,
            ElemType::Char => Scalar::I8,
            ElemType::UChar => Scalar::U8,
            ElemType::Long => Scalar::I64,
            ElemType::Half => Scalar::F16,
            ElemType::Bf16 => Scalar::Bf16,
            _ => return None,
        })
    }
}

/// A type of the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Ty {
    Scalar(Scalar),
    /// `Float2`, `Float4`, `Double2`, `Int2`, `Int4`.
    Vector(ElemType),
    /// A record (`#[derive(parray::Record)]`): its fields are read by name, and written
    /// by name in a local or an element.
    Record(Record),
    /// A pointer into an array of elements (a kernel parameter, a captured buffer moved
    /// by `p + off`); `soa`: into a record array stored one array per field (SPEC 2.3).
    Ptr {
        elem: ElemType,
        soa: bool,
    },
    /// An array created in the body: `smem` (one per block) or `rmem` (one per thread);
    /// `soa`: a shared record array kept one array per field (SPEC 2.3).
    Array {
        elem: ElemType,
        mem: MemKind,
        len: Len,
        soa: bool,
    },
    /// Statements and expressions that give no value.
    Unit,
    /// A host value captured by a pthd body: rustc types it.
    Host,
    /// The type parameter of a generic function's instance (`T` of `fn sq<T:
    /// parray::Num>(x: T) -> T`), numbered in the body ([`Function::generics`]): only
    /// before the type check, which gives each the number type its call gives it.
    Generic(u32),
    /// A pointer to the elements of a type parameter (`a: parray::Ptr<'_, T>`): before
    /// the type check the parameter's number (as [`Ty::Generic`]), while it runs that
    /// parameter's inference variable (the same number); the check makes it a
    /// [`Ty::Ptr`] to the element its instance has.
    PtrTo(u32),
    /// An inference variable (only while the type check runs).
    Infer(u32),
}

impl Ty {
    pub const USIZE: Ty = Ty::Scalar(Scalar::Usize);
    pub const BOOL: Ty = Ty::Scalar(Scalar::Bool);

    /// The value type of one element of type `e`.
    pub fn of_elem(e: ElemType) -> Ty {
        match (Scalar::of_elem(e), e) {
            (Some(s), _) => Ty::Scalar(s),
            (None, ElemType::Record(r)) => Ty::Record(r),
            (None, _) => Ty::Vector(e),
        }
    }

    /// The value type of the kernel parameter `p`: a pointer, or one element.
    pub fn of_param(p: &Param) -> Ty {
        match p.pointer {
            true => Ty::Ptr {
                elem: p.elem,
                soa: p.soa,
            },
            false => Ty::of_elem(p.elem),
        }
    }

    pub fn scalar(self) -> Option<Scalar> {
        match self {
            Ty::Scalar(s) => Some(s),
            _ => None,
        }
    }

    /// The element a value of this type is, if it is one (the inverse of
    /// [`Ty::of_elem`]): a number but `bool`, `u64` and `usize`, a vector, a record.
    pub fn as_elem(self) -> Option<ElemType> {
        match self {
            Ty::Scalar(s) => ElemType::ALL
                .into_iter()
                .find(|e| Scalar::of_elem(*e) == Some(s)),
            Ty::Vector(v) => Some(v),
            Ty::Record(r) => Some(ElemType::Record(r)),
            _ => None,
        }
    }
}

impl std::fmt::Display for Ty {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Ty::Scalar(s) => f.write_str(s.rust_name()),
            Ty::Vector(e) => f.write_str(e.rust_type()),
            Ty::Record(r) => f.write_str(r.name()),
            Ty::Ptr { elem, soa: false } => write!(f, "a pointer to {}", elem.rust_type()),
            Ty::Ptr { elem, soa: true } => {
                write!(
                    f,
                    "a pointer to {} kept one array per field",
                    elem.rust_type()
                )
            }
            Ty::Array {
                elem,
                mem,
                len: Len::Fixed(len),
                ..
            } => write!(f, "a {mem} array of {len} {}", elem.rust_type()),
            Ty::Array {
                elem,
                mem,
                len: Len::AtRunTime,
                ..
            } => write!(f, "a {mem} array of {} sized at run time", elem.rust_type()),
            Ty::Unit => f.write_str("()"),
            Ty::Host => f.write_str("a host value"),
            Ty::Generic(_) => f.write_str("{type parameter}"),
            Ty::PtrTo(_) => f.write_str("a pointer to a type parameter"),
            Ty::Infer(_) => f.write_str("{number}"),
        }
    }
}

/// Where a node comes from: the user's tokens, and their line (0: unknown) for `#line`.
#[derive(Debug, Clone, Copy)]
pub struct Loc {
    pub span: CodeSpan,
    pub line: u32,
}

/// A local of the body: a kernel parameter, a `let`, a `for` variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LocalId(pub u32);

#[derive(Debug, Clone)]
pub struct Local {
    /// The user's name (the emitters may rename to avoid C redeclarations).
    pub name: String,
    pub span: CodeSpan,
    pub mutable: bool,
    /// Declared (`let x: f32`) or inferred by the type check.
    pub ty: Option<Ty>,
    /// A kernel parameter (bound by the launch, not by a `let`).
    pub param: bool,
}

/// A body after lowering.
#[derive(Debug, Clone)]
pub struct Body {
    pub target: Target,
    /// The thread array's name (kernel names and error messages).
    pub array: String,
    /// The user's file, for `#line`.
    pub file: String,
    /// The kernel parameters, in order; each is also a local.
    pub params: Vec<(Param, LocalId)>,
    /// Host values a cuda body reads (names that are neither its locals nor its
    /// parameters): each is a kernel parameter after the declared ones, passed by value
    /// at the launch, typed by the body's uses of it (the type check's post-condition).
    pub captures: Vec<LocalId>,
    /// The functions the body calls (`#[parray::func]`), each callee before its callers;
    /// [`ExprKind::Call`] names one by its index. Their locals are the body's.
    pub functions: Vec<Function>,
    /// The type parameters of the generic instances the body has, by their number
    /// ([`Ty::Generic`]), each with its bound: those of each call of a generic function
    /// (in [`Body::functions`]) and of each inlined call of a collective one (its
    /// statements the body's own).
    pub type_params: Vec<(String, Bound)>,
    pub locals: Vec<Local>,
    /// Thread indices the body uses (`""` for `tid`, `"0_1"` for `tid_0_1`), with their
    /// expressions of the hardware indices, in first-use order.
    pub tids: Vec<(String, ThreadIndex)>,
    /// The thread indices are the launch's (a grid sized at run time: its kernel maps
    /// them to the hardware's at the bound sizes), which the CPU emulation evaluates as
    /// given, not `tids` as compiled at the probe.
    pub tids_at_launch: bool,
    pub stmts: Vec<Stmt>,
    /// CUDA's `__launch_bounds__`: the threads of a block and the blocks a multiprocessor
    /// must hold at once (`#![min_blocks_per_sm(N)]`), which caps the registers a thread
    /// may take.
    pub launch_bounds: Option<(u32, u32)>,
    /// The parameters the kernel reads from constant memory (arrays of cmem types), with
    /// the elements each needs: found by the prover, declared `__constant__` by the
    /// C back end, filled by the launch.
    pub constants: Vec<(LocalId, u64)>,
}

impl Function {
    /// Whether its statements assign `local` (`x = ...`, `x += ...`).
    pub fn assigns(&self, local: LocalId) -> bool {
        assigns(&self.stmts, local)
    }

    /// Whether it takes a pointer (and so, in C, the extents of its pointers' arrays and
    /// the fault record).
    pub fn has_pointers(&self, body: &Body) -> bool {
        self.params
            .iter()
            .any(|p| matches!(body.local(*p).ty, Some(Ty::Ptr { .. })))
    }
}

impl Body {
    /// `f` on every expression of the kernel and of its functions.
    pub fn visit_every_expr(&self, f: &mut dyn FnMut(&Expr)) {
        visit_exprs(&self.stmts, f);
        for function in &self.functions {
            visit_exprs(&function.stmts, f);
            if let Some(v) = &function.value {
                visit_expr(v, f);
            }
        }
    }

    pub fn local(&self, id: LocalId) -> &Local {
        &self.locals[id.0 as usize]
    }

    /// Whether the body assigns `local` anywhere (`x = ...`, `x += ...`).
    pub fn assigns(&self, local: LocalId) -> bool {
        assigns(&self.stmts, local)
    }

    /// The run-time constants the body names ([`ExprKind::RuntimeConst`]), each once, in
    /// order of first use: the detour reads their values when it starts.
    pub fn runtime_consts(&self) -> Vec<String> {
        let mut names: Vec<String> = Vec::new();
        visit_exprs(&self.stmts, &mut |e| {
            if let ExprKind::RuntimeConst { name, .. } = &e.kind {
                if !names.contains(name) {
                    names.push(name.clone());
                }
            }
        });
        names
    }

    /// Whether the body has a collective statement anywhere (a `#sync`, a `shfl_down`):
    /// the emulation then runs its blocks' threads in lockstep.
    pub fn collective(&self) -> bool {
        self.stmts.iter().any(Stmt::is_collective)
    }

    /// Each shared array the body creates with its byte offset in the block's shared
    /// memory (16-byte aligned, in creation order), and the bytes of all of them. An
    /// array of a type sized at run time ([`Len::AtRunTime`]) is left out: its bytes are
    /// known once the body is specialised at the bound sizes, which makes its `len` a
    /// number.
    pub fn shared_layout(&self) -> (Vec<(LocalId, u64)>, u64) {
        let align = self.shared_alignment();
        let mut at = Vec::new();
        let mut total = 0u64;
        visit_stmts(&self.stmts, &mut |s| {
            if let Stmt::Create {
                local,
                elem,
                mem: MemKind::Smem,
                len: Len::Fixed(len),
                soa,
                ..
            } = s
            {
                let start = total.next_multiple_of(align);
                at.push((*local, start));
                total = start + shared_bytes(*elem, *len, *soa);
            }
        });
        (at, total)
    }

    /// The alignment in bytes of the body's shared arrays: 16 (every vector), or the
    /// largest a wgmma operand's descriptor needs (2^(7+B) for a B-swizzled tile: the
    /// hardware XORs absolute address bits), since an operand may be any array plus an
    /// offset.
    pub fn shared_alignment(&self) -> u64 {
        let mut align = 16;
        visit_stmts(&self.stmts, &mut |s| {
            match s {
                Stmt::Mma { wgmma: Some(w), .. } => {
                    align = align.max(w.a.alignment()).max(w.b.alignment());
                }
                // TMA writes a box at a multiple of 128 bytes (2^(7+B) swizzled).
                Stmt::Tma { tma, .. } => align = align.max(tma.swizzle.atom_bytes()),
                _ => {}
            }
        });
        align
    }

    /// The body's TMA copies (SPEC 3.9, "TMA copies"), in the order of their maps
    /// ([`Tma::map`]): each a `const __grid_constant__ parray_tensor_map` parameter of the
    /// kernel after all others, which the launch encodes over its source's array.
    pub fn tma_copies(&self) -> Vec<Tma> {
        let mut found = Vec::new();
        visit_stmts(&self.stmts, &mut |s| {
            if let Stmt::Tma { tma, .. } = s {
                found.push((**tma).clone());
            }
        });
        found.sort_by_key(|t| t.map);
        found
    }

    /// Bytes of dynamic shared memory a kernel of this body is launched with: none when its
    /// shared arrays fit the [`STATIC_SHARED_BYTES`] a kernel may declare; otherwise all of
    /// them (the kernel then opts in to more, up to the device's limit).
    pub fn dynamic_shared_bytes(&self) -> u64 {
        match self.shared_layout().1 {
            total if total > STATIC_SHARED_BYTES => total,
            _ => 0,
        }
    }
}

/// The number of elements of an array a body creates (`let s = S::create();`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Len {
    /// A number: `S`'s sizes are literals, or the body is specialised at bound sizes.
    Fixed(u64),
    /// `S`'s extent, its sizes given at run time: read when the detour starts on the CPU
    /// (`<S as DataType>::extent()`), a number in the kernel specialised at them.
    AtRunTime,
}

impl Len {
    /// The number, where it is one.
    pub fn fixed(self) -> Option<u64> {
        match self {
            Len::Fixed(n) => Some(n),
            Len::AtRunTime => None,
        }
    }
}

/// The most bytes a register array sized at run time may have (`rmem`, SPEC 3.1): a
/// thread's 255 registers of 4 bytes. A larger array would live in local memory.
pub const MAX_REGISTER_BYTES: u64 = 255 * 4;

/// The bytes of a shared array of `len` elements of `elem`: whole, or (`soa`, a record's)
/// its fields' arrays, each at a multiple of 16 bytes.
pub fn shared_bytes(elem: ElemType, len: u64, soa: bool) -> u64 {
    match (soa, elem) {
        (true, ElemType::Record(r)) => r.soa_bytes(len, MemKind::Smem.soa_align()),
        _ => len * elem.size_bytes(),
    }
}

/// The bound of a generic function's type parameter (`T: parray::Num`): the types it
/// takes, each kind the one before it and more.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Bound {
    /// `parray::Element`: any element (a number but `bool`, `u64` and `usize`, a vector, a
    /// record), which the function moves, stores and loads but computes nothing on.
    Element,
    /// `parray::Num`: a number but `bool`, with the operators and conversions.
    Num,
    /// `parray::Float`: a float, with the math methods too.
    Float,
}

impl Bound {
    /// The trait's name, as written (`parray::Num`).
    pub fn trait_name(self) -> &'static str {
        match self {
            Bound::Element => "parray::Element",
            Bound::Num => "parray::Num",
            Bound::Float => "parray::Float",
        }
    }
}

/// A function of the body language (`#[parray::func] fn gelu(x: f32) -> f32 { ... }`),
/// lowered into the calling body: it computes on its parameters (numbers and vectors) and
/// its locals, and gives the value of its last expression.
///
/// A generic function (`fn sq<T: parray::Num>(x: T) -> T`) is lowered once per call, an
/// instance whose type parameters are [`Ty::Generic`]; the type check gives each its type
/// and keeps one instance per function and types, named by them (`sq_f32`).
#[derive(Debug, Clone)]
pub struct Function {
    /// The name the body calls it by (an instance's: with its types, after the check).
    pub name: String,
    pub span: CodeSpan,
    /// Its type parameters' names, each with its type: [`Ty::Generic`] before the type
    /// check, the number type of the instance after it. Empty for a plain function.
    pub generics: Vec<(String, Ty)>,
    /// The types its call gives its type parameters by turbofish (`f::<bf16>(n)`), each
    /// with the span of the type written; `None` for `_` or none written (the arguments
    /// type it then). A generic function is lowered anew at each call, so they are this
    /// instance's alone; a type parameter of the caller is its [`Ty::Generic`].
    pub type_args: Vec<Option<(Ty, CodeSpan)>>,
    /// Its parameters, locals of the body with their declared types.
    pub params: Vec<LocalId>,
    /// The pointer parameters it may write through (`parray::PtrMut`); its other pointer
    /// parameters only read (`parray::Ptr`).
    pub writable: Vec<LocalId>,
    /// The declared return type ([`Ty::Unit`] for none).
    pub ret: Ty,
    pub stmts: Vec<Stmt>,
    /// The last expression, the function's value.
    pub value: Option<Expr>,
}

/// Where an access's array comes from (what the prover follows it to).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Root {
    /// A kernel parameter or an array created in the body.
    Local(LocalId),
    /// A host variable captured by a pthd body (a single identifier or a path).
    Capture(String),
}

/// Shared memory a CUDA kernel may declare statically; beyond it, arrays live in dynamic
/// shared memory.
pub const STATIC_SHARED_BYTES: u64 = 48 * 1024;

/// Whether `stmts` assign `local` anywhere (`x = ...`, `x += ...`).
fn assigns(stmts: &[Stmt], local: LocalId) -> bool {
    let mut found = false;
    visit_exprs(stmts, &mut |e| {
        if let ExprKind::Assign(_, place, _) = &e.kind {
            found |= matches!(place.kind, ExprKind::Local(id) if id == local);
        }
    });
    found
}

/// Applies `f` to `e` and every expression inside it, outermost first.
pub fn visit_expr(e: &Expr, f: &mut dyn FnMut(&Expr)) {
    f(e);
    e.for_each_child(&mut |c| visit_expr(c, f));
}

/// Applies `f` to every expression of `stmts`, outermost first.
pub fn visit_exprs<'s>(stmts: impl IntoIterator<Item = &'s Stmt>, f: &mut dyn FnMut(&Expr)) {
    for s in stmts {
        s.for_each_part(&mut |part| match part {
            Part::Expr(e) => visit_expr(e, f),
            Part::Body(b) => visit_exprs(b, f),
        });
    }
}

/// [`visit_expr`], mutably.
pub fn visit_expr_mut(e: &mut Expr, f: &mut dyn FnMut(&mut Expr)) {
    f(e);
    e.for_each_child_mut(&mut |c| visit_expr_mut(c, f));
}

/// [`visit_exprs`], mutably: `f` on every expression of `stmts`, outermost first.
pub fn visit_exprs_mut(stmts: &mut [Stmt], f: &mut dyn FnMut(&mut Expr)) {
    for s in stmts {
        s.for_each_part_mut(&mut |part| match part {
            PartMut::Expr(e) => visit_expr_mut(e, f),
            PartMut::Body(b) => visit_exprs_mut(b, f),
        });
    }
}

/// Applies `f` to every statement of `stmts`, nested ones included, outermost first.
pub fn visit_stmts<'s>(stmts: impl IntoIterator<Item = &'s Stmt>, f: &mut dyn FnMut(&Stmt)) {
    for s in stmts {
        f(s);
        s.for_each_part(&mut |part| {
            if let Part::Body(b) = part {
                visit_stmts(b, f);
            }
        });
    }
}

/// A direct part of a statement: one of its own expressions, or a nested statement list.
pub enum Part<'s> {
    Expr(&'s Expr),
    Body(&'s [Stmt]),
}

/// [`Part`], mutably.
pub enum PartMut<'s> {
    Expr(&'s mut Expr),
    Body(&'s mut [Stmt]),
}

/// The direct parts of a statement (borrowed as `$stmt` is), each given to `$f` as
/// `$part`, in evaluation order: one list for the shared and the mutable walk.
macro_rules! stmt_parts {
    ($stmt:expr, $f:ident, $part:ident, $iter:ident) => {
        match $stmt {
            Stmt::Let { init, .. } => init.$iter().for_each(|e| $f($part::Expr(e))),
            Stmt::Expr { expr, .. } => $f($part::Expr(expr)),
            Stmt::If {
                cond, then, els, ..
            } => {
                $f($part::Expr(cond));
                $f($part::Body(then));
                if let Some(e) = els {
                    $f($part::Body(e));
                }
            }
            Stmt::While { cond, body, .. } => {
                $f($part::Expr(cond));
                $f($part::Body(body));
            }
            Stmt::For {
                start, end, body, ..
            } => {
                $f($part::Expr(start));
                $f($part::Expr(end));
                $f($part::Body(body));
            }
            Stmt::Block { body, .. } | Stmt::Async { body, .. } => $f($part::Body(body)),
            Stmt::Vectorised {
                vector,
                scalar,
                guard,
                ..
            } => {
                $f($part::Body(vector));
                $f($part::Body(scalar));
                if let Some(Guard {
                    pred,
                    unguarded,
                    at_most,
                    per_vector,
                    whole,
                    ..
                }) = guard
                {
                    $f($part::Expr(pred));
                    $f($part::Body(unguarded));
                    $f($part::Expr(at_most));
                    $f($part::Body(per_vector));
                    if let Some(WholeVectors {
                        first, last, moves, ..
                    }) = whole
                    {
                        $f($part::Expr(first));
                        $f($part::Expr(last));
                        $f($part::Body(moves));
                    }
                }
            }
            Stmt::GenericCopy { scalar, .. } => $f($part::Body(scalar)),
            Stmt::Print { args, .. } => args.$iter().for_each(|a| $f($part::Expr(a))),
            Stmt::Mma { d, a, b, .. } => {
                $f($part::Expr(a));
                $f($part::Expr(b));
                $f($part::Expr(d));
            }
            Stmt::MmaWait { d, .. } => $f($part::Expr(d)),
            Stmt::Tma {
                src,
                offset,
                dst,
                bar,
                ..
            } => {
                $f($part::Expr(src));
                $f($part::Expr(offset));
                $f($part::Expr(dst));
                $f($part::Expr(bar));
            }
            Stmt::MbarrierInit { bar, arrivals, .. } => {
                $f($part::Expr(bar));
                $f($part::Expr(arrivals));
            }
            Stmt::MbarrierArrive { bar, .. } => $f($part::Expr(bar)),
            Stmt::MbarrierWait { bar, parity, .. } => {
                $f($part::Expr(bar));
                $f($part::Expr(parity));
            }
            Stmt::Matrices {
                regs,
                base,
                at,
                scalar,
                ..
            } => {
                $f($part::Expr(base));
                $f($part::Expr(at));
                $f($part::Expr(regs));
                $f($part::Body(scalar));
            }
            Stmt::Create { .. }
            | Stmt::Sync { .. }
            | Stmt::Wait { .. }
            | Stmt::MmaCommit { .. }
            | Stmt::SetMaxNreg { .. }
            | Stmt::Break { .. }
            | Stmt::Continue { .. }
            | Stmt::Return { .. } => {}
        }
    };
}

impl Stmt {
    /// Applies `f` to each direct part of the statement, in evaluation order.
    pub fn for_each_part<'s>(&'s self, f: &mut dyn FnMut(Part<'s>)) {
        stmt_parts!(self, f, Part, iter)
    }

    /// [`Stmt::for_each_part`], mutably.
    pub fn for_each_part_mut<'s>(&'s mut self, f: &mut dyn FnMut(PartMut<'s>)) {
        stmt_parts!(self, f, PartMut, iter_mut)
    }

    /// Where the statement is in the user's source.
    pub fn loc(&self) -> Loc {
        let (Stmt::Let { loc, .. }
        | Stmt::Create { loc, .. }
        | Stmt::Expr { loc, .. }
        | Stmt::If { loc, .. }
        | Stmt::While { loc, .. }
        | Stmt::For { loc, .. }
        | Stmt::Block { loc, .. }
        | Stmt::Vectorised { loc, .. }
        | Stmt::GenericCopy { loc, .. }
        | Stmt::Sync { loc }
        | Stmt::Async { loc, .. }
        | Stmt::Wait { loc, .. }
        | Stmt::Break { loc }
        | Stmt::Continue { loc }
        | Stmt::Return { loc }
        | Stmt::Print { loc, .. }
        | Stmt::Mma { loc, .. }
        | Stmt::MmaWait { loc, .. }
        | Stmt::MmaCommit { loc }
        | Stmt::SetMaxNreg { loc, .. }
        | Stmt::Matrices { loc, .. }
        | Stmt::Tma { loc, .. }
        | Stmt::MbarrierInit { loc, .. }
        | Stmt::MbarrierArrive { loc, .. }
        | Stmt::MbarrierWait { loc, .. }) = self;
        *loc
    }

    /// Whether this statement, at any depth, is one the threads of a block execute
    /// together: a `#sync`, a `#mma` (its commit and wait too), an `ldmatrix` or
    /// `stmatrix`, a `#wait .. parity` (in the emulation's lockstep, SPEC 3.9), or one
    /// whose expressions hold a `shfl_down`.
    pub fn is_collective(&self) -> bool {
        let mut found = matches!(
            self,
            Stmt::Sync { .. }
                | Stmt::Mma { .. }
                | Stmt::MmaWait { .. }
                | Stmt::MmaCommit { .. }
                | Stmt::SetMaxNreg { .. }
                | Stmt::Matrices { .. }
                | Stmt::MbarrierWait { .. }
        );
        self.for_each_part(&mut |part| match part {
            Part::Body(b) => found |= b.iter().any(Stmt::is_collective),
            Part::Expr(e) => found |= e.shuffles(),
        });
        found
    }
}

#[derive(Debug, Clone)]
pub enum Stmt {
    Let {
        local: LocalId,
        init: Option<Expr>,
        loc: Loc,
    },
    /// `let s = S::create();` of an smem or rmem type.
    Create {
        local: LocalId,
        type_name: String,
        elem: ElemType,
        mem: MemKind,
        len: Len,
        /// A shared record array kept one array per field (SPEC 2.3).
        soa: bool,
        /// The shared array's number in the body (smem only).
        slot: usize,
        loc: Loc,
    },
    Expr {
        expr: Expr,
        loc: Loc,
    },
    If {
        cond: Expr,
        then: Vec<Stmt>,
        els: Option<Vec<Stmt>>,
        loc: Loc,
    },
    While {
        cond: Expr,
        body: Vec<Stmt>,
        loc: Loc,
    },
    For {
        var: LocalId,
        start: Expr,
        end: Expr,
        inclusive: bool,
        /// `#[unroll]` (`Some(None)`) or `#[unroll(N)]`.
        unroll: Option<Option<u32>>,
        body: Vec<Stmt>,
        loc: Loc,
    },
    Block {
        body: Vec<Stmt>,
        loc: Loc,
    },
    /// `#sync`: the block's (cuda) or the array's (pthd) barrier.
    Sync {
        loc: Loc,
    },
    /// `#copy async` (SPEC 3.9, "Asynchronous copies"): `body` is the copy's moves (from
    /// global memory into a shared array the body created) and fills, which the thread
    /// starts and commits as one group of its copies in flight: a CUDA back end writes
    /// each move as a `cp.async`, the emulation lands them at the thread's `#wait`, HIP
    /// and pthd bodies move them at once.
    Async {
        body: Vec<Stmt>,
        loc: Loc,
    },
    /// `#wait N`: the thread waits until at most `groups` of its `#copy async` groups are
    /// in flight (`cp.async.wait_group`).
    Wait {
        groups: u32,
        loc: Loc,
    },
    Break {
        loc: Loc,
    },
    Continue {
        loc: Loc,
    },
    Return {
        loc: Loc,
    },
    /// A `#copy` with a fast path: `vector` (one loop of vector accesses, or for a guarded
    /// copy its moves without the guard) when the prover shows each of its vector
    /// accesses aligned and `guard` true for every element, else `scalar` (the element
    /// loop, guarded). `prove` replaces the statement by the one it keeps; a back end
    /// given the statement itself writes `scalar`.
    Vectorised {
        vector: Vec<Stmt>,
        scalar: Vec<Stmt>,
        guard: Option<Guard>,
        loc: Loc,
    },
    /// `#copy S(a) to D(b)` where `S` or `D` has sizes given at run time: `scalar` moves
    /// element `k` to element `k` through generic forms (what the CPU runs). A kernel
    /// specialised at the bound sizes replaces the statement by the copy
    /// [`crate::copy::lower`] makes of `copy` for the declared types, the one a copy of
    /// literal types has.
    GenericCopy {
        copy: Box<CopySpec>,
        scalar: Vec<Stmt>,
        loc: Loc,
    },
    /// `#mma D(d) += A(a) * B(b)`: the warp-level `mma.sync.aligned.m16n8k16.row.col`,
    /// `d[m][n] += sum_k a[m][k] * b[k][n]` over the fragments of the warp's 32 lanes (SPEC
    /// 3.5, "MMA"); `a`, `b` and `d` are the thread's register arrays (locals created by
    /// `T::create()`) of the A, B and C/D fragments, in the PTX ISA's register order (the
    /// front end checked the types' layouts). A warp collective: its 32 lanes execute it
    /// together.
    ///
    /// With `wgmma`, A and B are tiles in shared memory (`a`, `b` pointers into arrays the
    /// body created) and the statement is the warpgroup's
    /// `wgmma.mma_async.sync.aligned.m64nNk16`, completed before the next statement
    /// (`#mma async`: see [`Wgmma::wait`]): its 128 threads execute it together.
    Mma {
        /// The element of A and B: `Bf16` or `F16` (C and D are `F32`).
        input: Scalar,
        a: Expr,
        b: Expr,
        d: Expr,
        wgmma: Option<Box<Wgmma>>,
        loc: Loc,
    },
    /// `#mma wait N D(d);`: the warpgroup waits until at most `groups` of its groups of
    /// asynchronous wgmmas are in flight (`wgmma.wait_group N`); with none left, `d`, their
    /// accumulator of `regs` registers, holds their result.
    MmaWait {
        d: Expr,
        regs: u32,
        groups: u32,
        loc: Loc,
    },
    /// The end of a run of `#mma async` statements (SPEC 3.5, "Asynchronous"): the
    /// warpgroup commits the wgmmas issued since the last commit as one group
    /// (`wgmma.commit_group`). The front end places one after each run
    /// ([`crate::mma::commit_groups`]).
    MmaCommit {
        loc: Loc,
    },
    /// `#setmaxnreg inc N;` or `#setmaxnreg dec N;` (SPEC 3.9, "Roles"): the warpgroup's
    /// threads raise (`inc`) or lower their register budget to `regs` (24 to 256, a
    /// multiple of 8), so that a producer's registers go to its consumers
    /// (`setmaxnreg.{inc,dec}.sync.aligned.u32`, sm_90a).
    SetMaxNreg {
        inc: bool,
        regs: u32,
        loc: Loc,
    },
    /// A `#copy` between a tile and a fragment that a warp's
    /// `ldmatrix.sync.aligned.m8n8` makes (into the fragment), or its
    /// `stmatrix.sync.aligned.m8n8` (`store`: from it), SPEC 3.9, "Fragments", where
    /// `copy::matrices` finds that the types allow it: each lane gives the address of one
    /// row of 8 16-bit elements, `base + at` (`at` a form of the lane's digits), and
    /// receives (gives) `matrices` 32-bit registers, element pairs, of `regs` (registers
    /// `2 i` and `2 i + 1` in the i-th); `.trans` where `trans`. `scalar` is the same copy
    /// as the thread's own moves, each register from (to) the element the fragment's type
    /// places there, which the emulation and HIP run (the same elements move either way)
    /// and which `bounds::prove` keeps instead unless `base` is a shared array the body
    /// created, every lane's row is proved to start at a multiple of 8 elements and every
    /// move of `scalar` is proved in bounds. A warp collective: its 32 lanes execute it
    /// together.
    Matrices {
        store: bool,
        /// The 8 x 8 matrices: 1, 2 or 4 (`.x1`, `.x2`, `.x4`).
        matrices: u8,
        trans: bool,
        regs: Expr,
        base: Expr,
        at: Expr,
        scalar: Vec<Stmt>,
        loc: Loc,
    },
    /// `#copy async S(p) to D(q) on B(b);` (SPEC 3.9, "TMA copies"): the box of `tma`'s
    /// plan from the array of the kernel's pointer parameter `src`, at element `offset`
    /// of it, into shared memory at `dst` (a shared array the body created, plus an
    /// offset), completing on the mbarrier `bar` (`mbarrier.arrive.expect_tx` of the
    /// box's bytes, then `cp.async.bulk.tensor`). Issued by the one thread that reaches it.
    Tma {
        src: Expr,
        offset: Box<Expr>,
        dst: Expr,
        bar: Box<Expr>,
        tma: Box<Tma>,
        loc: Loc,
    },
    /// `#mbarrier init B(b) arrivals N;`: the barrier at `bar` expects `arrivals`
    /// arrivals a phase (`mbarrier.init`, then `fence.mbarrier_init`).
    MbarrierInit {
        bar: Expr,
        arrivals: Expr,
        loc: Loc,
    },
    /// `#mbarrier arrive B(b);`: the thread's arrival on the barrier's current phase.
    MbarrierArrive {
        bar: Expr,
        loc: Loc,
    },
    /// `#wait B(b) parity P;`: the thread waits until the barrier's phase of parity
    /// `parity` has completed (`mbarrier.try_wait.parity` in a loop).
    MbarrierWait {
        bar: Expr,
        parity: Expr,
        loc: Loc,
    },
    /// `println!`/`print!` with `{}` placeholders.
    Print {
        /// The literal text between placeholders (one more piece than arguments).
        pieces: Vec<String>,
        args: Vec<Expr>,
        newline: bool,
        loc: Loc,
    },
}

/// The direct sub-expressions of an [`ExprKind`] (borrowed as `$kind` is), each given to
/// `$f`: one list for the shared and the mutable walk.
macro_rules! children {
    ($kind:expr, $f:ident, $iter:ident) => {
        match $kind {
            ExprKind::Lit(_)
            | ExprKind::Local(_)
            | ExprKind::Capture(_)
            | ExprKind::NumberConst(_)
            | ExprKind::Tid(_)
            | ExprKind::Size(_)
            | ExprKind::GenericSize { .. }
            | ExprKind::RuntimeConst { .. }
            | ExprKind::Cnt(_) => {}
            ExprKind::Unary(_, x)
            | ExprKind::Cast(x, _)
            | ExprKind::Convert(x, ..)
            | ExprKind::Field(x, _) => $f(x),
            ExprKind::Offset { args, .. }
            | ExprKind::GenericOffset { args, .. }
            | ExprKind::MakeVector(_, args)
            | ExprKind::Call(_, args, _)
            | ExprKind::HostCall(_, args) => args.$iter().for_each($f),
            ExprKind::Binary(_, a, b)
            | ExprKind::Assign(_, a, b)
            | ExprKind::Index(a, b, _)
            | ExprKind::ShflDown {
                value: a, delta: b, ..
            } => {
                $f(a);
                $f(b);
            }
            ExprKind::Atomic(_, p, args, _) => {
                $f(p);
                args.$iter().for_each($f);
            }
            ExprKind::Method(_, r, args) => {
                $f(r);
                args.$iter().for_each($f);
            }
            ExprKind::Vector { base, at, .. } => {
                $f(base);
                $f(at);
            }
            ExprKind::Select(c, a, b) => {
                $f(c);
                $f(a);
                $f(b);
            }
            ExprKind::MakeRecord { fields, base, .. } => {
                fields.$iter().for_each(|(_, a)| $f(a));
                if let Some(b) = base {
                    $f(b);
                }
            }
        }
    };
}

/// A `$...$` offset form in the offset compiler's own text (`AL[[tid_0][i]][0]`), its
/// variables named: what a form of a type whose sizes come later carries to the place
/// where they are known. `vars` are the variables in the order of the form's arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuntimeIndex {
    pub text: String,
    pub vars: Vec<String>,
}

impl RuntimeIndex {
    /// `ty[v0][v1]...`, one variable per top-level dimension.
    pub fn top_level(ty: &str, rank: usize) -> RuntimeIndex {
        let vars: Vec<String> = (0..rank).map(|k| format!("i{k}")).collect();
        let text = vars.iter().fold(ty.to_string(), |t, v| format!("{t}[{v}]"));
        RuntimeIndex { text, vars }
    }

    /// Whether the form is [`RuntimeIndex::top_level`]'s for `ty`: one flat index per
    /// top-level dimension of the type itself.
    pub fn is_top_level(&self, ty: &str) -> bool {
        *self == RuntimeIndex::top_level(ty, self.vars.len())
    }
}

/// What holds of a `$T[...]$` form of a declared type at every binding of the run-time
/// sizes (`parray_layout::symbolic`), for the bounds prover: for each of the form's
/// variables (in the order of its arguments) the sizes of the dimensions it indexes, and
/// the extent of `T`. Where every variable lies below each of its sizes, the form's
/// offset is one of `T`'s and lies below that extent (SPEC.md 3.5, "Bounds").
#[derive(Debug, Clone, PartialEq)]
pub struct FormSizes {
    pub dims: Vec<Vec<Poly>>,
    pub extent: Poly,
}

/// One side of a [`Stmt::GenericCopy`]: the type or dimension named (`AL_1`), and the
/// place, split as the copy indexes it (`base[offsets... + off(k)]`).
#[derive(Debug, Clone)]
pub struct CopyEnd {
    pub ty: String,
    pub base: Expr,
    pub offsets: Vec<Expr>,
}

/// What a TMA copy ([`Stmt::Tma`]) is beyond its expressions: its two types, the kernel
/// parameter its box is read from, the planner's map and which of the body's maps it is.
#[derive(Debug, Clone)]
pub struct Tma {
    /// The source type `S` (dmem) and the destination type `D` (smem).
    pub src_ty: String,
    pub dst_ty: String,
    /// The pointer parameter, by its number in [`Body::params`], whose array the map
    /// describes (the launch encodes the map over the array it is given).
    pub param: usize,
    /// The tensor map: dimensions, strides, swizzle (`parray_layout::tma::plan`); `None`
    /// where the source's sizes are given at run time, until the kernel is specialised
    /// at them (`kernels::specialise` plans it, before the C writer).
    pub plan: Option<TmaPlan>,
    /// The box, which is the destination's (its sizes are literal): its elements and
    /// their bytes, and its swizzle. What the mbarrier expects and the alignment the
    /// body's shared arrays need, known before the plan.
    pub box_elems: u64,
    pub elem_bytes: u64,
    pub swizzle: Swizzle,
    /// The map's number among the body's TMA copies: its kernel parameter, after the
    /// declared parameters and the captured values (`__parray_tmap<map>`).
    pub map: usize,
}

impl Tma {
    /// The bytes of its box, what its mbarrier expects.
    pub fn box_bytes(&self) -> u64 {
        self.box_elems * self.elem_bytes
    }

    /// Its plan, which a kernel's C has: planned when the body is built, or, for a
    /// source of run-time sizes, when the kernel is specialised.
    pub fn planned(&self) -> &TmaPlan {
        self.plan
            .as_ref()
            .expect("kernels::specialise plans each TMA copy of run-time sizes before the C writer")
    }
}

/// What a `#copy` is, for [`crate::copy::lower`]: its two sides, the local its loop
/// counts with, whether it may move vectors (a cuda body), its guard, the cuda array of
/// the body, and where it was written.
#[derive(Debug, Clone)]
pub struct CopySpec {
    pub src: CopyEnd,
    pub dst: CopyEnd,
    pub k: LocalId,
    pub vectors: bool,
    pub guard: Option<Box<CopyGuard>>,
    /// The cuda array whose body makes the copy (`None` elsewhere): a fragment side (SPEC
    /// 2.14) must be one of its block's.
    pub threads: Option<String>,
    pub span: CodeSpan,
    pub loc: Loc,
}

/// `#copy S(a) to D(b) if |i, j| PRED else FILL;`: element `k` moves where `PRED` holds;
/// elsewhere the destination's element gets `FILL` (or is left as it is, without `else`).
#[derive(Debug, Clone)]
pub struct CopyGuard {
    /// The locals the closure binds: the copy's `k` itself (one name), or `k`'s digits over
    /// the source's top-level dimensions, the last the fastest (one name each).
    pub digits: Vec<LocalId>,
    pub pred: Expr,
    pub fill: Option<Expr>,
}

/// A guarded `#copy`'s guard, for the prover's choice of its moves: `pred` over its
/// digits (each local below its size); `unguarded`, the element moves without it;
/// `at_most`, `pred` at the digits' largest values, which implies `pred` at all of them
/// where `pred` only grows with them (then it chooses the unguarded moves when it holds);
/// and `per_vector`, for a copy with vectors, the moves where `at_most` fails, vector by
/// vector (`crate::copy::per_vector`; empty where the copy has no vectors or its lanes
/// are not ordered digits of `k`), which the prover keeps in place of the guarded
/// element loop where the vectors are aligned.
#[derive(Debug, Clone)]
pub struct Guard {
    pub digits: Vec<(LocalId, u64)>,
    pub pred: Expr,
    pub unguarded: Vec<Stmt>,
    pub at_most: Expr,
    pub per_vector: Vec<Stmt>,
    /// For a copy with vectors whose lanes are ordered digits: its moves where every
    /// vector is wholly inside the data or wholly outside (`crate::copy::whole_vectors`).
    pub whole: Option<WholeVectors>,
}

/// A guarded copy's moves, one test a vector, kept where the prover shows that the guard
/// at a vector's first lane (`first`) and at its last (`last`) agree, `lanes` lanes
/// apart, for every value of the vector loop's variable (`vector`, with the number of
/// vectors; `None` for one vector).
#[derive(Debug, Clone)]
pub struct WholeVectors {
    pub first: Box<Expr>,
    pub last: Box<Expr>,
    pub lanes: u64,
    pub vector: Option<(LocalId, u64)>,
    pub moves: Vec<Stmt>,
}

#[derive(Debug, Clone)]
pub struct Expr {
    pub kind: ExprKind,
    pub span: CodeSpan,
    /// Set by the type check.
    pub ty: Ty,
    /// Set by the prover: a GPU's 32-bit unsigned value that lies in `[0, i32::MAX]`,
    /// computed from such values only, so that C may compute it in `int` with the same
    /// result (SPEC 3.5, "Index arithmetic in `int`").
    pub signed: bool,
}

impl Expr {
    pub fn new(kind: ExprKind, span: impl Into<CodeSpan>) -> Expr {
        Expr {
            kind,
            span: span.into(),
            ty: Ty::Unit,
            signed: false,
        }
    }

    /// Applies `f` to each direct sub-expression, in evaluation order.
    pub fn for_each_child(&self, f: &mut dyn FnMut(&Expr)) {
        children!(&self.kind, f, iter)
    }

    /// Whether a `shfl_down` appears in this expression, at any depth.
    pub fn shuffles(&self) -> bool {
        let mut found = matches!(self.kind, ExprKind::ShflDown { .. });
        self.for_each_child(&mut |c| found |= c.shuffles());
        found
    }

    /// [`Expr::for_each_child`], mutably.
    pub fn for_each_child_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        children!(&mut self.kind, f, iter_mut)
    }

    /// The element and the fields of a field of a record element, through the records
    /// inside it (`p[i]` and `["pos", "x"]` of `p[i].pos.x`, `pos` a record): what a GPU
    /// reads or writes alone. Each base on the way is a record, or of a type rustc knows
    /// (`Ty::Host`: a pthd body's captured array); a lane of a vector field is no such
    /// field (`p[i].vel.x` is the field `vel`, then its lane).
    pub fn element_field(&self) -> Option<(&Expr, Vec<&str>)> {
        let mut path = Vec::new();
        let mut e = self;
        while let ExprKind::Field(base, name) = &e.kind {
            if !matches!(base.ty, Ty::Record(_) | Ty::Host) {
                return None;
            }
            path.push(name.as_str());
            e = base;
        }
        path.reverse();
        (!path.is_empty() && matches!(e.kind, ExprKind::Index(..))).then_some((e, path))
    }
}

#[derive(Debug, Clone)]
pub enum Lit {
    /// Digits and an optional suffix type.
    Int(u128, Option<Scalar>),
    /// Decimal text (`base10_digits`) and an optional suffix type.
    Float(String, Option<Scalar>),
    Bool(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UnOp {
    Neg,
    Not,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    And,
    Or,
    BitAnd,
    BitOr,
    BitXor,
    Shl,
    Shr,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

impl BinOp {
    /// `a op b` of two naturals where it is exact: `+ - * / %` with no negative or
    /// overflowing value and no division by zero; none otherwise (and for the other
    /// operators). The one arithmetic that folds integer literals.
    pub fn exact(self, a: u128, b: u128) -> Option<u128> {
        match self {
            BinOp::Add => a.checked_add(b),
            BinOp::Sub => a.checked_sub(b),
            BinOp::Mul => a.checked_mul(b),
            BinOp::Div => a.checked_div(b),
            BinOp::Rem => a.checked_rem(b),
            _ => None,
        }
    }

    /// The operator's symbol, the same in Rust and C.
    pub fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
            BinOp::Rem => "%",
            BinOp::And => "&&",
            BinOp::Or => "||",
            BinOp::BitAnd => "&",
            BinOp::BitOr => "|",
            BinOp::BitXor => "^",
            BinOp::Shl => "<<",
            BinOp::Shr => ">>",
            BinOp::Eq => "==",
            BinOp::Ne => "!=",
            BinOp::Lt => "<",
            BinOp::Le => "<=",
            BinOp::Gt => ">",
            BinOp::Ge => ">=",
        }
    }

    pub fn is_comparison(self) -> bool {
        matches!(
            self,
            BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge
        )
    }

    pub fn is_logical(self) -> bool {
        matches!(self, BinOp::And | BinOp::Or)
    }

    pub fn is_shift(self) -> bool {
        matches!(self, BinOp::Shl | BinOp::Shr)
    }
}

/// The math methods of the subset (each exists in CUDA's math library).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Sqrt,
    Exp,
    Exp2,
    Ln,
    Log2,
    Log10,
    Sin,
    Cos,
    Tan,
    Tanh,
    Abs,
    Min,
    Max,
    MulAdd,
    Powf,
    Powi,
    Floor,
    Ceil,
    Round,
    Trunc,
    Recip,
}

/// Each method of the subset: its Rust name, and CUDA's double-precision function (with
/// `f` appended for `f32`; `recip` and `powi` are written otherwise).
const METHODS: [(Method, &str, &str); 21] = [
    (Method::Sqrt, "sqrt", "sqrt"),
    (Method::Exp, "exp", "exp"),
    (Method::Exp2, "exp2", "exp2"),
    (Method::Ln, "ln", "log"),
    (Method::Log2, "log2", "log2"),
    (Method::Log10, "log10", "log10"),
    (Method::Sin, "sin", "sin"),
    (Method::Cos, "cos", "cos"),
    (Method::Tan, "tan", "tan"),
    (Method::Tanh, "tanh", "tanh"),
    (Method::Abs, "abs", "fabs"),
    (Method::Min, "min", "fmin"),
    (Method::Max, "max", "fmax"),
    (Method::MulAdd, "mul_add", "fma"),
    (Method::Powf, "powf", "pow"),
    (Method::Powi, "powi", "pow"),
    (Method::Floor, "floor", "floor"),
    (Method::Ceil, "ceil", "ceil"),
    (Method::Round, "round", "round"),
    (Method::Trunc, "trunc", "trunc"),
    (Method::Recip, "recip", ""),
];

impl Method {
    /// Every method, in the order the subset lists them.
    pub fn all() -> impl Iterator<Item = Method> {
        METHODS.iter().map(|(m, _, _)| *m)
    }

    fn entry(self) -> &'static (Method, &'static str, &'static str) {
        METHODS
            .iter()
            .find(|(m, _, _)| *m == self)
            .expect("every method is in the table")
    }

    pub fn rust_name(self) -> &'static str {
        self.entry().1
    }

    /// CUDA's double-precision function of a float method (`sqrtf` is this plus `f`).
    pub fn c_name(self) -> &'static str {
        self.entry().2
    }

    pub fn from_rust_name(s: &str) -> Option<Method> {
        METHODS.iter().find(|(_, r, _)| *r == s).map(|(m, _, _)| *m)
    }

    /// Number of arguments besides the receiver.
    pub fn arity(self) -> usize {
        match self {
            Method::Min | Method::Max | Method::Powf | Method::Powi => 1,
            Method::MulAdd => 2,
            _ => 0,
        }
    }

    /// Whether the method exists for integers too (else floats only).
    pub fn on_ints(self) -> bool {
        matches!(self, Method::Abs | Method::Min | Method::Max)
    }
}

#[derive(Debug, Clone)]
pub enum ExprKind {
    Lit(Lit),
    Local(LocalId),
    /// A host variable (or a path) captured by a pthd body.
    Capture(String),
    /// `f32::MAX`, `std::f32::consts::PI`, `u32::MAX`: a constant of a number type.
    NumberConst(NumberConst),
    /// A call of a Rust function by a pthd body (CPU threads call what they like; rustc
    /// checks it).
    HostCall(String, Vec<Expr>),
    /// `$tid$`, `$tid_0_1$`: the path after `tid`.
    Tid(String),
    /// `$dim(T)$`, `$size(T)$`: a `usize` constant.
    Size(u64),
    /// `$cnt(T)$`.
    Cnt(bool),
    /// `$T[...]$`: the simplified offset (a `usize`) and, for each of its variables, the
    /// index expression it stands for; `of` is the declared type indexed.
    Offset {
        off: Offset,
        args: Vec<Expr>,
        of: Indexed,
    },
    /// `$T[...]$` of a type known when the program runs: a type parameter of the detour
    /// (`$T[i][j]$`, one index per top-level dimension) or a declared type with sizes given
    /// at run time (any form of it or of its dimensions). `index` is the form as the
    /// offset compiler reads it; `args` are its variables' values, in its order. `sizes`:
    /// what holds of the form at every binding of the sizes, where the front end knows it
    /// (a declared type's form; not a type parameter's).
    GenericOffset {
        ty: String,
        index: RuntimeIndex,
        args: Vec<Expr>,
        sizes: Option<Box<FormSizes>>,
    },
    /// `$size(T)$` (`path` empty), `$dim(T_k)$` (`[k]`) or `$size(T_1_0)$` (`[1, 0]`) of
    /// such a type: the size of the dimension `path` walks to from its root. `size`: that
    /// size as a polynomial of the run-time sizes, where the front end knows it.
    GenericSize {
        ty: String,
        path: Vec<usize>,
        size: Option<Poly>,
    },
    /// A `parray!` constant given at run time (`const N;`) or computed from such sizes
    /// (`const M = N / 16;`), named in a body: a `usize` read when the detour starts (a
    /// number in a kernel specialised at the bound sizes). `value`: it as a polynomial of
    /// the run-time sizes, where the front end knows it.
    RuntimeConst {
        name: String,
        value: Option<Poly>,
    },
    Unary(UnOp, Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    /// `place = value` (`None`) or `place op= value`.
    Assign(Option<BinOp>, Box<Expr>, Box<Expr>),
    Cast(Box<Expr>, Scalar),
    /// A conversion `parray::Num` and `parray::Float` give a generic function: `x`
    /// converted to the type `Ty`, `x` of the type `Some(scalar)` (`T::from_f32(x)`,
    /// `T::from_i32(x)`, to the type parameter `T`, [`Ty::Generic`]) or of any number type
    /// or type parameter (`None`: `x.to_f32()`, `x.to_f64()`). The type check makes it a
    /// [`ExprKind::Cast`] to the instance's type (an `f32` literal folded): no later pass
    /// sees it.
    Convert(Box<Expr>, Ty, Option<Scalar>),
    /// An element of an array or a pointer; [`bounds`] decides whether its check is needed.
    Index(Box<Expr>, Box<Expr>, Check),
    /// `p.load2(off)`, `p.load4(off)`: the `lanes` elements from `at` as one vector value
    /// (`Float4` of `f32` elements, [`vector_of`]); as the place of an
    /// [`ExprKind::Assign`], `p.store2(off, v)` / `p.store4(off, v)`. The first element's
    /// offset from the start of the root array must be a multiple of `lanes` (a GPU faults
    /// on a misaligned vector): [`bounds`] proves that, or the access checks it with its
    /// bounds. `method` is the span of the method's name.
    Vector {
        base: Box<Expr>,
        at: Box<Expr>,
        lanes: u8,
        check: Check,
        method: CodeSpan,
    },
    /// A field by its name: `.x`, `.y`, `.z`, `.w` of a vector, or a record's.
    Field(Box<Expr>, String),
    Method(Method, Box<Expr>, Vec<Expr>),
    /// `atomic_add(p, v)`, `atomic_exch(p, v)`, `atomic_cas(p, compare, v)`: CUDA's
    /// `atomicAdd`, `atomicExch`, `atomicCAS` on `p[0]` with the operands after `p`; the
    /// old value.
    Atomic(AtomicOp, Box<Expr>, Vec<Expr>, Check),
    /// `shfl_down(value, delta)`: the `value` of the lane `delta % 32` above this thread's
    /// in its warp of [`WARP`] lanes (its own where that lane is past the warp), exchanged by
    /// all the lanes of the warp together (cuda bodies; a statement that holds one is
    /// [collective](Stmt::is_collective)). `slot` numbers the body's shuffles.
    ShflDown {
        value: Box<Expr>,
        delta: Box<Expr>,
        slot: usize,
    },
    /// `Float2::new(x, y)` and the other vector constructors.
    MakeVector(ElemType, Vec<Expr>),
    /// `if c { a } else { b }` as a value.
    Select(Box<Expr>, Box<Expr>, Box<Expr>),
    /// `Particle { pos: p, mass: 1.0, .. }`: a record value built from its fields' values,
    /// in the order written (SPEC 3.5, "Records"). A cuda body's gives each field of
    /// `record` once (the lowering fills those a base `..b` gives as `b.f`; `base` is
    /// `None`). A pthd body's names any Rust struct by its `path` (`record` `None`, a host
    /// value rustc checks) and keeps its base.
    MakeRecord {
        record: Option<Record>,
        path: String,
        fields: Vec<(String, Expr)>,
        base: Option<Box<Expr>>,
    },
    /// A call of the body's function of that index ([`Body::functions`]), and the root
    /// of each pointer argument, found by the prover (`None` before, and for the other
    /// arguments): the GPU's checks in the function need its extent.
    Call(usize, Vec<Expr>, Vec<Option<Root>>),
}

/// The lanes of a warp in the body language: `shfl_down` exchanges values among 32
/// consecutive threads of a block (flat thread ids `32k .. 32k + 32`), on every back end.
/// A HIP target whose wavefront is 64 lanes wide shuffles within each half.
pub const WARP: u32 = 32;

/// The operands of `mma.sync.aligned.m16n8k16` ([`Stmt::Mma`]): A is M x K, B is K x N,
/// C and D are M x N.
pub const MMA_M: usize = 16;
pub const MMA_N: usize = 8;
pub const MMA_K: usize = 16;

/// Where `mma.sync.aligned.m16n8k16`'s operands keep their elements (the PTX ISA's
/// fragment tables; cutlass's `mma_traits_sm80.hpp`): `(lane, register)` of A's `[m][k]`,
/// B's `[k][n]` and C's or D's `[m][n]`, with lane = t0 + 4 t1 and register
/// v = v0 + 2 v1 + 4 v2. A: m = t1 + 8 v1, k = 2 t0 + v0 + 8 v2; B: n = t1,
/// k = 2 t0 + v0 + 8 v1; C, D: m = t1 + 8 v1, n = 2 t0 + v0. One table for the front end's
/// layout check and for the emulation.
pub mod mma_isa {
    /// A's `[m][k]` (8 registers a lane).
    pub fn a(m: usize, k: usize) -> (usize, usize) {
        let (t1, v1, t0, v0, v2) = (m % 8, m / 8, k % 8 / 2, k % 2, k / 8);
        (t0 + 4 * t1, v0 + 2 * v1 + 4 * v2)
    }

    /// B's `[k][n]` (4 registers a lane).
    pub fn b(k: usize, n: usize) -> (usize, usize) {
        let (t1, t0, v0, v1) = (n, k % 8 / 2, k % 2, k / 8);
        (t0 + 4 * t1, v0 + 2 * v1)
    }

    /// C's or D's `[m][n]` (4 registers a lane).
    pub fn c(m: usize, n: usize) -> (usize, usize) {
        let (t1, v1, t0, v0) = (m % 8, m / 8, n / 2, n % 2);
        (t0 + 4 * t1, v0 + 2 * v1)
    }
}

/// The rows of a wgmma's A and D (`m64nNk16`).
pub const WGMMA_M: usize = 64;

/// Where a wgmma m64nNk16's f32 accumulator keeps its elements over the 128 threads of a
/// warpgroup (the PTX ISA's "Matrix fragments for wgmma .m64nNk16"; cutlass's
/// `mma_traits_sm90_gmma.hpp`): `(thread, register)` of D's `[m][n]` with thread = t0 + 4
/// t1 + 32 t2 and register v = v0 + 2 v1 + 4 v2: m = t1 + 8 v1 + 16 t2, n = 2 t0 + v0 + 8 v2.
/// One table for the front end's layout check and for the emulation.
pub mod wgmma_isa {
    /// D's `[m][n]` (N / 2 registers a thread).
    pub fn d(m: usize, n: usize) -> (usize, usize) {
        let (t1, v1, t2, t0, v0, v2) = (m % 8, m / 8 % 2, m / 16, n % 8 / 2, n % 2, n / 8);
        (t0 + 4 * t1 + 32 * t2, v0 + 2 * v1 + 4 * v2)
    }
}

/// The shared-memory operands of a wgmma ([`Stmt::Mma`]): N, and for A and B the matrix
/// descriptor the front end derived and verified from the type, and the type's offsets
/// (in elements) of each element, A's `[m][k]` and B's `[k][n]` row-major, by which the
/// emulation reads the tiles.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wgmma {
    pub n: u32,
    pub a: Descriptor,
    pub b: Descriptor,
    pub a_offsets: Vec<u32>,
    pub b_offsets: Vec<u32>,
    /// `false` for `#mma async`: the instruction is issued, committed with the rest of its
    /// run at the [`Stmt::MmaCommit`] after it, and completes at a [`Stmt::MmaWait`] (the
    /// front end checks what may run meanwhile: [`crate::mma::check_waits`]).
    pub wait: bool,
}

/// An atomic read-modify-write of the subset.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AtomicOp {
    /// `atomic_add(p, v)`: adds `v`.
    Add,
    /// `atomic_exch(p, v)`: writes `v`.
    Exch,
    /// `atomic_cas(p, compare, v)`: writes `v` where the element equals `compare`.
    Cas,
}

impl AtomicOp {
    /// The body's function name.
    pub fn rust_name(self) -> &'static str {
        match self {
            AtomicOp::Add => "atomic_add",
            AtomicOp::Exch => "atomic_exch",
            AtomicOp::Cas => "atomic_cas",
        }
    }

    /// The kernel's function: CUDA's `atomicAdd`; for the two that build locks, helpers
    /// that fence on both sides (`emit_c::LOCK_HELPERS`), so that plain accesses between a
    /// taking `atomic_cas` and a releasing `atomic_exch` are ordered by them.
    pub fn c_name(self) -> &'static str {
        match self {
            AtomicOp::Add => "atomicAdd",
            AtomicOp::Exch => "parray_exch",
            AtomicOp::Cas => "parray_cas",
        }
    }

    /// The operands after the pointer.
    pub fn arity(self) -> usize {
        match self {
            AtomicOp::Add | AtomicOp::Exch => 1,
            AtomicOp::Cas => 2,
        }
    }
}

/// The declared data type a `$T[...]$` form indexes (`M` for `$M_0[i]$` too).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Indexed {
    pub type_name: String,
    /// Elements of storage a value of the type needs; `None` for a type parameter, whose
    /// extent is known only when the detour is instantiated.
    pub extent: Option<u64>,
    /// The type is in constant memory (`cmem`): its root is read from the kernel's
    /// constant bank.
    pub constant: bool,
}

impl Indexed {
    /// The declared type `name` of `module`, as a `$name[...]$` form indexes it.
    pub fn of_type(module: &parray_layout::Module, name: &str) -> Indexed {
        let def = module.type_def(name);
        // A type covering data past its end indexes as much as the data holds.
        let extent = def.map_or(0, |d| {
            let own = module.extent(d.root);
            d.covers.map_or(own, |c| c.min(own))
        });
        Indexed {
            type_name: name.to_string(),
            extent: Some(extent),
            constant: def.is_some_and(|d| {
                matches!(
                    d.class,
                    parray_layout::TypeClass::Data {
                        mem: Some(MemKind::Cmem),
                        ..
                    }
                )
            }),
        }
    }
}

/// Whether an element access is checked against its array's extent when it runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Check {
    /// Checked when it runs: on the CPU by the handle (a panic), on the GPU against the
    /// extent of its root array ([`Root`], found by the prover; `None`
    /// before, or where the array is not known).
    Checked(Option<Root>),
    /// Proved within the extent for every thread and iteration (the prover). A back
    /// end writes only a [`Proved`] body, whose every mark `prove` set itself.
    Proved,
}

/// A problem found in a body, at the user's tokens.
#[derive(Debug, Clone)]
pub struct Diag {
    pub span: CodeSpan,
    pub message: String,
}

impl Diag {
    pub fn new(span: impl Into<CodeSpan>, message: impl Into<String>) -> Diag {
        Diag {
            span: span.into(),
            message: message.into(),
        }
    }
}

/// Binding strength of a binary operator in Rust (`*` 10 ... `||` 2); C agrees except
/// that it ranks `&`, `^`, `|` below comparisons, which the C emitter parenthesises.
pub fn precedence(op: BinOp) -> u8 {
    match op {
        BinOp::Mul | BinOp::Div | BinOp::Rem => 10,
        BinOp::Add | BinOp::Sub => 9,
        BinOp::Shl | BinOp::Shr => 8,
        BinOp::BitAnd => 7,
        BinOp::BitXor => 6,
        BinOp::BitOr => 5,
        BinOp::Eq | BinOp::Ne | BinOp::Lt | BinOp::Le | BinOp::Gt | BinOp::Ge => 4,
        BinOp::And => 3,
        BinOp::Or => 2,
    }
}

/// The value of `x`, `y`, `z`, `w` as a lane number.
pub fn lane(name: &str) -> Option<u8> {
    ["x", "y", "z", "w"]
        .iter()
        .position(|l| *l == name)
        .map(|p| p as u8)
}

/// The lanes a vector element type has.
pub fn lanes(e: ElemType) -> u8 {
    match e {
        ElemType::Float4 | ElemType::Int4 => 4,
        ElemType::Float2 | ElemType::Double2 | ElemType::Int2 => 2,
        _ => 0,
    }
}

/// The elements a vector type moves: its [`lanes`], or a 16-bit vector's (`Bf16x8`: 8).
pub fn move_lanes(e: ElemType) -> u8 {
    match e {
        ElemType::Half8 | ElemType::Bf16x8 => 8,
        ElemType::Half4 | ElemType::Bf16x4 => 4,
        ElemType::Half2 | ElemType::Bf16x2 => 2,
        _ => lanes(e),
    }
}

/// The vector type of `lanes` elements of `elem` that a body can load and store at once
/// (`p.load4(off)` on `f32` elements is a `Float4`): `float` 2 and 4, `double` 2, `int` 2
/// and 4, as CUDA's `float2`, `float4`, `double2`, `int2`, `int4`.
pub fn vector_of(elem: ElemType, lanes: u8) -> Option<ElemType> {
    Some(match (elem, lanes) {
        (ElemType::Float, 2) => ElemType::Float2,
        (ElemType::Float, 4) => ElemType::Float4,
        (ElemType::Double, 2) => ElemType::Double2,
        (ElemType::Int, 2) => ElemType::Int2,
        (ElemType::Int, 4) => ElemType::Int4,
        _ => return None,
    })
}

/// The vector of `lanes` elements of `elem` that a `#copy` moves as one access: a
/// [`vector_of`], or 2, 4 or 8 `half`s or `bf16`s (4, 8 or 16 bytes, moved only: no
/// lanes by name, no arithmetic).
pub fn move_vector_of(elem: ElemType, lanes: u8) -> Option<ElemType> {
    Some(match (elem, lanes) {
        (ElemType::Half, 2) => ElemType::Half2,
        (ElemType::Half, 4) => ElemType::Half4,
        (ElemType::Half, 8) => ElemType::Half8,
        (ElemType::Bf16, 2) => ElemType::Bf16x2,
        (ElemType::Bf16, 4) => ElemType::Bf16x4,
        (ElemType::Bf16, 8) => ElemType::Bf16x8,
        _ => return vector_of(elem, lanes),
    })
}

/// The scalar of a vector's lanes.
pub fn lane_scalar(e: ElemType) -> Scalar {
    match e {
        ElemType::Double2 => Scalar::F64,
        ElemType::Int2 | ElemType::Int4 => Scalar::I32,
        ElemType::Half2 | ElemType::Half4 | ElemType::Half8 => Scalar::F16,
        ElemType::Bf16x2 | ElemType::Bf16x4 | ElemType::Bf16x8 => Scalar::Bf16,
        _ => Scalar::F32,
    }
}
