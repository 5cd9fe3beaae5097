// The HIP source of a detour that an AMD GPU cannot launch is an error at the array: more
// shared memory than a work-group's 64 KiB of LDS (the CUDA source of it is fine: an H100
// block may have 227 KiB).
use parray::prelude::*;

parray! {
    dmem float [256] V;
    smem float [20000] BIG;
    cuda(float* v) [1][256] G;
}

fn main() {
    let v = ();
    let _ = kernel_source!(G(v) {
        let big = BIG::create();
        big[$tid_1$] = 1.0;
        #sync;
        v[$V[$tid_1$]$] = big[255 - $tid_1$];
    });
    let _ = kernel_source!(hip(64): G(v) {
        let big = BIG::create();
        big[$tid_1$] = 1.0;
        #sync;
        v[$V[$tid_1$]$] = big[255 - $tid_1$];
    });
}
