//! Parray: array types for heterogeneous parallel programming.
//!
//! Write a kernel once against the logical shape of the data; retarget it to another
//! memory layout or another kind of thread by changing a type. See `SPEC.md` for the
//! language and `examples/` for the paper's figures.
//!
//! ```
//! use parray::prelude::*;
//!
//! parray! {
//!     pub paged float [[3][2]][4] A;        // Fig 1: 6 rows of 4, the rows split 3 x 2
//! }
//!
//! fn main() -> parray::Result<()> {
//!     let a = A::create()?;
//!     assert_eq!(a.extent(), 24);
//!     assert_eq!(A::offset([5, 1]), 21);   // row 5, column 1
//!     Ok(())
//! }
//! ```
//!
//! The README's example (`examples/readme.rs`) is a whole program: create, fill, detour,
//! read back, check.

// Library code reports through errors, not stdout or stderr.
#![warn(clippy::print_stdout, clippy::print_stderr)]

/// The type language itself (`parray-layout`): parsing, the dimension trees, the offset
/// compiler. A declared type is a value of it at run time (`T::module()`, `T::dim()`),
/// which answers for any sub-dimension what `$...$` forms answer at compile time.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub paged float [[3][2]][4] A; }
///
/// fn main() {
///     let (m, a) = (A::module(), A::dim());
///     assert_eq!((m.size(a.node), m.extent(a.node)), (24, 24));
///     let a_0 = m.lookup("A_0").unwrap();             // the 6 rows, split 3 x 2
///     assert_eq!(m.offset_at(a_0.node, 5), 20);       // row 5 starts at offset 20
///
///     // An index expression of a type named at run time, compiled once, evaluated fast.
///     let f = parray::layout::index_function(m, "A", &["i", "j"]).unwrap();
///     let mut eval = parray::layout::eval::Program::new(&f.expr);
///     assert_eq!(eval.eval(&[5, 1]), A::offset([5, 1]) as u64);
/// }
/// ```
pub use parray_layout as layout;

/// Where a data type's elements live: `paged` or `pinned` host memory, `dmem` on a
/// device, `smem` and `rmem` inside cuda bodies (`DataType::MEM`, `Array::mem`).
///
/// ```
/// use parray::prelude::*;
/// use parray::MemKind;
///
/// parray! {
///     pub pinned float [4][3] A;
///     pub float [#A_1][#A_0] AT;      // a view: no memory kind of its own
/// }
///
/// fn main() -> parray::Result<()> {
///     assert_eq!((A::MEM, AT::MEM), (Some(MemKind::Pinned), None));
///     let a = A::create()?;
///     assert_eq!(a.mem().to_string(), "pinned");
///     assert_eq!(a.view::<AT>().mem(), MemKind::Pinned);   // the storage's
///     Ok(())
/// }
/// ```
pub use parray_layout::MemKind;

/// Declares data types and thread arrays in the paper's notation. Each becomes a unit
/// struct with its constants and offset function (`DataType`/`ThreadArray`), `create()`
/// for the types with storage, and what the other macros need to find it (SPEC.md 3.1).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged float [4][3] A;          // 4 rows of 3, row-major
///     pub float [#A_1][#A_0] AT;         // the same storage, seen transposed (a view)
///     pub pthd [2] TWO;                  // a thread array of 2 CPU threads
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;
///     a.set([1, 2], 5.0);
///     assert_eq!(a.view::<AT>().at([2, 1]), 5.0);
///     assert_eq!((A::offset([1, 2]), AT::offset([2, 1])), (5, 5));
///     assert_eq!(TWO::threads(), 2);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_macros::parray;

/// Runs a body on every thread of a thread array: CPU threads for `pthd` (the body
/// captures what it uses), a CUDA grid for `cuda(...)` (the arguments bind to the
/// declared parameters; the CPU emulation runs it where there is no GPU). Returns
/// `parray::Result<()>` when every thread is done (SPEC.md 3.5, chapter 4). A body is a
/// subset of Rust with the paper's forms: `$...$`, `#sync`, `#copy S(p) to D(q);` (in a
/// cuda body also `#copy async ...;` from global into shared memory and `#wait N;`,
/// SPEC.md 3.9), and `atomic_add(p + off, v)` (CUDA's `atomicAdd`, on every back end; a form of the body,
/// nothing to import).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged int [8] OUT;
///     pub pthd [8] T;
///     pub dmem int [64] D;
///     pub cuda(int* d, int k) [2][32] G;
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut out = OUT::create()?;
///     detour!(T {
///         out[$OUT[$tid$]$] = ($tid$ * 10) as i32;     // each thread writes its element
///     })?;
///     assert_eq!(out.to_vec()?, vec![0, 10, 20, 30, 40, 50, 60, 70]);
///
///     let mut d = D::create()?;
///     detour!(G(&mut d, 7) {
///         d[$D[$tid$]$] = k + $tid$ as i32;            // a GPU thread per element
///     })?;
///     assert_eq!(d.to_vec()?[63], 70);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_macros::detour;

/// Host code in which the paper's `$...$` forms are compiled (offsets, sizes); otherwise
/// ordinary Rust (SPEC.md 3.3). `host!(<T> ...)` is generic over a type parameter.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub paged float [[2][3]][4] M; }
///
/// fn main() {
///     let (rows, off) = host! { ($dim_0(M)$, $M[[1][2]][3]$) };
///     assert_eq!((rows, off), (6, 23));
/// }
/// ```
#[doc(inline)]
pub use parray_macros::host;

/// The CUDA C a cuda `detour!` generates for the same input, as a `&'static str` (the
/// arguments are checked to exist, as a detour's would be; their values do not matter).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub dmem float [1024][1024] M;
///     pub cuda(float* c) [1024][1024] TA;
/// }
///
/// fn main() {
///     let c = ();
///     let source = kernel_source!(TA(c) {
///         c[$M[$tid_0$][$tid_1$]$] = 1.0f32;
///     });
///     assert!(source.contains("c[(int)tid_0 * 1024 + (int)tid_1] = 1.0f;"), "{source}");
/// }
/// ```
#[doc(inline)]
pub use parray_macros::kernel_source;

/// An array of a declared type, owning its storage: what `T::create()` returns. Host
/// code reads and writes host memory by typed index (`at`, `set`, each index checked
/// against its dimension) or by offset (`a[off]`); `to_vec` and `copy_from_slice` move
/// the elements of any memory, dmem included. `view` looks at the storage as a type
/// that views it.
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged float [4][3] A;
///     pub float [#A_1][#A_0] AT;
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;                  // zeroed, A::extent() elements
///     a.set([1, 2], 7.0);
///     assert_eq!(a[A::offset([1, 2])], 7.0);     // the same element, by offset
///     assert_eq!(a.view::<AT>().at([2, 1]), 7.0);
///     a.copy_from_slice(&[1.0; 12])?;
///     assert_eq!(a.to_vec()?.iter().sum::<f32>(), 12.0);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::Array;

/// A declared data type, as generic code sees it: its element, memory kind, sizes and
/// offset function. `parray!` implements it for each data type it declares.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub dmem float [[2][3]][4] M; }
///
/// /// A type's shape, whatever the type.
/// fn shape<T: DataType>() -> (usize, &'static [usize], usize) {
///     (T::size(), T::dims(), T::extent())
/// }
///
/// fn main() {
///     assert_eq!(shape::<M>(), (24, &[6, 4][..], 24));
///     assert_eq!(M::offset([5, 3]), 23);        // $M[5][3]$
///     assert_eq!(M::offset_of(&[5, 3]), 23);    // the same, from a slice
///     assert_eq!(M::NAME, "M");
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::DataType;

/// A data type's sizes and offset function as one value (`DataType::offsets`), which a
/// loop of a body reads once where it starts (SPEC.md 3.1, "Sizes given at run time").
pub use parray_runtime::Offsets;

/// A size given when the program runs: `const N;` in a `parray!` block declares `N`, and
/// `N.bind(n)?` gives it its value, once per process. Every type whose sizes use `N` is
/// resolved from the bound value at its first use (SPEC.md 2.4, 3.1).
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     const N;
///     paged float [N][N] M;
/// }
///
/// fn main() -> parray::Result<()> {
///     N.bind(100)?;                      // from the command line, say
///     let mut m = M::create()?;
///     m.set([99, 1], 2.0);
///     assert_eq!(host! { $M[99][1]$ }, 99 * 100 + 1);
///     assert_eq!(M::dims(), &[100, 100]);
///     Ok(())
/// }
/// ```
pub use parray_runtime::RuntimeSize;

/// A declared thread array, as generic code sees it. `parray!` implements it for each
/// thread array it declares.
///
/// ```
/// use parray::prelude::*;
/// use parray::ThreadArrayKind;
///
/// parray! {
///     pub pthd [2][4] T;
///     pub cuda(float* x) [4][256] G;
/// }
///
/// fn main() {
///     assert_eq!((T::threads(), T::KIND), (8, ThreadArrayKind::Pthd));
///     assert_eq!((G::threads(), G::KIND), (1024, ThreadArrayKind::Cuda));
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::{ThreadArray, ThreadArrayKind};

/// `V: ViewOf<S>`: an array of `S` may be indexed as `V`. `parray!` implements it for a
/// type declared on another's dimensions (same element, a memory kind that agrees, an
/// extent that fits); every type views itself. A function can then take any view.
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged int [2][3] A;
///     pub int [#A_1][#A_0] AT;          // A transposed
/// }
///
/// /// Element (i, j) of `a`, seen as `V`.
/// fn element<V: ViewOf<A>>(a: &Array<A>, i: usize, j: usize) -> i32 {
///     a.view::<V>().at([i, j])
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;
///     a.set([0, 2], 5);
///     assert_eq!(element::<A>(&a, 0, 2), 5);
///     assert_eq!(element::<AT>(&a, 2, 0), 5);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::ViewOf;

/// A handle that reads an array (`a.ptr()`), borrowing it: the paper's `float* p = a +
/// off`. `p + off` moves it; every load is checked against the array's extent. A detour
/// body indexes it like the array.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub paged float [4][3] A; }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;
///     a.set([2, 0], 4.5);
///     let row2 = a.ptr() + A::offset([2, 0]);   // row 2
///     assert_eq!(row2.load(0), 4.5);
///     assert_eq!((row2.offset(), row2.remaining()), (6, 6));
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::Ptr;

/// A handle that reads and writes an array (`a.ptr_mut()`), borrowing it exclusively; it
/// is `Copy`, so a detour's threads share it as CUDA threads share a pointer.
///
/// ```
/// use parray::prelude::*;
///
/// parray! {
///     pub paged float [8] V;
///     pub pthd [8] T;
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut v = V::create()?;
///     let p = v.ptr_mut();
///     p.store(3, 1.5);
///     detour!(T {
///         atomic_add(p, 1.0f32);      // every thread adds 1 to element 0
///     })?;
///     assert_eq!((p.load(0), p.load(3)), (8.0, 1.5));
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::PtrMut;

/// Reading and writing elements by offset, through an array or a handle: what a detour
/// body's `x[off]` and `x[off] = v` call, and what host code calls on a handle. Both are
/// in the prelude.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub paged int [4] V; }
///
/// /// The sum of `n` elements, through anything that reads them.
/// fn sum(x: &impl Access<i32>, n: usize) -> i32 {
///     (0..n).map(|k| x.load(k)).sum()
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut v = V::create()?;
///     let w = v.ptr_mut();
///     for k in 0..4 {
///         w.store(k, k as i32);
///     }
///     assert_eq!(sum(&w, 4), 6);
///     assert_eq!(sum(&(v.ptr() + 2), 2), 5);      // from element 2
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::{Access, AccessMut};

/// A device that runs cuda thread arrays and holds their dmem: a CUDA GPU, or one the
/// CPU emulates. `T::create()` puts dmem on the thread's current device,
/// `T::create_on(&device)` on a given one, and a cuda detour runs where its arrays are.
///
/// ```
/// use parray::prelude::*;
/// use parray::Device;
///
/// parray! {
///     pub dmem float [256] D;
///     pub cuda(float* d) [2][128] G;
/// }
///
/// fn main() -> parray::Result<()> {
///     let dev = Device::emulated(0);              // the CPU runs its kernels
///     let mut d = D::create_on(&dev)?;
///     detour!(G(&mut d) {
///         d[$D[$tid$]$] = $tid$ as f32;
///     })?;
///     assert_eq!(d.device(), Some(&dev));
///     assert_eq!(d.to_vec()?[255], 255.0);
///     assert_eq!(dev.to_string(), "emulated:0");
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::Device;

/// Everything the runtime can fail with. Each variant's message (its `Display`, and its
/// `Debug`, so that `fn main() -> parray::Result<()>` prints a sentence) says what failed
/// and where; the fields stay available to `match`.
///
/// ```
/// use parray::prelude::*;
/// use parray::Error;
///
/// parray! {
///     pub paged float [4] SMALL;
///     pub paged float [8] BIG;
/// }
///
/// fn main() {
///     let small = SMALL::create().unwrap();
///     match small.as_type::<BIG>() {
///         Err(Error::NotAView { extent, view_extent, .. }) => assert_eq!((extent, view_extent), (4, 8)),
///         _ => unreachable!("BIG does not fit in SMALL's storage"),
///     }
///     let e = small.as_type::<BIG>().err().unwrap();
///     assert_eq!(
///         e.to_string(),
///         "parray: SMALL (paged memory, extent 4) cannot be seen as BIG (extent 8): \
///          a view needs the storage's memory kind (and with it its records kept alike, soa or whole) and at most its extent"
///     );
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::Error;

/// The runtime's result: `std::result::Result<T, parray::Error>`. A `main` that returns
/// it reports an error as its sentence.
///
/// ```
/// use parray::prelude::*;
///
/// parray! { pub paged double [3] V; }
///
/// fn total() -> parray::Result<f64> {
///     let mut v = V::create()?;
///     v.fill(0.5)?;
///     Ok(v.to_vec()?.iter().sum())
/// }
///
/// fn main() -> parray::Result<()> {
///     assert_eq!(total()?, 1.5);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::Result;

/// Where a detour is (its thread array, file and line) and which of its threads failed:
/// what the errors of a detour name.
///
/// ```
/// use parray::prelude::*;
/// use parray::{Error, ThreadId};
///
/// parray! {
///     pub paged int [4] OUT;
///     pub pthd [4] T;
/// }
///
/// fn main() {
///     let mut out = OUT::create().unwrap();
///     let r = detour!(T {
///         let k = $tid$;
///         out[k * 2] = 1;                // threads 2 and 3 write past the end
///     });
///     match r {
///         Err(Error::ThreadPanicked { site, thread, .. }) => {
///             assert_eq!(site.array, "T");
///             assert!(matches!(thread, ThreadId::Pthd { tid: 2 | 3 }));
///         }
///         _ => unreachable!("the access past the end fails"),
///     }
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::{DetourSite, RaceAccess, ThreadId};

/// The element of a shared array of mbarriers (`smem mbarrier [S] FULL;`, SPEC 3.9).
#[doc(hidden)]
pub use parray_runtime::Mbarrier;
/// The half-precision numbers of the `half` crate: the elements `half` and `bf16`.
pub use parray_runtime::{bf16, f16};
/// The Rust types of the elements: `float` is `f32`, `int` `i32`, `double` `f64`,
/// `unsigned` `u32`, `char` `i8`, `uchar` `u8`, `long` `i64`, `half` and `bf16` the
/// [`f16`] and [`bf16`] of the `half` crate, and CUDA's vector types are these
/// `#[repr(C)]` structs with public fields (`x, y[, z, w]`) and the alignment CUDA gives
/// them. `Element` is the trait of them all.
///
/// ```
/// use parray::prelude::*;
/// use parray::Element;
///
/// parray! { pub paged float2 [4] P; }
///
/// /// The type-language name of an element type.
/// fn elem_name<E: Element>() -> String {
///     E::ELEM.to_string()
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut p = P::create()?;
///     p.set([1], Float2::new(1.0, 2.0));
///     assert_eq!(p.at([1]).y, 2.0);
///     assert_eq!(elem_name::<Float4>(), "float4");
///     assert_eq!((elem_name::<f32>(), elem_name::<Int2>()), ("float".into(), "int2".into()));
///     assert_eq!(std::mem::align_of::<Double2>(), 16);
///     assert_eq!(elem_name::<parray::bf16>(), "bf16");
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::{Double2, Element, Float2, Float4, Int2, Int4};

/// `#copy` on the host: [`copy::copy`] moves element `k` of one array to element `k` of
/// another, whatever their layouts and memories (also `src.copy_to(&mut dst)`), and
/// returns the path it took; [`copy::plan`] tells the path beforehand (SPEC.md 3.9).
///
/// ```
/// use parray::prelude::*;
/// use parray::copy::{self, CopyPath, Place};
///
/// parray! {
///     pub paged float [2][3] A;
///     pub paged float [3][2] B;          // a different layout of as many elements
///     pub paged float [#B_1][#B_0] BT;   // B, seen transposed
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;
///     a.copy_from_slice(&[0.0, 1.0, 2.0, 3.0, 4.0, 5.0])?;
///     let mut b = B::create()?;
///     // Element k of A goes to element k of BT: B ends up holding A transposed.
///     let path = copy::copy(&a, b.view_mut::<BT>())?;
///     assert_eq!(path, CopyPath::HostLoop);
///     assert_eq!(b.to_vec()?, [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]);
///     assert_eq!(copy::plan::<A, B>(Place::Host, Place::Host)?, CopyPath::Bulk); // row-major
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_runtime::copy;

/// mpi thread arrays and types distributed over their ranks (SPEC.md 2.13 and 3.12):
/// [`mpi::job`] is this process's rank and the job's size, [`mpi::Collective`] what a
/// `#copy` between distributed types became. Built with the `mpi` feature (Open MPI);
/// without it an mpi detour or a distributed array is `Error::MpiUnavailable`.
#[doc(inline)]
pub use parray_runtime::distributed::mpi;

/// Devices, backends, launches and timing: `gpu::time_ms` times device work as the
/// device sees it (CUDA events on a GPU, the host clock under the emulation), a
/// `gpu::Timing` that says which (`1.234 ms`, `1.234 ms (emulated)`).
///
/// ```
/// use parray::prelude::*;
/// use parray::Device;
///
/// parray! {
///     pub dmem float [1024] D;
///     pub cuda(float* d) [4][256] G;
/// }
///
/// fn main() -> parray::Result<()> {
///     let dev = Device::emulated(0);
///     let mut d = D::create_on(&dev)?;
///     let time = dev.with_current(|| {
///         parray::gpu::time_ms(|| {
///             detour!(G(&mut d) {
///                 d[$D[$tid$]$] = 2.0;
///             })
///         })
///     })?;
///     // The emulation's time is the host's, and says so.
///     assert!(time.emulated && time.ms >= 0.0);
///     assert!(time.to_string().ends_with(" ms (emulated)"));
///     assert_eq!(d.to_vec()?, vec![2.0; 1024]);
///     Ok(())
/// }
/// ```
pub mod gpu {
    pub use parray_runtime::devices::{
        backend, checked_sync_source, checks_sync, cuda_context, time_ms, time_ms_on, Backend,
        Device, DeviceId, Timing,
    };
    pub use parray_runtime::exec::emulate;
    pub use parray_runtime::exec::launch::{
        detour_cuda, detour_cuda_blocks, Launch, TmaArg, TmaMap,
    };
    pub use parray_runtime::exec::CudaGrid;
    pub use parray_runtime::libs::{cublas, cufft};
    pub use parray_runtime::mem::kernel_arg::{KernelArg, KernelValue};
}

#[doc(hidden)]
pub use parray_runtime::generic;

/// The vector element types' traits: `Vector` (a `Float2`, `Float4`, `Double2`, `Int2`,
/// `Int4` and its lanes), and `HasVector2`/`HasVector4` (the scalar elements whose pairs
/// and quadruples a body loads and stores as one: `p.load4(off)` on an `f32` array is a
/// `Float4`; SPEC.md 3.4, "Vectors"); `HasVector8` and the 16-bit vectors (`Bf16x8`...)
/// a `#copy` moves `half`s and `bf16`s by (SPEC.md 3.9).
pub use parray_runtime::{HasVector2, HasVector4, HasVector8, Vector};

/// What a Parray program needs in scope.
pub mod prelude {
    pub use crate::{
        detour, host, kernel_source, parray, subprog, Access, AccessMut, Array, DataType, Double2,
        Float2, Float4, Int2, Int4, Ptr, PtrMut, ThreadArray, ViewOf,
    };
}

/// A subprogram over type parameters, the paper's `#subprog` (SPEC.md 3.10): its
/// declarations take their sizes and layouts from the types it is called with, and each
/// call folds every offset for those types, as for a named type.
///
/// ```
/// use parray::prelude::*;
///
/// subprog! {
///     /// Each row's sum, for any layout of a matrix.
///     fn row_sums<T>(m) -> parray::Result<Vec<f32>> {
///         parray! {
///             const ROWS = dim(T_0);
///             paged float [ROWS] SUMS;
///             pthd [ROWS] ROW;
///         }
///         let mut sums = SUMS::create()?;
///         detour!(ROW {
///             let mut s = 0.0f32;
///             for j in 0..$dim(T_1)$ {
///                 s += m[$T[$tid$][j]$];
///             }
///             sums[$SUMS[$tid$]$] = s;
///         })?;
///         sums.to_vec()
///     }
/// }
///
/// parray! {
///     paged float [4][3] A;   // 4 rows of 3
///     float [#A_1][#A_0] AT;  // its transpose: 3 rows of 4
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut a = A::create()?;
///     for k in 0..12 {
///         a[k] = k as f32;
///     }
///     assert_eq!(row_sums!(<A>(&a))?, [3.0, 12.0, 21.0, 30.0]);
///     assert_eq!(row_sums!(<AT>(&a))?, [18.0, 22.0, 26.0]);
///     Ok(())
/// }
/// ```
#[doc(inline)]
pub use parray_macros::subprog;

/// A function of the body language (SPEC.md 3.5, "Functions"): written once, called from
/// cuda bodies (a `__device__` function on the GPU, the same function under the
/// emulation) and, being a Rust function too, from pthd and mpi bodies and host code.
///
/// ```
/// use parray::prelude::*;
///
/// #[parray::func]
/// fn gelu(x: f32) -> f32 {
///     0.5 * x * (1.0 + (0.797_884_6 * (x + 0.044_715 * x * x * x)).tanh())
/// }
///
/// parray! {
///     dmem float [256] V;
///     cuda(float* v) [2][128] G;
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut v = V::create()?;
///     detour!(G(&mut v) {
///         v[$V[$tid$]$] = gelu($tid$ as f32 / 64.0 - 2.0);
///     })?;
///     assert!((v.to_vec()?[128] - gelu(0.0)).abs() < 1e-6);
///     Ok(())
/// }
/// ```
pub use parray_macros::func;

/// Functions of the body language whose bodies hold `$...$` forms of the types they name
/// (SPEC.md 3.5, "Functions"): made as `#[parray::func]` makes them (which cannot take a
/// form: rustc parses an attribute's function first, and `$` is no Rust expression), the
/// forms folded with the types' sizes as constants, as a body's are.
///
/// ```
/// use parray::prelude::*;
/// use parray::Ptr;
///
/// parray! {
///     dmem float [4][8] M;
///     dmem float [#M_1][#M_0] T;             // M transposed: T[j][i] is M[i][j]
///     dmem float [8] OUT;
///     paged float [4][8] H;
///     cuda(float* m, float* out) [1][8] G;
/// }
///
/// parray::funcs! {
///     /// Column `j` of M's elements, read through the transposed view T.
///     fn column_sum(m: Ptr<'_, f32>, j: usize) -> f32 {
///         let mut s = 0.0f32;
///         for i in 0..$dim(T_1)$ {
///             s += m[$T[j][i]$];
///         }
///         s
///     }
/// }
///
/// fn main() -> parray::Result<()> {
///     let values: Vec<f32> = (0..32).map(|k| k as f32).collect();
///     let mut m = M::create()?;
///     m.copy_from_slice(&values)?;
///     let mut out = OUT::create()?;
///     detour!(G(&m, &mut out) {
///         out[$OUT[$tid$]$] = column_sum(m, $tid$);
///     })?;
///     assert_eq!(out.to_vec()?[1], 1.0 + 9.0 + 17.0 + 25.0);
///     // The same function in plain Rust, on host memory.
///     let mut h = H::create()?;
///     h.copy_from_slice(&values)?;
///     assert_eq!(column_sum(h.ptr(), 1), 1.0 + 9.0 + 17.0 + 25.0);
///     Ok(())
/// }
/// ```
pub use parray_macros::funcs;

/// The bound of a generic function of the body language: the number types (`i8 u8 i32
/// u32 i64 u64 usize f32 f64 f16 bf16`), with the operators the body language has on
/// each. A cuda body instantiates the function at each call's types.
///
/// ```
/// #[parray::func]
/// fn sq<T: parray::Num>(x: T) -> T {
///     x * x
/// }
/// assert_eq!((sq(3), sq(1.5f32)), (9, 2.25));
/// ```
pub use parray_runtime::Num;

/// The bound of a generic function of the body language over the float types (`f32 f64
/// f16 bf16`): [`Num`]'s operators, `T::from_f32` (a constant of `T`) and the math methods
/// (`sqrt`, `exp`, `tanh`, ...; a half's is the `f32` method, rounded).
///
/// ```
/// #[parray::func]
/// fn half_of<T: parray::Float>(x: T) -> T {
///     T::from_f32(0.5) * x.abs()
/// }
/// assert_eq!((half_of(-3.0f32), half_of(1.0f64)), (1.5, 0.5));
/// ```
pub use parray_runtime::Float;

/// Makes a `#[repr(C)]` struct of element types an element (SPEC.md 2.3, "Records"): its
/// arrays are declared as any other's (`dmem Particle [N] P;`), and bodies read and write
/// its fields (`p[i].vel`), on the CPU and the GPU alike.
///
/// ```
/// use parray::prelude::*;
///
/// #[derive(Clone, Copy, Default, Debug, PartialEq, parray::Record)]
/// #[repr(C)]
/// pub struct Particle {
///     pos: Float2,
///     vel: Float2,
///     mass: f32,
///     id: i32,
/// }
///
/// parray! {
///     dmem Particle [256] P;
///     cuda(Particle* p, float dt) [2][128] STEP;
/// }
///
/// fn main() -> parray::Result<()> {
///     let mut p = P::create()?;
///     p.copy_from_slice(&vec![Particle { vel: Float2::new(1.0, 2.0), mass: 1.0, ..Default::default() }; 256])?;
///     detour!(STEP(&mut p, 0.5) {
///         let i = $P[$tid$]$;
///         p[i].pos = p[i].pos + p[i].vel * dt;
///         p[i].id = $tid$ as i32;
///     })?;
///     let after = p.to_vec()?;
///     assert_eq!((after[7].pos, after[7].id), (Float2::new(0.5, 1.0), 7));
///     Ok(())
/// }
/// ```
pub use parray_macros::Record;

#[doc(hidden)]
pub use parray_macros::{__resume, __subprog_call};

/// Items the macros' expansions refer to; not part of the API.
/// The integers a `$T[...]$` form accepts as an index: every primitive integer, converted
/// to the `usize` offsets are computed in. A negative index panics (it would otherwise wrap
/// into the array, in any build); a float is a compile error that says to convert it.
///
/// ```
/// use parray::prelude::*;
/// use parray::IndexInteger;
///
/// parray! { pub paged float [4][8] M; }
///
/// fn main() {
///     let (i, j): (u8, i64) = (3, 5);
///     let off = host! { $M[i][j]$ };           // any integer type indexes
///     assert_eq!(off, 29);
///     assert_eq!(7i32.to_index(), 7usize);
///     assert!(std::panic::catch_unwind(|| (-1i32).to_index()).is_err());   // negative
/// }
/// ```
#[diagnostic::on_unimplemented(
    message = "an index must be an integer, not `{Self}`",
    label = "this index is a `{Self}`",
    note = "convert it where that is what you mean: `x as usize`"
)]
pub trait IndexInteger: Copy {
    /// The index as a `usize`.
    fn to_index(self) -> usize;
}

macro_rules! index_integer {
    (unsigned $($t:ty),*; signed $($s:ty),*) => {
        $(
            impl IndexInteger for $t {
                #[inline(always)]
                fn to_index(self) -> usize {
                    self as usize
                }
            }
        )*
        $(
            impl IndexInteger for $s {
                #[inline(always)]
                #[track_caller]
                fn to_index(self) -> usize {
                    if self < 0 {
                        negative_index(self as i64);
                    }
                    self as usize
                }
            }
        )*
    };
}
index_integer!(unsigned usize, u8, u16, u32, u64; signed i8, i16, i32, i64, isize);

#[cold]
#[track_caller]
fn negative_index(i: i64) -> ! {
    panic!("parray: index {i} is negative")
}

#[doc(hidden)]
pub mod __private {
    pub use parray_runtime::distributed::mpi::detour as mpi_detour;
    pub use parray_runtime::exec::emulate::tma_move;
    pub use parray_runtime::exec::emulate::ThreadCtx as CudaCtx;
    pub use parray_runtime::exec::pthd::{detour as pthd_detour, ThreadCtx as PthdCtx};
    pub use parray_runtime::generic::ir;
    pub use parray_runtime::mem::elem::{DeviceRepr, ValidAsZeroBits};
    pub use parray_runtime::mem::ptr::Pointer;
    pub use parray_runtime::shapes::{
        dim_size, literal_module, module_or_panic, runtime_dims, runtime_module, BoundOffsets,
        FormAt, RuntimeForm,
    };
    pub use parray_runtime::types::{index_out_of_range, wrong_rank};
    pub use parray_runtime::types::{FixedOffsets, NotBuilt};
    pub use parray_runtime::DetourSite;
    pub use parray_runtime::{bf16_from_f64, f16_from_f64};

    use crate::IndexInteger;

    /// `shfl_down(value, delta)` in the plain Rust of a collective function of the body
    /// language (SPEC 3.5, "Functions"), called from a pthd or mpi body or host code: a
    /// shuffle exchanges values among the 32 lanes of a GPU warp, which those do not have.
    #[cold]
    #[track_caller]
    pub fn shfl_down_outside_warp<T>(function: &str, _value: T, _delta: u32) -> T {
        panic!("parray: `{function}` shuffles (`shfl_down`), so it runs only in a cuda body, whose threads are the lanes of warps: a pthd or mpi body or host code has no warp to shuffle in (compute the reduction without shuffles there)")
    }

    #[inline(always)]
    #[track_caller]
    pub fn ix<I: IndexInteger>(i: I) -> usize {
        i.to_index()
    }

    /// An index of a `$T[...]$` form, which debug builds check against its own dimension
    /// (of `size` elements) of the type `ty`: the access checks the final offset only, and
    /// `A[1][3]` on `[4][3]` is a valid offset (`A[2][0]`'s).
    #[inline(always)]
    #[track_caller]
    pub fn ix_in<I: IndexInteger>(i: I, size: u64, ty: &'static str) -> usize {
        index_in(i.to_index(), size, ty)
    }

    /// [`ix_in`] for an index the body typed (`usize`, or `u32` under the emulation).
    #[inline(always)]
    #[track_caller]
    pub fn index_in<I: Copy + TryInto<u64>>(i: I, size: u64, ty: &'static str) -> I {
        #[cfg(debug_assertions)]
        if let Ok(v) = i.try_into() {
            if v >= size {
                outside_dimension(v, size, ty);
            }
        }
        let _ = (size, ty);
        i
    }

    #[cold]
    #[track_caller]
    #[cfg(debug_assertions)]
    fn outside_dimension(i: u64, size: u64, ty: &str) -> ! {
        panic!("parray: index {i} is out of range for a dimension of {ty} (size {size}); debug builds check each index")
    }

    /// The value of a block the body compiler writes, as a call: an expression wherever
    /// it stands (a bare block at the start of a statement, or after `for i in 0..`, would
    /// not parse as one).
    #[inline(always)]
    pub fn value<T>(v: T) -> T {
        v
    }

    /// An offset or size of a type parameter in an emulated cuda body, whose `usize` is
    /// 32 bits like the kernel's (the launch checked the type's extent fits).
    #[inline(always)]
    pub fn index32(v: usize) -> u32 {
        v as u32
    }

    /// `T::offset` of a type whose offset expression is past the offset compiler's limits.
    #[cold]
    #[track_caller]
    pub fn offset_too_complex(type_name: &str) -> ! {
        panic!("parray: the offset function of {type_name} is past the offset compiler's limits")
    }

    /// The bound of `create()` on a view of `S`, which no type meets: its message is the
    /// error at a call.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is a view of `{S}`: it has no storage of its own to create",
        label = "`{Self}` has no memory kind",
        note = "create the array it views and look at it as `{Self}`: `let a = {S}::create()?;`, then `a.view::<{Self}>()`"
    )]
    pub trait IsViewOf<S> {}

    /// The bound of `create()` on a view of no type that host code can create.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is a view: it has no storage of its own to create",
        label = "`{Self}` has no memory kind",
        note = "create an array of a paged, pinned or dmem type whose storage `{Self}` fits, and look at it as `{Self}` (`a.as_type::<{Self}>()`); or give `{Self}` a memory kind"
    )]
    pub trait IsView {}

    /// The bound of `create()` on a thread array.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is a thread array: it has no elements to create",
        label = "a thread array is run on, not created",
        note = "run a body on its threads with `detour!({Self} {{ ... }})` (pthd) or `detour!({Self}(args) {{ ... }})` (cuda), and create the data types it works on"
    )]
    pub trait IsThreadArray {}

    /// The bound of a host `create()` on a smem or rmem type.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is smem or rmem memory, which exists only inside cuda detour bodies",
        label = "host code cannot create `{Self}`",
        note = "create it in the body of a cuda detour (`let s = {Self}::create();`), or declare a `dmem` type to create here"
    )]
    pub trait OnlyInCudaBodies {}

    pub use parray_runtime::array::handles::{
        aligned_for, arranged, indexed_as, indexed_on_host, Arranged, CopyEnd, Handles, IndexedAs,
        VectorStart, Writable,
    };
    pub use parray_runtime::exec::emulate::{
        join, mma_m16n8k16, run_block, shfl_down, wgmma_m64nk, whole_warps, Registers,
    };
    pub use parray_runtime::exec::launch::host_index;
}
