//! A step of `--n N` particles (1,000,000 without it; `--small`: 10,000) around an
//! attracting centre: each particle a record (`#[derive(parray::Record)]`) of position,
//! velocity, mass and charge, the field a function of the body language (`#[parray::func]`)
//! evaluated twice by the leapfrog step (kick, drift, kick), a thread per particle and a
//! guard for the last block's tail. Checked against the same step in `f64` on the CPU; on a
//! GPU, timed beside the same kernel written by hand in CUDA C and the driver's copy of
//! the particles (the floor: a step reads and writes each particle once). `--soa` also
//! steps them kept one array per field (`dmem soa Particle [N] Q`, the same kernel with
//! only the types changed), checked the same way and timed beside it.

mod common;

use parray::gpu::Timing;
use parray::prelude::*;

/// One particle: 24 bytes, as CUDA C lays out the same struct.
#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    vel: Float2,
    mass: f32,
    charge: f32,
}

/// The acceleration per unit charge at `p`: an inverse-square pull towards the origin,
/// softened near it.
#[parray::func]
fn field(p: Float2) -> Float2 {
    let r2 = p.x * p.x + p.y * p.y + 0.01;
    p * (-1.0 / (r2 * r2.sqrt()))
}

parray! {
    const N;
    dmem Particle [N] P;
    dmem soa Particle [N] Q;
    cuda(Particle* p, float dt) [ceil(N / 256)][256] STEP;
    cuda(soa Particle* p, float dt) [ceil(N / 256)][256] STEP_SOA;
}

const HAND: &str = r#"
struct Particle { float2 pos; float2 vel; float mass; float charge; };
__device__ float2 field(float2 p) {
    float r2 = p.x * p.x + p.y * p.y + 0.01f;
    float s = -1.0f / (r2 * sqrtf(r2));
    return make_float2(p.x * s, p.y * s);
}
extern "C" __global__ void step(Particle* ps, float dt, int n) {
    int i = blockIdx.x * 256 + threadIdx.x;
    if (i < n) {
        Particle q = ps[i];
        float k = q.charge / q.mass * 0.5f * dt;
        float2 a = field(q.pos);
        float2 v = make_float2(q.vel.x + a.x * k, q.vel.y + a.y * k);
        float2 x = make_float2(q.pos.x + v.x * dt, q.pos.y + v.y * dt);
        float2 b = field(x);
        ps[i].pos = x;
        ps[i].vel = make_float2(v.x + b.x * k, v.y + b.y * k);
    }
}
"#;

/// `fn $name(p: &mut Array<$ty>, dt: f32)`: the step on the cuda array `$threads`, over
/// an array of `$ty` (its records whole or kept one array per field); `$d` is `$`, the
/// forms' own.
macro_rules! step {
    ($d:tt $name:ident, $threads:ident, $ty:ident) => {
        fn $name(p: &mut Array<$ty>, dt: f32) -> parray::Result<()> {
            detour!($threads(p, dt) {
                let i = $d tid $d;
                if i < $d size($ty) $d {
                    let q = p[$d $ty[i] $d];
                    let k = q.charge / q.mass * 0.5 * dt;
                    let v = q.vel + field(q.pos) * k;
                    let x = q.pos + v * dt;
                    p[$d $ty[i] $d].pos = x;
                    p[$d $ty[i] $d].vel = v + field(x) * k;
                }
            })
        }
    };
}

step!($ step, STEP, P);
step!($ step_soa, STEP_SOA, Q);

fn particles(n: usize) -> Vec<Particle> {
    let r = common::random_values(4 * n, 11);
    (0..n)
        .map(|k| Particle {
            pos: Float2::new(r[4 * k] * 4.0, r[4 * k + 1] * 4.0),
            vel: Float2::new(r[4 * k + 2], r[4 * k + 3]),
            mass: 1.0 + (k % 4) as f32,
            charge: 1.0 - 0.25 * (k % 3) as f32,
        })
        .collect()
}

/// The step in `f64`.
fn reference(q: &Particle, dt: f64) -> [f64; 4] {
    let field = |x: f64, y: f64| {
        let r2 = x * x + y * y + 0.01;
        let s = -1.0 / (r2 * r2.sqrt());
        (x * s, y * s)
    };
    let k = f64::from(q.charge) / f64::from(q.mass) * 0.5 * dt;
    let (ax, ay) = field(q.pos.x.into(), q.pos.y.into());
    let (vx, vy) = (f64::from(q.vel.x) + ax * k, f64::from(q.vel.y) + ay * k);
    let (x, y) = (f64::from(q.pos.x) + vx * dt, f64::from(q.pos.y) + vy * dt);
    let (bx, by) = field(x, y);
    [x, y, vx + bx * k, vy + by * k]
}

/// Whether `after` is one step of `before`, within `f32`'s rounding of each quantity
/// (relative 1e-5 of its size, plus 1e-6: a step moves a particle by about 1e-3).
fn check(before: &[Particle], after: &[Particle], dt: f32) -> bool {
    before.iter().zip(after).all(|(b, a)| {
        let want = reference(b, dt.into());
        let got = [a.pos.x, a.pos.y, a.vel.x, a.vel.y].map(f64::from);
        let same = (a.mass, a.charge) == (b.mass, b.charge);
        same && want
            .iter()
            .zip(got)
            .all(|(w, g)| (w - g).abs() <= 1e-5 * w.abs() + 1e-6)
    })
}

fn main() -> parray::Result<()> {
    let default = if common::small() { 10_000 } else { 1_000_000 };
    let n = common::size_arg("particles", default);
    N.bind(n)?;
    let dt = 1e-3f32;
    let start = particles(n);
    let mut p = P::create()?;
    p.copy_from_slice(&start)?;
    let (backend, repeats) = common::backend(true)?;
    let device = backend == "cuda";
    // Each timed run steps the particles again: check one step from the start.
    let parray = common::median_time(repeats, true, || step(&mut p, dt))?;
    p.copy_from_slice(&start)?;
    step(&mut p, dt)?;
    let ok = check(&start, &p.to_vec()?, dt);
    println!("backend: {backend}");
    let bytes = 2 * n * size_of::<Particle>();
    let rate = |t: Timing| bytes as f64 / t.seconds() / 1e9;
    println!(
        "a leapfrog step of {n} particles of {} bytes: parray {parray}, {:.1} GB/s{}",
        size_of::<Particle>(),
        rate(parray),
        parray.note()
    );
    if device {
        let blocks = n.div_ceil(256) as u32;
        let launch = |p: &mut Array<P>| {
            common::raw_kernel(
                "step",
                HAND,
                [blocks, 1, 1],
                [256, 1, 1],
                &[p, &dt, &(n as i32)],
            )
        };
        let hand = common::median_time(repeats, true, || launch(&mut p))?;
        p.copy_from_slice(&start)?;
        launch(&mut p)?;
        let hand_ok = check(&start, &p.to_vec()?, dt);
        let other = P::create()?;
        let copy = common::device_copy_time(&other, &p, bytes / 2)?;
        common::beside_hand_and_copy(parray, hand, hand_ok, copy, bytes);
    }
    let mut ok = ok;
    if std::env::args().any(|a| a == "--soa") {
        let mut q = Q::create()?;
        q.copy_from_slice(&start)?;
        let soa = common::median_time(repeats, true, || step_soa(&mut q, dt))?;
        q.copy_from_slice(&start)?;
        step_soa(&mut q, dt)?;
        let soa_ok = check(&start, &q.to_vec()?, dt);
        println!(
            "the same step, the particles kept one array per field (soa): parray {soa}, {:.1} GB/s{}{}",
            rate(soa),
            soa.note(),
            if soa_ok { "" } else { ", WRONG" }
        );
        ok &= soa_ok;
    }
    common::check(ok);
    Ok(())
}
