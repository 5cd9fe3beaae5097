// A function takes an array as a `parray::Ptr`/`PtrMut`, not as a reference or slice.
#[parray::func]
fn first(a: &[f32]) -> f32 {
    a[0]
}

#[parray::func]
fn generic_first<T: parray::Num>(a: parray::Ptr<'_, T>) -> T {
    a[0]
}

// A `Ptr` only reads: writing through it is rustc's error at the access.
#[parray::func]
fn clear(a: parray::Ptr<'_, f32>, i: usize) {
    a[i] = 0.0;
}

// A pointer to a type parameter needs an element (`parray::Num` takes `usize`); the
// elements of one move whole.
#[parray::func]
fn first_x<T: parray::Element>(a: parray::Ptr<'_, T>) -> f32 {
    a[0].x
}

fn main() {}
