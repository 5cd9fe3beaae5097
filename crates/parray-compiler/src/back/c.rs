//! CUDA C back end of the body IR: a checked cuda body as an `extern "C" __global__`
//! kernel, in CUDA C++ for NVRTC or in HIP C++ for an AMD GPU ([`Dialect`]).
//!
//! Every local is declared with the type [`crate::passes::check`] decided, so the kernel computes
//! in the types the Rust of the same body computes in. `usize` is `unsigned` (32-bit index
//! arithmetic, as a careful CUDA programmer writes it; the emulator computes it in `u32`
//! too). `#line` directives name the user's file and line of every statement, so NVRTC
//! errors and compute-sanitizer reports point at the user's code.

use std::cell::RefCell;
use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use crate::fault;
use crate::ir::Root;
use crate::ir::{
    lanes, precedence, BinOp, Body, Check, Expr, ExprKind, Lit, Loc, LocalId, Method, Scalar, Stmt,
    Ty, UnOp, Wgmma, WARP,
};
use crate::passes::bounds::Proved;
use crate::passes::check::elem_of;
use parray_layout::emit_cuda;
use parray_layout::expr::Term;
use parray_layout::kinds::{ElemType, MemKind, Record};

/// The C++ dialect a kernel is written in. The two differ only where CUDA and HIP do:
/// HIP's source includes its runtime header, shuffles with `__shfl_down(v, d, 32)` (HIP
/// has no `_sync` shuffles, so no lane mask), and counts `__launch_bounds__`' occupancy in
/// waves per execution unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// CUDA C++, as NVRTC compiles it.
    Cuda,
    /// HIP C++, as hipcc and hiprtc compile it, for an AMD GPU whose wavefronts are
    /// `wavefront` lanes wide: 64 on CDNA (gfx90a), 32 on RDNA (gfx1030).
    Hip { wavefront: u32 },
}

/// The execution units (SIMDs) of the multiprocessor a block runs on, on an AMD GPU: a
/// CDNA compute unit has four SIMDs, an RDNA work-group processor four SIMD32s.
const AMD_SIMDS_PER_MULTIPROCESSOR: u32 = 4;

impl Dialect {
    /// The attribute that asks for `blocks` blocks of `threads` threads on a multiprocessor
    /// at once. CUDA counts blocks per multiprocessor; HIP's second operand is the waves
    /// each execution unit must hold (`amdgpu_waves_per_eu`): the blocks' waves shared
    /// among the multiprocessor's SIMDs, rounded up.
    fn launch_bounds(self, threads: u32, blocks: u32) -> String {
        let second = match self {
            Dialect::Cuda => blocks,
            Dialect::Hip { wavefront } => (threads * blocks)
                .div_ceil(wavefront * AMD_SIMDS_PER_MULTIPROCESSOR)
                .max(1),
        };
        format!("__launch_bounds__({threads}, {second}) ")
    }
}

/// The C type of a scalar.
pub fn c_scalar(s: Scalar) -> &'static str {
    match s {
        Scalar::Bool => "bool",
        // Plain `char` is unsigned on some hosts (Arm): `i8` is `signed char` everywhere.
        Scalar::I8 => "signed char",
        Scalar::U8 => "unsigned char",
        Scalar::I32 => "int",
        Scalar::U32 | Scalar::Usize => "unsigned",
        Scalar::I64 => "long long",
        Scalar::U64 => "unsigned long long",
        Scalar::F32 => "float",
        Scalar::F64 => "double",
        Scalar::F16 => "__half",
        Scalar::Bf16 => "__nv_bfloat16",
    }
}

fn c_type(t: Ty) -> String {
    match t {
        Ty::Scalar(s) => c_scalar(s).to_string(),
        Ty::Vector(e) => e.c_name().to_string(),
        Ty::Record(r) => r.name().to_string(),
        Ty::Ptr { elem, soa: false } => format!("{}*", elem.c_name()),
        Ty::Ptr { elem, soa: true } => soa_pointer_name(elem),
        // Arrays are declared by `Create` (the checker lets no `let` rename one), and no
        // unit or host value reaches a declaration of a cuda body.
        other => unreachable!("no C declaration of {other}"),
    }
}

/// The C struct a pointer into an SoA array of the record `elem` is: a pointer per field
/// (SPEC 2.3), indexed and moved as a pointer to whole records is ([`soa_declaration`]).
fn soa_pointer_name(elem: ElemType) -> String {
    format!("{}_soa", elem.c_name())
}

/// The declarations of an SoA pointer to the record `r` (`Particle_soa`): the struct of
/// field pointers, passed by value; `p[k]` a reference to the fields of element `k`, which
/// reads as a whole record, takes one (each field stored to its array) and names its fields
/// (`p[k].mass += 1.0f` writes that field's array alone); `p + k` moves every field pointer.
fn soa_declaration(r: Record) -> String {
    let (name, fields) = (r.name(), r.def().fields);
    let soa = soa_pointer_name(ElemType::Record(r));
    let each = |f: &dyn Fn(&parray_layout::Field) -> String, sep: &str| {
        fields.iter().map(f).collect::<Vec<_>>().join(sep)
    };
    let refs = each(&|f| format!(" {}& {};", f.elem.c_name(), f.name), "");
    let ptrs = each(&|f| format!(" {}* {};", f.elem.c_name(), f.name), "");
    let gather = each(&|f| format!(" v.{0} = {0};", f.name), "");
    let scatter = each(&|f| format!(" {0} = v.{0};", f.name), "");
    let at = each(&|f| format!("{}[k]", f.name), ", ");
    let step = each(&|f| format!(" p.{} += k;", f.name), "");
    format!(
        r#"struct {soa}_ref {{{refs}
    __device__ __forceinline__ operator {name}() const {{ {name} v;{gather} return v; }}
    __device__ __forceinline__ const {soa}_ref& operator=(const {name}& v) const {{{scatter} return *this; }}
    __device__ __forceinline__ const {soa}_ref& operator=(const {soa}_ref& v) const {{ return *this = ({name})v; }}
}};
struct {soa} {{{ptrs}
    __device__ __forceinline__ {soa}_ref operator[](unsigned long long k) const {{ {soa}_ref r = {{ {at} }}; return r; }}
    __device__ __forceinline__ {soa}_ref operator*() const {{ return (*this)[0]; }}
}};
__device__ __forceinline__ {soa} operator+({soa} p, unsigned long long k) {{{step} return p; }}
"#
    )
}

/// Words a C local may not be called.
const C_RESERVED: &[&str] = &[
    "auto",
    "bool",
    "char",
    "const",
    "default",
    "do",
    "double",
    "float",
    "goto",
    "int",
    "long",
    "register",
    "short",
    "signed",
    "sizeof",
    "static",
    "switch",
    "case",
    "typedef",
    "union",
    "unsigned",
    "void",
    "volatile",
    "new",
    "delete",
    "this",
    "template",
    "class",
    "private",
    "public",
    "namespace",
    "operator",
    "blockIdx",
    "threadIdx",
    "blockDim",
    "gridDim",
    "printf",
    "min",
    "max",
];

/// The arrays the checked accesses of `body` reach, in the order the kernel numbers them
/// (`which` in its fault record): the pointer parameters, then the arrays the body
/// creates, by name. `None` when every access is proved: the kernel has no checks, and no
/// parameters beyond the declared ones.
pub fn checked_arrays(proved: &Proved) -> Option<Vec<String>> {
    checked(proved.body())
}

fn checked(body: &Body) -> Option<Vec<String>> {
    let mut checked = false;
    // A function's accesses through its pointers are checked (its pointers' extents are
    // its callers'): they are the body's checked accesses too.
    body.visit_every_expr(&mut |e| {
        checked |= matches!(
            e.kind,
            ExprKind::Index(_, _, Check::Checked(_))
                | ExprKind::Atomic(_, _, _, Check::Checked(_))
                | ExprKind::Vector {
                    check: Check::Checked(_),
                    ..
                }
        );
    });
    // A call passes a pointer's extent and the fault record on.
    if !checked && !body.functions.iter().any(|f| f.has_pointers(body)) {
        return None;
    }
    let mut names: Vec<String> = body
        .params
        .iter()
        .filter(|(p, _)| p.pointer)
        .map(|(_, id)| body.local(*id).name.clone())
        .collect();
    created(&body.stmts, &mut |_, type_name, _| {
        names.push(type_name.to_string())
    });
    Some(names)
}

/// Each array the statements create (`S::create()`): its local, type name and length.
fn created(stmts: &[Stmt], f: &mut dyn FnMut(LocalId, &str, u64)) {
    for s in stmts {
        if let Stmt::Create {
            local,
            type_name,
            len,
            ..
        } = s
        {
            f(*local, type_name, fixed_len(*len));
        }
        s.for_each_part(&mut |part| {
            if let crate::ir::Part::Body(b) = part {
                created(b, f);
            }
        });
    }
}

/// `atomic_cas` and `atomic_exch`: CUDA's, the first followed and the second preceded by a
/// `__threadfence()` (acquire and release), so that a lock taken by one and released by
/// the other orders the plain accesses between them (as the emulation's sequentially
/// consistent atomics do).
const LOCK_HELPERS: &str = r#"template <typename T> __device__ __forceinline__ T parray_cas(T* p, T compare, T v) {
    T old = atomicCAS(p, compare, v);
    __threadfence();
    return old;
}
template <typename T> __device__ __forceinline__ T parray_exch(T* p, T v) {
    __threadfence();
    return atomicExch(p, v);
}
"#;

/// The block's dynamic shared memory, where shared arrays live when they are more than a
/// kernel may declare statically.
const DYNAMIC_SHARED: &str = "parray_shared";

/// The kernel `name` in HIP C++ for the 64-lane wavefronts of a CDNA GPU (what
/// `PARRAY_DUMP_SOURCE=hip` prints, SPEC.md 4.8), launched on `grid`; headed by why it
/// cannot run on an AMD GPU (its LDS is 64 KiB), where it cannot.
pub fn hip_kernel(proved: &Proved, name: &str, grid: &parray_layout::CudaGrid) -> String {
    let mut hip = kernel(proved, name, Dialect::Hip { wavefront: 64 });
    let shared = proved.body().shared_layout().1;
    if let Err(reason) = grid.fits(shared, &parray_layout::grid::HIP) {
        hip.insert_str(
            0,
            &format!("// parray: this kernel cannot run on an AMD GPU: {reason}\n"),
        );
    }
    hip
}

/// The kernel `name` for the checked cuda body `body`, in `dialect`. A kernel with checked
/// accesses ([`checked_arrays`]) takes, after the declared parameters, the number of
/// elements each pointer parameter reaches and the launch's fault record.
pub fn kernel(proved: &Proved, name: &str, dialect: Dialect) -> String {
    entry(proved, name, dialect, Entry::Kernel)
}

/// How the body is entered: as a kernel, or as the store callback of a cuFFT plan.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Entry {
    /// `extern "C" __global__ void name(params)`, the thread indices from the hardware's.
    Kernel,
    /// cuFFT's LTO store callback of single-precision complex elements, `__device__ void
    /// name(void* out, unsigned long long offset, float2 element, void* info, void*
    /// shared)`: the body's first parameter (a `float2*`) is `out`, its second (a `float2`)
    /// the element, and its thread index (`$tid$` of a one-dimensional array) the offset
    /// cuFFT stores at. Every access is proved: a callback takes no fault record.
    FftStore,
}

/// The body of a cuda array `cuda(float2* d, float2 v) [COUNT][1]` as cuFFT's LTO store
/// callback `name` ([`Entry::FftStore`]): `$tid$` is the offset at which cuFFT stores `v`
/// in its output order, `d` the plan's output. None where an access is unproved (a
/// callback has nowhere to record a fault) or the parameters differ.
pub fn fft_store_callback(proved: &Proved, name: &str) -> Option<String> {
    let body = proved.body();
    let params: Vec<(ElemType, bool)> = body
        .params
        .iter()
        .map(|(p, _)| (p.elem, p.pointer))
        .collect();
    let fits = params == [(ElemType::Float2, true), (ElemType::Float2, false)]
        && checked(body).is_none()
        && body.tids.iter().all(|(path, _)| path.is_empty());
    fits.then(|| entry(proved, name, Dialect::Cuda, Entry::FftStore))
}

fn entry(proved: &Proved, name: &str, dialect: Dialect, entry: Entry) -> String {
    let body = proved.body();
    let mut w = Writer::new(body, dialect);
    // A parameter read from constant memory is the module's `__constant__` array of its
    // name, which the launch fills from the argument (passed under another name).
    let constant = |id: &LocalId| body.constants.iter().any(|(c, _)| c == id);
    let mut params: Vec<String> = body
        .params
        .iter()
        .map(|(p, id)| {
            let prefix = if constant(id) {
                "__parray_constant_"
            } else {
                ""
            };
            let ty = c_type(Ty::of_param(p));
            format!("{ty} {prefix}{}", w.names[id.0 as usize])
        })
        .collect();
    // Host values the body reads, by value, after the declared parameters.
    params.extend(body.captures.iter().map(|id| {
        let ty = body.local(*id).ty.expect("checked: a host value's type");
        format!("{} {}", c_type(ty), w.names[id.0 as usize])
    }));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Generated by parray from {}; do not edit.",
        body.file
    );
    match dialect {
        Dialect::Hip { .. } => out.push_str("#include <hip/hip_runtime.h>\n"),
        _ if needs_sm90a(body) => out.push_str(SM90A),
        _ => {}
    }
    let follows = dialect == Dialect::Cuda && entry == Entry::Kernel;
    if follows {
        out.push_str(FOLLOWS_PREVIOUS_GRID);
    }
    out.push_str(&elem_declarations(body, dialect));
    out.push_str(&record_makers(body));
    let soa = soa_records(body);
    for r in &soa {
        out.push_str(&soa_declaration(*r));
    }
    let checked = checked(body).is_some();
    let mut bases = Vec::new();
    if checked {
        out.push_str(&fault::check_helpers());
        if body.functions.iter().any(|f| f.has_pointers(body)) {
            out.push_str(fault::REST_HELPER);
        }
        for r in &soa {
            let fields: Vec<(&str, &str)> = r
                .def()
                .fields
                .iter()
                .map(|f| (f.name, f.elem.c_name()))
                .collect();
            out.push_str(&fault::soa_check_helper(
                &soa_pointer_name(ElemType::Record(*r)),
                &fields,
            ));
        }
        let mut vectors = false;
        body.visit_every_expr(&mut |e| {
            vectors |= matches!(
                e.kind,
                ExprKind::Vector {
                    check: Check::Checked(_),
                    ..
                }
            );
        });
        if vectors {
            out.push_str(&fault::vector_check_helper());
        }
        let mut which = 0;
        for (p, id) in body.params.iter().filter(|(p, _)| p.pointer) {
            let n = &w.names[id.0 as usize];
            params.push(format!("unsigned long long __parray_n_{n}"));
            bases.push((
                format!("__parray_base_{n}"),
                format!(
                    "    {} const __parray_base_{n} = {n};",
                    c_type(Ty::of_param(p))
                ),
            ));
            w.roots.insert(
                Root::Local(*id),
                (
                    format!("__parray_base_{n}"),
                    format!("__parray_n_{n}"),
                    format!("{which}u"),
                ),
            );
            which += 1;
        }
        created(&body.stmts, &mut |id, _, len| {
            let n = w.names[id.0 as usize].clone();
            w.roots.insert(
                Root::Local(id),
                (n, format!("{len}ull"), format!("{which}u")),
            );
            which += 1;
        });
        params.push("unsigned long long* __parray_fault".into());
    }
    // TMA copies' tensor maps, after every other parameter (SPEC 3.9, "TMA copies").
    let maps = match dialect {
        Dialect::Hip { .. } => Vec::new(),
        _ => body.tma_copies(),
    };
    if !maps.is_empty() {
        out.push_str(TENSOR_MAP);
    }
    if !matches!(dialect, Dialect::Hip { .. }) && has_mbarrier_wait(body) {
        out.push_str(&fault::wait_helpers());
    }
    for t in &maps {
        params.push(format!(
            "const __grid_constant__ parray_tensor_map __parray_tmap{}",
            t.map
        ));
    }
    out.push_str(&move_vector_types(body));
    out.push_str(&register_helpers(body));
    out.push_str(&arithmetic_helpers(body));
    let (mut locks, mut nan_guards) = (false, false);
    body.visit_every_expr(&mut |e| match &e.kind {
        ExprKind::Atomic(crate::ir::AtomicOp::Cas | crate::ir::AtomicOp::Exch, ..) => locks = true,
        ExprKind::Cast(x, s) => nan_guards |= nan_needs_guard(x.ty, *s),
        _ => {}
    });
    if locks {
        out.push_str(LOCK_HELPERS);
    }
    if nan_guards {
        out.push_str(NAN_TO_ZERO_HELPERS);
    }
    if body.dynamic_shared_bytes() > 0 {
        let _ = writeln!(
            out,
            "extern __shared__ __align__({}) unsigned char {DYNAMIC_SHARED}[];",
            body.shared_alignment()
        );
    }
    for (p, id) in &body.params {
        if let Some((_, extent)) = body.constants.iter().find(|(c, _)| c == id) {
            let n = &w.names[id.0 as usize];
            let _ = writeln!(out, "__constant__ {} {n}[{extent}];", p.elem.c_name());
        }
    }
    out.push_str(&functions(body, dialect, &w.names));
    match entry {
        Entry::Kernel => {
            let _ = writeln!(
                out,
                "extern \"C\" __global__ void {bounds}{name}({}) {{",
                params.join(", "),
                bounds = match body.launch_bounds {
                    Some((threads, blocks)) => dialect.launch_bounds(threads, blocks),
                    None => String::new(),
                }
            );
        }
        Entry::FftStore => {
            let [(_, out_id), (_, value_id)] = &body.params[..] else {
                unreachable!("fft_store_callback checked the parameters")
            };
            let value = &w.names[value_id.0 as usize];
            let _ = writeln!(
                out,
                "__device__ void {name}(void* __parray_out, unsigned long long __parray_offset, float2 {value}, void*, void*) {{\n    float2* const {} = (float2*)__parray_out;",
                w.names[out_id.0 as usize]
            );
        }
    }
    if follows {
        out.push_str(GRID_DEPENDENCY);
    }
    w.stmts(&body.stmts);
    // Only what the statements use: a pointer whose accesses are all proved needs no base,
    // a thread index that the offsets folded away (a dimension of one) no name.
    let uses = w.uses.take();
    for (_, line) in bases.iter().filter(|(name, _)| uses.contains(name)) {
        let _ = writeln!(out, "{line}");
    }
    for (path, ix) in body
        .tids
        .iter()
        .filter(|(path, _)| uses.contains(&tid_name(path)))
    {
        let off = parray_layout::Offset {
            expr: ix.expr.clone(),
            vars: ix.vars.clone(),
        };
        let value = match entry {
            Entry::Kernel => emit_cuda::to_c(&off, &|v| {
                let hw = ix.hw.iter().find(|(id, _)| *id == v).map(|(_, h)| *h);
                hw.map_or_else(String::new, |h| h.c_name())
            }),
            // Below 2^32: the callback's array has fewer elements (its grid's bound).
            Entry::FftStore => "(unsigned)__parray_offset".to_string(),
        };
        let _ = writeln!(out, "    const unsigned {} = {value};", tid_name(path));
    }
    out.push_str(&w.out);
    out.push_str("}\n");
    out
}

/// The C name of the body function called `name`.
fn c_function_name(name: &str) -> String {
    format!("parray_fn_{name}")
}

/// The body's functions as `__device__` functions, callees first; `inline` leaves the
/// inlining to the compiler, which inlines small ones. Their lines are not the kernel's
/// file's, so they carry no `#line`.
///
/// A pointer parameter `a` comes with the elements its caller's array has from it on,
/// `__parray_n_a`, and that array's number in the fault record, `__parray_which_a`: the
/// function checks its accesses through `a` against them (a `const` pointer where the
/// function only reads, `parray::Ptr`); a function with pointers also takes the fault
/// record.
fn functions(body: &Body, dialect: Dialect, names: &[String]) -> String {
    let mut w = Writer::new(body, dialect);
    w.in_function = true;
    for f in &body.functions {
        let (mut params, mut moved) = (Vec::new(), Vec::new());
        for p in &f.params {
            let ty = body.local(*p).ty.expect("declared");
            let n = &names[p.0 as usize];
            let Ty::Ptr { .. } = ty else {
                params.push(format!("{} {n}", c_type(ty)));
                continue;
            };
            let constant = if f.writable.contains(p) { "" } else { "const " };
            // A parameter the function moves (`a += k`) is a local copy: its caller's
            // value stays the base its extent counts from.
            let base = if f.assigns(*p) {
                let base = format!("__parray_base_{n}");
                moved.push(format!("{constant}{} {n} = {base};", c_type(ty)));
                base
            } else {
                n.clone()
            };
            params.push(format!("{constant}{} {base}", c_type(ty)));
            params.push(format!("unsigned long long __parray_n_{n}"));
            params.push(format!("unsigned __parray_which_{n}"));
            w.roots.insert(
                Root::Local(*p),
                (
                    base,
                    format!("__parray_n_{n}"),
                    format!("__parray_which_{n}"),
                ),
            );
        }
        if f.has_pointers(body) {
            params.push("unsigned long long* __parray_fault".into());
        }
        let ret = match f.ret {
            Ty::Unit => "void".to_string(),
            t => c_type(t),
        };
        w.indent = 0;
        w.push(&format!(
            "__device__ inline {ret} {}({}) {{",
            c_function_name(&f.name),
            params.join(", ")
        ));
        w.indent = 1;
        moved.iter().for_each(|line| w.push(line));
        w.indent = 0;
        w.block(&f.stmts);
        if let Some(v) = &f.value {
            let value = w.expr(v).0;
            w.indent = 1;
            w.push(&format!("return {value};"));
        }
        w.indent = 0;
        w.push("}");
    }
    w.out
}

/// The arrays each vector access of `body` goes through (and the shared arrays whose rows
/// of 16 bytes an `ldmatrix` or `stmatrix` moves), and the vector types of those in
/// registers (the rmem arrays a body creates).
fn vector_uses(body: &Body) -> (HashSet<LocalId>, Vec<parray_layout::ElemType>) {
    fn rows(stmts: &[Stmt], arrays: &mut HashSet<LocalId>) {
        for s in stmts {
            if let Stmt::Matrices { base, .. } = s {
                if let ExprKind::Local(id) = base.kind {
                    arrays.insert(id);
                }
            }
            s.for_each_part(&mut |part| {
                if let crate::ir::Part::Body(b) = part {
                    rows(b, arrays);
                }
            });
        }
    }
    let mut arrays = HashSet::new();
    rows(&body.stmts, &mut arrays);
    let mut in_registers = Vec::new();
    crate::ir::visit_exprs(&body.stmts, &mut |e| {
        let ExprKind::Vector { base, lanes, .. } = &e.kind else {
            return;
        };
        if let ExprKind::Local(id) = base.kind {
            arrays.insert(id);
        }
        if let Ty::Array {
            mem: MemKind::Rmem,
            elem,
            ..
        } = base.ty
        {
            if let Some(v) = crate::ir::move_vector_of(elem, *lanes) {
                if !in_registers.contains(&v) {
                    in_registers.push(v);
                }
            }
        }
    });
    (arrays, in_registers)
}

/// C's remainder of floats of type `t` (`fmodf`, `fmod`), which is Rust's `%` on them:
/// none for integers, whose `%` is C's.
fn float_fmod(t: Ty) -> Option<&'static str> {
    match t.scalar()? {
        Scalar::F32 => Some("fmodf"),
        Scalar::F64 => Some("fmod"),
        _ => None,
    }
}

/// Whether evaluating `e` changes something (an assignment, an atomic, a shuffle), so that
/// it may not be written twice.
fn updates(e: &Expr) -> bool {
    if matches!(
        e.kind,
        ExprKind::Assign(..) | ExprKind::Atomic(..) | ExprKind::ShflDown { .. }
    ) {
        return true;
    }
    let mut found = false;
    e.for_each_child(&mut |c| found = found || updates(c));
    found
}

/// The name of a vector operator's helper (`parray_add`...): the check pass allows these
/// four.
fn vector_op(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        _ => unreachable!("checked: vectors take `+ - * /`"),
    }
}

/// Lane `i` of a value of the vector type `v` in C: `x`..`w`, or a 16-bit vector's
/// `lanes[i]`.
fn c_lane(v: parray_layout::ElemType, i: usize) -> String {
    match lanes(v) {
        0 => format!("lanes[{i}]"),
        _ => ["x", "y", "z", "w"][i].to_string(),
    }
}

/// The C structs of the 16-bit vectors the body and its functions move
/// ([`parray_layout::ElemType::MOVES`]):
/// a struct of the elements, so that a move reads no array through a type of other
/// elements (as `float4`, a struct of floats, reads floats), aligned to its size so that
/// the move is one 4-, 8- or 16-byte access.
fn move_vector_types(body: &Body) -> String {
    let mut used = Vec::new();
    body.visit_every_expr(&mut |e| {
        if let Ty::Vector(v) = e.ty {
            if lanes(v) == 0 && !used.contains(&v) {
                used.push(v);
            }
        }
    });
    let mut out = String::new();
    for v in parray_layout::ElemType::MOVES
        .into_iter()
        .filter(|v| used.contains(v))
    {
        let _ = writeln!(
            out,
            "struct alignas({}) {} {{ {} lanes[{}]; }};",
            v.size_bytes(),
            v.c_name(),
            c_scalar(crate::ir::lane_scalar(v)),
            crate::ir::move_lanes(v)
        );
    }
    out
}

/// For each vector type that the body moves to or from registers: `parray_get_float4(q)`,
/// the vector of the elements from `q`, and `parray_set(q, v)`, which writes its lanes
/// there. A register array stays in registers when its indices are constants (an
/// unrolled loop): lane by lane, as here, not through a cast pointer.
fn register_helpers(body: &Body) -> String {
    let mut out = String::new();
    for v in vector_uses(body).1 {
        let (t, e) = (v.c_name(), crate::ir::lane_scalar(v));
        let e = c_scalar(e);
        let n = crate::ir::move_lanes(v) as usize;
        let get: Vec<String> = (0..n).map(|i| format!("q[{i}]")).collect();
        let set: Vec<String> = (0..n)
            .map(|i| format!("q[{i}] = v.{};", c_lane(v, i)))
            .collect();
        let make = match lanes(v) {
            0 => format!("{t} v = {{{{{}}}}}; return v;", get.join(", ")),
            _ => format!("return make_{t}({});", get.join(", ")),
        };
        let _ = writeln!(
            out,
            "__device__ __forceinline__ {t} parray_get_{t}(const {e}* q) {{ {make} }}"
        );
        let _ = writeln!(
            out,
            "__device__ __forceinline__ void parray_set({e}* q, {t} v) {{ {} }}",
            set.join(" ")
        );
    }
    out
}

/// The vector types whose values the body (or a function of it) computes with `+ - * /`
/// ([`Ty::Vector`] operands of a binary operator or a compound assignment).
fn vector_arithmetic(body: &Body) -> Vec<parray_layout::ElemType> {
    let mut found = Vec::new();
    let mut note = |e: &Expr| {
        let v = match &e.kind {
            ExprKind::Binary(_, l, r) => [l.ty, r.ty].into_iter().find_map(|t| match t {
                Ty::Vector(v) => Some(v),
                _ => None,
            }),
            ExprKind::Assign(Some(_), place, _) => match place.ty {
                Ty::Vector(v) => Some(v),
                _ => None,
            },
            _ => None,
        };
        if let Some(v) = v.filter(|v| !found.contains(v)) {
            found.push(v);
        }
    };
    body.visit_every_expr(&mut note);
    found
}

/// Lane-wise `+ - * /` of each vector type the body computes with, as functions
/// (`parray_mul(float4, float)`: C's vector types have no operators; CUDA's samples
/// define them in `helper_math.h`), and their compound assignments (`parray_mul_to(p, s)`,
/// which evaluates the place once).
fn arithmetic_helpers(body: &Body) -> String {
    let mut out = String::new();
    for v in vector_arithmetic(body) {
        let (t, e) = (v.keyword(), c_scalar(crate::ir::lane_scalar(v)));
        let fields = &["x", "y", "z", "w"][..lanes(v) as usize];
        for (name, op) in [("add", "+"), ("sub", "-"), ("mul", "*"), ("div", "/")] {
            let lanes = |l: &dyn Fn(&str) -> String, r: &dyn Fn(&str) -> String| {
                let each: Vec<String> = fields
                    .iter()
                    .map(|f| format!("{} {op} {}", l(f), r(f)))
                    .collect();
                format!("make_{t}({})", each.join(", "))
            };
            let (vec_a, vec_b) = (|f: &str| format!("a.{f}"), |f: &str| format!("b.{f}"));
            let (sca_a, sca_b) = (|_: &str| "a".to_string(), |_: &str| "b".to_string());
            for (params, value) in [
                (format!("{t} a, {t} b"), lanes(&vec_a, &vec_b)),
                (format!("{t} a, {e} b"), lanes(&vec_a, &sca_b)),
                (format!("{e} a, {t} b"), lanes(&sca_a, &vec_b)),
            ] {
                let _ = writeln!(
                    out,
                    "__device__ __forceinline__ {t} parray_{name}({params}) {{ return {value}; }}"
                );
            }
            for b in [t, e] {
                let _ = writeln!(
                    out,
                    "__device__ __forceinline__ void parray_{name}_to({t}& a, {b} b) {{ a = parray_{name}(a, b); }}"
                );
            }
        }
    }
    out
}

/// The C name of each local of `body`: its own, unless C reserves it or a thread index
/// or an earlier local has it (then `name_k`, `k` its number).
fn c_names(body: &Body) -> Vec<String> {
    // Each function is a C scope of its own: its names need differ only from each other.
    let mut scope: HashMap<LocalId, usize> = HashMap::new();
    for (k, f) in body.functions.iter().enumerate() {
        scope.extend(f.params.iter().map(|p| (*p, k + 1)));
        crate::ir::visit_stmts(&f.stmts, &mut |s| match s {
            Stmt::Let { local, .. } => {
                scope.insert(*local, k + 1);
            }
            Stmt::For { var, .. } => {
                scope.insert(*var, k + 1);
            }
            _ => {}
        });
    }
    let mut taken: Vec<HashSet<String>> = vec![HashSet::new(); body.functions.len() + 1];
    taken[0] = body.tids.iter().map(|(p, _)| tid_name(p)).collect();
    // A `for` loop over `i` declares `i_end` (and `i_more`) beside it.
    let loop_helpers: HashSet<String> = body
        .locals
        .iter()
        .flat_map(|l| [format!("{}_end", l.name), format!("{}_more", l.name)])
        .collect();
    body.locals
        .iter()
        .enumerate()
        .map(|(k, l)| {
            let taken = &mut taken[scope.get(&LocalId(k as u32)).copied().unwrap_or(0)];
            let mut name = l.name.clone();
            if C_RESERVED.contains(&name.as_str())
                || taken.contains(&name)
                || loop_helpers.contains(&name)
            {
                name = format!("{name}_{k}");
            }
            taken.insert(name.clone());
            name
        })
        .collect()
}

/// The parameters `kernel` reads from constant memory (`Body::constants`): each one's
/// position among the parameters and the name of its `__constant__` array, which the
/// launch fills.
pub fn constant_symbols(proved: &Proved) -> Vec<(usize, String)> {
    let body = proved.body();
    let names = c_names(body);
    body.params
        .iter()
        .enumerate()
        .filter(|(_, (_, id))| body.constants.iter().any(|(c, _)| c == id))
        .map(|(i, (_, id))| (i, names[id.0 as usize].clone()))
        .collect()
}

/// The C local holding a thread index (`tid_0_1`), as the paper names it.
pub fn tid_name(path: &str) -> String {
    if path.is_empty() {
        "tid".into()
    } else {
        format!("tid_{path}")
    }
}

/// A size as a 32-bit unsigned literal (64-bit if it must be).
pub fn unsigned_literal(n: u64) -> String {
    if n <= u32::MAX as u64 {
        format!("{n}u")
    } else {
        format!("{n}ull")
    }
}

struct Writer<'b> {
    body: &'b Body,
    dialect: Dialect,
    /// The C name of each local (renamed where C would see a redeclaration or a keyword).
    names: Vec<String>,
    /// For checked accesses: each root array's base, its number of elements and its
    /// number in the fault record.
    roots: HashMap<Root, (String, String, String)>,
    /// The user's line of the statement being written (for fault records).
    stmt_line: u32,
    /// The arrays the body accesses by vectors (a shared one is declared 16-byte aligned).
    vector_arrays: HashSet<LocalId>,
    /// [`Body::shared_alignment`].
    shared_align: u64,
    /// Whether the body has a wgmma ([`has_wgmma`]) and the kernel is CUDA C's.
    wgmma: bool,
    /// Where each shared array starts in dynamic shared memory, when the kernel uses it
    /// ([`Body::dynamic_shared_bytes`]).
    dynamic_shared: HashMap<LocalId, u64>,
    out: String,
    /// The names the statements written so far use that the kernel declares only if used
    /// (thread indices, the bases of checked pointers).
    uses: RefCell<HashSet<String>>,
    indent: usize,
    /// The user's line the next kernel line is attributed to (0: not yet known).
    next_line: u32,
    /// Whether a function is written: its statements carry no `#line` directives (its
    /// lines are not the file's), and its pointer locals are `auto` (`const` where they
    /// point into what it only reads).
    in_function: bool,
    /// Whether the statements written are a `#copy async`'s ([`Stmt::Async`]): its moves
    /// are `cp.async`s.
    copying_async: bool,
    /// Whether the statements written are a run of `#mma async` whose fences are written
    /// (before its first statement), until its [`Stmt::MmaCommit`].
    issuing: bool,
}

/// Binding strength of an atom (a name, a literal, a call).
const ATOM: u8 = 20;
const UNARY: u8 = 15;

impl<'b> Writer<'b> {
    fn new(body: &'b Body, dialect: Dialect) -> Self {
        Writer {
            body,
            dialect,
            names: c_names(body),
            roots: HashMap::new(),
            stmt_line: 0,
            vector_arrays: vector_uses(body).0,
            shared_align: body.shared_alignment(),
            wgmma: !matches!(dialect, Dialect::Hip { .. }) && has_wgmma(body),
            dynamic_shared: match body.dynamic_shared_bytes() {
                0 => HashMap::new(),
                _ => body.shared_layout().0.into_iter().collect(),
            },
            out: String::new(),
            uses: RefCell::default(),
            indent: 1,
            next_line: 0,
            in_function: false,
            copying_async: false,
            issuing: false,
        }
    }

    /// A line of the kernel for the statement at `loc`, with a `#line` directive unless
    /// the numbering already matches.
    fn line(&mut self, loc: Loc, text: &str) {
        if !self.in_function && loc.line != self.next_line && loc.line > 0 {
            let _ = writeln!(self.out, "#line {} \"{}\"", loc.line, self.body.file);
            self.next_line = loc.line;
        }
        self.push(text);
    }

    /// `parray_at(...)`: the checked address of element `ix` past `base`, in `root`.
    fn checked_at(&self, base: &Expr, ix: &str, root: &Root) -> String {
        let (array, n, which) = &self.roots[root];
        self.uses.borrow_mut().insert(array.clone());
        format!(
            "parray_at({}, {ix}, {array}, {n}, {which}, {}u, __parray_fault)",
            self.expr(base).0,
            self.stmt_line
        )
    }

    /// The name of the thread index `path`, which the kernel then declares.
    fn tid(&self, path: &str) -> String {
        let name = tid_name(path);
        self.uses.borrow_mut().insert(name.clone());
        name
    }

    /// A preprocessor line, not indented.
    fn directive(&mut self, text: &str) {
        self.out.push_str(text);
        self.out.push('\n');
        self.next_line += 1;
    }

    fn push(&mut self, text: &str) {
        for _ in 0..self.indent {
            self.out.push_str("    ");
        }
        self.out.push_str(text);
        self.out.push('\n');
        self.next_line += 1;
    }

    /// `#mma D(d) += A(a) * B(b)`: `mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}` in
    /// inline PTX (sm_80 and later). A's and B's registers go as 32-bit pairs of halves
    /// (registers 2i and 2i + 1, the ISA's `a_i`/`b_i` halves), built as `__nv_bfloat162`
    /// (`__half2`) values, so no array is read through a wider type; D is read and
    /// written in place (`+f`), C being D. HIP has no such instruction: its kernel names a
    /// function that does not exist, a compile error of hipcc.
    fn mma(&mut self, input: Scalar, [a, b, d]: [&Expr; 3], loc: Loc) {
        let (a, b, d) = (self.expr(a).0, self.expr(b).0, self.expr(d).0);
        if let Dialect::Hip { .. } = self.dialect {
            self.line(loc, "parray_hip_has_no_mma_sync_m16n8k16();");
            return;
        }
        let (pair, make, ptx) = match input {
            Scalar::F16 => ("__half2", "__halves2half2", "f16"),
            _ => ("__nv_bfloat162", "__halves2bfloat162", "bf16"),
        };
        let pairs = |x: &str, n: usize| -> Vec<String> {
            (0..n)
                .map(|i| {
                    format!(
                        "__parray_{x}{i} = {make}({}[{}], {}[{}])",
                        if x == "a" { &a } else { &b },
                        2 * i,
                        if x == "a" { &a } else { &b },
                        2 * i + 1
                    )
                })
                .collect()
        };
        let word = |x: &str, i: usize| {
            format!("\"r\"(*reinterpret_cast<const unsigned*>(&__parray_{x}{i}))")
        };
        self.line(loc, "{");
        self.indent += 1;
        self.push(&format!("const {pair} {};", pairs("a", 4).join(", ")));
        self.push(&format!("const {pair} {};", pairs("b", 2).join(", ")));
        self.push(&format!("asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32.{ptx}.{ptx}.f32 {{%0, %1, %2, %3}}, {{%4, %5, %6, %7}}, {{%8, %9}}, {{%0, %1, %2, %3}};\""));
        self.push(&format!(
            "    : {}",
            (0..4)
                .map(|i| format!("\"+f\"({d}[{i}])"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        let words: Vec<String> = (0..4)
            .map(|i| word("a", i))
            .chain((0..2).map(|i| word("b", i)))
            .collect();
        self.push(&format!("    : {});", words.join(", ")));
        self.indent -= 1;
        self.push("}");
    }

    /// A TMA copy (SPEC 3.9, "TMA copies"), as the hardware test of the planner's maps
    /// issues it (`parray-runtime`'s `tests/tma.rs`): the generic writes to shared memory
    /// before it fenced for the async proxy, the barrier armed with the box's bytes
    /// (`mbarrier.arrive.expect_tx`, the issuing thread's arrival), and one
    /// `cp.async.bulk.tensor.Nd` at the start coordinates the element offset decodes into
    /// (the mixed radix of the map's nested strides), over the map parameter
    /// `__parray_tmap<map>`.
    fn tma(&mut self, offset: &Expr, dst: &Expr, bar: &Expr, tma: &crate::ir::Tma, loc: Loc) {
        let (offset, dst, bar) = (self.expr(offset).0, self.expr(dst).0, self.expr(bar).0);
        let plan = tma.planned();
        let rank = plan.dims.len();
        let mut order: Vec<usize> = (0..rank).collect();
        order.sort_by_key(|&i| plan.dims[i].stride);
        let coordinate = |i: usize| {
            let stride = plan.dims[i].stride;
            let next = order
                .iter()
                .position(|&j| j == i)
                .and_then(|p| order.get(p + 1))
                .map(|&j| plan.dims[j].stride);
            let x = match stride {
                1 => "__parray_off".to_string(),
                s => format!("__parray_off / {s}u"),
            };
            match next {
                Some(n) if stride == 1 => format!("(int)(__parray_off % {n}u)"),
                Some(n) => format!("(int)(__parray_off % {n}u / {stride}u)"),
                None => format!("(int)({x})"),
            }
        };
        self.line(loc, "{");
        self.indent += 1;
        self.push(&format!("const unsigned __parray_off = {offset};"));
        self.push(&format!(
            "const unsigned __parray_bar = (unsigned)__cvta_generic_to_shared({bar});"
        ));
        self.push("asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");");
        self.push(&format!("asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"(__parray_bar), \"r\"({}u) : \"memory\");", plan.box_bytes()));
        let coords: Vec<String> = (0..rank).map(|i| format!("%{}", i + 2)).collect();
        let operands: Vec<String> = (0..rank)
            .map(|i| format!("\"r\"({})", coordinate(i)))
            .collect();
        self.push(&format!(
            "asm volatile(\"cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {{{}}}], [%{}];\"",
            coords.join(", "),
            rank + 2
        ));
        self.push(&format!(
            "    :: \"r\"((unsigned)__cvta_generic_to_shared({dst})), \"l\"((unsigned long long)&__parray_tmap{}), {}, \"r\"(__parray_bar) : \"memory\");",
            tma.map,
            operands.join(", ")
        ));
        self.indent -= 1;
        self.push("}");
    }

    /// `#mma D(d) += A(a) * B(b)` of shared tiles: the warpgroup's
    /// `wgmma.mma_async.sync.aligned.m64nNk16.f32.{bf16,f16}` (or `m64nNk8.f32.tf32.tf32`
    /// of `float` tiles) in inline PTX (sm_90a, as CuTe's `SM90_64xNx16_F32BF16BF16_SS`
    /// writes it). Each descriptor is the type's
    /// constant bits or'ed with the tile's shared-memory address >> 4; D's N / 2 floats
    /// are read and written in place (`+f`, scale-d 1 by a predicate, scales 1); the
    /// transpose bits are the descriptors' majors. A synchronous one is fenced
    /// ([`Writer::wgmma_fences`]), committed and waited for here; an asynchronous one is
    /// part of a run, fenced before it and committed after it ([`Stmt::MmaCommit`]), and
    /// completes at a `#mma wait` ([`Stmt::MmaWait`]). HIP has no such instruction: its
    /// kernel names a function that does not exist, a compile error of hipcc.
    fn wgmma(&mut self, input: Scalar, [a, b, d]: [&Expr; 3], w: &Wgmma, loc: Loc) {
        let (a, b, d) = (self.expr(a).0, self.expr(b).0, self.expr(d).0);
        if let Dialect::Hip { .. } = self.dialect {
            self.line(loc, "parray_hip_has_no_wgmma_m64nNk16();");
            return;
        }
        // The PTX type and the element's bytes, whose 32 bytes of k one wgmma reads.
        let (ptx, bytes) = match input {
            Scalar::F16 => ("f16", 2),
            Scalar::F32 => ("tf32", 4),
            _ => ("bf16", 2),
        };
        let k = crate::mma::k_of(bytes);
        let (n, regs) = (w.n, (w.n / 2) as u8);
        self.line(loc, "{");
        self.indent += 1;
        for (name, tile, desc) in [("a", &a, &w.a), ("b", &b, &w.b)] {
            self.push(&format!(
                "const unsigned long long __parray_desc_{name} = {:#x}ull | (unsigned long long)(((unsigned)__cvta_generic_to_shared({tile}) & 0x3FFFF) >> 4);",
                desc.bits()
            ));
        }
        if w.wait {
            self.wgmma_fences(None);
        }
        let accumulators = asm_operands(0..regs);
        // The transpose immediates are the 16-bit forms' (tf32 reads both K-major).
        let transposes = match input {
            Scalar::F32 => String::new(),
            _ => format!(", {}, {}", u8::from(w.a.mn_major), u8::from(w.b.mn_major)),
        };
        self.push(&format!(
            "asm volatile(\"{{ .reg .pred p; setp.ne.b32 p, %{}, 0; wgmma.mma_async.sync.aligned.m64n{n}k{k}.f32.{ptx}.{ptx} {{{accumulators}}}, %{regs}, %{}, p, 1, 1{transposes}; }}\"",
            regs + 2,
            regs + 1
        ));
        self.push(&format!("    : {}", accumulator_operands(&d, regs.into())));
        self.push("    : \"l\"(__parray_desc_a), \"l\"(__parray_desc_b), \"r\"(1)");
        self.push("    : \"memory\");");
        if w.wait {
            self.push("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");");
            self.wgmma_wait(None, &d, regs.into(), 0);
        }
        self.indent -= 1;
        self.push("}");
    }

    /// Before the wgmmas of a group: the ordinary stores that filled the tiles are made
    /// visible to the tensor core's (async) proxy (here the warpgroup's own; every
    /// thread's at each `#sync` of the kernel), and the accumulator's registers to it
    /// (`wgmma.fence`). `loc`: the statement they begin, if they do.
    fn wgmma_fences(&mut self, loc: Option<Loc>) {
        let fence = "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");";
        match loc {
            Some(loc) => self.line(loc, fence),
            None => self.push(fence),
        }
        self.push("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");");
    }

    /// `wgmma.wait_group.sync.aligned N` with the accumulator `d`'s `regs` registers as
    /// its `"+f"` operands (CUTLASS's `warpgroup_fence_operand` after its wait): the
    /// compiler sees the wait read and write them, so it moves no access of them across
    /// it, and their values flow from the issues through the waits to their first use.
    fn wgmma_wait(&mut self, loc: Option<Loc>, d: &str, regs: u32, groups: u32) {
        let wait = format!("asm volatile(\"wgmma.wait_group.sync.aligned {groups};\"");
        match loc {
            Some(loc) => self.line(loc, &wait),
            None => self.push(&wait),
        }
        self.push(&format!("    : {}", accumulator_operands(d, regs)));
        self.push("    :");
        self.push("    : \"memory\");");
    }

    /// A warp's `ldmatrix` (sm_75 and later) or, `store`, `stmatrix` (sm_90)
    /// ([`Stmt::Matrices`]) in inline PTX, as CuTe's `SM75_U32x4_LDSM_N` and
    /// `SM90_U32x4_STSM_N` write them: the lane's row address made a shared-memory one
    /// (`__cvta_generic_to_shared`), and each of the `matrices` 32-bit registers two
    /// registers of the fragment, the lower half the first, unpacked from it (packed into
    /// it), so that no array is read or written through a wider type. The `memory`
    /// clobber keeps it in order with the other accesses to the tile. A GPU before sm_90
    /// (the kernel is built for the device's) has no `stmatrix`: there the thread's own
    /// moves, `scalar`.
    fn matrices(
        &mut self,
        (store, matrices, trans): (bool, u8, bool),
        [regs, base, at]: [&Expr; 3],
        scalar: &[Stmt],
        loc: Loc,
    ) {
        let (from, to) = match regs.ty {
            Ty::Array {
                elem: ElemType::Half,
                ..
            } => ("__ushort_as_half", "__half_as_ushort"),
            _ => ("__ushort_as_bfloat16", "__bfloat16_as_ushort"),
        };
        let p = precedence(BinOp::Add);
        let address = format!("{} + {}", self.operand(base, p), self.operand(at, p));
        let regs = self.expr(regs).0;
        let words: Vec<String> = (0..matrices).map(|i| format!("__parray_r{i}")).collect();
        let trans = if trans { ".trans" } else { "" };
        let shared = format!("\"r\"((unsigned)__cvta_generic_to_shared({address}))");
        if store {
            self.directive("#if __CUDA_ARCH__ >= 900");
        }
        self.line(loc, "{");
        self.indent += 1;
        if store {
            let packed: Vec<String> = words
                .iter()
                .enumerate()
                .map(|(i, w)| {
                    format!(
                        "{w} = (unsigned){to}({regs}[{}]) | (unsigned){to}({regs}[{}]) << 16",
                        2 * i,
                        2 * i + 1
                    )
                })
                .collect();
            let operands = asm_operands(1..=matrices);
            self.push(&format!("const unsigned {};", packed.join(", ")));
            self.push(&format!(
                "asm volatile(\"stmatrix.sync.aligned.m8n8.x{matrices}{trans}.shared.b16 [%0], {{{operands}}};\""
            ));
            self.push("    :");
            let words: Vec<String> = words.iter().map(|w| format!("\"r\"({w})")).collect();
            self.push(&format!("    : {shared}, {}", words.join(", ")));
            self.push("    : \"memory\");");
            self.indent -= 1;
            self.push("}");
            self.directive("#else");
            self.line(loc, "{");
            self.block(scalar);
            self.push("}");
            self.directive("#endif");
            // The preprocessor reads the `#line`s of one branch only: the next statement
            // says its line again.
            self.next_line = 0;
            return;
        }
        let operands = asm_operands(0..matrices);
        self.push(&format!("unsigned {};", words.join(", ")));
        self.push(&format!(
            "asm volatile(\"ldmatrix.sync.aligned.m8n8.x{matrices}{trans}.shared.b16 {{{operands}}}, [%{matrices}];\""
        ));
        self.push(&format!(
            "    : {}",
            words
                .iter()
                .map(|w| format!("\"=r\"({w})"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
        self.push(&format!("    : {shared}"));
        self.push("    : \"memory\");");
        for (i, w) in words.iter().enumerate() {
            self.push(&format!("{regs}[{}] = {from}((unsigned short){w});", 2 * i));
            self.push(&format!(
                "{regs}[{}] = {from}((unsigned short)({w} >> 16));",
                2 * i + 1
            ));
        }
        self.indent -= 1;
        self.push("}");
    }

    fn block(&mut self, stmts: &[Stmt]) {
        self.indent += 1;
        self.stmts(stmts);
        self.indent -= 1;
    }

    fn stmts(&mut self, stmts: &[Stmt]) {
        for s in stmts {
            self.stmt(s);
        }
    }

    fn stmt(&mut self, s: &Stmt) {
        self.stmt_line = s.loc().line;
        // A run of asynchronous wgmmas, one group, is fenced once, before it (CUTLASS's
        // `warpgroup_arrive` before a k-tile's wgmmas): between its issues nothing else
        // runs, and wgmmas into one accumulator are ordered among themselves.
        if !self.issuing && !matches!(self.dialect, Dialect::Hip { .. }) && crate::mma::issues(s) {
            self.wgmma_fences(Some(s.loc()));
            self.issuing = true;
        }
        match s {
            Stmt::Let { local, init, loc } => {
                let l = self.body.local(*local);
                let ty = match l.ty.expect("checked") {
                    Ty::Ptr { .. } if self.in_function => "auto".to_string(),
                    t => c_type(t),
                };
                let name = &self.names[local.0 as usize];
                let text = match init {
                    // Converted to the local's type by the declaration itself.
                    Some(e) => format!("{ty} {name} = {};", self.wide(e).0),
                    None => format!("{ty} {name};"),
                };
                self.line(*loc, &text);
            }
            Stmt::Create {
                local,
                elem: ElemType::Record(r),
                len,
                soa: true,
                loc,
                ..
            } => {
                // Each field's array, then the struct of their pointers under the name.
                let len = fixed_len(*len);
                let name = self.names[local.0 as usize].clone();
                let dynamic = self.dynamic_shared.get(local);
                let mut arrays = String::new();
                let mut pointers = Vec::new();
                for (k, f) in r.def().fields.iter().enumerate() {
                    let t = f.elem.c_name();
                    match dynamic {
                        Some(at) => {
                            let start = at + r.soa_start(k, len, MemKind::Smem.soa_align());
                            pointers.push(format!(
                                "reinterpret_cast<{t}*>({DYNAMIC_SHARED} + {start})"
                            ));
                        }
                        None => {
                            let array = format!("__parray_{name}_{}", f.name);
                            arrays.push_str(&format!("__shared__ {t} {array}[{len}]; "));
                            pointers.push(array);
                        }
                    }
                }
                let soa = soa_pointer_name(ElemType::Record(*r));
                let text = format!(
                    "{arrays}{soa} const {name} = {{ {} }};",
                    pointers.join(", ")
                );
                self.line(*loc, &text);
            }
            Stmt::Create {
                local,
                elem,
                mem,
                len,
                loc,
                ..
            } => {
                let name = self.names[local.0 as usize].clone();
                if let Some(at) = self.dynamic_shared.get(local) {
                    let t = elem.c_name();
                    let text = format!(
                        "{t}* const {name} = reinterpret_cast<{t}*>({DYNAMIC_SHARED} + {at});"
                    );
                    self.line(*loc, &text);
                    return;
                }
                // A shared array read or written as float4s must be aligned for them (a
                // register array is accessed lane by lane), and a wgmma's tiles to 16 bytes
                // at least (unswizzled core matrices; a bf16 array alone is aligned to 2).
                let qualifier = match mem {
                    MemKind::Smem
                        if self.shared_align > 16
                            || self.wgmma
                            || self.vector_arrays.contains(local) =>
                    {
                        format!("__shared__ __align__({}) ", self.shared_align)
                    }
                    MemKind::Smem => "__shared__ ".to_string(),
                    _ => String::new(),
                };
                let len = fixed_len(*len);
                self.line(
                    *loc,
                    &format!("{qualifier}{} {name}[{len}];", elem.c_name()),
                );
            }
            Stmt::Expr { expr, loc } => {
                let (text, _) = match expr.kind {
                    ExprKind::Atomic(..) => self.atomic(expr, false),
                    _ => self.expr(expr),
                };
                let text = format!("{text};");
                self.line(*loc, &text);
            }
            Stmt::If {
                cond,
                then,
                els,
                loc,
            } => {
                let text = format!("if ({}) {{", self.expr(cond).0);
                self.line(*loc, &text);
                self.block(then);
                if let Some(e) = els {
                    self.push("} else {");
                    self.block(e);
                }
                self.push("}");
            }
            Stmt::While { cond, body, loc } => {
                let text = format!("while ({}) {{", self.expr(cond).0);
                self.line(*loc, &text);
                self.block(body);
                self.push("}");
            }
            Stmt::For {
                var,
                start,
                end,
                inclusive,
                unroll,
                body,
                loc,
            } => {
                match unroll {
                    Some(None) => self.push("#pragma unroll"),
                    Some(Some(n)) => self.push(&format!("#pragma unroll {n}")),
                    None => {}
                }
                let ty = c_type(self.body.local(*var).ty.expect("checked"));
                let v = self.names[var.0 as usize].clone();
                let (s, e) = (self.expr(start).0, self.expr(end).0);
                let cmp = if *inclusive { "<=" } else { "<" };
                let constant = match &end.kind {
                    ExprKind::Lit(Lit::Int(n, _)) => Some(*n),
                    ExprKind::Size(n) => Some(u128::from(*n)),
                    _ => None,
                };
                // An end in `int` lies below `i32::MAX`, and so below an `unsigned`'s max.
                let below_max = end.signed
                    || constant.is_some_and(|n| {
                        let var = self.body.local(*var).ty.and_then(Ty::scalar);
                        var.and_then(int_max).is_some_and(|max| n < max)
                    });
                // Rust evaluates the end once: so does the kernel, unless it is a constant.
                let text = if constant.is_some() && (below_max || !*inclusive) {
                    format!("for ({ty} {v} = {s}; {v} {cmp} {e}; {v}++) {{")
                } else if !*inclusive || below_max {
                    format!("for ({ty} {v} = {s}, {v}_end = {e}; {v} {cmp} {v}_end; {v}++) {{")
                } else {
                    // `a..=b` where `b` may be the type's largest value, past which `v++`
                    // wraps (or overflows an `int`): the loop goes on while the value just
                    // run was not `b`, and steps only then.
                    format!("for ({ty} {v} = {s}, {v}_end = {e}, {v}_more = {v} <= {v}_end; {v}_more; {v}_more = {v} != {v}_end, {v} += {v}_more) {{")
                };
                self.line(*loc, &text);
                self.block(body);
                self.push("}");
            }
            Stmt::Block { body, loc } => {
                self.line(*loc, "{");
                self.block(body);
                self.push("}");
            }
            // Decided by `bounds::prove`; without its decision, the element loop.
            Stmt::Vectorised { scalar, .. } => self.stmts(scalar),
            Stmt::GenericCopy { .. } => {
                unreachable!("a copy of run-time types reached the C writer unmade")
            }
            // Each thread's stores before the barrier are made visible to the tensor core's
            // proxy there, so a wgmma of any warpgroup after it reads them.
            Stmt::Sync { loc } if self.wgmma => {
                self.line(
                    *loc,
                    "asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\");",
                );
                self.push("__syncthreads();");
            }
            Stmt::Sync { loc } => self.line(*loc, "__syncthreads();"),
            // HIP's C++ has no asynchronous copy into shared memory for every GPU it
            // targets: its copy moves at once, and nothing is left to wait for.
            Stmt::Async { body, .. } if matches!(self.dialect, Dialect::Hip { .. }) => {
                self.stmts(body)
            }
            Stmt::Wait { .. } if matches!(self.dialect, Dialect::Hip { .. }) => {}
            Stmt::Async { body, loc } => {
                self.copying_async = true;
                self.stmts(body);
                self.copying_async = false;
                self.line(
                    *loc,
                    "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");",
                );
            }
            Stmt::Wait { groups, loc } => self.line(
                *loc,
                &format!(
                    "asm volatile(\"cp.async.wait_group %0;\" :: \"n\"({groups}) : \"memory\");"
                ),
            ),
            // HIP has no TMA nor mbarriers: its kernel names a function that does not
            // exist, a compile error of hipcc that names what is missing.
            Stmt::Tma { loc, .. }
            | Stmt::MbarrierInit { loc, .. }
            | Stmt::MbarrierArrive { loc, .. }
            | Stmt::MbarrierWait { loc, .. }
                if matches!(self.dialect, Dialect::Hip { .. }) =>
            {
                self.line(*loc, "parray_hip_has_no_tma_nor_mbarriers();");
            }
            Stmt::Tma {
                offset,
                dst,
                bar,
                tma,
                loc,
                ..
            } => self.tma(offset, dst, bar, tma, *loc),
            Stmt::MbarrierInit { bar, arrivals, loc } => {
                let (bar, n) = (self.expr(bar).0, self.expr(arrivals).0);
                self.line(*loc, &format!("asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\" :: \"r\"((unsigned)__cvta_generic_to_shared({bar})), \"r\"((unsigned)({n})) : \"memory\");"));
                self.push("asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
            }
            Stmt::MbarrierArrive { bar, loc } => {
                let bar = self.expr(bar).0;
                self.line(*loc, &format!("asm volatile(\"mbarrier.arrive.shared::cta.b64 _, [%0];\" :: \"r\"((unsigned)__cvta_generic_to_shared({bar})) : \"memory\");"));
            }
            Stmt::MbarrierWait { bar, parity, loc } => {
                let (bar, parity) = (self.expr(bar).0, self.expr(parity).0);
                // A phase that never completes fails the launch, not hang it (fault.rs).
                let line = loc.line;
                self.line(*loc, &format!("{{ const unsigned parity = (unsigned)({parity}) & 1u; if (!parray_mbarrier_wait((unsigned)__cvta_generic_to_shared({bar}), parity)) PARRAY_WAIT_STALLED({line}u, parity); }}"));
            }
            Stmt::Mma {
                input,
                a,
                b,
                d,
                wgmma: Some(w),
                loc,
            } => self.wgmma(*input, [a, b, d], w, *loc),
            Stmt::Mma {
                input,
                a,
                b,
                d,
                wgmma: None,
                loc,
            } => self.mma(*input, [a, b, d], *loc),
            Stmt::SetMaxNreg { loc, .. } if matches!(self.dialect, Dialect::Hip { .. }) => {
                self.line(*loc, "parray_hip_has_no_setmaxnreg();");
            }
            Stmt::SetMaxNreg { inc, regs, loc } => {
                let how = if *inc { "inc" } else { "dec" };
                self.line(
                    *loc,
                    &format!("asm volatile(\"setmaxnreg.{how}.sync.aligned.u32 {regs};\" ::: \"memory\");"),
                );
            }
            Stmt::MmaCommit { .. } if matches!(self.dialect, Dialect::Hip { .. }) => {}
            Stmt::MmaCommit { loc } => {
                self.issuing = false;
                self.line(
                    *loc,
                    "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");",
                );
            }
            Stmt::MmaWait { .. } if matches!(self.dialect, Dialect::Hip { .. }) => {}
            Stmt::MmaWait {
                d,
                regs,
                groups,
                loc,
            } => {
                let d = self.expr(d).0;
                self.wgmma_wait(Some(*loc), &d, *regs, *groups);
            }
            // HIP has no ldmatrix nor stmatrix: each thread moves its own registers.
            Stmt::Matrices { scalar, .. } if matches!(self.dialect, Dialect::Hip { .. }) => {
                self.stmts(scalar)
            }
            Stmt::Matrices {
                store,
                matrices,
                trans,
                regs,
                base,
                at,
                scalar,
                loc,
            } => self.matrices((*store, *matrices, *trans), [regs, base, at], scalar, *loc),
            Stmt::Break { loc } => self.line(*loc, "break;"),
            Stmt::Continue { loc } => self.line(*loc, "continue;"),
            Stmt::Return { loc } => self.line(*loc, "return;"),
            Stmt::Print {
                pieces,
                args,
                newline,
                loc,
            } => {
                let mut fmt = String::new();
                let mut values = Vec::new();
                for (k, piece) in pieces.iter().enumerate() {
                    fmt.push_str(&piece.replace('%', "%%"));
                    if let Some(a) = args.get(k) {
                        let (text, _) = self.expr(a);
                        let (spec, value) = match a.ty {
                            Ty::Scalar(Scalar::F32 | Scalar::F64) => {
                                ("%g", format!("(double)({text})"))
                            }
                            Ty::Scalar(Scalar::I8 | Scalar::U8 | Scalar::I32) => ("%d", text),
                            Ty::Scalar(Scalar::U32 | Scalar::Usize) => ("%u", text),
                            Ty::Scalar(Scalar::I64) => ("%lld", text),
                            Ty::Scalar(Scalar::U64) => ("%llu", text),
                            _ => ("%s", format!("({text}) ? \"true\" : \"false\"")),
                        };
                        fmt.push_str(spec);
                        values.push(value);
                    }
                }
                if *newline {
                    fmt.push('\n');
                }
                let mut all = vec![c_string(&fmt)];
                all.extend(values);
                self.line(*loc, &format!("printf({});", all.join(", ")));
            }
        }
    }

    /// An operand of an operator binding with strength `min` ([`bracket`]).
    fn operand(&self, e: &Expr, min: u8) -> String {
        bracket(e, self.expr(e), min)
    }

    /// [`Writer::operand`] of an operation that C may compute on a promoted 8-bit value
    /// ([`Writer::wide`]).
    fn wide_operand(&self, e: &Expr, min: u8) -> String {
        bracket(e, self.wide(e), min)
    }

    /// `child`, an operand of `parent`, where C's result would depend on the operand's
    /// type: a child computed in `int` (SPEC 3.5, "Index arithmetic in `int`") under a
    /// parent that is not, converted back to `unsigned` (`~(int)x` would be negative, and
    /// `-`, `<<`, `min` take their type from the operand).
    fn typed_operand(&self, parent: &Expr, child: &Expr, min: u8) -> String {
        if in_int(child) && !parent.signed {
            format!("(unsigned)({})", self.expr(child).0)
        } else {
            self.operand(child, min)
        }
    }

    /// The expression as C and its binding strength, with its value in its type: an
    /// 8-bit operation, which C computes in `int`, converted back (so that it wraps at 8
    /// bits as Rust's does).
    fn expr(&self, e: &Expr) -> (String, u8) {
        let (text, p) = self.wide(e);
        if is_wide(e) {
            let t = c_scalar(e.ty.scalar().expect("an 8-bit integer"));
            return (format!("({t})({text})"), UNARY);
        }
        (text, p)
    }

    /// The expression as C and its binding strength, where an 8-bit result may be left
    /// in the `int` C computed it in ([`is_wide`]): for the operations whose low 8 bits
    /// depend only on their operands' (`+ - & | ^ ~`), and where the value is converted
    /// by a declaration or an assignment.
    fn wide(&self, e: &Expr) -> (String, u8) {
        if e.signed {
            // In `int`: its leaves here, its operators below (their operands are marked too).
            match &e.kind {
                ExprKind::Lit(Lit::Int(v, _)) => return (v.to_string(), ATOM),
                ExprKind::Size(n) => return (n.to_string(), ATOM),
                ExprKind::Offset { off, .. } => {
                    if let Some(c) = off.as_const() {
                        return (c.to_string(), ATOM);
                    }
                }
                // A cast binds tighter than any operator it meets here (none is postfix).
                ExprKind::Local(id) => {
                    return (format!("(int){}", self.names[id.0 as usize]), ATOM)
                }
                ExprKind::Tid(path) => return (format!("(int){}", self.tid(path)), ATOM),
                _ => {}
            }
        }
        match &e.kind {
            ExprKind::Lit(l) => (self.lit(l, e.ty), ATOM),
            ExprKind::NumberConst(c) => (c.c_value(), ATOM),
            ExprKind::Local(id) => (self.names[id.0 as usize].clone(), ATOM),
            ExprKind::Capture(name) | ExprKind::HostCall(name, _) => {
                unreachable!("a cuda body captures and calls nothing of the host ({name})")
            }
            ExprKind::Tid(path) => (self.tid(path), ATOM),
            ExprKind::Size(n) => (unsigned_literal(*n), ATOM),
            ExprKind::Cnt(c) => (c.to_string(), ATOM),
            ExprKind::Offset { off, args, .. } => {
                if let Some(c) = off.as_const() {
                    return (unsigned_literal(c), ATOM);
                }
                // Each index in the offset's type, `unsigned` or (in an `int` offset) `int`,
                // converted where C would not (a `u64` index is cut to 32 bits, as the
                // Rust's `as usize` does). An index alone is the offset: it keeps its own
                // 32-bit C type, which `in_int` tells the offset's consumers.
                let text = emit_cuda::to_c(off, &|v| {
                    let a = &args[v.0 as usize];
                    let unsigned = matches!(a.ty, Ty::Scalar(Scalar::U32 | Scalar::Usize));
                    let as_is = if e.signed {
                        a.signed || !unsigned
                    } else if lone_index(e).is_some() {
                        !matches!(a.ty, Ty::Scalar(Scalar::I64 | Scalar::U64))
                    } else {
                        unsigned && !a.signed
                    };
                    if as_is {
                        self.operand(a, UNARY + 1)
                    } else {
                        format!("(unsigned){}", self.operand(a, UNARY))
                    }
                });
                (text, offset_strength(off))
            }
            // A body with them (or with a `Stmt::GenericCopy`) is written once its types
            // are known, by `kernels::specialised_kernel`, which resolves them first.
            ExprKind::GenericOffset { .. }
            | ExprKind::GenericSize { .. }
            | ExprKind::RuntimeConst { .. } => {
                unreachable!("a form or size known at run time reached the C writer unresolved")
            }
            ExprKind::Unary(op, x) => {
                let sym = match op {
                    UnOp::Neg => "-",
                    UnOp::Not if x.ty == Ty::BOOL => "!",
                    UnOp::Not => "~",
                };
                let operand = if matches!(x.kind, ExprKind::Unary(UnOp::Neg, _)) {
                    // `-(-x)`: `--x` would be a decrement.
                    format!("({})", self.expr(x).0)
                } else if in_int(x) {
                    self.typed_operand(e, x, UNARY)
                } else {
                    self.wide_operand(x, UNARY)
                };
                (format!("{sym}{operand}"), UNARY)
            }
            // `x + 0` where the zero is an index (a single `#copy` move): `x`.
            ExprKind::Binary(BinOp::Add, x, zero) | ExprKind::Binary(BinOp::Add, zero, x)
                if is_zero(zero) && zero.ty == e.ty && x.ty == e.ty =>
            {
                self.wide(x)
            }
            // Lane by lane, through `arithmetic_helpers`.
            ExprKind::Binary(op, l, r) if matches!(e.ty, Ty::Vector(_)) => {
                self.vector_arithmetic(vector_op(*op), l, r)
            }
            // C's `%` takes integers only: Rust's `%` on floats is C's `fmod` (exact, of
            // the dividend's sign). Halves arrive here widened to `f32`.
            ExprKind::Binary(BinOp::Rem, l, r) if float_fmod(l.ty).is_some() => {
                let f = float_fmod(l.ty).expect("a float");
                (format!("{f}({}, {})", self.expr(l).0, self.expr(r).0), ATOM)
            }
            ExprKind::Binary(op, l, r) => {
                let p = precedence(*op);
                let (lt, rt) = match op {
                    // The result has the left operand's type.
                    BinOp::Shl | BinOp::Shr => {
                        (self.typed_operand(e, l, p), self.operand(r, p + 1))
                    }
                    // C converts an `int` operand to the other's `unsigned`; two `int`s
                    // stay `int` (where their result may leave it).
                    _ if !op.is_comparison() && in_int(l) && in_int(r) && !e.signed => {
                        (self.typed_operand(e, l, p), self.operand(r, p + 1))
                    }
                    BinOp::Add | BinOp::Sub | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor => {
                        (self.wide_operand(l, p), self.wide_operand(r, p + 1))
                    }
                    _ => (self.operand(l, p), self.operand(r, p + 1)),
                };
                (format!("{lt} {} {rt}", op.symbol()), p)
            }
            // A shared side not proved in bounds is checked, its scratch element in global
            // memory, where `cp.async` cannot write: that move is made at once, as is one
            // of under 4 bytes (a 16-bit element outside the copy's vectors), below
            // `cp.async`'s least.
            ExprKind::Assign(None, place, value)
                if self.copying_async
                    && matches!(value.kind, ExprKind::Index(..) | ExprKind::Vector { .. })
                    && place.ty.as_elem().is_some_and(|e| e.size_bytes() >= 4)
                    && !self.checked(place) =>
            {
                self.cp_async(place, value)
            }
            ExprKind::Assign(_, place, value) if matches!(place.kind, ExprKind::Vector { .. }) => {
                self.vector(place, Some(value))
            }
            ExprKind::Vector { .. } => self.vector(e, None),
            ExprKind::Assign(Some(op), place, value) if matches!(place.ty, Ty::Vector(_)) => {
                self.vector_arithmetic(&format!("{}_to", vector_op(*op)), place, value)
            }
            // `place %= v` on a float: `place = fmodf(place, v)`, the place read twice
            // where that changes nothing, else through a reference to it.
            ExprKind::Assign(Some(BinOp::Rem), place, value) if float_fmod(place.ty).is_some() => {
                let f = float_fmod(place.ty).expect("a float");
                let (p, v) = (self.expr(place).0, self.expr(value).0);
                match updates(place) {
                    false => (format!("{p} = {f}({p}, {v})"), 0),
                    true => {
                        let t = c_scalar(place.ty.scalar().expect("a float"));
                        (
                            format!("[&]({t}& __parray_p) {{ __parray_p = {f}(__parray_p, {v}); }}({p})"),
                            ATOM,
                        )
                    }
                }
            }
            ExprKind::Assign(op, place, value) => {
                let sym = op.map_or("=".to_string(), |o| format!("{}=", o.symbol()));
                // `x op= v` converts `x op v` back to `x`'s type: `v` may stay in `int`
                // where the low 8 bits of the result depend only on its low 8 bits.
                let v = match op {
                    None
                    | Some(
                        BinOp::Add | BinOp::Sub | BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor,
                    ) => self.wide_operand(value, 1),
                    Some(_) => self.operand(value, 1),
                };
                let p = self.operand(place, UNARY);
                (format!("{p} {sym} {v}"), 0)
            }
            ExprKind::Convert(..) => unreachable!("the type check makes a cast of it"),
            ExprKind::Cast(x, s) if float_to_int(x.ty, *s, "").is_some() => {
                let text = float_to_int(x.ty, *s, &self.expr(x).0).expect("checked");
                let precedence = match s {
                    Scalar::I8 | Scalar::U8 => UNARY,
                    _ => ATOM,
                };
                (text, precedence)
            }
            ExprKind::Cast(x, s) => match half_conversion(x.ty, *s, self.dialect) {
                Some(f) => (format!("{f}({})", self.expr(x).0), ATOM),
                None => (
                    format!("({}){}", c_scalar(*s), self.operand(x, UNARY)),
                    UNARY,
                ),
            },
            ExprKind::Index(base, ix, Check::Checked(Some(root)))
                if self.roots.contains_key(root) =>
            {
                let at = self.checked_at(base, &self.expr(ix).0, root);
                (format!("(*{at})"), ATOM)
            }
            ExprKind::Index(base, ix, _) => {
                let (ix, _) = self.expr(ix);
                (format!("{}[{ix}]", self.operand(base, ATOM)), ATOM)
            }
            ExprKind::Field(base, name) => (format!("{}.{name}", self.operand(base, ATOM)), ATOM),
            ExprKind::Method(m, recv, args) => (self.method(e, *m, recv, args), ATOM),
            ExprKind::Atomic(..) => self.atomic(e, true),
            ExprKind::ShflDown { value, delta, .. } => {
                let value = self.typed_operand(e, value, 0);
                let text = match self.dialect {
                    Dialect::Cuda => format!(
                        "__shfl_down_sync(0xffffffffu, {value}, {})",
                        self.expr(delta).0
                    ),
                    // Width 32: each 32 lanes of a wavefront shuffle as a CUDA warp does.
                    // HIP gives a lane its own value for a delta of 32 or more, where CUDA
                    // reads the delta's low 5 bits: the kernel takes them itself.
                    Dialect::Hip { .. } => {
                        let delta = match delta.kind {
                            ExprKind::Lit(Lit::Int(d, _)) => format!("{}u", d % u128::from(WARP)),
                            _ => format!("{} & {}u", self.operand(delta, UNARY), WARP - 1),
                        };
                        format!("__shfl_down({value}, {delta}, {WARP})")
                    }
                };
                (text, ATOM)
            }
            ExprKind::Call(f, args, roots) => {
                let function = &self.body.functions[*f];
                let mut out = Vec::new();
                for (k, a) in args.iter().enumerate() {
                    let arg = self.expr(a).0;
                    // A pointer, with the elements its array has from it on, and the array.
                    if let Some(root) = roots.get(k).and_then(Option::as_ref) {
                        let (array, n, which) = &self.roots[root];
                        self.uses.borrow_mut().insert(array.clone());
                        out.push(format!("{arg}, parray_rest({arg}, {array}, {n}), {which}"));
                    } else {
                        out.push(arg);
                    }
                }
                if function.has_pointers(self.body) {
                    out.push("__parray_fault".into());
                }
                let name = c_function_name(&function.name);
                (format!("{name}({})", out.join(", ")), ATOM)
            }
            ExprKind::MakeVector(v, args) => {
                let args: Vec<String> = args.iter().map(|a| self.expr(a).0).collect();
                debug_assert_eq!(args.len(), lanes(*v) as usize);
                (format!("make_{}({})", v.keyword(), args.join(", ")), ATOM)
            }
            ExprKind::MakeRecord {
                record: Some(r),
                fields,
                base: None,
                ..
            } => {
                // In the declaration's order, the helper's parameters'.
                let args: Vec<String> = r
                    .def()
                    .fields
                    .iter()
                    .map(|f| {
                        let (_, a) = fields
                            .iter()
                            .find(|(n, _)| n == f.name)
                            .expect("checked: each field given");
                        self.expr(a).0
                    })
                    .collect();
                (format!("{}({})", record_maker(*r), args.join(", ")), ATOM)
            }
            ExprKind::MakeRecord { path, .. } => {
                unreachable!("a cuda body builds records it knows, each field given ({path})")
            }
            ExprKind::Select(c, a, b) => (
                format!(
                    "{} ? {} : {}",
                    self.operand(c, 3),
                    // Two `int` branches make an `int` (one meets the other's `unsigned`).
                    if in_int(a) && in_int(b) {
                        self.typed_operand(e, a, 3)
                    } else {
                        self.operand(a, 3)
                    },
                    self.operand(b, 2)
                ),
                2,
            ),
        }
    }

    /// The atomic `e` (`atomic_add(p, v)`, ...) and its binding strength; `value_used`
    /// where its old value is read (a statement drops it).
    fn atomic(&self, e: &Expr, value_used: bool) -> (String, u8) {
        let ExprKind::Atomic(op, p, args, check) = &e.kind else {
            unreachable!("an atomic")
        };
        let pt = match check {
            Check::Checked(Some(root)) if self.roots.contains_key(root) => {
                self.checked_at(p, "0", root)
            }
            _ => self.expr(p).0,
        };
        let args: Vec<String> = args.iter().map(|a| self.expr(a).0).collect();
        if elem_of(p.ty) != Some(parray_layout::ElemType::Long) {
            return (format!("{}({pt}, {})", op.c_name(), args.join(", ")), ATOM);
        }
        // CUDA has no `long long` atomicAdd: the unsigned one adds the same bits.
        let call = format!(
            "{}((unsigned long long*)({pt}), (unsigned long long)({}))",
            op.c_name(),
            args.join(", ")
        );
        if value_used {
            (format!("(long long){call}"), UNARY)
        } else {
            (call, ATOM)
        }
    }

    /// The vector access `e` (`p.load4(i)`), or with `store` its store `p.store4(i, v)`: a
    /// cast pointer to the vector type in memory, lane by lane in registers; through
    /// `parray_vat` where it is checked.
    /// `parray_{helper}(l, r)`: a vector operation, through `arithmetic_helpers`.
    fn vector_arithmetic(&self, helper: &str, l: &Expr, r: &Expr) -> (String, u8) {
        let (l, r) = (self.expr(l).0, self.expr(r).0);
        (format!("parray_{helper}({l}, {r})"), ATOM)
    }

    fn vector(&self, e: &Expr, store: Option<&Expr>) -> (String, u8) {
        let ExprKind::Vector { base, .. } = &e.kind else {
            unreachable!("a vector access")
        };
        let Ty::Vector(v) = e.ty else {
            unreachable!("checked: a vector access has a vector type")
        };
        let t = v.c_name();
        let registers = matches!(
            base.ty,
            Ty::Array {
                mem: MemKind::Rmem,
                ..
            }
        );
        let (address, strength) = self.vector_address(e);
        // The operand of a pointer cast.
        let cast = if strength < UNARY {
            format!("({address})")
        } else {
            address.clone()
        };
        match (store, registers) {
            (None, false) => (format!("*(const {t}*){cast}"), UNARY),
            (None, true) => (format!("parray_get_{t}({address})"), ATOM),
            (Some(value), false) => (format!("*({t}*){cast} = {}", self.operand(value, 1)), 0),
            (Some(value), true) => (
                format!("parray_set({address}, {})", self.expr(value).0),
                ATOM,
            ),
        }
    }

    /// Whether the access `e` is written through `parray_at` or `parray_vat` (not proved in
    /// bounds).
    fn checked(&self, e: &Expr) -> bool {
        match &e.kind {
            ExprKind::Index(_, _, Check::Checked(Some(root)))
            | ExprKind::Vector {
                check: Check::Checked(Some(root)),
                ..
            } => self.roots.contains_key(root),
            _ => false,
        }
    }

    /// A move of a `#copy async` ([`Stmt::Async`]), `place = value` from global memory into
    /// a shared array, as one `cp.async` of the element's or the vector's 4, 8 or 16 bytes
    /// (a vector of 2, 4 or 8 `bf16`s or `half`s too; `.cg`, past L1, for 16, the only
    /// size it takes): the shared address made a
    /// shared-memory one, the global one given as it is (a generic address of global
    /// memory is its global address), as CUTLASS's `SM80_CP_ASYNC_CACHEALWAYS` writes it.
    fn cp_async(&self, place: &Expr, value: &Expr) -> (String, u8) {
        let address = |e: &Expr| match e.kind {
            ExprKind::Vector { .. } => self.vector_address(e).0,
            _ => format!("&{}", self.expr(e).0),
        };
        let bytes = place.ty.as_elem().map_or(0, ElemType::size_bytes);
        let cache = if bytes == 16 { "cg" } else { "ca" };
        let text = format!(
            "asm volatile(\"cp.async.{cache}.shared.global [%0], [%1], {bytes};\" :: \"r\"((unsigned)__cvta_generic_to_shared({})), \"l\"({}) : \"memory\")",
            address(place),
            address(value)
        );
        (text, ATOM)
    }

    /// The address of the first element of the vector access `e`, and its binding
    /// strength: through `parray_vat` where it is checked.
    fn vector_address(&self, e: &Expr) -> (String, u8) {
        let ExprKind::Vector {
            base,
            at,
            lanes,
            check,
            ..
        } = &e.kind
        else {
            unreachable!("a vector access")
        };
        let Ty::Vector(v) = e.ty else {
            unreachable!("checked: a vector access has a vector type")
        };
        match check {
            Check::Checked(Some(root)) if self.roots.contains_key(root) => {
                let (array, n, which) = &self.roots[root];
                self.uses.borrow_mut().insert(array.clone());
                let text = format!(
                    "parray_vat<{lanes}>({}, {}, {array}, {n}, {which}, {}u, {}u, __parray_fault)",
                    self.expr(base).0,
                    self.expr(at).0,
                    self.stmt_line,
                    fault::vector_code(v)
                );
                (text, ATOM)
            }
            _ if is_zero(at) => self.expr(base),
            _ => {
                let p = precedence(BinOp::Add);
                let text = format!("{} + {}", self.operand(base, p), self.operand(at, p));
                (text, p)
            }
        }
    }

    fn lit(&self, l: &Lit, ty: Ty) -> String {
        if let (Lit::Float(digits, _), Ty::Scalar(s)) = (l, ty) {
            if let Some(bits) = crate::rounding::literal_bits(digits, s) {
                return match (s, self.dialect) {
                    (Scalar::F16, _) => format!("__ushort_as_half((unsigned short){bits:#06x}u)"),
                    (_, Dialect::Cuda) => {
                        format!("__ushort_as_bfloat16((unsigned short){bits:#06x}u)")
                    }
                    // The `f32` with the same upper bits, which HIP's constructor keeps.
                    (_, Dialect::Hip { .. }) => {
                        format!(
                            "hip_bfloat16(__int_as_float({:#010x}))",
                            u32::from(bits) << 16
                        )
                    }
                };
            }
        }
        match l {
            Lit::Bool(b) => b.to_string(),
            Lit::Int(v, _) => match ty {
                Ty::Scalar(Scalar::U32 | Scalar::Usize) => format!("{v}u"),
                Ty::Scalar(Scalar::I64) => format!("{v}ll"),
                Ty::Scalar(Scalar::U64) => format!("{v}ull"),
                Ty::Scalar(Scalar::I8) => format!("(signed char){v}"),
                Ty::Scalar(Scalar::U8) => format!("(unsigned char){v}"),
                Ty::Scalar(Scalar::F32) => format!("{v}.0f"),
                Ty::Scalar(Scalar::F64) => format!("{v}.0"),
                _ => v.to_string(),
            },
            Lit::Float(digits, _) => {
                let digits = if digits.contains(['.', 'e', 'E']) {
                    digits.clone()
                } else {
                    format!("{digits}.0")
                };
                if ty == Ty::Scalar(Scalar::F32) {
                    format!("{digits}f")
                } else {
                    digits
                }
            }
        }
    }

    /// The method call `e` of `m` on `recv`: an operand in `int` converted back, as CUDA's
    /// `min` and `max` take their overload from their operands.
    fn method(&self, e: &Expr, m: Method, recv: &Expr, args: &[Expr]) -> String {
        let r = self.typed_operand(e, recv, 0);
        let a: Vec<String> = args.iter().map(|x| self.typed_operand(e, x, 0)).collect();
        let s = recv.ty.scalar().expect("checked: a number");
        if s.is_int() {
            let f = match (m, s) {
                (Method::Abs, Scalar::I64) => "llabs",
                (Method::Abs, _) => "abs",
                (Method::Min, _) => "min",
                _ => "max",
            };
            let mut all = vec![r];
            all.extend(a);
            return format!("{f}({})", all.join(", "));
        }
        let f32 = s == Scalar::F32;
        let base = match m {
            Method::Recip => {
                let one = if f32 { "1.0f" } else { "1.0" };
                return format!("({one} / ({r}))");
            }
            Method::Powi => {
                let f = if f32 { "powf" } else { "pow" };
                return format!("{f}({r}, ({})({}))", c_scalar(s), a[0]);
            }
            other => other.c_name(),
        };
        let mut all = vec![r];
        all.extend(a);
        format!("{base}{}({})", if f32 { "f" } else { "" }, all.join(", "))
    }
}

/// The function that converts a `from` to a `to` where one of them is a half
/// ([`crate::passes::widen`] leaves only these three conversions): CUDA's intrinsics, HIP's
/// constructors (which round an `f64` once, as CUDA's `__double2half` does).
fn half_conversion(from: Ty, to: Scalar, dialect: Dialect) -> Option<&'static str> {
    let hip = matches!(dialect, Dialect::Hip { .. });
    Some(match (from.scalar()?, to, hip) {
        (Scalar::F16, Scalar::F32, _) => "__half2float",
        (Scalar::Bf16, Scalar::F32, false) => "__bfloat162float",
        (Scalar::Bf16, Scalar::F32, true) => "(float)",
        (Scalar::F32, Scalar::F16, false) => "__float2half_rn",
        (Scalar::F64, Scalar::F16, false) => "__double2half",
        (Scalar::F32, Scalar::Bf16, false) => "__float2bfloat16_rn",
        (Scalar::F64, Scalar::Bf16, false) => "__double2bfloat16",
        (Scalar::F32 | Scalar::F64, Scalar::F16, true) => "__half",
        (Scalar::F32, Scalar::Bf16, true) => "hip_bfloat16",
        // ROCm 5's `hip_bfloat16` takes only a `float`, which would round twice: the
        // name tells hipcc's reader why the kernel does not compile.
        (Scalar::F64, Scalar::Bf16, true) => "parray_hip_has_no_f64_to_bf16_use_f32",
        _ => return None,
    })
}

/// A float's conversion to an integer type, Rust's `as` (truncated toward zero, saturated
/// at the type's ends, NaN to 0), of the C operand `x`: `None` for another conversion.
/// C's cast is undefined outside the type's range (which NVVM may fold to anything, and an
/// 8-bit one is a 16-bit `cvt` wrapped), so it is CUDA's intrinsic of the `cvt.rzi`
/// instruction, which saturates (HIP has the same names), for 8 bits the 32-bit one
/// clamped. Only `f32` to a 32-bit integer takes NaN to 0 on an H200: the others give the
/// type's lowest or `0x80..0`, so their operand goes through [`NAN_TO_ZERO`] first.
fn float_to_int(from: Ty, to: Scalar, x: &str) -> Option<String> {
    let x = if nan_needs_guard(from, to) {
        format!("{NAN_TO_ZERO}({x})")
    } else {
        x.to_string()
    };
    let f = match (from.scalar()?, to) {
        (Scalar::F32, Scalar::I8 | Scalar::I32) => "__float2int_rz",
        (Scalar::F32, Scalar::U8 | Scalar::U32 | Scalar::Usize) => "__float2uint_rz",
        (Scalar::F32, Scalar::I64) => "__float2ll_rz",
        (Scalar::F32, Scalar::U64) => "__float2ull_rz",
        (Scalar::F64, Scalar::I8 | Scalar::I32) => "__double2int_rz",
        (Scalar::F64, Scalar::U8 | Scalar::U32 | Scalar::Usize) => "__double2uint_rz",
        (Scalar::F64, Scalar::I64) => "__double2ll_rz",
        (Scalar::F64, Scalar::U64) => "__double2ull_rz",
        _ => return None,
    };
    Some(match to {
        Scalar::I8 => format!("(signed char)max(-128, min(127, {f}({x})))"),
        Scalar::U8 => format!("(unsigned char)min(255u, {f}({x}))"),
        _ => format!("{f}({x})"),
    })
}

/// Whether `cvt.rzi` from `from` to `to` does not take NaN to 0 on its own (measured on an
/// H200: `f64` to anything and `f32` to 64 bits).
fn nan_needs_guard(from: Ty, to: Scalar) -> bool {
    match from.scalar() {
        Some(Scalar::F64) => to.is_int(),
        Some(Scalar::F32) => matches!(to, Scalar::I64 | Scalar::U64),
        _ => false,
    }
}

/// The function that takes a NaN to 0 and leaves every other value (one `setp` and one
/// `selp`), before the conversions [`nan_needs_guard`] names.
const NAN_TO_ZERO: &str = "parray_nan_to_zero";

/// [`NAN_TO_ZERO`] for both float types.
const NAN_TO_ZERO_HELPERS: &str = r#"__device__ __forceinline__ float parray_nan_to_zero(float x) { return x != x ? 0.0f : x; }
__device__ __forceinline__ double parray_nan_to_zero(double x) { return x != x ? 0.0 : x; }
"#;

/// The kernel parameter of a TMA copy's tensor map: `CUtensorMap`'s 128 opaque bytes at
/// 64-byte alignment, declared without the driver's header (`parray_runtime`'s
/// `TensorMap` is the host's twin).
pub const TENSOR_MAP: &str =
    "struct __align__(64) parray_tensor_map { unsigned long long opaque[16]; };\n";

/// The line that opens a kernel with a wgmma or a `setmaxnreg` ([`needs_sm90a`]): the
/// runtime compiles such a kernel for `sm_90a` (plain sm_90 has neither), and only on an
/// sm_90 GPU.
pub const SM90A: &str = "// parray: wgmma, built for sm_90a\n";

/// The line that opens every CUDA kernel (not HIP's, nor a cuFFT callback): the kernel
/// waits for the grid before it in the stream to complete before it runs on, so the
/// runtime may launch it while that grid's last blocks still run (programmatic dependent
/// launch, sm_90 and later: SPEC 4.2), hiding the launch behind their tail.
pub const FOLLOWS_PREVIOUS_GRID: &str =
    "// parray: waits for the previous grid (programmatic dependent launch)\n";

/// The kernel's first statements under [`FOLLOWS_PREVIOUS_GRID`]: wait for the grid
/// before it (complete, its writes visible), then let the next one launch, whose blocks
/// take each multiprocessor as this grid's leave it and wait there in turn. Before
/// sm_90 there is no such launch, and nothing to wait for.
const GRID_DEPENDENCY: &str = "#if __CUDA_ARCH__ >= 900
    asm volatile(\"griddepcontrol.wait;\" ::: \"memory\");
    asm volatile(\"griddepcontrol.launch_dependents;\");
#endif
";

/// Whether the body has a wgmma.
fn has_wgmma(body: &Body) -> bool {
    let mut found = false;
    crate::ir::visit_stmts(&body.stmts, &mut |s| {
        found |= matches!(s, Stmt::Mma { wgmma: Some(_), .. });
    });
    found
}

/// Whether the body has a wgmma or a `#setmaxnreg` ([`SM90A`]).
fn needs_sm90a(body: &Body) -> bool {
    let mut found = has_wgmma(body);
    crate::ir::visit_stmts(&body.stmts, &mut |s| {
        found |= matches!(s, Stmt::SetMaxNreg { .. });
    });
    found
}

/// Whether the body waits on an mbarrier ([`fault::wait_helpers`]).
fn has_mbarrier_wait(body: &Body) -> bool {
    let mut found = false;
    let stmts = body
        .functions
        .iter()
        .flat_map(|f| &f.stmts)
        .chain(&body.stmts);
    crate::ir::visit_stmts(stmts, &mut |s| {
        found |= matches!(s, Stmt::MbarrierWait { .. });
    });
    found
}

/// The `"+f"` operands of an accumulator's `regs` registers, `d[0]` first.
fn accumulator_operands(d: &str, regs: u32) -> String {
    (0..regs)
        .map(|i| format!("\"+f\"({d}[{i}])"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn asm_operands(numbers: impl Iterator<Item = u8>) -> String {
    numbers
        .map(|i| format!("%{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The records the body reaches through SoA pointers and shared arrays, in first-use order.
fn soa_records(body: &Body) -> Vec<Record> {
    let mut out = Vec::new();
    for t in body.locals.iter().filter_map(|l| l.ty) {
        if let Ty::Ptr {
            elem: ElemType::Record(r),
            soa: true,
        }
        | Ty::Array {
            elem: ElemType::Record(r),
            soa: true,
            ..
        } = t
        {
            if !out.contains(&r) {
                out.push(r);
            }
        }
    }
    out
}

/// What declares the element types a kernel uses: the headers of the halves, then a
/// `struct` for each record, a record inside a record before it (C++'s layout of it is
/// the Rust struct's: the derive checks that C would pad nothing, and the fields are
/// CUDA's types of the same alignment).
fn elem_declarations(body: &Body, dialect: Dialect) -> String {
    /// `elem` after what its fields need, each once.
    fn with_fields(elem: ElemType, elems: &mut Vec<ElemType>) {
        if elems.contains(&elem) {
            return;
        }
        if let ElemType::Record(r) = elem {
            for f in r.def().fields {
                with_fields(f.elem, elems);
            }
        }
        elems.push(elem);
    }
    let mut elems = Vec::new();
    let mut note = |t: Ty| {
        let elem = match t {
            Ty::Scalar(Scalar::F16) => ElemType::Half,
            Ty::Scalar(Scalar::Bf16) => ElemType::Bf16,
            Ty::Record(r) => ElemType::Record(r),
            Ty::Ptr { elem: e, .. } | Ty::Array { elem: e, .. } => e,
            _ => return,
        };
        with_fields(elem, &mut elems);
    };
    for t in body.locals.iter().filter_map(|l| l.ty) {
        note(t);
    }
    body.visit_every_expr(&mut |e| note(e.ty));
    elems.sort_by_key(|e| (matches!(e, ElemType::Record(_)), *e != ElemType::Half));
    elems
        .into_iter()
        .map(|e| elem_declaration(e, dialect))
        .collect()
}

/// The function that builds a record from its fields' values (`Particle { .. }` in a body).
fn record_maker(r: Record) -> String {
    format!("parray_make_{}", r.name())
}

/// A [`record_maker`] for each record the body and its functions build, in first-use
/// order: `Particle parray_make_Particle(float2 pos, float mass)`, taking the fields in
/// their order (each argument converted as C converts it to the field's type).
fn record_makers(body: &Body) -> String {
    let mut built: Vec<Record> = Vec::new();
    let mut note = |e: &Expr| {
        if let ExprKind::MakeRecord {
            record: Some(r), ..
        } = e.kind
        {
            if !built.contains(&r) {
                built.push(r);
            }
        }
    };
    body.visit_every_expr(&mut note);
    built
        .into_iter()
        .map(|r| {
            let fields = &r.def().fields;
            let params: Vec<String> = fields
                .iter()
                .map(|f| format!("{} {}", f.elem.c_name(), f.name))
                .collect();
            let sets: String = fields
                .iter()
                .map(|f| format!(" parray_r.{0} = {0};", f.name))
                .collect();
            format!(
                "__device__ __forceinline__ {name} {maker}({params}) {{ {name} parray_r;{sets} return parray_r; }}\n",
                name = r.name(),
                maker = record_maker(r),
                params = params.join(", "),
            )
        })
        .collect()
}

/// What declares the element type `elem` in `dialect`: a header (the halves'), a record's
/// `struct`, or nothing.
fn elem_declaration(elem: ElemType, dialect: Dialect) -> String {
    if let ElemType::Record(r) = elem {
        let fields: String = r
            .def()
            .fields
            .iter()
            .map(|f| format!(" {} {};", f.elem.c_name(), f.name))
            .collect();
        return format!("struct {} {{{fields} }};\n", r.name());
    }
    let header = match (elem, dialect) {
        (ElemType::Half, Dialect::Cuda) => "#include <cuda_fp16.h>\n",
        (ElemType::Bf16, Dialect::Cuda) => "#include <cuda_bf16.h>\n",
        (ElemType::Half, Dialect::Hip { .. }) => "#include <hip/hip_fp16.h>\n",
        // ROCm 5's bfloat16 under CUDA's name, which the kernel's types use.
        (ElemType::Bf16, Dialect::Hip { .. }) => {
            "#include <hip/hip_bfloat16.h>\ntypedef hip_bfloat16 __nv_bfloat16;\n"
        }
        _ => "",
    };
    header.to_string()
}

/// Whether the C of `e`, an 8-bit integer, is an `int` that only agrees with its value in
/// the low 8 bits: C promotes the operands of `+ - * << ~` and unary `-` to `int`, where
/// the result does not wrap (`& | ^` keep operands that do). Rust's result is those bits.
fn is_wide(e: &Expr) -> bool {
    matches!(e.ty, Ty::Scalar(Scalar::U8 | Scalar::I8))
        && match &e.kind {
            ExprKind::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul | BinOp::Shl, ..)
            | ExprKind::Unary(..) => true,
            ExprKind::Binary(BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor, l, r) => {
                is_wide(l) || is_wide(r)
            }
            _ => false,
        }
}

/// The largest value of an integer scalar, as a GPU computes it (`usize` is 32 bits).
fn int_max(s: Scalar) -> Option<u128> {
    Some(match s {
        Scalar::I8 => i8::MAX as u128,
        Scalar::U8 => u8::MAX.into(),
        Scalar::I32 => i32::MAX as u128,
        Scalar::U32 | Scalar::Usize => u32::MAX.into(),
        Scalar::I64 => i64::MAX as u128,
        Scalar::U64 => u64::MAX.into(),
        Scalar::Bool | Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::Bf16 => return None,
    })
}

/// `e` written as `text`, binding with strength `p`, as an operand of an operator binding
/// with strength `min`: parenthesised if it binds less tightly, or is a bitwise operation
/// (C ranks `&`, `^`, `|` below comparisons).
fn bracket(e: &Expr, (text, p): (String, u8), min: u8) -> String {
    let bitwise = matches!(
        &e.kind,
        ExprKind::Binary(BinOp::BitAnd | BinOp::BitOr | BinOp::BitXor, ..)
    );
    if p < min || (bitwise && min > 1) {
        format!("({text})")
    } else {
        text
    }
}

/// The index of an offset that is that index alone (`$V[k]$` is `k`).
fn lone_index(e: &Expr) -> Option<&Expr> {
    match &e.kind {
        ExprKind::Offset { off, args, .. } => match off.expr.single_term()? {
            Term::Var(v) => args.get(v.0 as usize),
            Term::Digit { .. } | Term::Xor { .. } => None,
        },
        _ => None,
    }
}

/// Whether the C of `e`, a `u32` or `usize` (`unsigned`), is an `int`: computed in `int`
/// (SPEC 3.5, "Index arithmetic in `int`"), or an offset that is an `int` index alone.
fn in_int(e: &Expr) -> bool {
    e.signed
        || lone_index(e).is_some_and(|a| {
            matches!(a.ty, Ty::Scalar(Scalar::I8 | Scalar::U8 | Scalar::I32)) || in_int(a)
        })
}

/// Whether `e` is the constant 0.
fn is_zero(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::Lit(Lit::Int(0, _)) | ExprKind::Size(0) => true,
        ExprKind::Offset { off, .. } => off.as_const() == Some(0),
        _ => false,
    }
}

/// The binding strength of an offset as [`emit_cuda::to_c`] writes it: a sum; a product
/// (a coefficient, a digit's `/` or `%`); or one index alone, which may be a cast.
fn offset_strength(off: &parray_layout::Offset) -> u8 {
    match (&off.expr.terms[..], off.expr.konst) {
        ([], _) => ATOM,
        ([(1, Term::Var(_))], 0) => UNARY,
        ([(1, Term::Digit { div, modulo, of })], 0) => {
            if *div != 1 || modulo.is_some() {
                precedence(BinOp::Mul)
            } else if of.single_term().is_some_and(|t| matches!(t, Term::Var(_))) {
                UNARY
            } else {
                // Written in parentheses.
                ATOM
            }
        }
        ([_], 0) => precedence(BinOp::Mul),
        _ => precedence(BinOp::Add),
    }
}

/// A C string literal of `s` (UTF-8 bytes outside printable ASCII in octal).
fn c_string(s: &str) -> String {
    let mut out = String::from("\"");
    for b in s.bytes() {
        match b {
            b'\\' => out.push_str("\\\\"),
            b'"' => out.push_str("\\\""),
            b'\n' => out.push_str("\\n"),
            b'\t' => out.push_str("\\t"),
            0x20..=0x7e => out.push(b as char),
            _ => {
                let _ = write!(out, "\\{b:03o}");
            }
        }
    }
    out.push('"');
    out
}

/// The number of elements of an array a kernel creates: a kernel is written for literal
/// sizes, or specialised at bound ones (`kernels::specialise` makes each `len` a number).
fn fixed_len(len: crate::ir::Len) -> u64 {
    len.fixed()
        .expect("a kernel's arrays have numbers of elements: it is specialised at bound sizes")
}
