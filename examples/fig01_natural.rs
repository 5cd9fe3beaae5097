//! Fig 1 of the paper: a natural array, element access and the number of rows.

use parray::prelude::*;

parray! {
    pub #parray {pinned float [[3][2]][4]} A
}

fn main() -> parray::Result<()> {
    host! {
        let mut x = A::create()?;
        for i in 0..$dim(A)$ {
            x[$A[i]$] = i as f32 - 1.0;
        }
        let access = x[$A[5][2]$];
        let rows = $dim(A_0)$;
        println!("array access: {access}");
        println!("number of rows = {rows}");
        // Independent check: row-major 6x4, element (5, 2) holds 5 * 4 + 2 - 1.
        let ok = access == (5 * 4 + 2 - 1) as f32 && rows == 6;
        println!("check: {}", if ok { "ok" } else { "FAILED" });
        if !ok {
            std::process::exit(1);
        }
    }
    Ok(())
}
