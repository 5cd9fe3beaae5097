// Sizes are exact: 10 / 3 is not a whole number.
use parray::prelude::*;

parray! {
    const N = 10;
    paged float [N / 3][4] A;
}

fn main() {}
