//! Types declared in a file module and used from the test crate's root.

parray::parray! {
    pub paged int [8][8] G;
    pub int [#G_1][#G_0] GT;
}
