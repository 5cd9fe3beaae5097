// An mpi body captures host variables, as a pthd body does: no argument list.
use parray::prelude::*;

parray! {
    mpi [2] P;
    paged float [[#P][4]] V;
    paged float [#V_0_1] PART;
}

fn main() -> parray::Result<()> {
    let v = V::create()?;
    detour!(P(v) {
        v[$PART[0]$] = 1.0;
    })
}
