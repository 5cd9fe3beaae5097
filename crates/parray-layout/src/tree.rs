//! The semantic model: declarations resolved into dimension trees (PARRAY.md section 3).
//!
//! Every dimension is a [`Node`] in one arena shared by all types of a [`Module`], so that
//! `#R` can *be* R's node (rule 3: D's children are R's children) and every sub-dimension
//! is usable as a type. A node knows its size, how its offset function is built, and its
//! largest offset; offsets themselves are produced by `offsets` (symbolic) or [`Module::offset_at`].

use std::collections::HashMap;

use crate::ast::*;
use crate::error::{Error, ErrorKind, Result, TextSpan};
use crate::grid::GridPart;
use crate::kinds::{ElemType, MemKind, ThreadKind};

/// Index of a node in its module's arena.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId(pub u32);

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
    Data {
        mem: Option<MemKind>,
        elem: ElemType,
    },
    Thread(ThreadKind),
}

/// The bytes of constant memory a kernel can have (CUDA's and HIP's 64 KiB): the most a
/// cmem type may need.
pub const CONSTANT_BYTES: u64 = 65536;

/// How a data type's elements are spread over the processes of an `mpi` thread array
/// (SPEC.md 2.13): a dimension `[#P]` (or `[n#P]`, `[#P_0]`) of a natural type is the
/// rank that holds the element. Offsets are those of the ranks' parts laid end to end,
/// rank 0's first: the element at offset `o` is element `o % part` of rank `o / part`'s
/// part.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Distribution {
    /// The mpi thread array.
    pub over: String,
    /// Its processes: a job using the type runs this many ranks.
    pub ranks: u64,
    /// Elements of storage of one rank's part (the product of the type's other leaves).
    pub part: u64,
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
    /// True when no dimension references another type (a dimension distributed over an
    /// mpi array is not a reference in this sense).
    pub natural: bool,
    /// For a data type with a dimension over an mpi array, or built on the dimensions of
    /// one that has: how its elements are spread over the ranks.
    pub distribution: Option<Distribution>,
    pub span: TextSpan,
}

/// What building one declaration learns about distribution.
#[derive(Default)]
struct Distributing {
    /// Leaves standing for ranks, with the stride of the mpi array's dimension they mirror.
    rank_leaves: Vec<(NodeId, u64)>,
    /// The mpi thread array named by a `#P` dimension (its type index).
    over: Option<usize>,
    /// The distribution of the types whose dimensions the declaration references.
    inherited: Option<Distribution>,
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
    nodes: Vec<Node>,
    types: Vec<TypeDef>,
    by_name: HashMap<String, usize>,
    consts: HashMap<String, u64>,
}

impl Module {
    /// Parse and resolve a whole source text.
    pub fn parse(src: &str) -> Result<Module> {
        Module::build(&crate::parser::parse_program(src)?, &[])
    }

    /// Resolve a parsed program; `overrides` set constants (they win over the program's own).
    pub fn build(program: &Program, overrides: &[(String, u64)]) -> Result<Module> {
        let mut m = Module::default();
        for (name, v) in overrides {
            m.consts.insert(name.clone(), *v);
        }
        for item in &program.items {
            match item {
                Item::Const(c) => m.declare_const(c, overrides)?,
                Item::Type(t) => m.declare_type(t).map_err(|e| e.in_decl(&t.name.name))?,
            }
        }
        Ok(m)
    }

    /// A module from its parts, as [`Module::nodes`], [`Module::types`] and
    /// [`Module::constants`] give them: how `parray!` carries a resolved module into the
    /// program (as data, with no parsing at run time). The parts must come from one
    /// module; they are not checked again.
    pub fn from_parts(nodes: Vec<Node>, types: Vec<TypeDef>, consts: Vec<(String, u64)>) -> Module {
        let by_name = types
            .iter()
            .enumerate()
            .map(|(k, t)| (t.name.clone(), k))
            .collect();
        Module {
            nodes,
            types,
            by_name,
            consts: consts.into_iter().collect(),
        }
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

    pub fn constant(&self, name: &str) -> Option<u64> {
        self.consts.get(name).copied()
    }

    pub fn type_def(&self, name: &str) -> Option<&TypeDef> {
        self.by_name.get(name).map(|&i| &self.types[i])
    }

    fn declare_const(&mut self, c: &ConstDecl, overrides: &[(String, u64)]) -> Result<()> {
        let name = &c.name.name;
        if overrides.iter().any(|(n, _)| n == name) {
            return Ok(());
        }
        if self.consts.contains_key(name) || self.by_name.contains_key(name) {
            return Err(Error::new(
                ErrorKind::Duplicate,
                c.name.span,
                format!("`{name}` is already declared"),
            ));
        }
        let v = self.eval_size(&c.value).map_err(|e| e.in_decl(name))?;
        self.consts.insert(name.clone(), v);
        Ok(())
    }

    fn declare_type(&mut self, t: &TypeDecl) -> Result<()> {
        let name = &t.name.name;
        if self.consts.contains_key(name) || self.by_name.contains_key(name) {
            return Err(Error::new(
                ErrorKind::Duplicate,
                t.name.span,
                format!("`{name}` is already declared"),
            ));
        }
        let natural = match t.kind {
            DeclKind::Thread(_) => !t.dims.iter().any(has_reference),
            DeclKind::Data { .. } => !t.dims.iter().any(|g| self.references_data(g)),
        };
        let class = match &t.kind {
            DeclKind::Data { mem, elem } => TypeClass::Data {
                mem: *mem,
                elem: *elem,
            },
            DeclKind::Thread(k) => TypeClass::Thread(k.clone()),
        };
        if let (TypeClass::Thread(_), false) = (&class, natural) {
            let g = t
                .dims
                .iter()
                .find(|g| has_reference(g))
                .expect("artificial");
            return Err(Error::new(
                ErrorKind::Structure,
                reference_span(g),
                "a thread array's dimensions must be natural (no `#` references)",
            ));
        }
        let first_new = self.nodes.len();
        let mut top = Vec::with_capacity(t.dims.len());
        let mut dist = Distributing::default();
        for g in &t.dims {
            top.push(self.build_group(g, natural, &mut dist)?);
        }
        let dims_span = TextSpan {
            end: t.dims.last().map_or(t.span.end, |g| g.span.end),
            ..t.dims.first().map_or(t.span, |g| g.span)
        };
        let root = self.compound(top, dims_span)?;
        let mut distribution = dist.inherited.take();
        if natural {
            let part = self.assign_strides(first_new, &dist.rank_leaves);
            if let Some(over) = dist.over {
                distribution = Some(self.distribute(&dist.rank_leaves, over, part, dims_span)?);
            }
        }
        // Limits found while analysing the new nodes have no token of their own: they
        // belong to the declaration.
        self.finish_nodes(first_new).map_err(|mut e| {
            if e.span == TextSpan::default() {
                e.span = t.span;
            }
            e
        })?;
        if let TypeClass::Thread(ThreadKind::Cuda(_)) = class {
            self.check_cuda_shape(t, root)?;
        }
        if let TypeClass::Data {
            mem: Some(MemKind::Cmem),
            elem,
        } = class
        {
            let bytes = u128::from(self.extent(root)) * u128::from(elem.size_bytes());
            if bytes > u128::from(CONSTANT_BYTES) {
                return Err(Error::new(
                    ErrorKind::Size,
                    t.span,
                    format!(
                        "constant memory holds {CONSTANT_BYTES} bytes, and `{name}` needs {bytes}: \
                         declare it dmem"
                    ),
                ));
            }
        }
        self.by_name.insert(name.clone(), self.types.len());
        self.types.push(TypeDef {
            name: name.clone(),
            class,
            root,
            natural,
            distribution,
            span: t.span,
        });
        Ok(())
    }

    fn push(&mut self, size: u64, kind: NodeKind, children: Vec<NodeId>) -> NodeId {
        self.nodes.push(Node {
            size,
            kind,
            children,
            max_offset: 0,
            height: 0,
        });
        NodeId(self.nodes.len() as u32 - 1)
    }

    fn compound(&mut self, children: Vec<NodeId>, span: TextSpan) -> Result<NodeId> {
        let mut size: u64 = 1;
        for c in &children {
            size = size
                .checked_mul(self.node(*c).size)
                .ok_or_else(|| Error::new(ErrorKind::Size, span, "the size overflows 64 bits"))?;
        }
        Ok(self.push(size, NodeKind::Compound, children))
    }

    fn build_group(&mut self, g: &Group, natural: bool, dist: &mut Distributing) -> Result<NodeId> {
        match &g.body {
            GroupBody::Size(e) => {
                if !natural {
                    return Err(Error::new(
                        ErrorKind::Structure,
                        g.span,
                        "a natural dimension inside an artificial type: every leaf must be a `#` reference or lie under a structured reference `[...]#R`",
                    ));
                }
                let n = self.eval_size(e)?;
                Ok(self.push(n, NodeKind::Leaf { stride: 0 }, Vec::new()))
            }
            GroupBody::Compound(inner) => {
                let mut children = Vec::with_capacity(inner.len());
                for c in inner {
                    children.push(self.build_group(c, natural, dist)?);
                }
                self.compound(children, g.span)
            }
            GroupBody::Ref { shape, target } => {
                let r = self.resolve(target)?;
                let rsize = self.node(r.node).size;
                if self.is_mpi(r.ty) {
                    return self.rank_dimension(g, shape, target, r, natural, dist);
                }
                // Only dimensions that reach past one rank's part include the rank.
                let over_ranks = self.types[r.ty]
                    .distribution
                    .as_ref()
                    .filter(|d| self.node(r.node).max_offset >= d.part);
                if let Some(d) = over_ranks {
                    match &dist.inherited {
                        Some(other) if other != d => {
                            return Err(Error::new(
                                ErrorKind::Structure,
                                target.span,
                                format!(
                                    "`{}` is distributed over `{}` and another dimension of this type over `{}`: a type is distributed over one mpi array, one way",
                                    target.name, d.over, other.over
                                ),
                            ))
                        }
                        _ => dist.inherited = Some(d.clone()),
                    }
                }
                match shape {
                    RefShape::Whole => Ok(r.node),
                    RefShape::Sized(e) => {
                        let n = self.eval_size(e)?;
                        if n > rsize {
                            return Err(Error::new(
                                ErrorKind::Structure,
                                e.span,
                                format!(
                                    "`{n}#{}` is larger than `{}` (size {rsize})",
                                    target.name, target.name
                                ),
                            ));
                        }
                        Ok(self.push(n, NodeKind::Prefix { target: r.node }, Vec::new()))
                    }
                    RefShape::Structured(groups) => {
                        let children = self.build_structure(groups, r.node, 1)?;
                        let node = self.compound(children, g.span)?;
                        let n = self.node(node).size;
                        if n > rsize {
                            return Err(Error::new(
                                ErrorKind::Structure,
                                g.span,
                                format!(
                                    "the structure has {n} elements, more than `{}` (size {rsize})",
                                    target.name
                                ),
                            ));
                        }
                        self.nodes[node.0 as usize].kind = NodeKind::Prefix { target: r.node };
                        Ok(node)
                    }
                }
            }
        }
    }

    /// The groups of S in `S#R` at weight `outer`: each becomes a strided view of R.
    fn build_structure(
        &mut self,
        groups: &[Group],
        target: NodeId,
        outer: u64,
    ) -> Result<Vec<NodeId>> {
        let mut sizes = Vec::with_capacity(groups.len());
        for g in groups {
            sizes.push(self.structure_size(g)?);
        }
        let mut out = Vec::with_capacity(groups.len());
        for (i, g) in groups.iter().enumerate() {
            let later: u64 = sizes[i + 1..].iter().product();
            let weight = outer * later;
            let children = match &g.body {
                GroupBody::Compound(inner) => self.build_structure(inner, target, weight)?,
                _ => Vec::new(),
            };
            out.push(self.push(sizes[i], NodeKind::Strided { target, weight }, children));
        }
        Ok(out)
    }

    /// The size of a group of a structure, which may hold only sizes and compounds.
    fn structure_size(&self, g: &Group) -> Result<u64> {
        match &g.body {
            GroupBody::Size(e) => self.eval_size(e),
            GroupBody::Compound(inner) => inner.iter().try_fold(1u64, |acc, c| {
                acc.checked_mul(self.structure_size(c)?).ok_or_else(|| {
                    Error::new(ErrorKind::Size, g.span, "the size overflows 64 bits")
                })
            }),
            GroupBody::Ref { .. } => Err(Error::new(
                ErrorKind::Structure,
                reference_span(g),
                "the structure before `#` may contain only sizes and `[...]` groups",
            )),
        }
    }

    /// Rule 1: strides are row-major over the natural leaves created since `first`
    /// (leaves are created left to right, so walking backwards goes right to left), the
    /// leaves standing for ranks left out. Returns the product of their sizes.
    fn assign_strides(&mut self, first: usize, rank_leaves: &[(NodeId, u64)]) -> u64 {
        let mut stride: u64 = 1;
        for i in (first..self.nodes.len()).rev() {
            let is_rank = rank_leaves.iter().any(|(id, _)| id.0 as usize == i);
            if let (NodeKind::Leaf { .. }, false) = (&self.nodes[i].kind, is_rank) {
                self.nodes[i].kind = NodeKind::Leaf { stride };
                stride = stride.saturating_mul(self.nodes[i].size);
            }
        }
        stride
    }

    fn is_mpi(&self, ty: usize) -> bool {
        self.types[ty].class == TypeClass::Thread(ThreadKind::Mpi)
    }

    /// Whether a group references a data type or a cuda or pthd thread array: a dimension
    /// over an mpi array does not make a type artificial.
    fn references_data(&self, g: &Group) -> bool {
        match &g.body {
            GroupBody::Size(_) => false,
            GroupBody::Compound(inner) => inner.iter().any(|c| self.references_data(c)),
            GroupBody::Ref { target, .. } => {
                !matches!(self.lookup(&target.name), Ok(r) if self.is_mpi(r.ty))
            }
        }
    }

    /// `[#P]`, `[n#P]` or `[#P_0]` in a data type, P an mpi thread array: leaves of the
    /// same shape standing for the rank, their strides set by [`Module::distribute`].
    fn rank_dimension(
        &mut self,
        g: &Group,
        shape: &RefShape,
        target: &Ident,
        r: DimRef,
        natural: bool,
        dist: &mut Distributing,
    ) -> Result<NodeId> {
        let over = &self.types[r.ty].name;
        if !natural {
            return Err(Error::new(
                ErrorKind::Structure,
                target.span,
                format!(
                    "a dimension distributed over the mpi array `{over}` belongs in a natural type (`[[#{over}][n]][m]`); reference that type's dimensions to view it another way"
                ),
            ));
        }
        if let Some(other) = dist.over.filter(|o| *o != r.ty) {
            return Err(Error::new(
                ErrorKind::Structure,
                target.span,
                format!(
                    "this type is distributed over `{}` already: a type is distributed over one mpi array",
                    self.types[other].name
                ),
            ));
        }
        dist.over = Some(r.ty);
        match shape {
            RefShape::Whole => Ok(self.mirror_ranks(r.node, dist)),
            RefShape::Sized(e) => {
                let n = self.eval_size(e)?;
                let rsize = self.node(r.node).size;
                if n > rsize {
                    return Err(Error::new(
                        ErrorKind::Structure,
                        e.span,
                        format!("`{n}#{}` is larger than `{}` (size {rsize})", target.name, target.name),
                    ));
                }
                let leaf = self.push(n, NodeKind::Leaf { stride: 0 }, Vec::new());
                dist.rank_leaves.push((leaf, self.linear_stride(r.node)));
                Ok(leaf)
            }
            RefShape::Structured(_) => Err(Error::new(
                ErrorKind::Structure,
                g.span,
                format!(
                    "a dimension over the mpi array `{over}` is `[#{over}]`, `[n#{over}]` or a sub-dimension such as `[#{over}_0]`, not a structured reference"
                ),
            )),
        }
    }

    /// A copy of the mpi array's dimension `node`: leaves where it has leaves.
    fn mirror_ranks(&mut self, node: NodeId, dist: &mut Distributing) -> NodeId {
        let n = self.node(node).clone();
        match n.kind {
            NodeKind::Leaf { stride } => {
                let leaf = self.push(n.size, NodeKind::Leaf { stride: 0 }, Vec::new());
                dist.rank_leaves.push((leaf, stride));
                leaf
            }
            _ => {
                let children = n
                    .children
                    .iter()
                    .map(|c| self.mirror_ranks(*c, dist))
                    .collect();
                self.push(n.size, NodeKind::Compound, children)
            }
        }
    }

    /// The stride of a dimension of a natural thread array, whose offsets are `i * stride`:
    /// that of its last leaf.
    fn linear_stride(&self, node: NodeId) -> u64 {
        let n = self.node(node);
        match (&n.kind, n.children.last()) {
            (NodeKind::Leaf { stride }, _) => *stride,
            (_, Some(last)) => self.linear_stride(*last),
            _ => 1,
        }
    }

    /// The rank leaves' strides, once the part (`part` elements, the other leaves'
    /// product) is known: the rank's stride in the mpi array times the part.
    fn distribute(
        &mut self,
        rank_leaves: &[(NodeId, u64)],
        over: usize,
        part: u64,
        span: TextSpan,
    ) -> Result<Distribution> {
        for (leaf, rank_stride) in rank_leaves {
            let stride = rank_stride.checked_mul(part).ok_or_else(|| {
                Error::new(
                    ErrorKind::Size,
                    span,
                    "the distributed offsets overflow 64 bits",
                )
            })?;
            self.nodes[leaf.0 as usize].kind = NodeKind::Leaf { stride };
        }
        let mpi = &self.types[over];
        Ok(Distribution {
            over: mpi.name.clone(),
            ranks: self.node(mpi.root).size,
            part,
        })
    }

    /// Compute heights and largest offsets of the nodes created since `first` (children first).
    fn finish_nodes(&mut self, first: usize) -> Result<()> {
        for i in first..self.nodes.len() {
            let node = &self.nodes[i];
            let below = node
                .children
                .iter()
                .copied()
                .chain(match node.kind {
                    NodeKind::Prefix { target } | NodeKind::Strided { target, .. } => Some(target),
                    _ => None,
                })
                .map(|c| self.node(c).height)
                .max()
                .unwrap_or(0);
            if below + 1 > MAX_HEIGHT {
                return Err(Error::new(
                    ErrorKind::Limit,
                    TextSpan::default(),
                    format!("dimensions and references nest deeper than {MAX_HEIGHT} levels"),
                ));
            }
            self.nodes[i].height = below + 1;
            let max =
                self.max_strided(NodeId(i as u32), self.nodes[i].size, 1, &mut Work::new())?;
            self.nodes[i].max_offset = max;
        }
        Ok(())
    }

    fn check_cuda_shape(&self, t: &TypeDecl, root: NodeId) -> Result<()> {
        crate::grid::CudaGrid::of(self, root)
            .map(|_| ())
            .map_err(|(part, message)| {
                let span = match (part, t.dims.as_slice()) {
                    (GridPart::Grid, [g, ..]) => g.span,
                    (GridPart::Block, [_, b, ..]) => b.span,
                    _ => t.span,
                };
                Error::new(ErrorKind::Structure, span, message)
            })
    }

    /// Evaluate a size expression; the result must be positive and fit in 64 bits.
    pub fn eval_size(&self, e: &SizeExpr) -> Result<u64> {
        let v = self.eval_int(e)?;
        if v <= 0 {
            return Err(Error::new(
                ErrorKind::Size,
                e.span,
                format!("a size must be positive, this one is {v}"),
            ));
        }
        u64::try_from(v)
            .map_err(|_| Error::new(ErrorKind::Size, e.span, "the size overflows 64 bits"))
    }

    fn eval_int(&self, e: &SizeExpr) -> Result<i128> {
        let overflow = || Error::new(ErrorKind::Size, e.span, "the size overflows 64 bits");
        let v = match &e.kind {
            SizeExprKind::Lit(v) => *v as i128,
            SizeExprKind::Name(n) => match self.consts.get(n) {
                Some(v) => *v as i128,
                None if self.by_name.contains_key(n) => {
                    return Err(Error::new(
                        ErrorKind::Unknown,
                        e.span,
                        format!("`{n}` is a type, not a constant (use `#{n}` to reference it)"),
                    ))
                }
                None => {
                    return Err(Error::new(
                        ErrorKind::Unknown,
                        e.span,
                        format!("unknown constant `{n}`"),
                    ))
                }
            },
            SizeExprKind::Dim(t) => {
                let d = self.resolve(t)?;
                self.size(d.node) as i128
            }
            SizeExprKind::Neg(a) => -self.eval_int(a)?,
            SizeExprKind::Bin(op, a, b) => {
                let (x, y) = (self.eval_int(a)?, self.eval_int(b)?);
                match op {
                    SizeOp::Add => x.checked_add(y).ok_or_else(overflow)?,
                    SizeOp::Sub => x.checked_sub(y).ok_or_else(overflow)?,
                    SizeOp::Mul => x.checked_mul(y).ok_or_else(overflow)?,
                    SizeOp::Div => {
                        if y == 0 {
                            return Err(Error::new(ErrorKind::Size, e.span, "division by zero"));
                        }
                        if x % y != 0 {
                            return Err(Error::new(
                                ErrorKind::Size,
                                e.span,
                                format!("inexact division: {x} / {y} leaves remainder {}", x % y),
                            ));
                        }
                        x / y
                    }
                }
            }
        };
        if v.unsigned_abs() > u64::MAX as u128 {
            return Err(overflow());
        }
        Ok(v)
    }

    /// The dimension named `name` (`A`, `A_0_1`): the longest declared prefix names the type.
    pub fn lookup(&self, name: &str) -> Result<DimRef, LookupError> {
        let mut cut = name.len();
        loop {
            let prefix = &name[..cut];
            if let Some(&ty) = self.by_name.get(prefix) {
                let mut node = self.types[ty].root;
                let rest = &name[cut..];
                let mut walked = prefix.to_string();
                for part in rest.split('_').skip(1) {
                    let k: usize = match part.parse() {
                        Ok(k) if part.bytes().all(|b| b.is_ascii_digit()) => k,
                        _ => {
                            return Err(LookupError::BadSuffix {
                                ty: prefix.to_string(),
                            })
                        }
                    };
                    let children = &self.node(node).children;
                    let Some(&c) = children.get(k) else {
                        return Err(LookupError::NoChild {
                            parent: walked,
                            count: children.len(),
                            index: k,
                        });
                    };
                    walked = format!("{walked}_{k}");
                    node = c;
                }
                return Ok(DimRef { ty, node });
            }
            match name[..cut].rfind('_') {
                Some(i) => cut = i,
                None => return Err(LookupError::Unknown),
            }
        }
    }

    /// [`Module::lookup`] with an error pointing at the name as written.
    pub fn resolve(&self, id: &Ident) -> Result<DimRef> {
        self.lookup(&id.name).map_err(|e| {
            let kind = ErrorKind::Unknown;
            let msg = match e {
                LookupError::Unknown if self.consts.contains_key(&id.name) => {
                    format!("`{}` is a constant, not a type", id.name)
                }
                LookupError::Unknown => format!("unknown type `{}`", id.name),
                LookupError::BadSuffix { ty } => format!(
                    "`{}` is not a sub-dimension of `{ty}`: a sub-dimension is named `{ty}_<digit>_<digit>...`",
                    id.name
                ),
                LookupError::NoChild { parent, count, index } => format!(
                    "no such sub-dimension `{}`: `{parent}` has {count} sub-dimension{} (asked for number {index})",
                    id.name,
                    if count == 1 { "" } else { "s" }
                ),
            };
            Error::new(kind, id.span, msg)
        })
    }

    pub fn size(&self, n: NodeId) -> u64 {
        self.node(n).size
    }

    /// Storage a buffer of this dimension needs, in elements: the largest offset plus one.
    pub fn extent(&self, n: NodeId) -> u64 {
        self.node(n).max_offset + 1
    }

    /// The offset of element `i` (flat) of node `n`, straight from the node definitions.
    pub fn offset_at(&self, n: NodeId, i: u64) -> u64 {
        self.eval(n, i, &mut Work::unlimited())
            .expect("unlimited work never runs out")
    }

    /// [`Module::offset_at`], within a budget of work.
    pub(crate) fn eval(&self, n: NodeId, i: u64, work: &mut Work) -> Result<u64> {
        work.step()?;
        let node = self.node(n);
        Ok(match node.kind {
            NodeKind::Leaf { stride } => i * stride,
            NodeKind::Compound => {
                let mut rest = i;
                let mut off = 0;
                for c in node.children.iter().rev() {
                    let s = self.node(*c).size;
                    // Every offset function maps 0 to 0: a zero digit costs nothing (and
                    // types that share subtrees need not be walked path by path).
                    if !rest.is_multiple_of(s) {
                        off += self.eval(*c, rest % s, work)?;
                    }
                    rest /= s;
                }
                off
            }
            NodeKind::Prefix { target } => self.eval(target, i, work)?,
            NodeKind::Strided { target, weight } => self.eval(target, i * weight, work)?,
        })
    }

    /// Largest offset of `off(x * w)` for `x` in `[0, n)`; exact, enumerating only strided
    /// views that do not line up with the target's digits.
    fn max_strided(&self, id: NodeId, n: u64, w: u64, work: &mut Work) -> Result<u64> {
        work.step()?;
        let node = self.node(id);
        match node.kind {
            NodeKind::Leaf { stride } => Ok((n - 1) * w * stride),
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
                self.strided_all(id, n, w, work, |_, off| {
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
    /// that does not; for the views whose offsets do not line up with the target's digits.
    fn strided_all(
        &self,
        id: NodeId,
        n: u64,
        w: u64,
        work: &mut Work,
        mut f: impl FnMut(u64, u64) -> bool,
    ) -> Result<bool> {
        const LIMIT: u64 = 1 << 24;
        if n > LIMIT {
            return Err(Error::new(
                ErrorKind::Limit,
                TextSpan::default(),
                format!("a strided view of {n} elements is too large to analyse (limit {LIMIT})"),
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
        let node = self.node(id);
        match node.kind {
            NodeKind::Leaf { stride } => Ok(w * stride == s),
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
                self.strided_all(id, n, w, work, |x, off| off == x * s)
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

    fn unlimited() -> Self {
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

fn has_reference(g: &Group) -> bool {
    match &g.body {
        GroupBody::Size(_) => false,
        GroupBody::Compound(inner) => inner.iter().any(has_reference),
        GroupBody::Ref { .. } => true,
    }
}

fn reference_span(g: &Group) -> TextSpan {
    match &g.body {
        GroupBody::Compound(inner) => inner
            .iter()
            .find(|c| has_reference(c))
            .map_or(g.span, reference_span),
        _ => g.span,
    }
}
