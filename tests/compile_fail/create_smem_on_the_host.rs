// A smem type exists only inside cuda detour bodies: host code cannot create it.
use parray::prelude::*;

parray! {
    smem float [16][17] TILE;
}

fn main() {
    let _ = TILE::create_on(&parray::Device::emulated(0));
}
