//! The plan of a `#copy` between arrays of two types: the path it takes follows from the
//! two layouts and from where the arrays are (host memory or a GPU). The runtime copies by
//! it, and `parray copy` shows it.

use std::fmt;

use crate::error::Result;
use crate::eval::Program;
use crate::offsets::{offset_function, Offset, Rows};
use crate::tree::{Distribution, Holders, Module, NodeKind, TypeClass};

/// How a copy between two types and memories is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyPath {
    /// Both layouts contiguous in logical order: one memcpy (host), `cuMemcpyHtoD`,
    /// `DtoH` or `DtoD` (one GPU) of the elements.
    Bulk,
    /// Both arrays in host memory (the emulation's dmem too): the element loop.
    HostLoop,
    /// Both on one GPU: a remap kernel (`parray_compiler::kernels::remap_kernel`).
    DeviceRemap,
    /// Host to GPU, the destination contiguous: pack on the host, one transfer.
    PackAndUpload,
    /// Host to GPU, the destination not contiguous: upload the source's storage, remap on
    /// the device.
    UploadAndRemap,
    /// GPU to host, the source contiguous: one transfer, scatter on the host.
    DownloadAndScatter,
    /// GPU to host, the source not contiguous: remap on the device into a contiguous
    /// staging array, one transfer, scatter on the host.
    RemapAndDownload,
    /// One of the types is distributed over the ranks of an mpi array: the collective
    /// the two distributions imply (SPEC.md 3.12).
    Exchange(Collective),
    /// Between two GPUs, both contiguous: one peer copy (`cuMemcpyPeerAsync`).
    PeerBulk,
    /// Both layouts rows of the same width (a contiguous layout is rows of any width that
    /// divides it), at least [`MIN_ROW_BYTES`] wide, on one GPU or the host or across the
    /// bus between them: one 2-D strided copy (`cuMemcpy2DAsync`; a `memcpy` per row
    /// between host arrays). How a padded matrix (`cudaMallocPitch`'s rows) is filled.
    Strided(Strided),
    /// Between two GPUs, a layout not contiguous: on the source GPU a remap into a
    /// contiguous staging array (when the source is not contiguous), one peer copy, and on
    /// the destination GPU a remap out of a contiguous staging array (when the destination
    /// is not contiguous).
    PeerRemap,
    /// Either side a record array stored one array per field (SoA, SPEC 2.3), both in
    /// logical order, on the host or one GPU: per field one 2-D strided copy of a row per
    /// element (the field's bytes wide; the pitches the record's on a side of whole
    /// records and the field's on an SoA side).
    Fields,
    /// Either side SoA, the layouts not both in logical order (or the arrays on two
    /// GPUs): both arrays' elements to the host, the element loop there, the destination's
    /// elements back.
    ThroughHost,
}

/// Rows narrower than this many bytes go through the element loop or a remap kernel,
/// which move them as fast as a strided copy moves one row.
pub const MIN_ROW_BYTES: u64 = 64;

/// A 2-D strided copy of `height` rows of `width` elements (the two sides' widths): row
/// `r` from `src.start + r * src.pitch` to `dst.start + r * dst.pitch`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Strided {
    pub src: Rows,
    pub dst: Rows,
    pub height: u64,
}

impl Strided {
    /// The strided copy of `n` elements between the layouts `src` and `dst` (offset
    /// functions of one flat index), when both are rows of one width of at least
    /// `MIN_ROW_BYTES` and not both contiguous (one bulk copy).
    pub fn of(src: &Offset, dst: &Offset, n: u64, elem_bytes: u64) -> Option<Strided> {
        let (s, d) = (src.rows(n)?, dst.rows(n)?);
        let width = if s.width == n { d.width } else { s.width };
        let (src, dst) = (s.split(n, width)?, d.split(n, width)?);
        let contiguous = |r: Rows| r.start == 0 && r.pitch == r.width;
        (width * elem_bytes >= MIN_ROW_BYTES && !(contiguous(src) && contiguous(dst))).then_some(
            Strided {
                src,
                dst,
                height: n / width,
            },
        )
    }
}

/// Where an array of a copy is: host memory (the emulation's dmem included) or the memory
/// of GPU `n` (the driver's numbering).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Place {
    Host,
    Gpu(usize),
}

impl CopyPath {
    /// Whether the path runs a remap kernel on the device.
    pub fn remaps_on_device(self) -> bool {
        matches!(
            self,
            CopyPath::DeviceRemap
                | CopyPath::UploadAndRemap
                | CopyPath::RemapAndDownload
                | CopyPath::PeerRemap
        )
    }
}

impl fmt::Display for CopyPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CopyPath::Bulk => "one bulk copy (both contiguous in logical order)",
            CopyPath::HostLoop => "the element loop on the host",
            CopyPath::DeviceRemap => "a remap kernel on the device",
            CopyPath::PackAndUpload => "pack on the host, then one host-to-device transfer",
            CopyPath::UploadAndRemap => {
                "one host-to-device transfer of the source, then a remap kernel"
            }
            CopyPath::DownloadAndScatter => "one device-to-host transfer, then scatter on the host",
            CopyPath::RemapAndDownload => {
                "a remap kernel into a staging array, one device-to-host transfer, then scatter"
            }
            CopyPath::Exchange(c) => return write!(f, "{c} between the ranks"),
            CopyPath::Strided(s) => {
                return write!(
                    f,
                    "one 2-D strided copy of {} rows of {} elements (pitches {} and {})",
                    s.height, s.src.width, s.src.pitch, s.dst.pitch
                )
            }
            CopyPath::PeerBulk => "one peer copy between the two GPUs",
            CopyPath::Fields => {
                "per field, one 2-D strided copy of the field of every element (one array per field)"
            }
            CopyPath::ThroughHost => {
                "both arrays' elements to the host, the element loop there, then the destination's back"
            }
            CopyPath::PeerRemap => {
                "a remap into contiguous order on the source GPU (unless contiguous), one peer \
                 copy, then a remap on the destination GPU (unless contiguous)"
            }
        })
    }
}

impl fmt::Display for Collective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Collective::Local => f.write_str("no communication"),
            Collective::Scatter { root } => write!(f, "a scatter from rank {root}"),
            Collective::Gather { root } => write!(f, "a gather to rank {root}"),
            Collective::Broadcast { root } => write!(f, "a broadcast from rank {root}"),
            Collective::AllGather => f.write_str("an all-gather"),
            Collective::PointToPoint => f.write_str("point-to-point messages"),
            Collective::AllToAll => f.write_str("an all-to-all"),
        }
    }
}

/// The collective a `#copy` between distributed types became, as the types imply it:
/// which ranks send element `k` to which.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Collective {
    /// Every element stays on its rank (or the source is whole on every rank).
    Local,
    /// One rank holds the source and each rank receives its part.
    Scatter { root: usize },
    /// Each rank holds a part and one rank receives all of them.
    Gather { root: usize },
    /// One rank holds the source and every rank receives all of it.
    Broadcast { root: usize },
    /// Each rank holds a part and every rank receives all of them.
    AllGather,
    /// Each rank sends to one rank and receives from one rank.
    PointToPoint,
    /// Each rank sends parts of its part to several ranks.
    AllToAll,
}

/// The collective of the element counts `counts[s][d]` (from rank `s` to rank `d`), the
/// destination being whole on every rank (`replicated`) or distributed.
pub fn classify(counts: &[Vec<u64>], replicated: bool) -> Collective {
    let n = counts.len();
    let senders: Vec<usize> = (0..n)
        .filter(|s| counts[*s].iter().any(|c| *c > 0))
        .collect();
    let off_diagonal = (0..n).any(|s| (0..n).any(|d| s != d && counts[s][d] > 0));
    if !off_diagonal {
        return Collective::Local;
    }
    match (replicated, senders.as_slice()) {
        (true, [root]) => Collective::Broadcast { root: *root },
        (true, _) => Collective::AllGather,
        (false, [root]) => Collective::Scatter { root: *root },
        (false, _) => {
            let receivers: Vec<usize> = (0..n)
                .filter(|d| (0..n).any(|s| counts[s][*d] > 0))
                .collect();
            let fan_out = (0..n).all(|s| counts[s].iter().filter(|c| **c > 0).count() <= 1);
            let fan_in = (0..n).all(|d| (0..n).filter(|s| counts[*s][d] > 0).count() <= 1);
            match receivers.as_slice() {
                [root] => Collective::Gather { root: *root },
                _ if fan_out && fan_in => Collective::PointToPoint,
                _ => Collective::AllToAll,
            }
        }
    }
}

fn distribution<'m>(module: &'m Module, name: &str) -> Option<&'m Distribution> {
    module.type_def(name)?.distribution.as_ref()
}

/// Where element `k` of a type is: the rank holding it (`None`: every rank holds the
/// whole type) and its offset in that rank's array.
pub struct Placement {
    offsets: Program,
    part: Option<u64>,
}

impl Placement {
    /// The placement of the declared type `name`.
    pub fn of(module: &Module, name: &str) -> Result<Placement> {
        let (_, off) = flat_offsets(module, name)?;
        Ok(Placement {
            offsets: Program::new(&off.expr),
            part: distribution(module, name).map(|d| d.part),
        })
    }

    /// The rank holding element `k` (`None` when each holds all) and its offset there.
    pub fn at(&mut self, k: u64) -> (Option<usize>, usize) {
        let off = self.offsets.eval(&[k]);
        match self.part {
            Some(part) => (Some((off / part) as usize), (off % part) as usize),
            None => (None, off as usize),
        }
    }
}

/// The rank of an element of a natural type distributed by one dimension, as a digit of
/// its logical index `k`: the type's leaves are the digits of `k`, row-major, and its
/// other leaves are row-major within the part, so that element `k` is held by rank
/// `(k / below) % ranks * stride` at `(k / (ranks * below)) * below + k % below`, and the
/// elements a rank holds can be listed without looking at the others.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RankDigit {
    /// The size of the distributed dimension.
    pub ranks: u64,
    /// The product of the sizes of the leaves after it.
    pub below: u64,
    /// The weight of its digit in the rank (`[#Q_1]` of `mpi [2][2] Q`: 1; `[#Q_0]`: 2).
    pub stride: u64,
    /// The type's number of elements.
    pub size: u64,
}

impl RankDigit {
    /// The digit of the declared type `name`, when it is natural and distributed by one
    /// dimension (all on rank 0 for `[1#P]`); `None` otherwise.
    pub fn of(module: &Module, name: &str) -> Option<RankDigit> {
        let def = module.type_def(name)?;
        let part = def.distribution.as_ref()?.part;
        if !def.natural {
            return None;
        }
        let mut leaves = Vec::new();
        let mut stack = vec![def.root];
        while let Some(n) = stack.pop() {
            let node = module.node(n);
            match node.kind {
                NodeKind::Leaf { stride } => leaves.push((node.size, stride)),
                _ => stack.extend(node.children.iter().rev()),
            }
        }
        let size = module.size(def.root);
        let mut ranked = leaves
            .iter()
            .enumerate()
            .filter(|(_, (n, stride))| *n > 1 && *stride >= part);
        let (ranks, below, stride) = match (ranked.next(), ranked.next()) {
            (None, _) => (1, size, 1),
            (Some((at, (n, stride))), None) => {
                let below = leaves[at + 1..].iter().map(|(n, _)| n).product();
                (*n, below, stride / part)
            }
            (Some(_), Some(_)) => return None,
        };
        Some(RankDigit {
            ranks,
            below,
            stride,
            size,
        })
    }

    /// Elements `rank` holds: a part (`size / ranks`) where its digit is one of this
    /// dimension's, none elsewhere.
    pub fn part_of(&self, rank: usize) -> u64 {
        let rank = rank as u64;
        let held = rank.is_multiple_of(self.stride) && rank / self.stride < self.ranks;
        if held {
            self.size / self.ranks
        } else {
            0
        }
    }

    /// The element `k` at offset `j` of the part of the rank whose digit is `digit`.
    pub fn k(&self, digit: u64, j: u64) -> u64 {
        (j / self.below * self.ranks + digit) * self.below + j % self.below
    }

    /// The rank holding element `k`, and its offset there.
    pub fn at(&self, k: u64) -> (usize, usize) {
        let digit = k / self.below % self.ranks;
        let local = k / (self.ranks * self.below) * self.below + k % self.below;
        ((digit * self.stride) as usize, local as usize)
    }

    /// The elements `rank` holds, in increasing `k`, with their offsets there.
    pub fn held_by(&self, rank: usize) -> impl Iterator<Item = (u64, usize)> + '_ {
        let digit = rank as u64 / self.stride;
        (0..self.part_of(rank)).map(move |j| (self.k(digit, j), j as usize))
    }
}

/// A copy between two natural types distributed by one digit each over the same `ranks`
/// ranks (`stride` 1), the digits at different places of `k`: rank `s` sends rank `d` the
/// elements whose source digit is `s` and destination digit `d`, `block` of them, in
/// increasing `k`, and an element's place in its block is `k` without the two digits
/// ([`DigitExchange::in_block`]). Pack and unpack are then closed forms on both sides,
/// which the host path computes and the GPU kernels print
/// (`parray_compiler::kernels::exchange_kernel`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DigitExchange {
    pub src: RankDigit,
    pub dst: RankDigit,
}

impl DigitExchange {
    /// `None` unless both are digits of all the ranks (`ranks` ranks, stride 1), of as
    /// many elements, at different places, the more significant a multiple of the other's
    /// weight times the ranks (whole digits of `k`, as two different leaves are).
    pub fn of(src: RankDigit, dst: RankDigit) -> Option<DigitExchange> {
        let r = src.ranks;
        let (hi, lo) = (src.below.max(dst.below), src.below.min(dst.below));
        let fits = src.stride == 1
            && dst.stride == 1
            && dst.ranks == r
            && src.size == dst.size
            && r > 1
            && hi != lo
            && hi.is_multiple_of(lo * r)
            && src.size.is_multiple_of(hi * r);
        fits.then_some(DigitExchange { src, dst })
    }

    /// Elements each rank sends each rank.
    pub fn block(&self) -> u64 {
        self.src.size / (self.src.ranks * self.src.ranks)
    }

    /// The place of element `k` in its block: `k` without the two rank digits.
    pub fn in_block(&self, k: u64) -> u64 {
        let r = self.src.ranks;
        let (hi, lo) = (
            self.src.below.max(self.dst.below),
            self.src.below.min(self.dst.below),
        );
        let mid = hi / (r * lo);
        (k / (r * hi) * mid + k / (r * lo) % mid) * lo + k % lo
    }

    /// Pack on rank `me`: element `j` of its part of the source goes to rank `d`, at
    /// `d * block + place` of the send buffer.
    pub fn pack(&self, me: u64, j: u64) -> u64 {
        let k = self.src.k(me, j);
        (k / self.dst.below % self.dst.ranks) * self.block() + self.in_block(k)
    }

    /// Unpack on rank `me`: element `j` of its part of the destination comes from
    /// `s * block + place` of the receive buffer (rank `s`'s block).
    pub fn unpack(&self, me: u64, j: u64) -> u64 {
        let k = self.dst.k(me, j);
        (k / self.src.below % self.src.ranks) * self.block() + self.in_block(k)
    }

    /// The length of a run: a block is [`DigitExchange::runs`] runs of this many elements,
    /// each consecutive in the sender's part of the source and in the receiver's part of
    /// the destination (the digits of `k` below the lower rank digit).
    pub fn run(&self) -> u64 {
        self.src.below.min(self.dst.below)
    }

    /// The runs of one block.
    pub fn runs(&self) -> u64 {
        self.block() / self.run()
    }

    /// Run `i` of the block rank `s` sends rank `d`: the offset of its first element in
    /// `s`'s part of the source and in `d`'s part of the destination.
    ///
    /// @post for `q < run()`: `pack(s, from + q) == d * block() + i * run() + q` and
    /// `unpack(d, to + q) == s * block() + i * run() + q`, so that moving every run of
    /// every block from part to part is the copy, without a pack or an unpack.
    pub fn run_at(&self, (s, d): (u64, u64), i: u64) -> (u64, u64) {
        let r = self.src.ranks;
        let (lo, mid) = (
            self.run(),
            self.src.below.max(self.dst.below) / (r * self.run()),
        );
        // `k` is [top][hi digit][mid][lo digit][run], row-major (see `in_block`).
        let (hi_digit, lo_digit) = match self.src.below > self.dst.below {
            true => (s, d),
            false => (d, s),
        };
        let (top, m) = (i / mid, i % mid);
        let k = (((top * r + hi_digit) * mid + m) * r + lo_digit) * lo;
        (self.src.at(k).1 as u64, self.dst.at(k).1 as u64)
    }
}

/// The collective of a copy between `src` and `dst`, one of them distributed: the element
/// counts from each rank to each, as the two placements give them, [`classify`]d. A
/// source whole on every rank needs no communication (each rank takes its part of the
/// destination from its own copy).
pub fn exchange(
    (src_module, src): (&Module, &str),
    (dst_module, dst): (&Module, &str),
) -> Result<Collective> {
    if distribution(src_module, src).is_none() {
        return Ok(Collective::Local);
    }
    let digits = (
        RankDigit::of(src_module, src),
        RankDigit::of(dst_module, dst),
    );
    let replicated = distribution(dst_module, dst).is_none();
    if let Some(c) = by_digits(digits, replicated) {
        return Ok(c);
    }
    let counts = exchange_counts((src_module, src), (dst_module, dst))?;
    Ok(classify(&counts, replicated))
}

/// The elements a copy from `src` to `dst` sends from each rank to each, `counts[s][d]`,
/// by walking every element through both placements.
pub fn exchange_counts(
    (src_module, src): (&Module, &str),
    (dst_module, dst): (&Module, &str),
) -> Result<Vec<Vec<u64>>> {
    let ranks = distribution(src_module, src)
        .or(distribution(dst_module, dst))
        .map_or(1, |d| d.ranks as usize);
    let (mut s, mut d) = (
        Placement::of(src_module, src)?,
        Placement::of(dst_module, dst)?,
    );
    let size = src_module.size(src_module.lookup(src).map_err(|_| unknown(src))?.node);
    let mut counts = vec![vec![0u64; ranks]; ranks];
    for k in 0..size {
        let (Some(from), _) = s.at(k) else { continue };
        match d.at(k).0 {
            Some(to) => counts[from][to] += 1,
            None => counts[from].iter_mut().for_each(|c| *c += 1),
        }
    }
    Ok(counts)
}

/// The collective of two rank digits (the destination's `None` when it is whole on every
/// rank) without walking the elements, where it follows from them: what [`classify`]
/// gives the counts they imply. `None` where the walk must decide.
fn by_digits(
    (src, dst): (Option<RankDigit>, Option<RankDigit>),
    replicated: bool,
) -> Option<Collective> {
    let src = src?;
    let on_zero = |d: &RankDigit| d.ranks == 1;
    if replicated {
        return Some(if on_zero(&src) {
            Collective::Broadcast { root: 0 }
        } else {
            Collective::AllGather
        });
    }
    let dst = dst?;
    let same_place = src.ranks == dst.ranks && src.stride == dst.stride && src.below == dst.below;
    match (on_zero(&src), on_zero(&dst)) {
        (true, true) => Some(Collective::Local),
        (true, false) => Some(Collective::Scatter { root: 0 }),
        (false, true) => Some(Collective::Gather { root: 0 }),
        _ if same_place => Some(Collective::Local),
        _ => DigitExchange::of(src, dst).map(|_| Collective::AllToAll),
    }
}

fn unknown(name: &str) -> crate::Error {
    crate::Error::new(
        crate::ErrorKind::Unknown,
        crate::TextSpan::default(),
        format!("unknown type `{name}`"),
    )
}

/// The number of elements of the type (or dimension) `name` and its offset function of
/// one flat index `k`.
pub fn flat_offsets(module: &Module, name: &str) -> Result<(u64, Offset)> {
    let dim = module.resolve(&crate::ast::Ident {
        name: name.to_string(),
        span: crate::TextSpan::default(),
    })?;
    Ok((
        module.size(dim.node),
        offset_function(module, dim.node, "k")?,
    ))
}

/// Whether the offset function of `n` elements puts element `k` at offset `k`, for every
/// `k` (contiguous in logical order).
pub fn in_order(n: u64, off: &Offset) -> bool {
    off.expr.as_var().is_some() || (n == 1 && off.as_const() == Some(0))
}

/// The path of a copy from an array of `src` to one of `dst`; each side is its type (in
/// its module) and where the array is.
pub fn plan(
    (src_module, src, src_at): (&Module, &str, Place),
    (dst_module, dst, dst_at): (&Module, &str, Place),
) -> Result<CopyPath> {
    use Place::{Gpu, Host};
    for (module, name) in [(src_module, src), (dst_module, dst)] {
        if let Some(d) = distribution(module, name).filter(|d| d.holders == Holders::Threads) {
            return Err(crate::Error::new(
                crate::ErrorKind::Structure,
                crate::TextSpan::default(),
                format!(
                    "`{name}` is a fragment, distributed over the threads of `{}`'s block: a copy to or from a fragment (ldmatrix, stmatrix) is not there yet",
                    d.over
                ),
            ));
        }
    }
    if distribution(src_module, src).is_some() || distribution(dst_module, dst).is_some() {
        return exchange((src_module, src), (dst_module, dst)).map(CopyPath::Exchange);
    }
    let ((n, s_off), (_, d_off)) = (
        flat_offsets(src_module, src)?,
        flat_offsets(dst_module, dst)?,
    );
    let (s, d) = (in_order(n, &s_off), in_order(n, &d_off));
    let strided = || match src_module.type_def(src).map(|t| &t.class) {
        Some(TypeClass::Data { elem, .. }) => Strided::of(&s_off, &d_off, n, elem.size_bytes()),
        _ => None,
    };
    let between_gpus = matches!((src_at, dst_at), (Gpu(a), Gpu(b)) if a != b);
    let soa = |m: &Module, name: &str| {
        matches!(
            m.type_def(name).map(|t| &t.class),
            Some(TypeClass::Data { soa: true, .. })
        )
    };
    if soa(src_module, src) || soa(dst_module, dst) {
        return Ok(match s && d && !between_gpus {
            true => CopyPath::Fields,
            false => CopyPath::ThroughHost,
        });
    }
    if !(between_gpus || s && d) {
        if let Some(rows) = strided() {
            return Ok(CopyPath::Strided(rows));
        }
    }
    Ok(match (src_at, dst_at) {
        (Gpu(a), Gpu(b)) if a != b && s && d => CopyPath::PeerBulk,
        (Gpu(a), Gpu(b)) if a != b => CopyPath::PeerRemap,
        _ if s && d => CopyPath::Bulk,
        (Host, Host) => CopyPath::HostLoop,
        (Gpu(_), Gpu(_)) => CopyPath::DeviceRemap,
        (Host, Gpu(_)) if d => CopyPath::PackAndUpload,
        (Host, Gpu(_)) => CopyPath::UploadAndRemap,
        (Gpu(_), Host) if s => CopyPath::DownloadAndScatter,
        (Gpu(_), Host) => CopyPath::RemapAndDownload,
    })
}
