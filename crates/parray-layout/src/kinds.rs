//! The closed vocabularies of the type language: memory kinds, element types, thread kinds.

use std::fmt;

/// Where a type's storage lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MemKind {
    /// Ordinary (pageable) host memory.
    Paged,
    /// Page-locked host memory.
    Pinned,
    /// GPU global memory.
    Dmem,
    /// GPU constant memory (`__constant__`): global memory on the host's side, which each
    /// cuda launch copies into the kernel's constant bank, read-only in the kernel.
    Cmem,
    /// GPU shared memory, one array per block.
    Smem,
    /// GPU registers, one array per thread.
    Rmem,
}

impl MemKind {
    pub const ALL: [MemKind; 6] = [
        MemKind::Paged,
        MemKind::Pinned,
        MemKind::Dmem,
        MemKind::Cmem,
        MemKind::Smem,
        MemKind::Rmem,
    ];

    pub fn keyword(self) -> &'static str {
        match self {
            MemKind::Paged => "paged",
            MemKind::Pinned => "pinned",
            MemKind::Dmem => "dmem",
            MemKind::Cmem => "cmem",
            MemKind::Smem => "smem",
            MemKind::Rmem => "rmem",
        }
    }

    pub fn from_keyword(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|m| m.keyword() == s)
    }

    /// True for the kinds that live on the host and can be created by host code.
    pub fn is_host(self) -> bool {
        matches!(self, MemKind::Paged | MemKind::Pinned)
    }

    /// Where each field's array of an SoA array of this kind starts (SPEC 2.3): a multiple
    /// of [`SOA_ALIGN`] in global and host memory, of 16 bytes (every field's alignment)
    /// in a block's shared memory, which is scarce and has no coalescing to gain.
    pub const fn soa_align(self) -> u64 {
        match self {
            MemKind::Smem => 16,
            _ => SOA_ALIGN,
        }
    }

    /// True for the kinds whose arrays are allocated in a GPU's global memory (or, under
    /// the emulation, host memory standing for it): dmem, and cmem.
    pub fn on_device(self) -> bool {
        matches!(self, MemKind::Dmem | MemKind::Cmem)
    }
}

impl fmt::Display for MemKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The element type of a data type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElemType {
    Float,
    Double,
    Int,
    Unsigned,
    Char,
    Long,
    Float2,
    Float4,
    Double2,
    Int2,
    Int4,
    /// `uchar`: an unsigned byte (CUDA's `unsigned char`, Rust's `u8`).
    UChar,
    /// `half`: IEEE binary16 (CUDA's `__half`, Rust's `half::f16`).
    Half,
    /// `bf16`: bfloat16, the upper half of an `f32` (CUDA's `__nv_bfloat16`, Rust's
    /// `half::bf16`).
    Bf16,
    /// Vectors of 2, 4 and 8 `half`s and `bf16`s, aligned to their 4, 8 or 16 bytes:
    /// what a `#copy` moves 16-bit elements by (no type-language keyword; a C struct of
    /// the elements, so that the move reads no array through a type of other elements).
    Half2,
    Half4,
    Half8,
    Bf16x2,
    Bf16x4,
    Bf16x8,
    /// `mbarrier`: a Hopper shared-memory barrier of 8 bytes (SPEC 3.9, "TMA copies"),
    /// the element of `smem mbarrier [S] FULL;`, touched by no access but the forms
    /// `#mbarrier init`, `#copy async .. on`, `#wait .. parity` and `#mbarrier arrive`.
    /// Not in [`ElemType::ALL`] (no number, no kernel parameter, no record field).
    Mbarrier,
    /// A record: a `#[repr(C)]` struct of other elements (`#[derive(parray::Record)]`).
    Record(Record),
}

/// Where each field's array starts in an SoA array in global (or host) memory: a multiple
/// of 256 bytes, so that a warp's accesses of one field coalesce and every field's pointer
/// is aligned for its type.
pub const SOA_ALIGN: u64 = 256;

/// A record element type: named fields of other element types, laid out as C lays out a
/// struct (and Rust's `#[repr(C)]`), without padding. Interned: two records are equal
/// when their names and fields are, and a record's description lives for the program.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct Record(&'static RecordDef);

/// What a [`Record`] is made of.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct RecordDef {
    /// The struct's name, in Rust and in the generated C alike.
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// One field of a record.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct Field {
    pub name: &'static str,
    pub elem: ElemType,
}

impl Record {
    /// The record a derive describes in a `const` (its description is `'static` already).
    pub const fn new(def: &'static RecordDef) -> Record {
        Record(def)
    }

    /// The record with this name and these fields, described once per process (a parser
    /// meets the same record in every macro that names it).
    pub fn intern(name: &str, fields: Vec<(String, ElemType)>) -> Record {
        use std::collections::HashSet;
        use std::sync::{Mutex, OnceLock};
        static SEEN: OnceLock<Mutex<HashSet<&'static RecordDef>>> = OnceLock::new();
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        let def = RecordDef {
            name: leak(name.to_string()),
            fields: Box::leak(
                fields
                    .into_iter()
                    .map(|(name, elem)| Field {
                        name: leak(name),
                        elem,
                    })
                    .collect(),
            ),
        };
        let mut seen = SEEN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if let Some(known) = seen.get(&def) {
            return Record(known);
        }
        let def: &'static RecordDef = Box::leak(Box::new(def));
        seen.insert(def);
        Record(def)
    }

    /// A record known so far only by its name (no fields): what the parser makes of a
    /// name before the program's `record` item of that name is seen.
    pub fn named(name: &str) -> Record {
        Record::intern(name, Vec::new())
    }

    pub const fn def(self) -> &'static RecordDef {
        self.0
    }

    pub fn name(self) -> &'static str {
        self.0.name
    }

    pub fn field(self, name: &str) -> Option<(usize, &'static Field)> {
        self.0
            .fields
            .iter()
            .enumerate()
            .find(|(_, f)| f.name == name)
    }

    /// Bytes, as C lays the struct out: each field at the next multiple of its alignment,
    /// the whole rounded up to the largest alignment.
    pub const fn size_bytes(self) -> u64 {
        let (mut at, mut i) = (0u64, 0);
        while i < self.0.fields.len() {
            let f = &self.0.fields[i];
            at = at.next_multiple_of(f.elem.align_bytes()) + f.elem.size_bytes();
            i += 1;
        }
        at.next_multiple_of(self.align_bytes())
    }

    pub const fn align_bytes(self) -> u64 {
        let (mut align, mut i) = (1, 0);
        while i < self.0.fields.len() {
            let a = self.0.fields[i].elem.align_bytes();
            if a > align {
                align = a;
            }
            i += 1;
        }
        align
    }

    /// The field after which C leaves a gap (before the next field, or at the end), if
    /// any: a record has none (`#[derive(parray::Record)]` refuses one).
    pub fn gap_after(self) -> Option<usize> {
        let fields = self.0.fields;
        let mut at = 0;
        for (k, f) in fields.iter().enumerate() {
            at += f.elem.size_bytes();
            let next = fields
                .get(k + 1)
                .map_or(self.align_bytes(), |n| n.elem.align_bytes());
            if !at.is_multiple_of(next) {
                return Some(k);
            }
        }
        None
    }

    /// The byte offset of field `k` in the record, as C lays it out.
    pub const fn field_offset(self, k: usize) -> u64 {
        let (mut at, mut i) = (0u64, 0);
        while i <= k {
            let f = &self.0.fields[i];
            at = at.next_multiple_of(f.elem.align_bytes());
            if i == k {
                break;
            }
            at += f.elem.size_bytes();
            i += 1;
        }
        at
    }

    /// Where field `k`'s array starts, in bytes, in the storage of `extent` records kept
    /// one array per field (SoA, SPEC 2.3): the fields' arrays in order, each starting at
    /// a multiple of `align` (a power of two; [`SOA_ALIGN`] in global memory), so that
    /// field `k` of record `i` is at `soa_start(k, extent, align) + i * size_k`.
    pub const fn soa_start(self, k: usize, extent: u64, align: u64) -> u64 {
        let (mut at, mut i) = (0u64, 0);
        while i < k {
            at = (at + extent * self.0.fields[i].elem.size_bytes()).next_multiple_of(align);
            i += 1;
        }
        at
    }

    /// The bytes of the SoA storage of `extent` records (see [`Record::soa_start`]): up to
    /// the end of the last field's array.
    pub const fn soa_bytes(self, extent: u64, align: u64) -> u64 {
        let last = self.0.fields.len() - 1;
        self.soa_start(last, extent, align) + extent * self.0.fields[last].elem.size_bytes()
    }

    /// The sum of the fields' bytes: the size when the struct has no padding.
    pub const fn field_bytes(self) -> u64 {
        let (mut sum, mut i) = (0, 0);
        while i < self.0.fields.len() {
            sum += self.0.fields[i].elem.size_bytes();
            i += 1;
        }
        sum
    }

    /// The declaration in the type language: `record P { float2 pos; int id; }`.
    pub fn declaration(self) -> String {
        let fields: String = self
            .0
            .fields
            .iter()
            .map(|f| format!(" {} {};", f.elem, f.name))
            .collect();
        format!("record {} {{{fields} }}", self.0.name)
    }
}

impl fmt::Debug for Record {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0.name)
    }
}

impl ElemType {
    pub const ALL: [ElemType; 14] = [
        ElemType::Float,
        ElemType::Double,
        ElemType::Int,
        ElemType::Unsigned,
        ElemType::Char,
        ElemType::Long,
        ElemType::Float2,
        ElemType::Float4,
        ElemType::Double2,
        ElemType::Int2,
        ElemType::Int4,
        ElemType::UChar,
        ElemType::Half,
        ElemType::Bf16,
    ];

    /// The vectors a `#copy` moves 16-bit elements by, which no program names.
    pub const MOVES: [ElemType; 6] = [
        ElemType::Half2,
        ElemType::Half4,
        ElemType::Half8,
        ElemType::Bf16x2,
        ElemType::Bf16x4,
        ElemType::Bf16x8,
    ];

    /// The keyword in the type language, which is also the CUDA C type name but for
    /// `uchar`, `half` and `bf16` ([`ElemType::c_name`]).
    pub fn keyword(self) -> &'static str {
        match self {
            ElemType::Float => "float",
            ElemType::Double => "double",
            ElemType::Int => "int",
            ElemType::Unsigned => "unsigned",
            ElemType::Char => "char",
            ElemType::Long => "long",
            ElemType::Float2 => "float2",
            ElemType::Float4 => "float4",
            ElemType::Double2 => "double2",
            ElemType::Int2 => "int2",
            ElemType::Int4 => "int4",
            ElemType::UChar => "uchar",
            ElemType::Half => "half",
            ElemType::Bf16 => "bf16",
            ElemType::Half2 => "half2",
            ElemType::Half4 => "half4",
            ElemType::Half8 => "half8",
            ElemType::Bf16x2 => "bf16x2",
            ElemType::Bf16x4 => "bf16x4",
            ElemType::Bf16x8 => "bf16x8",
            ElemType::Mbarrier => "mbarrier",
            ElemType::Record(r) => r.name(),
        }
    }

    /// The CUDA C (and HIP) type name.
    pub fn c_name(self) -> &'static str {
        match self {
            ElemType::UChar => "unsigned char",
            ElemType::Half => "__half",
            ElemType::Bf16 => "__nv_bfloat16",
            ElemType::Half2 => "parray_half2",
            ElemType::Half4 => "parray_half4",
            ElemType::Half8 => "parray_half8",
            ElemType::Bf16x2 => "parray_bf16x2",
            ElemType::Bf16x4 => "parray_bf16x4",
            ElemType::Bf16x8 => "parray_bf16x8",
            ElemType::Mbarrier => "unsigned long long",
            other => other.keyword(),
        }
    }

    pub fn from_keyword(s: &str) -> Option<Self> {
        if s == "mbarrier" {
            return Some(ElemType::Mbarrier);
        }
        Self::ALL.into_iter().find(|e| e.keyword() == s)
    }

    /// Size of one element in bytes (as in CUDA C on a 64-bit host).
    pub const fn size_bytes(self) -> u64 {
        match self {
            ElemType::Char | ElemType::UChar => 1,
            ElemType::Half | ElemType::Bf16 => 2,
            ElemType::Float | ElemType::Int | ElemType::Unsigned => 4,
            ElemType::Half2 | ElemType::Bf16x2 => 4,
            ElemType::Double | ElemType::Long | ElemType::Float2 | ElemType::Int2 => 8,
            ElemType::Mbarrier => 8,
            ElemType::Half4 | ElemType::Bf16x4 => 8,
            ElemType::Float4 | ElemType::Double2 | ElemType::Int4 => 16,
            ElemType::Half8 | ElemType::Bf16x8 => 16,
            ElemType::Record(r) => r.size_bytes(),
        }
    }

    /// The word the CPU back ends read and write an element of this type by (its
    /// alignment, 8 bytes at most; a record's is its fields' smallest, so that writing one
    /// field moves whole words of the same size as reading the element does).
    pub const fn word_bytes(self) -> u64 {
        match self {
            ElemType::Record(r) => {
                let (mut word, mut i) = (8, 0);
                while i < r.0.fields.len() {
                    let w = r.0.fields[i].elem.word_bytes();
                    if w < word {
                        word = w;
                    }
                    i += 1;
                }
                word
            }
            other if other.size_bytes() < 8 => other.size_bytes(),
            _ => 8,
        }
    }

    /// Alignment in bytes (CUDA's: a vector is aligned to its size).
    pub const fn align_bytes(self) -> u64 {
        match self {
            ElemType::Record(r) => r.align_bytes(),
            other => other.size_bytes(),
        }
    }

    /// The Rust type that represents one element (`parray_runtime` defines the vector types).
    pub fn rust_type(self) -> &'static str {
        match self {
            ElemType::Float => "f32",
            ElemType::Double => "f64",
            ElemType::Int => "i32",
            ElemType::Unsigned => "u32",
            ElemType::Char => "i8",
            ElemType::Long => "i64",
            ElemType::Float2 => "Float2",
            ElemType::Float4 => "Float4",
            ElemType::Double2 => "Double2",
            ElemType::Int2 => "Int2",
            ElemType::Int4 => "Int4",
            ElemType::UChar => "u8",
            ElemType::Half => "f16",
            ElemType::Bf16 => "bf16",
            ElemType::Half2 => "Half2",
            ElemType::Half4 => "Half4",
            ElemType::Half8 => "Half8",
            ElemType::Bf16x2 => "Bf16x2",
            ElemType::Bf16x4 => "Bf16x4",
            ElemType::Bf16x8 => "Bf16x8",
            // The emulation's storage of a barrier's 8 bytes; its state is the launch's
            // mbarrier model (`parray_runtime::mem::mbarrier`).
            ElemType::Mbarrier => "Mbarrier",
            ElemType::Record(r) => r.name(),
        }
    }
}

impl fmt::Display for ElemType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.keyword())
    }
}

/// The kind of threads a thread-array type describes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ThreadKind {
    /// CPU threads.
    Pthd,
    /// MPI processes.
    Mpi,
    /// A CUDA grid; the parameters are the generated kernel's signature.
    Cuda(Vec<Param>),
}

impl ThreadKind {
    pub fn keyword(&self) -> &'static str {
        match self {
            ThreadKind::Pthd => "pthd",
            ThreadKind::Mpi => "mpi",
            ThreadKind::Cuda(_) => "cuda",
        }
    }
}

/// One parameter of a `cuda(...)` thread array: `float* a`, `int n`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Param {
    pub elem: ElemType,
    pub pointer: bool,
    /// `soa Particle* q`: the pointer's records are stored one array per field (SPEC 2.3).
    pub soa: bool,
    pub name: String,
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let soa = if self.soa { "soa " } else { "" };
        let star = if self.pointer { "*" } else { "" };
        write!(f, "{soa}{}{star} {}", self.elem, self.name)
    }
}
