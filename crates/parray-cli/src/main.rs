//! `parray`: offsets, formulas and pictures of Parray array types (PARRAY.md sections 2-4).
//!
//! ```text
//! parray offsets FILE [--const NAME=VALUE]... [--type NAME]...   one JSON line per type
//! parray offset  FILE EXPR... [--const NAME=VALUE]...            offset (or formula) of each EXPR
//! parray explain FILE [--type NAME]...                           the dimension tree, for a person
//! parray draw    FILE [--type NAME] [--rows A..B] [--cols C..D]   a 2-D picture of the storage order
//!                [--window N|RxC] [--zoom N|tiles] [--svg PATH] [--color WHEN]
//! parray copy    FILE --from S --to D                            the plan of `#copy S(a) to D(b)`
//! ```
//!
//! FILE is a file of declarations, `-` for standard input. Without `--type`, `offsets`
//! and `explain` take every declared type in declaration order, thread arrays included
//! (a thread array is a type too: its offsets are its flattened thread ids). An input
//! that declares nothing gives no output.
//!
//! Exit status: 0 on success; 2 for bad input (a syntax or semantic error, an unknown
//! `--type`, a bad `--const`, an unreadable file) and bad usage (as clap does); 1 when the
//! output cannot be written; 70 for an internal error (there should be none). Errors go to
//! stderr as `error: ` and the message (with `line L, column C` when the input has a
//! position), then the offending line with a caret under it.

mod copy;
mod diag;
mod draw;
mod explain;
mod input;
mod output;

use std::io::{self, Write};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand, ValueEnum};

use diag::{Failure, EXIT_INTERNAL, EXIT_OUTPUT};
use input::Input;
use output::{push_json_str, push_u64};
use parray_layout::eval::Program;

#[derive(Parser, Debug)]
#[command(
    name = "parray",
    version,
    about = "Offsets, formulas and pictures of Parray array types",
    long_about = "Offsets, formulas and pictures of Parray array types.\n\n\
FILE is a file of declarations (`dmem float [2][1024][512] A`, `const N = 256`, ...), \
`-` for standard input. Exit status: 0 success, 2 bad input or usage, 1 output error, \
70 internal error."
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Args, Debug, Clone)]
struct Common {
    /// File of declarations, `-` for standard input
    #[arg(value_name = "FILE")]
    file: String,
    /// Set a constant (overrides the file's `const NAME = ...`); VALUE is a size expression
    #[arg(long = "const", value_name = "NAME=VALUE")]
    consts: Vec<String>,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Every offset of each type, one JSON object per line:
    /// {"type": "A_0", "size": 6, "extent": 21, "offsets": [0, 4, ...]}
    Offsets {
        #[command(flatten)]
        common: Common,
        /// A type or sub-dimension (`M`, `A_0_1`); repeatable; default: every declared type,
        /// thread arrays included
        #[arg(long = "type", value_name = "NAME")]
        types: Vec<String>,
        /// Also compute every offset straight from the dimension tree and fail (exit 70)
        /// if the compiled formula disagrees
        #[arg(long)]
        check: bool,
    },
    /// The offset of each index expression (`A[[2][1]][3]`, `M_1[7]`), one per line; a
    /// formula when the expression has variables (`M[i][j]`)
    Offset {
        #[command(flatten)]
        common: Common,
        /// Index expressions
        #[arg(value_name = "EXPR", required = true)]
        exprs: Vec<String>,
    },
    /// The dimension tree of each type: sizes, extents, contiguity and offset formulas
    Explain {
        #[command(flatten)]
        common: Common,
        /// A type or sub-dimension; repeatable; default: every declared type
        #[arg(long = "type", value_name = "NAME")]
        types: Vec<String>,
    },
    /// A 2-D picture of a type's storage order: rows = its first top-level dimension,
    /// columns = the rest; each cell shows its offset, coloured by offset
    Draw {
        #[command(flatten)]
        common: Common,
        /// The type or sub-dimension to draw (default: the file's one data type)
        #[arg(long = "type", value_name = "NAME")]
        ty: Option<String>,
        /// Write an SVG picture to PATH (`-` for standard output) instead of the terminal view
        #[arg(long, value_name = "PATH")]
        svg: Option<String>,
        /// The rows to draw, `a..b` (default: from 0, as many as --window says)
        #[arg(long, value_name = "A..B")]
        rows: Option<String>,
        /// The columns to draw, `a..b` (default: from 0, as many as --window says)
        #[arg(long, value_name = "A..B")]
        cols: Option<String>,
        /// How many rows and columns to show where --rows or --cols is not given, N or RxC
        /// (default: 16, 64 in SVG; at most 256)
        #[arg(long, value_name = "N|RxC")]
        window: Option<String>,
        /// Sample the rows and columns: every N-th, or `tiles`, one cell per tile (the
        /// finest group of each compound axis)
        #[arg(long, value_name = "N|tiles")]
        zoom: Option<String>,
        /// Colour the terminal view
        #[arg(long, value_enum, default_value_t = Color::Auto)]
        color: Color,
    },
    /// The plan of `#copy S(a) to D(b)` between arrays: the path for where each array is
    /// (a view: both), and the remap kernel a GPU runs; into shared memory, a cuda body's
    /// copy by TMA (its box, or the rule that refuses it)
    Copy {
        #[command(flatten)]
        common: Common,
        /// The source type
        #[arg(long = "from", value_name = "S")]
        from: String,
        /// The destination type
        #[arg(long = "to", value_name = "D")]
        to: String,
    },
}

#[derive(ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Color {
    Auto,
    Always,
    Never,
}

/// What a command writes to stdout: bytes written in chunks as they are produced.
pub type Out<'a> = &'a mut dyn Write;

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Quiet panics: the message is printed once, as an internal error, below.
    std::panic::set_hook(Box::new(|info| {
        let msg = info
            .payload()
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| info.payload().downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        let at = info
            .location()
            .map(|l| format!(" at {}:{}", l.file(), l.line()))
            .unwrap_or_default();
        eprintln!("error: internal error (please report): {msg}{at}");
    }));
    // Deep declarations recurse deeply: work on a thread with a large stack.
    let worker = std::thread::Builder::new()
        .name("parray".into())
        .stack_size(256 << 20)
        .spawn(move || run(cli));
    let result = match worker {
        Ok(handle) => match handle.join() {
            Ok(r) => r,
            Err(_) => return ExitCode::from(EXIT_INTERNAL as u8),
        },
        Err(e) => Err(Failure {
            message: format!("cannot start the worker thread: {e}"),
            snippet: None,
            code: EXIT_INTERNAL,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(f) => {
            let _ = io::stderr().lock().write_all(f.render().as_bytes());
            ExitCode::from(f.code as u8)
        }
    }
}

fn run(cli: Cli) -> Result<(), Failure> {
    let stdout = io::stdout();
    let mut lock = stdout.lock();
    let r = match cli.cmd {
        Cmd::Offsets {
            common,
            types,
            check,
        } => {
            let input = Input::load(&common.file, &common.consts)?;
            offsets(&input, &types, check, &mut lock)
        }
        Cmd::Offset { common, exprs } => {
            let input = Input::load(&common.file, &common.consts)?;
            offset(&input, &exprs, &mut lock)
        }
        Cmd::Explain { common, types } => {
            let input = Input::load(&common.file, &common.consts)?;
            let text = explain::explain(&input, &types)?;
            lock.write_all(text.as_bytes()).map_err(Written::from)
        }
        Cmd::Draw {
            common,
            ty,
            svg,
            rows,
            cols,
            window,
            zoom,
            color,
        } => {
            let window = draw::Window {
                rows: rows.map(|r| draw::parse_range("--rows", &r)).transpose()?,
                cols: cols.map(|c| draw::parse_range("--cols", &c)).transpose()?,
                zoom: zoom
                    .map(|z| draw::parse_zoom(&z))
                    .transpose()?
                    .unwrap_or_default(),
                shown: window.map(|w| draw::parse_shown(&w)).transpose()?,
            };
            let input = Input::load(&common.file, &common.consts)?;
            let ty = match ty {
                Some(ty) => ty,
                None => input.only_data_type()?,
            };
            draw::draw(&input, &ty, &window, svg.as_deref(), color, &mut lock)
        }
        Cmd::Copy { common, from, to } => {
            let input = Input::load(&common.file, &common.consts)?;
            let text = copy::plan(&input, &from, &to)?;
            lock.write_all(text.as_bytes()).map_err(Written::from)
        }
    };
    match r.and_then(|()| lock.flush().map_err(Written::from)) {
        Ok(()) => Ok(()),
        // A closed pipe (`parray offsets big.txt | head`) is not an error.
        Err(Written::Io(e)) if e.kind() == io::ErrorKind::BrokenPipe => Ok(()),
        Err(Written::Io(e)) => Err(Failure {
            message: format!("cannot write the output: {e}"),
            snippet: None,
            code: EXIT_OUTPUT,
        }),
        Err(Written::Failed(f)) => Err(f),
    }
}

/// A failure while output may already be under way.
pub enum Written {
    Io(io::Error),
    Failed(Failure),
}

impl From<io::Error> for Written {
    fn from(e: io::Error) -> Self {
        Written::Io(e)
    }
}

impl From<Failure> for Written {
    fn from(f: Failure) -> Self {
        Written::Failed(f)
    }
}

/// Size of the chunks handed to stdout.
const CHUNK: usize = 1 << 16;

fn offsets(input: &Input, names: &[String], check: bool, out: Out) -> Result<(), Written> {
    // Resolve and compile everything first: bad input must leave stdout empty.
    let targets = input.targets(names)?;
    let mut compiled = Vec::with_capacity(targets.len());
    for t in &targets {
        compiled.push(input.offset_function(t, "i")?);
    }
    let m = &input.module;
    let mut buf: Vec<u8> = Vec::with_capacity(CHUNK + 64);
    for (t, f) in targets.iter().zip(&compiled) {
        let size = m.size(t.node);
        let extent = m.extent(t.node);
        let mut prog = Program::new(&f.expr);
        buf.extend_from_slice(b"{\"type\": \"");
        push_json_str(&mut buf, &t.name);
        buf.extend_from_slice(b"\", \"size\": ");
        push_u64(&mut buf, size);
        buf.extend_from_slice(b", \"extent\": ");
        push_u64(&mut buf, extent);
        buf.extend_from_slice(b", \"offsets\": [");
        let mut max = 0;
        for i in 0..size {
            let off = prog.eval(&[i]);
            if i > 0 {
                buf.extend_from_slice(b", ");
            }
            push_u64(&mut buf, off);
            if check {
                let want = m.offset_at(t.node, i);
                if off != want {
                    return Err(internal(format!(
                        "self-check failed: {}[{i}]: the formula `{}` gives {off}, the dimension tree {want}",
                        t.name,
                        f.to_source()
                    )));
                }
                max = max.max(off);
            }
            if buf.len() >= CHUNK {
                out.write_all(&buf)?;
                buf.clear();
            }
        }
        if check && max + 1 != extent {
            return Err(internal(format!(
                "self-check failed: {}: the largest offset is {max} but the extent is {extent}",
                t.name
            )));
        }
        buf.extend_from_slice(b"]}\n");
    }
    out.write_all(&buf)?;
    Ok(())
}

fn internal(message: String) -> Written {
    Written::Failed(Failure {
        message,
        snippet: None,
        code: EXIT_INTERNAL,
    })
}

fn offset(input: &Input, exprs: &[String], out: Out) -> Result<(), Written> {
    let mut text = String::new();
    for e in exprs {
        let off = input.compile_arg(e)?;
        match off.as_const() {
            Some(c) => text.push_str(&c.to_string()),
            None => text.push_str(&off.to_source()),
        }
        text.push('\n');
    }
    out.write_all(text.as_bytes())?;
    Ok(())
}
