use parray::prelude::*;

parray! {
    pthd [4] T;
    paged float [4] V;
    dmem int [64] D;
    cuda(int* d) [1][64] G;
}

fn main() -> parray::Result<()> {
    let mut v = V::create()?;
    detour!(T {
        v[$V[$tid$]$] = shfl_down(1.0f32, 1);
    })?;
    let mut d = D::create()?;
    detour!(G(&mut d) {
        let mut x = $tid$ as i32;
        if shfl_down(x, 1) > 0 {
            x += 1;
        }
        let y = shfl_down(x += 1, 2);
        let z = shfl_down(true, 1);
        d[$D[$tid$]$] = x + y + z;
    })
}
