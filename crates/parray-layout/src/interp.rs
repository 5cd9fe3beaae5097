//! The reference interpreter: the executable form of PARRAY.md section 3.
//!
//! This module is the oracle that the compiler ([`crate::tree`], [`crate::expr`],
//! [`crate::offsets`]) is tested against. It is deliberately independent of them: it
//! works from the parsed [`Program`] alone, resolves names itself (longest declared prefix,
//! then `_digit` suffixes), evaluates size expressions itself, and computes every offset
//! with concrete integers (`u128`, so nothing wraps) by direct recursion on the rules,
//! written in the shape the rules are stated in rather than the shape that is fast:
//!
//! - rule 1: a natural leaf's stride is the product of the sizes of the natural leaves to
//!   its right, computed from the list of the type's leaves in left-to-right order;
//! - rule 2: a compound's offset is the sum of its children's offsets of the row-major
//!   digits of the index;
//! - rule 3: `#R` *is* R (same dimension, same children);
//! - rules 4 and 5: `n#R` and `S#R` have `off(i) = off_R(i)`; a group of S has
//!   `off(x) = off_P(x * w)` where P is its parent (the `S#R` dimension for a top-level
//!   group of S, the enclosing group otherwise) and `w` the product of its later siblings'
//!   sizes. The compiler folds these weights into one per group; here they compose
//!   through the parent at every call, as the rule is written;
//! - rule 8: indexing, with flat and nested indices; a compound sums its children's
//!   offsets, a dimension made by a structured reference flattens the indices through its
//!   structure and applies its own offset function;
//! - rules 9 and 10: `extent` and `cnt` by enumerating every offset;
//! - rule 11, swizzles: an offset is the sum over the leaves it reaches of digit times
//!   stride, gathered as a list of (leaf, digit) for the whole flat index or index
//!   expression; a swizzled leaf `[n ^ P]` takes its digit XOR the digit P has in that
//!   list (0 when P is not in it);
//! - distribution (SPEC.md 2.13): in a natural data type, `#P` (P an `mpi` thread array)
//!   has `off(i) = off_P(i) * part`, `part` the product of the sizes of the type's natural
//!   leaves, which are strided among themselves as if it were absent: the rank's parts end
//!   to end. A fragment (SPEC.md 2.14) is the same rule with a cuda array's block for P:
//!   in an `rmem` type, `#G_1` and its sub-dimensions (`#G_1_0`) are the holding thread's
//!   digits, `off_P` being the cuda array's own offsets (thread ids; a block dimension's
//!   are its ids within the block).
//!
//! It is slow on purpose (no caching, no symbolic work) and refuses nothing that section
//! 3 allows, except that it does not check CUDA launch limits (a thread array's shape has
//! no bearing on offsets). A nested index of one component, `[[x]]`, on a dimension with
//! exactly one sub-dimension applies `[x]` to that sub-dimension (rule 8 with k = 1, so
//! `x` may itself be nested for the sub-dimension's children); on any other dimension it
//! is taken as `[x]` (a convenience beyond the rules, which the compiler also accepts).

use crate::path::{child_name, DimPath};
use std::collections::HashMap;

use crate::ast::{
    DeclKind, Group, GroupBody, Index, IndexExpr, IndexValue, Item, Program, RefShape, SizeExpr,
    SizeExprKind, SizeOp,
};

/// A dimension of the interpreter's model (its own numbering, unrelated to `tree::NodeId`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct DimId(usize);

#[derive(Debug, Clone)]
enum Def {
    /// Rule 1: `off(i) = i * stride`.
    Leaf { stride: u128 },
    /// Rule 11: `off(i) = (i ^ p) * stride`, `p` the digit of `partner` in the same offset.
    Xor { stride: u128, partner: DimId },
    /// Rule 2: sum of the children's offsets of the row-major digits.
    Compound,
    /// Rules 4 and 5: `off(i) = off_target(i)` (`n#R` without children, `S#R` with S's groups).
    Prefix { target: DimId },
    /// Rule 5: a group of S, `off(x) = off_parent(x * w)`.
    Group { parent: DimId, w: u128 },
    /// A dimension over an mpi array's dimension `ranks`: `off(i) = off_ranks(i) * part`.
    Ranks { ranks: DimId, part: u128 },
}

#[derive(Debug, Clone)]
struct Dim {
    size: u128,
    def: Def,
    children: Vec<DimId>,
}

/// What is declared: a thread array, or a data type (an `rmem` one or not).
#[derive(Debug, Clone, Copy)]
struct Kind {
    thread: bool,
    rmem: bool,
}

/// Whether the dimension `name` is `of` or one of its sub-dimensions (`of_0_1`).
fn within(name: &str, of: &str) -> bool {
    name == of
        || name
            .strip_prefix(of)
            .is_some_and(|rest| rest.starts_with('_'))
}

/// The largest size or value the language allows.
const MAX: u128 = u64::MAX as u128;

/// A resolved program, evaluated by direct recursion on PARRAY.md section 3.
#[derive(Debug, Clone, Default)]
pub struct Interp {
    dims: Vec<Dim>,
    /// Declared types, in declaration order, with their roots.
    types: Vec<(String, DimId)>,
    /// The declared mpi thread arrays.
    mpi: Vec<String>,
    /// The declared cuda thread arrays.
    cuda: Vec<String>,
    consts: HashMap<String, i128>,
}

impl Interp {
    /// Resolve a program; `consts` override the program's constants of the same name.
    pub fn new(program: &Program, consts: &[(String, u64)]) -> Result<Self, String> {
        let mut it = Interp::default();
        for (n, v) in consts {
            it.consts.insert(n.clone(), *v as i128);
        }
        for item in &program.items {
            match item {
                Item::Const(c) => {
                    let name = &c.name.name;
                    if consts.iter().any(|(n, _)| n == name) {
                        continue;
                    }
                    if it.is_declared(name) {
                        return Err(format!("`{name}` declared twice"));
                    }
                    let Some(value) = &c.value else {
                        return Err(format!("run-time size `{name}` has no value"));
                    };
                    let v = it.int_value(value)?;
                    if v < 0 {
                        return Err(format!("constant {v} is negative"));
                    }
                    it.consts.insert(name.clone(), v);
                }
                Item::Record(_) => {}
                Item::Type(t) => {
                    let name = &t.name.name;
                    if it.is_declared(name) {
                        return Err(format!("`{name}` declared twice"));
                    }
                    let thread = matches!(t.kind, DeclKind::Thread(_));
                    let rmem = matches!(
                        t.kind,
                        DeclKind::Data {
                            mem: Some(crate::MemKind::Rmem),
                            ..
                        }
                    );
                    let kind = Kind { thread, rmem };
                    let artificial = t.dims.iter().any(|g| it.mentions_reference(g, kind));
                    if artificial && thread {
                        return Err(format!("thread array `{name}` has a reference"));
                    }
                    let mut leaves = Vec::new();
                    let mut xors = Vec::new();
                    let mut top = Vec::new();
                    for g in &t.dims {
                        top.push(
                            it.group(g, rmem, artificial, &mut leaves, &mut xors)
                                .map_err(|e| format!("in `{name}`: {e}"))?,
                        );
                    }
                    // Distribution: a rank's stride is the part, all other leaves' product.
                    let part: u128 = leaves.iter().map(|l| it.dims[l.0].size).product();
                    for d in &mut it.dims {
                        if let Def::Ranks { part: p @ 0, .. } = &mut d.def {
                            *p = part;
                        }
                    }
                    match &t.kind {
                        DeclKind::Thread(crate::ThreadKind::Mpi) => it.mpi.push(name.clone()),
                        DeclKind::Thread(crate::ThreadKind::Cuda(_)) => it.cuda.push(name.clone()),
                        _ => {}
                    }
                    // Rule 1: stride = product of the sizes of the leaves to the right.
                    for (k, &leaf) in leaves.iter().enumerate() {
                        let mut stride: u128 = 1;
                        for &right in &leaves[k + 1..] {
                            stride = stride.saturating_mul(it.dims[right.0].size);
                        }
                        it.dims[leaf.0].def = Def::Leaf { stride };
                    }
                    // Rule 7: the root is the compound of the top-level groups.
                    let root = it.compound(top)?;
                    it.types.push((name.clone(), root));
                    // Rule 11: partners are named from the type's own root.
                    for (leaf, partner) in xors {
                        it.swizzle(name, leaf, &partner)
                            .map_err(|e| format!("in `{name}`: {e}"))?;
                    }
                }
            }
        }
        Ok(it)
    }

    /// Makes `leaf` of the type `ty` (declared last) a swizzled leaf coupled with its leaf
    /// named `partner`.
    fn swizzle(&mut self, ty: &str, leaf: DimId, partner: &str) -> Result<(), String> {
        if !DimPath::readings(partner).any(|r| r.name == ty) || self.is_mpi(ty) {
            return Err(format!("`{partner}` is not a dimension of `{ty}`"));
        }
        let p = self.lookup(partner)?;
        let (n, m) = (self.dims[leaf.0].size, self.dims[p.0].size);
        let Def::Leaf { stride } = self.dims[leaf.0].def else {
            return Err("a swizzle in a thread array".into());
        };
        if p == leaf || !matches!(self.dims[p.0].def, Def::Leaf { .. }) {
            return Err(format!("`{partner}` is not another plain leaf"));
        }
        if !n.is_power_of_two() || !m.is_power_of_two() || m > n {
            return Err(format!("sizes {n} ^ {m}"));
        }
        self.dims[leaf.0].def = Def::Xor { stride, partner: p };
        Ok(())
    }

    fn is_declared(&self, name: &str) -> bool {
        self.consts.contains_key(name) || self.types.iter().any(|(n, _)| n == name)
    }

    fn push(&mut self, size: u128, def: Def, children: Vec<DimId>) -> DimId {
        self.dims.push(Dim {
            size,
            def,
            children,
        });
        DimId(self.dims.len() - 1)
    }

    fn compound(&mut self, children: Vec<DimId>) -> Result<DimId, String> {
        let mut size: u128 = 1;
        for c in &children {
            size = size
                .checked_mul(self.dims[c.0].size)
                .filter(|s| *s <= MAX)
                .ok_or("size overflows 64 bits")?;
        }
        Ok(self.push(size, Def::Compound, children))
    }

    /// One group of a declaration (of an `rmem` type when `rmem`); natural leaves are
    /// collected left to right in `leaves`. `xors`: the swizzled leaves, with their
    /// partners as written.
    fn group(
        &mut self,
        g: &Group,
        rmem: bool,
        artificial: bool,
        leaves: &mut Vec<DimId>,
        xors: &mut Vec<(DimId, String)>,
    ) -> Result<DimId, String> {
        match (&g.body, &g.xor) {
            (GroupBody::Size(_), _) => {}
            (_, Some(_)) => return Err("a swizzled group that is not a leaf".into()),
            (_, None) => {}
        }
        match &g.body {
            GroupBody::Size(e) => {
                if artificial {
                    return Err("a natural leaf in an artificial type".into());
                }
                let n = self.size_value(e)?;
                let leaf = self.push(n, Def::Leaf { stride: 0 }, Vec::new());
                leaves.push(leaf);
                if let Some(p) = &g.xor {
                    xors.push((leaf, p.name.clone()));
                }
                Ok(leaf)
            }
            GroupBody::Compound(inner) => {
                let mut children = Vec::new();
                for c in inner {
                    children.push(self.group(c, rmem, artificial, leaves, xors)?);
                }
                self.compound(children)
            }
            GroupBody::Ref { shape, target } => {
                let r = self.lookup(&target.name)?;
                let rsize = self.dims[r.0].size;
                if self.distributes(&target.name, rmem) {
                    if artificial {
                        return Err("a distributed dimension in an artificial type".into());
                    }
                    let size = match shape {
                        RefShape::Whole => rsize,
                        RefShape::Sized(e) => self.size_value(e)?.min(rsize + 1),
                        RefShape::Structured(_) => {
                            return Err("a structured distributed dimension".into())
                        }
                    };
                    if size > rsize {
                        return Err(format!("{size}#{} is larger than {rsize}", target.name));
                    }
                    return Ok(self.ranks(r, size, matches!(shape, RefShape::Whole)));
                }
                match shape {
                    // Rule 3: D is R.
                    RefShape::Whole => Ok(r),
                    // Rule 4.
                    RefShape::Sized(e) => {
                        let n = self.size_value(e)?;
                        if n > rsize {
                            return Err(format!("{n}#{} is larger than {rsize}", target.name));
                        }
                        Ok(self.push(n, Def::Prefix { target: r }, Vec::new()))
                    }
                    // Rule 5.
                    RefShape::Structured(s) => {
                        let size = self.structure_size(s)?;
                        if size > rsize && !self.covers(s, size, r)? {
                            return Err(format!(
                                "structure of {size} over {} of {rsize}",
                                target.name
                            ));
                        }
                        let d = self.push(size, Def::Prefix { target: r }, Vec::new());
                        let children = self.structure(s, d)?;
                        self.dims[d.0].children = children;
                        Ok(d)
                    }
                }
            }
        }
    }

    /// A dimension of `size` over the thread array's dimension `r`, with its children when it
    /// is all of `r` (rule 3); the part is filled in once the type's leaves are known.
    fn ranks(&mut self, r: DimId, size: u128, whole: bool) -> DimId {
        let children = if whole {
            self.dims[r.0].children.clone()
        } else {
            Vec::new()
        };
        let children = children
            .into_iter()
            .map(|c| {
                let n = self.dims[c.0].size;
                self.ranks(c, n, true)
            })
            .collect();
        self.push(size, Def::Ranks { ranks: r, part: 0 }, children)
    }

    fn is_mpi(&self, name: &str) -> bool {
        self.mpi.iter().any(|m| within(name, m))
    }

    /// Whether a dimension named `name` in a data type (an `rmem` one when `rmem`) is
    /// distributed: a dimension of an mpi array, or of a cuda array's block in an rmem type.
    fn distributes(&self, name: &str, rmem: bool) -> bool {
        self.is_mpi(name) || (rmem && self.cuda.iter().any(|g| within(name, &format!("{g}_1"))))
    }

    /// Whether a group references another type (for a data type, a distributed dimension
    /// is not a reference).
    fn mentions_reference(&self, g: &Group, kind: Kind) -> bool {
        match &g.body {
            GroupBody::Size(_) => false,
            GroupBody::Compound(inner) => inner.iter().any(|c| self.mentions_reference(c, kind)),
            GroupBody::Ref { target, .. } => {
                kind.thread || !self.distributes(&target.name, kind.rmem)
            }
        }
    }

    fn structure_size(&self, groups: &[Group]) -> Result<u128, String> {
        let mut size: u128 = 1;
        for g in groups {
            if g.xor.is_some() {
                return Err("a swizzled group in a structure".into());
            }
            let s = match &g.body {
                GroupBody::Size(e) => self.size_value(e)?,
                GroupBody::Compound(inner) => self.structure_size(inner)?,
                GroupBody::Ref { .. } => return Err("a reference inside a structure".into()),
            };
            size = size
                .checked_mul(s)
                .filter(|s| *s <= MAX)
                .ok_or("size overflows 64 bits")?;
        }
        Ok(size)
    }

    /// Whether a structure of `size` elements may cover `r`, which has fewer: its first
    /// group is `ceil(..)`, only its last piece passes `r`'s end, and `r` is a leaf or a
    /// view of one (its offsets continue past its end).
    fn covers(&self, groups: &[Group], size: u128, r: DimId) -> Result<bool, String> {
        let ceil = matches!(groups.first().map(|g| &g.body),
            Some(GroupBody::Size(e)) if matches!(e.kind, SizeExprKind::Bin(SizeOp::CeilDiv, ..)));
        let piece = self.structure_size(&groups[1..])?;
        let mut d = r;
        let continues = loop {
            match &self.dims[d.0].def {
                Def::Leaf { .. } => break true,
                Def::Prefix { target } => d = *target,
                Def::Group { parent, .. } => d = *parent,
                _ => break false,
            }
        };
        Ok(ceil && size - piece < self.dims[r.0].size && continues)
    }

    /// The groups of a structure under `parent`: `off(x) = off_parent(x * w)`.
    fn structure(&mut self, groups: &[Group], parent: DimId) -> Result<Vec<DimId>, String> {
        let mut out = Vec::new();
        for (k, g) in groups.iter().enumerate() {
            let size = self.structure_size(std::slice::from_ref(g))?;
            let w = self.structure_size(&groups[k + 1..])?;
            let d = self.push(size, Def::Group { parent, w }, Vec::new());
            if let GroupBody::Compound(inner) = &g.body {
                let children = self.structure(inner, d)?;
                self.dims[d.0].children = children;
            }
            out.push(d);
        }
        Ok(out)
    }

    /// A size expression's value: positive, at most `u64::MAX`, divisions exact.
    fn size_value(&self, e: &SizeExpr) -> Result<u128, String> {
        let v = self.int_value(e)?;
        if v <= 0 || v as u128 > MAX {
            return Err(format!("size {v} is not in [1, 2^64)"));
        }
        Ok(v as u128)
    }

    fn int_value(&self, e: &SizeExpr) -> Result<i128, String> {
        let v = match &e.kind {
            SizeExprKind::Lit(v) => *v as i128,
            SizeExprKind::Name(n) => *self
                .consts
                .get(n)
                .ok_or_else(|| format!("unknown constant `{n}`"))?,
            SizeExprKind::Dim(t) => self.dims[self.lookup(&t.name)?.0].size as i128,
            SizeExprKind::Neg(a) => -self.int_value(a)?,
            SizeExprKind::Bin(op, a, b) => {
                let (x, y) = (self.int_value(a)?, self.int_value(b)?);
                let r = match op {
                    SizeOp::Add => x.checked_add(y),
                    SizeOp::Sub => x.checked_sub(y),
                    SizeOp::Mul => x.checked_mul(y),
                    SizeOp::Div if y == 0 => return Err("division by zero".into()),
                    SizeOp::Div if x % y != 0 => return Err(format!("inexact division {x} / {y}")),
                    SizeOp::Div => Some(x / y),
                    SizeOp::CeilDiv if y <= 0 => return Err(format!("ceil({x} / {y})")),
                    SizeOp::CeilDiv => Some(x.div_euclid(y) + i128::from(x.rem_euclid(y) != 0)),
                };
                r.ok_or("arithmetic overflow")?
            }
        };
        if v.unsigned_abs() > MAX {
            return Err("a value overflows 64 bits".into());
        }
        Ok(v)
    }

    /// The dimension named by a path ([`DimPath::readings`]): the longest declared type
    /// name, then one child per `_digits` suffix.
    pub fn lookup(&self, name: &str) -> Result<DimId, String> {
        let (path, mut d) = DimPath::readings(name)
            .find_map(|p| {
                let root = self.types.iter().find(|(t, _)| t == p.name)?.1;
                Some((p, root))
            })
            .ok_or_else(|| format!("unknown type `{name}`"))?;
        for k in path.children {
            d = *self.dims[d.0]
                .children
                .get(k)
                .ok_or_else(|| format!("`{name}`: no child {k}"))?;
        }
        Ok(d)
    }

    /// The declared type names, in declaration order.
    pub fn type_names(&self) -> Vec<String> {
        self.types.iter().map(|(n, _)| n.clone()).collect()
    }

    /// The value of a constant (after overrides).
    pub fn constant(&self, name: &str) -> Option<u64> {
        self.consts.get(name).map(|v| *v as u64)
    }

    /// Every name that denotes a dimension: each type and each of its sub-dimension paths,
    /// in declaration and then depth-first order, each listed once. A path of a type that a
    /// longer declared name shadows (`T_1_0` after `T_1` is declared) denotes a dimension
    /// of that other type, or nothing (then it is left out).
    pub fn paths(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, root) in &self.types {
            self.walk(name.clone(), *root, &mut out);
        }
        let mut seen = std::collections::HashSet::new();
        out.retain(|p| self.lookup(p).is_ok() && seen.insert(p.clone()));
        out
    }

    fn walk(&self, path: String, d: DimId, out: &mut Vec<String>) {
        out.push(path.clone());
        for (k, c) in self.dims[d.0].children.iter().enumerate() {
            self.walk(child_name(&path, k), *c, out);
        }
    }

    /// |D|.
    pub fn dim_size(&self, d: DimId) -> u64 {
        self.dims[d.0].size as u64
    }

    /// D's sub-dimensions (`D_0`, `D_1`, ...).
    pub fn children(&self, d: DimId) -> &[DimId] {
        &self.dims[d.0].children
    }

    /// |name|, when the name denotes a dimension.
    pub fn size(&self, name: &str) -> Option<u64> {
        self.lookup(name).ok().map(|d| self.dim_size(d))
    }

    /// off_D(i) for a flat index `i < |D|`.
    pub fn off(&self, d: DimId, i: u64) -> Option<u64> {
        let dim = &self.dims[d.0];
        if (i as u128) >= dim.size {
            return None;
        }
        u64::try_from(self.off_unchecked(d, i as u128)).ok()
    }

    fn off_unchecked(&self, d: DimId, i: u128) -> u128 {
        let mut digits = Vec::new();
        self.digits(d, i, &mut digits);
        self.sum(&digits)
    }

    /// The leaves that off_D(i) reaches, each with its digit (a dimension over an mpi
    /// array with its rank's offset), in the order the rules reach them.
    fn digits(&self, d: DimId, i: u128, out: &mut Vec<(DimId, u128)>) {
        let dim = &self.dims[d.0];
        // Past its end only through a structure that covers it, whose offsets continue.
        debug_assert!(i < dim.size || !matches!(dim.def, Def::Compound | Def::Ranks { .. }));
        match &dim.def {
            Def::Leaf { .. } | Def::Xor { .. } => out.push((d, i)),
            Def::Compound => {
                // Row-major digits, the last child fastest.
                let mut digits = vec![0u128; dim.children.len()];
                let mut rest = i;
                for (k, c) in dim.children.iter().enumerate().rev() {
                    let s = self.dims[c.0].size;
                    digits[k] = rest % s;
                    rest /= s;
                }
                for (c, x) in dim.children.iter().zip(digits) {
                    self.digits(*c, x, out);
                }
            }
            Def::Prefix { target } => self.digits(*target, i, out),
            Def::Group { parent, w } => self.digits(*parent, i * w, out),
            Def::Ranks { ranks, .. } => out.push((d, self.off_unchecked(*ranks, i))),
        }
    }

    /// The offset of the leaves and digits `digits` reach: each digit times its stride,
    /// a swizzled leaf's digit XORed with its partner's there (rule 11).
    fn sum(&self, digits: &[(DimId, u128)]) -> u128 {
        let digit_of = |p: DimId| digits.iter().find(|(l, _)| *l == p).map_or(0, |(_, x)| *x);
        digits
            .iter()
            .map(|&(l, x)| match self.dims[l.0].def {
                Def::Leaf { stride } => x * stride,
                Def::Xor { stride, partner } => (x ^ digit_of(partner)) * stride,
                Def::Ranks { part, .. } => x * part,
                _ => unreachable!("digits are of leaves"),
            })
            .sum()
    }

    /// An upper bound of D's offsets (exact for dimensions built without prefixes): the
    /// sum of the children's bounds for a compound, the target's or parent's bound for a
    /// view. When it fits in 64 bits, so does every offset of D.
    pub fn offset_bound(&self, d: DimId) -> u128 {
        let dim = &self.dims[d.0];
        match &dim.def {
            Def::Leaf { stride } | Def::Xor { stride, .. } => (dim.size - 1) * stride,
            Def::Compound => dim.children.iter().map(|c| self.offset_bound(*c)).sum(),
            Def::Prefix { target } => self.offset_bound(*target),
            Def::Group { parent, .. } => self.offset_bound(*parent),
            Def::Ranks { ranks, part } => self.offset_bound(*ranks) * part,
        }
    }

    /// off(i) of the dimension `name`.
    pub fn offset(&self, name: &str, flat_index: u64) -> Option<u64> {
        self.off(self.lookup(name).ok()?, flat_index)
    }

    /// Every offset of `d`, in index order.
    pub fn offsets(&self, d: DimId) -> Vec<u64> {
        (0..self.dim_size(d))
            .map(|i| self.off(d, i).expect("in range"))
            .collect()
    }

    /// extent(name) = max offset + 1, by enumeration (rule 9).
    pub fn extent(&self, name: &str) -> u64 {
        let d = self.lookup(name).expect("a dimension");
        self.offsets(d)
            .into_iter()
            .max()
            .expect("sizes are positive")
            + 1
    }

    /// cnt(name), by enumeration (rule 10).
    pub fn cnt(&self, name: &str) -> bool {
        let d = self.lookup(name).expect("a dimension");
        let offs = self.offsets(d);
        offs.iter()
            .enumerate()
            .all(|(i, o)| *o == offs[0] + i as u64)
    }

    /// The offset of an index expression (rule 8), with the variables' values: the leaves
    /// all its indices reach, summed together (a swizzle couples leaves that different
    /// indices reach).
    pub fn index(&self, ie: &IndexExpr, vars: &HashMap<String, u64>) -> Result<u64, String> {
        let d = self.lookup(&ie.target.name)?;
        let mut digits = Vec::new();
        match ie.indices.as_slice() {
            [one] => self.apply(d, one, vars, &mut digits)?,
            many => self.apply_list(d, many, vars, &mut digits)?,
        };
        u64::try_from(self.sum(&digits)).map_err(|_| "offset overflows 64 bits".into())
    }

    /// One index on a dimension: the leaves it reaches, with their digits, into `out`.
    fn apply(
        &self,
        d: DimId,
        idx: &Index,
        vars: &HashMap<String, u64>,
        out: &mut Vec<(DimId, u128)>,
    ) -> Result<(), String> {
        match idx {
            Index::Value(v, _) => {
                let x = self.value(d, v, vars)?;
                self.digits(d, x, out);
                Ok(())
            }
            Index::Nested(list, _) if list.len() == 1 && self.dims[d.0].children.len() != 1 => {
                self.apply(d, &list[0], vars, out)
            }
            Index::Nested(list, _) => self.apply_list(d, list, vars, out),
        }
    }

    /// k indices on a dimension with k children.
    fn apply_list(
        &self,
        d: DimId,
        list: &[Index],
        vars: &HashMap<String, u64>,
        out: &mut Vec<(DimId, u128)>,
    ) -> Result<(), String> {
        let dim = &self.dims[d.0];
        if dim.children.len() != list.len() {
            return Err(format!(
                "{} indices on a dimension with {} children",
                list.len(),
                dim.children.len()
            ));
        }
        match dim.def {
            Def::Compound => {
                for (c, idx) in dim.children.iter().zip(list) {
                    self.apply(*c, idx, vars, out)?;
                }
                Ok(())
            }
            _ => {
                let x = self.flatten_list(d, list, vars)?;
                self.digits(d, x, out);
                Ok(())
            }
        }
    }

    /// Indices through a structure, flattened row-major.
    fn flatten_list(
        &self,
        d: DimId,
        list: &[Index],
        vars: &HashMap<String, u64>,
    ) -> Result<u128, String> {
        let dim = &self.dims[d.0];
        if dim.children.len() != list.len() {
            return Err(format!(
                "{} indices on a dimension with {} children",
                list.len(),
                dim.children.len()
            ));
        }
        let mut x = 0;
        for (c, idx) in dim.children.iter().zip(list) {
            x = x * self.dims[c.0].size + self.flatten_one(*c, idx, vars)?;
        }
        Ok(x)
    }

    fn flatten_one(
        &self,
        d: DimId,
        idx: &Index,
        vars: &HashMap<String, u64>,
    ) -> Result<u128, String> {
        match idx {
            Index::Value(v, _) => self.value(d, v, vars),
            Index::Nested(list, _) if list.len() == 1 && self.dims[d.0].children.len() != 1 => {
                self.flatten_one(d, &list[0], vars)
            }
            Index::Nested(list, _) => self.flatten_list(d, list, vars),
        }
    }

    fn value(&self, d: DimId, v: &IndexValue, vars: &HashMap<String, u64>) -> Result<u128, String> {
        let x = match v {
            IndexValue::Const(c) => *c,
            IndexValue::Var(n) => *vars.get(n).ok_or_else(|| format!("no value for `{n}`"))?,
        } as u128;
        if x >= self.dims[d.0].size {
            return Err(format!(
                "index {x} out of range (size {})",
                self.dims[d.0].size
            ));
        }
        Ok(x)
    }
}
