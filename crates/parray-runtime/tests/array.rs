//! Arrays, handles and element types on the host (no GPU needed).

#[macro_use]
mod common;

use parray_layout::ElemType;
use parray_runtime::{
    Access, AccessMut, Array, Bf16x2, Bf16x4, Bf16x8, DataType, Double2, Element, Error, Float2,
    Float4, Half2, Half4, Half8, Int2, Int4, Ptr,
};

flat_types! {
    A0 = Paged i8 [0];
    A1 = Paged i8 [1];
    A3 = Paged i8 [3];
    A1000 = Paged i8 [1000];
    V = Paged Float4 [5];
    MP = Paged f32 [4];
    MQ = Pinned f32 [4];
    MD = Dmem f32 [4];
    P = Pinned i32 [3];
    D = Dmem i32 [3];
    S = Smem f32 [16];
    R = Rmem f32 [16];
    A = Paged i64 [6];
    M = Paged f32 [1024];
    B = Pinned Int2 [8];
    C = Paged u32 [3];
    SMALL = Paged f32 [16];
}

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
    size_matches::<Half2>();
    size_matches::<Half4>();
    size_matches::<Half8>();
    size_matches::<Bf16x2>();
    size_matches::<Bf16x4>();
    size_matches::<Bf16x8>();
    // CUDA's vector types are aligned to their size, and so are parray's 16-bit ones.
    assert_eq!(std::mem::align_of::<Float2>(), 8);
    assert_eq!(std::mem::align_of::<Float4>(), 16);
    assert_eq!(std::mem::align_of::<Double2>(), 16);
    assert_eq!(std::mem::align_of::<Int2>(), 8);
    assert_eq!(std::mem::align_of::<Int4>(), 16);
    for (align, elem) in [
        (std::mem::align_of::<Half2>(), ElemType::Half2),
        (std::mem::align_of::<Half4>(), ElemType::Half4),
        (std::mem::align_of::<Half8>(), ElemType::Half8),
        (std::mem::align_of::<Bf16x2>(), ElemType::Bf16x2),
        (std::mem::align_of::<Bf16x4>(), ElemType::Bf16x4),
        (std::mem::align_of::<Bf16x8>(), ElemType::Bf16x8),
    ] {
        assert_eq!(align as u64, elem.align_bytes(), "{elem}");
    }
    assert_eq!(<Int4 as Element>::ELEM, ElemType::Int4);
    assert_eq!(<i8 as Element>::ELEM, ElemType::Char);
}

fn zeroed_and_aligned<T: DataType<Elem = i8>>() {
    let a = Array::<T>::new().unwrap();
    let s = a.as_slice().unwrap();
    assert_eq!(s.len(), T::extent());
    assert_eq!(s.as_ptr() as usize % 64, 0, "extent {}", T::extent());
    assert!(s.iter().all(|&x| x == 0));
}

#[test]
fn paged_is_zeroed_and_aligned_to_64_bytes() {
    zeroed_and_aligned::<A0>();
    zeroed_and_aligned::<A1>();
    zeroed_and_aligned::<A3>();
    zeroed_and_aligned::<A1000>();
    let v = Array::<V>::new().unwrap();
    assert_eq!(v.to_vec().unwrap(), vec![Float4::default(); 5]);
}

fn round_trip<T: DataType<Elem = f32>>() {
    let mut b = Array::<T>::new().unwrap();
    b.copy_from_slice(&[1.0, 2.0, 3.0, 4.0]).unwrap();
    assert_eq!(b.to_vec().unwrap(), [1.0, 2.0, 3.0, 4.0]);
    b.fill(7.5).unwrap();
    assert_eq!(b.to_vec().unwrap(), [7.5; 4]);
    let err = b.copy_from_slice(&[1.0; 3]).unwrap_err();
    assert!(
        matches!(
            err,
            Error::SizeMismatch {
                expected: 4,
                got: 3,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        format!("parray: copy of {}: expected 4 elements, got 3", T::NAME)
    );
    assert_eq!(
        (b.extent(), Some(b.mem()), b.type_name()),
        (4, T::MEM, T::NAME)
    );
}

#[test]
fn copies_round_trip_and_reject_wrong_lengths() {
    round_trip::<MP>();
    round_trip::<MQ>();
    round_trip::<MD>();
}

#[test]
fn host_slices_are_for_host_kinds_only() {
    let mut p = Array::<P>::new().unwrap();
    p.as_mut_slice().unwrap()[1] = 5;
    assert_eq!(p.as_slice().unwrap(), [0, 5, 0]);
    let d = Array::<D>::new().unwrap();
    let err = d.as_slice().unwrap_err();
    assert!(
        matches!(err, Error::NotHostMemory { type_name: "D", .. }),
        "{err:?}"
    );
}

#[test]
fn smem_and_rmem_cannot_be_created_by_host_code() {
    let err = Array::<S>::new().unwrap_err();
    assert!(err.to_string().contains("S is smem memory"), "{err}");
    let err = Array::<R>::new().unwrap_err();
    assert!(err.to_string().contains("R is rmem memory"), "{err}");
}

/// Reads through whatever a detour body captured: an owner or a handle.
fn sum<X: Access<i64>>(a: &X, n: usize) -> i64 {
    (0..n).map(|i| a.load(i)).sum()
}

#[test]
fn arrays_and_handles_share_one_access_interface() {
    let mut b = Array::<A>::new().unwrap();
    {
        let w = b.ptr_mut();
        for i in 0..6 {
            w.store(i, i as i64 * 10);
        }
        let mut q = w + 3;
        q += 2;
        assert_eq!(q.load(0), 50);
        q.store(0, -1);
    }
    b.set([4], 41);
    let p: Ptr<i64> = &b + 2;
    assert_eq!((p.offset(), p.extent(), p.type_name()), (2, 6, "A"));
    assert_eq!(p.load(1), 30);
    assert_eq!((b[4], b.at([4])), (41, 41));
    assert_eq!(sum(&b, 6), 10 + 20 + 30 + 41 - 1);
    assert_eq!(sum(&p, 4), 20 + 30 + 41 - 1);
    assert_eq!(b.ptr().device_address(), None);
}

#[test]
fn a_type_that_does_not_fit_is_refused() {
    let small = Array::<SMALL>::new().unwrap();
    let err = small.as_type::<M>().unwrap_err();
    assert_eq!(
        err.to_string(),
        "parray: SMALL (paged memory, extent 16) cannot be seen as M (extent 1024): a view needs the storage's memory kind (and with it its records kept alike, soa or whole) and at most its extent"
    );
    let big = Array::<M>::new().unwrap();
    assert_eq!(big.as_type::<SMALL>().unwrap().extent(), 1024);
    let on_device = Array::<MD>::new().unwrap();
    assert!(on_device.as_type::<MP>().is_err());
}

// Every build checks every access: these panic in release builds too.

#[test]
#[should_panic(expected = "parray: offset 1030 out of bounds for M (extent 1024)")]
fn loads_are_checked() {
    let b = Array::<M>::new().unwrap();
    let p = &b + 1000;
    let _ = p.load(30);
}

#[test]
#[should_panic(expected = "parray: offset 8 out of bounds for B (extent 8)")]
fn stores_are_checked() {
    let mut b = Array::<B>::new().unwrap();
    b.ptr_mut().store(8, Int2::new(1, 2));
}

#[test]
#[should_panic(expected = "parray: offset 3 out of bounds for C (extent 3)")]
fn indexing_is_checked() {
    let b = Array::<C>::new().unwrap();
    let _ = b[3];
}

#[test]
#[should_panic(expected = "parray: offset 100000000 out of bounds for SMALL (extent 16)")]
fn a_far_write_is_a_clean_panic() {
    let mut b = Array::<SMALL>::new().unwrap();
    b[100_000_000] = 1.0;
}

#[test]
#[should_panic(
    expected = "parray: offset 18446744073709551620 out of bounds for SMALL (extent 16)"
)]
fn an_offset_that_wraps_is_a_clean_panic() {
    let b = Array::<SMALL>::new().unwrap();
    let p = &b + usize::MAX;
    let _ = p.load(5);
}

#[test]
#[should_panic(expected = "index 3 out of range for C")]
fn typed_indices_are_checked() {
    let b = Array::<C>::new().unwrap();
    let _ = b.at([3]);
}
