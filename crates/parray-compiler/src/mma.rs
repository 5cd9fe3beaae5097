//! The checks of `#mma D(d) += A(a) * B(b)` (SPEC 3.5, "MMA") on the declared types: the
//! block is whole warps, and each named type is a fragment (SPEC 2.14) of the detour's
//! cuda array whose holder and register of every element are the ones
//! `mma.sync.aligned.m16n8k16` needs ([`crate::ir::mma_isa`]), computed from the type by
//! the layout crate's offsets.

use parray_layout::{ElemType, Holders, Module, NodeId, NodeKind, TypeClass};

use crate::ir::{mma_isa, MMA_K, MMA_M, MMA_N, WARP};

/// An operand of the instruction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    A,
    B,
    /// The accumulator, C and D (`d` is both).
    D,
}

impl Operand {
    fn name(self) -> &'static str {
        match self {
            Operand::A => "A",
            Operand::B => "B",
            Operand::D => "D",
        }
    }

    /// Rows and columns: A is M x K, B is K x N, D is M x N.
    fn shape(self) -> (usize, usize) {
        match self {
            Operand::A => (MMA_M, MMA_K),
            Operand::B => (MMA_K, MMA_N),
            Operand::D => (MMA_M, MMA_N),
        }
    }

    /// What the rows and the columns index.
    fn axes(self) -> (&'static str, &'static str) {
        match self {
            Operand::A => ("m", "k"),
            Operand::B => ("k", "n"),
            Operand::D => ("m", "n"),
        }
    }

    /// The registers of one lane.
    fn part(self) -> u64 {
        let (r, c) = self.shape();
        (r * c) as u64 / u64::from(WARP)
    }

    /// `(lane, register)` of element `[r][c]`.
    fn isa(self, r: usize, c: usize) -> (usize, usize) {
        match self {
            Operand::A => mma_isa::a(r, c),
            Operand::B => mma_isa::b(r, c),
            Operand::D => mma_isa::c(r, c),
        }
    }
}

/// The names of the block's leaves of 8 threads of stride 4 (the ISA's t1, its groupID)
/// and 4 threads of stride 1 (t0), when it has them: `G_1_1`, `G_1_2` for `[[4][8][4]]`.
fn lane_digits(module: &Module, threads: &str) -> Option<(String, String)> {
    fn find(module: &Module, node: NodeId, path: String, want: (u64, u64)) -> Option<String> {
        let n = module.node(node);
        match n.kind {
            NodeKind::Leaf { stride } if (n.size, stride) == want => Some(path),
            _ => n
                .children
                .iter()
                .enumerate()
                .find_map(|(k, c)| find(module, *c, format!("{path}_{k}"), want)),
        }
    }
    let block = module.node(module.type_def(threads)?.root).children[1];
    let t1 = find(module, block, format!("{threads}_1"), (8, 4))?;
    let t0 = find(module, block, format!("{threads}_1"), (4, 1))?;
    Some((t1, t0))
}

/// Checks that the block of the cuda array `threads` is whole warps whose lanes are its
/// lowest dimensions (every dimension below 32 threads a whole dimension of one warp), as
/// a warp collective needs.
pub fn check_block(module: &Module, threads: &str) -> Result<(), String> {
    let def = module
        .type_def(threads)
        .ok_or_else(|| format!("`{threads}` is not declared"))?;
    let block = module.node(def.root).children[1];
    let size = module.node(block).size;
    // The block's leaves, natural in a thread array: (size, stride).
    let all: Vec<(u64, u64)> = module
        .leaves(block)
        .into_iter()
        .filter_map(|l| match module.node(l).kind {
            NodeKind::Leaf { stride } => Some((module.node(l).size, stride)),
            _ => None,
        })
        .collect();
    let lanes: u64 = all
        .iter()
        .filter(|(_, stride)| *stride < u64::from(WARP))
        .map(|(size, _)| size)
        .product();
    if !size.is_multiple_of(u64::from(WARP)) || lanes != u64::from(WARP) {
        return Err(format!(
            "`#mma` is executed by the {WARP} lanes of each warp together: the block of `{threads}` ({size} threads) must be whole warps whose lanes are its last dimensions (`[[W][8][4]]`: W warps of 8 x 4 lanes)"
        ));
    }
    Ok(())
}

/// Checks that the declared type `ty` is the fragment `op` of `mma.sync.aligned.m16n8k16`
/// over the block of the cuda array `threads`, element by element, and returns its
/// element type; the error says what is wrong and how to declare it.
pub fn check_operand(
    module: &Module,
    threads: &str,
    ty: &str,
    op: Operand,
) -> Result<ElemType, String> {
    let def = module
        .type_def(ty)
        .ok_or_else(|| format!("`{ty}` is not a declared type"))?;
    let (rows, cols) = op.shape();
    let (t1, t0) = lane_digits(module, threads)
        .unwrap_or_else(|| (format!("{threads}_1_1"), format!("{threads}_1_2")));
    let input = |elem: ElemType| match elem {
        ElemType::Half => "half",
        _ => "bf16",
    };
    let elem = match def.class {
        TypeClass::Data { elem, .. } => elem,
        TypeClass::Thread(_) => return Err(format!("`{ty}` is a thread array, not a fragment")),
    };
    let how = |elem: ElemType| {
        match op {
        Operand::A => format!(
            "declare A's registers in the ISA's order and view them as rows and columns: `rmem {e} [2][2][#{t1}][#{t0}][2] {ty}_REGS;` `{e} [[#{ty}_REGS_1][#{ty}_REGS_2]][[#{ty}_REGS_0][#{ty}_REGS_3][#{ty}_REGS_4]] {ty};` (register v0 + 2 v1 + 4 v2 of lane t0 + 4 t1 holds A[t1 + 8 v1][2 t0 + v0 + 8 v2]); create `{ty}_REGS` and name `{ty}` here",
            e = input(elem)
        ),
        Operand::B => format!(
            "declare B as k x n: `rmem {e} [[2][#{t0}][2]][#{t1}] {ty};` (register v0 + 2 v1 of lane t0 + 4 t1 holds B[2 t0 + v0 + 8 v1][t1])",
            e = input(elem)
        ),
        Operand::D => format!(
            "declare it as m x n: `rmem float [[2][#{t1}]][[#{t0}][2]] {ty};` (register v0 + 2 v1 of lane t0 + 4 t1 holds D[t1 + 8 v1][2 t0 + v0])"
        ),
    }
    };
    let elem_ok = match op {
        Operand::A | Operand::B => matches!(elem, ElemType::Bf16 | ElemType::Half),
        Operand::D => elem == ElemType::Float,
    };
    if !elem_ok {
        let want = match op {
            Operand::A | Operand::B => "`bf16` or `half`",
            Operand::D => "`float` (the f32 accumulator)",
        };
        return Err(format!(
            "the elements of {} are {want}, not `{}`",
            op.name(),
            elem.c_name()
        ));
    }
    let dist = match &def.distribution {
        Some(d) if d.holders == Holders::Threads && d.over == threads => d,
        _ => {
            return Err(format!(
                "`{ty}` is not a fragment of `{threads}`'s block (SPEC 2.14): {}",
                how(elem)
            ))
        }
    };
    let root = module.node(def.root);
    let dims: Vec<u64> = root.children.iter().map(|c| module.node(*c).size).collect();
    if dims != [rows as u64, cols as u64] {
        let (r, c) = op.axes();
        return Err(format!(
            "{} is {rows} x {cols} ({r} x {c}), but `{ty}` is {}: {}",
            op.name(),
            dims.iter().map(|d| format!("[{d}]")).collect::<String>(),
            how(elem)
        ));
    }
    if dist.part != op.part() {
        return Err(format!(
            "a lane keeps {} registers of {}, but `{ty}` gives each thread {}: {}",
            op.part(),
            op.name(),
            dist.part,
            how(elem)
        ));
    }
    for r in 0..rows {
        for c in 0..cols {
            let o = module.offset_at(def.root, (r * cols + c) as u64);
            let got = (o / dist.part, o % dist.part);
            let (lane, reg) = op.isa(r, c);
            if got != (lane as u64, reg as u64) {
                let (x, y) = op.axes();
                return Err(format!(
                    "`{ty}` is not mma.sync m16n8k16's {}: its element [{r}][{c}] ({x} = {r}, {y} = {c}) is register {} of thread {}, where the instruction keeps it in register {reg} of lane {lane}; {}",
                    op.name(),
                    got.1,
                    got.0,
                    how(elem)
                ));
            }
        }
    }
    Ok(elem)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TYPES: &str = "
rmem bf16 [[2][#G_1_1]][[2][#G_1_2][2]] FA
rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS
bf16 [[#FA_REGS_1][#FA_REGS_2]][[#FA_REGS_0][#FA_REGS_3][#FA_REGS_4]] FA_ISA
rmem half [2][2][#G_1_1][#G_1_2][2] HA_REGS
half [[#HA_REGS_1][#HA_REGS_2]][[#HA_REGS_0][#HA_REGS_3][#HA_REGS_4]] HA
rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB
rmem bf16 [[2][#G_1_1]][[#G_1_2][2]] FB_ROWS
rmem float [[2][#G_1_1]][[#G_1_2][2]] FC
rmem float [[2][#G_1_1]][[2][#G_1_2]] FC_SWAPPED
rmem float [2][2][#G_1_1][#G_1_2] FC_FLAT
";

    fn module(block: &str) -> Module {
        Module::parse(&format!(
            "cuda(float* c) [2]{block} G\ncuda(float* c) [1][[8][4]] H\n{TYPES}"
        ))
        .unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn the_isa_fragments_pass() {
        let m = module("[[4][8][4]]");
        assert_eq!(check_block(&m, "G"), Ok(()));
        assert_eq!(
            check_operand(&m, "G", "FA_ISA", Operand::A),
            Ok(ElemType::Bf16)
        );
        assert_eq!(check_operand(&m, "G", "HA", Operand::A), Ok(ElemType::Half));
        assert_eq!(check_operand(&m, "G", "FB", Operand::B), Ok(ElemType::Bf16));
        assert_eq!(
            check_operand(&m, "G", "FC", Operand::D),
            Ok(ElemType::Float)
        );
    }

    #[test]
    fn each_mistake_says_which_element_and_how_to_declare_it() {
        let m = module("[[4][8][4]]");
        let e = |ty, op| check_operand(&m, "G", ty, op).unwrap_err();
        let fa = e("FA", Operand::A);
        assert!(fa.contains("element [0][8] (m = 0, k = 8) is register 2 of thread 0, where the instruction keeps it in register 4 of lane 0"), "{fa}");
        assert!(
            fa.contains("`rmem bf16 [2][2][#G_1_1][#G_1_2][2] FA_REGS;`"),
            "{fa}"
        );
        let rows = e("FB_ROWS", Operand::B);
        assert!(rows.contains("element [0][1] (k = 0, n = 1) is register 1 of thread 0, where the instruction keeps it in register 0 of lane 4"), "{rows}");
        assert!(
            rows.contains("`rmem bf16 [[2][#G_1_2][2]][#G_1_1] FB_ROWS;`"),
            "{rows}"
        );
        let swapped = e("FC_SWAPPED", Operand::D);
        assert!(swapped.contains("element [0][1]"), "{swapped}");
        let flat = e("FC_FLAT", Operand::D);
        assert!(
            flat.contains("D is 16 x 8 (m x n), but `FC_FLAT` is [2][2][8][4]"),
            "{flat}"
        );
        assert!(e("FC", Operand::A).contains("the elements of A are `bf16` or `half`, not `float`"));
        assert!(e("FA_ISA", Operand::D).contains("the elements of D are `float`"));
        // A fragment of another cuda array's block.
        let other = check_operand(&m, "H", "FC", Operand::D).unwrap_err();
        assert!(
            other.contains("`FC` is not a fragment of `H`'s block"),
            "{other}"
        );
    }

    #[test]
    fn the_block_is_whole_warps_of_its_last_dimensions() {
        let block = |b: &str| Module::parse(&format!("cuda(float* c) [2]{b} G\n")).unwrap();
        for ok in ["[[4][8][4]]", "[[3][8][4]]", "[[2][32]]", "[32]"] {
            assert_eq!(check_block(&block(ok), "G"), Ok(()), "{ok}");
        }
        for bad in ["[[8][3]]", "[64]", "[[4][16][4]]", "[[32][2]]"] {
            let e = check_block(&block(bad), "G").unwrap_err();
            assert!(
                e.contains("must be whole warps whose lanes are its last dimensions"),
                "{bad}: {e}"
            );
        }
    }
}
