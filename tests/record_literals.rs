//! Record values built in a body with Rust's struct literal (`Particle { pos: p, mass: 1.0,
//! id: k }`, and `Particle { mass: m, ..q[i] }`): in a cuda body over whole records and
//! over one array per field (`soa`), in a function of the body language, and in a pthd
//! body; the same values as plain Rust. The inputs are small dyadic numbers, so that every
//! back end computes them exactly.

use parray::prelude::*;

#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Particle {
    pos: Float2,
    vel: Float2,
    mass: f32,
    id: i32,
}

/// A particle at rest at `x`: a function of the body language that builds a record (its
/// field `id` given by the shorthand).
#[parray::func]
fn at_rest(x: f32, id: i32) -> Particle {
    Particle {
        vel: Float2::new(0.0, 0.0),
        pos: Float2::new(x, 0.5),
        mass: 1.0,
        id,
    }
}

parray! {
    const N = 256;
    dmem Particle [N] P;
    dmem soa Particle [N] Q;
    paged Particle [N] HOST_P;
    cuda(Particle* p, float dt) [N / 64][64] STEP;
    cuda(soa Particle* p, float dt) [N / 64][64] STEP_SOA;
    pthd [4][N / 4] TEAM;
}

/// The reference, in plain Rust: each particle built, then moved and weighed.
fn reference(dt: f32) -> Vec<Particle> {
    (0..N)
        .map(|k| {
            let x = k as f32 * 0.25 - 16.0;
            let p = match k % 2 {
                0 => Particle {
                    pos: Float2::new(x, 0.5),
                    vel: Float2::new((k % 5) as f32 - 2.0, 0.5),
                    mass: 1.0 + (k % 3) as f32,
                    id: k as i32,
                },
                _ => at_rest(x, k as i32),
            };
            let r = Particle {
                mass: p.mass * 2.0,
                ..p
            };
            Particle {
                pos: r.pos + r.vel * dt,
                id: r.id + 1,
                ..r
            }
        })
        .collect()
}

#[test]
fn records_are_built_on_every_back_end() -> parray::Result<()> {
    let want = reference(0.5);

    let mut p = P::create()?;
    detour!(STEP(&mut p, 0.5f32) {
        let i = $P[$tid$]$;
        let k = $tid$;
        let x = k as f32 * 0.25 - 16.0;
        if k % 2 != 1 {
            p[i] = Particle {
                pos: Float2::new(x, 0.5),
                vel: Float2::new((k % 5) as f32 - 2.0, 0.5),
                mass: 1.0 + (k % 3) as f32,
                id: k as i32,
            };
        } else {
            p[i] = at_rest(x, k as i32);
        }
        let r = Particle { mass: p[i].mass * 2.0, ..p[i] };
        p[i] = Particle { pos: r.pos + r.vel * dt, id: r.id + 1, ..r };
    })?;
    assert_eq!(p.to_vec()?, want, "cuda, whole records");

    let mut q = Q::create()?;
    detour!(STEP_SOA(&mut q, 0.5f32) {
        let i = $Q[$tid$]$;
        let k = $tid$;
        let x = k as f32 * 0.25 - 16.0;
        if k % 2 != 1 {
            p[i] = Particle {
                pos: Float2::new(x, 0.5),
                vel: Float2::new((k % 5) as f32 - 2.0, 0.5),
                mass: 1.0 + (k % 3) as f32,
                id: k as i32,
            };
        } else {
            p[i] = at_rest(x, k as i32);
        }
        p[i] = Particle { mass: p[i].mass * 2.0, ..p[i] };
        let r = p[i];
        p[i] = Particle { pos: r.pos + r.vel * dt, id: r.id + 1, ..r };
    })?;
    assert_eq!(q.to_vec()?, want, "cuda, field arrays");

    let mut h = HOST_P::create()?;
    detour!(TEAM {
        let i = $HOST_P[$tid$]$;
        let k = $tid$;
        let x = k as f32 * 0.25 - 16.0;
        if k % 2 != 1 {
            h[i] = Particle {
                pos: Float2::new(x, 0.5),
                vel: Float2::new((k % 5) as f32 - 2.0, 0.5),
                mass: 1.0 + (k % 3) as f32,
                id: k as i32,
            };
        } else {
            h[i] = at_rest(x, k as i32);
        }
        let r = Particle { mass: h[i].mass * 2.0, ..h[i] };
        h[i] = Particle { pos: r.pos + r.vel * 0.5, id: r.id + 1, ..r };
    })?;
    assert_eq!(h.to_vec()?, want, "pthd");
    Ok(())
}

#[test]
fn a_record_is_built_by_a_helper_in_c() {
    let (p, dt) = ((), ());
    let source = kernel_source!(STEP_SOA(p, dt) {
        let i = $Q[$tid$]$;
        let r = Particle { mass: p[i].mass * 2.0, ..p[i] };
        p[i] = Particle { pos: r.pos + r.vel * dt, vel: r.vel, mass: r.mass, id: 7 };
    });
    assert!(
        source
            .contains("Particle parray_make_Particle(float2 pos, float2 vel, float mass, int id)"),
        "{source}"
    );
    insta::assert_snapshot!(source);
}
