//! The passes, each returning the typed result the next one needs: [`check`] makes a
//! `Typed` body (its half-precision
//! arithmetic written in `f32` by `widen`), [`bounds`] a `Proved` one.

pub mod bounds;
pub mod check;
mod linear;
mod sizes;
mod widen;
