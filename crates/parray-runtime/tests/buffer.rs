//! Buffers, pointers and element types on the host (no GPU needed).

use parray_core::{ElemType, MemKind};
use parray_runtime::{Access, Buffer, Double2, Element, Error, Float2, Float4, Int2, Int4, Ptr};

fn size_matches<T: Element>() {
    assert_eq!(
        std::mem::size_of::<T>() as u64,
        T::ELEM.size_bytes(),
        "size of {}",
        T::ELEM
    );
}

#[test]
fn element_sizes_match_the_type_language() {
    size_matches::<f32>();
    size_matches::<f64>();
    size_matches::<i32>();
    size_matches::<u32>();
    size_matches::<i8>();
    size_matches::<i64>();
    size_matches::<Float2>();
    size_matches::<Float4>();
    size_matches::<Double2>();
    size_matches::<Int2>();
    size_matches::<Int4>();
    // CUDA's vector types are aligned to their size.
    assert_eq!(std::mem::align_of::<Float2>(), 8);
    assert_eq!(std::mem::align_of::<Float4>(), 16);
    assert_eq!(std::mem::align_of::<Double2>(), 16);
    assert_eq!(std::mem::align_of::<Int2>(), 8);
    assert_eq!(std::mem::align_of::<Int4>(), 16);
    assert_eq!(<Int4 as Element>::ELEM, ElemType::Int4);
    assert_eq!(<i8 as Element>::ELEM, ElemType::Char);
}

#[test]
fn paged_is_zeroed_and_aligned_to_64_bytes() {
    for extent in [0usize, 1, 3, 1000] {
        let b = Buffer::<i8>::new("A", MemKind::Paged, extent).unwrap();
        let s = b.as_slice().unwrap();
        assert_eq!(s.len(), extent);
        assert_eq!(s.as_ptr() as usize % 64, 0, "extent {extent}");
        assert!(s.iter().all(|&x| x == 0));
    }
    let v = Buffer::<Float4>::new("V", MemKind::Paged, 5).unwrap();
    assert_eq!(v.to_vec().unwrap(), vec![Float4::default(); 5]);
}

#[test]
fn copies_round_trip_and_reject_wrong_lengths() {
    for mem in [MemKind::Paged, MemKind::Pinned, MemKind::Dmem] {
        let mut b = Buffer::<f32>::new("M", mem, 4).unwrap();
        b.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]).unwrap();
        assert_eq!(b.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
        b.fill(7.5).unwrap();
        assert_eq!(b.to_vec().unwrap(), [7.5; 4]);
        let err = b.copy_from_slice(&[1.0; 3]).unwrap_err();
        assert!(
            matches!(
                err,
                Error::SizeMismatch {
                    type_name: "M",
                    expected: 4,
                    got: 3
                }
            ),
            "{err:?}"
        );
        assert_eq!(
            err.to_string(),
            "parray: copy of M: expected 4 elements, got 3"
        );
        assert_eq!((b.extent(), b.mem(), b.type_name()), (4, mem, "M"));
    }
}

#[test]
fn host_slices_are_for_host_kinds_only() {
    let mut p = Buffer::<i32>::new("P", MemKind::Pinned, 3).unwrap();
    p.as_mut_slice().unwrap()[1] = 5;
    assert_eq!(p.as_slice().unwrap(), [0, 5, 0]);
    let d = Buffer::<i32>::new("D", MemKind::Dmem, 3).unwrap();
    let err = d.as_slice().unwrap_err();
    assert!(
        matches!(err, Error::NotHostMemory { type_name: "D", .. }),
        "{err:?}"
    );
}

#[test]
fn smem_and_rmem_cannot_be_created_by_host_code() {
    for mem in [MemKind::Smem, MemKind::Rmem] {
        let err = Buffer::<f32>::new("S", mem, 16).unwrap_err();
        assert!(
            err.to_string().contains(&format!("S is {mem} memory")),
            "{err}"
        );
    }
}

/// Reads through whatever a detour body captured: an owner or a handle.
fn sum<A: Access<i64>>(a: &A, n: usize) -> i64 {
    (0..n).map(|i| a.load(i)).sum()
}

#[test]
fn buffers_and_pointers_share_one_access_interface() {
    let b = Buffer::<i64>::new("A", MemKind::Paged, 6).unwrap();
    for i in 0..6 {
        b.store(i, i as i64 * 10);
    }
    let p: Ptr<i64> = &b + 2;
    assert_eq!((p.offset(), p.extent(), p.type_name()), (2, 6, "A"));
    assert_eq!(p.load(1), 30);
    assert_eq!(p[3], 50);
    assert_eq!(b[4], 40);
    let mut q = p + 1;
    q += 2;
    assert_eq!(q.load(0), 50);
    q.store(0, -1);
    assert_eq!(b.load(5), -1);
    assert_eq!(sum(&b, 6), 10 + 20 + 30 + 40 - 1);
    assert_eq!(sum(&p, 4), 20 + 30 + 40 - 1);
    assert_eq!(b.ptr().device_address(), None);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "parray: offset 1030 out of bounds for M (extent 1024)")]
fn debug_builds_check_loads() {
    let b = Buffer::<f32>::new("M", MemKind::Paged, 1024).unwrap();
    let p = &b + 1000;
    let _ = p.load(30);
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "parray: offset 8 out of bounds for B (extent 8)")]
fn debug_builds_check_stores() {
    let b = Buffer::<Int2>::new("B", MemKind::Pinned, 8).unwrap();
    b.store(8, Int2::new(1, 2));
}

#[cfg(debug_assertions)]
#[test]
#[should_panic(expected = "parray: offset 3 out of bounds for C (extent 3)")]
fn debug_builds_check_indexing() {
    let b = Buffer::<u32>::new("C", MemKind::Paged, 3).unwrap();
    let _ = b[3];
}
