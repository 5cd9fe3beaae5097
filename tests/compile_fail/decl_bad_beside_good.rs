// A bad declaration is reported once, and the good declarations of its block stay usable:
// no "cannot find macro `A`" at the uses of A.
use parray::prelude::*;

parray! {
    paged float [4][3] A;
    paged float [10 / 3] B;
    paged float [#A_1][#A_0] AT;
    paged float [7 / 2] C;
}

fn main() {
    let n = host! { $size(A)$ + $A[1][2]$ + $AT[2][1]$ };
    println!("{n}");
}
