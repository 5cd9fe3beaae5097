//! The host C++ compiler that runs kernels' CUDA C on host threads, and what both its
//! users read of a kernel, shared by the fuzz crate's differential tests and the root
//! crate's (`tests/host_c`).

use std::path::Path;
use std::process::Command;

/// The compiler (`CXX`, `g++` by default), or `None` (the test is skipped) where there is
/// none; a panic where there is none but `PARRAY_REQUIRE_CXX=1` (CI) asks for one.
pub fn compiler() -> Option<String> {
    let cxx = std::env::var("CXX").unwrap_or_else(|_| "g++".into());
    let found = Command::new(&cxx)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if found {
        return Some(cxx);
    }
    if std::env::var("PARRAY_REQUIRE_CXX").is_ok_and(|v| v == "1") {
        panic!("PARRAY_REQUIRE_CXX=1 but `{cxx} --version` failed");
    }
    eprintln!("skipped: no C++ compiler (`{cxx}`); set CXX, or PARRAY_REQUIRE_CXX=1 to fail");
    None
}

/// The kernel's name and its parameters, from `extern "C" __global__ void NAME(PARAMS) {`
/// (no `__launch_bounds__`, which would stand before the name).
pub fn signature(source: &str) -> Option<(String, Vec<String>)> {
    let start = source.find("__global__ void ")? + "__global__ void ".len();
    let rest = &source[start..];
    let (open, close) = (rest.find('(')?, rest.find(')')?);
    let params = rest[open + 1..close].split(", ").map(str::to_string);
    Some((rest[..open].trim().to_string(), params.collect()))
}

/// Compiles `cpp` with `cxx` into `exe` (only checked, where `exe` is `None`); the
/// compiler's first 20 lines of errors where it fails.
pub fn build(cxx: &str, cpp: &Path, exe: Option<&Path>) -> Result<(), String> {
    let mut cmd = Command::new(cxx);
    cmd.args(["-std=c++20", "-O1", "-pthread", "-w"]).arg(cpp);
    match exe {
        Some(exe) => cmd.arg("-o").arg(exe),
        None => cmd.arg("-fsyntax-only"),
    };
    let out = cmd.output().map_err(|e| format!("{cxx}: {e}"))?;
    if out.status.success() {
        return Ok(());
    }
    let err = String::from_utf8_lossy(&out.stderr);
    Err(err.lines().take(20).collect::<Vec<_>>().join("\n"))
}
