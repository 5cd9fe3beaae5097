//! The `parray` command, run as a process: every worked check of PARRAY.md section 3,
//! the output formats, and every error path (exit status 2, `error:` and a position,
//! nothing on stdout).

use std::io::Write;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

struct Run {
    code: i32,
    stdout: String,
    stderr: String,
}

fn run_with(args: &[&str], stdin: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_parray"))
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    {
        let mut input = child.stdin.take().unwrap();
        // The command may exit before reading everything; that is fine.
        let _ = input.write_all(stdin);
    }
    let out = child.wait_with_output().unwrap();
    Run {
        code: out.status.code().expect("exited normally, not by a signal"),
        stdout: String::from_utf8(out.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn run(args: &[&str]) -> Run {
    run_with(args, b"")
}

/// A temporary file with these contents (removed when dropped).
struct TempFile(PathBuf);

impl TempFile {
    fn new(contents: impl AsRef<[u8]>) -> TempFile {
        static COUNT: AtomicUsize = AtomicUsize::new(0);
        let n = COUNT.fetch_add(1, Ordering::SeqCst);
        let path =
            std::env::temp_dir().join(format!("parray-cli-test-{}-{n}.txt", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        TempFile(path)
    }

    fn path(&self) -> &str {
        self.0.to_str().unwrap()
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn ok(r: &Run) {
    assert_eq!(r.code, 0, "stderr: {}", r.stderr);
    assert!(r.stderr.is_empty(), "stderr: {}", r.stderr);
}

/// `parray offset FILE EXPR...`, each line of the answer.
fn offset(src: &str, extra: &[&str], exprs: &[&str]) -> Vec<String> {
    let f = TempFile::new(src);
    let mut args = vec!["offset", f.path()];
    args.extend_from_slice(extra);
    args.extend_from_slice(exprs);
    let r = run(&args);
    ok(&r);
    r.stdout.lines().map(str::to_string).collect()
}

/// One line of `parray offsets`: name, size, extent, offsets.
#[derive(Debug, PartialEq)]
struct Line {
    name: String,
    size: u64,
    extent: u64,
    offsets: Vec<u64>,
}

fn parse_line(line: &str) -> Line {
    let rest = line.strip_prefix("{\"type\": \"").expect(line);
    let (name, rest) = rest.split_once("\", \"size\": ").expect(line);
    let (size, rest) = rest.split_once(", \"extent\": ").expect(line);
    let (extent, rest) = rest.split_once(", \"offsets\": [").expect(line);
    let list = rest.strip_suffix("]}").expect(line);
    let offsets = if list.is_empty() {
        Vec::new()
    } else {
        list.split(", ").map(|x| x.parse().expect(x)).collect()
    };
    Line {
        name: name.to_string(),
        size: size.parse().unwrap(),
        extent: extent.parse().unwrap(),
        offsets,
    }
}

fn offsets(src: &str, extra: &[&str]) -> Vec<Line> {
    let f = TempFile::new(src);
    let mut args = vec!["offsets", f.path()];
    args.extend_from_slice(extra);
    let r = run(&args);
    ok(&r);
    assert!(r.stdout.ends_with('\n') || r.stdout.is_empty());
    r.stdout.lines().map(parse_line).collect()
}

fn one(src: &str, ty: &str, extra: &[&str]) -> Line {
    let mut args = vec!["--type", ty];
    args.extend_from_slice(extra);
    let mut lines = offsets(src, &args);
    assert_eq!(lines.len(), 1);
    lines.remove(0)
}

const FIG1: &str = "#parray {pinned float [[3][2]][4]} A\n";
const FIG4: &str = "#parray {pinned float [4][3]} A\n#parray {pinned float [#A_1][#A_0]} B\n";
const FIG17: &str =
    "#parray {dmem float [2][1024][512]} A\n#parray {float [#A_1][[#A_0][#A_2]]} M\n";
const FIG7: &str = "\
#parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA
#parray {cuda(float2* worki, float2* worko) [[128/16][128/16]][[16][16]]} MYCUDA
#parray {smem float2 [16][17]} A            // padded tile: no bank conflicts
#parray {smem float2 [#A_0][16#A_1]} B
";
/// Fig 21 with a constant that the tests override with `--const N=256`.
const FIG21: &str = "\
const N = 1024
#parray {dmem float [N][N]} type
#parray {cuda(float* a, float* b, float* c) [[N/16][N/256]][[4][32]]} CUDA
#parray {dmem float [[N/16][[4][4]]#type_0][[N/32][32]#type_1]} A
#parray {dmem float [[N/32][32]#type_0][[N/256][[128][2]]#type_1]} B
#parray {dmem float [#A_0][#B_1]} C
#parray {dmem float [#C_0_1][#C_1_1_1]} C0
#parray {smem float [32][17]} S                 // padding avoids bank conflicts
#parray {smem float [32#S_0][[4][4]#S_1]} S0
#parray {rmem float [16][2]} R
";
const N256: &[&str] = &["--const", "N=256"];

// ---------------------------------------------------------------- worked checks

#[test]
fn fig1_natural() {
    let a = one(FIG1, "A", &[]);
    assert_eq!(a.size, 24);
    assert_eq!(a.offsets, (0..24).collect::<Vec<_>>());
    assert_eq!(one(FIG1, "A_0", &[]).size, 6);
    assert_eq!(one(FIG1, "A_1", &[]).size, 4);
    assert_eq!(
        offset(FIG1, &[], &["A[5][2]", "A[[i][j]][k]", "A[[2][1]][3]"]),
        ["22", "i * 8 + j * 4 + k", "23"]
    );
    let mut exprs = Vec::new();
    let mut want = Vec::new();
    for i in 0..3 {
        for j in 0..2 {
            for k in 0..4 {
                exprs.push(format!("A[[{i}][{j}]][{k}]"));
                want.push((i * 8 + j * 4 + k).to_string());
            }
        }
    }
    let exprs: Vec<&str> = exprs.iter().map(String::as_str).collect();
    assert_eq!(offset(FIG1, &[], &exprs), want);
}

#[test]
fn fig4_artificial() {
    assert_eq!(offset(FIG4, &[], &["B[2][3]", "A[3][2]"]), ["11", "11"]);
    assert_eq!(one(FIG4, "B_0", &[]).size, 3);
    let b = one(FIG4, "B", &[]);
    assert_eq!(b.offsets, [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]);
}

#[test]
fn fig17_halves() {
    assert_eq!(
        offset(FIG17, &[], &["M[0][513]", "M[1][0]", "M[i][j]"]),
        ["524289", "512", "i * 512 + (j / 512) * 524288 + j % 512"]
    );
    let m = one(FIG17, "M", &["--check"]);
    assert_eq!((m.size, m.extent), (1 << 20, 1 << 20));
    for i in 0..1024u64 {
        for j in 0..1024u64 {
            assert_eq!(
                m.offsets[(i * 1024 + j) as usize],
                i * 512 + (j / 512) * 524288 + j % 512
            );
        }
    }
}

#[test]
fn fig7_padded_tile() {
    let b = one(FIG7, "B", &[]);
    assert_eq!((b.size, b.extent), (256, 271));
    assert_eq!(b.offsets[16], 17);
    assert_eq!(
        offset(FIG7, &[], &["B[1][0]", "B[i][j]"]),
        ["17", "i * 17 + j"]
    );
}

#[test]
fn fig21_sgemm_views() {
    let a10 = one(FIG21, "A_1_0", N256);
    assert_eq!(&a10.offsets[..3], &[0, 32, 64]);
    assert_eq!(a10.size, 8);
    assert_eq!(one(FIG21, "A_0_1_0", N256).offsets, [0, 1024, 2048, 3072]);
    assert_eq!(one(FIG21, "S0_1_0", N256).offsets, [0, 4, 8, 12]);
    let c0 = one(FIG21, "C0", N256);
    assert_eq!(c0.size, 32);
    assert_eq!(&c0.offsets[..5], &[0, 1, 256, 257, 512]);
    assert_eq!(
        offset(
            FIG21,
            N256,
            &[
                "A[[1][[0][2]]][[0][5]]",
                "S0[3][[0][2]]",
                "C[[1][0]][[0][[5][0]]]"
            ]
        ),
        ["4613", "53", "4106"]
    );
    // cnt(B_1_1_1): explain says `cnt yes` on its line.
    let f = TempFile::new(FIG21);
    let r = run(&["explain", f.path(), "--const", "N=256", "--type", "B_1_1_1"]);
    ok(&r);
    let line = r
        .stdout
        .lines()
        .find(|l| l.starts_with("B_1_1_1 "))
        .expect(&r.stdout);
    assert!(line.contains("cnt yes"), "{line}");
    // Without the override the file's own N = 1024 holds.
    assert_eq!(one(FIG21, "type", &[]).size, 1024 * 1024);
    assert_eq!(one(FIG21, "type", N256).size, 256 * 256);
}

#[test]
fn every_type_in_declaration_order_with_thread_arrays() {
    let lines = offsets(FIG21, N256);
    let names: Vec<&str> = lines.iter().map(|l| l.name.as_str()).collect();
    assert_eq!(names, ["type", "CUDA", "A", "B", "C", "C0", "S", "S0", "R"]);
    for l in &lines {
        assert_eq!(l.offsets.len() as u64, l.size, "{}", l.name);
        assert_eq!(l.offsets.iter().max().unwrap() + 1, l.extent, "{}", l.name);
    }
    // A thread array's offsets are its flattened thread ids.
    assert_eq!(lines[1].offsets, (0..16 * 128).collect::<Vec<_>>());
}

#[test]
fn check_flag_agrees_on_every_figure() {
    for src in [FIG1, FIG4, FIG7, FIG17] {
        let f = TempFile::new(src);
        ok(&run(&["offsets", f.path(), "--check"]));
    }
    let f = TempFile::new(FIG21);
    ok(&run(&["offsets", f.path(), "--check", "--const", "N=256"]));
}

// ---------------------------------------------------------------- formats

#[test]
fn exact_json_lines() {
    let f = TempFile::new(FIG1);
    let r = run(&["offsets", f.path(), "--type", "A_0", "--type", "A_1"]);
    ok(&r);
    assert_eq!(
        r.stdout,
        "{\"type\": \"A_0\", \"size\": 6, \"extent\": 21, \"offsets\": [0, 4, 8, 12, 16, 20]}\n\
         {\"type\": \"A_1\", \"size\": 4, \"extent\": 4, \"offsets\": [0, 1, 2, 3]}\n"
    );
}

#[test]
fn standard_input() {
    let r = run_with(&["offsets", "-", "--type", "B"], FIG4.as_bytes());
    ok(&r);
    assert_eq!(
        parse_line(r.stdout.trim_end()).offsets,
        [0, 3, 6, 9, 1, 4, 7, 10, 2, 5, 8, 11]
    );
    let r = run_with(&["offset", "-", "B[2][3]"], FIG4.as_bytes());
    ok(&r);
    assert_eq!(r.stdout, "11\n");
}

#[test]
fn offset_nested_and_symbolic() {
    assert_eq!(
        offset(
            FIG17,
            &[],
            &["M_1[[1][3]]", "M_1[j]", "M[[5]][[1][2]]", "M_0[7]"]
        ),
        ["524291", "(j / 512) * 524288 + j % 512", "526850", "3584"]
    );
}

#[test]
fn consts_are_size_expressions() {
    let src = "const N = 4\nfloat [N][N] A\n";
    assert_eq!(one(src, "A", &[]).size, 16);
    assert_eq!(one(src, "A", &["--const", "N=2*(3+1)"]).size, 64);
    // A later --const may use an earlier one; the last one wins.
    assert_eq!(
        one(
            src,
            "A",
            &["--const", "M=3", "--const", "N=M+1", "--const", "N=M*2"]
        )
        .size,
        36
    );
    // A constant the file does not declare is allowed.
    assert_eq!(one("float [K] A\n", "A", &["--const", "K=5"]).size, 5);
}

#[test]
fn empty_input_prints_nothing() {
    for cmd in ["offsets", "explain"] {
        let f = TempFile::new("");
        let r = run(&[cmd, f.path()]);
        ok(&r);
        assert_eq!(r.stdout, "");
        let f = TempFile::new("// only a comment\n/* and another */\n");
        let r = run(&[cmd, f.path()]);
        ok(&r);
        assert_eq!(r.stdout, "");
    }
}

#[test]
fn explain_shows_the_tree() {
    let f = TempFile::new(FIG17);
    let r = run(&["explain", f.path(), "--type", "M"]);
    ok(&r);
    let out = &r.stdout;
    assert!(out.starts_with("M: float, no memory kind"), "{out}");
    assert!(out.contains("size 1048576, extent 1048576"), "{out}");
    let line = |name: &str| {
        out.lines()
            .find(|l| {
                l.trim_start_matches(['├', '└', '─', '│', ' '])
                    .starts_with(&format!("{name} "))
            })
            .unwrap_or_else(|| panic!("no line for {name} in\n{out}"))
            .to_string()
    };
    let m0 = line("M_0");
    assert!(m0.contains("size 1024"), "{m0}");
    assert!(m0.contains("#A_1"), "{m0}");
    assert!(m0.contains("stride 512"), "{m0}");
    assert!(m0.contains("off(i) = i * 512"), "{m0}");
    assert!(m0.contains("cnt no"), "{m0}");
    let m10 = line("M_1_0");
    assert!(
        m10.contains("#A_0") && m10.contains("size 2") && m10.contains("off(i) = i * 524288"),
        "{m10}"
    );
    assert!(line("M_1_1").contains("cnt yes"));
    assert!(
        line("M").contains("off(i) = (i / 1024) * 512"),
        "{}",
        line("M")
    );

    let f = TempFile::new(FIG7);
    let r = run(&["explain", f.path()]);
    ok(&r);
    assert!(
        r.stdout
            .contains("tid_0_0 = blockIdx.y, tid_0_1 = blockIdx.x"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("tid_1_0 = threadIdx.y, tid_1_1 = threadIdx.x"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("prefix 16#A_1"), "{}", r.stdout);
    assert!(r.stdout.contains("smem float2"), "{}", r.stdout);

    let f = TempFile::new(FIG21);
    let r = run(&["explain", f.path(), "--const", "N=256", "--type", "S0"]);
    ok(&r);
    assert!(r.stdout.contains("structured [4][4]#S_1"), "{}", r.stdout);
    assert!(r.stdout.contains("off(i) = i * 4"), "{}", r.stdout);

    let f = TempFile::new("pthd [2][2] T\n");
    let r = run(&["explain", f.path()]);
    ok(&r);
    assert!(
        r.stdout.contains("tid_0 = tid / 2, tid_1 = tid % 2"),
        "{}",
        r.stdout
    );
}

#[test]
fn draw_in_the_terminal() {
    let f = TempFile::new(FIG4);
    let r = run(&["draw", f.path(), "--type", "B"]);
    ok(&r);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert!(lines[0].contains("size 12, extent 12"), "{}", r.stdout);
    let cells = |l: &str| -> Vec<u64> {
        l.split_whitespace()
            .skip(1)
            .map(|x| x.parse().unwrap())
            .collect()
    };
    assert_eq!(cells(lines[2]), [0, 3, 6, 9]);
    assert_eq!(cells(lines[4]), [2, 5, 8, 11]);
    assert!(!r.stdout.contains('\x1b'), "not a terminal: no colour");

    let r = run(&["draw", f.path(), "--type", "B", "--color", "always"]);
    ok(&r);
    assert!(r.stdout.contains("\x1b[48;5;"));

    let f = TempFile::new(FIG17);
    let r = run(&["draw", f.path(), "--type", "M"]);
    ok(&r);
    assert!(
        r.stdout
            .contains("showing rows 0..16 of 1024, columns 0..16 of 1024"),
        "{}",
        r.stdout
    );
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 3 + 16);
    assert_eq!(cells(lines[4])[..3], [512, 513, 514]);

    // A one-dimensional type is one row.
    let f = TempFile::new(FIG1);
    let r = run(&["draw", f.path(), "--type", "A_1"]);
    ok(&r);
    assert_eq!(r.stdout.lines().count(), 3);
}

#[test]
fn draw_svg() {
    let f = TempFile::new(FIG7);
    let r = run(&["draw", f.path(), "--type", "B", "--svg", "-"]);
    ok(&r);
    let svg = &r.stdout;
    assert!(svg.starts_with("<svg"));
    assert!(svg.trim_end().ends_with("</svg>"));
    assert_eq!(svg.matches("<rect").count(), 256);
    assert!(svg.contains("size 256, extent 271"));
    assert!(svg.contains(">17</text>"));
    assert!(svg.contains("hsl(240, "), "offset 0 is blue");
    assert!(svg.contains("hsl(0, "), "the last offset is red");

    let out = TempFile::new("");
    let f = TempFile::new(FIG17);
    let r = run(&["draw", f.path(), "--type", "M", "--svg", out.path()]);
    ok(&r);
    let svg = std::fs::read_to_string(out.path()).unwrap();
    assert_eq!(svg.matches("<rect").count(), 64 * 64);
    assert!(svg.contains("showing rows 0..64 of 1024, columns 0..64 of 1024"));
}

// ---------------------------------------------------------------- errors

/// Bad input: exit 2, nothing on stdout, `error: line L, column C: ...` naming `what`, and
/// the source line with a caret under column C.
fn bad(src: &str, line: u32, col: u32, what: &str) {
    let f = TempFile::new(src);
    let r = run(&["offsets", f.path()]);
    assert_eq!(r.code, 2, "{src:?}: {}", r.stderr);
    assert_eq!(r.stdout, "", "{src:?}");
    let first = r.stderr.lines().next().unwrap_or("");
    let at = format!("error: line {line}, column {col}: ");
    assert!(
        first.starts_with(&at),
        "{src:?}: expected `{at}`, got:\n{}",
        r.stderr
    );
    assert!(
        first.contains(what),
        "{src:?}: expected `{what}` in:\n{}",
        r.stderr
    );
    // The snippet: `--> path:L:C`, the line, and a caret at column C.
    assert!(
        r.stderr.contains(&format!("{}:{line}:{col}\n", f.path())),
        "{}",
        r.stderr
    );
    let lines: Vec<&str> = r.stderr.lines().collect();
    let caret = lines.iter().position(|l| l.contains('^')).expect(&r.stderr);
    let text = lines[caret - 1];
    let bar = text.find(" | ").unwrap() + 3;
    let col_in = lines[caret].find('^').unwrap() - bar + 1;
    let src_line = src.lines().nth(line as usize - 1).unwrap_or("");
    if src_line.chars().count() < 60 {
        assert_eq!(
            &text[bar..],
            src_line.trim_end_matches('\r'),
            "{}",
            r.stderr
        );
        assert_eq!(col_in, col as usize, "{}", r.stderr);
    }
}

#[test]
fn semantic_errors() {
    bad("float [4] A\nfloat [#X_1] B\n", 2, 9, "unknown type `X_1`");
    bad(
        "float [4] A\nfloat [#A_3] B\n",
        2,
        9,
        "no such sub-dimension `A_3`",
    );
    bad(
        "float [4][4] A\nfloat [#A_0_0] B\n",
        2,
        9,
        "no such sub-dimension `A_0_0`",
    );
    bad("float [7/2] A\n", 1, 8, "inexact division");
    bad("const N = 6\nfloat [N/4] A\n", 2, 8, "inexact division");
    bad("float [7/0] A\n", 1, 8, "division by zero");
    bad("float [0] A\n", 1, 8, "must be positive");
    bad(
        "float [4][2-5] A\n",
        1,
        11,
        "must be positive, this one is -3",
    );
    bad(
        "float [99999999999999999999] A\n",
        1,
        8,
        "does not fit in 64 bits",
    );
    bad(
        "float [[4294967296][4294967296]] A\n",
        1,
        7,
        "overflows 64 bits",
    );
    bad(
        "const N = 18446744073709551615 + 1\n",
        1,
        11,
        "overflows 64 bits",
    );
    bad(
        "float [4] A\nfloat [5#A] B\n",
        2,
        8,
        "`5#A` is larger than `A`",
    );
    bad(
        "float [4][4] A\nfloat [[3][6]#A_1] B\n",
        2,
        7,
        "more than `A_1`",
    );
    bad(
        "float [4] A\nfloat [#A][3] B\n",
        2,
        11,
        "a natural dimension inside an artificial type",
    );
    bad(
        "float [4] A\nfloat [4] A\n",
        2,
        11,
        "`A` is already declared",
    );
    bad(
        "const N = 2\nfloat [N] N\n",
        2,
        11,
        "`N` is already declared",
    );
    bad("float [M] A\n", 1, 8, "unknown constant `M`");
    bad(
        "pthd [4] A\npthd [#A] B\n",
        2,
        6,
        "thread array's dimensions must be natural",
    );
    bad(
        "cuda(float* a) [4] T\n",
        1,
        1,
        "exactly two top-level dimensions",
    );
    bad("cuda(float* a) [4][2048] T\n", 1, 19, "at most 1024");
}

#[test]
fn limit_errors_point_at_their_declaration() {
    // The library reports this limit without a position; the CLI points at the declaration.
    let mut src = String::from("float [2] T0\n");
    for k in 1..300 {
        src.push_str(&format!("float [#T{}] T{k}\n", k - 1));
    }
    bad(&src, 256, 1, "nest deeper than 256 levels");
    bad(
        "float [3][33554433] A\nfloat [[33554432][3]#A] B\n",
        2,
        1,
        "too large to analyse",
    );
}

#[test]
fn syntax_errors() {
    bad("float [4] 3x\n", 1, 11, "`3x` is not a name");
    bad(
        "float [4 A\n",
        1,
        10,
        "expected `]` to close the `[` at line 1, column 7",
    );
    bad("float [4]] A\n", 1, 10, "found `]`");
    bad("float [[4][2] A\n", 1, 15, "expected `]`");
    bad("float [4] A B\n", 1, 13, "`B`");
    bad("float [4] A\n  )\n", 2, 3, "found `)`");
    bad("global float [4] A\n", 1, 1, "unknown memory kind `global`");
    bad("dmem flaot [4] A\n", 1, 6, "unknown element type `flaot`");
    bad("float [] A\n", 1, 8, "expected a size");
    bad("float A\n", 1, 7, "expected `[`");
    bad("#parray {float [4] A\n", 1, 20, "expected `}`");
    bad("float [4] float\n", 1, 11, "keyword");
    bad("float [4]\n", 2, 1, "the end of the input");
    bad("float [4] A\r\nfloat [#B] C\r\n", 2, 9, "unknown type `B`");
}

/// Errors in an `EXPR` argument: exit 2, nothing on stdout, the position in the argument.
fn bad_expr(src: &str, expr: &str, col: u32, what: &str) {
    let f = TempFile::new(src);
    // A good expression first: stdout must stay empty all the same.
    let first = if src.contains(" A\n") || src.ends_with(" A") {
        "A[0]"
    } else {
        expr
    };
    let r = run(&["offset", f.path(), first, expr]);
    assert_eq!(r.code, 2, "{expr}: {}", r.stderr);
    assert_eq!(r.stdout, "", "{expr}");
    let at = format!("error: in expression `{expr}`: line 1, column {col}: ");
    assert!(
        r.stderr.starts_with(&at),
        "expected `{at}`, got:\n{}",
        r.stderr
    );
    assert!(
        r.stderr.lines().next().unwrap().contains(what),
        "{what}:\n{}",
        r.stderr
    );
    assert!(r.stderr.contains(&format!("1 | {expr}\n")), "{}", r.stderr);
}

#[test]
fn index_errors() {
    bad_expr(
        FIG1,
        "A[1][2][3]",
        1,
        "`A` has 2 sub-dimensions, but 3 indices were given",
    );
    bad_expr(
        FIG1,
        "A[[1][2][3]][0]",
        2,
        "`A_0` has 2 sub-dimensions, but 3 indices were given",
    );
    bad_expr(
        FIG1,
        "A_1[[1][2]]",
        4,
        "`A_1` is a leaf dimension and takes one index",
    );
    bad_expr(
        FIG1,
        "A[6][0]",
        2,
        "index 6 is out of range for `A_0` (size 6)",
    );
    bad_expr(
        FIG1,
        "A[[3][0]][0]",
        3,
        "index 3 is out of range for `A_0_0` (size 3)",
    );
    bad_expr(
        FIG1,
        "A[0][4]",
        5,
        "index 4 is out of range for `A_1` (size 4)",
    );
    bad_expr(FIG1, "Q[1]", 1, "unknown type `Q`");
    bad_expr(FIG1, "A_2[0]", 1, "no such sub-dimension `A_2`");
    bad_expr(FIG1, "A[1", 4, "expected `]`");
    bad_expr(FIG1, "A[1][2] x", 9, "trailing");
    bad_expr(FIG1, "A", 2, "expected `[`");
}

fn bad_cli(args: &[&str], starts: &str) {
    let r = run(args);
    assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
    assert_eq!(r.stdout, "", "{args:?}");
    assert!(
        r.stderr.starts_with(starts),
        "{args:?}: expected `{starts}`, got:\n{}",
        r.stderr
    );
}

#[test]
fn command_line_errors() {
    let f = TempFile::new(FIG1);
    let p = f.path();
    bad_cli(
        &["offsets", p, "--type", "Q"],
        "error: in --type Q: unknown type `Q` (declared: A)",
    );
    bad_cli(
        &["offsets", p, "--type", "A", "--type", "A_5"],
        "error: in --type A_5: no such sub-dimension `A_5`",
    );
    bad_cli(
        &["offsets", p, "--type", "A_x"],
        "error: in --type A_x: `A_x` is not a sub-dimension of `A`",
    );
    bad_cli(
        &["explain", p, "--type", "Q"],
        "error: in --type Q: unknown type",
    );
    bad_cli(
        &["draw", p, "--type", "Q"],
        "error: in --type Q: unknown type",
    );
    bad_cli(
        &["offsets", p, "--const", "N=abc"],
        "error: in --const N=abc: line 1, column 1: unknown constant `abc`",
    );
    bad_cli(
        &["offsets", p, "--const", "N=7/2"],
        "error: in --const N=7/2: line 1, column 1: inexact division",
    );
    bad_cli(
        &["offsets", p, "--const", "N=0"],
        "error: in --const N=0: line 1, column 1: a size must be positive",
    );
    bad_cli(
        &["offsets", p, "--const", "N=4)"],
        "error: in --const N=4): line 1, column 2:",
    );
    bad_cli(
        &["offsets", p, "--const", "N"],
        "error: in --const N: expected NAME=VALUE",
    );
    bad_cli(
        &["offsets", p, "--const", "3=4"],
        "error: in --const 3=4: `3` is not a name",
    );
    let missing = std::env::temp_dir().join("parray-cli-test-no-such-file.txt");
    let missing = missing.to_str().unwrap();
    bad_cli(
        &["offsets", missing],
        &format!("error: cannot read `{missing}`: no such file"),
    );
    bad_cli(&["explain", missing], "error: cannot read");
    // Usage errors, as clap reports them.
    bad_cli(&["offsets"], "error:");
    bad_cli(&["offset", p], "error:");
    bad_cli(&["frobnicate", p], "error:");
    bad_cli(&["draw", p, "--type", "A", "--color", "purple"], "error:");
}

#[test]
fn deep_nesting_is_an_error() {
    let src = format!("float {}4{} A\n", "[".repeat(10_000), "]".repeat(10_000));
    let f = TempFile::new(&src);
    let r = run(&["offsets", f.path()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(
        r.stderr.starts_with("error: line 1, column "),
        "{}",
        r.stderr
    );
    assert!(r.stderr.contains("nesting deeper than"), "{}", r.stderr);
    assert!(
        r.stderr.len() < 2000,
        "the snippet is cut: {}",
        r.stderr.len()
    );
    // Deep size expressions and indices too.
    let src = format!("float [{}4{}] A\n", "(".repeat(10_000), ")".repeat(10_000));
    let f = TempFile::new(&src);
    let r = run(&["offsets", f.path()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    let expr = format!("A{}0{}", "[".repeat(10_000), "]".repeat(10_000));
    let f = TempFile::new(FIG1);
    let r = run(&["offset", f.path(), &expr]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stdout, "");
}

/// A deterministic generator (xorshift), for test inputs.
fn noise(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 24) as u8
        })
        .collect()
}

#[test]
fn garbage_is_an_error_not_a_panic() {
    // Random bytes (not UTF-8).
    let f = TempFile::new(noise(0x9e3779b97f4a7c15, 1 << 20));
    let r = run(&["offsets", f.path()]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(r.stdout, "");
    assert!(r.stderr.starts_with("error: "), "{}", r.stderr);
    assert!(r.stderr.contains("line 1, column"), "{}", r.stderr);
    // Random text over the language's own characters.
    let alphabet = b"[]#0123456789+-*/() \n\t_ABNMT;{}floatdmemsmempthdcuda,";
    for seed in 1..6u64 {
        let text: Vec<u8> = noise(seed, 1 << 20)
            .into_iter()
            .map(|b| alphabet[b as usize % alphabet.len()])
            .collect();
        let f = TempFile::new(&text);
        for cmd in ["offsets", "explain"] {
            let r = run(&[cmd, f.path()]);
            assert_eq!(r.code, 2, "{}", r.stderr);
            assert_eq!(r.stdout, "");
            assert!(r.stderr.starts_with("error: line "), "{}", r.stderr);
        }
    }
    // Garbage on standard input and as an expression.
    let r = run_with(&["offsets", "-"], &noise(7, 1 << 20));
    assert_eq!(r.code, 2);
    let f = TempFile::new(FIG1);
    let r = run(&["offset", f.path(), "A[[[][#]]]]"]);
    assert_eq!(r.code, 2);
}

#[test]
fn closed_pipe_is_not_an_error() {
    let f = TempFile::new(FIG17);
    let mut child = Command::new(env!("CARGO_BIN_EXE_parray"))
        .args(["offsets", f.path()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut buf = [0u8; 100];
    std::io::Read::read_exact(&mut out, &mut buf).unwrap();
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `parray copy`: the path `#copy` takes for each place of the two arrays (a second GPU
/// too), and the kernel a GPU runs (here a transposition, through a shared tile).
#[test]
fn copy_plans() {
    let src =
        b"dmem float [64][64] A\nfloat [#A_1][#A_0] T\npaged float [64][64] H\npaged float [8] E\n";
    let r = run_with(&["copy", "-", "--from", "A", "--to", "T"], src);
    ok(&r);
    assert!(
        r.stdout
            .contains("A (on a GPU) to T (on a GPU): DeviceRemap"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("A (on a GPU) to T (in host memory): DownloadAndScatter"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("__shared__ float tile[1056];"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("A (on a GPU) to T (on another GPU): PeerRemap"),
        "{}",
        r.stdout
    );
    let r = run_with(&["copy", "-", "--from", "H", "--to", "A"], src);
    ok(&r);
    assert_eq!(
        r.stdout,
        "H (in host memory) to A (on a GPU): Bulk: one bulk copy (both contiguous in logical order)\n"
    );
    let r = run_with(&["copy", "-", "--from", "H", "--to", "E"], src);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.contains("`H` has 4096 elements and `E` has 8"),
        "{}",
        r.stderr
    );
}

/// `parray copy` into shared memory: the copy of a cuda body, by TMA (the planner's box),
/// or the rule that refuses it.
#[test]
fn copy_plans_into_shared_memory_are_tmas() {
    let src = b"dmem bf16 [256][512] A\nbf16 [128#A_0][64#A_1] AT\nsmem bf16 [[16][8]][[8 ^ T_0_1][8]] T\nsmem bf16 [16][8][8][8] KA\nbf16 [[#KA_0][#KA_2]][[#KA_1][#KA_3]] KAV\n";
    let r = run_with(&["copy", "-", "--from", "AT", "--to", "T"], src);
    ok(&r);
    assert_eq!(
        r.stdout,
        "AT (global memory) to T (shared memory), in a cuda body: by TMA, 16384 bytes a copy: a 2-dimensional box, innermost first: 64 at stride 1, 128 at stride 512 (elements of AT's array); the 128-byte swizzle; the stage at a multiple of 1024 bytes\n"
    );
    // A view may be of shared memory: the host's paths and TMA's box.
    let r = run_with(&["copy", "-", "--from", "AT", "--to", "KAV"], src);
    ok(&r);
    assert!(
        r.stdout
            .starts_with("AT (in host memory) to KAV (in host memory): HostLoop"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout.contains("a 4-dimensional box, innermost first: 8 at stride 1, 8 at stride 512, 8 at stride 8, 16 at stride 4096 (elements of AT's array); no swizzle; the stage at a multiple of 128 bytes"),
        "{}",
        r.stdout
    );
    let r = run_with(&["copy", "-", "--from", "A", "--to", "KA"], src);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("`A` has 131072 elements and `KA` has 8192"),
        "{}",
        r.stderr
    );
    let src = b"dmem float [64][64] A\nfloat [16#A_0][16#A_1] AT\nsmem float [16][16] S\n";
    let r = run_with(&["copy", "-", "--from", "AT", "--to", "S"], src);
    ok(&r);
    assert!(
        r.stdout.contains("by TMA, 1024 bytes a copy: a 2-dimensional box, innermost first: 16 at stride 1, 16 at stride 64 (elements of AT's array); no swizzle"),
        "{}",
        r.stdout
    );
    let src = b"dmem float [64][64] A\nfloat [16#A_1][16#A_0] AT\nsmem float [16][16] S\n";
    let r = run_with(&["copy", "-", "--from", "AT", "--to", "S"], src);
    ok(&r);
    assert!(
        r.stdout.starts_with("AT (global memory) to S (shared memory), in a cuda body: not by TMA: TMA's innermost dimension reads consecutive global elements"),
        "{}",
        r.stdout
    );
}

/// A `--const` the file neither declares nor uses is an error, not ignored; a bad value is
/// explained as a size expression.
#[test]
fn const_flags_that_do_nothing_are_errors() {
    let src = b"const N = 4\npaged float [N] A\n";
    let r = run_with(&["offsets", "-", "--const", "NOPE=3"], src);
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: in --const NOPE=...: <stdin> neither declares nor uses a constant `NOPE`\n"
    );
    let r = run_with(&["offsets", "-", "--const", "N=3x"], src);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr.starts_with("error: in --const N=3x: line 1, column 2: expected an operator after the number `3`, found `x`"),
        "{}",
        r.stderr
    );
    // A constant the file uses without declaring it may come from the command line.
    let r = run_with(&["offsets", "-", "--const", "M=2"], b"paged float [M] B\n");
    ok(&r);
}

/// `parray draw` needs no `--type` when the file declares one data type (thread arrays do
/// not count), and says which to name when it declares several.
#[test]
fn draw_takes_the_one_data_type() {
    let r = run_with(
        &["draw", "-", "--color", "never"],
        b"paged float [4][6] A\npthd [2] T\n",
    );
    ok(&r);
    assert!(
        r.stdout.starts_with("A (paged float): size 24"),
        "{}",
        r.stdout
    );
    let r = run_with(
        &["draw", "-"],
        b"paged float [4][6] A\nfloat [#A_1][#A_0] B\n",
    );
    assert_eq!(r.code, 2);
    assert_eq!(
        r.stderr,
        "error: the file declares 2 data types: name one with --type (A, B)\n"
    );
}

/// `parray draw --rows a..b --cols c..d` draws any window of the type, labelled by its own
/// rows and columns; a bad range names the flag.
#[test]
fn draw_windows() {
    let src = b"paged float [[8][16]][[8][16]] M\n";
    let r = run_with(
        &[
            "draw", "-", "--color", "never", "--rows", "14..18", "--cols", "12..20",
        ],
        src,
    );
    ok(&r);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(
        lines[1],
        "showing rows 14..18 of 128, columns 12..20 of 128 (choose with --rows, --cols, --window and --zoom)"
    );
    assert_eq!(lines[2].split_whitespace().next(), Some("12"));
    // Row 16 starts the second group of rows (a rule above it): 16 * 128 + 12.
    assert!(lines[5].trim_start().starts_with('─'), "{}", r.stdout);
    assert!(lines[6].starts_with("16  2060"), "{}", r.stdout);
    let r = run_with(&["draw", "-", "--rows", "5..2"], src);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .starts_with("error: in --rows 5..2: expected a range `a..b`"),
        "{}",
        r.stderr
    );
    let r = run_with(&["draw", "-", "--cols", "200..300"], src);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("M has 128 columns: the window starts past them (at 200)"),
        "{}",
        r.stderr
    );
}

/// A terminal picture of `parray draw`, read back: the column labels; each row's label and
/// cells; the lines between columns (`│`, `║`: the index of the column after the line, the
/// same on every row) and the rules between rows (`─`, `═`: the index of the row after it).
#[derive(Debug)]
struct Picture {
    cols: Vec<u64>,
    rows: Vec<u64>,
    /// The cells as numbers (offsets), empty where they are not (`thread:register`).
    cells: Vec<Vec<u64>>,
    /// The cells as written.
    labels: Vec<Vec<String>>,
    col_lines: Vec<(usize, char)>,
    row_rules: Vec<(usize, char)>,
}

fn picture(stdout: &str) -> Picture {
    let mut lines = stdout
        .lines()
        .skip(1)
        .skip_while(|l| l.starts_with("showing"));
    let header = lines.next().expect("a header of column numbers");
    let cols: Vec<u64> = header
        .split_whitespace()
        .map(|x| x.parse().expect(header))
        .collect();
    let (mut rows, mut labels, mut row_rules) = (Vec::new(), Vec::new(), Vec::new());
    let mut col_lines: Option<Vec<(usize, char)>> = None;
    for line in lines {
        let first = line.trim_start().chars().next().expect("no blank line");
        if matches!(first, '─' | '═') {
            row_rules.push((rows.len(), first));
            continue;
        }
        let mut tokens = line.split_whitespace();
        rows.push(tokens.next().unwrap().parse().expect(line));
        let (mut row, mut seps) = (Vec::new(), Vec::new());
        for t in tokens {
            match t {
                "│" => seps.push((row.len(), '│')),
                "║" => seps.push((row.len(), '║')),
                n => row.push(n.to_string()),
            }
        }
        assert_eq!(row.len(), cols.len(), "{line}");
        if let Some(before) = &col_lines {
            assert_eq!(*before, seps, "every row has the same column lines");
        }
        col_lines = Some(seps);
        labels.push(row);
    }
    let cells = labels
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| c.parse().ok())
                .collect::<Option<Vec<u64>>>()
        })
        .collect::<Option<_>>()
        .unwrap_or_default();
    Picture {
        cols,
        rows,
        cells,
        labels,
        col_lines: col_lines.unwrap_or_default(),
        row_rules,
    }
}

/// Every cell of a picture of `ty` is the offset `parray offsets` gives for its row and
/// column (`ncols` columns a row).
fn cells_are_offsets(p: &Picture, src: &str, ty: &str, ncols: u64) {
    let want = one(src, ty, &[]).offsets;
    for (r, row) in p.rows.iter().zip(&p.cells) {
        for (c, &off) in p.cols.iter().zip(row) {
            assert_eq!(off, want[(r * ncols + c) as usize], "{ty}[{r}][{c}]");
        }
    }
}

/// A 128 x 128 view of storage kept in 16 x 16 tiles (tile row, tile column, row and column
/// in the tile): the "tiled 128x128 view".
const TILED: &str = "paged float [8][8][16][16] S\nfloat [[#S_0][#S_2]][[#S_1][#S_3]] V\n";

/// `--zoom tiles` draws one cell per tile, the tile's first element (its smallest offset,
/// from `parray offsets`), so the order of the tiles shows; `--zoom N` every N-th row and
/// column, with lines between the tiles.
#[test]
fn draw_zoom() {
    let f = TempFile::new(TILED);
    let r = run(&["draw", f.path(), "--type", "V", "--zoom", "tiles"]);
    ok(&r);
    assert!(
        r.stdout.starts_with(
            "V (float view): size 16384, extent 16384; rows: V_0 (128 = 8 x 16), columns: V_1 (128 = 8 x 16)\n\
             showing rows 0..128 of 128 in steps of 16, columns 0..128 of 128 in steps of 16: one cell per tile, its first element"
        ),
        "{}",
        r.stdout
    );
    let p = picture(&r.stdout);
    let tiles: Vec<u64> = (0..8).map(|t| t * 16).collect();
    assert_eq!((&p.rows, &p.cols), (&tiles, &tiles));
    assert!(
        p.col_lines.is_empty() && p.row_rules.is_empty(),
        "one cell per tile: no lines"
    );
    cells_are_offsets(&p, TILED, "V", 128);
    let offs = one(TILED, "V", &[]).offsets;
    for (tr, row) in p.cells.iter().enumerate() {
        for (tc, &cell) in row.iter().enumerate() {
            let first = (0..16 * 16)
                .map(|k| offs[(tr * 16 + k / 16) * 128 + tc * 16 + k % 16])
                .min()
                .unwrap();
            assert_eq!(cell, first, "tile ({tr}, {tc})");
        }
    }

    let r = run(&[
        "draw",
        f.path(),
        "--type",
        "V",
        "--zoom",
        "8",
        "--color",
        "never",
    ]);
    ok(&r);
    let p = picture(&r.stdout);
    let every8: Vec<u64> = (0..16).map(|k| k * 8).collect();
    assert_eq!((&p.rows, &p.cols), (&every8, &every8));
    cells_are_offsets(&p, TILED, "V", 128);
    // A line between every two shown columns of one tile and the next (16 / 8 = 2).
    let pairs: Vec<(usize, char)> = (1..8).map(|t| (2 * t, '│')).collect();
    let rules: Vec<(usize, char)> = (1..8).map(|t| (2 * t, '─')).collect();
    assert_eq!((p.col_lines, p.row_rules), (pairs, rules));

    // A range and a zoom: the rows 16, 32, 48 of 16..64.
    let r = run(&[
        "draw",
        f.path(),
        "--type",
        "V",
        "--zoom",
        "tiles",
        "--rows",
        "16..64",
    ]);
    ok(&r);
    let p = picture(&r.stdout);
    assert_eq!(p.rows, [16, 32, 48]);
    cells_are_offsets(&p, TILED, "V", 128);
}

/// A fragment (SPEC 2.14) is drawn as its thread map: each cell `thread:register`, as the
/// PTX ISA places the mma.sync m16n8k16 C fragment (lane t0 + 4 t1 holds row t1 + 8 v1,
/// column 2 t0 + v0 in register v0 + 2 v1) and the wgmma m64n16k16 accumulator (thread
/// t0 + 4 t1 + 32 t2 holds row t1 + 8 v1 + 16 t2, column 2 t0 + v0 + 8 v2 in register
/// v0 + 2 v1 + 4 v2).
#[test]
fn draw_fragment_thread_map() {
    let src = "cuda() [1][[4][8][4]] G
               rmem float [[2][#G_1_1]][[#G_1_2][2]] FC
               rmem float [2][2][#G_1_0][#G_1_1][#G_1_2][2] ACC_REGS
               float [[#ACC_REGS_2][#ACC_REGS_1][#ACC_REGS_3]][[#ACC_REGS_0][#ACC_REGS_4][#ACC_REGS_5]] ACC
";
    let cell = |p: &Picture, r: usize, c: usize| -> (u64, u64) {
        let (t, v) = p.labels[r][c].split_once(':').expect("thread:register");
        (t.parse().unwrap(), v.parse().unwrap())
    };
    let r = run_with(
        &["draw", "-", "--type", "FC", "--color", "never"],
        src.as_bytes(),
    );
    ok(&r);
    assert!(
        r.stdout.lines().next().unwrap().ends_with(
            "distributed over the 128 threads of G's block, 4 elements each: a cell is thread:register"
        ),
        "{}",
        r.stdout
    );
    let p = picture(&r.stdout);
    assert_eq!((p.rows.len(), p.cols.len()), (16, 8));
    for (m, n) in (0..16).flat_map(|m| (0..8).map(move |n| (m, n))) {
        let (t1, v1, t0, v0) = (m % 8, m / 8, n / 2, n % 2);
        assert_eq!(
            cell(&p, m, n),
            ((t0 + 4 * t1) as u64, (v0 + 2 * v1) as u64),
            "FC[{m}][{n}]"
        );
    }
    let r = run_with(
        &[
            "draw", "-", "--type", "ACC", "--window", "64x16", "--svg", "-",
        ],
        src.as_bytes(),
    );
    ok(&r);
    assert!(
        r.stdout.contains("<title>[17][9] = 293, 36:5</title>"),
        "{}",
        r.stdout
    );
    let r = run_with(
        &[
            "draw", "-", "--type", "ACC", "--window", "64x16", "--color", "never",
        ],
        src.as_bytes(),
    );
    ok(&r);
    let p = picture(&r.stdout);
    assert_eq!((p.rows.len(), p.cols.len()), (64, 16));
    for (m, n) in (0..64).flat_map(|m| (0..16).map(move |n| (m, n))) {
        let (t1, v1, t2) = (m % 8, m / 8 % 2, m / 16);
        let (v0, t0, v2) = (n % 2, n / 2 % 4, n / 8);
        let want = (
            (t0 + 4 * t1 + 32 * t2) as u64,
            (v0 + 2 * v1 + 4 * v2) as u64,
        );
        assert_eq!(cell(&p, m, n), want, "ACC[{m}][{n}]");
    }
}

/// Lines separate the groups of a compound axis: `[3][4][6]`'s columns are 4 groups of 6;
/// `[2][[2][4][3]]`'s columns are groups of 3 (`│`) inside groups of 12 (`║`); the rows of
/// the tiled view are groups of 16 (a rule). The cells are `parray offsets`'s.
#[test]
fn draw_group_lines() {
    let src = "paged float [3][4][6] A\n";
    let r = run_with(&["draw", "-", "--window", "24"], src.as_bytes());
    ok(&r);
    assert!(
        r.stdout.starts_with(
            "A (paged float): size 72, extent 72; rows: A_0 (3), columns: A_1..A_2 (24 = 4 x 6)\n"
        ),
        "{}",
        r.stdout
    );
    let p = picture(&r.stdout);
    assert_eq!(p.cols, (0..24).collect::<Vec<u64>>());
    assert_eq!(p.col_lines, [(6, '│'), (12, '│'), (18, '│')]);
    assert!(p.row_rules.is_empty());
    cells_are_offsets(&p, src, "A", 24);

    let src = "paged float [2][[2][4][3]] Q\n";
    let r = run_with(&["draw", "-", "--window", "24"], src.as_bytes());
    ok(&r);
    let p = picture(&r.stdout);
    let want: Vec<(usize, char)> = (1..8)
        .map(|g| (3 * g, if g == 4 { '║' } else { '│' }))
        .collect();
    assert_eq!(p.col_lines, want);
    cells_are_offsets(&p, src, "Q", 24);

    let f = TempFile::new(TILED);
    let r = run(&["draw", f.path(), "--type", "V", "--window", "40x20"]);
    ok(&r);
    let p = picture(&r.stdout);
    assert_eq!((p.rows.len(), p.cols.len()), (40, 20));
    assert_eq!(p.row_rules, [(16, '─'), (32, '─')]);
    assert_eq!(p.col_lines, [(16, '│')]);
    cells_are_offsets(&p, TILED, "V", 128);
    // The rule crosses the column line.
    assert!(r.stdout.contains('┼'), "{}", r.stdout);

    // In colour the line is drawn outside the cells' colour.
    let r = run(&[
        "draw",
        f.path(),
        "--type",
        "V",
        "--window",
        "20",
        "--color",
        "always",
    ]);
    ok(&r);
    assert!(r.stdout.contains("\x1b[0m│\x1b[48;5;"), "{}", r.stdout);
}

/// The SVG: `--window` sets how many rows and columns (default 64), at most 256; each cell
/// is `parray offsets`'s, and thicker lines lie on the groups' boundaries.
#[test]
fn draw_svg_windows_and_lines() {
    let f = TempFile::new(TILED);
    let r = run(&[
        "draw",
        f.path(),
        "--type",
        "V",
        "--window",
        "128",
        "--svg",
        "-",
    ]);
    ok(&r);
    let svg = &r.stdout;
    let offs = one(TILED, "V", &[]).offsets;
    // `<rect x="X" y="Y" ...><title>[R][C] = OFF</title>`: the cell of row R, column C.
    let mut col_x = std::collections::BTreeMap::new();
    let mut row_y = std::collections::BTreeMap::new();
    let mut count = 0;
    for rect in svg.split("<rect ").skip(1) {
        let attr = |name: &str| -> u64 {
            let at = rect.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            rect[at..].split('"').next().unwrap().parse().unwrap()
        };
        let title = rect.split("<title>[").nth(1).unwrap();
        let (rc, off) = title.split_once(" = ").unwrap();
        let (r, c) = rc.split_once("][").unwrap();
        let (r, c): (u64, u64) = (r.parse().unwrap(), c.trim_end_matches(']').parse().unwrap());
        let off: u64 = off.split('<').next().unwrap().parse().unwrap();
        assert_eq!(off, offs[(r * 128 + c) as usize], "V[{r}][{c}]");
        col_x.insert(c, attr("x"));
        row_y.insert(r, attr("y"));
        count += 1;
    }
    assert_eq!(count, 128 * 128);
    // `<line x1="A" y1="B" x2="C" y2="D" ... stroke-width="W"/>`
    let mut vertical = Vec::new();
    let mut horizontal = Vec::new();
    for line in svg.split("<line ").skip(1) {
        let attr = |name: &str| -> u64 {
            let at = line.find(&format!("{name}=\"")).unwrap() + name.len() + 2;
            line[at..].split('"').next().unwrap().parse().unwrap()
        };
        assert_eq!(attr("stroke-width"), 2);
        if attr("x1") == attr("x2") {
            vertical.push(attr("x1"));
        } else {
            horizontal.push(attr("y1"));
        }
    }
    let at_tiles = |m: &std::collections::BTreeMap<u64, u64>| -> Vec<u64> {
        (1..8).map(|t| m[&(t * 16)]).collect()
    };
    assert_eq!(vertical, at_tiles(&col_x));
    assert_eq!(horizontal, at_tiles(&row_y));

    // Coarser groups get thicker lines.
    let r = run_with(
        &["draw", "-", "--svg", "-"],
        b"paged float [2][[2][4][3]] Q\n",
    );
    ok(&r);
    let widths: Vec<&str> = r
        .stdout
        .split("stroke-width=\"")
        .skip(1)
        .map(|w| w.split('"').next().unwrap())
        .collect();
    assert_eq!(widths, ["2", "2", "2", "3", "2", "2", "2"]);
}

/// Bad `--window` and `--zoom` values, a window past the cap, and tiles of a type that has
/// none: exit 2, nothing on stdout, a message naming the flag.
#[test]
fn draw_window_and_zoom_errors() {
    let f = TempFile::new("paged float [1000][1000] B\n");
    let p = f.path();
    bad_cli(
        &["draw", p, "--window", "300"],
        "error: in --window 300: a picture shows at most 256 rows and 256 columns; choose a part with --rows and --cols, or sample the whole with --zoom\n",
    );
    bad_cli(
        &["draw", p, "--window", "3x", "--svg", "-"],
        "error: in --window 3x: expected how many rows and columns to show, N or RxC",
    );
    bad_cli(
        &["draw", p, "--zoom", "0"],
        "error: in --zoom 0: expected a whole number N >= 1",
    );
    bad_cli(
        &["draw", p, "--rows", "0..1000", "--svg", "-"],
        "error: in --rows 0..1000: that is 1000 rows to show, and a picture shows at most 256: choose a smaller range, or sample it with --zoom 4\n",
    );
    bad_cli(
        &["draw", p, "--zoom", "tiles"],
        "error: in --zoom tiles: B has no tiles (its rows and its columns are each one dimension); sample it with --zoom N instead\n",
    );
    // The suggested zoom fits.
    let r = run(&["draw", p, "--rows", "0..1000", "--zoom", "4", "--svg", "-"]);
    ok(&r);
    assert_eq!(r.stdout.matches("<rect").count(), 250 * 64);
}

#[test]
fn explain_says_how_a_type_is_distributed() {
    let f = TempFile::new("mpi [4] P\npaged float [1024][[#P][256]] COLS\n");
    let r = run(&["explain", f.path(), "--type", "COLS"]);
    ok(&r);
    assert!(
        r.stdout.contains("distributed over the mpi array `P` (4 processes): each rank holds a part of 262144 elements"),
        "{}",
        r.stdout
    );
    let r = run(&["offset", f.path(), "COLS[3][[2][5]]"]);
    ok(&r);
    // Rank 2's part, row 3, column 5 of its 256: 2 * 262144 + 3 * 256 + 5.
    assert!(r.stdout.contains("525061"), "{}", r.stdout);
}

/// Hopper's 128-byte swizzle on a bf16 tile (SPEC 2.5, rule 11).
const SWIZZLED: &str = "smem bf16 [[2][8]][[8 ^ T_0_1][8]] T\nbf16 [#T_1] C\n";

#[test]
fn swizzles_in_offset_explain_and_draw() {
    assert_eq!(
        offset(SWIZZLED, &[], &["T[r][c]", "T[1][8]", "C[c]"]),
        ["r * 64 + c % 8 + ((c / 8) ^ (r % 8)) * 8", "64", "c"]
    );
    let f = TempFile::new(SWIZZLED);
    let r = run(&["explain", f.path(), "--type", "T"]);
    ok(&r);
    assert!(
        r.stdout
            .contains("swizzled: its base must be aligned to 1024 bytes"),
        "{}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("swizzled leaf, stride 8, digit ^ T_0_1's"),
        "{}",
        r.stdout
    );
    let r = run(&["explain", f.path(), "--type", "C"]);
    ok(&r);
    assert!(!r.stdout.contains("aligned"), "{}", r.stdout);
    // Row 1 of the drawing: its chunks swapped in pairs.
    let r = run(&["draw", f.path(), "--type", "T"]);
    ok(&r);
    let row1: Vec<u64> = (r.stdout.lines().nth(4).unwrap().split_whitespace())
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    assert_eq!(
        row1[..10],
        [72, 73, 74, 75, 76, 77, 78, 79, 64, 65],
        "{}",
        r.stdout
    );
}
