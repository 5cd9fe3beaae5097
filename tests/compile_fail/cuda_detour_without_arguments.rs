// A cuda detour passes the kernel's parameters.
use parray::prelude::*;

parray! {
    cuda(float* a) [2][32] CT;
}

fn main() -> parray::Result<()> {
    detour!(CT {
        println!("{}", $tid$);
    })
}
