// Brackets are Rust tokens: rustc's lexer rejects an unbalanced one before `parray!` runs.
use parray::prelude::*;

parray! {
    paged float [[4][4] A;
}

fn main() {}
