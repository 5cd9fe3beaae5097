use parray::prelude::*;

parray! {
    pthd [2][2] T;
}

fn main() -> parray::Result<()> {
    detour!(T_1 {
        println!("{}", $tid$);
    })
}
