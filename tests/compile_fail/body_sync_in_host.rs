use parray::prelude::*;

parray! {
    paged float [4] V;
}

fn main() {
    host! {
        let _ = $V[1]$;
        #sync
    }
}
