//! The passes, each returning the typed result the next one needs: [`check`] makes a
//! `Typed` body, [`bounds`] a `Proved` one.

pub mod bounds;
pub mod check;
