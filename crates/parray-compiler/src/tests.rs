//! The IR's own tests: bodies built by hand, typed by `check`, written by both emitters.

use crate::CodeSpan;

use crate::back::c::{self as emit_c, Dialect};
#[cfg(feature = "rust")]
use crate::back::rust::{body_tokens, Mode};
use crate::ir::*;
use crate::passes::bounds::{self, Proved};
use crate::passes::check;
use parray_layout::ElemType;

/// A builder of small cuda bodies.
struct B {
    body: Body,
}

fn loc() -> Loc {
    Loc {
        span: CodeSpan::call_site(),
        line: 0,
    }
}

fn e(kind: ExprKind) -> Expr {
    Expr::new(kind, CodeSpan::call_site())
}

fn int(v: u128) -> Expr {
    e(ExprKind::Lit(Lit::Int(v, None)))
}

fn float(d: &str) -> Expr {
    e(ExprKind::Lit(Lit::Float(d.into(), None)))
}

fn bin(op: BinOp, l: Expr, r: Expr) -> Expr {
    e(ExprKind::Binary(op, Box::new(l), Box::new(r)))
}

impl B {
    fn new(params: &[(&str, ElemType, bool)]) -> B {
        let mut b = B {
            body: Body {
                target: Target::Cuda,
                array: "T".into(),
                file: "test.rs".into(),
                params: Vec::new(),
                locals: Vec::new(),
                tids: Vec::new(),
                stmts: Vec::new(),
                launch_bounds: None,
                tids_at_launch: false,
                constants: Vec::new(),
                captures: Vec::new(),
                functions: Vec::new(),
                type_params: Vec::new(),
            },
        };
        for (name, elem, pointer) in params {
            let param = parray_layout::Param {
                elem: *elem,
                pointer: *pointer,
                soa: false,
                name: name.to_string(),
            };
            let id = b.local(name, true, Some(Ty::of_param(&param)));
            b.body.params.push((param, id));
        }
        b
    }

    fn local(&mut self, name: &str, mutable: bool, ty: Option<Ty>) -> LocalId {
        self.body.locals.push(Local {
            name: name.into(),
            span: CodeSpan::call_site(),
            mutable,
            ty,
            param: false,
        });
        LocalId(self.body.locals.len() as u32 - 1)
    }

    /// `let name = S::create();` of a shared array of `len` elements of `elem`.
    fn shared(&mut self, name: &str, elem: ElemType, len: u64) {
        let local = self.local(name, false, None);
        self.body.stmts.push(Stmt::Create {
            local,
            type_name: "S".into(),
            elem,
            mem: parray_layout::MemKind::Smem,
            len: crate::ir::Len::Fixed(len),
            soa: false,
            slot: 0,
            loc: loc(),
        });
    }

    fn get(&self, name: &str) -> Expr {
        let id = self
            .body
            .locals
            .iter()
            .rposition(|l| l.name == name)
            .unwrap();
        e(ExprKind::Local(LocalId(id as u32)))
    }

    fn let_(&mut self, name: &str, mutable: bool, init: Expr) -> &mut Self {
        let local = self.local(name, mutable, None);
        self.body.stmts.push(Stmt::Let {
            local,
            init: Some(init),
            loc: loc(),
        });
        self
    }

    fn stmt(&mut self, expr: Expr) -> &mut Self {
        self.body.stmts.push(Stmt::Expr { expr, loc: loc() });
        self
    }

    /// The body typed and its accesses decided, as the back ends take it.
    fn checked(&mut self) -> Result<Proved, Vec<String>> {
        check::check(self.body.clone())
            .map(bounds::prove)
            .map_err(|failed| failed.1.into_iter().map(|d| d.message).collect())
    }
}

#[test]
fn a_float_literal_takes_its_type_from_use() {
    // let mut t = 0.0; t += x as f64;  (f64 in Rust, so in the kernel too)
    let mut b = B::new(&[("x", ElemType::Int, false)]);
    b.let_("t", true, float("0.0"));
    let (t, x) = (b.get("t"), b.get("x"));
    let cast = e(ExprKind::Cast(Box::new(x), Scalar::F64));
    b.stmt(e(ExprKind::Assign(
        Some(BinOp::Add),
        Box::new(t),
        Box::new(cast),
    )));
    let proved = b.checked().unwrap();
    let body = proved.body();
    assert_eq!(body.locals[1].ty, Some(Ty::Scalar(Scalar::F64)));
    let c = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(c.contains("double t = 0.0;"), "{c}");
    #[cfg(feature = "rust")]
    {
        let rust = body_tokens(&proved, Mode::Emulate).to_string();
        assert!(rust.contains("t : f64 = 0.0f64"), "{rust}");
    }
}

#[test]
fn unconstrained_literals_default_to_i32_and_f64() {
    let mut b = B::new(&[]);
    b.let_("i", false, int(3)).let_("f", false, float("1.5"));
    let proved = b.checked().unwrap();
    let body = proved.body();
    assert_eq!(body.locals[0].ty, Some(Ty::Scalar(Scalar::I32)));
    assert_eq!(body.locals[1].ty, Some(Ty::Scalar(Scalar::F64)));
    let c = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(
        c.contains("int i = 3;") && c.contains("double f = 1.5;"),
        "{c}"
    );
}

#[test]
fn mixed_number_types_are_an_error_with_a_cast_hint() {
    let mut b = B::new(&[("n", ElemType::Int, false), ("x", ElemType::Float, false)]);
    let sum = bin(BinOp::Add, b.get("n"), b.get("x"));
    b.let_("s", false, sum);
    let errors = b.checked().unwrap_err();
    assert!(
        errors[0].contains("`i32` and `f32`") && errors[0].contains("cast"),
        "{errors:?}"
    );
}

#[test]
fn i64_atomics_use_the_unsigned_64_bit_atomic() {
    let mut b = B::new(&[("p", ElemType::Long, true)]);
    let add = || {
        e(ExprKind::Atomic(
            AtomicOp::Add,
            Box::new(b.get("p")),
            vec![int(5)],
            Check::Checked(None),
        ))
    };
    let (statement, value) = (add(), add());
    b.stmt(statement).let_("old", false, value);
    let proved = b.checked().unwrap();
    let c = emit_c::kernel(&proved, "k", Dialect::Cuda);
    // The old value is cast back where it is read, and only there (a cast whose value is
    // dropped is a warning in hipcc). `p` is checked (no type bounds it).
    let call = "atomicAdd((unsigned long long*)(parray_at(p, 0, ";
    let value = ", (unsigned long long)(5ll))";
    let lines: Vec<&str> = c.lines().filter(|l| l.contains(call)).collect();
    assert!(
        matches!(lines[..], [statement, read] if statement.starts_with(&format!("    {call}"))
            && statement.ends_with(&format!("{value};"))
            && read.starts_with(&format!("    long long old = (long long){call}"))),
        "{c}"
    );
}

/// HIP shuffles with `__shfl_down` of width 32 (the body's warps on any wavefront), taking
/// the delta's low 5 bits itself as CUDA's hardware does: a constant reduced in the source,
/// another masked.
#[test]
fn hip_shuffles_32_lanes_with_the_deltas_low_bits() {
    let mut b = B::new(&[
        ("v", ElemType::Int, false),
        ("d", ElemType::Unsigned, false),
    ]);
    let shfl = |value: Expr, delta: Expr, slot| {
        e(ExprKind::ShflDown {
            value: Box::new(value),
            delta: Box::new(delta),
            slot,
        })
    };
    let (far, computed) = (
        shfl(b.get("v"), int(40), 0),
        shfl(b.get("v"), bin(BinOp::Shr, b.get("d"), int(1)), 1),
    );
    b.let_("a", false, far).let_("c", false, computed);
    let proved = b.checked().unwrap();
    let hip = emit_c::kernel(&proved, "k", Dialect::Hip { wavefront: 64 });
    assert!(hip.contains("#include <hip/hip_runtime.h>\n"), "{hip}");
    assert!(hip.contains("int a = __shfl_down(v, 8u, 32);"), "{hip}");
    assert!(
        hip.contains("int c = __shfl_down(v, (d >> 1) & 31u, 32);"),
        "{hip}"
    );
    assert!(!hip.contains("_sync"), "{hip}");
    let cuda = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(
        cuda.contains("int a = __shfl_down_sync(0xffffffffu, v, 40u);"),
        "{cuda}"
    );
    assert!(!cuda.contains("#include"), "{cuda}");
}

/// A CUDA kernel opens with the line that lets the runtime launch it behind the previous
/// grid, and waits for that grid before its first statement (SPEC 4.2); HIP has neither.
#[test]
fn a_cuda_kernel_waits_for_the_previous_grid_before_its_first_statement() {
    let mut b = B::new(&[("v", ElemType::Int, false)]);
    b.let_("a", false, bin(BinOp::Add, b.get("v"), int(1)));
    let proved = b.checked().unwrap();
    let cuda = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(cuda.starts_with("// Generated by parray"), "{cuda}");
    assert!(cuda.contains(emit_c::FOLLOWS_PREVIOUS_GRID), "{cuda}");
    let body = &cuda[cuda.find("__global__").unwrap()..];
    let wait = body.find("griddepcontrol.wait;").expect("the wait");
    let trigger = body
        .find("griddepcontrol.launch_dependents;")
        .expect("the trigger");
    let first = body.find("int a = ").expect("the first statement");
    assert!(wait < trigger && trigger < first, "{cuda}");
    let hip = emit_c::kernel(&proved, "k", Dialect::Hip { wavefront: 64 });
    assert!(
        !hip.contains("griddepcontrol") && !hip.contains("parray: waits"),
        "{hip}"
    );
}

#[test]
fn usize_is_32_bits_in_the_kernel_and_its_emulation() {
    let mut b = B::new(&[]);
    let size = e(ExprKind::Size(1024));
    b.let_("n", false, bin(BinOp::Mul, size, int(2)));
    let proved = b.checked().unwrap();
    let body = proved.body();
    assert_eq!(body.locals[0].ty, Some(Ty::USIZE));
    // In `int` (SPEC 3.5, "Index arithmetic in `int`"): 2048 lies in its range.
    let c = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(c.contains("unsigned n = 1024 * 2;"), "{c}");
    #[cfg(feature = "rust")]
    {
        let rust = body_tokens(&proved, Mode::Emulate).to_string();
        assert!(rust.contains("n : u32 = 1024u32 * 2u32"), "{rust}");
        let pthd = body_tokens(&proved, Mode::Pthd).to_string();
        assert!(pthd.contains("n : usize = 1024usize * 2usize"), "{pthd}");
    }
}

#[test]
fn assigning_an_immutable_local_is_an_error() {
    let mut b = B::new(&[]);
    b.let_("k", false, int(1));
    let k = b.get("k");
    b.stmt(e(ExprKind::Assign(None, Box::new(k), Box::new(int(2)))));
    let errors = b.checked().unwrap_err();
    assert!(errors[0].contains("let mut k"), "{errors:?}");
}

#[test]
fn c_parenthesises_bitwise_operands_and_casts() {
    // (a & 1) == 0 must keep its parentheses in C, where `&` ranks below `==`.
    let mut b = B::new(&[("a", ElemType::Int, false)]);
    let and = bin(BinOp::BitAnd, b.get("a"), int(1));
    b.let_("even", false, bin(BinOp::Eq, and, int(0)));
    let shifted = bin(BinOp::Shl, b.get("a"), int(2));
    b.let_(
        "f",
        false,
        e(ExprKind::Cast(Box::new(shifted), Scalar::F32)),
    );
    let proved = b.checked().unwrap();
    let c = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(c.contains("bool even = (a & 1) == 0;"), "{c}");
    assert!(c.contains("float f = (float)(a << 2);"), "{c}");
}

#[test]
fn math_methods_follow_the_receiver_type() {
    let mut b = B::new(&[
        ("x", ElemType::Float, false),
        ("y", ElemType::Double, false),
    ]);
    let sx = e(ExprKind::Method(
        Method::Sqrt,
        Box::new(b.get("x")),
        Vec::new(),
    ));
    let my = e(ExprKind::Method(
        Method::Max,
        Box::new(b.get("y")),
        vec![float("0.5")],
    ));
    b.let_("a", false, sx).let_("m", false, my);
    let proved = b.checked().unwrap();
    let c = emit_c::kernel(&proved, "k", Dialect::Cuda);
    assert!(c.contains("float a = sqrtf(x);"), "{c}");
    assert!(c.contains("double m = fmax(y, 0.5);"), "{c}");
}

#[test]
fn a_method_on_an_ambiguous_literal_is_an_error() {
    let mut b = B::new(&[]);
    let s = e(ExprKind::Method(
        Method::Sqrt,
        Box::new(float("2.0")),
        Vec::new(),
    ));
    b.let_("r", false, s);
    let errors = b.checked().unwrap_err();
    assert!(errors[0].contains("ambiguous"), "{errors:?}");
}

#[test]
fn a_created_array_keeps_its_one_name() {
    let mut b = B::new(&[]);
    b.shared("tile", ElemType::Float, 16);
    let t = b.get("tile");
    b.let_("alias", false, t);
    let errors = b.checked().unwrap_err();
    assert!(errors[0].contains("keeps its one name"), "{errors:?}");
}

/// A body generic over `T`, specialised for a type: its forms become the type's offset
/// function and sizes as the offset compiler folds them for the named type (here 2x2
/// blocks of 32x16 seen as a 64x32 matrix), and its accesses are proved at those sizes.
#[test]
fn a_specialised_kernel_folds_the_type_and_proves_its_accesses() {
    let m = parray_layout::Module::parse(
        "#parray {paged float [2][2][32][16]} S\n\
         #parray {float [[#S_0][#S_2]][[#S_1][#S_3]]} V",
    )
    .unwrap();
    // for i in 0..$dim(T_0)$ { for j in 0..$dim(T_1)$ { a[$T[i][j]$] = 1.0; } }
    let mut b = B::new(&[("a", ElemType::Float, true)]);
    let (i, j) = (b.local("i", false, None), b.local("j", false, None));
    let size = |dim| {
        e(ExprKind::GenericSize {
            ty: "T".into(),
            path: vec![dim],
            size: None,
        })
    };
    let at = e(ExprKind::GenericOffset {
        ty: "T".into(),
        index: crate::ir::RuntimeIndex::top_level("T", 2),
        args: vec![e(ExprKind::Local(i)), e(ExprKind::Local(j))],
        sizes: None,
    });
    let store = e(ExprKind::Assign(
        None,
        Box::new(e(ExprKind::Index(
            Box::new(b.get("a")),
            Box::new(at),
            Check::Checked(None),
        ))),
        Box::new(float("1.0")),
    ));
    let for_ = |var, end, body| Stmt::For {
        var,
        start: int(0),
        end,
        inclusive: false,
        unroll: None,
        body,
        loc: loc(),
    };
    let inner = for_(
        j,
        size(1),
        vec![Stmt::Expr {
            expr: store,
            loc: loc(),
        }],
    );
    b.body.stmts.push(for_(i, size(0), vec![inner]));
    let types = [crate::kernels::TypeBinding {
        alias: "T",
        name: "V",
        module: &m,
    }];
    let grid = parray_layout::Module::parse("#parray {cuda(float* a) [1][1]} G").unwrap();
    let grid = crate::kernels::TypeBinding {
        alias: "G",
        name: "G",
        module: &grid,
    };
    let k = crate::kernels::specialised_kernel(b.body.clone(), &types, &grid, &[], "k").unwrap();
    assert_eq!(k.checked, None, "every access proved: {}", k.source);
    // Row (b0, r) of a block row is at b0 * 1024 + r * 16, column (b1, c) at b1 * 512 + c.
    assert!(
        k.source
            .contains("a[((int)i / 32) * 1024 + ((int)i % 32) * 16 + ((int)j / 16) * 512 + (int)j % 16] = 1.0f;"),
        "{}",
        k.source
    );
    assert!(
        k.source.contains("i < 64u") && k.source.contains("j < 32u"),
        "{}",
        k.source
    );
    // A type of another rank is an error, not a kernel.
    let flat = parray_layout::Module::parse("#parray {paged float [8]} F").unwrap();
    let types = [crate::kernels::TypeBinding {
        alias: "T",
        name: "F",
        module: &flat,
    }];
    let err = crate::kernels::specialised_kernel(b.body, &types, &grid, &[], "k").unwrap_err();
    assert!(
        err.message.contains("no dimension `F_1`"),
        "{}",
        err.message
    );
}

/// The remap kernel of `#copy`: 16-byte accesses where both layouts move in aligned runs
/// of 4 (rows to 2x2 blocks), a shared tile where the destination's contiguous digit is
/// another than the source's (a transposition), one element at a time otherwise; each
/// kernel's accesses all proved (or it would not be built), and a guard only where the
/// grid covers more than the copy.
#[test]
fn remap_kernels_by_layout() {
    let m = parray_layout::Module::parse(
        "#parray {dmem float [64][64]} R\n\
         #parray {dmem float [2][2][32][32]} Q\n\
         #parray {float [[#Q_0][#Q_2]][[#Q_1][#Q_3]]} B\n\
         #parray {float [#R_1][#R_0]} T\n\
         #parray {dmem float [64][63]} ODD\n\
         #parray {float [#ODD_1][#ODD_0]} ODDT",
    )
    .unwrap();
    let kernel = |s: &str, d: &str| {
        crate::kernels::remap_kernel(
            "k",
            parray_layout::ElemType::Float,
            (&m, s),
            (&m, d),
            Dialect::Cuda,
        )
        .unwrap()
    };
    let grid = |k: &crate::kernels::Kernel| (k.grid.grid, k.grid.block);
    let blocks = kernel("R", "B");
    assert!(
        blocks.source.contains("*(float4*)(d + ") && !blocks.source.contains("if ("),
        "{}",
        blocks.source
    );
    assert_eq!(grid(&blocks), ([1, 1, 1], [256, 1, 1]));
    let transposing = kernel("R", "T");
    assert!(
        transposing.source.contains("__shared__ float tile[1056]"),
        "{}",
        transposing.source
    );
    assert_eq!(grid(&transposing), ([2, 2, 1], [32, 8, 1]));
    let plain = kernel("ODD", "ODDT");
    assert!(
        !plain.source.contains("float4") && !plain.source.contains("tile["),
        "{}",
        plain.source
    );
    assert!(plain.source.contains("if (i < 4032u)"), "{}", plain.source);
    assert_eq!(grid(&plain), ([4, 1, 1], [256, 1, 1]));
    // A GPU copy indexes in 32 bits: 2^32 elements are refused, with the fix.
    let huge = parray_layout::Module::parse(
        "#parray {dmem float [65536][65536]} H\n#parray {float [#H_1][#H_0]} HT",
    )
    .unwrap();
    let refused = crate::kernels::remap_kernel(
        "k",
        parray_layout::ElemType::Float,
        (&huge, "H"),
        (&huge, "HT"),
        Dialect::Cuda,
    )
    .unwrap_err();
    assert!(
        refused
            .message
            .contains("copy it in parts of fewer than 2^32"),
        "{refused}"
    );
}

/// The common vector of two layouts, shared by the remap kernel and a body's `#copy`: Fig
/// 21's registers `R` and columns `C0` (offsets 0, 1, 256, 257, ...) move in aligned pairs,
/// not fours; a padded row does neither. Each pair of `C0` starts at `k * 256`.
#[test]
fn common_vectors_of_fig21() {
    let m = parray_layout::Module::parse(
        "const N = 256\n\
         dmem float [N][N] TY\n\
         dmem float [[N/16][[4][4]]#TY_0][[N/32][32]#TY_1] A\n\
         dmem float [[N/32][32]#TY_0][[N/256][[128][2]]#TY_1] B\n\
         dmem float [#A_0][#B_1] C\n\
         dmem float [#C_0_1][#C_1_1_1] C0\n\
         rmem float [16][2] R\n\
         smem float [16][17] P\n\
         smem float [#P_0][16#P_1] PV",
    )
    .unwrap();
    let node = |name: &str| m.lookup(name).unwrap().node;
    let flat = |name: &str| parray_layout::offset_function(&m, node(name), "k").unwrap();
    assert_eq!(
        parray_layout::common_vector(&flat("R"), &flat("C0"), 32, &[4, 2]),
        Some(2)
    );
    assert_eq!(
        parray_layout::common_vector(&flat("R"), &flat("R"), 32, &[4, 2]),
        Some(4)
    );
    assert_eq!(
        parray_layout::common_vector(&flat("PV"), &flat("R"), 32, &[4, 2]),
        None
    );
    let pairs = parray_layout::offset_function_by(&m, node("C0"), "k", 2).unwrap();
    assert_eq!(pairs.to_source(), "k * 256");
    assert_eq!(pairs.vars.max(parray_layout::VarId(0)), 15);
}

/// The prover's own tests: a shared array of `len` ints written at `index(i)` inside
/// `for i in lo..hi`, proved or checked.
mod prover {
    use super::*;

    /// The check `prove` gives the one access of `for i in lo..hi { s[index(i)] = 1; }`
    /// on a created shared array of `len` elements.
    fn access_check(len: u64, lo: u128, hi: u128, index: impl Fn(Expr) -> Expr) -> Check {
        guarded_check(len, lo, hi, index, None).expect("an access outside any `if`")
    }

    /// As [`access_check`], the store inside `if i < bound { .. }` (`Some((bound, true))`)
    /// or in its `else` (`Some((bound, false))`); `None` where the prover dropped the
    /// branch as one no iteration takes.
    fn guarded_check(
        len: u64,
        lo: u128,
        hi: u128,
        index: impl Fn(Expr) -> Expr,
        guard: Option<(u128, bool)>,
    ) -> Option<Check> {
        let mut b = B::new(&[]);
        b.shared("s", ElemType::Int, len);
        let i = b.local("i", false, Some(Ty::USIZE));
        let at = index(e(ExprKind::Local(i)));
        let store = e(ExprKind::Assign(
            None,
            Box::new(e(ExprKind::Index(
                Box::new(b.get("s")),
                Box::new(at),
                Check::Checked(None),
            ))),
            Box::new(int(1)),
        ));
        let store = Stmt::Expr {
            expr: store,
            loc: loc(),
        };
        let body = match guard {
            None => store,
            Some((bound, in_then)) => {
                let (then, els) = if in_then {
                    (vec![store], None)
                } else {
                    (Vec::new(), Some(vec![store]))
                };
                Stmt::If {
                    cond: bin(BinOp::Lt, e(ExprKind::Local(i)), int(bound)),
                    then,
                    els,
                    loc: loc(),
                }
            }
        };
        b.body.stmts.push(Stmt::For {
            var: i,
            start: int(lo),
            end: int(hi),
            inclusive: false,
            unroll: None,
            body: vec![body],
            loc: loc(),
        });
        let proved = b.checked().unwrap();
        let mut found = None;
        visit_exprs(&proved.body().stmts, &mut |x| {
            if let ExprKind::Index(_, _, check) = &x.kind {
                found = Some(check.clone());
            }
        });
        found
    }

    /// Two loops of one variable over their own ranges, as a guarded `#copy`'s vector loop
    /// (`for k in 0..2 { r.load4(k * 4) }`) and its element loop (`for k in 0..8 { r[k] }`)
    /// share its `k`: each access is proved by its own loop's range, not by the one the
    /// forward walk saw last (`k` up to 7 would put `k * 4` past the 8 elements).
    #[test]
    fn loops_sharing_a_variable_each_prove_by_their_own_range() {
        let mut b = B::new(&[]);
        b.shared("s", ElemType::Int, 8);
        let k = b.local("k", false, Some(Ty::USIZE));
        let store = |at: Expr, b: &B| Stmt::Expr {
            expr: e(ExprKind::Assign(
                None,
                Box::new(e(ExprKind::Index(
                    Box::new(b.get("s")),
                    Box::new(at),
                    Check::Checked(None),
                ))),
                Box::new(int(1)),
            )),
            loc: loc(),
        };
        let lp = |end: u128, body: Stmt| Stmt::For {
            var: k,
            start: int(0),
            end: int(end),
            inclusive: false,
            unroll: None,
            body: vec![body],
            loc: loc(),
        };
        let by_four = store(
            bin(
                BinOp::Add,
                bin(BinOp::Mul, e(ExprKind::Local(k)), int(4)),
                int(3),
            ),
            &b,
        );
        let each = store(e(ExprKind::Local(k)), &b);
        b.body.stmts.push(lp(2, by_four));
        b.body.stmts.push(lp(8, each));
        let proved = b.checked().unwrap();
        let mut checks = Vec::new();
        visit_exprs(&proved.body().stmts, &mut |x| {
            if let ExprKind::Index(_, _, check) = &x.kind {
                checks.push(check.clone());
            }
        });
        assert_eq!(checks, vec![Check::Proved, Check::Proved]);
    }

    /// The same sharing where the longer loop's store is guarded, as a guarded `#copy`'s
    /// element loop (`for k in 0..8 { if k < 6 { s[k] = 1 } else { s[k] = 2 } }`, then
    /// `for k in 0..2 { s[k] = 3 }`): its `if` is decided by its own loop's range, so it
    /// stays; the range the walk saw last (`k` below 2) would have it always true, and
    /// drop the `else`.
    #[test]
    fn loops_sharing_a_variable_each_decide_their_branches_by_their_own_range() {
        let mut b = B::new(&[]);
        b.shared("s", ElemType::Int, 8);
        let k = b.local("k", false, Some(Ty::USIZE));
        let store = |v: u128, b: &B| {
            vec![Stmt::Expr {
                expr: e(ExprKind::Assign(
                    None,
                    Box::new(e(ExprKind::Index(
                        Box::new(b.get("s")),
                        Box::new(e(ExprKind::Local(k))),
                        Check::Checked(None),
                    ))),
                    Box::new(int(v)),
                )),
                loc: loc(),
            }]
        };
        let lp = |end: u128, body: Vec<Stmt>| Stmt::For {
            var: k,
            start: int(0),
            end: int(end),
            inclusive: false,
            unroll: None,
            body,
            loc: loc(),
        };
        let guarded = Stmt::If {
            cond: bin(BinOp::Lt, e(ExprKind::Local(k)), int(6)),
            then: store(1, &b),
            els: Some(store(2, &b)),
            loc: loc(),
        };
        b.body.stmts.push(lp(8, vec![guarded]));
        let short = store(3, &b);
        b.body.stmts.push(lp(2, short));
        let proved = b.checked().unwrap();
        let mut ifs = 0;
        crate::ir::visit_stmts(&proved.body().stmts, &mut |s| {
            ifs += usize::from(matches!(s, Stmt::If { els: Some(_), .. }));
        });
        assert_eq!(ifs, 1, "{:#?}", proved.body().stmts);
    }

    /// The one access of a body over the 128-byte swizzle `T` of 16 rows (`64 * r + 8 *
    /// ((c / 8) ^ (r % 8)) + c % 8`, SPEC 2.5 rule 11) at four tiles' places in a shared
    /// array of two tiles (2048 ints):
    ///
    /// ```text
    /// for b in 0..4 { for r in 0..16 { let c = column();
    ///     if 16 * b + r < 32 { s[1024 * b + $T[r][c]$] = 1; } } }   // `guarded`
    /// ```
    ///
    /// No interval bounds the index below 2048 (`b` reaches 3): only the guard, the XOR
    /// bounded by its operands' ranges ([`crate::passes::linear`]).
    fn swizzled_check(guarded: bool, column: impl Fn(&mut B) -> Stmt) -> Check {
        let m =
            parray_layout::Module::parse("#parray {smem int [[2][8]][[8 ^ T_0_1][8]]} T").unwrap();
        let ie = parray_layout::parse_index_expr("T[r][c]").unwrap();
        let off = parray_layout::compile(&m, &ie).unwrap();
        assert_eq!(off.to_source(), "r * 64 + c % 8 + ((c / 8) ^ (r % 8)) * 8");
        let mut b = B::new(&[]);
        b.shared("s", ElemType::Int, 2048);
        let (t, r) = (b.local("b", false, None), b.local("r", false, None));
        let column = column(&mut b);
        let c = b.get("c");
        let at = e(ExprKind::Offset {
            off,
            args: vec![e(ExprKind::Local(r)), c],
            of: Indexed::of_type(&m, "T"),
        });
        let at = bin(
            BinOp::Add,
            bin(BinOp::Mul, int(1024), e(ExprKind::Local(t))),
            at,
        );
        let store = Stmt::Expr {
            expr: e(ExprKind::Assign(
                None,
                Box::new(e(ExprKind::Index(
                    Box::new(b.get("s")),
                    Box::new(at),
                    Check::Checked(None),
                ))),
                Box::new(int(1)),
            )),
            loc: loc(),
        };
        let row = bin(
            BinOp::Add,
            bin(BinOp::Mul, int(16), e(ExprKind::Local(t))),
            e(ExprKind::Local(r)),
        );
        let store = match guarded {
            true => Stmt::If {
                cond: bin(BinOp::Lt, row, int(32)),
                then: vec![store],
                els: None,
                loc: loc(),
            },
            false => store,
        };
        let for_ = |var, end, body| Stmt::For {
            var,
            start: int(0),
            end: int(end),
            inclusive: false,
            unroll: None,
            body,
            loc: loc(),
        };
        let inner = for_(r, 16, vec![column, store]);
        b.body.stmts.push(for_(t, 4, vec![inner]));
        let proved = b.checked().unwrap();
        // The store is the body's last access.
        let mut found = None;
        visit_exprs(&proved.body().stmts, &mut |x| {
            if let ExprKind::Index(_, _, check) = &x.kind {
                found = Some(check.clone());
            }
        });
        found.expect("the store")
    }

    /// Under the guard the swizzled offset is at most `64 * 31 + 8 * 7 + 7 = 2047` (the
    /// XOR of two digits below 8 is below 8) and the store is proved; without the guard,
    /// or where the column leaves its dimension (to 4095) or is a value read from memory,
    /// it stays checked.
    #[test]
    fn a_swizzled_offset_is_proved_where_its_xor_operands_are_bounded() {
        let column_to = |end: u128| {
            move |b: &mut B| {
                // c = (r * 37) % end
                let init = bin(BinOp::Rem, bin(BinOp::Mul, b.get("r"), int(37)), int(end));
                let c = b.local("c", false, None);
                Stmt::Let {
                    local: c,
                    init: Some(init),
                    loc: loc(),
                }
            }
        };
        assert_eq!(swizzled_check(true, column_to(64)), Check::Proved);
        assert!(matches!(
            swizzled_check(false, column_to(64)),
            Check::Checked(Some(_))
        ));
        assert!(matches!(
            swizzled_check(true, column_to(4096)),
            Check::Checked(Some(_))
        ));
        let read = |b: &mut B| {
            let first = e(ExprKind::Index(
                Box::new(b.get("s")),
                Box::new(int(0)),
                Check::Checked(None),
            ));
            let c = b.local("c", false, None);
            Stmt::Let {
                local: c,
                init: Some(e(ExprKind::Cast(Box::new(first), Scalar::Usize))),
                loc: loc(),
            }
        };
        assert!(matches!(
            swizzled_check(true, read),
            Check::Checked(Some(_))
        ));
    }

    #[test]
    fn an_index_within_the_array_for_every_iteration_is_proved() {
        assert_eq!(access_check(16, 0, 16, |i| i), Check::Proved);
        // One past the end for the last iteration.
        assert!(matches!(
            access_check(16, 0, 17, |i| i),
            Check::Checked(Some(_))
        ));
        // `x & 15` lies in [0, 15] whatever `x` is.
        let masked = |i| bin(BinOp::BitAnd, bin(BinOp::Mul, i, int(1000)), int(15));
        assert_eq!(access_check(16, 0, 100, masked), Check::Proved);
        assert!(matches!(
            access_check(15, 0, 100, masked),
            Check::Checked(Some(_))
        ));
    }

    #[test]
    fn an_if_below_a_bound_guards_the_accesses_of_its_branch() {
        // A tail: 2048 iterations over 1000 elements, each guarded by `i < 1000`.
        assert_eq!(
            guarded_check(1000, 0, 2048, |i| i, Some((1000, true))),
            Some(Check::Proved)
        );
        // Not the other branch: it runs for the indices past the bound.
        assert!(matches!(
            guarded_check(1000, 0, 2048, |i| i, Some((1000, false))),
            Some(Check::Checked(Some(_)))
        ));
        // A bound past the array proves nothing.
        assert!(matches!(
            guarded_check(1000, 0, 2048, |i| i, Some((1001, true))),
            Some(Check::Checked(Some(_)))
        ));
    }

    proptest::proptest! {
        /// `if i < bound { s[i + c] = 1; }` for `i` in `lo..hi`: in the guarded branch,
        /// proved exactly when every index that reaches the access is in range; in the
        /// other branch never proved wrongly.
        #[test]
        fn a_guarded_index_is_proved_exactly_when_the_indices_that_reach_it_are_in_range(
            len in 1u64..64, lo in 0u128..40, span in 1u128..60, bound in 0u128..80,
            c in 0u128..12, in_then: bool,
        ) {
            let hi = lo + span;
            let check = guarded_check(len, lo, hi, |i| bin(BinOp::Add, i, int(c)), Some((bound, in_then)));
            let reach: Vec<u128> = (lo..hi).filter(|i| (*i < bound) == in_then).collect();
            // A branch is dropped only where no iteration takes it.
            let Some(check) = check else {
                proptest::prop_assert!(reach.is_empty(), "dropped a branch that runs: i in {}..{} bound {} then {}", lo, hi, bound, in_then);
                return Ok(());
            };
            let in_range = reach.iter().all(|i| i + c < u128::from(len));
            if check == Check::Proved {
                proptest::prop_assert!(in_range, "proved out of range: len {} i in {}..{} bound {} then {} c {}", len, lo, hi, bound, in_then, c);
            }
            if in_then && !reach.is_empty() {
                proptest::prop_assert_eq!(check == Check::Proved, in_range, "len {} i in {}..{} bound {} c {}", len, lo, hi, bound, c);
            }
        }

        /// `s[i * k + c]` for `i` in `lo..hi`: proved exactly when every iteration's index
        /// lies below the array's length (computed here by running the loop), for affine
        /// indices, whose intervals are exact.
        #[test]
        fn an_affine_index_is_proved_exactly_when_it_stays_in_range(
            len in 1u64..64, lo in 0u128..40, span in 1u128..40, k in 0u128..5, c in 0u128..12,
        ) {
            let hi = lo + span;
            let check = access_check(len, lo, hi, |i| bin(BinOp::Add, bin(BinOp::Mul, i, int(k)), int(c)));
            let in_range = (lo..hi).all(|i| i * k + c < u128::from(len));
            proptest::prop_assert_eq!(check == Check::Proved, in_range, "len {} i in {}..{} index i * {} + {}", len, lo, hi, k, c);
        }

        /// `s[(i * m) % r]`: whatever the prover decides, it never proves an index that
        /// leaves the array (soundness; `%` by a constant bounds the index by it).
        #[test]
        fn a_remainder_is_never_proved_past_the_end(
            len in 1u64..64, hi in 1u128..80, m in 1u128..7, r in 1u128..80,
        ) {
            let check = access_check(len, 0, hi, |i| bin(BinOp::Rem, bin(BinOp::Mul, i, int(m)), int(r)));
            if check == Check::Proved {
                proptest::prop_assert!((0..hi).all(|i| (i * m) % r < u128::from(len)));
            }
        }
    }
}

/// Each number constant's C text reads back as the value Rust gives the same path: floats
/// bit for bit (decimals parsed as C parses them, bits for the infinities and NaN), and
/// integers as the value with C's `-MAX - 1` for the signed minimums.
#[test]
fn number_constants_are_exact_in_c() {
    let floats = ["f32", "f64"];
    let mut seen = 0;
    for ty in floats {
        let paths = crate::number_const::FLOAT_NAMES
            .iter()
            .map(|n| vec![ty, n])
            .chain(
                ["PI", "E", "TAU", "SQRT_2", "LN_10", "FRAC_1_SQRT_2"]
                    .iter()
                    .map(|n| vec!["std", ty, "consts", n]),
            );
        for path in paths {
            let c = NumberConst::parse(&path).unwrap_or_else(|| panic!("{path:?}"));
            let want = c.float_value().expect("a float constant");
            let text = c.c_value();
            let got = if let Some(bits) = text.strip_prefix("__int_as_float(0x") {
                f64::from(f32::from_bits(
                    u32::from_str_radix(bits.trim_end_matches(')'), 16).unwrap(),
                ))
            } else if let Some(bits) = text.strip_prefix("__longlong_as_double(0x") {
                f64::from_bits(u64::from_str_radix(bits.trim_end_matches("ll)"), 16).unwrap())
            } else {
                let digits = text.trim_start_matches('(').trim_end_matches(')');
                match digits.strip_suffix('f') {
                    Some(d) => f64::from(d.parse::<f32>().unwrap()),
                    None => digits.parse::<f64>().unwrap(),
                }
            };
            assert!(
                got.to_bits() == want.to_bits() || (got.is_nan() && want.is_nan()),
                "{path:?}: {text} is {got}, not {want}"
            );
            seen += 1;
        }
    }
    assert_eq!(
        NumberConst::parse(&["std", "f32", "consts", "PI"]).and_then(NumberConst::float_value),
        Some(f64::from(std::f32::consts::PI))
    );
    // Integers: the value, and the C text of it.
    let ints: [(&str, i128, i128, &str, &str); 4] = [
        (
            "i32",
            i32::MIN.into(),
            i32::MAX.into(),
            "(-2147483647 - 1)",
            "2147483647",
        ),
        ("u32", 0, u32::MAX.into(), "0u", "4294967295u"),
        (
            "i64",
            i64::MIN.into(),
            i64::MAX.into(),
            "(-9223372036854775807ll - 1ll)",
            "9223372036854775807ll",
        ),
        (
            "u8",
            0,
            u8::MAX.into(),
            "((unsigned char)0)",
            "((unsigned char)255)",
        ),
    ];
    for (ty, min, max, c_min, c_max) in ints {
        let (lo, hi) = (
            NumberConst::parse(&[ty, "MIN"]).unwrap(),
            NumberConst::parse(&[ty, "MAX"]).unwrap(),
        );
        assert_eq!((lo.int_value(32), hi.int_value(32)), (Some(min), Some(max)));
        assert_eq!(
            (lo.c_value().as_str(), hi.c_value().as_str()),
            (c_min, c_max)
        );
    }
    // A cuda body's `usize` is 32 bits; a pthd body's is the host's.
    let usize_max = NumberConst::parse(&["usize", "MAX"]).unwrap();
    assert_eq!(usize_max.int_value(32), Some(u32::MAX.into()));
    assert_eq!(usize_max.int_value(64), Some(u64::MAX.into()));
    assert_eq!(seen, 26);
    // Not Rust: `f32::consts::PI` (no such path), a bool's or an integer's math constant.
    for bad in [
        &["f32", "consts", "PI"][..],
        &["bool", "MAX"],
        &["std", "u32", "consts", "PI"],
        &["f32", "PI"],
    ] {
        assert_eq!(NumberConst::parse(bad), None, "{bad:?}");
    }
}

/// `for k in 0..$dim(T_0)$ { a[$T[k]$] = 1.0; }` over a run-time type `T` of `N`
/// elements: the loop's variable lies below the size `N` of the dimension it indexes, so
/// the offset below `T`'s extent, which the detour checks `a` holds. On the CPU (64-bit
/// `usize`) that holds at every `N`; a GPU computes the index in 32 bits, which no size is
/// known to fit (its kernel is specialised and proved with numbers instead).
#[test]
fn a_loop_to_a_run_time_size_proves_a_form_inside_it_on_the_cpu() {
    use parray_layout::symbolic::Atom;
    let n = Poly::atom(Atom::Size("N".into()));
    let proved = |target: Target, bound: Poly, inclusive: bool| {
        let mut b = B::new(&[("a", ElemType::Float, true)]);
        b.body.target = target;
        let k = b.local("k", false, None);
        let at = e(ExprKind::GenericOffset {
            ty: "T".into(),
            index: RuntimeIndex::top_level("T", 1),
            args: vec![e(ExprKind::Local(k))],
            sizes: Some(Box::new(FormSizes {
                dims: vec![vec![n.clone()]],
                extent: n.clone(),
            })),
        });
        let store = e(ExprKind::Assign(
            None,
            Box::new(e(ExprKind::Index(
                Box::new(b.get("a")),
                Box::new(at),
                Check::Checked(None),
            ))),
            Box::new(float("1.0")),
        ));
        b.body.stmts.push(Stmt::For {
            var: k,
            start: int(0),
            end: e(ExprKind::GenericSize {
                ty: "T".into(),
                path: vec![0],
                size: Some(bound),
            }),
            inclusive,
            unroll: None,
            body: vec![Stmt::Expr {
                expr: store,
                loc: loc(),
            }],
            loc: loc(),
        });
        let p = b.checked().unwrap();
        (p.proof().accesses, p.proof().proved)
    };
    assert_eq!(proved(Target::Pthd, n.clone(), false), (1, 1));
    assert_eq!(proved(Target::Cuda, n.clone(), false), (1, 0));
    // `0..=N`, and a loop to another size, prove nothing.
    assert_eq!(proved(Target::Pthd, n.clone(), true), (1, 0));
    let m = Poly::atom(Atom::Size("M".into()));
    assert_eq!(proved(Target::Pthd, m, false), (1, 0));
}
