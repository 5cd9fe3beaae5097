use parray_core::*;
fn main() {
    let src = std::fs::read_to_string(std::env::args().nth(1).unwrap()).unwrap();
    let m = Module::parse(&src).unwrap_or_else(|e| panic!("{e}"));
    for t in m.types() {
        let f = offset_function(&m, t.root, "i").unwrap();
        println!("{} size {} extent {}: {}", t.name, m.size(t.root), m.extent(t.root), f.to_source());
    }
    for e in std::env::args().skip(2) {
        let ie = parse_index_expr(&e).unwrap();
        println!("{e} = {}", compile(&m, &ie).map(|o| o.to_source()).unwrap_or_else(|e| e.to_string()));
    }
}
