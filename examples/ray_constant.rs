//! Seed 001's constant memory and events: the ray tracer of "CUDA by Example" (chapter 6)
//! that the notes follow. 20 random spheres, seen from above, one thread per pixel of a
//! 1024 x 1024 image (`--n N`: N x N, a run-time size, N a multiple of 16); each pixel takes the colour of the highest sphere its ray hits,
//! shaded by the slope there. The spheres are a `cmem` type, read from the kernel's
//! constant bank (its `__constant__` array, filled by the launch: SPEC.md 4.4), and the
//! same body runs again on a `dmem` copy of them, reading global memory: both timed with
//! CUDA events beside the book's two kernels. The products are fused multiply-adds where
//! a GPU would fuse them, so the CPU's image, the emulation's and the GPU's agree to the
//! byte; written as a PNG (`--png PATH`, default `ray.png`).

mod common;

use parray::prelude::*;

parray! {
    const DIM;                      // the image's side, from the command line
    const SPHERES = 20;
    // Each sphere as the book's struct: r, b, g, radius, x, y, z.
    cmem float [SPHERES][7] CONST_SPHERES;
    dmem float [SPHERES][7] GLOBAL_SPHERES;
    // Rows (y), columns (x), RGBA.
    dmem uchar [DIM][DIM][4] BITMAP;
    // Blocks of 16 x 16 threads, a thread per pixel: (blockIdx.y, blockIdx.x), then
    // (threadIdx.y, threadIdx.x).
    cuda(float* s, uchar* ptr) [[DIM/16][DIM/16]][[16][16]] RAYS;
}

/// The book's two kernels: the spheres in constant memory, and the same from global
/// memory (its `ray_noconst`). Its `Sphere::hit` with the products fused as the body's;
/// its `DIM` defined before it is compiled.
const SEED: &str = r#"
#define INF 2e10f
struct Sphere {
    float r, b, g, radius, x, y, z;
    __device__ float hit(float ox, float oy, float *n) const {
        float dx = ox - x;
        float dy = oy - y;
        float d2 = fmaf(dx, dx, dy * dy);
        if (d2 < radius * radius) {
            float dz = sqrtf(fmaf(radius, radius, -d2));
            *n = dz / sqrtf(radius * radius);
            return dz + z;
        }
        return -INF;
    }
};
__constant__ Sphere s[20];
__device__ void trace(const Sphere* s, unsigned char* ptr) {
    int x = threadIdx.x + blockIdx.x * blockDim.x;
    int y = threadIdx.y + blockIdx.y * blockDim.y;
    int offset = x + y * blockDim.x * gridDim.x;
    float ox = (x - DIM / 2);
    float oy = (y - DIM / 2);
    float r = 0, g = 0, b = 0;
    float maxz = -INF;
    for (int i = 0; i < 20; i++) {
        float n;
        float t = s[i].hit(ox, oy, &n);
        if (t > maxz) {
            float fscale = n;
            r = s[i].r * fscale;
            g = s[i].g * fscale;
            b = s[i].b * fscale;
            maxz = t;
        }
    }
    ptr[offset * 4 + 0] = (int)(r * 255);
    ptr[offset * 4 + 1] = (int)(g * 255);
    ptr[offset * 4 + 2] = (int)(b * 255);
    ptr[offset * 4 + 3] = 255;
}
extern "C" __global__ void ray_const(const float* spheres, unsigned char* ptr) { trace(s, ptr); }
extern "C" __global__ void ray_global(const float* spheres, unsigned char* ptr) {
    trace((const Sphere*)spheres, ptr);
}
"#;

/// The ray tracer's body on the spheres of type `$S` (`$d` is a `$`, which the body's
/// `$...$` forms need inside a `macro_rules!`): one body for both memories.
macro_rules! trace {
    ($d:tt $S:ident, $spheres:expr, $bitmap:expr) => {
        detour!(RAYS($spheres, $bitmap) {
            let x = $d tid_0_1 $d * 16 + $d tid_1_1 $d;
            let y = $d tid_0_0 $d * 16 + $d tid_1_0 $d;
            let half = ($d dim(BITMAP_0) $d / 2) as f32;
            let ox = x as f32 - half;
            let oy = y as f32 - half;
            let mut r = 0.0f32;
            let mut g = 0.0f32;
            let mut b = 0.0f32;
            let mut maxz = -2e10f32;
            for i in 0..$d dim_0($S) $d {
                let dx = ox - s[$d $S[i][4] $d];
                let dy = oy - s[$d $S[i][5] $d];
                let radius = s[$d $S[i][3] $d];
                let d2 = dx.mul_add(dx, dy * dy);
                if d2 < radius * radius {
                    let dz = radius.mul_add(radius, -d2).sqrt();
                    let t = dz + s[$d $S[i][6] $d];
                    if t > maxz {
                        let fscale = dz / (radius * radius).sqrt();
                        r = s[$d $S[i][0] $d] * fscale;
                        b = s[$d $S[i][1] $d] * fscale;
                        g = s[$d $S[i][2] $d] * fscale;
                        maxz = t;
                    }
                }
            }
            ptr[$d BITMAP[y][x][0] $d] = (r * 255.0) as u8;
            ptr[$d BITMAP[y][x][1] $d] = (g * 255.0) as u8;
            ptr[$d BITMAP[y][x][2] $d] = (b * 255.0) as u8;
            ptr[$d BITMAP[y][x][3] $d] = 255;
        })
    };
}

fn from_constant(s: &Array<CONST_SPHERES>, bitmap: &mut Array<BITMAP>) -> parray::Result<()> {
    trace!($ CONST_SPHERES, s, bitmap)
}

fn from_global(s: &Array<GLOBAL_SPHERES>, bitmap: &mut Array<BITMAP>) -> parray::Result<()> {
    trace!($ GLOBAL_SPHERES, s, bitmap)
}

/// The book's random spheres (`rnd(x) = x * rand() / RAND_MAX`, here from a xorshift).
fn random_spheres() -> Vec<f32> {
    let mut state = 0x2545_F491_4F6C_DD1Du64;
    let mut rnd = |x: f32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        x * (state >> 40) as f32 / (1u64 << 24) as f32
    };
    (0..host! { $dim_0(CONST_SPHERES)$ })
        .flat_map(|_| {
            let (r, b, g) = (rnd(1.0), rnd(1.0), rnd(1.0));
            let radius = rnd(100.0) + 20.0;
            let (x, y, z) = (
                rnd(1000.0) - 500.0,
                rnd(1000.0) - 500.0,
                rnd(1000.0) - 500.0,
            );
            [r, b, g, radius, x, y, z]
        })
        .collect()
}

/// The image on the CPU, each pixel computed as the body computes it.
fn cpu_image(spheres: &[f32], dim: usize) -> Vec<u8> {
    (0..dim * dim)
        .flat_map(|p| {
            let half = (dim / 2) as f32;
            let (ox, oy) = ((p % dim) as f32 - half, (p / dim) as f32 - half);
            let (mut rgb, mut maxz) = ([0.0f32; 3], -2e10f32);
            for s in spheres.chunks(7) {
                let (dx, dy, radius) = (ox - s[4], oy - s[5], s[3]);
                let d2 = dx.mul_add(dx, dy * dy);
                if d2 < radius * radius {
                    let dz = radius.mul_add(radius, -d2).sqrt();
                    let t = dz + s[6];
                    if t > maxz {
                        let fscale = dz / (radius * radius).sqrt();
                        rgb = [s[0] * fscale, s[2] * fscale, s[1] * fscale];
                        maxz = t;
                    }
                }
            }
            let [r, g, b] = rgb.map(|c| (c * 255.0) as u8);
            [r, g, b, 255]
        })
        .collect()
}

fn main() -> parray::Result<()> {
    let png = common::png_path("ray.png");
    let dim = common::size_arg("ray_constant", 1024);
    DIM.bind(dim)?;
    let spheres = random_spheres();
    let (mut constant, mut global) = (CONST_SPHERES::create()?, GLOBAL_SPHERES::create()?);
    constant.copy_from_slice(&spheres)?;
    global.copy_from_slice(&spheres)?;
    let mut bitmap = BITMAP::create()?;
    let want = cpu_image(&spheres, dim);
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    println!("backend: {backend}");
    let mut all = true;
    let grid = ([dim as u32 / 16, dim as u32 / 16, 1], [16, 16, 1]);
    // The book's source at this size, kept for the process (the kernels it compiles are).
    let seed_source: &'static str =
        Box::leak(format!("#define DIM {dim}\n{SEED}").into_boxed_str());
    for k in 0..2 {
        let (name, seed_kernel, seed_constants): (_, _, &'static [_]) = match k {
            0 => (
                "ray tracer, spheres in constant memory",
                "ray_const",
                &[(0, "s")],
            ),
            _ => ("ray tracer, spheres in global memory", "ray_global", &[]),
        };
        bitmap.fill(0)?;
        let parray = common::median_time(repeats, true, || match k {
            0 => from_constant(&constant, &mut bitmap),
            _ => from_global(&global, &mut bitmap),
        })?;
        let got = bitmap.to_vec()?;
        let differ = got.iter().zip(&want).filter(|(g, w)| g != w).count();
        let seed = if device {
            bitmap.fill(0)?;
            let s: &dyn parray::gpu::KernelArg = if k == 0 { &constant } else { &global };
            let t = common::median_time(repeats, true, || {
                let constants = common::Extras {
                    constants: seed_constants,
                    ..Default::default()
                };
                common::raw_kernel_with(seed_kernel, seed_source, grid, constants, &[s, &bitmap])
            })?;
            let theirs = bitmap.to_vec()?;
            Some(t).filter(|_| theirs == want)
        } else {
            None
        };
        if k == 0 {
            common::write_png(&png, dim, &got)?;
            println!("wrote {png}; {differ} bytes differ from the CPU's image");
        }
        let ok = differ == 0 && (!device || seed.is_some());
        common::seed_row(name, backend, parray, seed, ok);
        all &= ok;
    }
    common::check(all);
    Ok(())
}
