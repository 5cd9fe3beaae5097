//! Types declared in another crate: `use other::M;` brings the type and its companion
//! macro, so `$M[...]$`, detours and declarations referencing it work as at home.

use parray::prelude::*;
use parray_fixture_types::{FLIPPED, GRID, WIDTH, WORKERS};

parray! {
    // A view of the other crate's type, declared here.
    paged float [#GRID_0][#GRID_1] SAME;
}

/// Row-major [6][4], rows split [2][3]: the independent reference.
fn grid(row: usize, col: usize) -> usize {
    row * 4 + col
}

#[test]
fn offsets_of_a_type_from_another_crate() {
    for r in 0..6usize {
        for c in 0..4usize {
            assert_eq!(host! { $GRID[r][c]$ }, grid(r, c));
            assert_eq!(host! { $FLIPPED[c][r]$ }, grid(r, c));
            assert_eq!(host! { $SAME[r][c]$ }, grid(r, c));
            assert_eq!(host! { $GRID[[r / 3][r % 3]][c]$ }, grid(r, c));
        }
    }
    assert_eq!(host! { $dim(GRID_0)$ }, 6);
    assert_eq!(host! { $dim_0(FLIPPED)$ }, WIDTH);
    assert_eq!(<GRID as DataType>::extent(), 24);
}

#[test]
fn detour_on_a_thread_array_from_another_crate() -> parray::Result<()> {
    let mut buf = GRID::create()?;
    detour!(WORKERS {
        buf[$GRID[[$tid_0$][$tid_1$]][0]$] = ($tid$ + 1) as f32;
    })?;
    let v = buf.to_vec()?;
    for t in 0..4usize {
        assert_eq!(v[grid((t / 2) * 3 + t % 2, 0)], (t + 1) as f32);
    }
    Ok(())
}
