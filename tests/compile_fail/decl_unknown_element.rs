use parray::prelude::*;

parray! {
    paged quad [4][4] A;
}

fn main() {}
