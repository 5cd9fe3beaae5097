//! A kernel's CUDA C run on host threads: compiled by a host C++ compiler with the shim of
//! the CUDA built-ins the differential tests use (`tests/fuzz/tests/host_c/shim.h`), one
//! block of threads a launch. A kernel specialised at sizes given when the program runs is
//! checked so where there is no GPU: the emulation runs the body as written, not the
//! kernel made from it. `CXX` names the compiler (`g++` by default); without one the test
//! is skipped, unless `PARRAY_REQUIRE_CXX=1`.

use std::fmt::Write;
use std::path::PathBuf;
use std::process::Command;

#[path = "../fuzz/tests/host_c/cxx.rs"]
mod cxx;
use cxx::{build, compiler, signature};

const SHIM: &str = include_str!("../fuzz/tests/host_c/shim.h");

/// What a kernel parameter is given.
enum Param {
    /// The array of this name (`float* src`).
    Array(usize),
    /// Its number of elements (`unsigned long long __parray_n_src`).
    Len(usize),
    /// The fault record (`unsigned long long* __parray_fault`).
    Fault,
}

/// Runs the kernel of `source`, whose parameters are `float` arrays named as in `arrays`
/// (and, where an access stays checked, their lengths and the fault record), on one block
/// of `threads` threads (x only); each array holds what the kernel left in it. `None`
/// where there is no compiler; an error where the C does not compile, or a checked access
/// faulted.
pub fn run_f32(
    name: &str,
    source: &str,
    threads: u32,
    arrays: &mut [(&str, &mut [f32])],
) -> Option<Result<(), String>> {
    let cxx = compiler()?;
    Some(run_with(&cxx, name, source, threads, arrays))
}

fn run_with(
    cxx: &str,
    name: &str,
    source: &str,
    threads: u32,
    arrays: &mut [(&str, &mut [f32])],
) -> Result<(), String> {
    let (kernel, params) = signature(source).ok_or("no kernel in the source")?;
    let array = |n: &str| arrays.iter().position(|(a, _)| *a == n);
    let params = params
        .iter()
        .map(|p| {
            let word = p.rsplit(' ').next().unwrap_or(p);
            if let Some(n) = word.strip_prefix("__parray_n_") {
                array(n).map(Param::Len)
            } else if word == "__parray_fault" {
                Some(Param::Fault)
            } else if p.starts_with("float* ") {
                array(word).map(Param::Array)
            } else {
                None
            }
            .ok_or_else(|| format!("no argument for the parameter `{p}`"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let mut text = String::from(SHIM);
    text += source;
    text += "\nint main() {\n";
    for (i, (_, data)) in arrays.iter().enumerate() {
        let bits: Vec<String> = data
            .iter()
            .map(|x| format!("0x{:08x}u", x.to_bits()))
            .collect();
        let len = data.len();
        let _ = writeln!(
            text,
            "    static const unsigned bits{i}[{len}] = {{{}}};\n    alignas(16) static float a{i}[{len}];\n    std::memcpy(a{i}, bits{i}, sizeof a{i});",
            bits.join(", ")
        );
    }
    let args: Vec<String> = params
        .iter()
        .map(|p| match p {
            Param::Array(i) => format!("a{i}"),
            Param::Len(i) => format!("{}ull", arrays[*i].1.len()),
            Param::Fault => "fault".into(),
        })
        .collect();
    let _ = writeln!(
        text,
        "    static unsigned long long fault[16] = {{0}};\n    parray_launch(1, {threads}, [&] {{ {kernel}({}); }});\n    std::printf(\"F %llu %llu %llu %llu\\n\", fault[0], fault[1], fault[2], fault[3]);",
        args.join(", ")
    );
    for (i, (_, data)) in arrays.iter().enumerate() {
        let _ = writeln!(
            text,
            "    for (int i = 0; i < {}; i++) {{ unsigned b; std::memcpy(&b, &a{i}[i], 4); std::printf(\"%08x\\n\", b); }}",
            data.len()
        );
    }
    text += "    return 0;\n}\n";
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parray-host-c");
    std::fs::create_dir_all(&dir).map_err(|e| e.to_string())?;
    let (cpp, exe) = (dir.join(format!("{name}.cpp")), dir.join(name));
    std::fs::write(&cpp, &text).map_err(|e| e.to_string())?;
    build(cxx, &cpp, Some(&exe)).map_err(|e| format!("the C does not compile:\n{e}"))?;
    let ran = Command::new(&exe).output().map_err(|e| e.to_string())?;
    if !ran.status.success() {
        return Err(format!("the kernel's process failed: {}", ran.status));
    }
    let stdout = String::from_utf8_lossy(&ran.stdout);
    let mut lines = stdout.lines();
    let fault = lines.next().ok_or("no output")?;
    if fault != "F 0 0 0 0" {
        // `F which+1 offset n line` (`parray_fault`).
        return Err(format!("a checked access faulted: {fault}"));
    }
    for (_, data) in arrays.iter_mut() {
        for x in data.iter_mut() {
            let word = lines.next().ok_or("output cut short")?;
            let bits = u32::from_str_radix(word, 16).map_err(|e| e.to_string())?;
            *x = f32::from_bits(bits);
        }
    }
    Ok(())
}
