// A turbofish gives a generic function's type parameters (`sq::<f32>(x)`): all of them,
// each a number type, a type parameter in scope or `_`; a plain function takes none. The
// type given is checked as an argument's type would be, against the bound and against the
// arguments.
use parray::prelude::*;

#[parray::func]
fn sq<T: parray::Num>(x: T) -> T {
    x * x
}

#[parray::func]
fn halved<T: parray::Float>(x: T) -> T {
    T::from_f32(0.5) * x
}

#[parray::func]
fn cube(x: f32) -> f32 {
    x * x * x
}

// `T: parray::Num` is not a `parray::Float`: ours, then rustc's.
#[parray::func]
fn halved_num<T: parray::Num>(x: T) -> T {
    halved::<T>(x)
}

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    // Errors of the lowering: how many, and what.
    detour!(CT(&mut v) {
        let t = $tid$;
        v[t] = sq::<f32, f32>(1.0) + cube::<f32>(2.0) + sq::<Vec<f32>>(3.0);
    })?;
    // Errors of the type check: the type given against the bound and the argument.
    detour!(CT(&mut v) {
        let t = $tid$;
        v[t] = sq::<f32>(2i32) + halved::<i32>(1) as f32;
        let w = sq::<Float2>(Float2::new(1.0, 2.0));
    })?;
    Ok(())
}
