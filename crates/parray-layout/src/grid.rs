//! How a thread array's indices map onto the threads that run it (PARRAY.md section 4):
//! the one place that knows. The macros, `explain`, the emulator and the CUDA emitter all
//! ask this module.
//!
//! A `cuda` thread array has two top-level dimensions, the grid and the block. Each maps
//! its children, outermost first, to z, y, x (a leaf maps to x alone); `tid_0` is the
//! block's flat id and `tid_1` the thread's flat id in its block, x fastest, and
//! `tid = tid_0 * |block| + tid_1`. A `pthd` or `mpi` array is natural: each dimension's
//! index is a row-major digit of the flat `tid`.

use crate::expr::{flat_digit, LinearForm, VarId, Vars};
use crate::kinds::ThreadKind;
use crate::tree::{Module, NodeId};

/// What a GPU family lets one launch have: the one table that the declaration of a cuda
/// array (CUDA's), the HIP dialect (AMD's), the runtime and the emulation check against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchLimits {
    /// How messages name the family.
    pub name: &'static str,
    /// Block extents (x, y, z).
    pub block: [u64; 3],
    pub block_threads: u64,
    /// Grid extents (x, y, z).
    pub grid: [u64; 3],
    /// Work-items along each axis, grid extent times block extent (HIP's 32-bit global
    /// ids); `u64::MAX` where there is no such limit.
    pub axis_threads: u64,
    /// Shared memory (LDS) one block may have, opt-in included.
    pub shared_bytes: u64,
}

impl LaunchLimits {
    /// Whether a launch of `grid` blocks of `block` threads, each block with
    /// `shared_bytes` of shared memory, is within these limits; the reason if not. The
    /// one check of a launch's shape: for a declaration (against [`CUDA`], [`HIP`]) and at
    /// a launch (against the device's own).
    pub fn admits(&self, grid: [u32; 3], block: [u32; 3], shared_bytes: u64) -> Result<(), String> {
        let wide = |v: [u32; 3]| v.map(u64::from);
        check_limits(wide(grid), wide(block), self).map_err(|e| e.message)?;
        if shared_bytes > self.shared_bytes {
            return Err(format!(
                "a block has {shared_bytes} bytes of shared memory; {} allows at most {}",
                self.name, self.shared_bytes
            ));
        }
        Ok(())
    }
}

/// CUDA on every current GPU; shared memory as a Hopper block may have it (227 KiB, with
/// the dynamic shared memory opt-in), which the emulation grants too.
pub const CUDA: LaunchLimits = LaunchLimits {
    name: "CUDA",
    block: [1024, 1024, 64],
    block_threads: 1024,
    grid: [(1 << 31) - 1, 65535, 65535],
    axis_threads: u64::MAX,
    shared_bytes: 227 * 1024,
};

/// HIP on AMD GPUs (CDNA and RDNA): 1024 work-items a work-group, 64 KiB of LDS, global
/// ids of 32 bits along each axis.
pub const HIP: LaunchLimits = LaunchLimits {
    name: "HIP on an AMD GPU",
    block: [1024, 1024, 1024],
    block_threads: 1024,
    grid: [(1 << 31) - 1, (1 << 31) - 1, (1 << 31) - 1],
    axis_threads: (1 << 32) - 1,
    shared_bytes: 64 * 1024,
};

const AXES: [&str; 3] = ["x", "y", "z"];

/// The launch shape `<<<grid, block>>>`, extents as (x, y, z).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CudaGrid {
    pub grid: [u32; 3],
    pub block: [u32; 3],
}

/// Which of the two top-level dimensions of a cuda array a limit concerns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum GridPart {
    /// The array as a whole (its number of top-level dimensions).
    Whole,
    Grid,
    Block,
}

/// A cuda thread array that a GPU cannot launch: which part breaks which limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GridError {
    pub part: GridPart,
    pub message: String,
}

impl GridError {
    fn new(part: GridPart, message: impl Into<String>) -> GridError {
        GridError {
            part,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for GridError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for GridError {}

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
    pub expr: LinearForm,
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
    pub fn of(module: &Module, root: NodeId) -> Result<CudaGrid, GridError> {
        let [grid, block] = CudaGrid::extents(module, root)?;
        check_limits(grid, block, &CUDA)?;
        // The limits above keep every extent within u32.
        let cast = |v: [u64; 3]| v.map(|e| e as u32);
        Ok(CudaGrid::new(cast(grid), cast(block)))
    }

    /// [`CudaGrid::of`]'s checks; with `grid_later`, the grid's extents are left to be
    /// checked at the sizes the program binds (its block's are numbers).
    pub(crate) fn check(module: &Module, root: NodeId, grid_later: bool) -> Result<(), GridError> {
        let [grid, block] = CudaGrid::extents(module, root)?;
        check_limits(if grid_later { [1; 3] } else { grid }, block, &CUDA)
    }

    /// The block of a cuda array whose grid is sized at run time, checked, in a grid of
    /// one block: what is known of its launch before the sizes are bound.
    pub fn of_block(module: &Module, root: NodeId) -> Result<CudaGrid, GridError> {
        CudaGrid::check(module, root, true)?;
        let [_, block] = CudaGrid::extents(module, root)?;
        Ok(CudaGrid::new([1; 3], block.map(|e| e as u32)))
    }

    /// The extents (x, y, z) of the grid and of the block: at most three dimensions each.
    fn extents(module: &Module, root: NodeId) -> Result<[[u64; 3]; 2], GridError> {
        let top = &module.node(root).children;
        if top.len() != 2 {
            return Err(GridError::new(
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
                return Err(GridError::new(
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
        Ok(xyz)
    }

    /// Whether a launch of this shape, its blocks with `shared_bytes` of shared memory, is
    /// one that GPUs with `limits` accept.
    pub fn fits(&self, shared_bytes: u64, limits: &LaunchLimits) -> Result<(), String> {
        limits.admits(self.grid, self.block, shared_bytes)
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
                // Axes from the innermost dimension out, none for a dimension of size 1.
                let mut axis = 0;
                let mut maps: Vec<String> = (0..kids.len())
                    .rev()
                    .map(|j| match module.size(kids[j]) {
                        1 => format!("tid_{k}_{j} = 0"),
                        _ => {
                            axis += 1;
                            format!("tid_{k}_{j} = {what}.{}", AXES[axis - 1])
                        }
                    })
                    .collect();
                maps.reverse();
                maps
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
            let mut parts = [LinearForm::constant(0), LinearForm::constant(0)];
            for (k, part) in parts.iter_mut().enumerate() {
                let sizes = part_sizes(module, top[k]);
                let mut weight = 1;
                for (axis, &size) in sizes.iter().rev().enumerate() {
                    // An axis of extent 1 has index 0: it adds nothing.
                    if size == 1 {
                        continue;
                    }
                    let index = if k == 0 {
                        HwIndex::BlockIdx(axis)
                    } else {
                        HwIndex::ThreadIdx(axis)
                    };
                    let v = vars.bind(&index.c_name(), size - 1);
                    hw.push((v, index));
                    *part = part.add(&LinearForm::var(v).scale(weight), &vars);
                    weight *= size;
                }
            }
            let block_threads = module.size(top[1]);
            parts[0].scale(block_threads).add(&parts[1], &vars)
        }
        ThreadKind::Pthd | ThreadKind::Mpi => {
            let v = vars.bind("tid", module.size(root) - 1);
            hw.push((v, HwIndex::Tid));
            LinearForm::var(v)
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
        flat_digit(&flat, weight, Some(size), &vars)
    };
    ThreadIndex { expr, vars, hw }
}

/// The sizes a top-level dimension of a cuda array maps to axes, outermost first; a
/// dimension of size 1 takes no axis (`[[M][N][1]]` is `blockIdx.y`, `blockIdx.x`), so
/// that a split of one is the grid without it.
fn part_sizes(module: &Module, part: NodeId) -> Vec<u64> {
    let node = module.node(part);
    if node.children.is_empty() {
        vec![node.size]
    } else {
        let sizes: Vec<u64> = node.children.iter().map(|c| module.size(*c)).collect();
        match sizes.iter().all(|&s| s == 1) {
            true => vec![1],
            false => sizes.into_iter().filter(|&s| s != 1).collect(),
        }
    }
}

fn check_limits(grid: [u64; 3], block: [u64; 3], limits: &LaunchLimits) -> Result<(), GridError> {
    let name = limits.name;
    if grid.contains(&0) || block.contains(&0) {
        return Err(GridError::new(
            GridPart::Grid,
            "every grid and block extent must be at least 1",
        ));
    }
    let threads: u64 = block.iter().product();
    if threads > limits.block_threads {
        return Err(GridError::new(
            GridPart::Block,
            format!(
                "the block has {threads} threads; {name} allows at most {}",
                limits.block_threads
            ),
        ));
    }
    let [bx, by, bz] = limits.block;
    if block.iter().zip(limits.block).any(|(b, m)| *b > m) {
        return Err(GridError::new(
            GridPart::Block,
            format!(
                "block dimensions (x, y, z) = {block:?} exceed {name}'s limits ({bx}, {by}, {bz})"
            ),
        ));
    }
    let power = |v: u64| match v + 1 {
        p if p.is_power_of_two() && v > 65535 => format!("2^{}-1", p.trailing_zeros()),
        _ => v.to_string(),
    };
    if grid.iter().zip(limits.grid).any(|(g, m)| *g > m) {
        let [gx, gy, gz] = limits.grid.map(power);
        return Err(GridError::new(
            GridPart::Grid,
            format!(
                "grid dimensions (x, y, z) = {grid:?} exceed {name}'s limits ({gx}, {gy}, {gz})"
            ),
        ));
    }
    if let Some(axis) = (0..3).find(|&a| grid[a] * block[a] > limits.axis_threads) {
        return Err(GridError::new(
            GridPart::Grid,
            format!(
                "{} threads along {}: {name} numbers them in {} at most",
                grid[axis] * block[axis],
                AXES[axis],
                power(limits.axis_threads)
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

    /// A dimension of size 1 takes no axis: `[[3][4][1]]` is the grid of `[[3][4]]`, the
    /// thread indices the same digits of `tid`, and `explain` says so.
    #[test]
    fn a_dimension_of_one_takes_no_axis() {
        let m = module("#parray {cuda(int n) [[3][4][1]][[2][1][5]]} T #parray {cuda(int n) [[3][4]][[2][5]]} U");
        let (t, u) = (m.type_def("T").unwrap(), m.type_def("U").unwrap());
        let (g, h) = (
            CudaGrid::of(&m, t.root).unwrap(),
            CudaGrid::of(&m, u.root).unwrap(),
        );
        assert_eq!((g.grid, g.block), (h.grid, h.block));
        assert_eq!(g.grid, [4, 3, 1]);
        let kind = ThreadKind::Cuda(Vec::new());
        for (a, b) in [("T_0_1", "U_0_1"), ("T_0_0", "U_0_0"), ("T_1_2", "U_1_1")] {
            let a = thread_index(&m, t.root, &kind, m.lookup(a).unwrap().node);
            let b = thread_index(&m, u.root, &kind, m.lookup(b).unwrap().node);
            assert_eq!(
                (a.expr.to_source(&a.vars), a.hw),
                (b.expr.to_source(&b.vars), b.hw)
            );
        }
        let lines = g.describe(&m, t.root).join("\n");
        assert!(
            lines.contains("tid_0_0 = blockIdx.y, tid_0_1 = blockIdx.x, tid_0_2 = 0"),
            "{lines}"
        );
        assert!(
            lines.contains("tid_1_0 = threadIdx.y, tid_1_1 = 0, tid_1_2 = threadIdx.x"),
            "{lines}"
        );
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
        assert!(CudaGrid::new([1, 70000, 1], [1, 1, 1])
            .fits(0, &CUDA)
            .is_err());
        assert!(CudaGrid::new([1, 1, 1], [32, 1, 1]).fits(0, &CUDA).is_ok());
        // AMD: a grid CUDA refuses along y, 64 KiB of LDS, 32-bit ids along an axis.
        let tall = CudaGrid::new([1, 70000, 1], [1, 1, 1]);
        assert_eq!(tall.fits(0, &HIP), Ok(()));
        let lds = CudaGrid::new([8, 1, 1], [256, 1, 1]).fits(100 * 1024, &HIP);
        assert_eq!(
            lds,
            Err(
                "a block has 102400 bytes of shared memory; HIP on an AMD GPU allows at most 65536"
                    .into()
            )
        );
        assert_eq!(
            CudaGrid::new([8, 1, 1], [256, 1, 1]).fits(100 * 1024, &CUDA),
            Ok(())
        );
        let wide = CudaGrid::new([(1 << 31) - 1, 1, 1], [1024, 1, 1]).fits(0, &HIP);
        assert_eq!(
            wide,
            Err(
                "2199023254528 threads along x: HIP on an AMD GPU numbers them in 2^32-1 at most"
                    .into()
            )
        );
    }
}
