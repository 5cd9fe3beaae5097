//! `#copy` between arrays on two devices: one peer copy when both layouts are contiguous
//! in logical order, else a remap into contiguous order on the source's GPU and out of it
//! on the destination's around the peer copy. On two GPUs (`PARRAY_BACKEND=cuda` on a
//! machine that has them) the copies take the peer paths; elsewhere the two devices are
//! emulated, their dmem host memory, and the same copies compute the same thing on the
//! host. Each result is checked against the logical matrix, indexed by hand.

use parray::copy::CopyPath;
use parray::prelude::*;
use parray::Device;

const R: usize = 96;
const C: usize = 64;

parray! {
    pub dmem float [96][64] ROWS;
    // The matrix transposed in storage: element (i, j) at j * 96 + i.
    pub dmem float [64][96] COLS_STORE;
    pub float [#COLS_STORE_1][#COLS_STORE_0] COLS;
    // 32x32 blocks, 3x2 of them, each row-major: element (i, j) in block (i / 32, j / 32).
    pub dmem float [3][2][32][32] BLOCKS_STORE;
    pub float [[#BLOCKS_STORE_0][#BLOCKS_STORE_2]][[#BLOCKS_STORE_1][#BLOCKS_STORE_3]] BLOCKS;
}

/// Where each storage keeps element (i, j) of the 96x64 matrix, written out by hand.
fn rows(i: usize, j: usize) -> usize {
    i * C + j
}

fn cols(i: usize, j: usize) -> usize {
    j * R + i
}

fn blocks(i: usize, j: usize) -> usize {
    (((i / 32) * 2 + j / 32) * 32 + i % 32) * 32 + j % 32
}

fn value(i: usize, j: usize) -> f32 {
    (i * 1000 + j) as f32
}

/// The storage of the matrix laid out by `at`.
fn stored(at: fn(usize, usize) -> usize) -> Vec<f32> {
    let mut storage = vec![f32::NAN; R * C];
    for i in 0..R {
        for j in 0..C {
            storage[at(i, j)] = value(i, j);
        }
    }
    storage
}

/// Every element of the matrix where `at` says, in `storage`.
fn check(storage: &[f32], at: fn(usize, usize) -> usize, what: &str) {
    assert_eq!(storage.len(), R * C, "{what}");
    for i in 0..R {
        for j in 0..C {
            assert_eq!(storage[at(i, j)], value(i, j), "{what}: element ({i}, {j})");
        }
    }
}

/// Two GPUs of the backend, or two emulated devices where it has fewer; whether they are
/// GPUs.
fn two_devices() -> ([Device; 2], bool) {
    match (Device::nth(0), Device::nth(1)) {
        (Ok(a), Ok(b)) => {
            let gpus = !a.is_emulated();
            ([a, b], gpus)
        }
        _ => ([Device::emulated(0), Device::emulated(1)], false),
    }
}

/// The path a copy between the two devices takes: the peer path on GPUs, the host's where
/// the devices are emulated.
fn expect(gpus: bool, peer: CopyPath, host: CopyPath) -> CopyPath {
    if gpus {
        peer
    } else {
        host
    }
}

#[test]
fn contiguous_to_contiguous_is_one_peer_copy() -> parray::Result<()> {
    let ([d0, d1], gpus) = two_devices();
    let mut a = ROWS::create_on(&d0)?;
    a.copy_from_slice(&stored(rows))?;
    let mut b = ROWS::create_on(&d1)?;
    b.fill(f32::NAN)?;
    let path = a.copy_to(&mut b)?;
    assert_eq!(path, expect(gpus, CopyPath::PeerBulk, CopyPath::Bulk));
    assert_eq!(b.device(), Some(&d1));
    check(&b.to_vec()?, rows, "rows to rows");
    // The other way, into a copy that already holds other values.
    a.fill(-1.0)?;
    b.copy_to(&mut a)?;
    check(&a.to_vec()?, rows, "rows back");
    Ok(())
}

#[test]
fn layouts_remap_on_either_side_of_the_peer_copy() -> parray::Result<()> {
    let ([d0, d1], gpus) = two_devices();
    let remap = expect(gpus, CopyPath::PeerRemap, CopyPath::HostLoop);
    let mut rows_0 = ROWS::create_on(&d0)?;
    rows_0.copy_from_slice(&stored(rows))?;

    // Contiguous source, transposed destination: remapped on device 1.
    let mut cols_1 = COLS_STORE::create_on(&d1)?;
    cols_1.fill(f32::NAN)?;
    assert_eq!(rows_0.copy_to(cols_1.view_mut::<COLS>())?, remap);
    check(&cols_1.to_vec()?, cols, "rows on 0 to columns on 1");

    // Transposed source, blocked destination: remapped on both devices.
    let mut blocks_0 = BLOCKS_STORE::create_on(&d0)?;
    blocks_0.fill(f32::NAN)?;
    let path = cols_1
        .view::<COLS>()
        .copy_to(blocks_0.view_mut::<BLOCKS>())?;
    assert_eq!(path, remap);
    check(&blocks_0.to_vec()?, blocks, "columns on 1 to blocks on 0");

    // Blocked source, contiguous destination: remapped on device 0.
    let mut rows_1 = ROWS::create_on(&d1)?;
    rows_1.fill(f32::NAN)?;
    assert_eq!(blocks_0.view::<BLOCKS>().copy_to(&mut rows_1)?, remap);
    check(&rows_1.to_vec()?, rows, "blocks on 0 to rows on 1");

    // The sources are unchanged.
    check(&rows_0.to_vec()?, rows, "rows on 0, after");
    check(&cols_1.to_vec()?, cols, "columns on 1, after");
    Ok(())
}
