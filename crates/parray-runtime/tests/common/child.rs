//! Runs one test of this binary in a child process with `PARRAY_BACKEND` set: the backend
//! is chosen once per process.

use std::process::Command;

/// Marks the child process, which runs the check instead of spawning.
const CHILD: &str = "PARRAY_TEST_CHILD";

/// Runs `test` alone in a child with `PARRAY_BACKEND=value`; returns its stderr.
pub fn in_child(test: &str, value: &str) -> String {
    in_child_with(test, value, &[])
}

/// [`in_child`] with more environment variables (other settings read once per process).
pub fn in_child_with(test: &str, value: &str, vars: &[(&str, &str)]) -> String {
    let out = Command::new(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD, "1")
        .env("PARRAY_BACKEND", value)
        .envs(vars.iter().copied())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "child {test} with PARRAY_BACKEND={value} failed:\n{}\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    stderr
}

/// Whether this process is such a child.
pub fn is_child() -> bool {
    std::env::var_os(CHILD).is_some()
}
