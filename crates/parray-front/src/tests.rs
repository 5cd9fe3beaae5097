//! The front end without a macro context: each test hands an entry point the tokens a
//! macro would get (with the declarations its companions would have added) and reads the
//! expansion, the CUDA C, or the error and where it points.

use std::str::FromStr;

use proc_macro2::TokenStream;

use crate::resolve::{Carried, Entry, Outcome};
use crate::{detour, dollar};

/// Declarations as the companion macros carry them: `("A", "paged float [4][3] A")`.
fn entries(decls: &[(&str, &str)]) -> Vec<Entry> {
    decls
        .iter()
        .map(|(name, text)| Entry {
            name: name.to_string(),
            text: text.to_string(),
            alias: None,
            what: Carried::Declaration,
        })
        .collect()
}

/// Tokens parsed from text, so that spans have lines and columns.
fn tokens(text: &str) -> TokenStream {
    TokenStream::from_str(text).expect("tokens")
}

/// What a handler made of `input` once its names are declared.
fn expanded(
    handler: fn(&[Entry], TokenStream) -> syn::Result<Outcome>,
    decls: &[(&str, &str)],
    input: &str,
) -> syn::Result<String> {
    let input = dollar::preprocess(tokens(input))?;
    match handler(&entries(decls), input)? {
        Outcome::Done(out) => Ok(out.to_string()),
        Outcome::Need(names) => panic!("undeclared: {names:?}"),
    }
}

/// The CUDA C `kernel_source!` gives for `input`.
fn cuda(decls: &[(&str, &str)], input: &str) -> String {
    let out = expanded(detour::expand_source, decls, input).unwrap_or_else(|e| panic!("{e}"));
    // `{ let _ = || { (the arguments, used) }; "source" }`
    let block: syn::Block = syn::parse_str(&out).expect("a block");
    match block.stmts.last() {
        Some(syn::Stmt::Expr(
            syn::Expr::Lit(syn::ExprLit {
                lit: syn::Lit::Str(s),
                ..
            }),
            None,
        )) => s.value(),
        _ => panic!("not a kernel's source: {out}"),
    }
}

const GRID: (&str, &str) = ("G", "cuda(float* d) [2][32] G");
const D: (&str, &str) = ("D", "dmem float [64] D");

#[test]
fn a_kernel_folds_the_sizes_and_indexes_by_the_grid() {
    let c = cuda(&[GRID, D], "G(d) { d[$D[$tid$]$] = 2.0; }");
    // $tid$ of [2][32] is block * 32 + thread, and D's element is that one: proved in
    // range (D has 64), so written without a check.
    assert!(
        c.contains("const unsigned tid = blockIdx.x * 32 + threadIdx.x;"),
        "{c}"
    );
    assert!(c.contains("    d[tid] = 2.0f;"), "{c}");
    assert!(!c.contains("parray_at"), "{c}");
}

#[test]
fn an_access_past_the_array_is_refused_where_it_is_written() {
    // D has 64 elements; 64 + tid is past it for every thread.
    let input = "G(d) {\n    d[$D[$tid$ + 64]$] = 1.0;\n}";
    let e = expanded(detour::expand, &[GRID, D], input).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
    assert_eq!(e.span().start().line, 2, "{e}");
}

#[test]
fn a_statement_outside_the_subset_is_an_error_at_its_token() {
    let input = "G(d) {\n    let x = 1.0f32;\n    loop { }\n}";
    let e = expanded(detour::expand, &[GRID, D], input).unwrap_err();
    let at = e.span().start();
    assert_eq!((at.line, at.column), (3, 4), "{e}");
}

#[test]
fn errors_of_one_body_come_together_in_source_order() {
    let input = "G(d) {\n    let a: u32 = 1.0;\n    let b: u32 = 2.0;\n}";
    let e = expanded(detour::expand, &[GRID, D], input).unwrap_err();
    let lines: Vec<usize> = e.into_iter().map(|e| e.span().start().line).collect();
    assert_eq!(lines, [2, 3]);
}

#[test]
fn an_undeclared_name_is_asked_of_its_companion() {
    let input = dollar::preprocess(tokens("G(d) { d[$E[$tid$]$] = 2.0; }")).unwrap();
    match detour::expand(&entries(&[GRID]), input).unwrap() {
        Outcome::Need(names) => {
            let names: Vec<String> = names.iter().map(ToString::to_string).collect();
            assert_eq!(names, ["E"]);
        }
        Outcome::Done(out) => panic!("expanded without E: {out}"),
    }
}

#[test]
fn a_detour_on_a_data_type_says_what_runs_one() {
    let e = expanded(detour::expand, &[D], "D { }").unwrap_err();
    assert!(
        e.to_string().contains("a detour runs on a thread array"),
        "{e}"
    );
}

#[test]
fn a_declaration_error_points_into_the_declaration() {
    let out = crate::parray(tokens("pub paged float [0] A;")).to_string();
    assert!(out.contains("compile_error"), "{out}");
    assert!(out.contains("positive"), "{out}");
}

#[test]
fn host_forms_fold_to_the_offset() {
    // A [4][3] row-major: A[1][2] is element 5.
    let out = expanded(
        detour::expand_host,
        &[("A", "paged float [4][3] A")],
        "let o = $A[1][2]$;",
    )
    .unwrap();
    assert!(out.contains("5usize"), "{out}");
}

#[test]
fn a_pointer_from_two_arrays_cannot_be_checked_on_a_gpu() {
    let grid = ("G", "cuda(float* a, float* b, int k) [2][32] G");
    let input =
        "G(a, b, k) {\n    let mut p = a;\n    if k > 0 { p = b; }\n    p[$D[$tid$]$] = 1.0;\n}";
    let e = expanded(detour::expand, &[grid, D], input).unwrap_err();
    assert!(e.to_string().contains("use one pointer per array"), "{e}");
    assert_eq!(e.span().start().line, 4, "{e}");
}

/// The declarations of `examples/quadratic.rs`'s CPU module, with types of another size
/// (`M`), of twice the size and of tiles that cover `X` past its end.
const RUNTIME: [(&str, &str); 9] = [
    ("N", "const N"),
    ("M", "const M"),
    ("X", "paged float [N] X"),
    ("PART", "float [[16][N / 16]#X] PART"),
    ("Y", "paged float [M] Y"),
    ("TWICE", "paged float [2 * N] TWICE"),
    ("MAT", "paged float [N][M] MAT"),
    ("TILES", "float [[ceil(N / 16)][16]#X] TILES"),
    ("T", "pthd [16] T"),
];

/// How many accesses of the pthd detour `input` over [`RUNTIME`] go unchecked (proved) and
/// how many are checked, as written: a loop that reads a run-time type is written twice
/// (strided layouts and others, SPEC.md 3.1), so each access in one counts twice.
fn pthd_accesses(input: &str) -> (usize, usize) {
    let out = expanded(detour::expand, &RUNTIME, input).unwrap_or_else(|e| panic!("{e}"));
    let count = |s: &str| out.matches(s).count();
    let proved = count("load_unchecked (") + count("store_unchecked (");
    let checked = count("Access :: load (") + count("AccessMut :: store (");
    (proved, checked)
}

/// A pthd body over run-time sizes is compiled once for all of them; its accesses are
/// proved as they are at literal sizes where the proofs hold at every binding: quadratic's
/// loop to `$dim(PART_0_1)$` indexes `PART_0_1`, its offset lies in `PART`'s extent, which
/// the detour checks `x` and `y` hold (SPEC.md 3.5, "Bounds").
#[test]
fn accesses_over_run_time_sizes_are_proved_where_they_hold_at_every_size() {
    let quadratic = |bound: &str, index: &str| {
        format!(
            "T {{ for k in {bound} {{ let i = {index}; \
             y[i] = a * x[i] * x[i] + b * x[i] + c; }} }}"
        )
    };
    let part = "$PART[[[$tid$][k]]]$";
    assert_eq!(
        pthd_accesses(&quadratic("0..$dim(PART_0_1)$", part)),
        (8, 0)
    );
    // The other part of the index: below 16, the thread index's dimension.
    assert_eq!(
        pthd_accesses(&quadratic("0..16", "$PART[[[k][0]]]$")),
        (8, 0)
    );
    // Not proved: a bound of another dimension (N, not N / 16), one past the end, a loop
    // to a size of another run-time size.
    assert_eq!(pthd_accesses(&quadratic("0..$dim(X_0)$", part)), (0, 8));
    assert_eq!(
        pthd_accesses(&quadratic("0..=$dim(PART_0_1)$", part)),
        (0, 8)
    );
    assert_eq!(
        pthd_accesses(&quadratic("0..$dim(PART_0_1)$ + 1", part)),
        (0, 8)
    );
    assert_eq!(pthd_accesses(&quadratic("0..$dim(Y_0)$", "$X[k]$")), (0, 8));
    assert_eq!(pthd_accesses(&quadratic("0..$dim(X_0)$", "$X[k]$")), (8, 0));
    // An index past the offset: `i + 1` may be the extent.
    assert_eq!(
        pthd_accesses(&quadratic("0..$dim(PART_0_1)$", "$PART[[[$tid$][k]]]$ + 1")),
        (0, 8)
    );
    // Tiles that may cover X past its end (where 16 does not divide N): their forms reach
    // past its extent, and nothing is proved by them.
    assert_eq!(
        pthd_accesses(&quadratic("0..$dim(TILES_0_0)$", "$TILES[[[k][$tid$]]]$")),
        (0, 8)
    );
}

/// The root's extent: an array indexed as `X` (extent N) holds N elements, so a loop to
/// `$size(X)$` indexes it without a form, and one to `$size(TWICE)$` does not; a stride
/// loop and a guard bound their variables by a run-time size as by a number.
#[test]
fn a_root_indexed_as_a_run_time_type_holds_its_extent() {
    let body =
        |bound: &str| format!("T {{ y[$X[0]$] = 0.0; for k in 0..{bound} {{ y[k] = 1.0; }} }}");
    assert_eq!(pthd_accesses(&body("$size(X)$")), (3, 0));
    assert_eq!(pthd_accesses(&body("$size(TWICE)$")), (1, 2));
    // `for k in 0..$size(X)$` over an array indexed as nothing: nothing to hold.
    assert_eq!(
        pthd_accesses("T { for k in 0..$size(X)$ { y[k] = 1.0; } }"),
        (0, 2)
    );
    let rows = "T { let mut i = $tid$; while i < $dim(MAT_0)$ { \
                for j in 0..$dim(MAT_1)$ { p[$MAT[i][j]$] = 1.0; } i += 16; } }";
    assert_eq!(pthd_accesses(rows), (2, 0));
    let tail = "T { for r in 0..4 { let i = r * 16 + $tid$; \
                if i < $dim(X_0)$ { y[$X[i]$] = 1.0; } } }";
    assert_eq!(pthd_accesses(tail), (2, 0));
    // `i - 1` may wrap below 0 (i may be 0), `i <= dim` lets the end through.
    let wraps = "T { for k in 0..$dim(X_0)$ { y[$X[k - 1]$] = 1.0; } }";
    assert_eq!(pthd_accesses(wraps), (0, 2));
    let through = "T { let i = $tid$ * 1000; if i <= $dim(X_0)$ { y[$X[i]$] = 1.0; } }";
    assert_eq!(pthd_accesses(through), (0, 1));
}

/// `#![min_blocks_per_sm(N)]` takes a `parray!` constant as well as a literal (a
/// subprogram's, which its calls' types may set), never one given at run time: the
/// kernel is declared with it before any size is bound.
#[test]
fn min_blocks_per_sm_takes_a_constant_of_numbers() {
    let blocks = ("BLOCKS", "const BLOCKS = 4 / 2");
    let c = cuda(
        &[GRID, D, blocks],
        "G(d) { #![min_blocks_per_sm(BLOCKS)] d[$D[$tid$]$] = 2.0; }",
    );
    assert!(c.contains("__launch_bounds__(32, 2)"), "{c}");
    let runtime = ("R", "const R");
    let input = "G(d) {\n    #![min_blocks_per_sm(R)]\n    d[$D[$tid$]$] = 2.0;\n}";
    let e = expanded(detour::expand, &[GRID, D, runtime], input).unwrap_err();
    assert!(e.to_string().contains("`R` is given at run time"), "{e}");
    assert_eq!(e.span().start().line, 2, "{e}");
    // A type is not a constant; an undeclared name is asked of its companion, as a form's.
    let input = "G(d) { #![min_blocks_per_sm(D)] d[$D[$tid$]$] = 2.0; }";
    let e = expanded(detour::expand, &[GRID, D], input).unwrap_err();
    assert!(
        e.to_string()
            .contains("N a positive integer or a `parray!` constant"),
        "{e}"
    );
    let input =
        dollar::preprocess(tokens("G(d) { #![min_blocks_per_sm(B)] d[0] = 2.0; }")).unwrap();
    match detour::expand(&entries(&[GRID]), input).unwrap() {
        Outcome::Need(names) => assert_eq!(names[0].to_string(), "B"),
        Outcome::Done(out) => panic!("expanded without B: {out}"),
    }
}

/// A TMA copy's map (SPEC 3.9, "TMA copies") is encoded at the launch over the array of
/// its source's parameter, named by its place among the kernel's parameters: the second
/// here, whatever the body's locals.
#[test]
fn a_tma_copy_names_its_source_parameter_for_the_launch() {
    let decls = [
        ("TG", "cuda(bf16* out, bf16* a) [1][128] TG"),
        ("A", "dmem bf16 [128][128] A"),
        ("AT", "bf16 [64#A_0][64#A_1] AT"),
        ("ROWS", "smem bf16 [64][64] ROWS"),
        ("FULL", "smem mbarrier [2] FULL"),
    ];
    let input = "TG(&o, &a) {
        let s = ROWS::create();
        let full = FULL::create();
        if $tid_1$ == 0 {
            #mbarrier init FULL(full) arrivals 1;
        }
        #sync;
        if $tid_1$ == 0 {
            #copy async AT(a + $A[64][0]$) to ROWS(s) on FULL(full);
        }
        #wait FULL(full) parity 0;
    }";
    let out = expanded(detour::expand, &decls, input).unwrap_or_else(|e| panic!("{e}"));
    let out: String = out.split_whitespace().collect();
    assert!(
        out.contains("::parray::gpu::TmaArg{param:1usize,decl:\"AT\""),
        "{out}"
    );
    assert!(out.contains("len:__parray_n1asu64"), "{out}");
}

/// `#setmaxnreg` (SPEC 3.9, "Roles"): `setmaxnreg.{inc,dec}.sync.aligned.u32 N` in the
/// kernel, which is then built for sm_90a; a budget the instruction cannot take is an
/// error at the number, saying which it takes.
#[test]
fn setmaxnreg_is_the_instruction_and_its_budget_is_checked_at_the_number() {
    let grid = ("TG", "cuda(float* d) [1][256] TG");
    let input = "TG(d) {
        #![min_blocks_per_sm(1)]
        if $tid_1$ < 128 {
            #setmaxnreg dec 40;
        } else {
            #setmaxnreg inc 232;
        }
    }";
    let c = cuda(&[grid], input);
    assert!(
        c.contains(parray_compiler::back::c::SM90A)
            && c.contains("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\" ::: \"memory\");")
            && c.contains("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\" ::: \"memory\");"),
        "{c}"
    );
    for (bad, column) in [("inc 250", 39), ("dec 16", 39), ("up 64", 35)] {
        let input = format!("TG(d) {{\n    if $tid_1$ < 128 {{ #setmaxnreg {bad}; }}\n}}");
        let e = expanded(detour::expand, &[grid], &input).unwrap_err();
        let at = e.span().start();
        assert!(
            e.to_string()
                .contains("a number from 24 to 256 and a multiple of 8"),
            "{e}"
        );
        assert_eq!((at.line, at.column), (2, column), "{bad}: {e}");
    }
    // Without the block's size ptxas drops the instruction, silently: an error here.
    let input = "TG(d) {\n    if $tid_1$ < 128 { #setmaxnreg dec 40; }\n}";
    let e = expanded(detour::expand, &[grid], input).unwrap_err();
    assert!(
        e.to_string().contains("declare `#![min_blocks_per_sm(N)]`"),
        "{e}"
    );
    assert_eq!(e.span().start().line, 2, "{e}");
}
