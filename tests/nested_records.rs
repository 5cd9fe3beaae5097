//! Records inside records (`#[derive(parray::Record)]` of a struct whose field is a
//! record, SPEC.md 2.3): their layout (C's, the same in Rust and in the kernel's
//! `struct`s), fields of fields read and written in bodies (`p[i].pos.x += ..`), whole
//! inner records read and stored, built by literals and passed to and returned from
//! functions, in arrays of whole records; the same results as plain Rust on the emulation
//! of a cuda body (a GPU where there is one), on pthd threads and in plain Rust. The
//! inputs are small dyadic numbers, so that every back end computes them exactly.

use parray::prelude::*;

#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Vec2 {
    x: f32,
    y: f32,
}

/// Two records inside it, beside numbers.
#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Body {
    pos: Vec2,
    vel: Vec2,
    mass: f32,
    id: i32,
}

/// A record inside a record inside a record, after a field of a larger alignment.
#[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
#[repr(C)]
pub struct Tagged {
    weight: f64,
    body: Body,
}

/// The kinetic energy of `b`: fields of a record inside a parameter.
#[parray::func]
fn kinetic(b: Body) -> f32 {
    0.5 * b.mass * (b.vel.x * b.vel.x + b.vel.y * b.vel.y)
}

/// `b` moved by `dt`: a local's fields of fields written, and the record returned.
#[parray::func]
fn moved(mut b: Body, dt: f32) -> Body {
    b.pos.x += b.vel.x * dt;
    b.pos.y += b.vel.y * dt;
    b
}

/// Lifts element `i` of `p` by `dy`: a field of a field written through a pointer.
#[parray::func]
fn lift(p: parray::PtrMut<'_, Body>, i: usize, dy: f32) {
    p[i].pos.y += dy;
    p[i].vel.x = p[i].pos.y;
}

const N: usize = 64;

parray! {
    dmem Body [64] P;
    paged Body [#P_0] HP;
    dmem Tagged [64] T;
    paged Tagged [#T_0] HT;
    dmem float [64] E;
    paged float [#E_0] HE;
    cuda(Body* p, Tagged* t, float* e, float dt) [2][32] GPU;
    cuda(Body* p) [2][32] LIFT;
    pthd [4] TEAM;
}

parray! {
    const NB;                           // bound to 40 by the test that uses it
    dmem Body [NB] RB;
    cuda(Body* p) [ceil(NB / 32)][32] RGRID;
}

fn bodies() -> Vec<Body> {
    (0..N)
        .map(|k| Body {
            pos: Vec2 {
                x: k as f32 * 0.25 - 8.0,
                y: (k % 7) as f32 * 0.5,
            },
            vel: Vec2 {
                x: (k % 5) as f32 - 2.0,
                y: (k % 3) as f32 - 1.5,
            },
            mass: 1.0 + (k % 4) as f32,
            id: k as i32,
        })
        .collect()
}

fn tagged() -> Vec<Tagged> {
    bodies()
        .into_iter()
        .enumerate()
        .map(|(k, body)| Tagged {
            weight: k as f64 * 0.125,
            body,
        })
        .collect()
}

/// The step in plain Rust, field by field: the reference.
fn reference(dt: f32) -> (Vec<Body>, Vec<Tagged>, Vec<f32>) {
    let mut p = bodies();
    let mut t = tagged();
    let mut e = vec![0.0f32; N];
    for i in 0..N {
        let b = &mut p[i];
        b.pos.x += b.vel.x * dt;
        b.pos.y += b.vel.y * dt;
        b.vel.y -= 2.0 * dt;
        if b.pos.y < 0.0 {
            b.pos = Vec2 { x: b.pos.x, y: 0.0 };
            b.id = -b.id;
        }
        e[i] = 0.5 * b.mass * (b.vel.x * b.vel.x + b.vel.y * b.vel.y);
        let inner = t[i].body;
        t[i].body.pos = inner.vel;
        t[i].body.vel.x = inner.pos.x * 2.0;
        t[i].weight += f64::from(inner.mass);
        t[i].body = Body {
            pos: t[i].body.pos,
            vel: t[i].body.vel,
            mass: t[i].body.mass,
            id: 7,
        };
        let m = Body {
            pos: inner.pos,
            vel: inner.vel,
            mass: inner.mass,
            id: inner.id,
        };
        let mut m2 = m;
        m2.pos.x += m2.vel.x * dt;
        m2.pos.y += m2.vel.y * dt;
        t[i].body.mass = m2.pos.x + m2.pos.y;
    }
    (p, t, e)
}

#[test]
fn the_layout_is_cs_in_rust_and_in_the_description() {
    use parray::Element;
    assert_eq!(std::mem::size_of::<Body>(), 24);
    assert_eq!(std::mem::align_of::<Body>(), 4);
    assert_eq!(std::mem::size_of::<Tagged>(), 32);
    assert_eq!(std::mem::align_of::<Tagged>(), 8);
    assert_eq!(Tagged::ELEM.size_bytes(), 32);
    assert_eq!(Tagged::ELEM.align_bytes(), 8);
    let parray::layout::ElemType::Record(r) = Tagged::ELEM else {
        panic!("a record")
    };
    assert_eq!(r.field_offset(1), 8, "`body` after the f64");
    assert_eq!(r.def().fields[1].elem, Body::ELEM);
}

#[test]
fn a_cuda_body_writes_fields_of_fields() -> parray::Result<()> {
    let dt = 0.5f32;
    let mut p = P::create()?;
    p.copy_from_slice(&bodies())?;
    let mut t = T::create()?;
    t.copy_from_slice(&tagged())?;
    let mut e = E::create()?;
    // The same statements as the pthd body's below (a cuda body names its kernel's
    // parameters, a pthd body the arrays it captures).
    detour!(GPU(&mut p, &mut t, &mut e, dt) {
        let mut i = $tid$;
        while i < 64 {
            p[i].pos.x += p[i].vel.x * dt;
            p[i].pos.y = p[i].pos.y + p[i].vel.y * dt;
            p[i].vel.y -= 2.0 * dt;
            if p[i].pos.y < 0.0 {
                p[i].pos = Vec2 { x: p[i].pos.x, y: 0.0 };
                p[i].id = -p[i].id;
            }
            e[i] = kinetic(p[i]);
            let inner = t[i].body;
            t[i].body.pos = inner.vel;
            t[i].body.vel.x = inner.pos.x * 2.0;
            t[i].weight += inner.mass as f64;
            let b2 = t[i].body;
            t[i].body = Body { id: 7, ..b2 };
            let m2 = moved(Body { ..inner }, dt);
            t[i].body.mass = m2.pos.x + m2.pos.y;
            i += $size(GPU)$;
        }
    })?;
    let (want_p, want_t, want_e) = reference(dt);
    assert_eq!(p.to_vec()?, want_p);
    assert_eq!(t.to_vec()?, want_t);
    assert_eq!(e.to_vec()?, want_e);
    Ok(())
}

#[test]
fn a_pthd_body_writes_fields_of_fields() -> parray::Result<()> {
    let dt = 0.5f32;
    let mut p = HP::create()?;
    p.copy_from_slice(&bodies())?;
    let mut t = HT::create()?;
    t.copy_from_slice(&tagged())?;
    let mut e = HE::create()?;
    detour!(TEAM {
        let mut i = $tid$;
        while i < 64 {
            p[i].pos.x += p[i].vel.x * dt;
            p[i].pos.y = p[i].pos.y + p[i].vel.y * dt;
            p[i].vel.y -= 2.0 * dt;
            if p[i].pos.y < 0.0 {
                p[i].pos = Vec2 { x: p[i].pos.x, y: 0.0 };
                p[i].id = -p[i].id;
            }
            e[i] = kinetic(p[i]);
            let inner = t[i].body;
            t[i].body.pos = inner.vel;
            t[i].body.vel.x = inner.pos.x * 2.0;
            t[i].weight += inner.mass as f64;
            let b2 = t[i].body;
            t[i].body = Body { id: 7, ..b2 };
            let m2 = moved(Body { ..inner }, dt);
            t[i].body.mass = m2.pos.x + m2.pos.y;
            i += $size(TEAM)$;
        }
    })?;
    let (want_p, want_t, want_e) = reference(dt);
    assert_eq!(p.to_vec()?, want_p);
    assert_eq!(t.to_vec()?, want_t);
    assert_eq!(e.to_vec()?, want_e);
    Ok(())
}

#[test]
fn the_functions_are_rust_functions_too() {
    let b = bodies()[9];
    assert_eq!(
        kinetic(b),
        0.5 * b.mass * (b.vel.x * b.vel.x + b.vel.y * b.vel.y)
    );
    let m = moved(b, 0.5);
    assert_eq!(m.pos.x, b.pos.x + b.vel.x * 0.5);
    assert_eq!(m.pos.y, b.pos.y + b.vel.y * 0.5);
    assert_eq!((m.vel, m.mass, m.id), (b.vel, b.mass, b.id));
}

#[test]
fn the_c_declares_the_inner_records_first() {
    let (p, t, e, dt) = ((), (), (), 0.5f32);
    let source = kernel_source!(GPU(p, t, e, dt) {
        let mut i = $tid$;
        while i < 64 {
            p[i].pos.x += p[i].vel.x * dt;
            p[i].pos.y = p[i].pos.y + p[i].vel.y * dt;
            p[i].vel.y -= 2.0 * dt;
            if p[i].pos.y < 0.0 {
                p[i].pos = Vec2 { x: p[i].pos.x, y: 0.0 };
                p[i].id = -p[i].id;
            }
            e[i] = kinetic(p[i]);
            let inner = t[i].body;
            t[i].body.pos = inner.vel;
            t[i].body.vel.x = inner.pos.x * 2.0;
            t[i].weight += inner.mass as f64;
            let b2 = t[i].body;
            t[i].body = Body { id: 7, ..b2 };
            let m2 = moved(Body { ..inner }, dt);
            t[i].body.mass = m2.pos.x + m2.pos.y;
            i += $size(GPU)$;
        }
    });
    let at = |s: &str| source.find(s).unwrap_or_else(|| panic!("{s} in {source}"));
    assert!(at("struct Vec2 {") < at("struct Body {"));
    assert!(at("struct Body {") < at("struct Tagged {"));
    insta::assert_snapshot!(source);
}

#[test]
fn a_function_writes_a_field_of_a_field_through_a_pointer() -> parray::Result<()> {
    let want: Vec<Body> = bodies()
        .into_iter()
        .map(|mut b| {
            b.pos.y += 0.25;
            b.vel.x = b.pos.y;
            b
        })
        .collect();
    let mut p = P::create()?;
    p.copy_from_slice(&bodies())?;
    detour!(LIFT(&mut p) {
        lift(p, $tid$, 0.25);
    })?;
    assert_eq!(p.to_vec()?, want, "cuda");

    let mut h = HP::create()?;
    h.copy_from_slice(&bodies())?;
    {
        let out = h.ptr_mut();
        detour!(TEAM {
            let mut i = $tid$;
            while i < 64 {
                lift(out + 0, i, 0.25);
                i += 4;
            }
        })?;
    }
    assert_eq!(h.to_vec()?, want, "pthd");

    let mut r = HP::create()?;
    r.copy_from_slice(&bodies())?;
    for i in 0..N {
        lift(r.ptr_mut(), i, 0.25);
    }
    assert_eq!(r.to_vec()?, want, "rust");
    Ok(())
}

/// An array of records inside records sized at run time: its module (the records' and
/// its declarations) is built when the program runs, and its kernel specialised then.
#[test]
fn a_run_time_sized_array_of_nested_records() -> parray::Result<()> {
    NB.bind(40)?;
    let mut p = RB::create()?;
    p.copy_from_slice(&bodies()[..40])?;
    detour!(RGRID(&mut p) {
        let i = $tid$;
        if i < $dim(RB_0)$ {
            p[i].pos.x += p[i].vel.y;
            p[i].vel = Vec2 { x: 1.0, y: p[i].mass };
        }
    })?;
    let want: Vec<Body> = bodies()[..40]
        .iter()
        .map(|&b| {
            let mut b = b;
            b.pos.x += b.vel.y;
            b.vel = Vec2 { x: 1.0, y: b.mass };
            b
        })
        .collect();
    assert_eq!(p.to_vec()?, want);
    Ok(())
}
