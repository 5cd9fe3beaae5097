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

// A record inside a record is one (its companion carries its fields), named by its name:
// not by a path, not a struct that is no record. Its arrays keep whole records: `soa` of
// it is refused.
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

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct ByPath {
    inner: self::Inner,
}

#[derive(Clone, Copy, Default)]
#[repr(C)]
pub struct Plain {
    x: f32,
}

#[derive(Clone, Copy, Default, parray::Record)]
#[repr(C)]
pub struct HoldsPlain {
    plain: Plain,
}

parray! {
    dmem Outer [16] WHOLE;
    dmem soa Outer [16] FIELDS;
}

fn main() {}
