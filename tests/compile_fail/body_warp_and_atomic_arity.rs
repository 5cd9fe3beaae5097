use parray::prelude::*;

parray! {
    dmem int [64] D;
    cuda(int* d) [1][64] G;
}

fn main() -> parray::Result<()> {
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let x = $tid$ as i32;
        let w = shfl_down(x, 1, 32);
        atomic_exch(d + 0);
        atomic_cas(d + 0, 1);
        d[$D[$tid$]$] = w;
    })
}
