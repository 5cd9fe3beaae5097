use parray::prelude::*;

parray! {
    dmem float [64] D;
    cuda(float* d) [1][64] G;
}

#[parray::func]
fn warp_sum(mut v: f32) -> f32 {
    for k in 0..5 {
        v += shfl_down(v, 16u32 >> k);
    }
    v
}

// Inlined at each call: no `return` out of the body, no turbofish (its arguments type it).
#[parray::func]
fn warp_sum_of<T: parray::Num>(v: T) -> T {
    v + shfl_down(v, 1)
}

#[parray::func]
fn warp_store(p: parray::PtrMut<'_, f32>, v: f32) {
    let s = warp_sum(v);
    if s < 0.0 {
        return;
    }
    p[0] = s;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let x = d[$D[$tid$]$];
        if warp_sum(x) > 0.0 {
            d[$D[$tid$]$] = 1.0;
        }
        let y = 2.0 * warp_sum(x);
        let z = warp_sum(warp_sum(x));
        let u = warp_sum_of::<f32>(x);
        d[$D[$tid$]$] = x + y + z + u;
    })
}
