//! The store callback of a cuFFT plan whose output a type lays out: cuFFT computes the
//! transforms and stores element `o` of their natural output order (transform `b`, point
//! `i`: `o = b * points + i`) at `d[O(o)]`, the offset of element `o` of the type `O`.
//! So the store is `#copy` from the natural order to `O` fused into the transforms: the
//! pack of an exchange without a pass of its own (SPEC 3.12).

use parray_layout::{ElemType, Module};

use super::build::{assign, flat_offset, index, offset, refused, Builder};
use crate::back::c;
use crate::ir::Indexed;

/// An LTO store callback: the source of its `__device__` function and the function's name
/// (cuFFT links it into its kernels by that name).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FftStore {
    pub name: String,
    pub source: String,
}

/// The callback `name` that stores cuFFT's output element `o` at offset `O(o)` of the
/// plan's output, `O` the `float2` type `ty` of `module` (its offset function of one flat
/// index, folded by the offset compiler). Every store is proved within `O`'s extent; a
/// type of `2^32` elements or more, or of another element, is an error.
pub fn fft_store_callback(
    name: &str,
    (module, ty): (&Module, &str),
) -> parray_layout::Result<FftStore> {
    let def = module
        .type_def(ty)
        .ok_or_else(|| refused(name, format!("`{ty}` is not declared")))?;
    let elem = match def.class {
        parray_layout::TypeClass::Data { elem, .. } => elem,
        _ => return Err(refused(name, format!("`{ty}` is a thread array"))),
    };
    if elem != ElemType::Float2 {
        return Err(refused(
            name,
            format!("cuFFT's complex elements are float2, and `{ty}`'s are {elem}"),
        ));
    }
    let count = module.size(def.root);
    if count == 0 || count > u64::from(u32::MAX) {
        return Err(refused(
            name,
            format!("a callback's offsets are 32-bit, and `{ty}` has {count} elements"),
        ));
    }
    let decls = format!("#parray {{cuda(float2* d, float2 v) [{count}][1]}} PARRAY_FFT_STORE");
    let mut b = Builder::new(&decls, "PARRAY_FFT_STORE")?;
    let o = b.tid("");
    let at = offset(flat_offset(module, ty, 1)?, o, Indexed::of_type(module, ty));
    let store = assign(index(b.param("d"), at), b.param("v"));
    let proved = b.proved(name, vec![store])?;
    let source = c::fft_store_callback(&proved, name)
        .ok_or_else(|| refused(name, "its store is not proved within the type"))?;
    Ok(FftStore {
        name: name.to_string(),
        source,
    })
}
