// `kernel_source!` checks its arguments as a detour would: a name that does not exist is
// an error (and a real one is used, not warned about).
use parray::prelude::*;

parray! {
    dmem float [64] V;
    cuda(float* a) [2][32] G;
}

fn main() {
    let _ = kernel_source!(G(nowhere) {
        a[$V[$tid$]$] = 1.0f32;
    });
}
