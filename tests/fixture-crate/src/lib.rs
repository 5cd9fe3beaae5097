//! Parray types declared in a crate of their own: `tests/across_crates.rs` uses them.

parray::parray! {
    pub paged float [[2][3]][4] GRID;
    pub float [#GRID_1][#GRID_0] FLIPPED;
    pub pthd [2][2] WORKERS;
    pub const WIDTH = 4;
}
