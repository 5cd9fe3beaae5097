// A swizzled type (SPEC 2.5, rule 11) is declared and explained, but its offsets have a
// XOR that the body compiler does not lower yet: a `$...$` form of one is a compile
// error at the form (a row's first column is not swizzled and compiles).
use parray::prelude::*;

parray! {
    paged float [[2][8]][[8 ^ TILE_0_1][8]] TILE;
    pthd [8] CPU;
}

fn main() -> parray::Result<()> {
    let tile = TILE::create()?;
    detour!(CPU {
        let mut x = 0.0;
        for c in 0..64 {
            x += tile[$TILE[$tid$][c]$];
        }
    })
}
