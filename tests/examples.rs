//! Every example runs to `check: ok` (cuda ones on the CPU emulation unless a GPU is
//! forced with `PARRAY_BACKEND=cuda`): each is built in release mode and run as a user
//! runs it, `cargo run --release --example NAME`.

use std::process::Command;
use std::sync::OnceLock;

fn run_example(name: &str, args: &[&str]) -> String {
    run_example_with(name, args, &[]).0
}

/// The example's stdout and stderr, run with the environment variables `env` too.
fn run_example_with(name: &str, args: &[&str], env: &[(&str, &str)]) -> (String, String) {
    let (ok, stdout, stderr) = run_example_env(name, args, env);
    assert!(ok, "example {name} failed:\n{stdout}\n{stderr}");
    (stdout, stderr)
}

/// Whether the example succeeded, and its stdout and stderr.
fn run_example_status(name: &str, args: &[&str]) -> (bool, String, String) {
    run_example_env(name, args, &[])
}

/// The examples these tests do not run: `bench` needs a GPU (`cargo test` builds it, in
/// the test profile), and the mpi examples need the `mpi` feature (`tests/mpi.rs`).
const NOT_RUN_HERE: [&str; 3] = ["bench", "fft3d", "mpi_copies"];

/// Every example these tests run built once, in release mode, by one cargo: it compiles
/// them side by side where each test's `cargo run` would wait for the others' (a large
/// example's build is mostly one thread).
fn examples_built() {
    static BUILT: OnceLock<()> = OnceLock::new();
    BUILT.get_or_init(|| {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/examples");
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("the examples directory")
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter_map(|f| f.strip_suffix(".rs").map(str::to_string))
            .filter(|n| !NOT_RUN_HERE.contains(&n.as_str()))
            .collect();
        names.sort();
        let out = Command::new(env!("CARGO"))
            .args(["build", "--release", "--quiet"])
            .args(names.iter().flat_map(|n| ["--example", n.as_str()]))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo runs");
        assert!(
            out.status.success(),
            "the examples do not build:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    });
}

fn run_example_env(name: &str, args: &[&str], env: &[(&str, &str)]) -> (bool, String, String) {
    examples_built();
    let out = Command::new(env!("CARGO"))
        .args(["run", "--release", "--quiet", "--example", name, "--"])
        .args(args)
        .env(
            "PARRAY_BACKEND",
            std::env::var("PARRAY_BACKEND").unwrap_or_else(|_| "emulate".into()),
        )
        .envs(env.iter().copied())
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    (out.status.success(), stdout, stderr)
}

fn checked(name: &str) -> String {
    let stdout = run_example(name, &[]);
    assert!(
        stdout.contains("check: ok"),
        "example {name} did not check: {stdout}"
    );
    stdout
}

/// The README's example is `examples/readme.rs`, and it runs to its check.
#[test]
fn the_readme_example_runs() {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/README.md")).unwrap();
    let example =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/readme.rs"))
            .unwrap();
    assert!(
        readme.contains(&format!("```rust\n{example}```")),
        "README.md's example differs from examples/readme.rs"
    );
    checked("readme");
}

/// Out-of-range accesses are clean panics in a release build too.
#[test]
fn out_of_bounds_in_release() {
    let out = checked("out_of_bounds");
    assert!(
        out.contains("offset 100000000 out of bounds for SMALL (extent 16)"),
        "{out}"
    );
}

#[test]
fn figures_on_the_cpu() {
    let fig01 = checked("fig01_natural");
    assert!(fig01.contains("array access: 21") && fig01.contains("number of rows = 6"));
    let fig04 = checked("fig04_artificial");
    assert!(fig04.contains("array access: 123") && fig04.contains("number of rows = 3"));
    let fig05 = checked("fig05_thread_array");
    for line in ["myta 0 0", "myta 1 0", "myta 2 1", "myta 3 1"] {
        assert!(fig05.contains(line), "fig05 lacks {line}: {fig05}");
    }
    checked("fig08_matmul_serial");
    checked("fig10_matmul_pthd");
    for v in ["parray", "runtime", "hand"] {
        let out = run_example("matmul_cpu", &["--variant", v]);
        assert!(out.contains("check: ok"), "matmul_cpu {v}: {out}");
    }
}

#[test]
fn cuda_figures() {
    for name in [
        "fig07_transpose",
        "fig11_matmul_gpu4",
        "fig12_matmul_gpu",
        "fig13_matmul_gpu",
        "fig17_matmul_halves",
        "fig18_matmul_strips",
        "fig18_matmul_blocks",
        "reduction",
    ] {
        let out = checked(name);
        assert!(
            out.contains("backend: "),
            "{name} does not say its backend: {out}"
        );
    }
}

#[test]
fn the_main_example() {
    let out = run_example("matmul", &[]);
    // Figs 8 to 18, Fig 21, the tuned SGEMM and the bf16 and TF32 tensor-core GEMMs (and
    // cuBLAS's SGEMM, bf16 and TF32 GEMMs on a GPU), each checked.
    let gpu = out.contains("cuBLAS");
    assert_eq!(
        out.lines().filter(|l| l.ends_with(" ok")).count(),
        if gpu { 16 } else { 13 },
        "{out}"
    );
    assert!(
        out.contains("fig21 SGEMM")
            && out.contains("tuned SGEMM")
            && out.contains("bf16 wgmma")
            && out.contains("tf32 wgmma")
            && out.contains("tf32 ws + #copy B"),
        "{out}"
    );
}

/// Fig 21's subprogram on its four layouts, each product checked (against an f64 CPU
/// product under the emulation, cuBLAS on a GPU), and the kernel it generates (CUDA C,
/// HIP C++) for row-major storage at N = 1024.
#[test]
fn fig21_sgemm_on_every_layout() {
    let out = checked("fig21_sgemm");
    for layout in ["row-major", "halves", "strips", "blocks"] {
        let rows = out.lines().filter(|l| l.contains(layout)).count();
        let checked = out
            .lines()
            .filter(|l| l.contains(layout) && l.contains(" ok ("))
            .count();
        assert!(rows >= 2 && rows == checked, "{layout}: {out}");
    }
    insta::assert_snapshot!(
        "fig21_kernel_n1024",
        run_example("fig21_sgemm", &["--source"])
    );
    insta::assert_snapshot!(
        "fig21_kernel_n1024_hip",
        run_example("fig21_sgemm", &["--source", "hip"])
    );
}

/// The tuned SGEMM subprogram on square layouts and a rectangular shape, each product
/// checked, and its kernel (CUDA C, HIP C++) for row-major 4096 x 4096.
#[test]
fn tuned_sgemm_on_layouts_and_shapes() {
    let out = checked("sgemm");
    for layout in ["row-major", "strips", "blocks"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("tuned") && l.contains(layout) && l.contains(" ok (")),
            "{layout}: {out}"
        );
    }
    assert!(out.contains("256x512x128"), "{out}");
    insta::assert_snapshot!("sgemm_kernel_n4096", run_example("sgemm", &["--source"]));
    insta::assert_snapshot!(
        "sgemm_kernel_n4096_hip",
        run_example("sgemm", &["--source", "hip"])
    );
}

/// Whether the tuned subprogram's row for the shape `MxNxK` says its product checked.
#[track_caller]
fn assert_tuned_row_checks(out: &str, shape: &str) {
    assert!(
        out.lines()
            .any(|l| l.starts_with("tuned") && l.contains(shape) && l.contains(" ok (")),
        "{out}"
    );
}

/// The tuned SGEMM on sizes given on the command line (its types' sizes bound when it
/// runs, its kernel made at the first launch), checked, sizes its tiles do not divide
/// and K split over several blocks included; a size of zero is an error naming it, before
/// anything runs.
#[test]
fn tuned_sgemm_takes_its_shape_from_the_command_line() {
    let out = run_example("sgemm", &["--m", "384", "--n", "256", "--k", "48"]);
    assert_tuned_row_checks(&out, "384x256x48");
    // Sizes no tile divides: the tiles at the edges are guarded.
    let out = run_example("sgemm", &["--m", "1000", "--n", "999", "--k", "777"]);
    assert_tuned_row_checks(&out, "1000x999x777");
    // K split over three blocks a tile, which add their sums into C.
    let out = run_example(
        "sgemm",
        &["--m", "100", "--n", "99", "--k", "777", "--split", "3"],
    );
    assert!(out.contains("K split in 3"), "{out}");
    assert_tuned_row_checks(&out, "100x99x777");
    // Narrow tiles (128x128), split: the same subprogram with Q = 2.
    let out = run_example(
        "sgemm",
        &[
            "--m", "300", "--n", "199", "--k", "333", "--tile", "128", "--split", "2",
        ],
    );
    assert!(out.contains("tiles of C 128x128, K split in 2"), "{out}");
    assert_tuned_row_checks(&out, "300x199x333");
    // Slim tiles (128x64: Q = 1, a thread loading one row of a tile of B), chosen for a
    // C of few columns; and for a C of few rows, C^T = B^T A^T made on the transposed
    // views of the same storage.
    // K = 100 is no multiple of 16 but of 4: the loop over K's tiles takes two a step
    // (`T128X64U2`), unless told otherwise.
    let out = run_example("sgemm", &["--m", "300", "--n", "60", "--k", "100"]);
    assert!(out.contains("tiles of C 128x64"), "{out}");
    assert!(out.contains("its loop unrolled by 2"), "{out}");
    assert_tuned_row_checks(&out, "300x60x100");
    let out = run_example(
        "sgemm",
        &["--m", "300", "--n", "60", "--k", "100", "--unroll", "1"],
    );
    assert!(!out.contains("unrolled"), "{out}");
    assert_tuned_row_checks(&out, "300x60x100");
    let (ok, _, stderr) = run_example_status(
        "sgemm",
        &[
            "--m", "9", "--n", "9", "--k", "9", "--tile", "128", "--unroll", "2",
        ],
    );
    assert!(!ok && stderr.contains("--unroll is 1, or 2"), "{stderr}");
    let out = run_example("sgemm", &["--m", "60", "--n", "300", "--k", "200"]);
    assert!(out.contains("tiles of C^T 128x64"), "{out}");
    assert_tuned_row_checks(&out, "60x300x200");
    // Tiles 64 rows high (P = 1: a thread loads 4 k of one row of A and computes 4 rows
    // of C), split and not.
    let out = run_example(
        "sgemm",
        &["--m", "70", "--n", "300", "--k", "100", "--tile", "64x256"],
    );
    assert!(out.contains("tiles of C 64x256"), "{out}");
    assert_tuned_row_checks(&out, "70x300x100");
    let out = run_example(
        "sgemm",
        &[
            "--m", "130", "--n", "70", "--k", "100", "--tile", "64x64", "--split", "2",
        ],
    );
    assert!(out.contains("tiles of C 64x64, K split in 2"), "{out}");
    assert_tuned_row_checks(&out, "130x70x100");
    let (ok, _, stderr) = run_example_status(
        "sgemm",
        &["--m", "9", "--n", "9", "--k", "9", "--tile", "32"],
    );
    assert!(
        !ok && stderr.contains("--tile is 256, 128 or 64"),
        "{stderr}"
    );
    let (ok, _, stderr) = run_example_status("sgemm", &["--m", "0", "--n", "999", "--k", "777"]);
    assert!(!ok, "{stderr}");
    assert!(
        stderr.contains("the run-time size SM cannot be 0"),
        "{stderr}"
    );
}

/// The tuned SGEMM split over two devices (two emulated ones here), each GPU's rows of A
/// and C uploaded and gathered by `#copy`, beside the same subprogram on one device; every
/// product checked against an f64 CPU product.
#[test]
fn sgemm_split_over_two_devices() {
    let out = run_example("sgemm_gpus", &["--small"]);
    assert!(
        out.contains("command: ") && out.contains("--small"),
        "{out}"
    );
    for run in [
        "tuned, 1 GPU ",
        "tuned, 1 GPU, with upload",
        "tuned, 2 GPUs ",
        "tuned, 2 GPUs, with upload",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("   512") && l.contains(run) && l.contains(" ok (")),
            "{run}: {out}"
        );
    }
    assert!(out.ends_with("check: ok\n"), "{out}");
}

/// The seeds' CUDA programs (SPEC.md 3.11), each at its small size under the emulation,
/// each checking itself against a CPU computation.
#[test]
fn seed_programs() {
    for name in SEED_PROGRAMS {
        let out = run_example(name, &["--small"]);
        assert!(out.contains("check: ok"), "{name}: {out}");
        assert!(out.contains("backend: "), "{name}: {out}");
    }
}

/// Seed programs whose size is not the point take it from the command line (`--n`), at
/// sizes no tile of theirs divides, each checking itself.
#[test]
fn seed_programs_take_their_size_from_the_command_line() {
    // (example, N, how its rows name N)
    let runs = [
        ("vector_add", "1001", "(1001 "),
        ("dot", "999", "(999 "),
        ("vector_add", "1", "(1 "),
        ("quadratic", "4352", "(4352)"),
        ("integral", "1000", "(N = 1000)"),
        ("integral", "123457", "(N = 123457)"),
    ];
    for (name, n, named) in runs {
        let out = run_example(name, &["--n", n]);
        assert!(
            out.contains(named) && out.contains("check: ok"),
            "{name} --n {n}: {out}"
        );
    }
    let (ok, _, stderr) = run_example_status("dot", &["--n", "0"]);
    assert!(!ok && stderr.contains("usage: dot [--n N]"), "{stderr}");
    // 16 CPU threads take equal parts: the declaration refuses a size they do not divide.
    let (ok, _, stderr) = run_example_status("quadratic", &["--n", "1000"]);
    assert!(
        !ok && stderr.contains("PART cannot take N = 1000"),
        "{stderr}"
    );
}

/// The HIP C++ of every kernel of the seed programs (`PARRAY_DUMP_SOURCE=hip`, their
/// small runs), pinned beside the CUDA snapshots; `tests/hip_snapshots.rs` compiles each
/// with hipcc for a CDNA and an RDNA GPU.
#[test]
fn seed_programs_in_hip() {
    for name in SEED_PROGRAMS {
        let (_, stderr) = run_example_with(name, &["--small"], &[("PARRAY_DUMP_SOURCE", "hip")]);
        let mut kernels = 0;
        for block in stderr.split("parray: HIP source of kernel ").skip(1) {
            let (kernel, rest) = block
                .split_once(":\n")
                .expect("a kernel's name, then its source");
            // The source runs to the next line of the runtime's (`parray: ...`), if any.
            let source = rest.split("\nparray: ").next().unwrap_or(rest);
            insta::assert_snapshot!(format!("seed_{name}__{kernel}_hip"), source);
            kernels += 1;
        }
        assert!(kernels > 0, "{name} printed no HIP source:\n{stderr}");
    }
}

/// The softmax of `bf16` rows (64 rows under the emulation) and of the same rows in `f32`,
/// one body for both, each checked against an `f64` softmax; `--rows`/`--cols` size it.
#[test]
fn softmax_in_bf16_and_f32() {
    let out = run_example("softmax_bf16", &["--small"]);
    assert!(out.contains("softmax of 64 x 4096 bf16"), "{out}");
    assert!(
        out.contains("the same body over f32") && out.contains("(check ok)"),
        "{out}"
    );
    assert!(out.ends_with("check: ok\n"), "{out}");
    let out = run_example("softmax_bf16", &["--rows", "3", "--cols", "1000"]);
    assert!(out.contains("softmax of 3 x 1000 bf16"), "{out}");
    assert!(out.ends_with("check: ok\n"), "{out}");
}

/// Layer norm of `bf16` rows and of the same rows in `f32`, one body for both, each
/// checked against an `f64` layer norm; at an odd width too.
#[test]
fn layer_norm_in_bf16_and_f32() {
    let out = run_example("layernorm_bf16", &["--small"]);
    assert!(out.contains("layer norm of 64 x 4096 bf16"), "{out}");
    assert!(
        out.contains("the same body over f32") && out.contains("(check ok)"),
        "{out}"
    );
    assert!(out.ends_with("check: ok\n"), "{out}");
    let out = run_example("layernorm_bf16", &["--rows", "5", "--cols", "777"]);
    assert!(out.contains("layer norm of 5 x 777 bf16"), "{out}");
    assert!(out.ends_with("check: ok\n"), "{out}");
}

/// The tensor-core GEMM subprograms (warpgroups' wgmma over shared tiles), checked against
/// an f64 product under the emulation (cuBLAS on a GPU): their fixed shape on both tiles
/// and the warp-specialised kernel (its persistent grid of one block under the emulation,
/// so that the stages' phases run on into a second tile), in bf16 on row-major, halves,
/// strips and blocks storage and in f16 row-major, and the TF32 kernel (B K-major, and
/// row-major B moved there by `#copy`); the warp-specialised kernels' CUDA C (snapshots,
/// bf16 and tf32); a shape given
/// on the command line (a row of tiles, four of 128 or two of 256 columns, on its fixed
/// grids, and the warp-specialised kernels in bf16, f16 and tf32 on theirs, their TMA maps
/// planned at its sizes), one of more tiles than that grid has blocks, and a shape the tiles do not
/// divide, refused with a usage line.
#[test]
fn bf16_gemm_on_tensor_cores() {
    let gpu = std::env::var("PARRAY_BACKEND").is_ok_and(|b| b == "cuda");
    let out = checked("gemm_bf16");
    let shape = if gpu { "4096x4096x4096" } else { "256x256x256" };
    let runs = [
        ("bf16", "row-major"),
        ("bf16", "halves (Fig 17)"),
        ("bf16", "strips (Fig 18a)"),
        ("bf16", "blocks (Fig 18b)"),
        ("f16 ", "row-major"),
    ];
    for tile in ["parray 128x128", "parray 128x256", "parray ws"] {
        for (elem, layout) in runs {
            assert!(
                out.lines().any(|l| l.starts_with(tile)
                    && l.contains(&format!(" {elem} {layout} "))
                    && l.contains(shape)
                    && l.contains(" ok (")),
                "{tile} {elem} {layout}: {out}"
            );
        }
    }
    // TF32: cuBLAS's on row-major A and B; the kernel on B stored K-major, and on
    // row-major B moved there by `#copy` at each call.
    for (kernel, layout) in [
        ("parray ws", "rows, B K-major"),
        ("ws + #copy B", "row-major"),
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(kernel)
                && l.contains(&format!(" tf32 {layout} "))
                && l.contains(shape)
                && l.contains(" ok (")),
            "{kernel} tf32 {layout}: {out}"
        );
    }
    insta::assert_snapshot!(
        "gemm_ws_kernel_n4096",
        run_example("gemm_bf16", &["--source", "--tile", "ws"])
    );
    insta::assert_snapshot!(
        "gemm_tf32_kernel_n4096",
        run_example("gemm_bf16", &["--source", "--tile", "ws", "--elem", "tf32"])
    );
    let out = run_example("gemm_bf16", &["--m", "128", "--n", "512", "--k", "192"]);
    assert!(
        out.lines()
            .any(|l| l.starts_with("parray") && l.contains("128x512x192") && l.contains(" ok (")),
        "{out}"
    );
    // The warp-specialised kernels at sizes given at run time: their TMA maps planned at
    // the bound sizes, on tiles 128 x 256, 128 x 128 and (bf16, f16) 128 x 64. Each block
    // makes one tile at every width, so the plan (`*`) is the narrowest, whose k-tiles are
    // the fewest bytes.
    for (kernel, elem) in [
        ("parray ws 256 ", "bf16"),
        ("parray ws 256 ", "f16 "),
        ("parray ws 256 ", "tf32"),
        ("parray ws 128 ", "bf16"),
        ("parray ws 128 ", "f16 "),
        ("parray ws 128*", "tf32"),
        ("parray ws 64* ", "bf16"),
        ("parray ws 64* ", "f16 "),
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(kernel)
                && l.contains(&format!(" {elem} "))
                && l.contains("128x512x192")
                && l.contains(" ok (")),
            "{kernel} {elem}: {out}"
        );
    }
    assert!(out.ends_with("check: ok\n"), "{out}");
    // A shape no tile divides, every element checked against the f64 product: M's and N's
    // edge tiles (rows past 136, B's atoms past 264 not copied, C's stores guarded), K's
    // tail read as TMA's zeros, and rows of 76 bf16 (152 bytes) copied into padded rows
    // for TMA first; TF32's rows of 76 floats are whole 16-byte steps.
    let out = run_example(
        "gemm_bf16",
        &["--m", "136", "--n", "264", "--k", "76", "--tile", "ws"],
    );
    for (kernel, elem) in [
        ("ws256 + #copy A", "bf16"),
        ("ws256 + #copy A", "f16 "),
        ("ws128 + #copy A", "bf16"),
        ("ws128 + #copy A", "f16 "),
        ("ws64*+#copy A", "bf16"),
        ("ws64*+#copy A", "f16 "),
        ("parray ws 256 ", "tf32"),
        ("parray ws 128*", "tf32"),
    ] {
        assert!(
            out.lines().any(|l| l.starts_with(kernel)
                && l.contains(&format!(" {elem} "))
                && l.contains("136x264x76")
                && l.contains(" ok (")),
            "{kernel} {elem}: {out}"
        );
    }
    assert!(out.ends_with("check: ok\n"), "{out}");
    // 272 tiles on the 264 blocks of the run-time grid: a block makes two, reusing its
    // stages, and a block of the second round none; one k-tile, fewer than the stages the
    // pipeline fills first.
    let out = run_example(
        "gemm_bf16",
        &[
            "--m", "2176", "--n", "2048", "--k", "64", "--tile", "128", "--elem", "bf16",
        ],
    );
    assert!(
        out.lines().any(|l| l.starts_with("parray 128x128")
            && l.contains("2176x2048x64")
            && l.contains(" ok (")),
        "{out}"
    );
    let (ok, _, stderr) = run_example_status("gemm_bf16", &["--m", "100", "--tile", "128"]);
    assert!(
        !ok && stderr.contains(
            "100x100x100 is not made of whole tiles of --tile 128: M must be a multiple of 128"
        ),
        "{stderr}"
    );
    // Rows of 100 bf16 are not whole 16-byte steps, which B's TMA copies need.
    let (ok, _, stderr) = run_example_status("gemm_bf16", &["--m", "100", "--tile", "ws"]);
    assert!(
        !ok && stderr.contains("100x100x100: the warp-specialised kernel reads B's rows by TMA, whose strides are multiples of 16 bytes: N must be a multiple of 8"),
        "{stderr}"
    );
    let (ok, _, stderr) = run_example_status("gemm_bf16", &["--m", "128", "--layout", "strips"]);
    assert!(
        !ok && stderr.contains("a shape given by --m --n --k runs on row-major storage"),
        "{stderr}"
    );
    let (ok, _, stderr) = run_example_status("gemm_bf16", &["--elem", "f32"]);
    assert!(
        !ok && stderr.contains("--elem takes one of bf16, f16"),
        "{stderr}"
    );
}

/// A leapfrog step of particles, each a record, with the field a function of the body
/// language, checks itself against an `f64` step; `--n` sizes it (here a tail the last
/// block's guard covers); `--soa` steps them kept one array per field too.
#[test]
fn particles_are_records() {
    let out = run_example("particles", &["--n", "1000", "--soa"]);
    assert!(
        out.contains("a leapfrog step of 1000 particles of 24 bytes"),
        "{out}"
    );
    assert!(
        out.contains("the same step, the particles kept one array per field (soa): parray"),
        "{out}"
    );
    assert!(out.ends_with("check: ok\n"), "{out}");
}

/// The seed examples, in the issue's order.
const SEED_PROGRAMS: &[&str] = &[
    "pitch",
    "vector_add",
    "julia",
    "ray_constant",
    "dot",
    "histogram",
    "quadratic",
    "integral",
    "hash_table",
    "matmul_steps",
];

/// Run as a user runs it, with no arguments, on the CPU emulation the matmul steps take
/// the small sizes (the GPU's take minutes there) and say so.
#[test]
fn matmul_steps_says_which_sizes_it_runs() {
    let out = checked("matmul_steps");
    if std::env::var("PARRAY_BACKEND").is_ok_and(|b| b == "cuda") {
        return;
    }
    assert!(
        out.contains("sizes: N = 100, 128 under the emulation (a GPU runs N = 1000, 4096"),
        "{out}"
    );
}

/// A size from the command line: `row_sums` binds `--n` to its run-time size `N` and
/// checks the row sums against the CPU, at sizes no tile divides.
#[test]
fn row_sums_takes_its_size_from_the_command_line() {
    for n in ["1000", "999", "1"] {
        let stdout = run_example("row_sums", &["--n", n]);
        assert!(
            stdout.contains(&format!("{n} x {n}")) && stdout.contains("check: ok"),
            "row_sums --n {n}: {stdout}"
        );
    }
}
