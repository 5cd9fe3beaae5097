// `$tid$` exists only inside a detour.
use parray::prelude::*;

parray! {
    paged float [4] V;
}

fn main() {
    let _ = host! { $V[$tid$]$ };
}
