//! A type's dimension tree, for a person to read (what `parray explain` prints).
//!
//! For each dimension: its name (the path it is reached by), size, what kind of dimension
//! it is (natural leaf, compound, prefix/structured/strided reference, or `#X` when it is
//! another dimension reached again), extent, `cnt` and its offset formula `off(i) = ...`.
//! A thread array's header also says how its thread ids map to the hardware (section 4).
//!
//! ```text
//! B: pinned float (page-locked host memory), artificial
//! size 12, extent 12 (storage in elements: largest offset + 1)
//!
//! B       size 12  compound of 2                  extent 12  cnt no   off(i) = i / 4 + (i % 4) * 3
//! ├─ B_0  size 3   #A_1 (natural leaf, stride 1)  extent 3   cnt yes  off(i) = i
//! └─ B_1  size 4   #A_0 (natural leaf, stride 3)  extent 10  cnt no   off(i) = i * 3
//! ```
//!
//! (Fig 4's `B = [#A_1][#A_0]` over `A = [4][3]`.) The text is the `parray explain`
//! command's; `tests/figures.rs` pins it for every declaration of the paper's figures.

use std::collections::HashMap;
use std::fmt::{self, Write};

use crate::kinds::{ElemType, MemKind, Record, ThreadKind};
use crate::offsets::offset_function;
use crate::path::child_name;
use crate::tree::{DimRef, Distribution, Holders, Module, NodeId, NodeKind, TypeClass};

/// Most dimensions listed for one type (references can make trees exponentially large).
pub const MAX_LINES: usize = 1000;
/// Longest formula shown in full.
pub const MAX_FORMULA: usize = 240;

/// The name each node is first reached by: declared types in order, paths depth-first.
pub fn canonical_names(m: &Module) -> HashMap<NodeId, String> {
    fn walk(m: &Module, node: NodeId, path: String, names: &mut HashMap<NodeId, String>) {
        if names.contains_key(&node) {
            return;
        }
        for (k, c) in m.node(node).children.iter().enumerate() {
            walk(m, *c, child_name(&path, k), names);
        }
        names.entry(node).or_insert(path);
    }
    let mut names = HashMap::new();
    for t in m.types() {
        // The root first, so a type's root is named by the type even if a child is shared.
        names.entry(t.root).or_insert_with(|| t.name.clone());
        for (k, c) in m.node(t.root).children.iter().enumerate() {
            walk(m, *c, child_name(&t.name, k), &mut names);
        }
    }
    names
}

/// The explanation of every declared type, in declaration order, separated by blank lines.
pub fn explain_types(m: &Module) -> String {
    let dims: Vec<(&str, DimRef)> = m
        .types()
        .iter()
        .enumerate()
        .map(|(ty, t)| (t.name.as_str(), DimRef { ty, node: t.root }))
        .collect();
    explain(m, dims)
}

/// The explanation of each dimension (a name as written, `A` or `A_0_1`, and what it
/// resolves to), separated by blank lines.
pub fn explain<'n>(m: &Module, dims: impl IntoIterator<Item = (&'n str, DimRef)>) -> String {
    let mut out = String::new();
    write_explain(m, dims, &mut out).expect("writing to a String cannot fail");
    out
}

/// [`explain`] into any writer.
pub fn write_explain<'n>(
    m: &Module,
    dims: impl IntoIterator<Item = (&'n str, DimRef)>,
    out: &mut dyn Write,
) -> fmt::Result {
    let canon = canonical_names(m);
    for (n, (name, dim)) in dims.into_iter().enumerate() {
        if n > 0 {
            out.write_char('\n')?;
        }
        explain_one(m, name, dim, &canon, out)?;
    }
    Ok(())
}

struct Row {
    tree: String,
    name: String,
    size: String,
    what: String,
    extent: String,
    cnt: &'static str,
    formula: String,
}

fn explain_one(
    m: &Module,
    name: &str,
    dim: DimRef,
    canon: &HashMap<NodeId, String>,
    out: &mut dyn Write,
) -> fmt::Result {
    let def = &m.types()[dim.ty];
    let whole = name == def.name;
    writeln!(
        out,
        "{name}: {}{}",
        if whole {
            String::new()
        } else {
            format!("sub-dimension of `{}`, ", def.name)
        },
        header(&def.class, def.natural)
    )?;
    writeln!(
        out,
        "size {}, extent {} (storage in elements: largest offset + 1)",
        m.size(dim.node),
        m.extent(dim.node)
    )?;
    match &def.distribution {
        Some(d @ Distribution { holders: Holders::Ranks, .. }) => writeln!(
            out,
            "distributed over the mpi array `{}` ({} processes): each rank holds a part of {} elements; the element at offset o is element o % {} of rank o / {}",
            d.over, d.ranks, d.part, d.part, d.part
        )?,
        Some(d @ Distribution { holders: Holders::Threads, .. }) => {
            let digits: Vec<String> = d.leaves.iter().map(|l| name_of(canon, *l)).collect();
            writeln!(
                out,
                "a fragment, distributed over the threads of `{}`'s block ({} threads): each thread holds a part of {p} elements (its registers); the element at offset o is element o % {p} of the thread o / {p} of the block; the thread's digits: {}",
                d.over,
                d.ranks,
                digits.join(", "),
                p = d.part,
            )?
        }
        None => {}
    }
    if let Some(bytes) = m.swizzle_alignment(dim) {
        writeln!(
            out,
            "swizzled: its base must be aligned to {bytes} bytes for the XOR to act on addresses as on offsets"
        )?;
    }
    if let (
        TypeClass::Data {
            mem: Some(mem),
            elem: ElemType::Record(r),
            soa: true,
        },
        true,
    ) = (&def.class, whole)
    {
        field_arrays(*r, m.extent(dim.node), *mem, out)?;
    }
    if let (TypeClass::Thread(kind), true) = (&def.class, whole) {
        thread_mapping(m, dim.node, kind, out)?;
    }
    out.write_char('\n')?;

    let mut rows = Vec::new();
    let mut hidden = 0usize;
    let thread_digits = match &def.distribution {
        Some(d) if d.holders == Holders::Threads => d.leaves.as_slice(),
        _ => &[],
    };
    let mut walk = Walk {
        m,
        top: dim.node,
        thread_digits,
        canon,
        rows: &mut rows,
        hidden: &mut hidden,
    };
    walk.collect(dim.node, name.to_string(), String::new(), String::new());
    let w = |f: &dyn Fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let wn = w(&|r| r.tree.chars().count() + r.name.len());
    let ws = w(&|r| r.size.len());
    let ww = w(&|r| r.what.chars().count());
    let we = w(&|r| r.extent.len());
    for r in &rows {
        let name = format!("{}{}", r.tree, r.name);
        writeln!(
            out,
            "{name}{}  size {:<ws$}  {}{}  extent {:<we$}  cnt {:<3}  off(i) = {}",
            " ".repeat(wn - name.chars().count()),
            r.size,
            r.what,
            " ".repeat(ww - r.what.chars().count()),
            r.extent,
            r.cnt,
            r.formula,
        )?;
    }
    if hidden > 0 {
        writeln!(
            out,
            "... the listing stops at {MAX_LINES} dimensions: {hidden} more subtrees not shown (use --type to explain one)"
        )?;
    }
    Ok(())
}

/// The rows of one explanation, depth-first.
struct Walk<'a> {
    m: &'a Module,
    /// The dimension being explained (never shown as `#X`, even if it is reached again).
    top: NodeId,
    /// The leaves standing for the holding thread, of a fragment (SPEC 2.14).
    thread_digits: &'a [NodeId],
    canon: &'a HashMap<NodeId, String>,
    rows: &'a mut Vec<Row>,
    hidden: &'a mut usize,
}

impl Walk<'_> {
    fn collect(&mut self, node: NodeId, path: String, tree: String, indent: String) {
        if self.rows.len() >= MAX_LINES {
            *self.hidden += 1;
            return;
        }
        let m = self.m;
        let n = m.node(node);
        let formula = match offset_function(m, node, "i") {
            Ok(f) => shorten(f.to_source()),
            Err(e) => format!("(not shown: {})", e.message),
        };
        let cnt = match m.is_contiguous(node) {
            Ok(true) => "yes",
            Ok(false) => "no",
            Err(_) => "?",
        };
        let mut what = describe(m, node, self.canon);
        if self.thread_digits.contains(&node) {
            what = what.replace("natural leaf", "thread digit");
        }
        if let Some(c) = self.canon.get(&node) {
            if *c != path && node != self.top {
                what = format!("#{c} ({what})");
            }
        }
        self.rows.push(Row {
            tree,
            name: path.clone(),
            size: n.size.to_string(),
            what,
            extent: m.extent(node).to_string(),
            cnt,
            formula,
        });
        let k = n.children.len();
        for (i, c) in n.children.iter().enumerate() {
            let last = i + 1 == k;
            let branch = format!("{indent}{}", if last { "└─ " } else { "├─ " });
            let deeper = format!("{indent}{}", if last { "   " } else { "│  " });
            self.collect(*c, format!("{path}_{i}"), branch, deeper);
        }
    }
}

fn name_of(canon: &HashMap<NodeId, String>, n: NodeId) -> String {
    canon
        .get(&n)
        .cloned()
        .unwrap_or_else(|| format!("node {}", n.0))
}

/// What a node is, in words.
fn describe(m: &Module, node: NodeId, canon: &HashMap<NodeId, String>) -> String {
    let n = m.node(node);
    match n.kind {
        NodeKind::Leaf { stride } => format!("natural leaf, stride {stride}"),
        NodeKind::Xor { stride, partner } => format!(
            "swizzled leaf, stride {stride}, digit ^ {}'s",
            name_of(canon, partner)
        ),
        NodeKind::Compound => format!("compound of {}", n.children.len()),
        NodeKind::Prefix { target } if n.children.is_empty() => {
            format!("prefix {}#{}", n.size, name_of(canon, target))
        }
        NodeKind::Prefix { target } => {
            format!(
                "structured {}#{}",
                structure(m, &n.children),
                name_of(canon, target)
            )
        }
        NodeKind::Strided { target, weight } => {
            let arg = if weight == 1 {
                "i".to_string()
            } else {
                format!("i * {weight}")
            };
            format!("strided: off_{}({arg})", name_of(canon, target))
        }
    }
}

/// The structure S of `S#R`, with its sizes evaluated: `[16][[4][4]]`.
fn structure(m: &Module, children: &[NodeId]) -> String {
    children
        .iter()
        .map(|c| {
            let n = m.node(*c);
            if n.children.is_empty() {
                format!("[{}]", n.size)
            } else {
                format!("[{}]", structure(m, &n.children))
            }
        })
        .collect()
}

fn shorten(s: String) -> String {
    if s.len() <= MAX_FORMULA {
        return s;
    }
    let mut cut = MAX_FORMULA;
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    format!("{} ... ({} more characters)", &s[..cut], s.len() - cut)
}

fn header(class: &TypeClass, natural: bool) -> String {
    let shape = if natural { "natural" } else { "artificial" };
    match class {
        TypeClass::Data {
            mem: Some(mem),
            elem,
            soa: true,
        } => format!(
            "{mem} soa {elem} ({}, one array per field), {shape}",
            mem_words(*mem)
        ),
        TypeClass::Data { mem, elem, .. } => match mem {
            Some(mem) => format!("{mem} {elem} ({}), {shape}", mem_words(*mem)),
            None => format!("{elem}, no memory kind (a pure view), {shape}"),
        },
        TypeClass::Thread(ThreadKind::Pthd) => "pthd thread array (CPU threads)".to_string(),
        TypeClass::Thread(ThreadKind::Mpi) => {
            "mpi thread array (processes; tid = rank)".to_string()
        }
        TypeClass::Thread(ThreadKind::Cuda(params)) => format!(
            "cuda({}) thread array (a GPU grid; the parameters are the kernel's signature)",
            params
                .iter()
                .map(|p| p.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The field arrays of an SoA array of `extent` records of `r` in `mem`: where each
/// starts and how many bytes it has.
fn field_arrays(r: Record, extent: u64, mem: MemKind, out: &mut dyn Write) -> fmt::Result {
    let align = mem.soa_align();
    writeln!(
        out,
        "one array per field, each at a multiple of {align} bytes; field f of the element at offset o is at start(f) + o * bytes(f), in {} bytes:",
        r.soa_bytes(extent, align)
    )?;
    let fields = r.def().fields;
    let wn = fields.iter().map(|f| f.name.len()).max().unwrap_or(0);
    let we = fields
        .iter()
        .map(|f| f.elem.keyword().len())
        .max()
        .unwrap_or(0);
    for (k, f) in fields.iter().enumerate() {
        writeln!(
            out,
            "  {:<wn$}  {:<we$}  start {}, bytes {}",
            f.name,
            f.elem.keyword(),
            r.soa_start(k, extent, align),
            f.elem.size_bytes()
        )?;
    }
    Ok(())
}

fn mem_words(m: MemKind) -> &'static str {
    match m {
        MemKind::Paged => "pageable host memory",
        MemKind::Pinned => "page-locked host memory",
        MemKind::Dmem => "GPU global memory",
        MemKind::Cmem => "GPU constant memory (64 KiB, read-only in kernels)",
        MemKind::Smem => "GPU shared memory, one array per block",
        MemKind::Rmem => "GPU registers, one array per thread",
    }
}

/// Section 4: how the thread ids of a thread array map to the hardware.
fn thread_mapping(m: &Module, root: NodeId, kind: &ThreadKind, out: &mut dyn Write) -> fmt::Result {
    let top = &m.node(root).children;
    let total = m.size(root);
    match kind {
        ThreadKind::Cuda(_) => {
            if let Ok(grid) = crate::grid::CudaGrid::of(m, root) {
                for line in grid.describe(m, root) {
                    writeln!(out, "{line}")?;
                }
            }
        }
        _ => {
            let unit = if matches!(kind, ThreadKind::Mpi) {
                "processes"
            } else {
                "threads"
            };
            let parts: Vec<String> = top
                .iter()
                .enumerate()
                .map(|(k, c)| {
                    let ix = crate::grid::thread_index(m, root, kind, *c);
                    let off = crate::Offset {
                        expr: ix.expr,
                        vars: ix.vars,
                    };
                    format!("tid_{k} = {}", off.to_source())
                })
                .collect();
            writeln!(
                out,
                "{total} {unit}, tid in 0..{total}: {}",
                parts.join(", ")
            )?;
        }
    }
    Ok(())
}
