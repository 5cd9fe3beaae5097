//! TMA tensor maps on the hardware: the planner's map of a tile
//! (`parray_layout::tma::plan`), encoded by `TensorMapSpec` over an array on the GPU, and
//! one `cp.async.bulk.tensor` completed on an mbarrier, writes the shared-memory bytes the
//! destination type's offsets say, element by element. The planner's model of the box
//! fill is tested against the interpreter on the CPU (`parray-layout`'s `tests/tma.rs`);
//! this checks the model against an H100/H200:
//! `cargo test -p parray-runtime --test tma -- --include-ignored`.

use std::sync::Arc;

use cudarc::driver::{CudaContext, DevicePtr, LaunchConfig, PushKernelArg};
use parray_layout::tma::{self, TmaPlan};
use parray_layout::{ElemType, Module};
use parray_runtime::devices::tensor_map::TensorMapSpec;

/// The test kernel of a plan's box: thread 0 initialises an mbarrier, arms it with the
/// box's bytes and issues the copy at the start coordinates; every thread waits for phase 0
/// and copies the shared bytes out.
fn kernel(plan: &TmaPlan) -> String {
    let rank = plan.dims.len();
    let coords: Vec<String> = (0..rank).map(|i| format!("%{}", i + 2)).collect();
    let operands: Vec<String> = (0..rank).map(|i| format!("\"r\"(c[{i}])")).collect();
    let bar_operand = format!("%{}", rank + 2);
    format!(
        r#"
struct __align__(64) parray_tensor_map {{ unsigned long long opaque[16]; }};
extern "C" __global__ void tma_box(const __grid_constant__ parray_tensor_map map, int c0, int c1, int c2, int c3, int c4, unsigned char* out) {{
    __shared__ __align__(1024) unsigned char tile[{bytes}];
    __shared__ __align__(8) unsigned long long bar;
    const int c[5] = {{c0, c1, c2, c3, c4}};
    unsigned b = (unsigned)__cvta_generic_to_shared(&bar);
    unsigned t = (unsigned)__cvta_generic_to_shared(tile);
    if (threadIdx.x == 0) {{
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b) : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    }}
    __syncthreads();
    if (threadIdx.x == 0) {{
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(b), "r"({bytes}) : "memory");
        asm volatile("cp.async.bulk.tensor.{rank}d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {{{coords}}}], [{bar_operand}];"
            :: "r"(t), "l"((unsigned long long)&map), {operands}, "r"(b) : "memory");
    }}
    asm volatile("{{\n .reg .pred p;\n WAIT:\n mbarrier.try_wait.parity.shared::cta.b64 p, [%0], %1;\n @!p bra WAIT;\n }}" :: "r"(b), "r"(0) : "memory");
    for (unsigned i = threadIdx.x; i < {bytes}; i += blockDim.x) out[i] = tile[i];
}}
"#,
        bytes = plan.box_bytes(),
        coords = coords.join(", "),
        operands = operands.join(", "),
    )
}

/// Copies the tile of `src` at global offset `at` into `dst` on the GPU by TMA and checks
/// every element's bytes against the two types' offsets.
fn check_on_gpu(
    ctx: &Arc<CudaContext>,
    decls: &str,
    (src, dst): (&str, &str),
    array: &str,
    at: u64,
) {
    let m = Module::parse(decls).unwrap();
    let plan = tma::plan(&m, src, dst).unwrap();
    let elem = ElemType::Bf16;
    let len = m.size(m.lookup(array).unwrap().node);
    let host: Vec<u16> = (0..len).map(|i| (i * 7919 % 65521) as u16).collect();
    let stream = ctx.default_stream();
    let global = stream.clone_htod(&host).unwrap();
    let out = stream.alloc_zeros::<u8>(plan.box_bytes() as usize).unwrap();
    let address = global.device_ptr(&stream).0;
    let map = TensorMapSpec::of(src, &plan, elem, address, len)
        .and_then(|s| s.encode(src))
        .unwrap();
    let ptx = cudarc::nvrtc::compile_ptx_with_opts(
        kernel(&plan),
        cudarc::nvrtc::CompileOptions {
            arch: Some("sm_90"),
            ..Default::default()
        },
    )
    .unwrap();
    let f = ctx
        .load_module(ptx)
        .unwrap()
        .load_function("tma_box")
        .unwrap();
    assert_eq!(plan.crossing(at, len), None);
    let mut c = [0i32; 5];
    for (ci, x) in c.iter_mut().zip(plan.coordinates(at)) {
        *ci = x as i32;
    }
    let mut launch = stream.launch_builder(&f);
    launch.arg(&map);
    for ci in &c {
        launch.arg(ci);
    }
    launch.arg(&out);
    // SAFETY: the kernel's parameters are the map (the same 128 bytes at 64-byte
    // alignment), five ints and a byte pointer to `out`, which holds the box's bytes the
    // kernel writes; the box read lies inside `global` (`crossing` is None).
    unsafe {
        launch.launch(LaunchConfig {
            grid_dim: (1, 1, 1),
            block_dim: (128, 1, 1),
            shared_mem_bytes: 0,
        })
    }
    .unwrap();
    let bytes = stream.clone_dtoh(&out).unwrap();
    let (s, d) = (m.lookup(src).unwrap(), m.lookup(dst).unwrap());
    let e = elem.size_bytes() as usize;
    for k in 0..m.size(s.node) {
        let want = host[(at + m.offset_at(s.node, k)) as usize];
        let o = m.offset_at(d.node, k) as usize * e;
        let got = u16::from_le_bytes([bytes[o], bytes[o + 1]]);
        assert_eq!(got, want, "{decls}: element {k} of {dst} (byte {o})");
    }
}

#[test]
#[ignore = "needs a Hopper GPU"]
fn tma_boxes_land_where_the_types_say() {
    let ctx = CudaContext::new(0).unwrap();
    // gemm_bf16's A stage in core matrices, a 4-dimensional map, at row 16, column 64.
    check_on_gpu(
        &ctx,
        "dmem bf16 [256][512] A; bf16 [128#A_0][64#A_1] AT;
         smem bf16 [16][8][8][8] KA; bf16 [[#KA_0][#KA_2]][[#KA_1][#KA_3]] KAV;",
        ("AT", "KAV"),
        "A",
        16 * 512 + 64,
    );
    // K-major, 128-byte swizzle.
    check_on_gpu(
        &ctx,
        "dmem bf16 [256][512] A; bf16 [128#A_0][64#A_1] AT; smem bf16 [[16][8]][[8 ^ T_0_1][8]] T;",
        ("AT", "T"),
        "A",
        32 * 512 + 128,
    );
    // The 64 and 32-byte modes.
    check_on_gpu(
        &ctx,
        "dmem bf16 [64][256] A; bf16 [64#A_0][32#A_1] AT; smem bf16 [[8][4][2]][[4 ^ T_0_1][8]] T;",
        ("AT", "T"),
        "A",
        32,
    );
    check_on_gpu(
        &ctx,
        "dmem bf16 [64][256] A; bf16 [64#A_0][16#A_1] AT; smem bf16 [[8][2][4]][[2 ^ T_0_1][8]] T;",
        ("AT", "T"),
        "A",
        48,
    );
    // gemm_bf16's B stage: two MN-major 128B atoms of 64 columns, a 3-dimensional map.
    check_on_gpu(
        &ctx,
        "dmem bf16 [512][1024] B; bf16 [64#B_0][128#B_1] BT;
         smem bf16 [2][[8][8]][[8 ^ BS_1_1][8]] BS; bf16 [[#BS_1_0][#BS_1_1]][[#BS_0][#BS_2]] BSV;",
        ("BT", "BSV"),
        "B",
        64 * 1024 + 256,
    );
}

/// The kernel's text is what the GPU test compiles: one coordinate operand per dimension
/// and the barrier after them.
#[test]
fn the_test_kernel_names_each_coordinate() {
    let m = Module::parse(
        "dmem bf16 [256][512] A; bf16 [128#A_0][64#A_1] AT;
         smem bf16 [16][8][8][8] KA; bf16 [[#KA_0][#KA_2]][[#KA_1][#KA_3]] KAV;",
    )
    .unwrap();
    let src = kernel(&tma::plan(&m, "AT", "KAV").unwrap());
    assert!(src.contains("cp.async.bulk.tensor.4d"), "{src}");
    assert!(src.contains("[%1, {%2, %3, %4, %5}], [%6]"), "{src}");
    assert!(src.contains("tile[16384]"), "{src}");
}
