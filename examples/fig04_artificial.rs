//! Fig 4 of the paper: an artificial array (the transpose view B of A).

use parray::prelude::*;

parray! {
    pub #parray {pinned float [4][3]} A
    pub #parray {pinned float [#A_1][#A_0]} B
}

fn main() -> parray::Result<()> {
    host! {
        let mut x = A::create()?;
        x[$A[3][2]$] = 123.0;
        let access = x[$B[2][3]$];
        let rows = $dim(B_0)$;
        println!("array access: {access}");
        println!("number of rows = {rows}");
        // Independent check: B is A transposed, so B[2][3] is A[3][2]; B has A's 3 columns as rows.
        let ok = access == 123.0 && rows == 3 && $B[2][3]$ == 3 * 3 + 2;
        println!("check: {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            std::process::exit(1);
        }
    }
    Ok(())
}
