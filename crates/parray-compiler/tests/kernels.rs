//! The kernels the runtime builds for copies, as the C writer prints them.

use parray_compiler::back::c::Dialect;
use parray_compiler::ir::Indexed;
use parray_compiler::kernels::{
    exchange_kernel, fft_store_callback, rows_kernel, ExchangeStep, Kernel, Rows2d,
};
use parray_layout::copy::{flat_offsets, DigitExchange, RankDigit};
use parray_layout::eval::Program;
use parray_layout::{ElemType, Module};

/// The slab FFT's transpose on 4 ranks, as rank 1's GPU runs it: every access proved
/// (the kernels are built only so), each digit of the element index a thread index.
#[test]
fn exchange_kernels() {
    let m = Module::parse(
        "mpi [4] P
         dmem float2 [[#P][128]][512][512] SLABS_X
         dmem float2 [512][[#P][128]][512] SLABS_Y",
    )
    .unwrap();
    let (x, y) = (
        RankDigit::of(&m, "SLABS_X").unwrap(),
        RankDigit::of(&m, "SLABS_Y").unwrap(),
    );
    let ex = DigitExchange::of(x, y).unwrap();
    let steps = [
        (ExchangeStep::Pack, (&x, &y), Some(&ex)),
        (ExchangeStep::Unpack, (&x, &y), Some(&ex)),
        (ExchangeStep::Local, (&y, &y), None),
    ];
    let kernels: Vec<String> = steps
        .into_iter()
        .map(|(step, digits, ex)| {
            let k = exchange_kernel(ElemType::Float2, step, digits, ex, 1, Dialect::Cuda).unwrap();
            format!("// {step:?}: {:?}\n{}", k.grid, k.source)
        })
        .collect();
    insta::assert_snapshot!(kernels.join("\n"));
}

/// What each exchange kernel of `runs` (with its `from` and `to` lengths) left in its
/// `to` (-1 where it wrote nothing), its `from` holding `i` at `i`: their CUDA C run block
/// by block, thread by thread, on the host, in one program. `None` where there is no C++
/// compiler.
fn run_exchanges(runs: &[(Kernel, u64, u64)]) -> Option<Vec<Vec<i64>>> {
    let cxx = cxx::compiler()?;
    let mut program = SHIM.to_string();
    let mut main = String::from("int main() {\n");
    for (i, (kernel, from_len, to_len)) in runs.iter().enumerate() {
        let (written, _) = cxx::signature(&kernel.source).expect("a kernel");
        let name = format!("{written}_{i}");
        program += &kernel
            .source
            .replace(&format!("{written}("), &format!("{name}("));
        let ([gx, gy, gz], [bx, by, bz]) = (kernel.grid.grid, kernel.grid.block);
        main += &format!(
            "{{
    std::vector<int> from({from_len}), to({to_len}, -1);
    for (int i = 0; i < {from_len}; i++) from[i] = i;
    for (unsigned z = 0; z < {gz}; z++) for (unsigned y = 0; y < {gy}; y++) for (unsigned x = 0; x < {gx}; x++)
    for (unsigned tz = 0; tz < {bz}; tz++) for (unsigned ty = 0; ty < {by}; ty++) for (unsigned tx = 0; tx < {bx}; tx++) {{
        blockIdx = dim3{{x, y, z}}; threadIdx = dim3{{tx, ty, tz}};
        {name}(from.data(), to.data());
    }}
    for (int v : to) std::printf(\"%d\\n\", v);
}}\n"
        );
    }
    program += &main;
    program += "}\n";
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parray-exchange");
    std::fs::create_dir_all(&dir).unwrap();
    let (cpp, exe) = (dir.join("exchange.cpp"), dir.join("exchange"));
    std::fs::write(&cpp, program).unwrap();
    cxx::build(&cxx, &cpp, Some(&exe)).unwrap();
    let out = std::process::Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let mut values = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect::<Vec<i64>>()
        .into_iter();
    Some(
        runs.iter()
            .map(|(_, _, to_len)| values.by_ref().take(*to_len as usize).collect())
            .collect(),
    )
}

#[path = "../../../tests/fuzz/tests/host_c/cxx.rs"]
mod cxx;
const SHIM: &str = include_str!("../../../tests/fuzz/tests/host_c/shim.h");

/// Every step of exchanges between digits at every place, on each rank, moves what
/// `DigitExchange`'s closed forms (the host path's) say: runs longer than a block, runs
/// that a block's threads do not divide (their tails idle), runs of one element, a digit
/// below another's and above it, and local steps (one digit, or a whole source).
#[test]
fn exchange_kernels_move_what_the_closed_forms_say() {
    let cases = [
        // The FFT's transpose: x-slabs to y-slabs and back, runs of 64.
        (
            "mpi [2] P",
            "int [[#P][4]][8][8] A",
            "int [8][[#P][4]][8] B",
        ),
        (
            "mpi [2] P",
            "int [8][[#P][4]][8] A",
            "int [[#P][4]][8][8] B",
        ),
        // Runs of 300 (a block's 256 threads and a tail), three ranks, a batch above.
        (
            "mpi [3] P",
            "int [2][[#P][2]][3][300] A",
            "int [2][6][[#P][1]][300] B",
        ),
        // A 2-D matrix from rows to columns: runs of one element, four ranks.
        ("mpi [4] P", "int [[#P][2]][8] A", "int [8][[#P][2]] B"),
        ("mpi [4] P", "int [8][[#P][2]] A", "int [[#P][2]][8] B"),
    ];
    for (ranks, a, b) in cases {
        let m = Module::parse(&format!("{ranks}\ndmem {a}\ndmem {b}")).unwrap();
        let (src, dst) = (
            RankDigit::of(&m, "A").unwrap(),
            RankDigit::of(&m, "B").unwrap(),
        );
        let ex = DigitExchange::of(src, dst).unwrap();
        let all = ex.block() * src.ranks;
        let (s_part, d_part) = (src.size / src.ranks, dst.size / dst.ranks);
        // Local steps: the destination's digit from the same digit, and from a whole source.
        let whole = RankDigit {
            ranks: 1,
            below: dst.size,
            stride: 1,
            size: dst.size,
        };
        // Each kernel of each rank, its lengths, and what it should leave.
        let mut runs = Vec::new();
        let mut wants = Vec::new();
        for me in 0..src.ranks {
            let kernel = |step, digits: (&RankDigit, &RankDigit), ex| {
                exchange_kernel(ElemType::Int, step, digits, ex, me, Dialect::Cuda).unwrap()
            };
            runs.push((
                kernel(ExchangeStep::Pack, (&src, &dst), Some(&ex)),
                s_part,
                all,
            ));
            let mut packed = vec![-1; all as usize];
            for j in 0..s_part {
                packed[ex.pack(me, j) as usize] = j as i64;
            }
            wants.push((packed, format!("pack on rank {me}: {a} to {b}")));
            runs.push((
                kernel(ExchangeStep::Unpack, (&src, &dst), Some(&ex)),
                all,
                d_part,
            ));
            let unpacked = (0..d_part).map(|j| ex.unpack(me, j) as i64).collect();
            wants.push((unpacked, format!("unpack on rank {me}: {a} to {b}")));
            for (from, from_len) in [(&dst, d_part), (&whole, dst.size)] {
                runs.push((
                    kernel(ExchangeStep::Local, (from, &dst), None),
                    from_len,
                    d_part,
                ));
                let local = (0..d_part)
                    .map(|j| from.at(dst.k(me, j)).1 as i64)
                    .collect();
                wants.push((local, format!("local on rank {me} into {b} from {from:?}")));
            }
        }
        let Some(got) = run_exchanges(&runs) else {
            return;
        };
        for (got, (want, what)) in got.into_iter().zip(wants) {
            assert_eq!(got, want, "{what}");
        }
    }
}

/// A rank that holds no part has nothing to move: no kernel.
#[test]
fn no_exchange_kernel_for_a_rank_without_a_part() {
    let m = Module::parse(
        "mpi [4] P
         dmem float [[#P][128]][64] X
         dmem float [64][[#P][128]] Y",
    )
    .unwrap();
    let (x, y) = (
        RankDigit::of(&m, "X").unwrap(),
        RankDigit::of(&m, "Y").unwrap(),
    );
    let ex = DigitExchange::of(x, y).unwrap();
    let err = exchange_kernel(
        ElemType::Float,
        ExchangeStep::Pack,
        (&x, &y),
        Some(&ex),
        4,
        Dialect::Cuda,
    )
    .unwrap_err();
    assert!(err.message.contains("rank 4 holds no part"), "{err}");
}

/// The two sides of a 2-D copy of rows: row `r`, word `c` at `r * pitch + c`, and
/// storage that ends where the last row does (the copy's arrays may end there).
#[test]
fn rows_sides_are_the_rows_and_end_with_the_last() {
    let rows = Rows2d {
        word: ElemType::UChar,
        height: 3,
        width: 5,
        src_pitch: 7,
        dst_pitch: 5,
    };
    let m = rows.module().unwrap();
    for (ty, pitch) in [("FROM", 7), ("TO", 5)] {
        let (n, off) = flat_offsets(&m, ty).unwrap();
        assert_eq!(n, 15);
        let mut at = Program::new(&off.expr);
        let offsets: Vec<u64> = (0..n).map(|k| at.eval(&[k])).collect();
        let want: Vec<u64> = (0..n).map(|k| k / 5 * pitch + k % 5).collect();
        assert_eq!(offsets, want, "{ty}");
        assert_eq!(Indexed::of_type(&m, ty).extent, Some(2 * pitch + 5), "{ty}");
    }
}

/// The rows kernel of fft3d's gather at N = 1024 on 2 ranks (a chunk of 128 planes, the
/// peer's 4 MiB half of each, into a packed staging array): 16-byte words, sizes folded.
#[test]
fn rows_kernel_of_a_gather() {
    let gather = Rows2d {
        word: ElemType::Int4,
        height: 128,
        width: 1 << 18,
        src_pitch: 1 << 19,
        dst_pitch: 1 << 18,
    };
    let k = rows_kernel("parray_rows", gather, Dialect::Cuda).unwrap();
    insta::assert_snapshot!(format!("// {:?}\n{}", k.grid, k.source));
}

/// The packing store of the cluster FFT's transforms along y (`examples/fft3d.rs`): the
/// plan's output `(z, x, y)` of a chunk, stored as `[peer][x][z][y within the peer]`.
const PACKED: &str = "
    #parray {dmem float2 [2][4][3][4]} CHUNK
    #parray {dmem float2 [#CHUNK_2][#CHUNK_1][[#CHUNK_0][#CHUNK_3]]} PACKED
";

/// cuFFT's store callback of a type stores element `o` at the type's offset of `o`: its
/// C run on the host for every `o`, against the offset function's interpreter.
#[test]
fn an_fft_store_callback_stores_at_the_types_offsets() {
    let module = Module::parse(PACKED).unwrap();
    let store = fft_store_callback("parray_fft_store", (&module, "PACKED")).unwrap();
    insta::assert_snapshot!(store.source);
    let (_, off) = flat_offsets(&module, "PACKED").unwrap();
    let mut program = Program::new(&off.expr);
    let want: Vec<u64> = (0..96).map(|o| program.eval(&[o])).collect();
    let Some(cxx) = cxx::compiler() else {
        return;
    };
    let main = "int main() {
    std::vector<float2> out(96, float2{-1.f, -1.f});
    for (unsigned long long o = 0; o < 96; o++) parray_fft_store(out.data(), o, float2{float(o), 0.f}, nullptr, nullptr);
    for (auto v : out) std::printf(\"%d\\n\", int(v.x));
}
";
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("parray-fft-store");
    std::fs::create_dir_all(&dir).unwrap();
    let (cpp, exe) = (dir.join("store.cpp"), dir.join("store"));
    std::fs::write(&cpp, format!("{SHIM}{}{main}", store.source)).unwrap();
    cxx::build(&cxx, &cpp, Some(&exe)).unwrap();
    let out = std::process::Command::new(&exe).output().unwrap();
    assert!(out.status.success(), "{out:?}");
    let stored: Vec<i64> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| l.parse().unwrap())
        .collect();
    // Offset `want[o]` holds `o`: each element where the type puts it, every offset once.
    let mut expected = vec![-1; 96];
    for (o, at) in want.iter().enumerate() {
        expected[*at as usize] = o as i64;
    }
    assert!(
        !expected.contains(&-1),
        "PACKED is a permutation of its storage"
    );
    assert_eq!(stored, expected);
}

/// A callback for a type of another element, or of more than 32-bit offsets, is an error
/// that says why.
#[test]
fn an_fft_store_callback_refuses_what_cufft_cannot_store() {
    let module = Module::parse(
        "#parray {dmem float [8]} REAL
         #parray {dmem float2 [65536][65536]} HUGE",
    )
    .unwrap();
    let e = fft_store_callback("cb", (&module, "REAL"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("float2"), "{e}");
    let e = fft_store_callback("cb", (&module, "HUGE"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("32-bit"), "{e}");
}
