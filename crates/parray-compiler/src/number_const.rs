//! The constants of the number types a body may name (`f32::NEG_INFINITY`,
//! `std::f32::consts::PI`, `u32::MAX`): one IR node, which the Rust back end writes as
//! the same path and the C back end as the exact value (the shortest decimal that reads
//! back as it, or its bits where no decimal names it).

use crate::ir::Scalar;

/// `f32::NAME`, `f64::NAME`, `u32::NAME`, ... (`math: false`), or
/// `std::f32::consts::NAME` (`math: true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NumberConst {
    pub ty: Scalar,
    pub name: &'static str,
    pub math: bool,
}

/// What [`NumberConst::parse`] accepts, for the error that lists them.
pub const NUMBER_CONSTS: &str = "`f32::MAX`, `f32::MIN`, `f32::MIN_POSITIVE`, `f32::EPSILON`, `f32::INFINITY`, `f32::NEG_INFINITY`, `f32::NAN`, `std::f32::consts::PI` (and `TAU`, `E`, `SQRT_2`, `LN_2`, ...), the same for `f64`, and `MIN` and `MAX` of the integer types";

/// The associated constants of `f32` and `f64` a body may name.
pub(crate) const FLOAT_NAMES: [&str; 7] = [
    "MAX",
    "MIN",
    "MIN_POSITIVE",
    "EPSILON",
    "INFINITY",
    "NEG_INFINITY",
    "NAN",
];

/// `std::f32::consts::NAME` and `std::f64::consts::NAME`, with their f64 and f32 values.
macro_rules! math_constants {
    ($($name:ident),* $(,)?) => {
        const MATH: &[(&str, f64, f32)] = &[
            $((stringify!($name), std::f64::consts::$name, std::f32::consts::$name),)*
        ];
    };
}

math_constants!(
    PI,
    TAU,
    E,
    SQRT_2,
    LN_2,
    LN_10,
    LOG2_E,
    LOG2_10,
    LOG10_E,
    LOG10_2,
    FRAC_PI_2,
    FRAC_PI_3,
    FRAC_PI_4,
    FRAC_PI_6,
    FRAC_PI_8,
    FRAC_1_PI,
    FRAC_2_PI,
    FRAC_2_SQRT_PI,
    FRAC_1_SQRT_2,
);

impl NumberConst {
    /// The constant a path names, as Rust resolves it: `T::NAME` of a number type `T`,
    /// `std::T::consts::NAME` (or `core::`) of a float type; `None` for any other path.
    pub fn parse(segments: &[&str]) -> Option<NumberConst> {
        let (ty, name, math) = match segments {
            [ty, name] => (*ty, *name, false),
            ["std" | "core", ty, "consts", name] => (*ty, *name, true),
            _ => return None,
        };
        let ty = Scalar::from_rust_name(ty).filter(|t| *t != Scalar::Bool && !t.is_half())?;
        let name = if math {
            MATH.iter().find(|(n, _, _)| *n == name)?.0
        } else if ty.is_float() {
            *FLOAT_NAMES.iter().find(|n| **n == name)?
        } else {
            *["MIN", "MAX"].iter().find(|n| **n == name)?
        };
        if math && !ty.is_float() {
            return None;
        }
        Some(NumberConst { ty, name, math })
    }

    /// The value of an integer constant, with `usize` of `bits` bits.
    pub fn int_value(self, usize_bits: u32) -> Option<i128> {
        let bits = match self.ty {
            Scalar::I8 | Scalar::U8 => 8,
            Scalar::I32 | Scalar::U32 => 32,
            Scalar::Usize => usize_bits,
            Scalar::I64 | Scalar::U64 => 64,
            Scalar::Bool | Scalar::F32 | Scalar::F64 | Scalar::F16 | Scalar::Bf16 => return None,
        };
        let signed = self.ty.is_signed();
        Some(match (self.name, signed) {
            ("MAX", true) => (1i128 << (bits - 1)) - 1,
            ("MAX", false) => (1i128 << bits) - 1,
            (_, true) => -(1i128 << (bits - 1)),
            (_, false) => 0,
        })
    }

    /// The value of a float constant (`None` for an integer one).
    pub fn float_value(self) -> Option<f64> {
        let (wide, narrow): (f64, f32) = match self.name {
            _ if self.math => MATH
                .iter()
                .find(|(n, _, _)| *n == self.name)
                .map(|(_, w, n)| (*w, *n))?,
            "MAX" => (f64::MAX, f32::MAX),
            "MIN" => (f64::MIN, f32::MIN),
            "MIN_POSITIVE" => (f64::MIN_POSITIVE, f32::MIN_POSITIVE),
            "EPSILON" => (f64::EPSILON, f32::EPSILON),
            "INFINITY" => (f64::INFINITY, f32::INFINITY),
            "NEG_INFINITY" => (f64::NEG_INFINITY, f32::NEG_INFINITY),
            "NAN" => (f64::NAN, f32::NAN),
            _ => return None,
        };
        match self.ty {
            Scalar::F32 => Some(f64::from(narrow)),
            Scalar::F64 => Some(wide),
            _ => None,
        }
    }

    /// The value as a C expression of its type (CUDA C and HIP), one operand in any
    /// position. A cuda body's `usize` is CUDA's 32-bit `unsigned`.
    pub fn c_value(self) -> String {
        if let Some(v) = self.float_value() {
            let f32 = self.ty == Scalar::F32;
            // CUDA's headers are not included: the bits of the two that no decimal names.
            return match (v.is_nan(), v.is_infinite(), f32) {
                (true, _, true) => "__int_as_float(0x7fc00000)".into(),
                (true, _, false) => "__longlong_as_double(0x7ff8000000000000ll)".into(),
                (_, true, true) => format!("__int_as_float({:#x})", (v as f32).to_bits()),
                (_, true, false) => format!("__longlong_as_double({:#x}ll)", v.to_bits()),
                // `{:?}` is the shortest decimal that reads back as the same value.
                (_, _, true) => format!("({:?}f)", v as f32),
                (_, _, false) => format!("({v:?})"),
            };
        }
        let v = self.int_value(32).expect("an integer constant");
        let text = match self.ty {
            Scalar::U32 | Scalar::Usize => format!("{v}u"),
            Scalar::U64 => format!("{v}ull"),
            Scalar::I64 if v < 0 => format!("(-{}ll - 1ll)", -(v + 1)),
            Scalar::I64 => format!("{v}ll"),
            // `-2147483648` is the negation of a literal too large for `int`.
            Scalar::I32 if v < 0 => format!("(-{} - 1)", -(v + 1)),
            Scalar::I8 => format!("((signed char){v})"),
            Scalar::U8 => format!("((unsigned char){v})"),
            _ => v.to_string(),
        };
        text
    }
}
