// A record is a #[repr(C)] struct of element types without padding: each mistake is an
// error at the token, saying how to fix it.
use parray::prelude::*;

#[derive(Clone, Copy, Default, parray::Record)]
pub struct NotC {
    x: f32,
}

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Padded {
    tag: u8,
    value: f32,
}

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct NotElements {
    x: f32,
    name: usize,
}

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Generic<T> {
    x: T,
}

// A record inside a record: not yet.
#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Inner {
    x: f32,
    y: f32,
}

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct Outer {
    mass: f32,
    inner: Inner,
}

fn main() {}
