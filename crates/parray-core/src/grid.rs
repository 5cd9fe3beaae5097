//! How a thread array's indices map onto the threads that run it (PARRAY.md section 4):
//! the one place that knows. The macros, `explain`, the emulator and the CUDA emitter all
//! ask this module.
//!
//! A `cuda` thread array has two top-level dimensions, the grid and the block. Each maps
//! its children, outermost first, to z, y, x (a leaf maps to x alone); `tid_0` is the
//! block's flat id and `tid_1` the thread's flat id in its block, x fastest, and
//! `tid = tid_0 * |block| + tid_1`. A `pthd` or `mpi` array is natural: each dimension's
//! index is a row-major digit of the flat `tid`.

use crate::expr::{digit, Expr, VarId, Vars};
use crate::kinds::ThreadKind;
use crate::tree::{Module, NodeId};

/// CUDA's limits on every current GPU: block extents (x, y, z), threads per block, grid
/// extents (x, y, z).
pub const MAX_BLOCK: [u64; 3] = [1024, 1024, 64];
pub const MAX_BLOCK_THREADS: u64 = 1024;
pub const MAX_GRID: [u64; 3] = [(1 << 31) - 1, 65535, 65535];

const AXES: [&str; 3] = ["x", "y", "z"];

/// The launch shape `<<<grid, block>>>`, extents as (x, y, z).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaGrid {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// Which of the two top-level dimensions of a cuda array a limit concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GridPart {
    /// The array as a whole (its number of top-level dimensions).
    Whole,
    Grid,
    Block,
}

/// A hardware index that a thread index is computed from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HwIndex {
    /// The flat thread id of a pthd or mpi array.
    Tid,
    /// `blockIdx.x` (0), `.y` (1), `.z` (2).
    BlockIdx(usize),
    /// `threadIdx.x` (0), `.y` (1), `.z` (2).
    ThreadIdx(usize),
}

impl HwIndex {
    /// The name CUDA C gives it (`blockIdx.x`), or `tid`.
    pub fn c_name(self) -> String {
        match self {
            HwIndex::Tid => "tid".into(),
            HwIndex::BlockIdx(a) => format!("blockIdx.{}", AXES[a]),
            HwIndex::ThreadIdx(a) => format!("threadIdx.{}", AXES[a]),
        }
    }
}

/// A thread index (`tid`, `tid_0`, `tid_1_0`, ...) as an expression of hardware indices.
#[derive(Debug, Clone)]
pub struct ThreadIndex {
    pub expr: Expr,
    pub vars: Vars,
    /// What each variable of `vars` stands for.
    pub hw: Vec<(VarId, HwIndex)>,
}

impl CudaGrid {
    pub fn new(grid: [u32; 3], block: [u32; 3]) -> Self {
        CudaGrid { grid, block }
    }

    /// The grid of the cuda thread array whose root is `root`; the error says which part
    /// breaks which limit.
    pub fn of(module: &Module, root: NodeId) -> Result<CudaGrid, (GridPart, String)> {
        let top = &module.node(root).children;
        if top.len() != 2 {
            return Err((
                GridPart::Whole,
                format!(
                    "a cuda thread array has exactly two top-level dimensions (grid and block), found {}",
                    top.len()
                ),
            ));
        }
        let mut xyz = [[1u64; 3]; 2];
        for (k, part) in [GridPart::Grid, GridPart::Block].into_iter().enumerate() {
            let what = if k == 0 { "grid" } else { "block" };
            let sizes = part_sizes(module, top[k]);
            if sizes.len() > 3 {
                return Err((
                    part,
                    format!(
                        "the {what} has {} dimensions; CUDA allows at most 3 (z, y, x)",
                        sizes.len()
                    ),
                ));
            }
            for (axis, s) in sizes.iter().rev().enumerate() {
                xyz[k][axis] = *s;
            }
        }
        check_limits(xyz[0], xyz[1])?;
        // The limits above keep every extent within u32.
        let cast = |v: [u64; 3]| v.map(|e| e as u32);
        Ok(CudaGrid::new(cast(xyz[0]), cast(xyz[1])))
    }

    /// Whether a launch of this shape is one CUDA accepts.
    pub fn validate(&self) -> Result<(), String> {
        let wide = |v: [u32; 3]| v.map(u64::from);
        check_limits(wide(self.grid), wide(self.block)).map_err(|(_, m)| m)
    }

    pub fn num_blocks(&self) -> u64 {
        volume(self.grid)
    }

    pub fn block_threads(&self) -> u64 {
        volume(self.block)
    }

    /// `blockIdx` of the block whose flat id is `id` (x fastest).
    pub fn block_idx(&self, id: u64) -> [u32; 3] {
        unflatten(id, self.grid)
    }

    /// `threadIdx` of the thread whose flat id in its block is `id`.
    pub fn thread_idx(&self, id: u64) -> [u32; 3] {
        unflatten(id, self.block)
    }

    /// `tid_0`: the flat id of `block_idx`.
    pub fn block_id(&self, block_idx: [u32; 3]) -> u64 {
        flatten(block_idx, self.grid)
    }

    /// `tid_1`: the flat id of `thread_idx` in its block.
    pub fn thread_id(&self, thread_idx: [u32; 3]) -> u64 {
        flatten(thread_idx, self.block)
    }

    /// `tid`: the thread's flat id in the whole array.
    pub fn tid(&self, block_id: u64, thread_id: u64) -> u64 {
        block_id * self.block_threads() + thread_id
    }

    /// The lines `explain` prints for the mapping.
    pub fn describe(&self, module: &Module, root: NodeId) -> Vec<String> {
        let top = &module.node(root).children;
        let (grid, block) = (module.size(top[0]), module.size(top[1]));
        let mut lines = vec![format!(
            "grid of {grid} blocks (tid_0) x {block} threads per block (tid_1); tid = tid_0 * {block} + tid_1"
        )];
        for (k, (what, dim, ext)) in [
            ("blockIdx", "gridDim", self.grid),
            ("threadIdx", "blockDim", self.block),
        ]
        .into_iter()
        .enumerate()
        {
            let kids = &module.node(top[k]).children;
            let maps: Vec<String> = if kids.is_empty() {
                vec![format!("tid_{k} = {what}.x")]
            } else {
                let n = kids.len();
                (0..n)
                    .map(|j| format!("tid_{k}_{j} = {what}.{}", AXES[n - 1 - j]))
                    .collect()
            };
            lines.push(format!(
                "  {dim} = (x {}, y {}, z {}): {}",
                ext[0],
                ext[1],
                ext[2],
                maps.join(", ")
            ));
        }
        lines
    }
}

/// The thread index of dimension `node` of the thread array `root` (of kind `kind`), as an
/// expression of the hardware indices: `tid_0_1` of a cuda array is `blockIdx.x` where the
/// grid says so, `tid_1` of a pthd array `[2][2]` is `tid % 2`.
pub fn thread_index(module: &Module, root: NodeId, kind: &ThreadKind, node: NodeId) -> ThreadIndex {
    let mut vars = Vars::new();
    let mut hw = Vec::new();
    let flat = match kind {
        ThreadKind::Cuda(_) => {
            let top = &module.node(root).children;
            let mut parts = [Expr::constant(0), Expr::constant(0)];
            for (k, part) in parts.iter_mut().enumerate() {
                let sizes = part_sizes(module, top[k]);
                let mut weight = 1;
                for (axis, &size) in sizes.iter().rev().enumerate() {
                    let index = if k == 0 {
                        HwIndex::BlockIdx(axis)
                    } else {
                        HwIndex::ThreadIdx(axis)
                    };
                    let v = vars.bind(&index.c_name(), size - 1);
                    hw.push((v, index));
                    *part = part.add(&Expr::var(v).scale(weight), &vars);
                    weight *= size;
                }
            }
            let block_threads = module.size(top[1]);
            parts[0].scale(block_threads).add(&parts[1], &vars)
        }
        ThreadKind::Pthd | ThreadKind::Mpi => {
            let v = vars.bind("tid", module.size(root) - 1);
            hw.push((v, HwIndex::Tid));
            Expr::var(v)
        }
    };
    let expr = if node == root {
        flat
    } else {
        // The array is natural: a dimension's index is one row-major digit of the flat id.
        let size = module.size(node);
        let weight = if size > 1 {
            module.offset_at(node, 1)
        } else {
            1
        };
        digit(&flat, weight, Some(size), &vars)
    };
    ThreadIndex { expr, vars, hw }
}

/// The sizes a top-level dimension of a cuda array maps to axes, outermost first.
fn part_sizes(module: &Module, part: NodeId) -> Vec<u64> {
    let node = module.node(part);
    if node.children.is_empty() {
        vec![node.size]
    } else {
        node.children.iter().map(|c| module.size(*c)).collect()
    }
}

fn check_limits(grid: [u64; 3], block: [u64; 3]) -> Result<(), (GridPart, String)> {
    if grid.contains(&0) || block.contains(&0) {
        return Err((
            GridPart::Grid,
            "every grid and block extent must be at least 1".into(),
        ));
    }
    let threads: u64 = block.iter().product();
    if threads > MAX_BLOCK_THREADS {
        return Err((
            GridPart::Block,
            format!("the block has {threads} threads; CUDA allows at most {MAX_BLOCK_THREADS}"),
        ));
    }
    if block.iter().zip(MAX_BLOCK).any(|(b, m)| *b > m) {
        return Err((
            GridPart::Block,
            format!("block dimensions (x, y, z) = {block:?} exceed CUDA's limits (1024, 1024, 64)"),
        ));
    }
    if grid.iter().zip(MAX_GRID).any(|(g, m)| *g > m) {
        return Err((
            GridPart::Grid,
            format!(
                "grid dimensions (x, y, z) = {grid:?} exceed CUDA's limits (2^31-1, 65535, 65535)"
            ),
        ));
    }
    Ok(())
}

fn volume(v: [u32; 3]) -> u64 {
    v.iter().map(|&e| u64::from(e)).product()
}

fn flatten(i: [u32; 3], dims: [u32; 3]) -> u64 {
    let [x, y, z] = i.map(u64::from);
    let [dx, dy, _] = dims.map(u64::from);
    x + dx * (y + dy * z)
}

fn unflatten(id: u64, dims: [u32; 3]) -> [u32; 3] {
    let [dx, dy, _] = dims.map(u64::from);
    // Each component is below its u32 extent.
    [
        (id % dx) as u32,
        (id / dx % dy) as u32,
        (id / dx / dy) as u32,
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn module(src: &str) -> Module {
        Module::parse(src).expect("parses")
    }

    #[test]
    fn cuda_axes_outermost_first() {
        let m = module("#parray {cuda(int n) [[3][4]][[2][5][6]]} T");
        let t = m.type_def("T").unwrap();
        let g = CudaGrid::of(&m, t.root).unwrap();
        assert_eq!(g.grid, [4, 3, 1]);
        assert_eq!(g.block, [6, 5, 2]);
        for id in 0..g.num_blocks() {
            assert_eq!(g.block_id(g.block_idx(id)), id);
        }
        for id in 0..g.block_threads() {
            assert_eq!(g.thread_id(g.thread_idx(id)), id);
        }
    }

    #[test]
    fn thread_indices_are_the_digits_of_tid() {
        let m = module("#parray {cuda(int n) [[3][4]][[2][5][6]]} T #parray {pthd [3][[2][2]]} P");
        let t = m.type_def("T").unwrap();
        let kind = ThreadKind::Cuda(Vec::new());
        let g = CudaGrid::of(&m, t.root).unwrap();
        let t01 = m.lookup("T_0_1").unwrap().node;
        let t10 = m.lookup("T_1_0").unwrap().node;
        let t1 = m.lookup("T_1").unwrap().node;
        for tid in 0..g.num_blocks() * g.block_threads() {
            let (b, th) = (tid / g.block_threads(), tid % g.block_threads());
            let (bi, ti) = (g.block_idx(b), g.thread_idx(th));
            let eval = |node| {
                let ix = thread_index(&m, t.root, &kind, node);
                let values: Vec<u64> = ix
                    .hw
                    .iter()
                    .map(|(_, h)| match *h {
                        HwIndex::BlockIdx(a) => u64::from(bi[a]),
                        HwIndex::ThreadIdx(a) => u64::from(ti[a]),
                        HwIndex::Tid => tid,
                    })
                    .collect();
                ix.expr.eval(&values)
            };
            assert_eq!(eval(t.root), tid);
            assert_eq!(eval(t01), b % 4);
            assert_eq!(eval(t10), th / 30);
            assert_eq!(eval(t1), th);
        }
        let p = m.type_def("P").unwrap();
        let p11 = m.lookup("P_1_1").unwrap().node;
        let ix = thread_index(&m, p.root, &ThreadKind::Pthd, p11);
        for tid in 0..12 {
            assert_eq!(ix.expr.eval(&[tid]), tid % 2);
        }
    }

    #[test]
    fn limits() {
        let err = Module::parse("#parray {cuda(int n) [70000][[2][1025]]} T").unwrap_err();
        assert!(err.message.contains("2050 threads"), "{}", err.message);
        assert!(CudaGrid::new([1, 70000, 1], [1, 1, 1]).validate().is_err());
        assert!(CudaGrid::new([1, 1, 1], [32, 1, 1]).validate().is_ok());
    }
}
