//! The semantic model: declarations resolved into dimension trees (PARRAY.md section 3).
//!
//! Every dimension is a [`Node`] in one arena shared by all types of a [`Module`], so that
//! `#R` can *be* R's node (rule 3: D's children are R's children) and every sub-dimension
//! is usable as a type. A node knows its size, how its offset function is built, and its
//! largest offset; offsets themselves are produced by `offsets` (symbolic) or [`Module::offset_at`].
//! How declarations become a module (and are validated) is `build`'s.

use std::collections::HashMap;

use crate::ast::*;
use crate::error::{Error, ErrorKind, Result, TextSpan};
use crate::kinds::{ElemType, MemKind, ThreadKind};
use crate::path::{child_name, DimPath};

/// Index of a node in its module's arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

/// Most elements of one dimension whose extent and cnt are found by enumerating its
/// offsets (SPEC 2.7, 2.11).
const ENUMERATION_LIMIT: u64 = 1 << 24;
/// What is enumerated, in the message of [`ENUMERATION_LIMIT`].
const STRIDED: &str = "strided view";
const SWIZZLED: &str = "swizzled dimension";

/// Longest chain of nested dimensions and references a type may build on.
pub const MAX_HEIGHT: u32 = 256;

/// How a node's offset function is defined.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeKind {
    /// A natural leaf: `off(i) = i * stride` (rule 1).
    Leaf { stride: u64 },
    /// Children indexed by row-major digits, offsets summed (rule 2).
    Compound,
    /// `off(i) = off_target(i)` on a prefix of the target: `n#R` (no children) or `S#R`
    /// (the children are S's, as [`NodeKind::Strided`] nodes; rules 4 and 5).
    Prefix { target: NodeId },
    /// A dimension of the structure S in `S#R`: `off(x) = off_target(x * weight)` (rule 5).
    Strided { target: NodeId, weight: u64 },
    /// A swizzled natural leaf `[n ^ P]` (rule 11): `off(i) = (i ^ p) * stride`, `p` the
    /// digit of its partner leaf where the same walk reaches the partner, else 0.
    Xor { stride: u64, partner: NodeId },
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Node {
    pub size: u64,
    pub kind: NodeKind,
    /// Sub-dimensions, in order (`X_0`, `X_1`, ...).
    pub children: Vec<NodeId>,
    /// The largest offset of the node (its extent minus one).
    pub max_offset: u64,
    /// Length of the longest chain of children and targets below this node.
    pub height: u32,
}

/// What a declaration declares.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TypeClass {
    /// `soa`: a record array stored one array per field (SPEC 2.3).
    Data {
        mem: Option<MemKind>,
        elem: ElemType,
        soa: bool,
    },
    Thread(ThreadKind),
}

/// The bytes of constant memory a kernel can have (CUDA's and HIP's 64 KiB): the most a
/// cmem type may need.
pub const CONSTANT_BYTES: u64 = 65536;

/// How a data type's elements are spread over the processes of an `mpi` thread array
/// (SPEC.md 2.13), or over the threads of a cuda thread array's block (a fragment, SPEC.md
/// 2.14): a dimension `[#P]` (or `[n#P]`, `[#P_0]`; `[#G_1_1]` of a block) of a natural
/// type is the rank, or the thread, that holds the element. Offsets are those of the
/// holders' parts laid end to end, holder 0's first: the element at offset `o` is element
/// `o % part` of holder `o / part`'s part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    /// The thread array: an mpi array, or the cuda array whose block holds a fragment.
    pub over: String,
    /// What holds the parts.
    pub holders: Holders,
    /// How many hold parts: the mpi array's processes (a job using the type runs this
    /// many ranks), or the threads of the cuda array's block.
    pub ranks: u64,
    /// Elements of storage of one holder's part (the product of the type's other leaves).
    pub part: u64,
    /// The leaves standing for the holder (the distributed natural type's; its views
    /// share them), left to right.
    pub leaves: Vec<NodeId>,
}

/// What holds the parts of a distributed type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Holders {
    /// The processes of an mpi thread array (SPEC.md 2.13): holder `h` is rank `h`.
    Ranks,
    /// The threads of a cuda thread array's block (SPEC.md 2.14, an `rmem` fragment):
    /// holder `h` is the thread whose flat id in the block is `h`.
    Threads,
}

impl Distribution {
    /// Elements of storage rank `rank` needs for a type of this distribution and `extent`:
    /// its part, less what lies past the extent (none on a rank past the last holder).
    pub fn part_on(&self, rank: u64, extent: u64) -> u64 {
        extent
            .saturating_sub(rank.saturating_mul(self.part))
            .min(self.part)
    }
}

/// A declared type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypeDef {
    pub name: String,
    pub class: TypeClass,
    pub root: NodeId,
    /// True when no dimension references another type (a distributed dimension, over an
    /// mpi array or a block's threads, is not a reference in this sense).
    pub natural: bool,
    /// For a data type with a dimension over an mpi array (or, an rmem type, over a cuda
    /// array's block), or built on the dimensions of one that has: how its elements are
    /// spread over the ranks (the threads).
    pub distribution: Option<Distribution>,
    /// For a type whose pieces cover a dimension past its end (`[[ceil(M / 128)][128]]#A_0`,
    /// SPEC 2.4), or built on one: the extent of the data they cover, which its forms
    /// reach past.
    pub covers: Option<u64>,
    pub span: TextSpan,
}

/// A dimension named by a path: a declared type or one of its sub-dimensions (`A_0_1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DimRef {
    /// Index of the declared type in [`Module::types`].
    pub ty: usize,
    pub node: NodeId,
}

/// Resolved declarations: the arena of nodes, the types and the constants.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Module {
    pub(crate) nodes: Vec<Node>,
    pub(crate) types: Vec<TypeDef>,
    pub(crate) by_name: HashMap<String, usize>,
    pub(crate) consts: HashMap<String, u64>,
    /// For each node, the swizzled leaves and partners its offset walk reaches, each with
    /// how many times (2 meaning "more than once"); empty without swizzles.
    pub(crate) reach: Vec<Vec<(NodeId, u8)>>,
}

impl Module {
    /// [`Module::reach`] of the nodes from `first` on (their children and targets come
    /// before them in the arena).
    pub(crate) fn compute_reach(&mut self, first: usize) {
        self.reach.truncate(first);
        let partners: Vec<NodeId> = self
            .nodes
            .iter()
            .filter_map(|n| match n.kind {
                NodeKind::Xor { partner, .. } => Some(partner),
                _ => None,
            })
            .collect();
        for i in first..self.nodes.len() {
            let node = &self.nodes[i];
            let mut out: Vec<(NodeId, u8)> = Vec::new();
            let below: Vec<NodeId> = match node.kind {
                NodeKind::Xor { .. } => vec![NodeId(i as u32)],
                NodeKind::Leaf { .. } if partners.contains(&NodeId(i as u32)) => {
                    vec![NodeId(i as u32)]
                }
                NodeKind::Leaf { .. } => Vec::new(),
                NodeKind::Compound => node.children.clone(),
                NodeKind::Prefix { target } | NodeKind::Strided { target, .. } => vec![target],
            };
            for b in below {
                let from = match b.0 as usize == i {
                    true => vec![(b, 1)],
                    false => self.reach[b.0 as usize].clone(),
                };
                for (id, k) in from {
                    match out.iter_mut().find(|(o, _)| *o == id) {
                        Some((_, have)) => *have = (*have + k).min(2),
                        None => out.push((id, k)),
                    }
                }
            }
            self.reach.push(out);
        }
    }

    /// The swizzled leaves and partners the walk of `n`'s offsets reaches, with how many
    /// times (2: more than once).
    pub(crate) fn reached(&self, n: NodeId) -> &[(NodeId, u8)] {
        self.reach.get(n.0 as usize).map_or(&[], Vec::as_slice)
    }

    /// The swizzles (leaf, partner) whose leaf and partner the walk of `n`'s offsets both
    /// reach: those that act on `n`'s offsets (rule 11).
    pub fn couplings(&self, n: NodeId) -> Vec<(NodeId, NodeId)> {
        let reached = self.reached(n);
        reached
            .iter()
            .filter_map(|(l, _)| match self.node(*l).kind {
                NodeKind::Xor { partner, .. } if reached.iter().any(|(p, _)| *p == partner) => {
                    Some((*l, partner))
                }
                _ => None,
            })
            .collect()
    }

    /// The alignment in bytes that the base of an array of the dimension `dim` needs for
    /// its swizzles to act on absolute addresses as on offsets (the hardware's 32/64/128B
    /// modes XOR address bits): the power of two covering the bytes that the leaf's and
    /// the partner's digits span (`stride * size * element bytes`), the largest over the
    /// dimension's couplings; `None` for a dimension without any (or not of data).
    /// Hopper's 128B mode, `smem bf16 [[R/8][8]][[8 ^ T_0_1][8]] T`: 1024.
    pub fn swizzle_alignment(&self, dim: DimRef) -> Option<u64> {
        let TypeClass::Data { elem, .. } = self.types[dim.ty].class else {
            return None;
        };
        let span = |n: NodeId| {
            let (NodeKind::Leaf { stride } | NodeKind::Xor { stride, .. }) = self.node(n).kind
            else {
                unreachable!("a swizzle couples two leaves")
            };
            u128::from(stride) * u128::from(self.size(n)) * u128::from(elem.size_bytes())
        };
        self.couplings(dim.node)
            .into_iter()
            .map(|(l, p)| span(l).max(span(p)).next_power_of_two())
            .max()
            .map(|b| u64::try_from(b).unwrap_or(u64::MAX))
    }

    /// The arena of dimension nodes ([`NodeId`] indexes it).
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }

    /// The constants, sorted by name.
    pub fn constants(&self) -> Vec<(String, u64)> {
        let mut all: Vec<(String, u64)> =
            self.consts.iter().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort();
        all
    }

    pub fn types(&self) -> &[TypeDef] {
        &self.types
    }

    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.0 as usize]
    }

    /// The leaves under `id`, left to right (`id` itself when it has no children).
    pub fn leaves(&self, id: NodeId) -> Vec<NodeId> {
        match self.node(id).children.as_slice() {
            [] => vec![id],
            children => children.iter().flat_map(|&c| self.leaves(c)).collect(),
        }
    }

    pub fn constant(&self, name: &str) -> Option<u64> {
        self.consts.get(name).copied()
    }

    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.by_name.get(name).map(|&i| &self.types[i])
    }

    /// The dimension named `name` (`A`, `A_0_1`): the longest declared name of its
    /// readings ([`DimPath::readings`]) names the type.
    pub fn lookup(&self, name: &str) -> Result<DimRef, LookupError> {
        let Some((path, ty)) =
            DimPath::readings(name).find_map(|p| self.by_name.get(p.name).map(|&ty| (p, ty)))
        else {
            // A declared name followed by something other than child numbers.
            let ty = name
                .match_indices('_')
                .rev()
                .map(|(i, _)| &name[..i])
                .find(|prefix| self.by_name.contains_key(*prefix));
            return Err(
                ty.map_or(LookupError::Unknown, |ty| LookupError::BadSuffix {
                    ty: ty.to_string(),
                }),
            );
        };
        let mut node = self.types[ty].root;
        let mut walked = path.name.to_string();
        for &k in &path.children {
            let children = &self.node(node).children;
            let Some(&c) = children.get(k) else {
                return Err(LookupError::NoChild {
                    parent: walked,
                    count: children.len(),
                    index: k,
                });
            };
            walked = child_name(&walked, k);
            node = c;
        }
        Ok(DimRef { ty, node })
    }

    /// [`Module::lookup`] with an error pointing at the name as written.
    pub fn resolve(&self, id: &Ident) -> Result<DimRef> {
        self.lookup(&id.name).map_err(|e| {
            let msg = match e {
                LookupError::Unknown if self.consts.contains_key(&id.name) => {
                    format!("`{}` is a constant, not a type", id.name)
                }
                e => e.message(&id.name),
            };
            Error::new(ErrorKind::Unknown, id.span, msg)
        })
    }

    pub fn size(&self, n: NodeId) -> u64 {
        self.node(n).size
    }

    /// Storage a buffer of this dimension needs, in elements: the largest offset plus one.
    pub fn extent(&self, n: NodeId) -> u64 {
        self.node(n).max_offset + 1
    }

    /// Largest offset of `off(x * w)` for `x` in `[0, n)`; exact, enumerating only strided
    /// views that do not line up with the target's digits.
    pub(crate) fn max_strided(&self, id: NodeId, n: u64, w: u64, work: &mut Work) -> Result<u64> {
        work.step()?;
        if !self.couplings(id).is_empty() {
            // A swizzle permutes digits across children: enumerate (rule 11).
            let mut max = 0;
            self.enumerate(id, n, w, work, SWIZZLED, |_, off| {
                max = max.max(off);
                true
            })?;
            return Ok(max);
        }
        let node = self.node(id);
        match node.kind {
            NodeKind::Leaf { stride } | NodeKind::Xor { stride, .. } => Ok((n - 1) * w * stride),
            NodeKind::Prefix { target } => self.max_strided(target, n, w, work),
            NodeKind::Strided { target, weight } => self.max_strided(target, n, w * weight, work),
            NodeKind::Compound => {
                let kids = &node.children;
                if w == 1 {
                    return self.max_prefix_children(kids, n, work);
                }
                let inner: u64 = kids[1..].iter().map(|c| self.node(*c).size).product();
                if w.is_multiple_of(inner) {
                    // Every x * w has zero lower digits: only the first child moves.
                    return self.max_strided(kids[0], n, w / inner, work);
                }
                let mut max = 0;
                self.enumerate(id, n, w, work, STRIDED, |_, off| {
                    max = max.max(off);
                    true
                })?;
                Ok(max)
            }
        }
    }

    /// Largest offset over the first `n` row-major indices of the compound of `kids`.
    fn max_prefix_children(&self, kids: &[NodeId], n: u64, work: &mut Work) -> Result<u64> {
        // Each sum below is an offset that some index reaches: if one overflows, the
        // type's storage would exceed 2^64 elements.
        let overflow = || {
            Error::new(
                ErrorKind::Size,
                TextSpan::default(),
                "the offsets overflow 64 bits (the storage would exceed 2^64 elements)",
            )
        };
        let full_max = |kids: &[NodeId]| {
            kids.iter()
                .try_fold(0u64, |acc, c| acc.checked_add(self.node(*c).max_offset))
                .ok_or_else(overflow)
        };
        // All of the compound: its children's digits are independent, their maxima add.
        if kids.iter().map(|c| self.node(*c).size).product::<u64>() == n {
            return full_max(kids);
        }
        let (first, rest) = kids.split_first().expect("a compound has children");
        if rest.is_empty() {
            return self.max_strided(*first, n, 1, work);
        }
        let inner: u64 = rest.iter().map(|c| self.node(*c).size).product();
        let (q, r) = ((n - 1) / inner, (n - 1) % inner);
        let last_block = self
            .eval(*first, q, work)?
            .checked_add(self.max_prefix_children(rest, r + 1, work)?)
            .ok_or_else(overflow)?;
        if q == 0 {
            return Ok(last_block);
        }
        let full_blocks = self
            .max_strided(*first, q, 1, work)?
            .checked_add(full_max(rest)?)
            .ok_or_else(overflow)?;
        Ok(last_block.max(full_blocks))
    }

    /// Whether `f(x, off(x * w))` holds for every `x` in `[0, n)`, stopping at the first
    /// that does not; for the dimensions whose analysis enumerates their offsets (views
    /// that do not line up with their target's digits, swizzles).
    fn enumerate(
        &self,
        id: NodeId,
        n: u64,
        w: u64,
        work: &mut Work,
        what: &str,
        mut f: impl FnMut(u64, u64) -> bool,
    ) -> Result<bool> {
        if n > ENUMERATION_LIMIT {
            return Err(Error::new(
                ErrorKind::Limit,
                TextSpan::default(),
                format!(
                    "a {what} of {n} elements is too large to analyse (limit {ENUMERATION_LIMIT})"
                ),
            ));
        }
        for x in 0..n {
            if !f(x, self.eval(id, x * w, work)?) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// cnt (rule 10): `off(i) == off(0) + i` for every `i` (and `off(0)` is always 0).
    pub fn is_contiguous(&self, id: NodeId) -> Result<bool> {
        self.is_linear(id, self.node(id).size, 1, 1, &mut Work::new())
    }

    /// Whether `off(x * w) == x * s` for every `x` in `[0, n)`.
    fn is_linear(&self, id: NodeId, n: u64, w: u64, s: u64, work: &mut Work) -> Result<bool> {
        work.step()?;
        if n <= 1 {
            return Ok(true);
        }
        if !self.couplings(id).is_empty() {
            return self.enumerate(id, n, w, work, SWIZZLED, |x, off| off == x * s);
        }
        let node = self.node(id);
        match node.kind {
            NodeKind::Leaf { stride } | NodeKind::Xor { stride, .. } => Ok(w * stride == s),
            NodeKind::Prefix { target } => self.is_linear(target, n, w, s, work),
            NodeKind::Strided { target, weight } => self.is_linear(target, n, w * weight, s, work),
            NodeKind::Compound => {
                let kids = &node.children;
                if w == 1 {
                    return self.is_linear_children(kids, n, s, work);
                }
                let inner: u64 = kids[1..].iter().map(|c| self.node(*c).size).product();
                if w.is_multiple_of(inner) {
                    return self.is_linear(kids[0], n, w / inner, s, work);
                }
                self.enumerate(id, n, w, work, STRIDED, |x, off| off == x * s)
            }
        }
    }

    fn is_linear_children(&self, kids: &[NodeId], n: u64, s: u64, work: &mut Work) -> Result<bool> {
        let (first, rest) = kids.split_first().expect("a compound has children");
        if rest.is_empty() {
            return self.is_linear(*first, n, 1, s, work);
        }
        let inner: u64 = rest.iter().map(|c| self.node(*c).size).product();
        let q = (n - 1) / inner;
        if q == 0 {
            return self.is_linear_children(rest, n, s, work);
        }
        Ok(self.is_linear_children(rest, inner, s, work)?
            && self.is_linear(*first, q + 1, 1, s.saturating_mul(inner), work)?)
    }
}

/// Steps one analysis (an extent, a cnt, an offset expression) may take. Types that view
/// views can share subtrees, and a walk of such a type visits every path: without a
/// bound, a few dozen declarations could keep the analysis running for ever.
pub const MAX_WORK: u64 = 1 << 26;

/// What is left of an analysis's budget of steps.
pub(crate) struct Work {
    left: u64,
}

impl Work {
    pub(crate) fn new() -> Self {
        Work { left: MAX_WORK }
    }

    pub(crate) fn unlimited() -> Self {
        Work { left: u64::MAX }
    }

    /// One more step, or the `Limit` error once the budget is spent.
    pub(crate) fn step(&mut self) -> Result<()> {
        self.spend(1)
    }

    /// `n` more steps, or the `Limit` error once the budget is spent.
    pub(crate) fn spend(&mut self, n: u64) -> Result<()> {
        match self.left.checked_sub(n) {
            Some(left) => {
                self.left = left;
                Ok(())
            }
            None => Err(Error::new(
                ErrorKind::Limit,
                TextSpan::default(),
                format!("the type is too complex to analyse (more than {MAX_WORK} steps)"),
            )),
        }
    }
}

/// Why a name did not resolve.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LookupError {
    Unknown,
    BadSuffix {
        ty: String,
    },
    NoChild {
        parent: String,
        count: usize,
        index: usize,
    },
}

impl LookupError {
    /// What is wrong with the dimension name `name`, as a sentence.
    pub fn message(&self, name: &str) -> String {
        match self {
            LookupError::Unknown => format!("unknown type `{name}`"),
            LookupError::BadSuffix { ty } => format!(
                "`{name}` is not a sub-dimension of `{ty}`: a sub-dimension is named `{ty}_<digit>_<digit>...`"
            ),
            LookupError::NoChild {
                parent,
                count,
                index,
            } => format!(
                "no such sub-dimension `{name}`: `{parent}` has {count} sub-dimension{} (asked for number {index})",
                if *count == 1 { "" } else { "s" }
            ),
        }
    }
}
