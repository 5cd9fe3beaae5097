// Conversions of a generic function: `T::from_i32` takes an `i32`, `T::from_f64` one
// `f64`, `to_f32` no argument.

#[parray::func]
fn from_float<T: parray::Num>(x: f32) -> T {
    T::from_i32(x)
}

#[parray::func]
fn to_float<T: parray::Num>(x: T) -> f32 {
    x.to_f32(2)
}

#[parray::func]
fn from_nothing<T: parray::Num>() -> T {
    T::from_f64()
}

fn main() {}
