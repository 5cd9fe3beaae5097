//! Element types: the Rust side of the type language's `float`, `int`, `float2`, ...

use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use parray_core::ElemType;

/// A type that can be the element of a parray data type.
///
/// # Safety
/// The layout (size and alignment) must be that of the CUDA C type named by `ELEM`, and
/// the all-zero bit pattern must be a valid value: buffers are zero-initialised and
/// shared bit-for-bit with generated kernels.
pub unsafe trait Element:
    Copy + Send + Sync + Default + 'static + DeviceRepr + ValidAsZeroBits
{
    /// The type-language element this Rust type stands for.
    const ELEM: ElemType;
}

macro_rules! scalar_elements {
    ($($rust:ty => $elem:ident),* $(,)?) => {$(
        // SAFETY: Rust's primitive has the size and alignment of the CUDA C scalar.
        unsafe impl Element for $rust {
            const ELEM: ElemType = ElemType::$elem;
        }
    )*};
}

scalar_elements! {
    f32 => Float,
    f64 => Double,
    i32 => Int,
    u32 => Unsigned,
    i8 => Char,
    i64 => Long,
}

macro_rules! vector_elements {
    ($($(#[$doc:meta])* $name:ident($scalar:ty, align $align:literal) { $($field:ident),+ }),* $(,)?) => {$(
        $(#[$doc])*
        #[repr(C, align($align))]
        #[derive(Debug, Clone, Copy, PartialEq, Default)]
        pub struct $name {
            $(pub $field: $scalar,)+
        }

        impl $name {
            /// Builds the vector from its components, like CUDA's `make_*`.
            #[inline(always)]
            pub const fn new($($field: $scalar),+) -> Self {
                Self { $($field),+ }
            }
        }

        // SAFETY: repr(C) of plain scalars with CUDA's alignment; no padding, no pointers.
        unsafe impl DeviceRepr for $name {}
        // SAFETY: every field is a number, for which all-zero bits are valid.
        unsafe impl ValidAsZeroBits for $name {}
        // SAFETY: size and alignment equal CUDA's vector type (checked by tests).
        unsafe impl Element for $name {
            const ELEM: ElemType = ElemType::$name;
        }
    )*};
}

vector_elements! {
    /// CUDA's `float2` (8-byte aligned).
    Float2(f32, align 8) { x, y },
    /// CUDA's `float4` (16-byte aligned).
    Float4(f32, align 16) { x, y, z, w },
    /// CUDA's `double2` (16-byte aligned).
    Double2(f64, align 16) { x, y },
    /// CUDA's `int2` (8-byte aligned).
    Int2(i32, align 8) { x, y },
    /// CUDA's `int4` (16-byte aligned).
    Int4(i32, align 16) { x, y, z, w },
}
