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
        }
    }

    /// The CUDA C (and HIP) type name.
    pub fn c_name(self) -> &'static str {
        match self {
            ElemType::UChar => "unsigned char",
            ElemType::Half => "__half",
            ElemType::Bf16 => "__nv_bfloat16",
            other => other.keyword(),
        }
    }

    pub fn from_keyword(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|e| e.keyword() == s)
    }

    /// Size of one element in bytes (as in CUDA C on a 64-bit host).
    pub fn size_bytes(self) -> u64 {
        match self {
            ElemType::Char | ElemType::UChar => 1,
            ElemType::Half | ElemType::Bf16 => 2,
            ElemType::Float | ElemType::Int | ElemType::Unsigned => 4,
            ElemType::Double | ElemType::Long | ElemType::Float2 | ElemType::Int2 => 8,
            ElemType::Float4 | ElemType::Double2 | ElemType::Int4 => 16,
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
    pub name: String,
}

impl fmt::Display for Param {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let star = if self.pointer { "*" } else { "" };
        write!(f, "{}{} {}", self.elem, star, self.name)
    }
}
