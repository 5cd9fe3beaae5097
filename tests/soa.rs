//! Record arrays kept one array per field (`dmem soa Particle [N] Q`, SPEC 2.3): the
//! storage's field arrays, host access, `#copy` between whole records and field arrays
//! (host and body), and one step body run over both kinds of arrays, on pthd threads and
//! on the GPU or its emulation (`PARRAY_BACKEND=cuda soa` on the GPU machine), against
//! plain Rust. The inputs are small dyadic numbers, so that every back end computes them
//! exactly.

use parray::copy::CopyPath;
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
    const N = 512;
    pub paged Particle [N] HOST_P;
    pub paged soa Particle [N] HOST_Q;
    pub dmem Particle [N] P;
    pub dmem soa Particle [N] Q;
    // The same elements as Q, the storage's rows and columns swapped: not in logical order.
    pub dmem soa Particle [[N / 16][16]] Q2;
    pub dmem soa Particle [#Q2_0_1][#Q2_0_0] QT;
    pub cuda(Particle* p, float dt) [N / 128][128] STEP;
    pub cuda(soa Particle* p, float dt) [N / 128][128] STEP_SOA;
    pub cuda(Particle* p, soa Particle* q) [N / 128][128] TO_FIELDS;
    pub cuda(soa Particle* q, Particle* p) [N / 128][128] TO_RECORDS;
    pub pthd [4] TEAM;
    pub smem soa Particle [128] TILE;
    Particle [128 #P] BLOCK;
    pub cuda(Particle* p, Particle* out) [N / 128][128] SHIFT;
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

/// The step on the host: the reference.
fn step(mut p: Particle, k: usize, dt: f32) -> Particle {
    p.vel += p.pos * -0.5 * dt;
    p.pos += p.vel * dt;
    p.mass += 1.0;
    p.id = 2 * k as i32;
    p
}

fn stepped() -> Vec<Particle> {
    let x = particles().into_iter().enumerate();
    x.map(|(k, q)| step(q, k, 0.5)).collect()
}

/// Where field `k` of element `i` lies in SoA storage of `N` particles: the fields'
/// arrays in order (8, 8, 4 and 4 bytes an element), each at a multiple of 256 bytes.
fn soa_byte(k: usize, i: usize) -> usize {
    let (starts, sizes) = ([0, 8 * N, 16 * N, 20 * N], [8, 8, 4, 4]);
    starts[k] + i * sizes[k]
}

#[test]
fn an_soa_array_keeps_each_field_in_its_own_array() -> parray::Result<()> {
    let mut q = HOST_Q::create()?;
    q.copy_from_slice(&particles())?;
    assert!(q.soa() && !HOST_P::create()?.soa());
    let base = q.ptr().host_address().cast::<u8>();
    let read = |k: usize, i: usize| -> [u8; 8] {
        let mut bytes = [0u8; 8];
        let len = [8, 8, 4, 4][k];
        // SAFETY: `soa_byte` names the `len` bytes of a field inside the storage of `q`,
        // which lives and is not written while `read` is used.
        unsafe { std::ptr::copy_nonoverlapping(base.add(soa_byte(k, i)), bytes.as_mut_ptr(), len) };
        bytes
    };
    for (i, x) in particles().iter().enumerate() {
        let f32s = |b: [u8; 8]| {
            let lane = |o: usize| f32::from_ne_bytes(b[o..o + 4].try_into().unwrap());
            (lane(0), lane(4))
        };
        assert_eq!(f32s(read(0, i)), (x.pos.x, x.pos.y), "pos of {i}");
        assert_eq!(f32s(read(1, i)), (x.vel.x, x.vel.y), "vel of {i}");
        assert_eq!(f32s(read(2, i)).0, x.mass, "mass of {i}");
        assert_eq!(
            i32::from_ne_bytes(read(3, i)[..4].try_into().unwrap()),
            x.id
        );
    }
    // Elements in and out, whole.
    assert_eq!(q.to_vec()?, particles());
    assert_eq!(q.at([7]), particles()[7]);
    let mut one = particles()[3];
    one.mass = -4.0;
    q.set([9], one);
    assert_eq!(q.at([9]), one);
    assert_eq!(
        f32::from_ne_bytes(read(2, 9)[..4].try_into().unwrap()),
        -4.0
    );
    assert_eq!(q.at([8]), particles()[8], "a neighbour untouched");
    q.fill(one)?;
    assert!(q.to_vec()?.iter().all(|e| *e == one));
    q.zero()?;
    assert!(q.to_vec()?.iter().all(|e| *e == Particle::default()));
    // There is no whole record in memory to lend.
    let e = q.as_slice().expect_err("no slice of whole records");
    assert!(matches!(e, parray::Error::FieldArrays { .. }), "{e}");
    assert!(
        e.to_string()
            .contains("HOST_Q keeps its records one array per field"),
        "{e}"
    );
    Ok(())
}

#[test]
#[should_panic(
    expected = "HOST_Q keeps its records one array per field (soa): there is no whole record to reference"
)]
fn an_soa_array_lends_no_reference_to_an_element() {
    let q = HOST_Q::create().unwrap();
    let _ = q[0];
}

#[test]
fn host_copies_between_whole_records_and_field_arrays_round_trip() -> parray::Result<()> {
    let mut p = HOST_P::create()?;
    p.copy_from_slice(&particles())?;
    // Host to device memory, into field arrays (under the emulation, host memory).
    let mut q = Q::create()?;
    assert_eq!(parray::copy::copy(&p, &mut q)?, CopyPath::Fields);
    let mut back = HOST_P::create()?;
    assert_eq!(q.copy_to(&mut back)?, CopyPath::Fields);
    assert_eq!(back.to_vec()?, particles());
    // Between host arrays, by `#copy`, and element by element.
    let mut hq = HOST_Q::create()?;
    host! { #copy HOST_P(p) to HOST_Q(hq); }
    for (i, x) in particles().iter().enumerate() {
        assert_eq!(hq.at([i]), *x, "element {i}");
    }
    // Into field arrays laid out in another order: element (i, j) of QT, k = 32 i + j, is
    // stored at Q2's offset of (j, i), 16 j + i: a transposition.
    let mut qt = QT::create()?;
    assert_eq!(q.copy_to(&mut qt)?, CopyPath::ThroughHost);
    let (x, stored) = (particles(), qt.to_vec()?);
    for (i, j) in (0..16).flat_map(|i| (0..32).map(move |j| (i, j))) {
        assert_eq!(stored[16 * j + i], x[32 * i + j], "element ({i}, {j})");
    }
    let mut q2 = HOST_Q::create()?;
    assert_eq!(qt.copy_to(&mut q2)?, CopyPath::ThroughHost);
    assert_eq!(q2.to_vec()?, particles());
    Ok(())
}

/// The step's body, written once: a cuda detour of it on the thread array and arguments
/// given, whose parameter keeps its records whole or one array per field.
macro_rules! step_on_gpu {
    ($threads:ident($($arg:expr),*)) => {
        detour!($threads($($arg),*) {
            let i = ($tid$);
            let mut q = p[i];
            q.vel += q.pos * -0.5 * dt;
            p[i].pos = q.pos + q.vel * dt;
            p[i].vel = q.vel;
            p[i].mass += 1.0;
            p[i].id = 2 * i as i32;
        })
    };
}

#[test]
fn one_step_body_over_whole_records_and_field_arrays_on_the_gpu() -> parray::Result<()> {
    let mut p = P::create()?;
    p.copy_from_slice(&particles())?;
    step_on_gpu!(STEP(&mut p, 0.5))?;
    assert_eq!(p.to_vec()?, stepped());
    let mut q = Q::create()?;
    q.copy_from_slice(&particles())?;
    step_on_gpu!(STEP_SOA(&mut q, 0.5))?;
    assert_eq!(q.to_vec()?, stepped());
    Ok(())
}

/// The step on CPU threads, each a quarter of the particles of `p`, whatever its type.
fn step_on_threads<T: DataType<Elem = Particle>>(p: &mut Array<T>) -> parray::Result<()> {
    let dt = 0.5f32;
    detour!(<T> TEAM {
        let quarter = $size(T)$ / 4;
        for k in 0..quarter {
            let i = $T[$tid$ * quarter + k]$;
            let mut q = p[i];
            q.vel += q.pos * -0.5 * dt;
            p[i].pos = q.pos + q.vel * dt;
            p[i].vel = q.vel;
            p[i].mass += 1.0;
            p[i].id = 2 * i as i32;
        }
    })
}

#[test]
fn one_step_body_over_whole_records_and_field_arrays_on_cpu_threads() -> parray::Result<()> {
    let mut p = HOST_P::create()?;
    p.copy_from_slice(&particles())?;
    step_on_threads(&mut p)?;
    assert_eq!(p.to_vec()?, stepped());
    let mut q = HOST_Q::create()?;
    q.copy_from_slice(&particles())?;
    step_on_threads(&mut q)?;
    assert_eq!(q.to_vec()?, stepped());
    Ok(())
}

#[test]
fn a_body_copies_whole_records_into_field_arrays_and_back() -> parray::Result<()> {
    let mut p = P::create()?;
    p.copy_from_slice(&particles())?;
    let mut q = Q::create()?;
    detour!(TO_FIELDS(&p, &mut q) {
        #copy P(p) to Q(q) if |k| k % 128 == $tid$;
    })?;
    assert_eq!(q.to_vec()?, particles());
    let mut back = P::create()?;
    detour!(TO_RECORDS(&q, &mut back) {
        #copy Q(q) to P(p) if |k| k % 128 == $tid$;
    })?;
    assert_eq!(back.to_vec()?, particles());
    Ok(())
}

/// Each block copies its particles into a shared tile kept one array per field, each
/// thread takes its neighbour's record with its own velocity and writes it back whole,
/// then a field of it, and the tile is copied out to whole records (`detour` runs it,
/// `kernel_source` gives its C).
macro_rules! shift_through_tile {
    ($mac:ident, $threads:ident($($arg:expr),*)) => {
        $mac!($threads($($arg),*) {
            let tile = TILE::create();
            let t = ($tid_1$);
            if t == 0 {
                #copy BLOCK(p + $P[128 * ($tid_0$)]$) to TILE(tile);
            }
            #sync;
            let mut q = tile[(t + 1) % 128];
            q.vel = tile[t].vel;
            q.id = tile[t].id + t as i32;
            #sync;
            tile[t] = q;
            tile[t].mass += 1.0;
            #sync;
            if t == 0 {
                #copy TILE(tile) to BLOCK(out + $P[128 * ($tid_0$)]$);
            }
        })
    };
}

#[test]
fn a_body_copies_whole_records_into_a_shared_tile_of_field_arrays_and_back() -> parray::Result<()> {
    let mut p = P::create()?;
    p.copy_from_slice(&particles())?;
    let mut out = P::create()?;
    shift_through_tile!(detour, SHIFT(&p, &mut out))?;
    let x = particles();
    let want: Vec<Particle> = (0..N)
        .map(|k| {
            let (b, t) = (k / 128 * 128, k % 128);
            let mut q = x[b + (t + 1) % 128];
            q.vel = x[k].vel;
            q.id = x[k].id + t as i32;
            q.mass += 1.0;
            q
        })
        .collect();
    assert_eq!(out.to_vec()?, want);
    Ok(())
}

#[test]
fn a_shared_tile_of_field_arrays_is_an_array_per_field_in_c() {
    let (p, out) = ((), ());
    let source = shift_through_tile!(kernel_source, SHIFT(p, out));
    insta::assert_snapshot!(source);
}

#[test]
fn a_parameter_takes_records_kept_as_it_says() -> parray::Result<()> {
    let mut p = P::create()?;
    let e = detour!(STEP_SOA(&mut p, 0.5) {
        p[$P[$tid$]$].mass = dt;
    })
    .expect_err("whole records for a soa parameter");
    assert!(
        matches!(e, parray::Error::Arrangement { soa: false, .. }),
        "{e}"
    );
    assert!(
        e.to_string()
            .contains("`p` is P, whose records are whole, but the parameter `p` is declared `soa`"),
        "{e}"
    );
    let mut q = Q::create()?;
    let e = detour!(STEP(&mut q, 0.5) {
        p[$Q[$tid$]$].mass = dt;
    })
    .expect_err("field arrays for a parameter of whole records");
    assert!(
        matches!(e, parray::Error::Arrangement { soa: true, .. }),
        "{e}"
    );
    Ok(())
}

#[test]
fn an_soa_kernel_reaches_each_field_in_its_array() {
    let (p, dt) = ((), ());
    let source = kernel_source!(STEP_SOA(p, dt) {
        let i = $Q[$tid$]$;
        let mut q = p[i];
        q.vel += q.pos * -0.5 * dt;
        p[i].pos = q.pos + q.vel * dt;
        p[i].mass += 1.0;
        // Unproved: checked through the field arrays.
        p[i * 3 % 1000] = q;
    });
    insta::assert_snapshot!(source);
}
