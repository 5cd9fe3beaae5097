// Two different types named `A` reach one form (one of them under another name).
mod a {
    parray::parray! {
        pub paged float [4] A;
    }
}
mod b {
    parray::parray! {
        pub paged float [5] A;
    }
}

use a::A;
use b::A as A2;

fn main() {
    let _ = parray::host! { $A[1]$ + $A2[1]$ };
}
