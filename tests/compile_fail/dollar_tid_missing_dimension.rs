// `T` has dimensions T_0 and T_1; there is no `tid_2`.
use parray::prelude::*;

parray! {
    pthd [2][2] T;
}

fn main() -> parray::Result<()> {
    detour!(T {
        println!("{}", $tid_2$);
    })
}
