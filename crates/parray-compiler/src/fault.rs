//! The fault record: how a kernel with checked accesses tells its launch about the first
//! access outside its array, and a kernel with checked barriers ([`checked_sync`]) about
//! the first `#sync` that not every thread of a block reached or the first `#wait` on an
//! mbarrier that did not complete within [`WAIT_LIMIT_NS`]. The kernel's helpers
//! ([`check_helpers`], [`vector_check_helper`], [`checked_sync`]) write it and the launch
//! reads it back with [`Recorded::decode`]; its layout is defined here, once, for both.
//!
//! The record is [`WORDS`] `u64`s on the device, zeroed before the launch: the first
//! [`RECORD_WORDS`] hold the fault, the rest is scratch that a diverted access reads or
//! writes instead of memory outside its array.

use parray_layout::ElemType;

/// The faulting array's number plus one (0: no fault), with the vector bits of
/// [`which_word`], or [`DIVERGED`] for a barrier; the first thread to fault claims the
/// record by writing it (the helpers' `atomicCAS(f, ..)`: the first word).
pub const WHICH: usize = 0;
/// The first word of a divergent barrier's record, above every array's number: its
/// [`OFFSET`] holds the thread that did not reach the barrier (packed as [`THREAD`]),
/// its [`EXTENT`] the line of the `#sync` that thread waits at (0: it left the body).
pub const DIVERGED: u64 = 1 << 32;
/// The first word of a stalled `#wait`'s record ([`wait_helpers`]): its [`OFFSET`] holds
/// the parity waited for, its [`LINE`] the wait's line.
pub const STALLED: u64 = 2 << 32;
/// How long a `#wait` on an mbarrier waits for its phase before the kernel gives up (a
/// pipeline's phase completes in microseconds; one that has not in 10 s never will).
pub const WAIT_LIMIT_NS: u64 = 10_000_000_000;
/// The access's offset from the start of its array.
pub const OFFSET: usize = 1;
/// The array's number of elements.
pub const EXTENT: usize = 2;
/// The user's line of the statement.
pub const LINE: usize = 3;
/// The block's index, packed by [`AXIS_BITS`] (x lowest).
pub const BLOCK: usize = 4;
/// The thread's index in its block, packed likewise.
pub const THREAD: usize = 5;
/// Words of the record proper; the scratch starts after them, 16-byte aligned (a vector
/// access may be diverted to it).
pub const RECORD_WORDS: usize = 8;
/// Words of the whole record: the record and 4 words of scratch.
pub const WORDS: usize = RECORD_WORDS + 4;
/// Bits of each axis of a packed block or thread index (CUDA's largest grid axis, 2^31 - 1
/// blocks, is recorded modulo 2^21: enough to name the block of any launch a test makes).
pub const AXIS_BITS: u32 = 21;

/// Device helpers of a kernel with checked accesses: `parray_at(p, i, base, n, which, line,
/// fault)` is `p + i` when that element lies within the `n` elements from `base`, and
/// otherwise records the first such access of the launch in `fault` (array `which`, the
/// offset, the extent, the line, the block and thread) and gives a scratch element, so
/// that nothing outside the array is touched; the launch then reports the record.
pub fn check_helpers() -> String {
    let (y, z) = (AXIS_BITS, 2 * AXIS_BITS);
    format!(
        r#"__device__ __forceinline__ void parray_fault(unsigned long long* f, unsigned which, unsigned long long off, unsigned long long n, unsigned line) {{
    if (atomicCAS(f, 0ull, (unsigned long long)which + 1ull) == 0ull) {{
        f[{OFFSET}] = off; f[{EXTENT}] = n; f[{LINE}] = line;
        f[{BLOCK}] = blockIdx.x | ((unsigned long long)blockIdx.y << {y}) | ((unsigned long long)blockIdx.z << {z});
        f[{THREAD}] = threadIdx.x | ((unsigned long long)threadIdx.y << {y}) | ((unsigned long long)threadIdx.z << {z});
    }}
}}
template <typename T, typename B>
__device__ __forceinline__ T* parray_at(T* p, unsigned long long i, B* base, unsigned long long n, unsigned which, unsigned line, unsigned long long* f) {{
    unsigned long long off = (unsigned long long)(p - base) + i;
    if (off < n) return p + i;
    parray_fault(f, which, off, n, line);
    return reinterpret_cast<T*>(f + {RECORD_WORDS});
}}
"#
    )
}

/// Device helper of a kernel whose functions take pointers: `parray_rest(p, base, n)` is
/// how many of the `n` elements from `base` lie from `p` on (none past the end), the
/// extent a function checks its pointer parameter `p` against.
pub const REST_HELPER: &str = r#"template <typename T, typename B>
__device__ __forceinline__ unsigned long long parray_rest(T* p, B* base, unsigned long long n) {
    unsigned long long off = (unsigned long long)(p - base);
    return off < n ? n - off : 0ull;
}
"#;

/// [`check_helpers`]' `parray_at` for the SoA pointer `soa` (a struct of the pointers
/// `fields`, SPEC 2.3): the offset is the first field's, and the scratch element has
/// every field in the scratch.
pub fn soa_check_helper(soa: &str, fields: &[(&str, &str)]) -> String {
    let first = fields[0].0;
    let scratch: Vec<String> = fields
        .iter()
        .map(|(_, c_type)| format!("reinterpret_cast<{c_type}*>(f + {RECORD_WORDS})"))
        .collect();
    format!(
        r#"__device__ __forceinline__ {soa} parray_at({soa} p, unsigned long long i, {soa} base, unsigned long long n, unsigned which, unsigned line, unsigned long long* f) {{
    unsigned long long off = (unsigned long long)(p.{first} - base.{first}) + i;
    if (off < n) return p + i;
    parray_fault(f, which, off, n, line);
    {soa} scratch = {{ {} }};
    return scratch;
}}
"#,
        scratch.join(", ")
    )
}

/// Device helper of a kernel with checked vector accesses: `parray_vat<L>(p, i, base, n,
/// which, line, vector, fault)` is `p + i` when the `L` elements from it lie within the
/// `n` from `base` and its offset from `base` is a multiple of `L`; otherwise it records
/// the fault as `parray_at` does, the vector type and whether only the alignment failed
/// in the bits above 16 of the array's number ([`which_word`]), and gives the scratch.
pub fn vector_check_helper() -> String {
    format!(
        r#"template <unsigned L, typename T, typename B>
__device__ __forceinline__ T* parray_vat(T* p, unsigned long long i, B* base, unsigned long long n, unsigned which, unsigned line, unsigned vector, unsigned long long* f) {{
    unsigned long long off = (unsigned long long)(p - base) + i;
    bool inside = off < n && n - off >= L;
    if (inside && off % L == 0) return p + i;
    parray_fault(f, which | ((inside ? vector | {MISALIGNED}u : vector) << {VECTOR_SHIFT}), off, n, line);
    return reinterpret_cast<T*>(f + {RECORD_WORDS});
}}
"#
    )
}

/// Device helper of a kernel with `#wait` on an mbarrier (SPEC 3.9, "TMA copies"):
/// `parray_mbarrier_wait(bar, parity)` waits for the phase of `parity` of the barrier at
/// shared address `bar` and is false when it has not completed within [`WAIT_LIMIT_NS`]
/// (read from `%globaltimer` only once the first try fails), where the kernel then runs
/// `PARRAY_WAIT_STALLED(line, parity)`: a trap, which fails the launch rather than hang
/// it; [`checked_sync`] makes it a record the launch reports.
pub fn wait_helpers() -> String {
    format!(
        r#"__device__ __forceinline__ bool parray_mbarrier_try(unsigned bar, unsigned parity) {{
    unsigned done;
    asm volatile("{{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n }}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
    return done != 0;
}}
__device__ __forceinline__ bool parray_mbarrier_wait(unsigned bar, unsigned parity) {{
    if (parray_mbarrier_try(bar, parity)) return true;
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do {{
        if (parray_mbarrier_try(bar, parity)) return true;
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    }} while (now - start < {WAIT_LIMIT_NS}ull);
    return false;
}}
#define PARRAY_WAIT_STALLED(line, parity) asm volatile("trap;")
"#
    )
}

/// The kernel `source` with each `__syncthreads()` (a `#sync`) a checked barrier, what
/// NVRTC compiles under `PARRAY_CHECK_SYNC=1` (SPEC.md 4.6): every thread of the block
/// that has not left the kernel meets there (`__syncthreads_count`, which exited threads
/// do not hold up on sm_70 and later), and they compare the barrier each waits at (the
/// last `#sync` to write the shared `parray_sync_site` is everyone's, so a thread at
/// another sees it differ), then agree on the answer (`__syncthreads_or`): two barriers
/// in all. When some thread is missing or waits elsewhere, the threads there find together
/// (by halving, a barrier a step) the lowest of them and the lowest thread not with it,
/// the first records the divergence in the record the launch points `parray_sync_fault`
/// at, and all leave the kernel, so that nothing hangs. A `#wait` that gives up
/// ([`wait_helpers`]) records its line and parity there ([`STALLED`]) and its thread
/// leaves the kernel. The helpers go just before the
/// kernel, after the headers (whose code the macro must not reach); the kernel's first
/// statement sets its line numbers (`#line`), so these take none of the user's.
pub fn checked_sync(source: &str) -> String {
    let at = source.find("extern \"C\" __global__").unwrap_or(0);
    let (y, z) = (AXIS_BITS, 2 * AXIS_BITS);
    // A kernel that waits on mbarriers records a wait that gives up.
    let stalled = match source.contains("PARRAY_WAIT_STALLED(") {
        false => String::new(),
        true => format!(
            r#"__device__ __noinline__ void parray_wait_stalled(unsigned line, unsigned parity) {{
    unsigned long long* f = parray_sync_fault;
    if (f != 0 && atomicCAS(f, 0ull, {STALLED}ull) == 0ull) {{
        f[{OFFSET}] = parity; f[{LINE}] = line;
        f[{BLOCK}] = parray_pack(blockIdx.x, blockIdx.y, blockIdx.z);
        f[{THREAD}] = parray_pack(threadIdx.x, threadIdx.y, threadIdx.z);
    }}
    asm volatile("exit;");
}}
#undef PARRAY_WAIT_STALLED
#define PARRAY_WAIT_STALLED(line, parity) parray_wait_stalled(line, parity)
"#
        ),
    };
    format!(
        r#"{head}// parray: PARRAY_CHECK_SYNC=1: each __syncthreads() below is a checked barrier.
__device__ unsigned long long* parray_sync_fault;
__shared__ unsigned parray_sync_site;
__device__ __forceinline__ unsigned long long parray_pack(unsigned x, unsigned y, unsigned z) {{
    return x | ((unsigned long long)y << {y}) | ((unsigned long long)z << {z});
}}
__device__ __noinline__ bool parray_sync(unsigned site, unsigned line) {{
    const unsigned n = blockDim.x * blockDim.y * blockDim.z;
    const unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    atomicExch(&parray_sync_site, site);
    const unsigned arrived = (unsigned)__syncthreads_count(1);
    const unsigned seen = atomicOr(&parray_sync_site, 0u);
    if (!__syncthreads_or(arrived != n || seen != site)) return false;
    unsigned lo = 0, hi = n;
    while (hi - lo > 1) {{
        const unsigned mid = lo + (hi - lo) / 2;
        if (__syncthreads_or(t < mid)) hi = mid; else lo = mid;
    }}
    const unsigned w = lo;
    if (t == w) atomicExch(&parray_sync_site, site);
    (void)__syncthreads_count(1);
    const bool with_w = atomicOr(&parray_sync_site, 0u) == site;
    lo = 0; hi = n;
    while (hi - lo > 1) {{
        const unsigned mid = lo + (hi - lo) / 2;
        if ((unsigned)__syncthreads_count(with_w && t < mid) == mid) lo = mid; else hi = mid;
    }}
    const unsigned l = lo;
    unsigned other = 0;
    if (__syncthreads_or(t == l)) {{
        if (t == l) atomicExch(&parray_sync_site, line);
        (void)__syncthreads_count(1);
        other = atomicOr(&parray_sync_site, 0u);
    }}
    unsigned long long* f = parray_sync_fault;
    if (t == w && f != 0 && atomicCAS(f, 0ull, {DIVERGED}ull) == 0ull) {{
        f[{OFFSET}] = parray_pack(l % blockDim.x, l / blockDim.x % blockDim.y, l / (blockDim.x * blockDim.y));
        f[{EXTENT}] = other; f[{LINE}] = line;
        f[{BLOCK}] = parray_pack(blockIdx.x, blockIdx.y, blockIdx.z);
        f[{THREAD}] = parray_pack(threadIdx.x, threadIdx.y, threadIdx.z);
    }}
    return true;
}}
{stalled}#define __syncthreads() do {{ if (parray_sync(__LINE__, __LINE__)) return; }} while (0)
{kernel}"#,
        head = &source[..at],
        kernel = &source[at..],
    )
}

/// Where a vector access's bits start in the array's number.
const VECTOR_SHIFT: u32 = 16;
/// The bit, above the vector type's code, of a vector access misaligned with its lanes in
/// bounds.
const MISALIGNED: u32 = 0x100;

/// The number of an access to array number `which`, as the kernel records it: the number
/// alone for an element; for a vector access also, from bit 16, the vector type's place in
/// [`ElemType::ALL`], then [`ElemType::MOVES`], plus one ([`vector_code`]) and, in bit 24,
/// whether its lanes were in bounds but misaligned. [`Fault::decode`] reads it back.
pub fn which_word(which: u32, vector: Option<(ElemType, bool)>) -> u32 {
    match vector {
        None => which,
        Some((v, misaligned)) => {
            which | (vector_code(v) | if misaligned { MISALIGNED } else { 0 }) << VECTOR_SHIFT
        }
    }
}

/// The number of the vector type `v` in a fault record (0 is an element).
pub fn vector_code(v: ElemType) -> u32 {
    coded()
        .position(|e| e == v)
        .expect("every vector type is in ALL or MOVES") as u32
        + 1
}

/// The types a fault record numbers: [`ElemType::ALL`], then [`ElemType::MOVES`].
fn coded() -> impl Iterator<Item = ElemType> {
    ElemType::ALL.into_iter().chain(ElemType::MOVES)
}

/// A checked kernel's record of its launch: an access outside its array, or a barrier
/// that not every thread of a block reached.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Recorded {
    Fault(Fault),
    Diverged(Divergence),
    Stalled(Stall),
}

/// A `#wait` on an mbarrier whose phase did not complete within [`WAIT_LIMIT_NS`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stall {
    /// The user's line of the `#wait`.
    pub line: u32,
    /// The parity it waited for.
    pub parity: u32,
    /// The block's index and the thread's in it, x first.
    pub block: [u32; 3],
    pub thread: [u32; 3],
}

/// A `#sync` that not every thread of a block reached, as a checked barrier records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Divergence {
    /// The user's line of the `#sync` that `waiting` waits at.
    pub line: u32,
    /// The line of the `#sync` that `left` waits at instead; `None` when it left the body.
    pub other_line: Option<u32>,
    /// The block's index, and the indices in it of the lowest thread at the barrier and of
    /// the lowest thread not there with it, x first.
    pub block: [u32; 3],
    pub waiting: [u32; 3],
    pub left: [u32; 3],
}

/// An access a kernel recorded outside its array.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The array's number among the kernel's checked arrays.
    pub which: usize,
    /// For a vector access: its type, and whether its lanes were in bounds but misaligned.
    pub vector: Option<(ElemType, bool)>,
    pub offset: u64,
    pub extent: u64,
    pub line: u32,
    /// The block's and the thread's indices, x first.
    pub block: [u32; 3],
    pub thread: [u32; 3],
}

/// A block's or a thread's index, as the helpers pack it.
fn unpack(w: u64) -> [u32; 3] {
    let axis = (1u64 << AXIS_BITS) - 1;
    [
        (w & axis) as u32,
        ((w >> AXIS_BITS) & axis) as u32,
        (w >> (2 * AXIS_BITS)) as u32,
    ]
}

impl Recorded {
    /// What `words` record, as the helpers wrote them; `None` when nothing was.
    pub fn decode(words: &[u64; WORDS]) -> Option<Recorded> {
        if words[WHICH] == DIVERGED {
            return Some(Recorded::Diverged(Divergence {
                line: words[LINE] as u32,
                other_line: Some(words[EXTENT] as u32).filter(|l| *l != 0),
                block: unpack(words[BLOCK]),
                waiting: unpack(words[THREAD]),
                left: unpack(words[OFFSET]),
            }));
        }
        if words[WHICH] == STALLED {
            return Some(Recorded::Stalled(Stall {
                line: words[LINE] as u32,
                parity: words[OFFSET] as u32,
                block: unpack(words[BLOCK]),
                thread: unpack(words[THREAD]),
            }));
        }
        let word = words[WHICH].checked_sub(1)?;
        let code = (word >> VECTOR_SHIFT) as u32;
        let vector = (code & 0xff)
            .checked_sub(1)
            .and_then(|k| coded().nth(k as usize))
            .map(|v| (v, code & MISALIGNED != 0));
        Some(Recorded::Fault(Fault {
            which: (word & ((1 << VECTOR_SHIFT) - 1)) as usize,
            vector,
            offset: words[OFFSET],
            extent: words[EXTENT],
            line: words[LINE] as u32,
            block: unpack(words[BLOCK]),
            thread: unpack(words[THREAD]),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the kernel writes (the words its helpers compute, here in Rust) the launch
    /// reads back: each array number, vector kind and index.
    #[test]
    fn a_record_round_trips() {
        let pack = |v: [u32; 3]| {
            u64::from(v[0]) | u64::from(v[1]) << AXIS_BITS | u64::from(v[2]) << (2 * AXIS_BITS)
        };
        let mut kinds = vec![None];
        for v in [
            ElemType::Float2,
            ElemType::Float4,
            ElemType::Double2,
            ElemType::Int2,
            ElemType::Int4,
            ElemType::Bf16x8,
        ] {
            kinds.extend([Some((v, false)), Some((v, true))]);
        }
        for (which, vector) in kinds.into_iter().enumerate() {
            let (block, thread) = ([7, 1, 2], [31, 0, 63]);
            let mut words = [0u64; WORDS];
            words[WHICH] = u64::from(which_word(which as u32, vector)) + 1;
            words[OFFSET] = 1000 + which as u64;
            words[EXTENT] = 64;
            words[LINE] = 12;
            words[BLOCK] = pack(block);
            words[THREAD] = pack(thread);
            let fault = Recorded::decode(&words).expect("a fault");
            assert_eq!(
                fault,
                Recorded::Fault(Fault {
                    which,
                    vector,
                    offset: 1000 + which as u64,
                    extent: 64,
                    line: 12,
                    block,
                    thread,
                })
            );
        }
        assert_eq!(Recorded::decode(&[0; WORDS]), None);
        // A barrier's record: the left thread in the offset, the other line in the extent.
        let mut words = [0u64; WORDS];
        words[WHICH] = DIVERGED;
        words[OFFSET] = pack([5, 1, 0]);
        words[EXTENT] = 17;
        words[LINE] = 14;
        words[BLOCK] = pack([2, 0, 0]);
        words[THREAD] = pack([0, 1, 0]);
        assert_eq!(
            Recorded::decode(&words),
            Some(Recorded::Diverged(Divergence {
                line: 14,
                other_line: Some(17),
                block: [2, 0, 0],
                waiting: [0, 1, 0],
                left: [5, 1, 0],
            }))
        );
        words[EXTENT] = 0;
        let Some(Recorded::Diverged(d)) = Recorded::decode(&words) else {
            panic!("a divergence")
        };
        assert_eq!(d.other_line, None);
        // A stalled wait's record: the parity in the offset.
        let mut words = [0u64; WORDS];
        words[WHICH] = STALLED;
        words[OFFSET] = 1;
        words[LINE] = 21;
        words[BLOCK] = pack([3, 0, 1]);
        words[THREAD] = pack([64, 0, 0]);
        assert_eq!(
            Recorded::decode(&words),
            Some(Recorded::Stalled(Stall {
                line: 21,
                parity: 1,
                block: [3, 0, 1],
                thread: [64, 0, 0],
            }))
        );
    }

    /// The helpers write the words this module names, and divert to the scratch after
    /// the record.
    #[test]
    fn the_helpers_use_the_layout() {
        let c = check_helpers();
        for at in [OFFSET, EXTENT, LINE, BLOCK, THREAD] {
            assert!(c.contains(&format!("f[{at}] = ")), "{c}");
        }
        assert!(c.contains(&format!("f + {RECORD_WORDS}")), "{c}");
        assert!(vector_check_helper().contains(&format!("<< {VECTOR_SHIFT}")));
    }

    /// A wait gives up by trapping, and under checked barriers by a record of its line and
    /// parity: the checked helpers come after the trap's definition, which they replace.
    #[test]
    fn a_stalled_wait_traps_or_records() {
        let kernel = format!(
            "{}extern \"C\" __global__ void k() {{ PARRAY_WAIT_STALLED(7u, 0u); }}\n",
            wait_helpers()
        );
        assert!(kernel.contains("asm volatile(\"trap;\")"), "{kernel}");
        let checked = checked_sync(&kernel);
        let trap = checked.find("trap;").expect("the trap");
        let record = checked
            .find(&format!("atomicCAS(f, 0ull, {STALLED}ull)"))
            .expect("the record");
        let redefined = checked
            .find("#define PARRAY_WAIT_STALLED(line, parity) parray_wait_stalled(line, parity)")
            .expect("the redefinition");
        let kernel_at = checked.find("extern \"C\"").expect("the kernel");
        assert!(
            trap < record && record < redefined && redefined < kernel_at,
            "{checked}"
        );
        for at in [OFFSET, LINE, BLOCK, THREAD] {
            assert!(
                checked[record..].contains(&format!("f[{at}] = ")),
                "{checked}"
            );
        }
    }
}
