//! Hopper's shared-memory swizzles, one enum for every unit that reads them: CuTe's
//! `Swizzle<B,4,3>` on the absolute shared-memory address (SPEC 2.5 rule 11), the 16-byte
//! chunk (bits 4..4+B) XOR the row within a group of 2^B rows (bits 7..7+B). TMA's tensor
//! map ([`Swizzle::tma_encoding`]) and the wgmma descriptor ([`Swizzle::descriptor_bits`])
//! name the same four modes by different numbers.

/// A swizzle mode: none, or the 32, 64 or 128-byte one (B = 1, 2, 3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Swizzle {
    None,
    B32,
    B64,
    B128,
}

impl Swizzle {
    pub const ALL: [Swizzle; 4] = [Swizzle::None, Swizzle::B32, Swizzle::B64, Swizzle::B128];

    /// The B of `Swizzle<B,4,3>`: how many bits of the 16-byte chunk are XORed.
    pub fn b(self) -> u32 {
        match self {
            Swizzle::None => 0,
            Swizzle::B32 => 1,
            Swizzle::B64 => 2,
            Swizzle::B128 => 3,
        }
    }

    /// The mode whose pattern repeats every `alignment` bytes (2^(7+B)), the alignment
    /// `Module::swizzle_alignment` gives a swizzled type; `None` for any other number.
    pub fn of_alignment(alignment: u64) -> Option<Swizzle> {
        Swizzle::ALL
            .into_iter()
            .find(|s| *s != Swizzle::None && s.atom_bytes() == alignment)
    }

    /// The bytes of a row of the pattern (32, 64, 128); `None` unswizzled.
    pub fn span(self) -> Option<u64> {
        (self != Swizzle::None).then(|| self.row_bytes())
    }

    /// The bytes of a row of the 8-row atom: the span, and 16 (a core matrix's row)
    /// unswizzled.
    pub fn row_bytes(self) -> u64 {
        16 << self.b()
    }

    /// The bytes of the 8-row atom, 2^(7+B): where the pattern repeats, so the alignment a
    /// swizzled tile's start needs for the XOR on absolute address bits to be the one on
    /// its offsets (and TMA's 128 bytes unswizzled).
    pub fn atom_bytes(self) -> u64 {
        128 << self.b()
    }

    /// The byte the hardware reads for the linear byte `a` of an aligned tile.
    pub fn apply(self, a: u64) -> u64 {
        a ^ (((a >> 7) & ((1 << self.b()) - 1)) << 4)
    }

    /// The value of `CUtensorMapSwizzle` (`CU_TENSOR_MAP_SWIZZLE_NONE` .. `_128B`): B.
    pub fn tma_encoding(self) -> u32 {
        self.b()
    }

    /// The wgmma matrix descriptor's field (bits 62-63): 0 none, 1 128B, 2 64B, 3 32B.
    pub fn descriptor_bits(self) -> u64 {
        match self {
            Swizzle::None => 0,
            s => 4 - u64::from(s.b()),
        }
    }

    /// The mode in words, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Swizzle::None => "unswizzled",
            Swizzle::B32 => "32B-swizzled",
            Swizzle::B64 => "64B-swizzled",
            Swizzle::B128 => "128B-swizzled",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hardware's numbers for each mode (the driver's `CUtensorMapSwizzle`, the PTX
    /// ISA's descriptor field) and the alignments round-trip.
    #[test]
    fn the_modes_numbers() {
        let tma: Vec<u32> = Swizzle::ALL.iter().map(|s| s.tma_encoding()).collect();
        assert_eq!(tma, [0, 1, 2, 3]);
        let desc: Vec<u64> = Swizzle::ALL.iter().map(|s| s.descriptor_bits()).collect();
        assert_eq!(desc, [0, 3, 2, 1]);
        for s in Swizzle::ALL {
            assert_eq!(
                Swizzle::of_alignment(s.atom_bytes()),
                (s != Swizzle::None).then_some(s)
            );
        }
        assert_eq!(Swizzle::of_alignment(2048), None);
        assert_eq!(Swizzle::B128.span(), Some(128));
        assert_eq!(Swizzle::None.span(), None);
    }

    /// The 128B mode moves chunk c of row r to chunk c ^ (r % 8): an involution.
    #[test]
    fn the_xor_is_an_involution() {
        for s in Swizzle::ALL {
            for a in 0..4096 {
                assert_eq!(s.apply(s.apply(a)), a);
            }
        }
        assert_eq!(Swizzle::B128.apply(3 * 128 + 16), 3 * 128 + 2 * 16);
        assert_eq!(Swizzle::None.apply(3 * 128 + 16), 3 * 128 + 16);
    }
}
