//! The host C++ compiler that runs kernels' CUDA C on host threads, shared by the fuzz
//! crate's differential tests and the root crate's (`tests/host_c`).

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
