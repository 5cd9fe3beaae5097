//! Seed 001's Julia set: a 1000 x 1000 RGBA image (`--n N`: N x N, a run-time size), one
//! GPU block per pixel as in the seed (`dim3 grid(DIM, DIM)`, one thread each), red where `a = a^2 + c` (c = -0.8 + 0.156i)
//! stays within |a|^2 <= 1000 for 200 steps. Checked pixel for pixel against the same
//! iteration on the CPU, written as a PNG (`--png PATH`, default `julia.png`), and on a
//! GPU timed beside the seed's kernel compiled the same way (and how many of its pixels
//! differ from ours is said: NVRTC fuses the seed's products its own way).
//!
//! The products are written as the seed's kernel is compiled on a GPU, fused
//! multiply-adds (`r * r - i * i` is `fma(r, r, -(i * i))`): with `mul_add` the CPU, the
//! emulation and the GPU round alike, so the images agree to the pixel.

mod common;

use parray::prelude::*;

parray! {
    const DIM;                      // the image's side, from the command line
    // Rows (y), columns (x), RGBA.
    dmem uchar [DIM][DIM][4] BITMAP;
    // The seed's grid: a block per pixel, y then x (blockIdx.y, blockIdx.x), one thread.
    cuda(uchar* ptr) [[DIM][DIM]][1] JULIA;
}

/// The seed's kernel, unchanged but for `extern "C"` and its helpers written inline (its
/// `DIM` defined before it is compiled).
const SEED: &str = r#"
struct cuComplex {
    float r, i;
    __device__ cuComplex(float a, float b) : r(a), i(b) {}
    __device__ float magnitude2(void) { return r * r + i * i; }
    __device__ cuComplex operator*(const cuComplex& a) { return cuComplex(r * a.r - i * a.i, i * a.r + r * a.i); }
    __device__ cuComplex operator+(const cuComplex& a) { return cuComplex(r + a.r, i + a.i); }
};
__device__ int julia(int x, int y) {
    const float scale = 1.5;
    float jx = scale * (float)((DIM >> 1) - x) / (DIM >> 1);
    float jy = scale * (float)((DIM >> 1) - y) / (DIM >> 1);
    cuComplex c(-0.8, 0.156);
    cuComplex a(jx, jy);
    for (int i = 0; i < 200; ++i) {
        a = a * a + c;
        if (a.magnitude2() > 1000) return 0;
    }
    return 1;
}
extern "C" __global__ void kernel(unsigned char* ptr) {
    int x = blockIdx.x;
    int y = blockIdx.y;
    int offset = x + y * gridDim.x;
    int juliaValue = julia(x, y);
    ptr[(offset << 2) + 0] = 255 * juliaValue;
    ptr[(offset << 2) + 1] = 0;
    ptr[(offset << 2) + 2] = 0;
    ptr[(offset << 2) + 3] = 255;
}
"#;

/// Whether the point of pixel (x, y) stays bounded: the CPU's reference, the body's
/// iteration in plain Rust.
fn in_set(x: usize, y: usize, dim: usize) -> bool {
    let half = (dim / 2) as i32;
    let (mut r, mut i) = (
        1.5f32 * (half - x as i32) as f32 / half as f32,
        1.5f32 * (half - y as i32) as f32 / half as f32,
    );
    for _ in 0..200 {
        let next_r = r.mul_add(r, -(i * i)) - 0.8;
        let next_i = i.mul_add(r, r * i) + 0.156;
        (r, i) = (next_r, next_i);
        if r.mul_add(r, i * i) > 1000.0 {
            return false;
        }
    }
    true
}

fn main() -> parray::Result<()> {
    let png = common::png_path("julia.png");
    let dim = common::size_arg("julia", 1000);
    DIM.bind(dim)?;
    let mut bitmap = BITMAP::create()?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    let parray = common::median_time(repeats, true, || {
        detour!(JULIA(&mut bitmap) {
            let x = $tid_0_1$;
            let y = $tid_0_0$;
            let half = ($dim(BITMAP_0)$ / 2) as i32;
            let mut r = 1.5f32 * (half - x as i32) as f32 / half as f32;
            let mut i = 1.5f32 * (half - y as i32) as f32 / half as f32;
            let mut value: u32 = 1;
            for _step in 0..200 {
                let next_r = r.mul_add(r, -(i * i)) - 0.8;
                let next_i = i.mul_add(r, r * i) + 0.156;
                r = next_r;
                i = next_i;
                if r.mul_add(r, i * i) > 1000.0 {
                    value = 0;
                    break;
                }
            }
            ptr[$BITMAP[y][x][0]$] = (255 * value) as u8;
            ptr[$BITMAP[y][x][1]$] = 0;
            ptr[$BITMAP[y][x][2]$] = 0;
            ptr[$BITMAP[y][x][3]$] = 255;
        })
    })?;
    let got = bitmap.to_vec()?;
    let want: Vec<u8> = (0..dim * dim)
        .flat_map(|p| {
            [
                if in_set(p % dim, p / dim, dim) {
                    255
                } else {
                    0
                },
                0,
                0,
                255,
            ]
        })
        .collect();
    let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
    // The seed's source at this size, kept for the process (the kernels it compiles are).
    let seed_source: &'static str =
        Box::leak(format!("#define DIM {dim}\n{SEED}").into_boxed_str());
    let seed = if device {
        bitmap.fill(7)?;
        let t = common::median_time(repeats, true, || {
            common::raw_kernel(
                "kernel",
                seed_source,
                [dim as u32, dim as u32, 1],
                [1, 1, 1],
                &[&bitmap],
            )
        })?;
        Some(t)
    } else {
        None
    };
    // The seed's kernel rounds as NVRTC contracts its products, which need not be how the
    // body fuses them: a few pixels on the set's edge may differ (said, not a failure).
    let seed_pixels = if device {
        let theirs = bitmap.to_vec()?;
        let differ = theirs
            .chunks(4)
            .zip(got.chunks(4))
            .filter(|(a, b)| a != b)
            .count();
        format!("; the seed kernel's image differs in {differ} pixels")
    } else {
        String::new()
    };
    common::write_png(&png, dim, &got)?;
    println!("backend: {backend}");
    println!(
        "wrote {png}: {} of {} pixels in the set; {differ} bytes differ from the CPU's image{seed_pixels}",
        got.chunks(4).filter(|p| p[0] == 255).count(),
        dim * dim,
    );
    common::seed_row(
        &format!("julia ({dim} x {dim})"),
        backend,
        parray,
        seed,
        differ == 0,
    );
    common::check(differ == 0);
    Ok(())
}
