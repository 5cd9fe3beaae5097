//! The plan of a tile copied by the Tensor Memory Accelerator (Hopper's
//! `cp.async.bulk.tensor`): the tensor map that makes TMA's box fill write exactly the
//! offsets of a shared-memory type.
//!
//! TMA copies a *box* of a tensor of rank at most 5: for every box coordinate `(c_0, ..,
//! c_{r-1})` (`c_i < box_i`, dimension 0 the innermost) it reads the global element at
//! `sum (x_i + c_i) * stride_i` (`x` the copy's start coordinates, `stride_0` one element)
//! and writes it to shared memory at the byte `swizzle(e * (c_0 + box_0 * (c_1 + box_1 *
//! (..))))`: the box is dense in shared memory, innermost dimension first, and the 32, 64
//! and 128-byte modes XOR the 16-byte chunk with address bits 7.. (CuTe's
//! `Swizzle<B,4,3>`, the XOR of SPEC 2.5 rule 11).
//!
//! `#copy S(p) to D(q)` moves element `k` of `S` to element `k` of `D`. So the tensor
//! map's dimensions are `D`'s dense digits, each matched with the stride at which `S`
//! reads it: [`derive`] undoes `D`'s swizzle (an involution on the bytes), which must
//! leave the offsets `0..n` (a box is dense), and reads the strides off `S`'s offsets in
//! that order, merging runs that continue one progression and splitting dimensions over
//! TMA's limits. Its post-condition, checked before it returns and by the tests against
//! the interpreter:
//!
//! `@post` for every box coordinate `c`: [`TmaPlan::smem_byte`]`(c) == e * off_D(k)` and
//! [`TmaPlan::global_offset`]`(c) == off_S(k)` for one element `k`.
//!
//! Where the box sits in the array is the copy's start offset `p`: the dimensions sorted
//! by stride nest (each stride divides the next and a box dimension fits below the next
//! stride), so the offset decodes into start coordinates ([`TmaPlan::coordinates`]) and the
//! array's length bounds the outermost ([`TmaPlan::extents`]). A box that crosses a
//! dimension's extent is zero-filled there by TMA ([`TmaPlan::crossing`] finds it): that
//! is the copy's meaning where the source covers past its data ([`TmaPlan::zero_fill`],
//! the tiles at the edges of a matrix its tile does not divide), and otherwise the types'
//! offsets read across the extent, which the emulation refuses.

use crate::error::{Error, ErrorKind, Result, TextSpan};
use crate::swizzle::Swizzle;
use crate::tree::{Module, TypeClass};
use crate::MemKind;

/// The most dimensions a tensor map has.
pub const MAX_RANK: usize = 5;
/// The most elements of a box dimension.
pub const MAX_BOX: u64 = 256;
/// Global strides are below this many bytes.
pub const MAX_STRIDE_BYTES: u64 = 1 << 40;
/// Global strides and the inner box dimension are multiples of this many bytes.
pub const GRANULE: u64 = 16;
/// The most elements a box enumerated by [`plan`] may have (shared memory holds less).
pub const MAX_ELEMENTS: u64 = 1 << 20;

/// One dimension of the tensor map, in the box's order (innermost first).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct TmaDim {
    /// Elements of the box along it (1..=256).
    pub box_size: u64,
    /// Global elements between consecutive coordinates (1 for dimension 0).
    pub stride: u64,
}

/// A tile copy by TMA: the box, its dimensions' global strides and the swizzle.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct TmaPlan {
    pub elem_bytes: u64,
    pub dims: Vec<TmaDim>,
    pub swizzle: Swizzle,
    /// The source's pieces cover a dimension past its data (SPEC 2.4, `[[ceil(M / 128)]
    /// [128]]#A_0`): a box that crosses the tensor's extent is a tile at the data's edge,
    /// and the elements past the extent are TMA's zeros. Otherwise such a box reads what
    /// the types place past the extent, which TMA cannot, and the emulation refuses it.
    pub zero_fill: bool,
}

impl TmaPlan {
    /// The bytes one copy moves (the `expect_tx` of its mbarrier).
    pub fn box_bytes(&self) -> u64 {
        self.elem_bytes * self.dims.iter().map(|d| d.box_size).product::<u64>()
    }

    /// The shared-memory byte of the element at box coordinate `c` (innermost first).
    pub fn smem_byte(&self, c: &[u64]) -> u64 {
        let dense = c
            .iter()
            .zip(&self.dims)
            .rev()
            .fold(0, |acc, (c, d)| acc * d.box_size + c);
        self.swizzle.apply(dense * self.elem_bytes)
    }

    /// The global offset (elements, from the start) of the element at box coordinate `c`.
    pub fn global_offset(&self, c: &[u64]) -> u64 {
        c.iter().zip(&self.dims).map(|(c, d)| c * d.stride).sum()
    }

    /// The dimensions' indices by increasing stride (the order in which they nest).
    fn by_stride(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.dims.len()).collect();
        order.sort_by_key(|&i| self.dims[i].stride);
        order
    }

    /// The tensor's extent along each dimension over an array of `len` elements: a
    /// dimension's next stride over its own, and the outermost's coordinates that reach
    /// inside the array (`ceil(len / stride)`).
    pub fn extents(&self, len: u64) -> Vec<u64> {
        let order = self.by_stride();
        let mut extents = vec![0; self.dims.len()];
        for (j, &i) in order.iter().enumerate() {
            let stride = self.dims[i].stride;
            extents[i] = match order.get(j + 1) {
                Some(&next) => self.dims[next].stride / stride,
                None => len.div_ceil(stride),
            };
        }
        extents
    }

    /// The start coordinates of a box whose first element is at global offset `offset`:
    /// the offset in the mixed radix of the nested strides.
    pub fn coordinates(&self, offset: u64) -> Vec<u64> {
        let mut rest = offset;
        let mut x = vec![0; self.dims.len()];
        for i in self.by_stride().into_iter().rev() {
            x[i] = rest / self.dims[i].stride;
            rest %= self.dims[i].stride;
        }
        x
    }

    /// The first dimension along which a box at `offset` crosses the tensor's extent over
    /// an array of `len` elements (TMA fills the elements past it with zeros, where the
    /// types read on), as (dimension, start coordinate, extent); `None` inside.
    pub fn crossing(&self, offset: u64, len: u64) -> Option<(usize, u64, u64)> {
        let (x, extents) = (self.coordinates(offset), self.extents(len));
        (0..self.dims.len())
            .find(|&i| x[i] + self.dims[i].box_size > extents[i])
            .map(|i| (i, x[i], extents[i]))
    }
}

fn rule(message: String) -> Error {
    Error::new(ErrorKind::Structure, TextSpan::default(), message)
}

/// The plan of `#copy S(p) to D(q)` by TMA, `src` (`S`) a type of global memory and
/// `dst` (`D`) one of shared memory, both of `module` at literal sizes.
pub fn plan(module: &Module, src: &str, dst: &str) -> Result<TmaPlan> {
    plan_between((module, src), (module, dst))
}

/// [`plan`] with each side in its own module: a source of sizes given at run time is its
/// module at the bound sizes (which holds the types it needs), the destination the module
/// that declares it.
pub fn plan_between(
    (src_module, src): (&Module, &str),
    (module, dst): (&Module, &str),
) -> Result<TmaPlan> {
    let side = |module: &Module, name: &str, want: MemKind| -> Result<_> {
        let dim = module.resolve(&crate::ast::Ident {
            name: name.to_string(),
            span: TextSpan::default(),
        })?;
        let TypeClass::Data { mem, elem, soa } = module.types()[dim.ty].class else {
            return Err(rule(format!("`{name}` is a thread array, not data")));
        };
        if mem.is_some_and(|m| m != want) || soa {
            return Err(rule(format!(
                "TMA copies a tile from global memory (dmem) into shared memory (smem): `{name}`, its {}, is {}",
                match want {
                    MemKind::Smem => "destination",
                    _ => "source",
                },
                match soa {
                    true => "a record array kept one array per field".to_string(),
                    false => format!("of {} memory", mem.map_or("", |m| m.keyword())),
                }
            )));
        }
        Ok((dim, elem))
    };
    let (s, s_elem) = side(src_module, src, MemKind::Dmem)?;
    let (d, d_elem) = side(module, dst, MemKind::Smem)?;
    if s_elem != d_elem {
        return Err(rule(format!(
            "`#copy` moves elements of one type: `{src}` has {s_elem} and `{dst}` has {d_elem}"
        )));
    }
    let n = src_module.size(s.node);
    if module.size(d.node) != n {
        return Err(rule(format!(
            "`#copy` copies element k to element k: `{src}` has {n} elements and `{dst}` has {}",
            module.size(d.node)
        )));
    }
    if n > MAX_ELEMENTS {
        return Err(Error::new(
            ErrorKind::Limit,
            TextSpan::default(),
            format!(
                "a TMA box of {n} elements is more than shared memory holds (limit {MAX_ELEMENTS})"
            ),
        ));
    }
    let swizzle = match module.swizzle_alignment(d) {
        None => Swizzle::None,
        Some(a) => Swizzle::of_alignment(a).ok_or_else(|| {
            rule(format!(
                "the swizzle of `{dst}` repeats every {a} bytes: TMA's 32, 64 and 128-byte modes repeat every 256, 512 and 1024 (`[[R/8][8]][[8 ^ T_0_1][8]]` on bf16 is the 128-byte mode)"
            ))
        })?,
    };
    let offsets = |module: &Module, node| {
        (0..n)
            .map(|k| module.offset_at(node, k))
            .collect::<Vec<_>>()
    };
    let plan = derive(
        (&offsets(src_module, s.node), src),
        (&offsets(module, d.node), dst),
        d_elem.size_bytes(),
        swizzle,
    )?;
    Ok(TmaPlan {
        zero_fill: src_module.types()[s.ty].covers.is_some(),
        ..plan
    })
}

/// The plan from the two sides' offsets of each element `k` (`src`'s in elements of the
/// global array, `dst`'s in elements of shared memory, each with its type's name for the
/// errors), the element's bytes and `dst`'s swizzle mode; without zero fill (offsets do
/// not say whether the source covers past its data).
pub fn derive(
    (src, s_name): (&[u64], &str),
    (dst, d_name): (&[u64], &str),
    elem_bytes: u64,
    swizzle: Swizzle,
) -> Result<TmaPlan> {
    let n = src.len() as u64;
    // Undo the swizzle: the dense position of each element in the box.
    let mut global = vec![None; src.len()];
    for (k, (&s, &d)) in src.iter().zip(dst).enumerate() {
        let u = swizzle.apply(d * elem_bytes) / elem_bytes;
        match global.get_mut(u as usize) {
            Some(slot @ None) if u < n => *slot = Some(s),
            _ => {
                let how = match swizzle {
                    Swizzle::None => String::new(),
                    m => format!(" (before the {}-byte swizzle)", m.span().unwrap_or(0)),
                };
                return Err(rule(format!(
                    "TMA writes its box densely: `{d_name}`'s {n} elements must lie at offsets 0..{n}{how}, but its element {k} is at {u}{}",
                    if u < n { ", where another element is" } else { "" }
                )));
            }
        }
    }
    let g: Vec<u64> = global.into_iter().flatten().collect();
    // Runs of one progression, innermost first.
    let mut dims: Vec<TmaDim> = Vec::new();
    let mut w = 1;
    while w < n {
        let stride = g[w as usize];
        let mut b = 1;
        while (b + 1) * w <= n && g[(b * w) as usize] == b * stride {
            b += 1;
        }
        // A run ends where a dimension of a box does; one that does not divide the rest
        // is no box (the check below says where), taken whole so that the walk ends.
        b = (2..=b)
            .rev()
            .find(|&b| (n / w).is_multiple_of(b))
            .unwrap_or(n / w);
        dims.push(TmaDim {
            box_size: b,
            stride,
        });
        w *= b;
    }
    if dims.is_empty() {
        dims.push(TmaDim {
            box_size: 1,
            stride: 1,
        });
    }
    // Every element is the sum of its coordinates' strides.
    let mut c = vec![0; dims.len()];
    for (u, &want) in g.iter().enumerate() {
        let mut rest = u as u64;
        for (ci, d) in c.iter_mut().zip(&dims) {
            *ci = rest % d.box_size;
            rest /= d.box_size;
        }
        let at: u64 = c.iter().zip(&dims).map(|(c, d)| c * d.stride).sum();
        if at != want {
            return Err(rule(format!(
                "TMA reads a box, each coordinate at a stride: `{d_name}`'s dense order reads `{s_name}` in runs of {} at strides {}, which put box element {u} at global offset {at}, but `{s_name}` has it at {want}",
                list(dims.iter().map(|d| d.box_size)),
                list(dims.iter().map(|d| d.stride)),
            )));
        }
    }
    if dims[0].stride != 1 {
        return Err(rule(format!(
            "TMA's innermost dimension reads consecutive global elements: `{d_name}`'s first {} elements in shared memory are {} elements apart in `{s_name}`; lay `{d_name}` out with `{s_name}`'s unit-stride dimension innermost",
            dims[0].box_size, dims[0].stride
        )));
    }
    // The limits: the inner dimension within the swizzle's span, each within 256.
    let mut split = Vec::new();
    for (i, d) in dims.into_iter().enumerate() {
        let cap = match (i, swizzle.span()) {
            (0, Some(span)) => MAX_BOX.min(span / elem_bytes),
            _ => MAX_BOX,
        };
        let inner_ok = |b: u64| i != 0 || (b * elem_bytes).is_multiple_of(GRANULE);
        let mut rest = d;
        while rest.box_size > cap {
            let Some(b) = (1..=cap)
                .rev()
                .find(|&b| rest.box_size.is_multiple_of(b) && inner_ok(b))
            else {
                return Err(rule(format!(
                    "a TMA box dimension has at most {cap} elements{}: the run of {} elements of `{d_name}` at stride {} has no such factor",
                    if cap < MAX_BOX { " (the swizzle's span)" } else { "" },
                    rest.box_size,
                    rest.stride
                )));
            };
            split.push(TmaDim {
                box_size: b,
                stride: rest.stride,
            });
            rest = TmaDim {
                box_size: rest.box_size / b,
                stride: rest.stride * b,
            };
        }
        split.push(rest);
    }
    let dims = split;
    let inner = dims[0].box_size * elem_bytes;
    if !inner.is_multiple_of(GRANULE) {
        return Err(rule(format!(
            "TMA's inner box dimension is a multiple of {GRANULE} bytes: `{d_name}`'s innermost run is {} elements ({inner} bytes)",
            dims[0].box_size
        )));
    }
    // A swizzled box's rows are the pattern's rows: the model above is the hardware's
    // there (an H200 agrees, `crates/parray-runtime/tests/tma.rs`), and no narrower row
    // is checked.
    if let Some(span) = swizzle.span().filter(|&span| inner != span) {
        return Err(rule(format!(
            "a box swizzled by TMA's {span}-byte mode has rows of {span} bytes: `{d_name}`'s innermost run is {} elements ({inner} bytes); lay its rows out {} elements wide",
            dims[0].box_size,
            span / elem_bytes
        )));
    }
    if dims.len() > MAX_RANK {
        return Err(rule(format!(
            "a tensor map has at most {MAX_RANK} dimensions: `{d_name}` reads `{s_name}` in {} runs (boxes {}, strides {})",
            dims.len(),
            list(dims.iter().map(|d| d.box_size)),
            list(dims.iter().map(|d| d.stride)),
        )));
    }
    for d in &dims[1..] {
        let bytes = d.stride * elem_bytes;
        if !bytes.is_multiple_of(GRANULE) || bytes >= MAX_STRIDE_BYTES {
            return Err(rule(format!(
                "TMA's global strides are multiples of {GRANULE} bytes below 2^40: `{s_name}` has a stride of {} elements ({bytes} bytes) in `{d_name}`'s box",
                d.stride
            )));
        }
    }
    let plan = TmaPlan {
        elem_bytes,
        dims,
        swizzle,
        zero_fill: false,
    };
    let order = plan.by_stride();
    for w in order.windows(2) {
        let (a, b) = (plan.dims[w[0]], plan.dims[w[1]]);
        if !b.stride.is_multiple_of(a.stride) || a.box_size * a.stride > b.stride {
            return Err(rule(format!(
                "TMA finds a box by coordinates: the strides of `{s_name}` in `{d_name}`'s box must nest, each a multiple of the one below and past its box, but {} elements at stride {} meet stride {}",
                a.box_size, a.stride, b.stride
            )));
        }
    }
    Ok(plan)
}

fn list(xs: impl Iterator<Item = u64>) -> String {
    let v: Vec<String> = xs.map(|x| x.to_string()).collect();
    format!("({})", v.join(", "))
}
