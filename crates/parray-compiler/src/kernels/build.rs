//! A builder of cuda bodies over a thread array declared in Parray: what the front end
//! does for a detour, without a macro: the declaration gives the kernel's parameters and
//! its thread indices, the statements are built as IR, and [`Builder::finish`] types,
//! proves and writes them.

use parray_layout::{
    thread_index, CudaGrid, Error, ErrorKind, MemKind, Module, NodeId, Offset, TextSpan,
    ThreadKind, TypeClass,
};

use super::Kernel;
use crate::back::c::{self as emit_c, Dialect};
use crate::ir::{
    BinOp, Body, Check, Expr, ExprKind, Indexed, Lit, Loc, Local, LocalId, Scalar, Stmt, Target, Ty,
};
use crate::passes::{bounds, check};
use crate::CodeSpan;

/// The cuda body of one thread array, built statement by statement.
pub(crate) struct Builder {
    module: Module,
    array: String,
    root: NodeId,
    kind: ThreadKind,
    body: Body,
    /// Shared arrays created so far (each one's `slot`).
    shared: usize,
}

/// An error of a kernel the runtime builds: it names the kernel and what stopped it.
pub(crate) fn refused(kernel: &str, why: impl std::fmt::Display) -> Error {
    Error::new(
        ErrorKind::Limit,
        TextSpan::default(),
        format!("the {kernel} kernel cannot be built: {why}"),
    )
}

/// `body` through the type check and the prover, as the kernel `kernel`; an error with
/// what either refused.
pub(crate) fn typed_and_proved(body: Body, kernel: &str) -> parray_layout::Result<bounds::Proved> {
    let typed = check::check(body).map_err(|failed| {
        let messages: Vec<String> = failed.1.into_iter().map(|d| d.message).collect();
        refused(kernel, messages.join("; "))
    })?;
    let proved = bounds::prove(typed);
    match proved.proof().errors.first() {
        Some(d) => Err(refused(kernel, &d.message)),
        None => Ok(proved),
    }
}

fn here() -> CodeSpan {
    CodeSpan::call_site()
}

pub(crate) fn loc() -> Loc {
    Loc {
        span: here(),
        line: 0,
    }
}

pub(crate) fn e(kind: ExprKind) -> Expr {
    Expr::new(kind, here())
}

/// `v` as a literal of the scalar `s`.
pub(crate) fn lit(v: u64, s: Scalar) -> Expr {
    e(ExprKind::Lit(Lit::Int(v.into(), Some(s))))
}

/// `v` as a `usize` (a GPU's 32-bit index).
pub(crate) fn n(v: u64) -> Expr {
    lit(v, Scalar::Usize)
}

pub(crate) fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    e(ExprKind::Binary(op, Box::new(l), Box::new(r)))
}

pub(crate) fn add(l: Expr, r: Expr) -> Expr {
    bin(BinOp::Add, l, r)
}

pub(crate) fn mul(l: Expr, r: Expr) -> Expr {
    bin(BinOp::Mul, l, r)
}

pub(crate) fn cast(x: Expr, s: Scalar) -> Expr {
    e(ExprKind::Cast(Box::new(x), s))
}

/// `base[at]`, for the prover to mark.
pub(crate) fn index(base: Expr, at: Expr) -> Expr {
    e(ExprKind::Index(
        Box::new(base),
        Box::new(at),
        Check::Checked(None),
    ))
}

/// `place = value` as a statement.
pub(crate) fn assign(place: Expr, value: Expr) -> Stmt {
    Stmt::Expr {
        expr: e(ExprKind::Assign(None, Box::new(place), Box::new(value))),
        loc: loc(),
    }
}

/// `$T[arg]$` of the type `of` whose offset function of one flat index is `off`.
pub(crate) fn offset(off: Offset, arg: Expr, of: Indexed) -> Expr {
    e(ExprKind::Offset {
        off,
        args: vec![arg],
        of,
    })
}

/// The offset function of the type `name` of `module` over one flat index, by vectors of
/// `step` elements (1: elements).
pub(crate) fn flat_offset(module: &Module, name: &str, step: u64) -> parray_layout::Result<Offset> {
    let node = module.resolve(&parray_layout::ast::Ident {
        name: name.to_string(),
        span: TextSpan::default(),
    })?;
    parray_layout::offset_function_by(module, node.node, "k", step)
}

impl Builder {
    /// A body of the cuda thread array `array`, declared (with whatever else the body
    /// indexes) in the Parray declarations `decls`.
    pub(crate) fn new(decls: &str, array: &str) -> parray_layout::Result<Builder> {
        let module = Module::parse(decls)?;
        let def = module
            .type_def(array)
            .ok_or_else(|| refused(array, "its thread array is not declared"))?;
        let (root, kind) = match &def.class {
            TypeClass::Thread(kind @ ThreadKind::Cuda(_)) => (def.root, kind.clone()),
            _ => return Err(refused(array, "its thread array is not a cuda array")),
        };
        let ThreadKind::Cuda(params) = &kind else {
            unreachable!("matched above")
        };
        let mut b = Builder {
            array: array.to_string(),
            root,
            body: Body {
                target: Target::Cuda,
                array: array.to_string(),
                file: "the parray runtime".into(),
                params: Vec::new(),
                captures: Vec::new(),
                functions: Vec::new(),
                type_params: Vec::new(),
                locals: Vec::new(),
                tids: Vec::new(),
                stmts: Vec::new(),
                launch_bounds: None,
                tids_at_launch: false,
                constants: Vec::new(),
            },
            kind: kind.clone(),
            module,
            shared: 0,
        };
        for p in params {
            let id = b.local(&p.name, false, Some(Ty::of_param(p)));
            b.body.locals[id.0 as usize].param = true;
            b.body.params.push((p.clone(), id));
        }
        Ok(b)
    }

    /// The parameter called `name`.
    pub(crate) fn param(&self, name: &str) -> Expr {
        let (_, id) = self
            .body
            .params
            .iter()
            .find(|(p, _)| p.name == name)
            .expect("a parameter of the declaration");
        e(ExprKind::Local(*id))
    }

    /// `$tid$` (`path` empty) or `$tid_0_1$` (`path` `"0_1"`) of the thread array.
    pub(crate) fn tid(&mut self, path: &str) -> Expr {
        if !self.body.tids.iter().any(|(p, _)| p == path) {
            let node = match path {
                "" => self.root,
                _ => {
                    self.module
                        .lookup(&format!("{}_{path}", self.array))
                        .expect("a dimension of the thread array")
                        .node
                }
            };
            let index = thread_index(&self.module, self.root, &self.kind, node);
            self.body.tids.push((path.to_string(), index));
        }
        e(ExprKind::Tid(path.to_string()))
    }

    pub(crate) fn local(&mut self, name: &str, mutable: bool, ty: Option<Ty>) -> LocalId {
        self.body.locals.push(Local {
            name: name.into(),
            span: here(),
            mutable,
            ty,
            param: false,
        });
        LocalId(self.body.locals.len() as u32 - 1)
    }

    /// `let name = init;` appended to `stmts`; the local's value.
    pub(crate) fn let_(&mut self, stmts: &mut Vec<Stmt>, name: &str, init: Expr) -> Expr {
        let local = self.local(name, false, None);
        stmts.push(Stmt::Let {
            local,
            init: Some(init),
            loc: loc(),
        });
        e(ExprKind::Local(local))
    }

    /// `let name = NAME::create();` of the smem or rmem type `name` of the declarations, appended to
    /// `stmts`; the array.
    pub(crate) fn create(&mut self, stmts: &mut Vec<Stmt>, name: &str) -> Expr {
        let def = self.module.type_def(name).expect("declared");
        let (elem, mem) = match def.class {
            TypeClass::Data {
                elem,
                mem: Some(mem @ (MemKind::Smem | MemKind::Rmem)),
                ..
            } => (elem, mem),
            _ => unreachable!("an smem or rmem type"),
        };
        let len = self.module.extent(def.root);
        let slot = self.shared;
        if mem == MemKind::Smem {
            self.shared += 1;
        }
        let local = self.local(&name.to_lowercase(), false, None);
        stmts.push(Stmt::Create {
            local,
            type_name: name.to_string(),
            elem,
            mem,
            len: crate::ir::Len::Fixed(len),
            soa: false,
            slot,
            loc: loc(),
        });
        e(ExprKind::Local(local))
    }

    /// `#[unroll] for name in 0..end { body }`, the body built from the variable.
    pub(crate) fn unrolled(
        &mut self,
        name: &str,
        end: u64,
        body: impl FnOnce(&mut Self, Expr) -> Vec<Stmt>,
    ) -> Stmt {
        let var = self.local(name, false, Some(Ty::USIZE));
        let body = body(self, e(ExprKind::Local(var)));
        Stmt::For {
            var,
            start: n(0),
            end: n(end),
            inclusive: false,
            unroll: Some(None),
            body,
            loc: loc(),
        }
    }

    /// The body of `stmts` typed, proved and written as the kernel `name` in `dialect`; an
    /// error where the prover leaves any access unproved.
    pub(crate) fn finish(
        self,
        name: &str,
        stmts: Vec<Stmt>,
        dialect: Dialect,
    ) -> parray_layout::Result<Kernel> {
        let (module, root) = (self.module.clone(), self.root);
        let proved = self.proved(name, stmts)?;
        let grid = CudaGrid::of(&module, root).map_err(|e| refused(name, e.message))?;
        Ok(Kernel {
            name: name.to_string(),
            source: emit_c::kernel(&proved, name, dialect),
            grid,
        })
    }

    /// The body of `stmts`, typed and proved; an error where the prover leaves any access
    /// unproved.
    pub(crate) fn proved(
        mut self,
        name: &str,
        stmts: Vec<Stmt>,
    ) -> parray_layout::Result<bounds::Proved> {
        self.body.stmts = stmts;
        let proved = typed_and_proved(self.body, name)?;
        let proof = proved.proof();
        if proof.proved < proof.accesses {
            return Err(refused(
                name,
                format!(
                    "{} of its {} accesses are not proved in bounds",
                    proof.accesses - proof.proved,
                    proof.accesses
                ),
            ));
        }
        Ok(proved)
    }
}
