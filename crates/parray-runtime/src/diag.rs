//! The runtime's one way to speak other than through a `Result`: a line on stderr, for
//! what a user should know that is no error (the CPU emulation chosen for want of a GPU,
//! a kernel's source under `PARRAY_DUMP_SOURCE`, a rank's panic before its job is
//! aborted). The crate warns of `print!` and `eprint!` anywhere else.

/// Writes `parray: {message}` on stderr.
#[allow(clippy::print_stderr)]
pub(crate) fn note(message: std::fmt::Arguments) {
    eprintln!("parray: {message}");
}
