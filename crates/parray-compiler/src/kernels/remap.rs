//! The remap kernel of a `#copy` between two layouts on one GPU: element `k` of the source
//! type to element `k` of the destination type, `d[D(k)] = s[S(k)]`, both offset
//! functions folded by the offset compiler.

use parray_layout::{ElemType, Module, Offset};

use super::build::{
    add, assign, bin, e, flat_offset, index, loc, mul, n, offset, refused, Builder,
};
use super::Kernel;
use crate::back::c::Dialect;
use crate::ir::{BinOp, Check, Expr, ExprKind, Indexed, Stmt};

/// Elements (or vectors) each thread of a [`remap_kernel`] moves: four independent loads
/// in flight per thread keep the memory system busy (as Fig 7's four-row transpose does).
pub const REMAP_PER_THREAD: u64 = 4;

/// Threads per block of a remap kernel that moves elements or vectors.
const BLOCK: u64 = 256;

/// Side of the shared tile of a transposing [`remap_kernel`].
const TILE: u64 = 32;

/// Rows of a tile each thread moves: a block is `TILE` x `TILE / TILE_ROWS` threads.
const TILE_ROWS: u64 = 4;

/// One side of a copy: the declarations and the type.
type Side<'m> = (&'m Module, &'m str);

/// The kernel `name` that moves element `k` of the type `src` to element `k` of `dst`
/// (each in its own declarations), in `dialect`.
///
/// Where the destination's consecutive elements are consecutive `k` (as the source's
/// are), each thread moves [`REMAP_PER_THREAD`] elements, consecutive threads consecutive
/// `k`; by 16-byte vectors where both layouts move in aligned runs of four
/// ([`parray_layout::common_vector`], the rule of a body's `#copy`) and the prover shows
/// every vector access aligned. Where the destination's contiguous digit of `k` is
/// another (`k / W % M`, a transposition), consecutive `k` would scatter the writes: the
/// kernel then goes through a 32 x 33 shared tile of (that digit, the source's `k % W`),
/// reading along one and writing along the other, as a transpose does.
///
/// Offsets are the body language's 32-bit `usize`: a type of more elements than that, or
/// of a larger extent, is an error.
pub fn remap_kernel(
    name: &str,
    elem: ElemType,
    (src_module, src): Side,
    (dst_module, dst): Side,
    dialect: Dialect,
) -> parray_layout::Result<Kernel> {
    let sides = |lanes: u64| -> parray_layout::Result<[Copied; 2]> {
        Ok([
            Copied::of(src_module, src, lanes)?,
            Copied::of(dst_module, dst, lanes)?,
        ])
    };
    let [s, d] = sides(1)?;
    let count = s.off.vars.max(parray_layout::VarId(0)) + 1;
    let widest = [count, s.of.extent.unwrap_or(0), d.of.extent.unwrap_or(0)]
        .into_iter()
        .max()
        .unwrap_or(0);
    if widest > u64::from(u32::MAX) - BLOCK * REMAP_PER_THREAD {
        return Err(refused(
            name,
            format!(
                "a GPU copy indexes in 32 bits, and this one reaches {widest} elements: copy it in parts of fewer than 2^32"
            ),
        ));
    }
    let threads = |array: &str, shared: &str| {
        format!(
            "#parray {{cuda({elem}* s, {elem}* d) {array}}} PARRAY_REMAP
{shared}"
        )
    };
    if let Some((w, m)) = transposition(&s.off, &d.off, count) {
        let tiles = format!(
            "[[{}][{}][{}]][[{}][{TILE}]]",
            count / (w * m),
            m / TILE,
            w / TILE,
            TILE / TILE_ROWS
        );
        let tile = format!("#parray {{smem {elem} [{TILE}][{}]}} TILE", TILE + 1);
        let b = Builder::new(&threads(&tiles, &tile), "PARRAY_REMAP")?;
        return transposing(b, [s, d], (w, m), name, dialect);
    }
    let lanes = REMAP_PER_THREAD;
    let vectors = crate::ir::vector_of(elem, lanes as u8).is_some()
        && parray_layout::common_vector(&s.off, &d.off, count, &[lanes]).is_some();
    if vectors {
        let b = Builder::new(&threads(&grid_of(count / lanes), ""), "PARRAY_REMAP")?;
        // Vectors only where the prover shows them aligned and in range; else elements.
        if let Ok(kernel) = moves(b, sides(lanes)?, count / lanes, lanes, name, dialect) {
            return Ok(kernel);
        }
    }
    let b = Builder::new(&threads(&grid_of(count), ""), "PARRAY_REMAP")?;
    moves(b, [s, d], count, 1, name, dialect)
}

/// A 2-D copy on one GPU in words of one size: `height` rows of `width` words, row `r`
/// from word `r * src_pitch` of the source to word `r * dst_pitch` of the destination
/// (each pitch at least `width`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Rows2d {
    /// The word: `uchar`, `int`, `int2` or `int4`.
    pub word: ElemType,
    pub height: u64,
    pub width: u64,
    pub src_pitch: u64,
    pub dst_pitch: u64,
}

impl Rows2d {
    /// The two sides as types: `FROM` and `TO`, views `[#S_0][width #S_1]` of pitched
    /// storage `[height][pitch]`, whose extents end where their last rows do.
    pub fn module(&self) -> parray_layout::Result<Module> {
        let Rows2d {
            word,
            height,
            width,
            ..
        } = *self;
        let side = |ty: &str, pitch: u64| {
            format!(
                "#parray {{dmem {word} [{height}][{pitch}]}} {ty}_STORE
#parray {{{word} [#{ty}_STORE_0][{width} #{ty}_STORE_1]}} {ty}
"
            )
        };
        Module::parse(&(side("FROM", self.src_pitch) + &side("TO", self.dst_pitch)))
    }
}

/// The kernel `name` that moves `rows`: the [`remap_kernel`] from [`Rows2d::module`]'s
/// `FROM` to its `TO`, so that a copy of rows is a `#copy` between two types, with its
/// proofs and its grid.
pub fn rows_kernel(name: &str, rows: Rows2d, dialect: Dialect) -> parray_layout::Result<Kernel> {
    let module = rows.module()?;
    remap_kernel(name, rows.word, (&module, "FROM"), (&module, "TO"), dialect)
}

/// One side of a remap: its offset function of one flat index (by vectors of some lanes)
/// and the type it indexes.
struct Copied {
    off: Offset,
    of: Indexed,
}

impl Copied {
    fn of(module: &Module, ty: &str, lanes: u64) -> parray_layout::Result<Copied> {
        Ok(Copied {
            off: flat_offset(module, ty, lanes)?,
            of: Indexed::of_type(module, ty),
        })
    }

    /// `$T[k]$` of this side.
    fn at(&self, k: Expr) -> Expr {
        offset(self.off.clone(), k, self.of.clone())
    }
}

/// The grid of a kernel moving `count` elements (or vectors), [`REMAP_PER_THREAD`] a
/// thread.
fn grid_of(count: u64) -> String {
    let blocks = count.div_ceil(BLOCK * REMAP_PER_THREAD).max(1);
    format!("[{blocks}][{BLOCK}]")
}

/// The digit `k / w % m` the destination is contiguous along while the source is
/// contiguous along `k`, when a 32 x 32 tile of the two fits the copy.
fn transposition(s: &Offset, d: &Offset, count: u64) -> Option<(u64, u64)> {
    // The digit `k / w % m` a layout is contiguous along (`w` 1: `k` itself).
    let unit_digit = |off: &Offset| {
        off.expr.terms.iter().find_map(|(c, term)| match term {
            parray_layout::expr::Term::Var(_) if *c == 1 => Some((1, count)),
            parray_layout::expr::Term::Digit { of, div, modulo }
                if *c == 1 && of.as_var().is_some() =>
            {
                Some((*div, modulo.unwrap_or(count / div)))
            }
            _ => None,
        })
    };
    match (unit_digit(s), unit_digit(d)) {
        (Some((1, _)), Some((w, m)))
            if w > 1
                && w.is_multiple_of(TILE)
                && m.is_multiple_of(TILE)
                && count.is_multiple_of(w * m) =>
        {
            Some((w, m))
        }
        _ => None,
    }
}

/// Each thread moves [`REMAP_PER_THREAD`] of the `moves` elements (`lanes` 1) or
/// vectors of `lanes`, consecutive threads consecutive ones; where the grid covers more,
/// the threads past the end move nothing.
fn moves(
    mut b: Builder,
    [src, dst]: [Copied; 2],
    moves: u64,
    lanes: u64,
    name: &str,
    dialect: Dialect,
) -> parray_layout::Result<Kernel> {
    let (block, thread) = (b.tid("0"), b.tid("1"));
    let (s, d) = (b.param("s"), b.param("d"));
    let exact = moves.is_multiple_of(BLOCK * REMAP_PER_THREAD);
    let body = b.unrolled("j", REMAP_PER_THREAD, |b, j| {
        let mut stmts = Vec::new();
        let first = add(mul(block, n(BLOCK * REMAP_PER_THREAD)), thread);
        let i = b.let_(&mut stmts, "i", add(first, mul(j, n(BLOCK))));
        let (from, to) = match lanes {
            1 => (index(s, src.at(i.clone())), index(d, dst.at(i.clone()))),
            _ => (
                vector(s, src.at(i.clone()), lanes),
                vector(d, dst.at(i.clone()), lanes),
            ),
        };
        let mv = assign(to, from);
        stmts.push(match exact {
            true => mv,
            false => Stmt::If {
                cond: bin(BinOp::Lt, i, n(moves)),
                then: vec![mv],
                els: None,
                loc: loc(),
            },
        });
        stmts
    });
    b.finish(name, vec![body], dialect)
}

/// `base.load{lanes}(at)`, or as a place its store.
fn vector(base: Expr, at: Expr, lanes: u64) -> Expr {
    e(ExprKind::Vector {
        base: Box::new(base),
        at: Box::new(at),
        lanes: lanes as u8,
        check: Check::Checked(None),
        method: crate::CodeSpan::call_site(),
    })
}

/// The transposing kernel through a shared tile: block `(x, y, z)` moves the 32 x 32
/// tile of source rows `32y ..` (of `w` elements, in the `z`th run of `w * m`) and columns
/// `32x ..`, reading rows, writing columns.
fn transposing(
    mut b: Builder,
    [src, dst]: [Copied; 2],
    (w, m): (u64, u64),
    name: &str,
    dialect: Dialect,
) -> parray_layout::Result<Kernel> {
    let mut stmts = Vec::new();
    let tile = b.create(&mut stmts, "TILE");
    let (run, row0, col0) = (b.tid("0_0"), b.tid("0_1"), b.tid("0_2"));
    let (ty, tx) = (b.tid("1_0"), b.tid("1_1"));
    let (s, d) = (b.param("s"), b.param("d"));
    let base = b.let_(&mut stmts, "base", mul(run, n(w * m)));
    // `k` of element (row, column) of the tile, and its cell in the tile.
    let k = |row: Expr, col: Expr| {
        add(
            base.clone(),
            add(
                mul(add(mul(row0.clone(), n(TILE)), row), n(w)),
                add(mul(col0.clone(), n(TILE)), col),
            ),
        )
    };
    let cell = |row: Expr, col: Expr| index(tile.clone(), add(mul(row, n(TILE + 1)), col));
    let rows = TILE / TILE_ROWS;
    let read = b.unrolled("j", TILE_ROWS, |b, j| {
        let mut body = Vec::new();
        let y = b.let_(&mut body, "y", add(ty.clone(), mul(j, n(rows))));
        let k = b.let_(&mut body, "k", k(y.clone(), tx.clone()));
        let from = index(s, src.at(k));
        body.push(assign(cell(y, tx.clone()), from));
        body
    });
    let write = b.unrolled("j", TILE_ROWS, |b, j| {
        let mut body = Vec::new();
        let y = b.let_(&mut body, "y", add(ty, mul(j, n(rows))));
        let k = b.let_(&mut body, "k", k(tx.clone(), y.clone()));
        let to = index(d, dst.at(k));
        body.push(assign(to, cell(tx, y)));
        body
    });
    stmts.extend([read, Stmt::Sync { loc: loc() }, write]);
    b.finish(name, stmts, dialect)
}
