//! Records as elements (`#[derive(parray::Record)]`): their fields read and written in
//! bodies, whole and one by one, through pointers, shared memory and locals; the same
//! results as plain Rust on the host, on pthd, on the emulation and on a GPU
//! (`PARRAY_BACKEND=cuda records` on the GPU machine). The inputs are small dyadic
//! numbers, so that every back end computes them exactly (a GPU's fused multiply-adds
//! included).

use parray::prelude::*;

#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    vel: Float2,
    mass: f32,
    id: i32,
}

/// The field a step feels at `p`: a spring towards the origin.
#[parray::func]
fn spring(p: Float2) -> Float2 {
    p * -0.5
}

parray! {
    const N = 512;
    pub dmem Particle [N] P;
    pub paged Particle [N] HOST_P;
    pub cuda(Particle* p, float dt) [N / 128][128] STEP;
    pub smem Particle [128] TILE;
    Particle [128 #P] BLOCK;
    pub cuda(Particle* p, Particle* out) [N / 128][128] SHIFT;
    pub pthd [4] TEAM;
    Particle [[4][N / 4]#HOST_P] PART;
}

fn particles() -> Vec<Particle> {
    (0..N)
        .map(|k| Particle {
            pos: Float2::new(k as f32 * 0.25 - 16.0, (k % 7) as f32),
            vel: Float2::new((k % 5) as f32 - 2.0, 0.5),
            mass: 1.0 + (k % 3) as f32,
            id: -1,
        })
        .collect()
}

/// The step on the host: the reference.
fn step(mut p: Particle, k: usize, dt: f32) -> Particle {
    p.vel += spring(p.pos) * dt;
    p.pos += p.vel * dt;
    p.mass += 1.0;
    p.id = k as i32;
    p
}

#[test]
fn a_step_writes_fields_of_elements_on_the_gpu_or_its_emulation() -> parray::Result<()> {
    let mut p = P::create()?;
    p.copy_from_slice(&particles())?;
    detour!(STEP(&mut p, 0.5) {
        let i = $P[$tid$]$;
        let mut q = p[i];
        q.vel += spring(q.pos) * dt;
        p[i].pos = q.pos + q.vel * dt;
        p[i].vel = q.vel;
        p[i].mass += 1.0;
        p[i].id = $tid$ as i32;
    })?;
    let want: Vec<Particle> = particles()
        .into_iter()
        .enumerate()
        .map(|(k, q)| step(q, k, 0.5))
        .collect();
    assert_eq!(p.to_vec()?, want);
    Ok(())
}

#[test]
fn a_step_on_cpu_threads_is_the_same_step() -> parray::Result<()> {
    let mut p = HOST_P::create()?;
    p.copy_from_slice(&particles())?;
    let dt = 0.5f32;
    detour!(TEAM {
        for k in 0..$dim(PART_0_1)$ {
            let i = $PART[[[$tid$][k]]]$;
            let mut q = p[i];
            q.vel += spring(q.pos) * dt;
            p[i].pos = q.pos + q.vel * dt;
            p[i].vel = q.vel;
            p[i].mass += 1.0;
            p[i].id = i as i32;
        }
    })?;
    let want: Vec<Particle> = particles()
        .into_iter()
        .enumerate()
        .map(|(k, q)| step(q, k, 0.5))
        .collect();
    assert_eq!(p.to_vec()?, want);
    Ok(())
}

/// Each block stages its particles in shared memory (a `#copy` by one thread), then each
/// thread takes its neighbour's position and its own velocity: whole records and fields
/// through `smem`.
#[test]
fn records_in_shared_memory() -> parray::Result<()> {
    let mut p = P::create()?;
    p.copy_from_slice(&particles())?;
    let mut out = P::create()?;
    detour!(SHIFT(&p, &mut out) {
        let tile = TILE::create();
        let t = $tid_1$;
        if t == 0 {
            #copy BLOCK(p + $P[$tid_0$ * 128]$) to TILE(tile);
        }
        #sync;
        let mut q = tile[(t + 1) % 128];
        q.vel = tile[t].vel;
        q.id = tile[t].id + t as i32;
        out[$P[$tid$]$] = q;
    })?;
    let x = particles();
    let want: Vec<Particle> = (0..N)
        .map(|k| {
            let (b, t) = (k / 128 * 128, k % 128);
            let mut q = x[b + (t + 1) % 128];
            q.vel = x[k].vel;
            q.id = x[k].id + t as i32;
            q
        })
        .collect();
    assert_eq!(out.to_vec()?, want);
    Ok(())
}

#[test]
fn a_record_kernel_declares_its_struct() {
    let (p, dt) = ((), ());
    let source = kernel_source!(STEP(p, dt) {
        let i = $P[$tid$]$;
        let mut q = p[i];
        q.vel += spring(q.pos) * dt;
        p[i].pos = q.pos + q.vel * dt;
        p[i].mass += 1.0;
    });
    assert!(
        source.contains("struct Particle { float2 pos; float2 vel; float mass; int id; };"),
        "{source}"
    );
    insta::assert_snapshot!(source);
}

/// A field store moves down past statements that only compute, to the next store to a
/// field of the same element, and the values of a run of such stores are computed before
/// its first, so that a GPU writes the element's sectors together (two stores apart wrote
/// 1.9 times the L2 sectors on an H200); past a read of memory a store stays where it is.
#[test]
fn field_stores_of_one_element_are_written_together() {
    let (p, dt) = ((), ());
    let together = kernel_source!(STEP(p, dt) {
        let i = $P[$tid$]$;
        let q = p[i];
        let x = q.pos + q.vel * dt;
        p[i].pos = x;
        let a = spring(x) * dt;
        p[i].vel = q.vel + a;
    });
    let code = |source: &'static str| -> Vec<&'static str> {
        let lines = source.lines().map(str::trim);
        lines.filter(|l| !l.starts_with("#line")).collect()
    };
    let lines = code(together);
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
    let (pos, vel) = (at("p[i].pos = x;").unwrap(), at("p[i].vel =").unwrap());
    assert_eq!(vel, pos + 1, "{together}");
    assert!(at("float2 a =").unwrap() < pos, "{together}");
    // The values after the first store's computed before it: the stores side by side.
    let run = kernel_source!(STEP(p, dt) {
        let i = $P[$tid$]$;
        let q = p[i];
        let x = q.pos + q.vel * dt;
        p[i].pos = x;
        p[i].vel = q.vel + spring(x) * dt;
    });
    let lines = code(run);
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
    let (pos, vel) = (at("p[i].pos = x;").unwrap(), at("p[i].vel =").unwrap());
    assert_eq!(vel, pos + 1, "{run}");
    assert!(at("float2 __parray_field").unwrap() < pos, "{run}");
    let apart = kernel_source!(STEP(p, dt) {
        let i = $P[$tid$]$;
        let q = p[i];
        let x = q.pos + q.vel * dt;
        p[i].pos = x;
        let m = p[i].mass;
        p[i].vel = q.vel * m;
    });
    let lines = code(apart);
    let at = |prefix: &str| lines.iter().position(|l| l.starts_with(prefix));
    assert!(
        at("p[i].pos = x;").unwrap() < at("float m = p[i].mass;").unwrap(),
        "{apart}"
    );
}
