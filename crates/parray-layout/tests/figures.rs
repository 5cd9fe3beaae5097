//! The paper's figures (PARRAY.md section 5), pinned: for each figure, the explanation of
//! every declared type (`parray_layout::explain`) and the generated offset code, Rust and
//! CUDA C, of every index expression the figure uses. The snapshots are backed by checks:
//! every compiled expression, and the very text of both renderings, is evaluated at
//! random (or all) values of its variables against the reference interpreter
//! (`parray_layout::interp`), and every dimension's offset formula and size, extent and
//! cnt (what the explanation shows) against the interpreter too.

use std::collections::HashMap;
use std::fmt::Write as _;

use parray_layout::interp::Interp;
use parray_layout::{compile, emit_cuda, offset_function, parse_index_expr};
use parray_layout::{parse_program, Module, Offset};

struct Figure {
    /// Snapshot prefix.
    name: &'static str,
    /// The declarations, as in section 5.
    decls: &'static str,
    /// Constants set from outside (`Module::build`'s overrides).
    consts: &'static [(&'static str, u64)],
    /// The index expressions the figure's code uses, in order of appearance.
    exprs: &'static [&'static str],
    /// Other expressions worth pinning (the section 3 worked checks' general forms, the
    /// element offsets of a `#copy`), shown apart.
    extra: &'static [&'static str],
}

const FIG10_BODY: &[&str] = &[
    "M[[tid_0][i]][0]",
    "M[0][[tid_1][j]]",
    "M[0][k]",
    "M[k][0]",
    "M[[tid_0][i]][[tid_1][j]]",
];

const FIG13_BODY: &[&str] = &[
    "M[tid_0][0]",
    "M[0][tid_1]",
    "M[0][k]",
    "M[k][0]",
    "M[tid_0][tid_1]",
];

/// Fig 13's thread array, which Figs 17 and 18 keep ("Fig 13 unchanged").
const FIG13_TA: &str = "#parray {cuda(float* a, float* b, float* c) [1024][1024]} MY_TA\n";

const FIG1: Figure = Figure {
    name: "fig01",
    decls: "#parray {pinned float [[3][2]][4]} A\n",
    consts: &[],
    exprs: &["A[i]", "A[5][2]"],
    extra: &["A[[i][j]][k]", "A[[2][1]][3]"],
};

const FIG4: Figure = Figure {
    name: "fig04",
    decls: "\
#parray {pinned float [4][3]} A
#parray {pinned float [#A_1][#A_0]} B
",
    consts: &[],
    exprs: &["A[3][2]", "B[2][3]"],
    extra: &["A[i][j]", "B[i][j]"],
};

const FIG7: Figure = Figure {
    name: "fig07",
    decls: "\
#parray {dmem float2 [[128/16][16]][[128/16][16]]} DATA
#parray {cuda(float2* worki, float2* worko) [[128/16][128/16]][[16][16]]} MYCUDA
#parray {smem float2 [16][17]} A            // padded tile: no bank conflicts
#parray {smem float2 [#A_0][16#A_1]} B
",
    consts: &[],
    exprs: &[
        "B[tid_1_0][tid_1_1]",
        "DATA[[tid_0_0][tid_1_0]][[tid_0_1][tid_1_1]]",
        "DATA[[tid_0_1][tid_1_0]][[tid_0_0][tid_1_1]]",
        "B[tid_1_1][tid_1_0]",
    ],
    extra: &["B[1][0]", "B[i][j]"],
};

const FIG8: Figure = Figure {
    name: "fig08",
    decls: "#parray {paged float [1024][1024]} M\n",
    consts: &[],
    exprs: &["M[i][k]", "M[k][j]", "M[i][j]"],
    extra: &[],
};

const FIG10: Figure = Figure {
    name: "fig10",
    decls: "\
#parray {paged float [[2][512]][[2][512]]} M
#parray {pthd [2][2]} MY_TA
",
    consts: &[],
    exprs: FIG10_BODY,
    extra: &[],
};

const FIG11: Figure = Figure {
    name: "fig11",
    decls: "\
#parray {dmem float [[2][512]][[2][512]]} M
#parray {cuda(float* a, float* b, float* c) [2][2]} MY_TA
",
    consts: &[],
    exprs: FIG10_BODY,
    extra: &[],
};

const FIG12: Figure = Figure {
    name: "fig12",
    decls: "\
#parray {dmem float [[1024][1]][[1024][1]]} M
#parray {cuda(float* a, float* b, float* c) [1024][1024]} MY_TA
",
    consts: &[],
    exprs: FIG10_BODY,
    extra: &[],
};

const FIG13: Figure = Figure {
    name: "fig13",
    decls: "\
#parray {dmem float [1024][1024]} M
#parray {cuda(float* a, float* b, float* c) [1024][1024]} MY_TA
",
    consts: &[],
    exprs: FIG13_BODY,
    extra: &[],
};

const FIG17: Figure = Figure {
    name: "fig17",
    decls: "\
#parray {dmem float [2][1024][512]} A
#parray {float [#A_1][[#A_0][#A_2]]} M
",
    consts: &[],
    exprs: FIG13_BODY,
    extra: &["M[0][513]", "M[1][0]", "M[i][j]"],
};

const FIG18A: Figure = Figure {
    name: "fig18a",
    decls: "\
#parray {dmem float [4][1024][256]} A
#parray {float [#A_1][[#A_0][#A_2]]} M
",
    consts: &[],
    exprs: FIG13_BODY,
    extra: &[],
};

const FIG18B: Figure = Figure {
    name: "fig18b",
    decls: "\
#parray {dmem float [2][2][512][512]} A
#parray {float [[#A_0][#A_2]][[#A_1][#A_3]]} M
",
    consts: &[],
    exprs: FIG13_BODY,
    extra: &[],
};

/// Fig 21's `#global` declarations, with `type` (the subprogram's parameter) the row-major
/// N x N matrix of Fig 13.
const FIG21_DECLS: &str = "\
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

const FIG21_EXPRS: &[&str] = &[
    "A[[tid_0_0][[0][tid_1_0]]][[0][tid_1_1]]",
    "B[0][[tid_0_1][[tid_1][0]]]",
    "C[[tid_0_0][0]][[tid_0_1][[tid_1][0]]]",
    "A_1_0[i]",
    "S0[tid_1_1][[0][tid_1_0]]",
    "B_0[i][m]",
    "B_1_1_1[1]",
    "R[j][0]",
    "S[m][j]",
    "R[j][1]",
];

/// The element offsets of the two `#copy`s (element `e` of the source and of the target).
const FIG21_COPIES: &[&str] = &["A_0_1_0[e]", "S0_1_0[e]", "R[e]", "C0[e]"];

const FIG21_N1024: Figure = Figure {
    name: "fig21_n1024",
    decls: FIG21_DECLS,
    consts: &[("N", 1024)],
    exprs: FIG21_EXPRS,
    extra: FIG21_COPIES,
};

const FIG21_N4096: Figure = Figure {
    name: "fig21_n4096",
    decls: FIG21_DECLS,
    consts: &[("N", 4096)],
    exprs: FIG21_EXPRS,
    extra: FIG21_COPIES,
};

// ------------------------------------------------------------------ the checks

struct Loaded {
    module: Module,
    interp: Interp,
}

fn load(fig: &Figure, decls: &str) -> Loaded {
    let program = parse_program(decls).unwrap_or_else(|e| panic!("{}: {e}", fig.name));
    let consts: Vec<(String, u64)> = fig
        .consts
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .collect();
    let module = Module::build(&program, &consts).unwrap_or_else(|e| panic!("{}: {e}", fig.name));
    let interp = Interp::new(&program, &consts).unwrap_or_else(|e| panic!("{}: {e}", fig.name));
    Loaded { module, interp }
}

fn compile_text(m: &Module, text: &str) -> Offset {
    let ie = parse_index_expr(text).unwrap_or_else(|e| panic!("{text}: {e}"));
    compile(m, &ie).unwrap_or_else(|e| panic!("{text}: {e}"))
}

/// A small deterministic generator (splitmix64): the checks are reproducible.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `[0, max]`.
    fn upto(&mut self, max: u64) -> u64 {
        if max == u64::MAX {
            self.next()
        } else {
            self.next() % (max + 1)
        }
    }
}

/// Assignments of the variables: all of them when there are few, otherwise the corners
/// (all zero, all largest) and random ones.
fn assignments(maxes: &[u64], rng: &mut Rng) -> Vec<Vec<u64>> {
    let total = maxes
        .iter()
        .try_fold(1u64, |acc, m| acc.checked_mul(m + 1))
        .unwrap_or(u64::MAX);
    if total <= 1 << 12 {
        let mut out = vec![Vec::new()];
        for m in maxes {
            out = out
                .into_iter()
                .flat_map(|prefix| {
                    (0..=*m).map(move |x| {
                        let mut p = prefix.clone();
                        p.push(x);
                        p
                    })
                })
                .collect();
        }
        return out;
    }
    let mut out = vec![vec![0; maxes.len()], maxes.to_vec()];
    for _ in 0..500 {
        out.push(maxes.iter().map(|m| rng.upto(*m)).collect());
    }
    out
}

/// Evaluates the emitted C/Rust text (`+ * / %` on non-negative integers, parentheses,
/// variables by name), so that what the snapshots show is what is checked.
fn eval_source(src: &str, values: &HashMap<String, u64>) -> u64 {
    #[derive(Debug, Clone, PartialEq)]
    enum Tok {
        Num(u64),
        Name(String),
        Op(char),
    }
    let mut toks = Vec::new();
    let mut chars = src.chars().peekable();
    while let Some(&c) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
        } else if c.is_ascii_digit() {
            let mut n = 0u64;
            while let Some(d) = chars.peek().and_then(|c| c.to_digit(10)) {
                n = n * 10 + d as u64;
                chars.next();
            }
            toks.push(Tok::Num(n));
        } else if c.is_ascii_alphabetic() || c == '_' {
            let mut s = String::new();
            while let Some(&c) = chars
                .peek()
                .filter(|c| c.is_ascii_alphanumeric() || **c == '_')
            {
                s.push(c);
                chars.next();
            }
            toks.push(Tok::Name(s));
        } else {
            assert!("+*/%()".contains(c), "unexpected `{c}` in `{src}`");
            toks.push(Tok::Op(c));
            chars.next();
        }
    }
    struct P<'a> {
        toks: &'a [Tok],
        at: usize,
        values: &'a HashMap<String, u64>,
    }
    impl P<'_> {
        fn peek(&self) -> Option<&Tok> {
            self.toks.get(self.at)
        }
        fn sum(&mut self) -> u64 {
            let mut v = self.product();
            while self.peek() == Some(&Tok::Op('+')) {
                self.at += 1;
                v += self.product();
            }
            v
        }
        fn product(&mut self) -> u64 {
            let mut v = self.atom();
            while let Some(Tok::Op(op @ ('*' | '/' | '%'))) = self.peek().cloned() {
                self.at += 1;
                let r = self.atom();
                v = match op {
                    '*' => v * r,
                    '/' => v / r,
                    _ => v % r,
                };
            }
            v
        }
        fn atom(&mut self) -> u64 {
            let t = self.peek().cloned();
            self.at += 1;
            match t {
                Some(Tok::Num(n)) => n,
                Some(Tok::Name(n)) => self.values[&n],
                Some(Tok::Op('(')) => {
                    let v = self.sum();
                    assert_eq!(self.peek(), Some(&Tok::Op(')')));
                    self.at += 1;
                    v
                }
                t => panic!("unexpected {t:?}"),
            }
        }
    }
    let mut p = P {
        toks: &toks,
        at: 0,
        values,
    };
    let v = p.sum();
    assert_eq!(p.at, toks.len(), "trailing tokens in `{src}`");
    v
}

/// Every expression's compiled form and both renderings against the interpreter.
fn check_expr(l: &Loaded, text: &str, rng: &mut Rng) {
    let ie = parse_index_expr(text).unwrap();
    let off = compile_text(&l.module, text);
    let (rust, cuda) = (off.to_source(), emit_cuda::to_c_named(&off));
    let names: Vec<String> = off.vars.names().map(str::to_string).collect();
    let maxes: Vec<u64> = (0..off.vars.len())
        .map(|v| off.vars.max(parray_layout::VarId(v as u32)))
        .collect();
    for values in assignments(&maxes, rng) {
        let by_name: HashMap<String, u64> = names.iter().cloned().zip(values.clone()).collect();
        let want = l
            .interp
            .index(&ie, &by_name)
            .unwrap_or_else(|e| panic!("{text} at {by_name:?}: interpreter: {e}"));
        let got = off.expr.eval(&values);
        assert_eq!(got, want, "{text} at {by_name:?}: compiled `{rust}`");
        assert_eq!(eval_source(&rust, &by_name), want, "{text}: Rust `{rust}`");
        assert_eq!(eval_source(&cuda, &by_name), want, "{text}: CUDA `{cuda}`");
    }
}

/// Every dimension's size, offset formula, extent and cnt against the interpreter.
fn check_dims(l: &Loaded, rng: &mut Rng) {
    for path in l.interp.paths() {
        let d = l.interp.lookup(&path).unwrap();
        let node = l.module.lookup(&path).unwrap().node;
        let size = l.module.size(node);
        assert_eq!(size, l.interp.dim_size(d), "size of {path}");
        let f = offset_function(&l.module, node, "i").unwrap_or_else(|e| panic!("{path}: {e}"));
        let src = f.to_source();
        let at = |i: u64| {
            let want = l.interp.off(d, i).unwrap();
            assert_eq!(f.expr.eval(&[i]), want, "{path}[{i}]: `{src}`");
            let vars = HashMap::from([("i".to_string(), i)]);
            if !f.expr.is_const() {
                assert_eq!(eval_source(&src, &vars), want, "{path}[{i}]: `{src}`");
            }
        };
        if size <= 1 << 12 {
            (0..size).for_each(at);
        } else {
            at(0);
            at(size - 1);
            (0..200).for_each(|_| at(rng.upto(size - 1)));
        }
        // Extent and cnt by enumeration: only where that is quick.
        if size <= 1 << 16 {
            assert_eq!(
                l.module.extent(node),
                l.interp.extent(&path),
                "extent of {path}"
            );
            assert_eq!(
                l.module.is_contiguous(node).unwrap(),
                l.interp.cnt(&path),
                "cnt of {path}"
            );
        }
    }
}

fn offsets_listing(l: &Loaded, fig: &Figure) -> String {
    let mut out = String::new();
    let section = |out: &mut String, title: &str, exprs: &[&str]| {
        let _ = writeln!(out, "== {title}");
        for text in exprs {
            let off = compile_text(&l.module, text);
            let vars: Vec<String> = off
                .vars
                .names()
                .map(|n| {
                    let v = off.vars.id(n).unwrap();
                    format!("{n} < {}", off.vars.max(v) + 1)
                })
                .collect();
            let _ = writeln!(out, "\n{text}");
            if !vars.is_empty() {
                let _ = writeln!(out, "  vars: {}", vars.join(", "));
            }
            let _ = writeln!(out, "  rust: {}", off.to_source());
            let _ = writeln!(out, "  cuda: {}", emit_cuda::to_c_named(&off));
        }
    };
    section(&mut out, "the figure's index expressions", fig.exprs);
    if !fig.extra.is_empty() {
        out.push('\n');
        section(&mut out, "also (not written in the figure)", fig.extra);
    }
    out
}

fn figure(fig: &Figure) {
    let l = load(fig, fig.decls);
    let mut rng = Rng(0x5eed ^ fig.name.len() as u64);
    check_dims(&l, &mut rng);
    for text in fig.exprs.iter().chain(fig.extra) {
        check_expr(&l, text, &mut rng);
    }
    let mut settings = insta::Settings::clone_current();
    let mut description = fig.decls.to_string();
    for (n, v) in fig.consts {
        description.push_str(&format!("(with {n} = {v})\n"));
    }
    settings.set_description(description);
    settings.set_omit_expression(true);
    settings.bind(|| {
        insta::assert_snapshot!(
            format!("{}_types", fig.name),
            parray_layout::explain::explain_types(&l.module)
        );
        insta::assert_snapshot!(format!("{}_offsets", fig.name), offsets_listing(&l, fig));
    });
}

#[test]
fn fig01() {
    figure(&FIG1);
}

#[test]
fn fig04() {
    figure(&FIG4);
}

#[test]
fn fig07() {
    figure(&FIG7);
}

#[test]
fn fig08() {
    figure(&FIG8);
}

#[test]
fn fig10() {
    figure(&FIG10);
}

#[test]
fn fig11() {
    figure(&FIG11);
}

#[test]
fn fig12() {
    figure(&FIG12);
}

#[test]
fn fig13() {
    figure(&FIG13);
}

#[test]
fn fig17() {
    figure(&FIG17);
}

#[test]
fn fig18a() {
    figure(&FIG18A);
}

#[test]
fn fig18b() {
    figure(&FIG18B);
}

#[test]
fn fig21_n1024() {
    figure(&FIG21_N1024);
}

#[test]
fn fig21_n4096() {
    figure(&FIG21_N4096);
}

// ------------------------------------------------- the forms the issue requires

/// Both renderings of `text`, which must agree.
fn code(fig: &Figure, decls: &str, text: &str) -> String {
    let off = compile_text(&load(fig, decls).module, text);
    let (rust, cuda) = (off.to_source(), emit_cuda::to_c_named(&off));
    assert_eq!(rust, cuda, "{text}");
    rust
}

#[test]
fn fig13_unit_and_row_strides() {
    assert_eq!(code(&FIG13, FIG13.decls, "M[0][k]"), "k");
    assert_eq!(code(&FIG13, FIG13.decls, "M[k][0]"), "k * 1024");
    assert_eq!(
        code(&FIG13, FIG13.decls, "M[tid_0][tid_1]"),
        "tid_0 * 1024 + tid_1"
    );
}

#[test]
fn fig17_two_halves() {
    assert_eq!(
        code(&FIG17, FIG17.decls, "M[tid_0][tid_1]"),
        "tid_0 * 512 + (tid_1 / 512) * 524288 + tid_1 % 512"
    );
    // The same, with Fig 13's thread array declared as the figure keeps it.
    let decls = format!("{}{FIG13_TA}", FIG17.decls);
    assert_eq!(
        code(&FIG17, &decls, "M[tid_0][tid_1]"),
        "tid_0 * 512 + (tid_1 / 512) * 524288 + tid_1 % 512"
    );
}
