// Every thread of a pthd array runs the body: assigning a captured host variable is a
// compile error that says what to write instead.
use parray::prelude::*;

parray! {
    pthd [4] T;
}

fn main() -> parray::Result<()> {
    let mut total = 0i32;
    detour!(T {
        total += $tid$ as i32;
    })?;
    println!("{total}");
    Ok(())
}
