//! `#copy S(p) to D(q)` in detour bodies: element k of S at p goes to element k of D at q,
//! in logical order, whatever the two layouts; the same on CPU threads, on the emulation
//! and on a GPU, checked against plain Rust.

use parray::prelude::*;

parray! {
    pub paged float [64][16] A;
    pub paged float [16][64] T_STORE;
    pub float [#T_STORE_1][#T_STORE_0] T;
    pub pthd [4] CPU;
    pub dmem float [64][16] DA;
    pub dmem float [16][64] DT_STORE;
    pub float [#DT_STORE_1][#DT_STORE_0] DT;
    pub cuda(float* a, float* t) [4][16] GPU;
    pub smem float [16][17] TILE;
    pub smem float [#TILE_0][16#TILE_1] TV;
    pub rmem float [16] ROW;
}

fn value(i: usize, j: usize) -> f32 {
    (i * 100 + j) as f32
}

/// The transposed storage a copy of A's rows into T's rows must give.
fn transposed() -> Vec<f32> {
    (0..16 * 64).map(|x| value(x % 64, x / 64)).collect()
}

fn a_values() -> Vec<f32> {
    (0..64 * 16).map(|x| value(x / 16, x % 16)).collect()
}

#[test]
fn rows_copied_into_a_transposed_view_on_cpu_threads() -> parray::Result<()> {
    let mut a = A::create()?;
    a.copy_from_slice(&a_values())?;
    let mut t = T_STORE::create()?;
    let (a, t) = (&a, t.view_mut::<T>());
    detour!(CPU {
        for r in 0..16 {
            let row = $tid$ * 16 + r;
            #copy A_1(a + $A[row][0]$) to T_1(t + $T[row][0]$);
        }
    })?;
    assert_eq!(t.to_vec()?, transposed());
    Ok(())
}

#[test]
fn rows_through_registers_and_shared_memory_on_a_grid() -> parray::Result<()> {
    let mut a = DA::create()?;
    a.copy_from_slice(&a_values())?;
    let mut t = DT_STORE::create()?;
    detour!(GPU(&a, t.view_mut::<DT>()) {
        // Each thread: its row of A into registers, then into a padded shared tile, then,
        // after the barrier, its row of the tile into T's row (a transposing store).
        let r = ROW::create();
        #copy DA_1(a + $DA[$tid$][0]$) to ROW(r);
        let s = TILE::create();
        #copy ROW(r) to TV_1(s + $TV[$tid_1$][0]$);
        #sync;
        #copy TV_1(s + $TV[$tid_1$][0]$) to DT_1(t + $DT[$tid$][0]$);
    })?;
    assert_eq!(t.to_vec()?, transposed());
    Ok(())
}

/// The kernel of the grid copy: each `#copy` an unrolled run of element moves whose
/// offsets the offset compiler folded (row of 16: constant steps), all proved in bounds.
#[test]
fn the_copies_kernel() -> parray::Result<()> {
    let (a, mut t) = (DA::create()?, DT_STORE::create()?);
    let t = t.view_mut::<DT>();
    insta::assert_snapshot!(kernel_source!(GPU(a, t) {
        let r = ROW::create();
        #copy DA_1(a + $DA[$tid$][0]$) to ROW(r);
        let s = TILE::create();
        #copy ROW(r) to TV_1(s + $TV[$tid_1$][0]$);
        #sync;
        #copy TV_1(s + $TV[$tid_1$][0]$) to DT_1(t + $DT[$tid$][0]$);
    }));
    Ok(())
}

// ---------------------------------------------------------------- on the host

use parray::copy::{plan, CopyPath, Place};

parray! {
    pub paged float [64][48] ROWS_P;
    pub dmem float [64][48] ROWS_D;
    pub dmem float [2][2][32][24] BLOCKS_STORE;
    pub float [[#BLOCKS_STORE_0][#BLOCKS_STORE_2]][[#BLOCKS_STORE_1][#BLOCKS_STORE_3]] BLOCKS;
    pub dmem float [48][64] COLS_STORE;
    pub float [#COLS_STORE_1][#COLS_STORE_0] COLS;
    pub pinned float [64][48] ROWS_PINNED;
    pub dmem float [64][64] PADDED_STORE;
    pub float [#PADDED_STORE_0][48#PADDED_STORE_1] PADDED;
    pub paged float [64][64] PADDED_HOST_STORE;
    pub float [#PADDED_HOST_STORE_0][48#PADDED_HOST_STORE_1] PADDED_HOST;
    pub dmem float [512][8] NARROW_STORE;
    pub float [#NARROW_STORE_0][6#NARROW_STORE_1] NARROW;
    pub paged float [512][6] NARROW_ROWS;
    // Rows on one GPU of more than a MiB: 601 floats (2404 bytes: words of 4), in storage
    // of 640 and of 768 (the strided path's rows kernel there).
    pub dmem float [512][601] PITCHED_ROWS;
    pub dmem float [512][640] PITCHED_ROWS_A_STORE;
    pub float [#PITCHED_ROWS_A_STORE_0][601#PITCHED_ROWS_A_STORE_1] PITCHED_ROWS_A;
    pub dmem float [512][768] PITCHED_ROWS_B_STORE;
    pub float [#PITCHED_ROWS_B_STORE_0][601#PITCHED_ROWS_B_STORE_1] PITCHED_ROWS_B;
}

/// Rows between two pitched arrays on one GPU, dense to padded, padded to padded and back,
/// each row where it belongs and the padding untouched (a kernel on a GPU, the element
/// loop on the emulation: the same result).
#[test]
fn rows_between_pitched_arrays_on_one_device() -> parray::Result<()> {
    let value = |i: usize, j: usize| (i * 601 + j) as f32;
    let values: Vec<f32> = (0..512 * 601).map(|k| value(k / 601, k % 601)).collect();
    let mut dense = PITCHED_ROWS::create()?;
    dense.copy_from_slice(&values)?;
    let (mut s640, mut s768) = (
        PITCHED_ROWS_A_STORE::create()?,
        PITCHED_ROWS_B_STORE::create()?,
    );
    s640.fill(-1.0)?;
    s768.fill(-2.0)?;
    dense.copy_to(s640.view_mut::<PITCHED_ROWS_A>())?;
    s640.view::<PITCHED_ROWS_A>()
        .copy_to(s768.view_mut::<PITCHED_ROWS_B>())?;
    let mut back = PITCHED_ROWS::create()?;
    assert!(matches!(
        s768.view::<PITCHED_ROWS_B>().copy_to(&mut back)?,
        CopyPath::Strided(_)
    ));
    assert_eq!(back.to_vec()?, values);
    for (stored, pitch, pad) in [(s640.to_vec()?, 640, -1.0), (s768.to_vec()?, 768, -2.0)] {
        for i in 0..512 {
            for j in 0..pitch {
                let want = if j < 601 { value(i, j) } else { pad };
                assert_eq!(
                    stored[i * pitch + j],
                    want,
                    "({i}, {j}) of rows {pitch} apart"
                );
            }
        }
    }
    Ok(())
}

fn matrix(i: usize, j: usize) -> f32 {
    (i * 1000 + j) as f32
}

/// Element (i, j) of a 64x48 matrix stored as `S` and read through its logical type `V`.
fn logical<V: DataType<Elem = f32>>(storage: Vec<f32>) -> Vec<f32> {
    (0..64 * 48)
        .map(|x| storage[V::offset_of(&[x / 48, x % 48])])
        .collect()
}

fn expected() -> Vec<f32> {
    (0..64 * 48).map(|x| matrix(x / 48, x % 48)).collect()
}

#[test]
fn host_copies_across_layouts_and_memories() -> parray::Result<()> {
    let mut rows = ROWS_P::create()?;
    for i in 0..64 {
        for j in 0..48 {
            rows.set([i, j], matrix(i, j));
        }
    }
    // Paged rows to device blocks, blocks to device columns, columns back to pinned rows.
    let mut blocks = BLOCKS_STORE::create()?;
    rows.copy_to(blocks.view_mut::<BLOCKS>())?;
    assert_eq!(logical::<BLOCKS>(blocks.to_vec()?), expected());
    let mut cols = COLS_STORE::create()?;
    blocks.view::<BLOCKS>().copy_to(cols.view_mut::<COLS>())?;
    assert_eq!(logical::<COLS>(cols.to_vec()?), expected());
    let mut back = ROWS_PINNED::create()?;
    cols.view::<COLS>().copy_to(&mut back)?;
    assert_eq!(back.to_vec()?, expected());
    // Contiguous to contiguous: one transfer.
    let mut device_rows = ROWS_D::create()?;
    assert_eq!(back.copy_to(&mut device_rows)?, CopyPath::Bulk);
    assert_eq!(device_rows.to_vec()?, expected());
    Ok(())
}

#[test]
fn the_path_follows_from_the_types_and_memories() -> parray::Result<()> {
    assert_eq!(
        plan::<ROWS_P, ROWS_D>(Place::Host, Place::Gpu(0))?,
        CopyPath::Bulk
    );
    assert_eq!(
        plan::<ROWS_P, BLOCKS>(Place::Host, Place::Host)?,
        CopyPath::HostLoop
    );
    assert_eq!(
        plan::<BLOCKS, COLS>(Place::Gpu(0), Place::Gpu(0))?,
        CopyPath::DeviceRemap
    );
    assert_eq!(
        plan::<ROWS_P, ROWS_D>(Place::Host, Place::Gpu(0))?,
        CopyPath::Bulk
    );
    assert_eq!(
        plan::<COLS, ROWS_D>(Place::Host, Place::Gpu(0))?,
        CopyPath::PackAndUpload
    );
    assert_eq!(
        plan::<ROWS_P, BLOCKS>(Place::Host, Place::Gpu(0))?,
        CopyPath::UploadAndRemap
    );
    assert_eq!(
        plan::<ROWS_D, COLS>(Place::Gpu(0), Place::Host)?,
        CopyPath::DownloadAndScatter
    );
    assert_eq!(
        plan::<BLOCKS, ROWS_P>(Place::Gpu(0), Place::Host)?,
        CopyPath::RemapAndDownload
    );
    // Between two GPUs: one peer copy, with a remap on each side that is not contiguous.
    assert_eq!(
        plan::<ROWS_D, ROWS_D>(Place::Gpu(0), Place::Gpu(1))?,
        CopyPath::PeerBulk
    );
    for path in [
        plan::<ROWS_D, COLS>(Place::Gpu(0), Place::Gpu(1))?,
        plan::<BLOCKS, ROWS_D>(Place::Gpu(1), Place::Gpu(0))?,
        plan::<BLOCKS, COLS>(Place::Gpu(0), Place::Gpu(1))?,
    ] {
        assert_eq!(path, CopyPath::PeerRemap);
    }
    Ok(())
}

/// Rows a pitch apart (`cudaMallocPitch`'s padded matrix as a type): one 2-D strided copy
/// each way, the padding untouched; rows narrower than `MIN_ROW_BYTES` take the element
/// loop or a remap.
#[test]
fn pitched_rows_take_one_strided_copy() -> parray::Result<()> {
    use parray::copy::{Rows, Strided};
    let dense = Rows {
        start: 0,
        width: 48,
        pitch: 48,
    };
    let padded = Rows { pitch: 64, ..dense };
    let down = CopyPath::Strided(Strided {
        src: dense,
        dst: padded,
        height: 64,
    });
    let up = CopyPath::Strided(Strided {
        src: padded,
        dst: dense,
        height: 64,
    });
    assert_eq!(plan::<ROWS_P, PADDED>(Place::Host, Place::Gpu(0))?, down);
    assert_eq!(plan::<PADDED, ROWS_P>(Place::Gpu(0), Place::Host)?, up);
    assert_eq!(plan::<ROWS_D, PADDED>(Place::Gpu(0), Place::Gpu(0))?, down);
    assert_eq!(plan::<PADDED_HOST, PADDED>(Place::Host, Place::Gpu(0))?, {
        let same = Strided {
            src: padded,
            dst: padded,
            height: 64,
        };
        CopyPath::Strided(same)
    });
    assert_eq!(
        plan::<PADDED, ROWS_D>(Place::Gpu(0), Place::Gpu(1))?,
        CopyPath::PeerRemap
    );
    assert_eq!(
        plan::<NARROW_ROWS, NARROW>(Place::Host, Place::Host)?,
        CopyPath::HostLoop
    );
    assert_eq!(
        plan::<NARROW_ROWS, NARROW>(Place::Host, Place::Gpu(0))?,
        CopyPath::UploadAndRemap
    );

    let mut rows = ROWS_P::create()?;
    rows.copy_from_slice(&expected())?;
    let mut store = PADDED_STORE::create()?;
    store.fill(-1.0)?;
    assert!(matches!(
        rows.copy_to(store.view_mut::<PADDED>())?,
        CopyPath::Strided(_)
    ));
    let stored = store.to_vec()?;
    for i in 0..64 {
        for j in 0..64 {
            let want = if j < 48 { matrix(i, j) } else { -1.0 };
            assert_eq!(stored[i * 64 + j], want, "({i}, {j})");
        }
    }
    let mut host = PADDED_HOST_STORE::create()?;
    host.fill(-2.0)?;
    store
        .view::<PADDED>()
        .copy_to(host.view_mut::<PADDED_HOST>())?;
    let mut back = ROWS_PINNED::create()?;
    host.view::<PADDED_HOST>().copy_to(&mut back)?;
    assert_eq!(back.to_vec()?, expected());
    assert_eq!(host.to_vec()?[48..64], [-2.0; 16]);
    Ok(())
}

/// The paper's spelling in host code: `#copy S(a) to D(b);`.
#[test]
fn copy_in_host_code() -> parray::Result<()> {
    let mut rows = ROWS_P::create()?;
    rows.copy_from_slice(&expected())?;
    let mut cols = COLS_STORE::create()?;
    let cols = cols.view_mut::<COLS>();
    host! {
        #copy ROWS_P(rows) to COLS(cols);
    }
    let mut storage = vec![0.0; 64 * 48];
    host! {
        for i in 0..$dim_0(COLS)$ {
            for j in 0..$dim_1(COLS)$ {
                storage[$COLS_STORE[j][i]$] = matrix(i, j);
            }
        }
    }
    assert_eq!(cols.to_vec()?, storage);
    Ok(())
}

parray! {
    pub dmem float [96][64] WIDE;
    pub dmem float [64][96] WIDE_T_STORE;
    pub float [#WIDE_T_STORE_1][#WIDE_T_STORE_0] WIDE_T;
}

/// A transposing copy (on a GPU: through a shared tile, the destination's contiguous digit
/// being another than the source's).
#[test]
fn a_transposing_copy() -> parray::Result<()> {
    let mut wide = WIDE::create()?;
    let values: Vec<f32> = (0..96 * 64).map(|x| x as f32).collect();
    wide.copy_from_slice(&values)?;
    let mut t = WIDE_T_STORE::create()?;
    wide.copy_to(t.view_mut::<WIDE_T>())?;
    let stored = t.to_vec()?;
    for i in 0..96 {
        for j in 0..64 {
            assert_eq!(stored[j * 96 + i], values[i * 64 + j], "({i}, {j})");
        }
    }
    Ok(())
}

/// `zero()` sets every element to zero: on a GPU by the driver's memset (no transfer), in
/// host memory and the emulation's dmem by writing the bytes.
#[test]
fn zero_sets_every_element() -> parray::Result<()> {
    let mut device = PADDED_STORE::create()?;
    let mut host = PADDED_HOST_STORE::create()?;
    device.fill(-1.0)?;
    host.fill(-1.0)?;
    device.zero()?;
    host.zero()?;
    assert!(device.to_vec()?.iter().all(|v| *v == 0.0));
    assert!(host.to_vec()?.iter().all(|v| *v == 0.0));
    Ok(())
}

/// A host `#copy` names the types it copies between; an end may be an array of a storage
/// type that its named type views (no `view_mut` needed): `#copy A(a) to T(t)` with `t`
/// an `Array<T_STORE>` transposes into it, and back.
#[test]
fn a_host_copy_into_an_array_its_type_views() -> parray::Result<()> {
    let mut a = A::create()?;
    a.copy_from_slice(&a_values())?;
    let mut t = T_STORE::create()?;
    host! {
        #copy A(&a) to T(&mut t);
    }
    assert_eq!(t.to_vec()?, transposed());
    let mut back = A::create()?;
    host! {
        #copy T(t) to A(back);
    }
    assert_eq!(back.to_vec()?, a_values());
    Ok(())
}

parray! {
    pub dmem float [8][6] MADE;
    pub dmem float [2][6] MADE_CHUNK;
    pub dmem float [5][6] MADE_FIVE_ROWS;
    pub dmem float [8][6] MADE_COPY;
    pub dmem float [6][8] MADE_T_STORE;
    pub float [#MADE_T_STORE_1][#MADE_T_STORE_0] MADE_T;
    pub cuda(float* m) [1][48] MAKE;
    pub cuda(float* d) [1][48] DOUBLE;
}

/// A pipelined copy: each chunk made by a kernel (writing only its chunk), then copied; the
/// result is the copy of all of it, in logical order, whatever the destination's layout
/// (on a GPU the copy in logical order overlaps the next chunk's kernel on a second
/// stream; the transposing one and the emulation's make every chunk, then copy).
#[test]
fn a_copy_in_chunks_copies_what_each_chunk_made() -> parray::Result<()> {
    let want: Vec<f32> = (0..48).map(|k| (k * 3 + 1) as f32).collect();
    let mut made = MADE::create()?;
    let (mut same, mut t) = (MADE_COPY::create()?, MADE_T_STORE::create()?);
    let mut chunks = Vec::new();
    let mut make = |m: &mut Array<MADE>, chunk: std::ops::Range<usize>| {
        let (lo, hi) = (chunk.start, chunk.end);
        chunks.push(chunk);
        detour!(MAKE(m) {
            let k = $tid$;
            if k >= lo && k < hi {
                m[k] = (k * 3 + 1) as f32;
            }
        })
    };
    parray::copy::copy_in_chunks::<MADE_CHUNK, _, _>(&mut made, &mut same, &mut make)?;
    assert_eq!(same.to_vec()?, want);
    made.zero()?;
    parray::copy::copy_in_chunks::<MADE_CHUNK, _, _>(&mut made, t.view_mut::<MADE_T>(), &mut make)?;
    assert_eq!(logical_made(t.to_vec()?), want);
    let each: Vec<_> = (0..48).step_by(12).map(|at| at..at + 12).collect();
    assert_eq!(chunks, [each.clone(), each].concat());
    // A chunk must divide the source: refused before anything is made.
    let refused =
        parray::copy::copy_in_chunks::<MADE_FIVE_ROWS, _, _>(&mut made, &mut same, |_, _| {
            panic!("nothing is made")
        })
        .unwrap_err();
    assert!(
        refused
            .to_string()
            .contains("MADE_FIVE_ROWS has 30 elements, which do not divide MADE's part of 48"),
        "{refused}"
    );
    Ok(())
}

/// A pipelined copy with a consumer: each chunk of the destination, once its copy has
/// arrived, doubled in place by a kernel that touches only that chunk; the consumers run
/// in order, each after its producer, and the result is every element made, copied and
/// doubled (on a GPU chunk `i` is consumed after chunk `i + 1` is made, while the copies
/// run on the second stream).
#[test]
fn a_copy_in_chunks_then_consumes_each_chunk_after_its_copy() -> parray::Result<()> {
    let mut made = MADE::create()?;
    let mut same = MADE_COPY::create()?;
    let steps = std::cell::RefCell::new(Vec::new());
    let make = |m: &mut Array<MADE>, chunk: std::ops::Range<usize>| {
        let (lo, hi) = (chunk.start, chunk.end);
        steps.borrow_mut().push(("made", lo));
        detour!(MAKE(m) {
            let k = $tid$;
            if k >= lo && k < hi {
                m[k] = (k * 3 + 1) as f32;
            }
        })
    };
    let double = |d: &mut Array<MADE_COPY>, chunk: std::ops::Range<usize>| {
        let (lo, hi) = (chunk.start, chunk.end);
        steps.borrow_mut().push(("consumed", lo));
        detour!(DOUBLE(d) {
            let k = $tid$;
            if k >= lo && k < hi {
                d[k] = d[k] * 2.0;
            }
        })
    };
    parray::copy::copy_in_chunks_then::<MADE_CHUNK, _, _>(&mut made, &mut same, make, double)?;
    let want: Vec<f32> = (0..48).map(|k| (k * 3 + 1) as f32 * 2.0).collect();
    assert_eq!(same.to_vec()?, want);
    // Every chunk consumed once, in order, after it was made.
    let steps = steps.into_inner();
    let consumed: Vec<usize> = steps
        .iter()
        .filter(|s| s.0 == "consumed")
        .map(|s| s.1)
        .collect();
    assert_eq!(consumed, [0, 12, 24, 36]);
    for at in consumed {
        let when = |what| steps.iter().position(|s| *s == (what, at)).unwrap();
        assert!(when("made") < when("consumed"), "{steps:?}");
    }
    Ok(())
}

/// The logical order of MADE_T's storage.
fn logical_made(storage: Vec<f32>) -> Vec<f32> {
    (0..48)
        .map(|k| storage[MADE_T::offset_of(&[k / 6, k % 6])])
        .collect()
}
