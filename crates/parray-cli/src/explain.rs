//! `parray explain`: a type's dimension tree, for a person to read.

use std::collections::HashMap;
use std::fmt::Write as _;

use parray_core::{MemKind, Module, NodeId, NodeKind, ThreadKind, TypeClass};

use crate::diag::Failure;
use crate::input::{Input, Target};

/// Most dimensions listed for one type (references can make trees exponentially large).
const MAX_LINES: usize = 1000;
/// Longest formula shown in full.
const MAX_FORMULA: usize = 240;

/// The name each node is first reached by: declared types in order, paths depth-first.
pub fn canonical_names(m: &Module) -> HashMap<NodeId, String> {
    fn walk(m: &Module, node: NodeId, path: String, names: &mut HashMap<NodeId, String>) {
        if names.contains_key(&node) {
            return;
        }
        for (k, c) in m.node(node).children.iter().enumerate() {
            walk(m, *c, format!("{path}_{k}"), names);
        }
        names.entry(node).or_insert(path);
    }
    let mut names = HashMap::new();
    for t in m.types() {
        // The root first, so a type's root is named by the type even if a child is shared.
        names.entry(t.root).or_insert_with(|| t.name.clone());
        for (k, c) in m.node(t.root).children.iter().enumerate() {
            walk(m, *c, format!("{}_{k}", t.name), &mut names);
        }
    }
    names
}

pub fn explain(input: &Input, names: &[String]) -> Result<String, Failure> {
    let targets = input.targets(names)?;
    let canon = canonical_names(&input.module);
    let mut out = String::new();
    for (n, t) in targets.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        explain_one(input, t, &canon, &mut out)?;
    }
    Ok(out)
}

struct Row {
    tree: String,
    name: String,
    size: String,
    what: String,
    extent: String,
    cnt: String,
    formula: String,
}

fn explain_one(
    input: &Input,
    t: &Target,
    canon: &HashMap<NodeId, String>,
    out: &mut String,
) -> Result<(), Failure> {
    let m = &input.module;
    let def = &m.types()[t.ty];
    let _ = writeln!(
        out,
        "{}: {}{}",
        t.name,
        if t.name != def.name {
            format!("sub-dimension of `{}`, ", def.name)
        } else {
            String::new()
        },
        header(m, t, &def.class, def.natural)
    );
    let _ = writeln!(
        out,
        "size {}, extent {} (storage in elements: largest offset + 1)",
        m.size(t.node),
        m.extent(t.node)
    );
    if let TypeClass::Thread(kind) = &def.class {
        if t.name == def.name {
            thread_mapping(m, t.node, kind, out);
        }
    }
    out.push('\n');

    let mut rows = Vec::new();
    let mut hidden = 0usize;
    collect(
        input,
        t,
        t.node,
        t.name.clone(),
        String::new(),
        String::new(),
        canon,
        &mut rows,
        &mut hidden,
    )?;
    let w = |f: &dyn Fn(&Row) -> usize| rows.iter().map(f).max().unwrap_or(0);
    let wn = w(&|r| r.tree.chars().count() + r.name.len());
    let ws = w(&|r| r.size.len());
    let ww = w(&|r| r.what.chars().count());
    let we = w(&|r| r.extent.len());
    for r in &rows {
        let name = format!("{}{}", r.tree, r.name);
        let _ = writeln!(
            out,
            "{name}{}  size {:<ws$}  {}{}  extent {:<we$}  cnt {:<3}  off(i) = {}",
            " ".repeat(wn - name.chars().count()),
            r.size,
            r.what,
            " ".repeat(ww - r.what.chars().count()),
            r.extent,
            r.cnt,
            r.formula,
        );
    }
    if hidden > 0 {
        let _ = writeln!(
            out,
            "... the listing stops at {MAX_LINES} dimensions: {hidden} more subtrees not shown (use --type to explain one)"
        );
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn collect(
    input: &Input,
    t: &Target,
    node: NodeId,
    path: String,
    tree: String,
    indent: String,
    canon: &HashMap<NodeId, String>,
    rows: &mut Vec<Row>,
    hidden: &mut usize,
) -> Result<(), Failure> {
    if rows.len() >= MAX_LINES {
        *hidden += 1;
        return Ok(());
    }
    let m = &input.module;
    let n = m.node(node);
    let formula = match parray_core::offset_function(m, node, "i") {
        Ok(f) => shorten(f.to_source()),
        Err(e) => format!("(not shown: {})", e.message),
    };
    let cnt = match m.is_contiguous(node) {
        Ok(true) => "yes".to_string(),
        Ok(false) => "no".to_string(),
        Err(_) => "?".to_string(),
    };
    let mut what = describe(m, node, canon);
    if let Some(c) = canon.get(&node) {
        if *c != path && node != t.node {
            what = format!("#{c} ({what})");
        }
    }
    rows.push(Row {
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
        collect(
            input,
            t,
            *c,
            format!("{path}_{i}"),
            branch,
            deeper,
            canon,
            rows,
            hidden,
        )?;
    }
    Ok(())
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

fn header(_m: &Module, _t: &Target, class: &TypeClass, natural: bool) -> String {
    let shape = if natural { "natural" } else { "artificial" };
    match class {
        TypeClass::Data { mem, elem } => match mem {
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

fn mem_words(m: MemKind) -> &'static str {
    match m {
        MemKind::Paged => "pageable host memory",
        MemKind::Pinned => "page-locked host memory",
        MemKind::Dmem => "GPU global memory",
        MemKind::Smem => "GPU shared memory, one array per block",
        MemKind::Rmem => "GPU registers, one array per thread",
    }
}

/// Section 4: how the thread ids of a thread array map to the hardware.
fn thread_mapping(m: &Module, root: NodeId, kind: &ThreadKind, out: &mut String) {
    let top = &m.node(root).children;
    let total = m.size(root);
    match kind {
        ThreadKind::Cuda(_) if top.len() == 2 => {
            let (grid, block) = (top[0], top[1]);
            let _ = writeln!(
                out,
                "grid of {} blocks (tid_0) x {} threads per block (tid_1); tid = tid_0 * {} + tid_1",
                m.size(grid),
                m.size(block),
                m.size(block)
            );
            for (k, (node, what, dim)) in [
                (grid, "blockIdx", "gridDim"),
                (block, "threadIdx", "blockDim"),
            ]
            .into_iter()
            .enumerate()
            {
                let kids = &m.node(node).children;
                let mut xyz = [1u64; 3];
                let mut maps = Vec::new();
                if kids.is_empty() {
                    xyz[0] = m.size(node);
                    maps.push(format!("tid_{k} = {what}.x"));
                } else {
                    let n = kids.len();
                    for (j, c) in kids.iter().enumerate() {
                        let axis = n - 1 - j;
                        if axis < 3 {
                            xyz[axis] = m.size(*c);
                            maps.push(format!("tid_{k}_{j} = {what}.{}", ["x", "y", "z"][axis]));
                        }
                    }
                }
                let _ = writeln!(
                    out,
                    "  {dim} = (x {}, y {}, z {}): {}",
                    xyz[0],
                    xyz[1],
                    xyz[2],
                    maps.join(", ")
                );
            }
        }
        _ => {
            let unit = if matches!(kind, ThreadKind::Mpi) {
                "processes"
            } else {
                "threads"
            };
            let mut parts = Vec::new();
            let mut weight: u64 = total;
            for (k, c) in top.iter().enumerate() {
                let s = m.size(*c);
                weight /= s;
                let f = match (k, weight) {
                    (_, 1) if k == 0 => "tid".to_string(),
                    (0, w) => format!("tid / {w}"),
                    (_, 1) => format!("tid % {s}"),
                    (_, w) => format!("tid / {w} % {s}"),
                };
                parts.push(format!("tid_{k} = {f}"));
            }
            let _ = writeln!(
                out,
                "{total} {unit}, tid in 0..{total}: {}",
                parts.join(", ")
            );
        }
    }
}
