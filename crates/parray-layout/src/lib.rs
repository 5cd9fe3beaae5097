//! Parray's type language: declarations, dimension trees, the exact offset algebra, grids
//! and the copy planner. It links no token crate: a program that only uses types and the
//! runtime needs nothing else.
//!
//! The pipeline is naga-shaped: [`parser`] turns text into an [`ast::Program`]; [`tree`]
//! resolves it into a [`Module`] of dimension trees (validation included); [`offsets`]
//! compiles index expressions into the simplified IR of [`expr`]; the emitters print it.

// Library code reports through errors, not stdout or stderr.
#![warn(clippy::print_stdout, clippy::print_stderr)]

pub mod ast;
mod build;
pub mod copy;
pub mod emit_cuda;
pub mod error;
pub mod eval;
pub mod explain;
pub mod expr;
pub mod grid;
pub mod interp;
pub mod kinds;
pub mod offsets;
pub mod parser;
pub mod path;
mod rules;
pub mod swizzle;
pub mod symbolic;
pub mod tma;
pub mod tree;

pub use error::{Error, ErrorKind, Result, TextSpan};
pub use expr::{LinearForm, VarId, Vars};
pub use grid::{thread_index, CudaGrid, GridError, HwIndex, ThreadIndex};
pub use kinds::{ElemType, Field, MemKind, Param, Record, RecordDef, ThreadKind};
pub use offsets::{
    common_vector, compile, compile_with, index_function, indexed_dimensions, offset_function,
    offset_function_by, Offset, Rows,
};
pub use parser::{
    as_written, parse_index_expr, parse_program, parse_program_after, parse_program_reporting_all,
};
pub use path::DimPath;
pub use swizzle::Swizzle;
pub use tree::{DimRef, Distribution, Holders, Module, Node, NodeId, NodeKind, TypeClass, TypeDef};
