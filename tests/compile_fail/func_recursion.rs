// Functions of the body language do not recurse (a GPU thread's stack is small).
#[parray::func]
fn even(n: u32) -> bool {
    if n == 0 {
        true
    } else {
        odd(n - 1)
    }
}

#[parray::func]
fn odd(n: u32) -> bool {
    if n == 0 {
        false
    } else {
        even(n - 1)
    }
}

fn main() {}
