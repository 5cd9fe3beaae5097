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
            type Index = [usize; 1];
            const NAME: &'static str = stringify!($name);
            const MEM: Option<parray_core::MemKind> = Some(parray_core::MemKind::$mem);
            const SIZE: usize = $extent;
            const EXTENT: usize = $extent;
            const RANK: usize = 1;
            const DIMS: &'static [usize] = &[$extent];

            #[track_caller]
            #[allow(unused_comparisons)]
            fn offset([i]: [usize; 1]) -> usize {
                assert!(i < $extent, "index {i} out of range for {}", stringify!($name));
                i
            }

            #[track_caller]
            fn offset_of(index: &[usize]) -> usize {
                match index {
                    [i] => Self::offset([*i]),
                    _ => panic!("{} has one dimension", stringify!($name)),
                }
            }

            fn module() -> &'static parray_core::Module {
                static MODULE: std::sync::OnceLock<parray_core::Module> = std::sync::OnceLock::new();
                MODULE.get_or_init(|| {
                    let mem = format!("{}", parray_core::MemKind::$mem);
                    let elem = <$elem as parray_runtime::Element>::ELEM;
                    parray_core::Module::parse(&format!(
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
