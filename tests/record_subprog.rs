//! A subprogram (`subprog!`) instantiated over record arrays: one step written once, run
//! over an array of whole records (`dmem Particle [N] P`) and over one kept a field per
//! array (`dmem soa Particle [N] Q`), on the GPU or its emulation, against plain Rust. A
//! record keeps its own name in the subprogram (its Rust struct is the caller's), where
//! the types it is built on are imported under `__X`. The inputs are small dyadic numbers,
//! so that every back end computes them exactly.

use parray::prelude::*;

#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    vel: Float2,
    mass: f32,
    id: i32,
}

parray! {
    const N = 256;
    dmem Particle [N] P;
    dmem soa Particle [N] Q;
    cuda(Particle* p, float dt) [N / 64][64] STEP;
    cuda(soa Particle* p, float dt) [N / 64][64] STEP_SOA;
}

subprog! {
    /// Steps the particles of `pa` (of the type `T`, whole records or fields) on the
    /// thread array `K`, one thread a particle, in the order of a view of `T` in rows of 16.
    fn advance<T, K>(pa, dt) -> parray::Result<()> {
        parray! {
            const M = dim(T_0);
            Particle [[M / 16][16]#T_0] ROWS;
        }
        detour!(K(pa, dt) {
            let t = $tid$;
            let i = $ROWS_0[t / 16][t % 16]$;
            let mut q = p[i];
            q.vel += q.pos * -0.5 * dt;
            p[i].pos = q.pos + q.vel * dt;
            p[i].vel = q.vel;
            p[i].mass += 1.0;
            p[i].id = t as i32 * 2;
        })
    }
}

subprog! {
    /// Adds `m` to the mass of every particle of `pa`: its declarations name no record, the
    /// one it reaches is `T`'s element.
    fn weigh<T, K>(pa, m) -> parray::Result<()> {
        detour!(K(pa, m) {
            let i = $T[$tid$]$;
            p[i].mass += dt;
        })
    }
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

/// The step in plain Rust: the reference.
fn stepped(dt: f32) -> Vec<Particle> {
    let mut all = particles();
    for (k, p) in all.iter_mut().enumerate() {
        p.vel += p.pos * -0.5 * dt;
        p.pos += p.vel * dt;
        p.mass += 1.0;
        p.id = 2 * k as i32;
    }
    all
}

#[test]
fn one_subprogram_steps_whole_records_and_field_arrays() -> parray::Result<()> {
    let mut p = P::create()?;
    p.copy_from_slice(&particles())?;
    advance!(<P, STEP>(&mut p, 0.5f32))?;
    assert_eq!(p.to_vec()?, stepped(0.5), "whole records");

    let mut q = Q::create()?;
    q.copy_from_slice(&particles())?;
    advance!(<Q, STEP_SOA>(&mut q, 0.5f32))?;
    assert!(q.soa());
    assert_eq!(q.to_vec()?, stepped(0.5), "field arrays");

    weigh!(<P, STEP>(&mut p, 2.0f32))?;
    weigh!(<Q, STEP_SOA>(&mut q, 2.0f32))?;
    let mut want = stepped(0.5);
    want.iter_mut().for_each(|w| w.mass += 2.0);
    assert_eq!(p.to_vec()?, want, "whole records, weighed");
    assert_eq!(q.to_vec()?, want, "field arrays, weighed");
    Ok(())
}

#[test]
fn the_subprograms_kernels_read_the_record_as_the_caller_declares_it() {
    let aos = advance!(@source <P, STEP>);
    let soa = advance!(@source <Q, STEP_SOA>);
    assert!(aos.contains("struct Particle {"), "{aos}");
    assert!(soa.contains("struct Particle_soa"), "{soa}");
}
