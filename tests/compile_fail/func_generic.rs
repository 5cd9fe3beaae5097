// A generic function is checked as Rust checks it: a literal or another type is not its
// type parameter; its bound is `parray::Num` alone; its calls give it number types; it
// does not recurse; the math methods need `parray::Float`.
use parray::prelude::*;

#[parray::func]
fn half<T: parray::Num>(x: T) -> T {
    x * 0.5
}

#[parray::func]
fn widen<T: parray::Num>(x: T) -> f32 {
    x + 1.0f32
}

#[parray::func]
fn copied<T: Copy>(x: T) -> T {
    x
}

#[parray::func]
fn sq<T: parray::Num>(x: T) -> T {
    x * x
}

#[parray::func]
fn down<T: parray::Num>(x: T, n: u32) -> T {
    if n == 0 {
        x
    } else {
        down(x * x, n - 1)
    }
}

parray! {
    dmem float [64] V;
    cuda(float* v) [2][32] CT;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        let w = sq(Float2::new(1.0, 2.0));
        v[$V[$tid$]$] = sq(true) as f32 + sq(2.0f32, 3.0f32);
        v[$V[$tid$]$] = halved(2i32) as f32;
    })?;
    Ok(())
}

#[parray::func]
fn root<T: parray::Num>(x: T) -> T {
    x.sqrt()
}

#[parray::func]
fn shifted<T: parray::Float>(x: T) -> T {
    x - 1.0
}

#[parray::func]
fn halved<T: parray::Float>(x: T) -> T {
    T::from_f32(0.5) * x
}

// `parray::Element` moves values alone: no operators, conversions or number functions;
// its calls give it elements (not `usize`).
#[parray::func]
fn summed<T: parray::Element>(a: T, b: T) -> T {
    a + b
}

#[parray::func]
fn from_element<T: parray::Element>(x: f32) -> T {
    T::from_f32(x)
}

#[parray::func]
fn squared<T: parray::Element>(x: T) -> T {
    sq(x)
}

#[parray::func]
fn kept<T: parray::Element>(x: T) -> T {
    x
}

#[allow(dead_code)]
fn elements() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(CT(&mut v) {
        let t = $tid$;
        v[$V[t]$] = kept(t) as f32;
    })?;
    Ok(())
}
