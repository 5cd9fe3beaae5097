//! Helpers shared by the runtime's tests.

#![allow(dead_code)]

/// A raw pointer that kernels may capture. Each test's accesses through it are race-free:
/// its kernels write disjoint elements or use atomics.
#[derive(Clone, Copy)]
pub struct SyncPtr<T>(pub *mut T);
// SAFETY: see the type's contract: the tests only share it for race-free accesses.
unsafe impl<T> Sync for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Send for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    /// A method rather than `.0`, so that closures capture the whole (Sync) wrapper.
    pub fn get(self) -> *mut T {
        self.0
    }
}

/// Declares one-dimensional data types by hand, as `parray!` would (the runtime's tests
/// cannot use the macros): `flat_types! { V = Dmem f32 [4]; }` is `dmem float [4] V`.
#[allow(unused_macros)]
macro_rules! flat_types {
    ($($name:ident = $mem:ident $elem:ty [$extent:expr];)*) => {$(
        #[derive(Debug, Clone, Copy)]
        #[allow(non_camel_case_types, clippy::upper_case_acronyms)]
        struct $name;

        impl parray_runtime::DataType for $name {
            type Elem = $elem;
            const NAME: &'static str = stringify!($name);
            const MEM: Option<parray_layout::MemKind> = Some(parray_layout::MemKind::$mem);
            const RANK: usize = 1;
            const FIXED_SIZE: Option<usize> = Some($extent);

            fn size() -> usize {
                $extent
            }

            fn extent() -> usize {
                $extent
            }

            fn dims() -> &'static [usize] {
                &[$extent]
            }

            #[track_caller]
            #[allow(unused_comparisons)]
            fn offset_of(index: &[usize]) -> usize {
                match *index {
                    [i] => {
                        assert!(i < $extent, "index {i} out of range for {}", stringify!($name));
                        i
                    }
                    _ => panic!("{} has one dimension", stringify!($name)),
                }
            }

            type Offsets = parray_runtime::types::FixedOffsets<Self>;

            fn offsets() -> Self::Offsets {
                parray_runtime::types::FixedOffsets::new()
            }

            fn module() -> &'static parray_layout::Module {
                static MODULE: std::sync::OnceLock<parray_layout::Module> = std::sync::OnceLock::new();
                MODULE.get_or_init(|| {
                    let mem = format!("{}", parray_layout::MemKind::$mem);
                    let elem = <$elem as parray_runtime::Element>::ELEM;
                    parray_layout::Module::parse(&format!(
                        "#parray {{{mem} {elem} [{}]}} {}",
                        $extent,
                        stringify!($name)
                    ))
                    .expect("a flat type parses")
                })
            }
        }
    )*};
}

/// The kernel a generated `c[i] = a[i] + b[i]` detour would be, for the launch tests.
pub const VADD: &str = r#"
extern "C" __global__ void vadd(const float* a, const float* b, float* c, unsigned long long n) {
    unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) c[i] = a[i] + b[i];
}
"#;

/// `VADD` launched as a detour at `site` would launch it, in blocks of `block` threads,
/// with its CPU emulation; `ran` is set when the emulation runs a thread.
pub fn vector_add(
    site: &'static parray_runtime::DetourSite,
    block: u32,
    [a, b]: [parray_runtime::Ptr<f32>; 2],
    c: parray_runtime::PtrMut<f32>,
    n: usize,
    ran: &std::sync::atomic::AtomicBool,
) -> parray_runtime::Result<()> {
    use parray_runtime::{Access, AccessMut};
    let launch = parray_runtime::exec::launch::Launch {
        kernel: "vadd",
        source: VADD.into(),
        shape: parray_runtime::exec::CudaGrid::new(
            [n.div_ceil(block as usize) as u32, 1, 1],
            [block, 1, 1],
        ),
        shared_bytes: 0,
        checked: None,
        hip_source: None,
        constants: &[],
        tma: Vec::new(),
        site,
    };
    // SAFETY: the arguments match `vadd`'s parameters; the kernel checks `i < n`.
    unsafe {
        parray_runtime::exec::launch::detour_cuda(&launch, &[&a, &b, &c, &n], |t| {
            ran.store(true, std::sync::atomic::Ordering::Relaxed);
            let (a, b, c) = (a.in_kernel(), b.in_kernel(), c.in_kernel());
            let i = t.global_id();
            if i < n {
                c.store(i, a.load(i) + b.load(i));
            }
        })
    }
}
