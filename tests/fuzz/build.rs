//! Writes `$OUT_DIR/bodies.rs`: `PARRAY_FUZZ_BODIES` random well-defined bodies (300 by
//! default) from `PARRAY_FUZZ_SEED` (fixed by default), each with its declarations, a
//! function running it on pthd threads and one on a cuda grid, its CUDA C, and the
//! outputs the evaluator expects.

#[path = "src/ast.rs"]
#[allow(dead_code)]
mod ast;
#[path = "src/eval.rs"]
#[allow(dead_code)]
mod eval;
#[path = "src/gen.rs"]
#[allow(dead_code)]
mod gen;
#[path = "src/print.rs"]
#[allow(dead_code)]
mod print;

use ast::Elem;
use std::fmt::Write;

const DEFAULT_SEED: u64 = 0x5eed_2026;
const DEFAULT_BODIES: usize = 300;

fn env(name: &str) -> Option<String> {
    println!("cargo:rerun-if-env-changed={name}");
    std::env::var(name).ok().filter(|s| !s.is_empty())
}

fn rust_elem(e: Elem) -> &'static str {
    e.ty().name()
}

fn elem_path(e: Elem) -> &'static str {
    match e {
        Elem::Int => "Int",
        Elem::Unsigned => "Unsigned",
        Elem::Long => "Long",
        Elem::UChar => "UChar",
    }
}

fn main() {
    for f in ["ast", "eval", "gen", "print"] {
        println!("cargo:rerun-if-changed=src/{f}.rs");
    }
    let seed = env("PARRAY_FUZZ_SEED").map_or(DEFAULT_SEED, |s| {
        s.parse().expect("PARRAY_FUZZ_SEED: a number")
    });
    let count = env("PARRAY_FUZZ_BODIES").map_or(DEFAULT_BODIES, |s| {
        s.parse().expect("PARRAY_FUZZ_BODIES: a number")
    });
    let mut out = String::new();
    let _ = writeln!(out, "// {count} bodies from seed {seed}.");
    let mut cases = String::new();
    for n in 0..count {
        let (body, pthd, cuda) = gen::well_defined(seed.wrapping_add(n as u64 * 0x1_0000_0001));
        write_body(&mut out, &mut cases, n, &body, pthd.as_deref(), &cuda);
    }
    let _ = writeln!(
        out,
        "pub static CASES: &[parray_fuzz::Case] = &[\n{cases}];"
    );
    let path = std::path::Path::new(&std::env::var("OUT_DIR").unwrap()).join("bodies.rs");
    std::fs::write(path, out).unwrap();
}

fn write_body(
    out: &mut String,
    cases: &mut String,
    n: usize,
    body: &ast::Body,
    pthd: Option<&[i64]>,
    cuda: &[i64],
) {
    let (b, t, len) = (body.blocks, body.threads, body.len());
    let elem = body.elem.keyword();
    let names = print::Names {
        decls: (0..body.decls.len()).map(|k| format!("D{n}K{k}")).collect(),
        shared: format!("S{n}"),
    };
    let mut decls = String::new();
    let _ = writeln!(decls, "    paged {elem} [{len}] HOST{n};");
    let _ = writeln!(decls, "    dmem {elem} [{len}] DEV{n};");
    let _ = writeln!(decls, "    pthd [{b}][{t}] P{n};");
    let _ = writeln!(decls, "    cuda({elem}* out) [{b}][{t}] G{n};");
    if let Some(s) = body.shared {
        let _ = writeln!(decls, "    smem {} [{t}] S{n};", s.keyword());
    }
    for (k, dims) in body.decls.iter().enumerate() {
        let text: String = dims.iter().map(ast::Dim::text).collect();
        let _ = writeln!(decls, "    int {text} D{n}K{k};");
    }
    let text = print::body_text(body, &names, 8);
    let _ = writeln!(out, "parray! {{\n{decls}}}");
    let rust = rust_elem(body.elem);
    let init = format!(
        "(0..{len}usize).map(|i| parray_fuzz::eval::initial(i, parray_fuzz::ast::Elem::{}) as {rust}).collect::<Vec<{rust}>>()",
        elem_path(body.elem)
    );
    if pthd.is_some() {
        let _ = writeln!(
            out,
            "#[allow(unused_mut, unused_variables, unreachable_code, clippy::all)]\nfn pthd_{n}() -> parray::Result<Vec<i64>> {{\n    let mut out = HOST{n}::create()?;\n    out.copy_from_slice(&{init})?;\n    detour!(P{n} {{\n{text}    }})?;\n    Ok(out.to_vec()?.into_iter().map(|x| x as i64).collect())\n}}"
        );
    }
    let _ = writeln!(
        out,
        "#[allow(unused_mut, unused_variables, unreachable_code, clippy::all)]\nfn cuda_{n}() -> parray::Result<Vec<i64>> {{\n    let mut out = DEV{n}::create()?;\n    out.copy_from_slice(&{init})?;\n    detour!(G{n}(&mut out) {{\n{text}    }})?;\n    Ok(out.to_vec()?.into_iter().map(|x| x as i64).collect())\n}}"
    );
    let _ = writeln!(
        out,
        "fn source_{n}() -> &'static str {{\n    let out = ();\n    kernel_source!(G{n}(out) {{\n{text}    }})\n}}"
    );
    let list = |v: &[i64]| {
        format!(
            "&[{}]",
            v.iter().map(i64::to_string).collect::<Vec<_>>().join(", ")
        )
    };
    let _ = writeln!(
        cases,
        "    parray_fuzz::Case {{ index: {n}, text: {text:?}, decls: {decls:?}, elem: {elem:?}, blocks: {b}, threads: {t}, pthd: {}, cuda: cuda_{n}, source: source_{n}, expected_pthd: {}, expected_cuda: {} }},",
        if pthd.is_some() { format!("Some(pthd_{n})") } else { "None".into() },
        pthd.map_or("None".into(), |p| format!("Some({})", list(p))),
        list(cuda),
    );
}
