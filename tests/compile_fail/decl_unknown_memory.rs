use parray::prelude::*;

parray! {
    global float [4][4] A;
}

fn main() {}
