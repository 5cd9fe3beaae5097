//! The passes, each returning the typed result the next one needs: [`check`] makes a
//! `Typed` body (its half-precision arithmetic written in `f32` by `widen`, the field
//! stores of one element side by side by `stores`), [`bounds`] a `Proved` one.

pub mod bounds;
pub mod check;
mod linear;
mod sizes;
mod stores;
mod widen;
