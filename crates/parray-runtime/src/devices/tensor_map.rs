//! TMA's tensor maps: the 128 opaque bytes that tell the copy engine where a tensor is and
//! which box one `cp.async.bulk.tensor` moves, encoded on the host from a copy's plan
//! ([`parray_layout::tma::TmaPlan`]) and the array's address and length, and passed to the
//! kernel by value (a `const __grid_constant__` parameter).
//!
//! [`TensorMapSpec::of`] is the pure half: the arguments of `cuTensorMapEncodeTiled`,
//! checked against the driver's rules so that a refusal names the declaration and the rule
//! (the driver answers `CUDA_ERROR_INVALID_VALUE` alone). [`TensorMapSpec::encode`] calls
//! the driver.

use std::collections::HashMap;
use std::sync::Mutex;

use cudarc::driver::sys;
use cudarc::driver::DeviceRepr;
use parray_layout::tma::{TmaPlan, GRANULE, MAX_STRIDE_BYTES};
use parray_layout::{ElemType, Swizzle};

use crate::error::{Error, Result};

/// The most coordinates a tensor map's dimension has (`globalDim` is below 2^32).
pub const MAX_EXTENT: u64 = 1 << 32;

/// A tensor map as a kernel parameter receives it: 128 bytes, 64-byte aligned (the copy
/// engine's requirement; the generated C declares the same opaque struct,
/// `struct __align__(64) parray_tensor_map`).
#[repr(C, align(64))]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TensorMap {
    opaque: [u64; 16],
}

// SAFETY: `TensorMap` is `repr(C)` plain data (16 `u64`s, no padding, no pointers the
// kernel dereferences as Rust values); the kernel's parameter is the same 128 bytes at the
// same alignment (`parray_tensor_map`), so the driver copies it bit for bit.
unsafe impl DeviceRepr for TensorMap {}

/// The arguments of `cuTensorMapEncodeTiled` for one copy over one array, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TensorMapSpec {
    pub data_type: sys::CUtensorMapDataType,
    /// The array's device address (16-byte aligned).
    pub address: u64,
    /// Per dimension, innermost first: coordinates, box elements.
    pub extents: Vec<u64>,
    pub boxes: Vec<u32>,
    /// Bytes between coordinates of dimensions 1.. (dimension 0's is the element).
    pub strides: Vec<u64>,
    pub swizzle: sys::CUtensorMapSwizzle,
}

impl TensorMapSpec {
    /// The map of `plan`'s box over the array at `address` of `len` elements of `elem`;
    /// `decl` names the copy's source type for the errors.
    pub fn of(decl: &str, plan: &TmaPlan, elem: ElemType, address: u64, len: u64) -> Result<Self> {
        use sys::CUtensorMapDataType as T;
        let refuse = |rule: String| Error::TensorMap {
            decl: decl.to_string(),
            rule,
        };
        let data_type = match elem {
            ElemType::Bf16 => T::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16,
            ElemType::Half => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT16,
            ElemType::Float => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT32,
            ElemType::Double => T::CU_TENSOR_MAP_DATA_TYPE_FLOAT64,
            ElemType::Int => T::CU_TENSOR_MAP_DATA_TYPE_INT32,
            ElemType::Unsigned => T::CU_TENSOR_MAP_DATA_TYPE_UINT32,
            ElemType::Long => T::CU_TENSOR_MAP_DATA_TYPE_INT64,
            ElemType::Char | ElemType::UChar => T::CU_TENSOR_MAP_DATA_TYPE_UINT8,
            other => {
                return Err(refuse(format!(
                    "TMA copies elements of one number each (float, double, int, unsigned, long, char, uchar, half, bf16), not {other}"
                )))
            }
        };
        if elem.size_bytes() != plan.elem_bytes {
            return Err(refuse(format!(
                "the plan is for elements of {} bytes, the array's are {other} of {} bytes",
                plan.elem_bytes,
                elem.size_bytes(),
                other = elem,
            )));
        }
        if !address.is_multiple_of(GRANULE) {
            return Err(refuse(format!(
                "TMA reads a tensor from a {GRANULE}-byte aligned address, and the array is at {address:#x}"
            )));
        }
        let extents = plan.extents(len);
        if let Some((i, e)) = extents.iter().enumerate().find(|(_, e)| **e >= MAX_EXTENT) {
            return Err(refuse(format!(
                "a tensor map's dimension has fewer than 2^32 coordinates, and dimension {i} over {len} elements has {e}"
            )));
        }
        let strides: Vec<u64> = plan.dims[1..]
            .iter()
            .map(|d| d.stride * plan.elem_bytes)
            .collect();
        // The planner made them so; the map's validity rests on it, so check again.
        if let Some(s) = strides
            .iter()
            .find(|s| !s.is_multiple_of(GRANULE) || **s >= MAX_STRIDE_BYTES)
        {
            return Err(refuse(format!(
                "a tensor map's strides are multiples of {GRANULE} bytes below 2^40, not {s}"
            )));
        }
        use parray_layout::Swizzle as S;
        use sys::CUtensorMapSwizzle as W;
        Ok(TensorMapSpec {
            data_type,
            address,
            extents,
            boxes: plan.dims.iter().map(|d| d.box_size as u32).collect(),
            strides,
            swizzle: match plan.swizzle {
                S::None => W::CU_TENSOR_MAP_SWIZZLE_NONE,
                S::B32 => W::CU_TENSOR_MAP_SWIZZLE_32B,
                S::B64 => W::CU_TENSOR_MAP_SWIZZLE_64B,
                S::B128 => W::CU_TENSOR_MAP_SWIZZLE_128B,
            },
        })
    }

    /// The map, encoded by the CUDA driver, which a device opened before has initialised
    /// (`Error::CudaUnavailable` without the driver's library); `decl` names the copy's
    /// source type for the errors.
    pub fn encode(&self, decl: &str) -> Result<TensorMap> {
        // SAFETY: only tries to dlopen the driver's library (cudarc's call of a missing
        // library's function panics instead of returning).
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::CudaUnavailable {
                reason: format!(
                    "the TMA tensor map of `{decl}` is encoded by the CUDA driver (libcuda), which could not be loaded"
                ),
            });
        }
        let rank = self.extents.len();
        let mut map = sys::CUtensorMap { opaque: [0; 16] };
        let elementwise = vec![1u32; rank];
        // SAFETY: `map` is a writable CUtensorMap; the four arrays have `rank` entries
        // (`strides` rank - 1, as the driver reads them), live across the call, and `rank`
        // is 1..=5 (the planner's limit); the address is only recorded in the map, not
        // dereferenced by the call. The driver library must be loaded: cudarc's dynamic
        // loading does that on first use (present, checked above); an uninitialised
        // driver answers with an error, returned.
        let result = unsafe {
            sys::cuTensorMapEncodeTiled(
                &mut map,
                self.data_type,
                rank as u32,
                self.address as *mut std::ffi::c_void,
                self.extents.as_ptr(),
                self.strides.as_ptr(),
                self.boxes.as_ptr(),
                elementwise.as_ptr(),
                sys::CUtensorMapInterleave::CU_TENSOR_MAP_INTERLEAVE_NONE,
                self.swizzle,
                sys::CUtensorMapL2promotion::CU_TENSOR_MAP_L2_PROMOTION_L2_128B,
                sys::CUtensorMapFloatOOBfill::CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE,
            )
        };
        match result {
            sys::cudaError_enum::CUDA_SUCCESS => Ok(TensorMap { opaque: map.opaque }),
            e => Err(Error::TensorMap {
                decl: decl.to_string(),
                rule: format!("cuTensorMapEncodeTiled refused {self:?}: {e:?}"),
            }),
        }
    }
}

/// Which copy a tensor map is for: its plan (the address and length of its planned
/// dimensions, which are kept for the process and so name them, its swizzle and zero fill)
/// and its element.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct MapSite {
    pub dims: (usize, usize),
    pub swizzle: Swizzle,
    pub zero_fill: bool,
    pub elem: ElemType,
}

/// A device's tensor maps: for each copy's plan, the last map encoded and the array it is
/// over. `cuTensorMapEncodeTiled` is a function of its arguments alone, and encoding a
/// GEMM's two maps took the host 5.7 µs of its 11 µs launch (SPEC.md 3.9, "TMA copies"),
/// so a launch over the same array as the one before takes its map from here. One entry a
/// plan: as many as the program has TMA copies.
#[derive(Debug, Default)]
pub(crate) struct TensorMaps(Mutex<HashMap<MapSite, (u64, u64, TensorMap)>>);

impl TensorMaps {
    /// The map of `site` over the array at `address` of `len` elements: the one kept for
    /// them, else what `encode` makes (kept in its place).
    pub(crate) fn get_or_encode(
        &self,
        site: MapSite,
        address: u64,
        len: u64,
        encode: impl FnOnce() -> Result<TensorMap>,
    ) -> Result<TensorMap> {
        let mut maps = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match maps.get(&site) {
            Some(&(a, l, map)) if (a, l) == (address, len) => Ok(map),
            _ => {
                let map = encode()?;
                maps.insert(site, (address, len, map));
                Ok(map)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parray_layout::tma::TmaDim;

    /// gemm_bf16's A stage in core matrices (the planner's worked example).
    fn a_core(k: u64) -> TmaPlan {
        let dims = [(8, 1), (8, k), (8, 8), (16, 8 * k)];
        TmaPlan {
            elem_bytes: 2,
            dims: dims
                .into_iter()
                .map(|(box_size, stride)| TmaDim { box_size, stride })
                .collect(),
            swizzle: Swizzle::None,
            zero_fill: false,
        }
    }

    #[test]
    fn a_stage_map_has_the_plans_boxes_and_byte_strides() {
        let spec =
            TensorMapSpec::of("AT", &a_core(512), ElemType::Bf16, 0x1000, 256 * 512).unwrap();
        assert_eq!(
            spec.data_type,
            sys::CUtensorMapDataType::CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
        );
        assert_eq!(spec.extents, vec![8, 8, 64, 32]);
        assert_eq!(spec.boxes, vec![8, 8, 8, 16]);
        assert_eq!(spec.strides, vec![1024, 16, 8192]);
        assert_eq!(
            spec.swizzle,
            sys::CUtensorMapSwizzle::CU_TENSOR_MAP_SWIZZLE_NONE
        );
        assert_eq!(std::mem::align_of::<TensorMap>(), 64);
        assert_eq!(std::mem::size_of::<TensorMap>(), 128);
    }

    #[test]
    fn the_drivers_rules_are_refused_by_name() {
        let msg = |e: Error| e.to_string();
        let e = TensorMapSpec::of("AT", &a_core(512), ElemType::Bf16, 0x1008, 256 * 512);
        assert_eq!(
            msg(e.unwrap_err()),
            "parray: the TMA tensor map of `AT`: TMA reads a tensor from a 16-byte aligned address, and the array is at 0x1008"
        );
        let e = TensorMapSpec::of("AT", &a_core(512), ElemType::Float, 0x1000, 256 * 512);
        assert!(msg(e.unwrap_err()).contains("elements of 2 bytes"));
        let e = TensorMapSpec::of("AT", &a_core(512), ElemType::Float2, 0x1000, 256 * 512);
        assert!(msg(e.unwrap_err()).contains("not float2"));
        // One run of elements at stride 1: an array of 2^32 of them has as many
        // coordinates, one too many.
        let flat = TmaPlan {
            elem_bytes: 2,
            dims: vec![TmaDim {
                box_size: 64,
                stride: 1,
            }],
            swizzle: Swizzle::None,
            zero_fill: false,
        };
        let e = TensorMapSpec::of("ROW", &flat, ElemType::Bf16, 0, 1 << 32);
        assert!(msg(e.unwrap_err()).contains("dimension 0 over 4294967296 elements"));
        TensorMapSpec::of("ROW", &flat, ElemType::Bf16, 0, (1 << 32) - 1).unwrap();
    }

    /// Encoding is a `Result` on every machine: the map where a driver is (its bytes are
    /// not all zero), an error naming the type without one (or uninitialised), never a
    /// panic.
    #[test]
    fn encoding_without_a_driver_is_an_error() {
        let spec =
            TensorMapSpec::of("AT", &a_core(512), ElemType::Bf16, 0x1000, 256 * 512).unwrap();
        match spec.encode("AT") {
            Ok(map) => assert!(map.opaque.iter().any(|w| *w != 0)),
            Err(e) => assert!(e.to_string().contains("`AT`"), "{e}"),
        }
    }

    #[test]
    fn a_kept_map_serves_its_plan_over_the_same_array_alone() {
        let maps = TensorMaps::default();
        let site = |elem| MapSite {
            dims: (0x40, 4),
            swizzle: Swizzle::B128,
            zero_fill: true,
            elem,
        };
        let encoded = std::cell::Cell::new(0u64);
        let get = |elem, address, len| {
            maps.get_or_encode(site(elem), address, len, || {
                encoded.set(encoded.get() + 1);
                Ok(TensorMap {
                    opaque: [encoded.get(); 16],
                })
            })
            .unwrap()
            .opaque[0]
        };
        // Encoded once, then kept; another array (or length, or element) is encoded
        // again and takes the plan's place.
        assert_eq!(get(ElemType::Bf16, 0x1000, 64), 1);
        assert_eq!(get(ElemType::Bf16, 0x1000, 64), 1);
        assert_eq!(get(ElemType::Bf16, 0x2000, 64), 2);
        assert_eq!(get(ElemType::Bf16, 0x2000, 128), 3);
        assert_eq!(get(ElemType::Half, 0x2000, 128), 4);
        assert_eq!(get(ElemType::Bf16, 0x2000, 128), 3);
        assert_eq!(get(ElemType::Bf16, 0x1000, 64), 5);
        // A refusal is not kept.
        let refused = maps.get_or_encode(site(ElemType::Float), 0x1000, 64, || {
            Err(Error::TensorMap {
                decl: "AT".into(),
                rule: "test".into(),
            })
        });
        assert!(refused.is_err());
        assert_eq!(get(ElemType::Float, 0x1000, 64), 6);
    }
}
