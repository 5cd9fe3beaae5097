//! Whether a subprogram's views of its type parameters line up with the caller's storage.
//!
//! A subprogram refines its type parameters' dimensions (`[[K/64][8][8]#TA_1]`) and moves
//! its pointers by the offsets of the refinement's digits (`pa + $AL_1_0[kt]$`, a part read
//! from `pa` through `[#AL_0_2][#AL_1_2]`): an element reached so is the one meant only
//! where the offset of every index of the refined dimension is the sum of its digits'
//! offsets. On row-major storage it always is; on storage in pieces (Fig 17's halves, Fig
//! 18's strips and blocks) it is where the pieces' boundaries fall on the digits' (a strip
//! of 96 columns cuts the k-tile of columns 64..127, whose elements past 95 are in the
//! next strip, which `$AL_1_0[1]$` plus a column's offset does not reach). Such a type is
//! refused at the call (`subprog`), found by comparing the offsets of every element.

use parray_layout::{Module, NodeId, NodeKind};

/// Dimensions of more elements than this are not compared (the time of a compilation).
const LIMIT: u64 = 1 << 22;

/// Why the declaration `name` (of the subprogram's own, resolved in `module` for the
/// call's types) does not line up with the storage of a type parameter among `params`,
/// if it does not: the first dimension of it that refines a parameter's dimension, and
/// its first element whose offset is not its digits' sum.
pub fn misaligned(module: &Module, name: &str, params: &[String]) -> Option<String> {
    let root = module.type_def(name)?.root;
    // The nodes of the caller's types (a reference to one is its node itself).
    let theirs: Vec<(&String, Vec<NodeId>)> = params
        .iter()
        .filter_map(|p| Some((p, below(module, module.type_def(p)?.root))))
        .collect();
    let mut todo = vec![(root, name.to_string())];
    while let Some((n, path)) = todo.pop() {
        if theirs.iter().any(|(_, nodes)| nodes.contains(&n)) {
            continue;
        }
        let node = module.node(n);
        if let NodeKind::Prefix { target } | NodeKind::Strided { target, .. } = node.kind {
            let param = theirs.iter().find(|(_, nodes)| nodes.contains(&target));
            if let (Some((param, _)), Some((x, at, sum))) = (param, first_misplaced(module, n)) {
                let digits: Vec<String> = node
                    .children
                    .iter()
                    .map(|c| module.size(*c).to_string())
                    .collect();
                return Some(format!(
                    "`{path}` takes the elements of a dimension of `{param}` as digits of {}, which do not line up with its storage: element {x} is at offset {at}, and its digits' offsets add up to {sum}, so a pointer moved by a digit's offset (`p + ${path}_0[i]$`) reaches another element; take sizes whose pieces of storage begin and end on the digits' boundaries",
                    digits.join(" x ")
                ));
            }
        }
        for (k, c) in node.children.iter().enumerate() {
            todo.push((*c, format!("{path}_{k}")));
        }
    }
    None
}

/// `n` and every node below it.
fn below(module: &Module, n: NodeId) -> Vec<NodeId> {
    let mut out = vec![n];
    let mut k = 0;
    while k < out.len() {
        out.extend(module.node(out[k]).children.iter().copied());
        k += 1;
    }
    out
}

/// The first element of `n` (of two or more digits) whose offset is not the sum of its
/// digits' offsets: (its index, its offset, the sum). `None` where every one is, and for
/// a dimension of more than [`LIMIT`] elements or one a swizzle acts on (whose XOR is no
/// sum either way).
fn first_misplaced(module: &Module, n: NodeId) -> Option<(u64, u64, u64)> {
    let node = module.node(n);
    if node.children.len() < 2 || node.size > LIMIT || !module.couplings(n).is_empty() {
        return None;
    }
    let sizes: Vec<u64> = node.children.iter().map(|c| module.size(*c)).collect();
    (0..node.size).find_map(|x| {
        let (mut rest, mut sum) = (x, 0u64);
        for (c, size) in node.children.iter().zip(&sizes).rev() {
            sum = sum.wrapping_add(module.offset_at(*c, rest % size));
            rest /= size;
        }
        let at = module.offset_at(n, x);
        (at != sum).then_some((x, at, sum))
    })
}
