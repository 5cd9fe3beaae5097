//! The back ends; each takes a `&Proved` body.

pub mod c;
#[cfg(feature = "rust")]
pub mod rust;
