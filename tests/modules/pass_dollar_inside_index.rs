// A `$...$` form used as an index, or inside an index expression, of another form.
use parray::prelude::*;

parray! {
    paged float [[2][512]][[2][512]] M;
    paged float [8] V;
    pthd [4] T;
}

fn main() -> parray::Result<()> {
    host! {
        assert_eq!($M[$dim_0_1(M)$][0]$, 512 * 1024);
        assert_eq!($M[$dim_0_1(M)$ - 1][0]$, 511 * 1024);
    }
    let mut v = V::create()?;
    detour!(T {
        v[$V[$tid$ + 4]$] = 1.0;
    })?;
    assert_eq!(v.to_vec()?, vec![0.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0]);
    Ok(())
}
