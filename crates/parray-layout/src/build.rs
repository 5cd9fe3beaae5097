//! The resolver: a program's declarations into a [`Module`] of dimension trees, each
//! validated as it is declared (sizes, references, distribution, a cuda array's grid), so
//! that an error points at its declaration. `tree` is the module; this is how one is made.

use crate::ast::*;
use crate::error::{Error, ErrorKind, Result, TextSpan};
use crate::grid::GridPart;
use crate::kinds::{ElemType, MemKind, Record, ThreadKind};
use crate::path::{child_name, DimPath};
use crate::tree::{
    DimRef, Distribution, Holders, LookupError, Module, Node, NodeId, NodeKind, TypeClass, TypeDef,
    Work, CONSTANT_BYTES, MAX_HEIGHT,
};

/// What building one declaration learns about distribution, and about data it covers
/// past the end.
#[derive(Default)]
struct Distributing {
    /// The extent of the data that pieces of the type cover past its end (its own or
    /// those of the types it is built on).
    covers: Option<u64>,
    /// Whether the declaration is an `rmem` type, whose dimensions over a cuda array's
    /// block distribute it over the block's threads (a fragment, SPEC 2.14).
    rmem: bool,
    /// Leaves standing for holders (ranks, threads), with the stride of the thread array's
    /// dimension they mirror.
    rank_leaves: Vec<(NodeId, u64)>,
    /// The thread array named by a `#P` dimension (its type index): an mpi array, or a
    /// cuda array for an rmem type.
    over: Option<usize>,
    /// The distribution of the types whose dimensions the declaration references.
    inherited: Option<Distribution>,
    /// The swizzled leaves `[n ^ P]` (rule 11), each with its partner as written.
    swizzles: Vec<(NodeId, Ident)>,
}

impl Module {
    /// Parse and resolve a whole source text.
    pub fn parse(src: &str) -> Result<Module> {
        Module::build(&crate::parser::parse_program(src)?, &[])
    }

    /// Resolve a parsed program; `overrides` set constants (they win over the program's own).
    pub fn build(program: &Program, overrides: &[(String, u64)]) -> Result<Module> {
        Module::build_with_grids_later(program, overrides, &[])
    }

    /// [`Module::build`], except that the grids of the cuda arrays named in `later` are
    /// not held to CUDA's limits here, only their blocks: their sizes are given at run
    /// time, and the grid is checked when they are bound (numbers that only stand for
    /// them, a probe's, pass the limits where real sizes do not).
    pub fn build_with_grids_later(
        program: &Program,
        overrides: &[(String, u64)],
        later: &[String],
    ) -> Result<Module> {
        let mut m = Module::default();
        for (name, v) in overrides {
            m.consts.insert(name.clone(), *v);
        }
        let records: Vec<Record> = program
            .items
            .iter()
            .filter_map(|i| match i {
                Item::Record(r) => Some(r.record),
                _ => None,
            })
            .collect();
        for item in &program.items {
            match item {
                Item::Const(c) => m.declare_const(c, overrides)?,
                Item::Type(t) => {
                    let grid_later = later.contains(&t.name.name);
                    m.declare_type(t, &records, grid_later)
                        .map_err(|e| e.in_decl(&t.name.name))?
                }
                // A record is an element type: it gives no dimensions.
                Item::Record(_) => {}
            }
        }
        Ok(m)
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
        let Some(value) = &c.value else {
            return Err(Error::new(
                ErrorKind::Unbound,
                c.name.span,
                format!("`{name}` is a size given at run time (`const {name};`) and has no value here: bind it (`{name}.bind(n)` in a program, `--const {name}=VALUE` for the `parray` command)"),
            ));
        };
        let v = self.eval_const(value).map_err(|e| e.in_decl(name))?;
        self.consts.insert(name.clone(), v);
        Ok(())
    }

    /// `records`: the program's, which the names of record elements in `t` refer to.
    fn declare_type(&mut self, t: &TypeDecl, records: &[Record], grid_later: bool) -> Result<()> {
        let name = &t.name.name;
        if self.consts.contains_key(name) || self.by_name.contains_key(name) {
            return Err(Error::new(
                ErrorKind::Duplicate,
                t.name.span,
                format!("`{name}` is already declared"),
            ));
        }
        let record = |e: ElemType| -> Result<ElemType> {
            let ElemType::Record(named) = e else {
                return Ok(e);
            };
            match records.iter().find(|r| r.name() == named.name()) {
                Some(r) => Ok(ElemType::Record(*r)),
                None => {
                    let at = t.records.iter().find(|r| r.name == named.name());
                    Err(Error::new(
                        ErrorKind::Unknown,
                        at.map_or(t.span, |r| r.span),
                        format!("unknown element type `{}`: an element is one of the type language's ({}) or a record, a struct with `#[derive(parray::Record)]` in scope", named.name(), ElemType::ALL.map(|e| e.keyword()).join(", ")),
                    ))
                }
            }
        };
        let rmem = matches!(
            t.kind,
            DeclKind::Data {
                mem: Some(MemKind::Rmem),
                ..
            }
        );
        let natural = match t.kind {
            DeclKind::Thread(_) => !t.dims.iter().any(has_reference),
            DeclKind::Data { .. } => !t.dims.iter().any(|g| self.references_data(g, rmem)),
        };
        if let (DeclKind::Data { .. }, false) = (&t.kind, rmem) {
            self.check_not_fragment(&t.dims)?;
        }
        let class = match &t.kind {
            DeclKind::Data { mem, elem, soa } => TypeClass::Data {
                mem: *mem,
                elem: record(*elem)?,
                soa: *soa,
            },
            DeclKind::Thread(ThreadKind::Cuda(params)) => {
                let mut params = params.clone();
                for p in &mut params {
                    p.elem = record(p.elem)?;
                }
                TypeClass::Thread(ThreadKind::Cuda(params))
            }
            DeclKind::Thread(k) => TypeClass::Thread(k.clone()),
        };
        // An mbarrier lives in a block's shared memory (SPEC 3.9, "TMA copies").
        match &class {
            TypeClass::Data {
                mem: Some(mem),
                elem: ElemType::Mbarrier,
                ..
            } if *mem != MemKind::Smem => {
                return Err(Error::new(
                    ErrorKind::Structure,
                    t.name.span,
                    format!("an `mbarrier` is a barrier in a block's shared memory: declare `{name}` as `smem mbarrier [..] {name}`, not of {mem}"),
                ));
            }
            TypeClass::Thread(ThreadKind::Cuda(params))
                if params.iter().any(|p| p.elem == ElemType::Mbarrier) =>
            {
                return Err(Error::new(
                    ErrorKind::Structure,
                    t.name.span,
                    format!("`{name}`'s kernel takes an `mbarrier`, which lives in a block's shared memory: create the barriers in the body (`smem mbarrier [S] FULL;`, `let full = FULL::create();`)"),
                ));
            }
            _ => {}
        }
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
        let mut dist = Distributing {
            rmem,
            ..Distributing::default()
        };
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
        self.couple(t, root, &dist, distribution.as_ref().map(|d| d.holders))?;
        // Limits found while analysing the new nodes have no token of their own: they
        // belong to the declaration.
        self.finish_nodes(first_new).map_err(|mut e| {
            if e.span == TextSpan::default() {
                e.span = t.span;
            }
            e
        })?;
        if let TypeClass::Thread(ThreadKind::Cuda(_)) = class {
            self.check_cuda_shape(t, root, grid_later)?;
        }
        if let TypeClass::Data {
            mem: Some(MemKind::Cmem),
            elem,
            ..
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
        let soa_records = match &class {
            TypeClass::Data {
                soa: true,
                elem: ElemType::Record(r),
                ..
            } => vec![*r],
            TypeClass::Thread(ThreadKind::Cuda(params)) => params
                .iter()
                .filter_map(|p| match p.elem {
                    ElemType::Record(r) if p.soa => Some(r),
                    _ => None,
                })
                .collect(),
            _ => Vec::new(),
        };
        if let Some(why) = soa_records.into_iter().find_map(nested_soa) {
            return Err(Error::new(ErrorKind::Structure, t.span, why));
        }
        if let (TypeClass::Data { soa: true, .. }, Some(d)) = (&class, &distribution) {
            return Err(Error::new(
                ErrorKind::Structure,
                t.span,
                format!(
                    "`{name}` is distributed over `{}`, whose ranks exchange whole records: a distributed record array is not soa",
                    d.over
                ),
            ));
        }
        self.by_name.insert(name.clone(), self.types.len());
        self.types.push(TypeDef {
            name: name.clone(),
            class,
            root,
            natural,
            distribution,
            covers: dist.covers,
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
        if let (Some(p), false) = (&g.xor, matches!(g.body, GroupBody::Size(_))) {
            return Err(Error::new(
                ErrorKind::Structure,
                p.span,
                "only a natural leaf `[n ^ P]` can be swizzled: `^` XORs one leaf's digit with another's",
            ));
        }
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
                let leaf = self.push(n, NodeKind::Leaf { stride: 0 }, Vec::new());
                if let Some(p) = &g.xor {
                    dist.swizzles.push((leaf, p.clone()));
                }
                Ok(leaf)
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
                let covered = |d: &mut Distributing, extent: u64| {
                    d.covers = Some(d.covers.map_or(extent, |c| c.min(extent)));
                };
                if let Some(c) = self.types[r.ty].covers {
                    covered(dist, c);
                }
                if self.distributes(r.ty, dist.rmem) {
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
                                    "`{}` is distributed over `{}` and another dimension of this type over `{}`: a type is distributed over one {}, one way",
                                    target.name, d.over, other.over, one_array(&[d.holders, other.holders])
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
                            self.covers(groups, node, r.node, target, g.span)?;
                            let t = &self.types[r.ty];
                            let data = t.covers.unwrap_or(self.extent(t.root));
                            covered(dist, data);
                        }
                        self.nodes[node.0 as usize].kind = NodeKind::Prefix { target: r.node };
                        Ok(node)
                    }
                }
            }
        }
    }

    /// Whether the structure `groups` (built as `node`) may cover `target`, which has
    /// fewer elements: its first group counts pieces with `ceil(a / b)`, only the last
    /// piece reaches past `target`'s end, and `target`'s offsets are one stride
    /// (`off(i) = i * s`), so that the indices past its end have offsets that continue it
    /// (SPEC 2.4, "Pieces that cover a dimension").
    fn covers(
        &self,
        groups: &[Group],
        node: NodeId,
        target: NodeId,
        name: &Ident,
        span: TextSpan,
    ) -> Result<()> {
        let (n, rsize) = (self.node(node).size, self.node(target).size);
        let piece = n / self.node(self.node(node).children[0]).size;
        let fail = |message: String| Err(Error::new(ErrorKind::Structure, span, message));
        if !groups.first().is_some_and(counts_pieces) {
            // Counted with `ceil`, pieces of this size would cover it.
            let hint = match n - piece < rsize {
                true => format!(
                    "; pieces that cover it past its end are counted with `ceil`: `[[ceil({rsize} / {piece})][..]]#{}`",
                    name.name
                ),
                false => String::new(),
            };
            return fail(format!(
                "the structure has {n} elements, more than `{}` (size {rsize}){hint}",
                name.name
            ));
        }
        if n - piece >= rsize {
            return fail(format!(
                "the structure has {n} elements: its pieces of {piece} reach {} past the end of `{}` (size {rsize}), more than its last piece",
                n - rsize,
                name.name
            ));
        }
        if !self.continues(target) {
            return fail(format!(
                "a structure may cover `{}` past its end only where its offsets are one stride \
                 (a dimension of a natural type, or a view of one), so that they continue past it",
                name.name
            ));
        }
        Ok(())
    }

    /// Rule 11: each swizzled leaf `[n ^ P]` of the declaration `t` (its dimensions built
    /// as `root`, strides assigned; `distributed`: what holds its parts, if it is spread)
    /// becomes a [`NodeKind::Xor`] coupled with the leaf P of
    /// the same type: both sizes powers of two, P's at most n's, P a plain natural leaf.
    fn couple(
        &mut self,
        t: &TypeDecl,
        root: NodeId,
        dist: &Distributing,
        distributed: Option<Holders>,
    ) -> Result<()> {
        let over = match distributed {
            Some(Holders::Threads) => "a block's threads",
            _ => "an mpi array",
        };
        let name = &t.name.name;
        for (leaf, p) in &dist.swizzles {
            let fail = |message: String| Err(Error::new(ErrorKind::Structure, p.span, message));
            if matches!(t.kind, DeclKind::Thread(_)) {
                return fail("a thread array cannot be swizzled: a swizzle lays out data".into());
            }
            if distributed.is_some() {
                return fail(format!(
                    "`{name}` is distributed over {over}: a distributed type cannot be swizzled"
                ));
            }
            let path = DimPath::readings(&p.name).find(|r| r.name == name.as_str());
            let Some(path) = path else {
                return fail(format!(
                    "`{}` is not a dimension of `{name}`: a swizzle couples two leaves of the type it is declared in (`{name}_0_1`, say)",
                    p.name
                ));
            };
            let mut partner = root;
            let mut walked = name.clone();
            for &k in &path.children {
                let children = &self.node(partner).children;
                let Some(&c) = children.get(k) else {
                    let e = LookupError::NoChild {
                        parent: walked,
                        count: children.len(),
                        index: k,
                    };
                    return fail(e.message(&p.name));
                };
                walked = child_name(&walked, k);
                partner = c;
            }
            let (n, m) = (self.size(*leaf), self.size(partner));
            if partner == *leaf {
                return fail(format!(
                    "`{}` is the swizzled leaf itself: a leaf is XORed with another",
                    p.name
                ));
            }
            if dist.rank_leaves.iter().any(|(r, _)| *r == partner) {
                return fail(format!(
                    "`{}` is a dimension over {over}, not a leaf of data",
                    p.name
                ));
            }
            match self.node(partner).kind {
                NodeKind::Leaf { .. } => {}
                NodeKind::Xor { .. } => {
                    return fail(format!(
                        "`{}` is swizzled itself: a partner is a plain leaf",
                        p.name
                    ))
                }
                _ => {
                    return fail(format!(
                        "`{}` is not a leaf (it has {} sub-dimensions): a swizzle XORs one leaf's digit with another leaf's",
                        p.name,
                        self.node(partner).children.len()
                    ))
                }
            }
            if !n.is_power_of_two() || !m.is_power_of_two() {
                let (what, size) = if n.is_power_of_two() {
                    (format!("its partner `{}`", p.name), m)
                } else {
                    ("the swizzled leaf".to_string(), n)
                };
                return fail(format!(
                    "{what} has {size} elements: a swizzle couples dimensions whose sizes are powers of two"
                ));
            }
            if m > n {
                return fail(format!(
                    "`{}` has {m} elements, more than the swizzled leaf's {n}: the XOR of their digits must stay below {n}",
                    p.name
                ));
            }
            let NodeKind::Leaf { stride } = self.node(*leaf).kind else {
                unreachable!("a swizzled group is built as a natural leaf")
            };
            self.nodes[leaf.0 as usize].kind = NodeKind::Xor { stride, partner };
        }
        Ok(())
    }

    /// Whether `off(i)` is `i` times one stride for every `i`, past the node's end too: a
    /// leaf, and views of one.
    fn continues(&self, id: NodeId) -> bool {
        match self.node(id).kind {
            NodeKind::Leaf { .. } => true,
            NodeKind::Xor { .. } => false,
            NodeKind::Prefix { target } | NodeKind::Strided { target, .. } => {
                self.continues(target)
            }
            NodeKind::Compound => false,
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
        if let Some(p) = &g.xor {
            return Err(Error::new(
                ErrorKind::Structure,
                p.span,
                "a group of a structure `[...]#R` cannot be swizzled: its offsets are R's (swizzle R's leaves)",
            ));
        }
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

    /// Whether a dimension of a data type (an `rmem` one when `rmem`) over the type `ty`
    /// distributes it: `ty` is an mpi array (SPEC 2.13), or a cuda array and the data type
    /// is rmem (a fragment over the block's threads, SPEC 2.14).
    fn distributes(&self, ty: usize, rmem: bool) -> bool {
        match &self.types[ty].class {
            TypeClass::Thread(ThreadKind::Mpi) => true,
            TypeClass::Thread(ThreadKind::Cuda(_)) => rmem,
            _ => false,
        }
    }

    fn is_mpi(&self, ty: usize) -> bool {
        self.types[ty].class == TypeClass::Thread(ThreadKind::Mpi)
    }

    /// What holds the parts of a type distributed over the thread array `ty`, in words.
    fn holders_of(&self, ty: usize) -> String {
        let name = &self.types[ty].name;
        match self.is_mpi(ty) {
            true => format!("the mpi array `{name}`"),
            false => format!("the threads of `{name}`'s block"),
        }
    }

    /// Whether a group references a data type or a thread array that does not distribute
    /// the type (an rmem one when `rmem`): a distributed dimension does not make a type
    /// artificial.
    fn references_data(&self, g: &Group, rmem: bool) -> bool {
        match &g.body {
            GroupBody::Size(_) => false,
            GroupBody::Compound(inner) => inner.iter().any(|c| self.references_data(c, rmem)),
            GroupBody::Ref { target, .. } => {
                !matches!(self.lookup(&target.name), Ok(r) if self.distributes(r.ty, rmem))
            }
        }
    }

    /// A data type that is not rmem, with natural leaves, may not have a dimension over a
    /// cuda array: that is a fragment's (SPEC 2.14), which lives in registers. (Without
    /// natural leaves it is a view of the thread ids, as it always was.)
    fn check_not_fragment(&self, dims: &[Group]) -> Result<()> {
        fn walk<'g>(g: &'g Group, leaf: &mut bool, refs: &mut Vec<&'g Ident>) {
            match &g.body {
                GroupBody::Size(_) => *leaf = true,
                GroupBody::Compound(inner) => inner.iter().for_each(|c| walk(c, leaf, refs)),
                GroupBody::Ref { target, .. } => refs.push(target),
            }
        }
        let (mut leaf, mut refs) = (false, Vec::new());
        dims.iter().for_each(|g| walk(g, &mut leaf, &mut refs));
        let cuda = refs.into_iter().find(|id| {
            matches!(self.lookup(&id.name), Ok(r)
                if matches!(self.types[r.ty].class, TypeClass::Thread(ThreadKind::Cuda(_))))
        });
        match (leaf, cuda) {
            (true, Some(id)) => Err(Error::new(
                ErrorKind::Structure,
                id.span,
                format!(
                    "a dimension over the threads of a cuda array's block belongs in an `rmem` type: a fragment, distributed over the threads, is registers (`rmem float [[2][#{}]] F`)",
                    id.name
                ),
            )),
            _ => Ok(()),
        }
    }

    /// Whether `node` is the block of the cuda array `ty` or one of its sub-dimensions.
    fn in_block(&self, ty: usize, node: NodeId) -> bool {
        fn under(m: &Module, at: NodeId, node: NodeId) -> bool {
            at == node || m.node(at).children.iter().any(|c| under(m, *c, node))
        }
        let root = self.node(self.types[ty].root);
        root.children.get(1).is_some_and(|b| under(self, *b, node))
    }

    /// `[#P]`, `[n#P]` or `[#P_0]` in a data type, P an mpi thread array (or, in an rmem
    /// type, `[#G_1_0]`, a dimension of a cuda array's block): leaves of the same shape
    /// standing for the holder, their strides set by [`Module::distribute`].
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
        let holders = self.holders_of(r.ty);
        let cuda = !self.is_mpi(r.ty);
        // The dimension the messages' examples distribute over: the array, or its block.
        let whole = match cuda {
            true => format!("{over}_1"),
            false => over.clone(),
        };
        if cuda && !self.in_block(r.ty, r.node) {
            return Err(Error::new(
                ErrorKind::Structure,
                target.span,
                format!(
                    "`{}` is not a dimension of `{over}`'s block: a fragment is distributed over the threads of one block (`#{over}_1` or its sub-dimensions, `#{over}_1_0`), each block holding its own",
                    target.name
                ),
            ));
        }
        if !natural {
            return Err(Error::new(
                ErrorKind::Structure,
                target.span,
                format!(
                    "a dimension distributed over {holders} belongs in a natural type (`[[#{whole}][n]][m]`); reference that type's dimensions to view it another way"
                ),
            ));
        }
        if let Some(other) = dist.over.filter(|o| *o != r.ty) {
            return Err(Error::new(
                ErrorKind::Structure,
                target.span,
                format!(
                    "this type is distributed over `{}` already: a type is distributed over one {}",
                    self.types[other].name,
                    match (self.is_mpi(other), self.is_mpi(r.ty)) {
                        (true, true) => "mpi array",
                        _ => "thread array",
                    }
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
                    "a dimension over {holders} is `[#{whole}]`, `[n#{whole}]` or a sub-dimension such as `[#{whole}_0]`, not a structured reference"
                ),
            )),
        }
    }

    /// A copy of the thread array's dimension `node`: leaves where it has leaves.
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

    /// The holder leaves' strides, once the part (`part` elements, the other leaves'
    /// product) is known: the holder's stride in the thread array (an mpi array's rank,
    /// a thread's id in a cuda array's block) times the part.
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
        let ta = &self.types[over];
        let (holders, ranks) = match ta.class {
            TypeClass::Thread(ThreadKind::Mpi) => (Holders::Ranks, self.node(ta.root).size),
            // The threads of the block, the cuda array's second top-level dimension.
            _ => (
                Holders::Threads,
                self.node(self.node(ta.root).children[1]).size,
            ),
        };
        Ok(Distribution {
            over: ta.name.clone(),
            holders,
            ranks,
            part,
            leaves: rank_leaves.iter().map(|(leaf, _)| *leaf).collect(),
        })
    }

    /// Compute heights and largest offsets of the nodes created since `first` (children first).
    fn finish_nodes(&mut self, first: usize) -> Result<()> {
        self.compute_reach(first);
        for i in first..self.nodes.len() {
            if let Some((twice, _)) = self.reach[i].iter().find(|(_, k)| *k > 1) {
                let canon = crate::explain::canonical_names(self);
                let what = match self.node(*twice).kind {
                    NodeKind::Xor { .. } => "the swizzled leaf",
                    _ => "the swizzle partner",
                };
                return Err(Error::new(
                    ErrorKind::Structure,
                    TextSpan::default(),
                    format!(
                        "a dimension reaches {what} `{}` more than once: a view may use a swizzled leaf and its partner once each",
                        canon.get(twice).map_or("?", String::as_str)
                    ),
                ));
            }
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

    fn check_cuda_shape(&self, t: &TypeDecl, root: NodeId, grid_later: bool) -> Result<()> {
        crate::grid::CudaGrid::check(self, root, grid_later).map_err(|e| {
            let span = match (e.part, t.dims.as_slice()) {
                (GridPart::Grid, [g, ..]) => g.span,
                (GridPart::Block, [_, b, ..]) => b.span,
                _ => t.span,
            };
            Error::new(ErrorKind::Structure, span, e.message)
        })
    }

    /// Evaluate a constant's value: not negative (0 is a constant, not a size: a field
    /// index `const FX = 0;`), and fitting in 64 bits.
    fn eval_const(&self, e: &SizeExpr) -> Result<u64> {
        let v = self.eval_int(e)?;
        u64::try_from(v).map_err(|_| {
            Error::new(
                ErrorKind::Size,
                e.span,
                format!("a constant must not be negative, this one is {v}"),
            )
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
                    SizeOp::CeilDiv => {
                        if y <= 0 {
                            return Err(Error::new(
                                ErrorKind::Size,
                                e.span,
                                format!("`ceil(a / b)` needs b > 0, here {y}"),
                            ));
                        }
                        x.div_euclid(y) + i128::from(x.rem_euclid(y) != 0)
                    }
                }
            }
        };
        if v.unsigned_abs() > u64::MAX as u128 {
            return Err(overflow());
        }
        Ok(v)
    }
}

/// Whether the group counts pieces with `ceil` (`[ceil(M / 128)]`): only a structure whose
/// first group does may cover its target past the end (SPEC 2.4).
pub(crate) fn counts_pieces(g: &Group) -> bool {
    matches!(&g.body, GroupBody::Size(e) if matches!(e.kind, SizeExprKind::Bin(SizeOp::CeilDiv, ..)))
}

/// The thread arrays a type may be distributed over, when these hold the parts, in words.
fn one_array(holders: &[Holders]) -> &'static str {
    match holders.iter().all(|h| *h == Holders::Ranks) {
        true => "mpi array",
        false => "thread array",
    }
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

/// Why the records of `r` cannot be kept one array per field (`soa`), if they cannot: a
/// field that is itself a record (SPEC.md 2.3).
fn nested_soa(r: Record) -> Option<String> {
    let field = r
        .def()
        .fields
        .iter()
        .find(|f| matches!(f.elem, ElemType::Record(_)))?;
    Some(format!(
        "`soa` keeps `{0}` one array per field, and its field `{1}` is a record (`{2}`): an SoA array of a record inside a record is not implemented; keep whole records (drop `soa`), or write the fields of `{2}` in `{0}` itself",
        r.name(),
        field.name,
        field.elem
    ))
}
