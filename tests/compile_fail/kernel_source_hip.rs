// `kernel_source!(hip(64): ...)` and `hip(32):` are the HIP source of a cuda detour: another
// wavefront, a missing one, a pthd array or a generic detour are errors.
use parray::prelude::*;

parray! {
    dmem float [256] V;
    cuda(float* v) [1][256] G;
    pthd [4] T;
}

fn main() {
    let v = ();
    let _ = kernel_source!(hip(48): G(v) {
        v[$V[$tid_1$]$] = 1.0;
    });
    let _ = kernel_source!(hip: G(v) {
        v[$V[$tid_1$]$] = 1.0;
    });
    let _ = kernel_source!(hip(64): T {
        let _ = $tid$;
    });
    let _ = kernel_source!(hip(32): <U> G(v) {
        v[$U[$tid_1$]$] = 1.0;
    });
}
