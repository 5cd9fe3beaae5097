pub fn run(_: &[parray_fuzz::Case]) -> Option<Vec<(usize, String)>> {
    None
}
