//! Every worked check of PARRAY.md section 3, through the library.

use parray_layout::{compile, offset_function, parse_index_expr, Module};

fn module(src: &str) -> Module {
    Module::parse(src).unwrap_or_else(|e| panic!("{e}"))
}

/// The offset of a constant index expression.
fn at(m: &Module, expr: &str) -> u64 {
    let ie = parse_index_expr(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let off = compile(m, &ie).unwrap_or_else(|e| panic!("{expr}: {e}"));
    off.as_const()
        .unwrap_or_else(|| panic!("{expr} is not constant"))
}

/// The simplified source of a symbolic index expression.
fn src(m: &Module, expr: &str) -> String {
    let ie = parse_index_expr(expr).unwrap();
    compile(m, &ie)
        .unwrap_or_else(|e| panic!("{expr}: {e}"))
        .to_source()
}

fn dim(m: &Module, name: &str) -> u64 {
    m.size(m.lookup(name).unwrap().node)
}

fn offsets(m: &Module, name: &str) -> Vec<u64> {
    let node = m.lookup(name).unwrap().node;
    (0..m.size(node)).map(|i| m.offset_at(node, i)).collect()
}

#[test]
fn fig1_natural() {
    let m = module("pinned float [[3][2]][4] A");
    assert_eq!(dim(&m, "A"), 24);
    assert_eq!(at(&m, "A[5][2]"), 22);
    assert_eq!(dim(&m, "A_0"), 6);
    assert_eq!(dim(&m, "A_1"), 4);
    assert_eq!(src(&m, "A[[i][j]][k]"), "i * 8 + j * 4 + k");
    for i in 0..3 {
        for j in 0..2 {
            for k in 0..4 {
                assert_eq!(at(&m, &format!("A[[{i}][{j}]][{k}]")), i * 8 + j * 4 + k);
            }
        }
    }
    assert_eq!(src(&m, "A[i]"), "i");
    assert_eq!(src(&m, "A_0[i]"), "i * 4");
}

#[test]
fn fig4_artificial() {
    let m = module("#parray {pinned float [4][3]} A\n#parray {pinned float [#A_1][#A_0]} B");
    assert_eq!(at(&m, "B[2][3]"), 11);
    assert_eq!(at(&m, "A[3][2]"), 11);
    assert_eq!(dim(&m, "B_0"), 3);
    assert_eq!(src(&m, "B[i][j]"), "i + j * 3");
}

#[test]
fn fig17_halves() {
    let m = module("dmem float [2][1024][512] A\nfloat [#A_1][[#A_0][#A_2]] M");
    assert_eq!(at(&m, "M[0][513]"), 524289);
    assert_eq!(at(&m, "M[1][0]"), 512);
    assert_eq!(src(&m, "M[i][j]"), "i * 512 + (j / 512) * 524288 + j % 512");
    assert_eq!(
        src(&m, "M[tid_0][tid_1]"),
        "tid_0 * 512 + (tid_1 / 512) * 524288 + tid_1 % 512"
    );
}

#[test]
fn fig7_padded_tile() {
    let m = module("smem float2 [16][17] A\nsmem float2 [#A_0][16#A_1] B");
    assert_eq!(dim(&m, "B"), 256);
    assert_eq!(at(&m, "B[1][0]"), 17);
    assert_eq!(m.extent(m.lookup("B").unwrap().node), 271);
}

#[test]
fn fig13_unit_strides() {
    let m = module("dmem float [1024][1024] M");
    assert_eq!(src(&m, "M[0][k]"), "k");
    assert_eq!(src(&m, "M[k][0]"), "k * 1024");
}

const FIG21: &str = "
const N = 256
dmem float [N][N] type
cuda(float* a, float* b, float* c) [[N/16][N/256]][[4][32]] CUDA
dmem float [[N/16][[4][4]]#type_0][[N/32][32]#type_1] A
dmem float [[N/32][32]#type_0][[N/256][[128][2]]#type_1] B
dmem float [#A_0][#B_1] C
dmem float [#C_0_1][#C_1_1_1] C0
smem float [32][17] S
smem float [32#S_0][[4][4]#S_1] S0
rmem float [16][2] R
";

#[test]
fn fig21_sgemm_views() {
    let m = module(FIG21);
    assert_eq!(&offsets(&m, "A_1_0")[..3], &[0, 32, 64]);
    assert_eq!(offsets(&m, "A_0_1_0"), vec![0, 1024, 2048, 3072]);
    assert_eq!(offsets(&m, "S0_1_0"), vec![0, 4, 8, 12]);
    assert_eq!(dim(&m, "C0"), 32);
    assert_eq!(&offsets(&m, "C0")[..5], &[0, 1, 256, 257, 512]);
    assert_eq!(at(&m, "A[[1][[0][2]]][[0][5]]"), 4613);
    assert_eq!(at(&m, "S0[3][[0][2]]"), 53);
    assert_eq!(at(&m, "C[[1][0]][[0][[5][0]]]"), 4106);
    assert!(m.is_contiguous(m.lookup("B_1_1_1").unwrap().node).unwrap());
}

#[test]
fn symbolic_offsets_agree_with_the_tree() {
    let m = module(FIG21);
    for ty in ["A", "B", "C", "C0", "S0", "A_0", "B_1", "A_1_0", "S0_1_0"] {
        let node = m.lookup(ty).unwrap().node;
        let f = offset_function(&m, node, "i").unwrap();
        for i in 0..m.size(node) {
            assert_eq!(
                f.expr.eval(&[i]),
                m.offset_at(node, i),
                "{ty}[{i}] = {}",
                f.to_source()
            );
        }
    }
}

#[test]
fn sizes_taken_from_a_type_with_dim() {
    // Fig 21's subprogram takes N from its type parameter: the same offsets as with N given.
    let given = module(FIG21);
    let derived = module(&FIG21.replace(
        "const N = 256\ndmem float [N][N] type",
        "dmem float [256][256] type\nconst N = dim(type_0)",
    ));
    for name in ["A", "A_1_0", "B", "C0", "S0"] {
        assert_eq!(offsets(&given, name), offsets(&derived, name), "{name}");
    }
    let m =
        module("paged float [4][[2][3]] A\nconst K = dim(A_1_1) * dim ( A )\npaged float [K] B");
    assert_eq!(dim(&m, "B"), 72);
}

#[test]
fn dim_of_an_unknown_type_is_an_error_at_the_name() {
    let e = Module::parse("paged float [4] A\nconst K = dim(A_3)").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2, column 15: in declaration `K`: no such sub-dimension `A_3`: `A` has 1 sub-dimension (asked for number 3)"
    );
    let e = Module::parse("const K = dim(4)").unwrap_err();
    assert!(
        e.to_string().contains("expected a type or sub-dimension"),
        "{e}"
    );
}
