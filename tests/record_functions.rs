//! Records as the parameters and results of functions of the body language
//! (`#[parray::func]`): a cuda body passes an element `q[i]` (of whole records or of an
//! array kept one array per field) by value and gets a record back; the same values on the
//! GPU or its emulation, on pthd threads and in plain Rust. The inputs are small dyadic
//! numbers, so that every back end computes them exactly.

use parray::prelude::*;

#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    vel: Float2,
    mass: f32,
    id: i32,
}

/// The kinetic energy of a particle: a record in, a number out.
#[parray::func]
fn kinetic(p: Particle) -> f32 {
    0.5 * p.mass * (p.vel.x * p.vel.x + p.vel.y * p.vel.y)
}

/// A step: a record in, the record changed and out (a parameter is a local of its own).
#[parray::func]
fn pushed(mut p: Particle, dt: f32) -> Particle {
    p.vel += p.pos * -0.5 * dt;
    p.pos += p.vel * dt;
    p.id += 1;
    p
}

parray! {
    const N = 256;
    dmem Particle [N] P;
    dmem soa Particle [N] Q;
    paged Particle [N] HOST_P;
    dmem float [N] E;
    paged float [N] HOST_E;
    cuda(Particle* p, float* e, float dt) [N / 64][64] STEP;
    cuda(soa Particle* p, float* e, float dt) [N / 64][64] STEP_SOA;
    pthd [4][N / 4] TEAM;
}

fn particles() -> Vec<Particle> {
    (0..N)
        .map(|k| Particle {
            pos: Float2::new(k as f32 * 0.25 - 16.0, (k % 7) as f32),
            vel: Float2::new((k % 5) as f32 - 2.0, 0.5),
            mass: 1.0 + (k % 3) as f32,
            id: k as i32,
        })
        .collect()
}

/// The reference: the Rust functions on the host.
fn reference(dt: f32) -> (Vec<Particle>, Vec<f32>) {
    let all = particles();
    let e = all.iter().map(|p| kinetic(*p)).collect();
    (all.into_iter().map(|p| pushed(p, dt)).collect(), e)
}

#[test]
fn a_record_is_passed_and_returned_on_every_back_end() -> parray::Result<()> {
    let (want, want_e) = reference(0.5);

    let (mut p, mut e) = (P::create()?, E::create()?);
    p.copy_from_slice(&particles())?;
    detour!(STEP(&mut p, &mut e, 0.5f32) {
        let i = $P[$tid$]$;
        e[$E[$tid$]$] = kinetic(p[i]);
        p[i] = pushed(p[i], dt);
    })?;
    assert_eq!(p.to_vec()?, want, "cuda, whole records");
    assert_eq!(e.to_vec()?, want_e, "cuda, whole records");

    let (mut q, mut e) = (Q::create()?, E::create()?);
    q.copy_from_slice(&particles())?;
    detour!(STEP_SOA(&mut q, &mut e, 0.5f32) {
        let i = $Q[$tid$]$;
        e[$E[$tid$]$] = kinetic(p[i]);
        let r = pushed(p[i], dt);
        p[i] = r;
    })?;
    assert_eq!(q.to_vec()?, want, "cuda, field arrays");
    assert_eq!(e.to_vec()?, want_e, "cuda, field arrays");

    let (mut h, mut he) = (HOST_P::create()?, HOST_E::create()?);
    h.copy_from_slice(&particles())?;
    detour!(TEAM {
        let i = $HOST_P[$tid$]$;
        he[$HOST_E[$tid$]$] = kinetic(h[i]);
        h[i] = pushed(h[i], 0.5);
    })?;
    assert_eq!(h.to_vec()?, want, "pthd");
    assert_eq!(he.to_vec()?, want_e, "pthd");
    Ok(())
}

#[test]
fn a_function_takes_the_struct_by_value_in_c() {
    let (p, e, dt) = ((), (), ());
    let source = kernel_source!(STEP_SOA(p, e, dt) {
        let i = $Q[$tid$]$;
        e[$E[$tid$]$] = kinetic(p[i]);
        p[i] = pushed(p[i], dt);
    });
    assert!(
        source.contains("__device__ inline float parray_fn_kinetic(Particle p)"),
        "{source}"
    );
    insta::assert_snapshot!(source);
}

/// `a` when `first`, else `b`: generic over any element (a record too), which it moves and
/// computes nothing on.
#[parray::func]
fn pick<T: parray::Element>(first: bool, a: T, b: T) -> T {
    if first {
        a
    } else {
        b
    }
}

/// A step of a particle with an even id, any other left as it is: `pick` at a record,
/// given by a turbofish.
#[parray::func]
fn pushed_if_even(p: Particle, dt: f32) -> Particle {
    pick::<Particle>(p.id % 2 == 0, pushed(p, dt), p)
}

/// What the generic bodies below compute, written out: the kinetic energy of the
/// particles whose id is a multiple of 3 (particle `k` has id `k`), the others' `x`
/// velocity; a step of the even ids.
fn picked_reference(dt: f32) -> (Vec<Particle>, Vec<f32>) {
    let all = particles();
    let e = all
        .iter()
        .enumerate()
        .map(|(k, p)| match k % 3 {
            0 => 0.5 * p.mass * (p.vel.x * p.vel.x + p.vel.y * p.vel.y),
            _ => p.vel.x,
        })
        .collect();
    let stepped = all.into_iter().map(|p| match p.id % 2 {
        0 => pushed(p, dt),
        _ => p,
    });
    (stepped.collect(), e)
}

#[test]
fn a_generic_function_takes_a_record_as_its_type_on_every_back_end() -> parray::Result<()> {
    let (want, want_e) = picked_reference(0.5);
    // Not all the same: the test sees the choice.
    assert!(want[0] != particles()[0] && want[1] == particles()[1]);

    let (mut p, mut e) = (P::create()?, E::create()?);
    p.copy_from_slice(&particles())?;
    detour!(STEP(&mut p, &mut e, 0.5f32) {
        let i = $P[$tid$]$;
        e[$E[$tid$]$] = pick(p[i].id % 3 == 0, kinetic(p[i]), pick(true, p[i].vel, p[i].pos).x);
        p[i] = pushed_if_even(p[i], dt);
    })?;
    assert_eq!(p.to_vec()?, want, "cuda, whole records");
    assert_eq!(e.to_vec()?, want_e, "cuda, whole records");

    let (mut q, mut e) = (Q::create()?, E::create()?);
    q.copy_from_slice(&particles())?;
    detour!(STEP_SOA(&mut q, &mut e, 0.5f32) {
        let i = $Q[$tid$]$;
        e[$E[$tid$]$] = pick(p[i].id % 3 == 0, kinetic(p[i]), pick(true, p[i].vel, p[i].pos).x);
        p[i] = pick::<Particle>(p[i].id % 2 == 0, pushed(p[i], dt), p[i]);
    })?;
    assert_eq!(q.to_vec()?, want, "cuda, field arrays");
    assert_eq!(e.to_vec()?, want_e, "cuda, field arrays");

    let (mut h, mut he) = (HOST_P::create()?, HOST_E::create()?);
    h.copy_from_slice(&particles())?;
    detour!(TEAM {
        let i = $HOST_P[$tid$]$;
        he[$HOST_E[$tid$]$] = pick(h[i].id % 3 == 0, kinetic(h[i]), pick(true, h[i].vel, h[i].pos).x);
        h[i] = pushed_if_even(h[i], 0.5);
    })?;
    assert_eq!(h.to_vec()?, want, "pthd");
    assert_eq!(he.to_vec()?, want_e, "pthd");
    Ok(())
}

#[test]
fn a_generic_function_has_an_instance_per_record_in_c() {
    let (p, e, dt) = ((), (), ());
    let source = kernel_source!(STEP(p, e, dt) {
        let i = $P[$tid$]$;
        e[$E[$tid$]$] = pick(p[i].id % 3 == 0, kinetic(p[i]), pick(true, p[i].vel, p[i].pos).x);
        p[i] = pushed_if_even(p[i], dt);
    });
    assert!(
        source.contains("parray_fn_pick_Particle(bool first, Particle a, Particle b)"),
        "{source}"
    );
    insta::assert_snapshot!(source);
}
