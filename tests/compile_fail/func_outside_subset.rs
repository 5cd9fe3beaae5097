// A function computes on its parameters and locals: arrays, forms, barriers and host
// variables belong to the detour body; a parameter is a number or a vector.
#[parray::func]
fn sum(a: &[f32], n: usize) -> f32 {
    let mut s = 0.0f32;
    for i in 0..n {
        s += SCALE * i as f32;
    }
    s
}

#[parray::func]
fn half(x: f32) -> f32 {
    x * 0.5;
}

const SCALE: f32 = 2.0;

fn main() {}
