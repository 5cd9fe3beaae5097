use parray::prelude::*;

parray! {
    paged float [4] V;
}

fn main() -> parray::Result<()> {
    detour!(V {
        println!("{}", 1);
    })
}
