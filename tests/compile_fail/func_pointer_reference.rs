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

fn main() {}
