// Three declarations that do not parse: each is reported, in one build, and the good
// ones between them still parse.
use parray::prelude::*;

parray! {
    paged float [4] A;
    paged float [4 +] B;
    paged float [2][2] C;
    paged flaot [4] D;
    paged float [2] [3] = E;
}

fn main() {}
