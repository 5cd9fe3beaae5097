//! The CUDA C of each body (its `kernel_source!`) compiled by a host C++ compiler with a
//! shim of the CUDA built-ins (`shim.h`), run on host threads and compared with the
//! evaluator: the C back end checked without a GPU. `CXX` names the compiler (`g++` by
//! default); without one the test is skipped, unless `PARRAY_REQUIRE_CXX=1` (CI).

use parray_fuzz::Case;
use std::collections::HashMap;
use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

mod cxx;
use cxx::{build, compiler, signature};

const SHIM: &str = include_str!("shim.h");
/// Seconds a body's kernel may run before it counts as a hang.
const TIMEOUT_S: u32 = 10;

fn c_elem(elem: &str) -> &'static str {
    match elem {
        "int" => "int",
        "unsigned" => "unsigned",
        "long" => "long",
        "uchar" => "unsigned char",
        other => panic!("no C type for `{other}`"),
    }
}

/// Body `c` as a namespace holding its kernel and a function that launches it and prints
/// its outputs.
fn unit(c: &Case) -> String {
    let source = (c.source)();
    let (name, params) = signature(source).expect("a kernel");
    let elem = c_elem(c.elem);
    let len = c.expected_cuda.len();
    let args: Vec<&str> = params
        .iter()
        .map(|p| {
            if p.contains("__parray_n_") {
                "n"
            } else if p.contains("__parray_fault") {
                "fault"
            } else {
                "out"
            }
        })
        .collect();
    let elem_path = match c.elem {
        "int" => parray_fuzz::ast::Elem::Int,
        "unsigned" => parray_fuzz::ast::Elem::Unsigned,
        "long" => parray_fuzz::ast::Elem::Long,
        _ => parray_fuzz::ast::Elem::UChar,
    };
    let init: Vec<String> = (0..len)
        .map(|i| parray_fuzz::eval::initial(i, elem_path).to_string())
        .collect();
    let mut s = String::new();
    let _ = writeln!(s, "namespace body{} {{\n{source}", c.index);
    let _ = writeln!(
        s,
        "void run() {{\n    static {elem} out[{len}] = {{{}}};\n    static unsigned long long fault[16] = {{0}};\n    unsigned long long n = {len};\n    (void)n;\n    parray_launch({}, {}, [&] {{ {name}({}); }});\n    std::printf(\"R {}\");\n    for (int i = 0; i < {len}; i++) std::printf(\" %lld\", (long long)out[i]);\n    std::printf(\" F %llu\\n\", fault[0]);\n}}\n}}",
        init.join(", "),
        c.blocks,
        c.threads,
        args.join(", "),
        c.index
    );
    s
}

fn compile(
    cxx: &str,
    dir: &Path,
    name: &str,
    units: &[String],
    main: bool,
) -> Result<PathBuf, String> {
    let mut text = String::from(SHIM);
    for u in units {
        text += u;
    }
    if main {
        text += "int main() {\n";
        for u in units {
            // `namespace bodyN {`
            let n = &u["namespace body".len()..u.find(" {").unwrap()];
            let _ = writeln!(text, "    parray_guarded({n}, body{n}::run, {TIMEOUT_S});");
        }
        text += "    return 0;\n}\n";
    }
    let cpp = dir.join(format!("{name}.cpp"));
    std::fs::write(&cpp, text).unwrap();
    let exe = dir.join(name);
    build(cxx, &cpp, main.then_some(exe.as_path()))?;
    Ok(exe)
}

/// Runs every case's CUDA C on host threads; the failures (case, why), or None when there
/// is no compiler.
pub fn run(cases: &[Case]) -> Option<Vec<(usize, String)>> {
    let cxx = compiler()?;
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parray-fuzz-host-c");
    std::fs::create_dir_all(&dir).unwrap();
    let mut failures = Vec::new();
    let mut units: Vec<(usize, String)> = cases.iter().map(|c| (c.index, unit(c))).collect();
    let all: Vec<String> = units.iter().map(|u| u.1.clone()).collect();
    let exe = match compile(&cxx, &dir, "bodies", &all, true) {
        Ok(exe) => exe,
        Err(_) => {
            // Find the kernels that do not compile, one by one, and run the others.
            units.retain(|(i, u)| {
                match compile(&cxx, &dir, "one", std::slice::from_ref(u), false) {
                    Ok(_) => true,
                    Err(e) => {
                        failures.push((*i, format!("the C does not compile:\n{e}")));
                        false
                    }
                }
            });
            let rest: Vec<String> = units.iter().map(|u| u.1.clone()).collect();
            match compile(&cxx, &dir, "bodies", &rest, true) {
                Ok(exe) => exe,
                Err(e) => panic!("the kernels that compile alone do not together:\n{e}"),
            }
        }
    };
    let out = Command::new(&exe).output().expect("run the host kernels");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut results: HashMap<usize, Result<Vec<i64>, String>> = HashMap::new();
    for line in stdout.lines() {
        let mut words = line.split(' ');
        let (Some(kind), Some(n)) = (words.next(), words.next()) else {
            continue;
        };
        let Ok(n) = n.parse::<usize>() else { continue };
        let rest: Vec<&str> = words.collect();
        match kind {
            "R" => {
                let f = rest.iter().position(|w| *w == "F").unwrap_or(rest.len());
                let fault = rest.get(f + 1).copied().unwrap_or("0");
                let values = rest[..f].iter().map(|w| w.parse().unwrap()).collect();
                results.insert(
                    n,
                    if fault == "0" {
                        Ok(values)
                    } else {
                        Err(format!("a checked access faulted (record {fault})"))
                    },
                );
            }
            "B" => {
                let why = if rest == ["signal", "14"] {
                    format!("hangs (no end within {TIMEOUT_S} s)")
                } else {
                    format!("the kernel's process ended by {}", rest.join(" "))
                };
                results.insert(n, Err(why));
            }
            _ => {}
        }
    }
    for (i, _) in &units {
        let c = &cases[*i];
        let why = match results.remove(i) {
            None => Some("no result".into()),
            Some(Err(e)) => Some(e),
            Some(Ok(got)) => super::mismatch(&got, c.expected_cuda),
        };
        if let Some(why) = why {
            failures.push((*i, format!("{why}\n{}", (c.source)())));
        }
    }
    failures.sort_by_key(|f| f.0);
    Some(failures)
}
