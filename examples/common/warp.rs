//! Warp reductions, written once as collective functions of the body language (SPEC 3.5,
//! "Functions"): a cuda body inlines each at its call, every lane of the warp reaching it.

#![allow(dead_code)] // each example that includes it calls what it needs

/// The sum of the 32 lanes' `v`, in lane 0 of each warp.
#[parray::func]
pub fn warp_sum(mut v: f32) -> f32 {
    for k in 0..5 {
        v += shfl_down(v, 16u32 >> k);
    }
    v
}

/// The maximum of the 32 lanes' `m`, in lane 0 of each warp.
#[parray::func]
pub fn warp_max(mut m: f32) -> f32 {
    for k in 0..5 {
        m = m.max(shfl_down(m, 16u32 >> k));
    }
    m
}
