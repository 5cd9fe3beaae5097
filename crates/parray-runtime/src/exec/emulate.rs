//! CPU emulation of a CUDA grid: runs a `cuda` thread array's detour where no GPU exists.
//!
//! The emulation gives the body what a CUDA kernel gets, and no more: every block and every
//! thread runs exactly once with its `blockIdx`/`threadIdx`, each block has its own
//! [shared memory](ThreadCtx::shared_ptr), the threads of a block meet at its barriers
//! ([`BlockThreads::sync`]: `__syncthreads`, Parray's `#sync`), and [`atomic_add`] updates
//! memory like `atomicAdd`. Blocks run in no particular order, concurrently, as on a GPU.
//!
//! Blocks are spread over the cores ("lanes"); a lane runs one block at a time, all of its
//! threads on the lane's OS thread, one after another: no OS thread per GPU thread, and a
//! block has no data races of its own. Two strategies:
//! - [`run_grid`], for a body without `#sync`: plain loops, the body called once per
//!   thread, in thread order; a thread costs a few nanoseconds on top of its body;
//! - [`run_grid_blocks`], for a body with `#sync`: the body is called once per block and
//!   runs the block's threads itself, stretch by stretch between barriers. Each stretch is
//!   a loop over the threads present there (a mask: a thread that returned, or took a
//!   branch without the barrier, is absent), with [`BlockThreads::thread`] giving each its
//!   context; a thread's variables that live across a barrier are the body's own arrays,
//!   one element per thread. At a barrier the body hands its mask to
//!   [`BlockThreads::sync`]: every thread present (or none) and the barrier opens; some
//!   present and some not is a `#sync` that not every thread reaches, where a GPU would
//!   hang or worse, and the launch fails at once with [`EmulateError::DivergentSync`].
//!
//! A panic in an emulated thread stops the remaining blocks and comes back as
//! [`EmulateError::Panicked`], naming the block and thread that ran and the place of the
//! panic; nothing hangs.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::mem::{align_of, size_of};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::thread;

use parray_compiler::mma::Descriptor;
use parray_layout::grid::CudaGrid;
use parray_layout::{ElemType, HwIndex, MemKind};

use crate::error::{divergence_message, panic_place, race_message, RaceAccess, ThreadId};
use crate::exec::panics::{self, Caught};
use crate::mem::atomics::{atomic_add, AtomicAdd, AtomicSwap};
use crate::mem::elem::{Element, Vector};
use crate::mem::ptr::{Access, AccessMut, PtrMut, Raw};
use crate::mem::watch::{self, Clock, Watch, Writes};

/// Most bytes of shared memory one block may create: CUDA's (`grid::CUDA`, the largest a
/// current GPU grants), so that no kernel the GPU path can launch is refused here.
pub const MAX_SHARED_BYTES: usize = parray_layout::grid::CUDA.shared_bytes as usize;

/// A CUDA `dim3`: used both for sizes (grid, block) and for indices (blockIdx, threadIdx).
///
/// Named fields rather than `[u32; 3]` so generated code reads like CUDA (`.x`, `.y`,
/// `.z`). A launch's shape is a `CudaGrid`, which also knows how indices flatten.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Dim3 {
    pub x: u32,
    pub y: u32,
    pub z: u32,
}

impl Dim3 {
    /// `dim3(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Dim3 { x, y, z }
    }
}

impl From<u32> for Dim3 {
    /// A one-dimensional size or index, as CUDA's `dim3(n)`: `(n, 1, 1)`.
    fn from(x: u32) -> Self {
        Dim3::new(x, 1, 1)
    }
}

impl From<[u32; 3]> for Dim3 {
    /// `[x, y, z]`.
    fn from([x, y, z]: [u32; 3]) -> Self {
        Dim3::new(x, y, z)
    }
}

impl From<Dim3> for [u32; 3] {
    /// `[x, y, z]`.
    fn from(d: Dim3) -> Self {
        [d.x, d.y, d.z]
    }
}

impl fmt::Display for Dim3 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {}, {})", self.x, self.y, self.z)
    }
}

/// A launch shape as CUDA's launch syntax writes it: `<<<(2, 3, 1), (64, 1, 1)>>>`.
fn launch_syntax(shape: &CudaGrid) -> String {
    format!(
        "<<<{}, {}>>>",
        Dim3::from(shape.grid),
        Dim3::from(shape.block)
    )
}

/// Why an emulated launch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmulateError {
    /// The configuration is one CUDA would refuse to launch (or one with more threads
    /// than a `usize` numbers).
    #[error(
        "kernel `{kernel}`: invalid launch configuration {}: {reason}",
        launch_syntax(shape)
    )]
    InvalidShape {
        kernel: &'static str,
        shape: CudaGrid,
        reason: String,
    },
    /// An emulated thread panicked (the first one, if several did), at `at`
    /// (`file:line:col`) when known.
    #[error("kernel `{kernel}`: {thread} panicked{}: {message}", panic_place(at))]
    Panicked {
        kernel: &'static str,
        thread: ThreadId,
        at: Option<String>,
        message: String,
    },
    /// Not every thread of a block reached the barrier at `line`: `waiting` (the first
    /// thread present there) did, `left` (the first absent) did not. The emulation sees a
    /// barrier's mask, not where an absent thread went (it returned, or took a branch
    /// without this barrier), so `other_line` is always `None` here.
    #[error("kernel `{kernel}`: {}", divergence_message(None, *line, waiting, left, *other_line))]
    DivergentSync {
        kernel: &'static str,
        line: u32,
        waiting: ThreadId,
        left: ThreadId,
        other_line: Option<u32>,
    },
    /// Two threads accessed element `element` of the array `array` with nothing ordering
    /// them, one of them writing it (debug builds: `mem::watch`): threads of a block in
    /// shared memory (`memory` smem), between the same barriers, or two threads writing it
    /// in global memory (dmem).
    #[error("kernel `{kernel}`: {}", race_message(*memory, array, *element, first, second))]
    Race {
        kernel: &'static str,
        memory: MemKind,
        array: &'static str,
        element: usize,
        first: Box<RaceAccess>,
        second: Box<RaceAccess>,
    },
}

/// What one emulated thread sees: its indices and its block's shared memory.
///
/// Borrows the block (`'b`), which lives while the block runs; not `Send`: a block's
/// threads never leave their lane's OS thread. Registers are not here: they are the body's
/// ordinary locals (or, across a barrier, its per-thread arrays).
pub struct ThreadCtx<'b> {
    grid: CudaGrid,
    block_idx: Dim3,
    thread_idx: Dim3,
    block_id: usize,
    thread_id: usize,
    /// The tid of the block's thread 0: a block's tids are consecutive (`CudaGrid::tid`).
    block_tid: usize,
    block: &'b Block,
}

impl ThreadCtx<'_> {
    /// `blockIdx`.
    #[inline]
    pub fn block_idx(&self) -> Dim3 {
        self.block_idx
    }

    /// `threadIdx`.
    #[inline]
    pub fn thread_idx(&self) -> Dim3 {
        self.thread_idx
    }

    /// The thread index `index` (one of a specialised kernel's,
    /// `generic::KernelSource::tids`) of this thread, from its block's and its own indices.
    #[inline]
    pub fn tid_at(&self, index: &parray_layout::ThreadIndex) -> u32 {
        let axis = |d: Dim3, a: usize| u64::from([d.x, d.y, d.z][a]);
        let mut values = [0u64; 8];
        for &(v, hw) in &index.hw {
            values[v.0 as usize] = match hw {
                HwIndex::BlockIdx(a) => axis(self.block_idx, a),
                HwIndex::ThreadIdx(a) => axis(self.thread_idx, a),
                HwIndex::Tid => self.global_id() as u64,
            };
        }
        // Below the grid's thread count, which the launch checked fits CUDA's limits.
        index.expr.eval(&values) as u32
    }

    /// `blockDim`.
    #[inline]
    pub fn block_dim(&self) -> Dim3 {
        self.grid.block.into()
    }

    /// `gridDim`.
    #[inline]
    pub fn grid_dim(&self) -> Dim3 {
        self.grid.grid.into()
    }

    /// The flattened block id, `x` fastest (Parray's `$tid_0$`).
    #[inline]
    pub fn block_id(&self) -> usize {
        self.block_id
    }

    /// The flattened thread id within the block, `x` fastest (Parray's `$tid_1$`).
    #[inline]
    pub fn thread_id(&self) -> usize {
        self.thread_id
    }

    /// The thread's id in the whole grid, `block_id * threads per block + thread_id`
    /// (Parray's `$tid$`).
    #[inline]
    pub fn global_id(&self) -> usize {
        self.block_tid + self.thread_id
    }

    /// `S::create()` of an smem type: the block's shared array number `slot` (each
    /// `create` in a body has its own compile-time slot) of `len` elements, as a `PtrMut` of
    /// `MemKind::Smem` named `name`; `soa`: a record array kept one array per field (each
    /// field's array at a multiple of 16 bytes, SPEC 2.3).
    ///
    /// All threads of a block get the same memory, every block its own; it is zero (the
    /// `Default` of every element type) when the block starts, and lives until the launch
    /// ends.
    ///
    /// # Panics
    /// If `slot` was created earlier in the block with another element size or length, if
    /// `T` needs more than 16-byte alignment, or if the block's shared arrays would exceed
    /// [`MAX_SHARED_BYTES`]. (A panic in a body ends the launch with its error.)
    #[track_caller]
    pub fn shared_ptr<T: Element>(
        &self,
        slot: usize,
        len: usize,
        name: &'static str,
        soa: bool,
    ) -> PtrMut<'_, T> {
        self.block.shared_ptr(slot, len, name, soa)
    }

    /// `#copy async` (SPEC 3.9): the thread's stores to shared memory until
    /// [`ThreadCtx::copy_async_commit`] are held, each landing at the `#wait` that retires
    /// this copy.
    #[inline]
    pub fn copy_async_begin(&self) {
        self.block.clock.copies.begin();
    }

    /// The end of a `#copy async`: its stores are one group of the thread's copies.
    #[inline]
    pub fn copy_async_commit(&self) {
        self.block.clock.copies.commit(self.thread_id);
    }

    /// `#wait groups`: the stores of all but the thread's last `groups` copies land, as
    /// its writes here.
    #[track_caller]
    pub fn wait_async(&self, groups: u32) {
        self.block
            .clock
            .copies
            .wait(self.thread_id, groups, std::panic::Location::caller());
    }

    /// `#mbarrier init B(b) arrivals N;` (SPEC 3.9, "TMA copies"): the barrier at `bar`
    /// counts `arrivals` arrivals a phase. An error of the model (a count out of range, a
    /// barrier in use) is the thread's panic.
    #[track_caller]
    pub fn mbarrier_init(&self, bar: &PtrMut<'_, crate::mem::elem::Mbarrier>, arrivals: u32) {
        use crate::mem::mbarrier::Mbarrier;
        let key = bar.host_address().addr();
        self.block.clock.progressed();
        let mut barriers = self.block.clock.mbarriers.borrow_mut();
        let made = match barriers.get_mut(&key) {
            Some((b, _)) => b.reinit(u64::from(arrivals)),
            None => Mbarrier::init(u64::from(arrivals)).map(|b| {
                barriers.insert(key, (b, Default::default()));
            }),
        };
        if let Err(e) = made {
            drop(barriers);
            panic!(
                "`#mbarrier init` of element {} of {}: {e}",
                bar.offset(),
                bar.type_name()
            );
        }
    }

    /// The model of the barrier at `bar`, given to `f`; a barrier never initialised is the
    /// thread's panic naming `what`.
    #[track_caller]
    fn with_mbarrier<R>(
        &self,
        bar: &PtrMut<'_, crate::mem::elem::Mbarrier>,
        what: &str,
        f: impl FnOnce(&mut crate::mem::mbarrier::Mbarrier) -> R,
    ) -> R {
        let key = bar.host_address().addr();
        self.block.clock.progressed();
        let mut barriers = self.block.clock.mbarriers.borrow_mut();
        match barriers.get_mut(&key) {
            Some((b, _)) => f(b),
            None => {
                drop(barriers);
                panic!("{what} on element {} of {}, which no `#mbarrier init` initialised: initialise each barrier once (one thread, before a `#sync`)", bar.offset(), bar.type_name())
            }
        }
    }

    /// `#mbarrier arrive B(b);`: the thread's arrival on the barrier's current phase.
    #[track_caller]
    pub fn mbarrier_arrive(&self, bar: &PtrMut<'_, crate::mem::elem::Mbarrier>) {
        self.with_mbarrier(bar, "`#mbarrier arrive`", |b| {
            b.arrive();
        });
    }

    /// The start of a TMA copy (SPEC 3.9, "TMA copies"): its stores into shared memory
    /// are held, as a `#copy async`'s are, until a wait observes the phase it completes on.
    #[inline]
    pub fn tma_begin(&self) {
        self.block.clock.copies.begin();
    }

    /// The end of a TMA copy of `bytes` on the barrier at `bar`: the issuing thread's
    /// `arrive.expect_tx` of the bytes, then the copy engine's `complete_tx` of them (the
    /// emulation moved the box at the issue); the held stores complete on that phase.
    #[track_caller]
    pub fn tma_commit(&self, bar: &PtrMut<'_, crate::mem::elem::Mbarrier>, bytes: u64) {
        let copies = &self.block.clock.copies;
        let phase = self.with_mbarrier(bar, "a TMA copy (`#copy async .. on`)", |b| {
            b.expect_tx(bytes)
                .map(|()| b.arrive())
                .and_then(|_| b.complete_tx(bytes))
        });
        match phase {
            Ok(phase) => copies.commit_on(self.thread_id, bar.host_address().addr(), phase),
            Err(e) => {
                copies.commit_on(self.thread_id, bar.host_address().addr(), u64::MAX);
                panic!(
                    "a TMA copy on element {} of {}: {e}",
                    bar.offset(),
                    bar.type_name()
                )
            }
        }
    }

    /// This block's thread `thread_id`, whose `threadIdx` is `thread_idx`.
    #[inline]
    fn set_thread(&mut self, thread_id: usize, thread_idx: Dim3) {
        self.thread_id = thread_id;
        self.thread_idx = thread_idx;
        self.block.clock.run(thread_id);
    }
}

/// Unit of shared-memory storage: its alignment (16) suits every body element type,
/// `float4` and `double2` included.
#[derive(Clone, Copy)]
#[repr(C, align(16))]
struct Chunk([u8; 16]);

/// One shared array of a block.
struct Slot {
    store: Vec<Chunk>,
    elem_size: usize,
    len: usize,
    /// Its bytes: `len` elements, or their field arrays (SPEC 2.3).
    bytes: usize,
    /// The race detector's marks of its elements.
    watch: Watch,
}

/// The state of the block a lane is running, shared by the block's threads: its shared
/// arrays.
///
/// Kept for the lane's next blocks: shared storage is created on first use and zeroed
/// between blocks.
#[derive(Default)]
struct Block {
    /// Shared arrays by slot.
    shared: RefCell<Vec<Option<Slot>>>,
    /// The race detector's time: barriers passed, the thread running, the first race.
    clock: Clock,
}

impl Block {
    #[track_caller]
    fn shared_ptr<T: Element>(
        &self,
        slot: usize,
        len: usize,
        name: &'static str,
        soa: bool,
    ) -> PtrMut<'_, T> {
        let bytes = match (soa, T::ELEM) {
            (true, ElemType::Record(r)) => {
                r.soa_bytes(len as u64, MemKind::Smem.soa_align()) as usize
            }
            _ => len.saturating_mul(size_of::<T>()),
        };
        let (base, watch) = self.shared::<T>(slot, len, bytes, name);
        let raw = Raw::new(base, 0, len, name, MemKind::Smem, None, soa);
        // SAFETY: the slot's watch and the block's clock live as long as its storage
        // (below): the lane's `Block`, which never moves and whose slots are never
        // replaced; only this lane's OS thread runs the block's threads.
        let raw = unsafe { raw.watched(&*watch, &self.clock) };
        // SAFETY: `base` points to `len` elements of `T` (or their field arrays, `bytes` of
        // them, 16-byte aligned), aligned, initialised (zero bits are a valid `Element`),
        // which stay allocated until the lane ends, after every
        // body of the launch; all users of the block run on this OS thread, one at a time,
        // through the handle, atomically.
        unsafe { PtrMut::from_raw_parts(raw) }
    }

    /// The storage of shared array `slot` (`len` elements in `bytes`) and its watch,
    /// created (zeroed) on first use in the lane; neither moves while the lane runs.
    #[track_caller]
    fn shared<T: Element>(
        &self,
        slot: usize,
        len: usize,
        bytes: usize,
        name: &'static str,
    ) -> (*mut T, *const Watch) {
        assert!(
            align_of::<T>() <= align_of::<Chunk>(),
            "shared element types must be at most 16-byte aligned"
        );
        let mut slots = self.shared.borrow_mut();
        if slots.len() <= slot {
            slots.resize_with(slot + 1, || None);
        }
        if slots[slot].is_none() {
            let used: usize = slots.iter().flatten().map(|s| s.bytes).sum();
            assert!(
                bytes <= MAX_SHARED_BYTES - used,
                "shared memory of a block would be over the GPU limit of {MAX_SHARED_BYTES} \
                 bytes ({used} bytes, and {len} elements in {bytes} bytes more)"
            );
            slots[slot] = Some(Slot {
                store: vec![Chunk([0; 16]); bytes.div_ceil(size_of::<Chunk>())],
                elem_size: size_of::<T>(),
                len,
                bytes,
                watch: Watch::new::<T>(name, len),
            });
        }
        let Some(s) = slots[slot].as_mut() else {
            unreachable!("slot {slot} was created above")
        };
        assert!(
            s.elem_size == size_of::<T>() && s.len == len && s.bytes == bytes,
            "shared slot {slot} created as {} x {} bytes in {}, used as {len} x {} bytes in {bytes}",
            s.len,
            s.elem_size,
            s.bytes,
            size_of::<T>()
        );
        // Vec::as_mut_ptr does not reborrow the buffer, so pointers handed out earlier
        // stay valid; the buffer never moves or shrinks while the lane runs, nor does the
        // watch's (a slot is never replaced).
        (s.store.as_mut_ptr().cast(), &s.watch)
    }

    /// Readies the block state for the next block, whose thread 0 is thread `block_tid`
    /// of the grid: shared arrays zeroed.
    ///
    /// Only call while no thread of the previous block can run any more.
    fn reset(&self, block_tid: u64) {
        for s in self.shared.borrow_mut().iter_mut().flatten() {
            s.store.fill(Chunk([0; 16]));
        }
        self.clock.start_block(block_tid);
    }
}

/// How a lane runs the threads of one block.
trait Strategy {
    /// Whether the body has barriers (which order a block's writes to global memory).
    const BARRIERS: bool;

    /// Runs every thread of the block whose thread 0 is `ctx`, keeping in `current` the
    /// id of the thread running (for errors).
    fn run_block(
        &self,
        run: &Run,
        ctx: ThreadCtx<'_>,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError>;
}

/// [`run_grid`]'s strategy: one call of the body per thread.
struct Loops<'f, F>(&'f F);

impl<F: Fn(&ThreadCtx)> Strategy for Loops<'_, F> {
    const BARRIERS: bool = false;

    fn run_block(
        &self,
        run: &Run,
        mut ctx: ThreadCtx<'_>,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError> {
        for (t, &thread_idx) in run.thread_idx.iter().enumerate() {
            ctx.set_thread(t, thread_idx);
            current.set(t);
            (self.0)(&ctx);
        }
        run.finished(ctx.block)
    }
}

/// The threads of one block, for a body with barriers (see [`run_grid_blocks`]): the code
/// `detour!` generates runs each stretch of the body between barriers as a loop over the
/// threads present there (a mask), taking each thread's context from
/// [`thread`](Self::thread), and meets the block's barriers through [`sync`](Self::sync).
/// A block's threads run one after another on one OS thread, so they share its memory
/// without data races.
///
/// ```
/// use parray_runtime::exec::emulate::run_grid_blocks;
/// use parray_runtime::exec::CudaGrid;
/// use parray_runtime::{Access, AccessMut};
///
/// // Each thread reads its neighbour's value after a barrier.
/// run_grid_blocks("rotate", CudaGrid::new([2, 1, 1], [4, 1, 1]), |b| {
///     let n = b.len();
///     let s = b.shared_ptr::<u32>(0, n, "S", false);
///     let present = vec![true; n];
///     for t in 0..n {
///         let ctx = b.thread(t);
///         s.store(t, ctx.global_id() as u32);
///     }
///     if !b.sync(line!(), &present) {
///         return;
///     }
///     for t in 0..n {
///         let ctx = b.thread(t);
///         assert_eq!(s.load((t + 1) % n), (ctx.block_id() * n + (t + 1) % n) as u32);
///     }
/// })
/// .unwrap();
/// ```
pub struct BlockThreads<'a> {
    /// Thread 0 of the block.
    first: ThreadCtx<'a>,
    run: &'a Run,
    current: &'a Cell<usize>,
    /// The first barrier the threads did not meet at: (line, waiting, left).
    diverged: Cell<Option<(u32, usize, usize)>>,
    /// The messages of the waits found pending in the last poll, for a deadlock's report.
    blocked: RefCell<Vec<String>>,
}

impl<'a> BlockThreads<'a> {
    /// Threads per block.
    #[inline]
    pub fn len(&self) -> usize {
        self.run.thread_idx.len()
    }

    /// Whether the block has no thread (never: CUDA blocks have one at least).
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The context of thread `t` of the block, which runs next: until another thread's
    /// context is taken, a panic is reported as this thread's.
    ///
    /// # Panics
    /// If `t` is not below [`len`](Self::len).
    #[inline]
    pub fn thread(&self, t: usize) -> ThreadCtx<'a> {
        let ctx = ThreadCtx {
            thread_id: t,
            thread_idx: self.run.thread_idx[t],
            ..self.first
        };
        self.current.set(t);
        self.first.block.clock.run(t);
        ctx
    }

    /// As [`ThreadCtx::shared_ptr`]: the block's shared array `slot`.
    #[track_caller]
    pub fn shared_ptr<T: Element>(
        &self,
        slot: usize,
        len: usize,
        name: &'static str,
        soa: bool,
    ) -> PtrMut<'_, T> {
        self.first.shared_ptr(slot, len, name, soa)
    }

    /// `#sync` at line `line`: `present[t]` says whether thread `t` reached it. Every
    /// thread must (or none, when all have left): otherwise the barrier is recorded as
    /// diverged (the first such barrier of the block is the one reported) and `false`
    /// returned, and the body must return at once; the launch then fails with
    /// [`EmulateError::DivergentSync`].
    ///
    /// # Panics
    /// If `present` does not have one entry per thread of the block.
    #[must_use = "the body must return when a barrier diverged"]
    pub fn sync(&self, line: u32, present: &[bool]) -> bool {
        assert_eq!(
            present.len(),
            self.len(),
            "a #sync's mask must have one entry per thread of the block"
        );
        let waiting = present.iter().position(|p| *p);
        let left = present.iter().position(|p| !*p);
        match (waiting, left) {
            (Some(w), Some(l)) => {
                if self.diverged.get().is_none() {
                    self.diverged.set(Some((line, w, l)));
                }
                false
            }
            _ => {
                self.first.block.clock.barrier();
                true
            }
        }
    }
}

impl BlockThreads<'_> {
    /// The end of a run of `#mma async` at line `line` (SPEC 3.5, "Asynchronous"): each
    /// warpgroup with threads present (`present`) commits its wgmmas since its last commit
    /// as one group.
    ///
    /// # Panics
    /// When some but not all threads of a warpgroup are present.
    #[track_caller]
    pub fn wgmma_commit(&self, present: &[bool], line: u32) {
        let group = parray_compiler::mma::WARPGROUP as usize;
        for first in whole_groups(present, group, "#mma async", "a wgmma.commit_group", line) {
            self.first.block.clock.wgmmas.commit(first / group);
        }
    }

    /// `#setmaxnreg` at line `line` (SPEC 3.9, "Roles"): a warpgroup's register budget,
    /// which the emulation has no use for; each warpgroup with threads present (`present`)
    /// must be there whole, as the 128 execute `setmaxnreg` together.
    ///
    /// # Panics
    /// When some but not all threads of a warpgroup are present.
    #[track_caller]
    pub fn setmaxnreg(&self, present: &[bool], line: u32) {
        let group = parray_compiler::mma::WARPGROUP as usize;
        whole_groups(present, group, "#setmaxnreg", "a setmaxnreg", line);
    }

    /// `#mma wait groups` at line `line`: each warpgroup with threads present
    /// (`present`) waits until at most `groups` of its groups are in flight. The
    /// emulation computed them where they were issued; what is complete is what may now
    /// be written (the warpgroup's threads at once, the others after a barrier).
    ///
    /// # Panics
    /// When some but not all threads of a warpgroup are present (the 128 execute
    /// `wgmma.wait_group` together).
    #[track_caller]
    pub fn wgmma_wait(&self, present: &[bool], groups: u32, line: u32) {
        let group = parray_compiler::mma::WARPGROUP as usize;
        let at = std::panic::Location::caller();
        for first in whole_groups(present, group, "#mma wait", "a wgmma.wait_group", line) {
            self.first
                .block
                .clock
                .wgmmas
                .wait(first / group, groups, at);
        }
    }
}

impl BlockThreads<'_> {
    /// `#wait B(b) parity P;` at line `line` (SPEC 3.9, "TMA copies"), a statement of the
    /// block's threads at once: each present thread (`present`) waits on its barrier
    /// `bars[t]` for the phase of parity `parities[t]`, as the mbarrier model says; the
    /// first wait that observes a phase lands the TMA copies completing on it. While a
    /// thread's phase cannot complete the wait is pending, and the other branch of a role
    /// `if` runs ([`join`]); where nothing else can run, [`run_block`] reports the
    /// deadlock with what each waiting branch's phase lacks. A wait whose parity skips a
    /// phase is the waiting thread's panic with the model's message. A wait orders the
    /// copies' writes and what came before the arrivals before what every thread does
    /// next (the race detector's barrier: it counts intervals between barriers, so it
    /// misses a race between two threads that only an mbarrier's phase separates).
    ///
    /// # Panics
    /// As above; or if `present`, `bars` and `parities` do not have one entry per thread.
    #[track_caller]
    pub fn mbarrier_wait<'w>(
        &'w self,
        present: &'w [bool],
        bars: &'w [Option<PtrMut<'_, crate::mem::elem::Mbarrier>>],
        parities: &'w [u32],
        line: u32,
    ) -> impl std::future::Future<Output = ()> + 'w {
        let at = std::panic::Location::caller();
        let mut waiting: Vec<bool> = present.to_vec();
        std::future::poll_fn(move |_| {
            for t in 0..self.len() {
                if !waiting[t] {
                    continue;
                }
                match self.observe(t, bars, parities, line) {
                    Some(phase) => {
                        waiting[t] = false;
                        self.first.block.clock.progressed();
                        // Phase -1 (a fresh barrier's parity 1) has no copies.
                        if let (Ok(phase), Some(bar)) = (u64::try_from(phase), &bars[t]) {
                            let key = bar.host_address().addr();
                            self.first.block.clock.copies.land_phase(key, phase, at);
                        }
                    }
                    None => return std::task::Poll::Pending,
                }
            }
            // What completed the phases (arrivals, copies) comes before what the waiting
            // threads do next: an interval of the race detector ends here, for every
            // thread (it counts intervals, not pairs of threads).
            if present.iter().any(|p| *p) {
                self.first.block.clock.barrier();
            }
            std::task::Poll::Ready(())
        })
    }

    /// The phase thread `t`'s wait observes, or `None` (its message kept for the deadlock
    /// report) where that phase cannot complete yet.
    #[track_caller]
    fn observe(
        &self,
        t: usize,
        bars: &[Option<PtrMut<'_, crate::mem::elem::Mbarrier>>],
        parities: &[u32],
        line: u32,
    ) -> Option<i64> {
        let _ctx = self.thread(t);
        let Some(bar) = &bars[t] else {
            return Some(-1);
        };
        let clock = &self.first.block.clock;
        let key = bar.host_address().addr();
        let mut barriers = clock.mbarriers.borrow_mut();
        let Some((b, observers)) = barriers.get_mut(&key) else {
            drop(barriers);
            panic!("`#wait` at line {line} on element {} of {}, which no `#mbarrier init` initialised: initialise each barrier once (one thread, before a `#sync`)", bar.offset(), bar.type_name());
        };
        match observers.entry(t).or_default().wait(b, parities[t]) {
            Ok(Some(phase)) => Some(phase),
            Ok(None) => {
                let blocked = format!(
                    "`#wait` at line {line}: thread {t} of the block waits for phase {} of element {} of {} (parity {}), which cannot complete: {}, and no thread of the block can run on to arrive (a producer and its consumers must be the two branches of one `if`, which the emulation interleaves; on a GPU this is a deadlock)",
                    b.phase(),
                    bar.offset(),
                    bar.type_name(),
                    parities[t],
                    b.missing()
                );
                drop(barriers);
                self.blocked.borrow_mut().push(blocked);
                None
            }
            Err(e) => {
                drop(barriers);
                panic!(
                    "`#wait` at line {line} on element {} of {}: {e}",
                    bar.offset(),
                    bar.type_name()
                )
            }
        }
    }

    /// Whether a `#sync` of the block diverged: the body stops (each branch of a role
    /// `if` returns, and the body after them).
    pub fn failed(&self) -> bool {
        self.diverged.get().is_some()
    }
}

/// Runs a block's body (a cuda body with barriers, written as a future by `detour!`):
/// polled until it completes; while it is pending and its last poll changed no mbarrier
/// and passed no wait, every branch waits for a phase that nothing can complete, and
/// that deadlock is the last waiting thread's panic (SPEC 3.9, "TMA copies").
///
/// # Panics
/// On that deadlock, with each waiting branch's message.
pub fn run_block(block: &BlockThreads<'_>, body: impl std::future::Future<Output = ()>) {
    let mut body = std::pin::pin!(body);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        let before = block.first.block.clock.progress.get();
        block.blocked.borrow_mut().clear();
        if body.as_mut().poll(&mut cx).is_ready() {
            return;
        }
        if block.first.block.clock.progress.get() == before {
            let message = block.blocked.take().join("; and ");
            panic!("{message}");
        }
    }
}

/// The two branches of a role `if` of `block` (SPEC 3.9, "Roles"), interleaved: each runs
/// until it completes or waits for a phase the other must complete, in turn. Where a
/// branch stopped the body (a diverged `#sync`), the other is not run on: it would wait
/// for what the stopped one no longer does, and that is not the error to report.
pub async fn join(
    block: &BlockThreads<'_>,
    then: impl std::future::Future<Output = ()>,
    els: impl std::future::Future<Output = ()>,
) {
    let (mut then, mut els) = (std::pin::pin!(then), std::pin::pin!(els));
    let (mut then_done, mut els_done) = (false, false);
    std::future::poll_fn(|cx| {
        if !then_done {
            then_done = then.as_mut().poll(cx).is_ready();
        }
        if !els_done && !block.failed() {
            els_done = els.as_mut().poll(cx).is_ready();
        }
        match (then_done && els_done) || block.failed() {
            true => std::task::Poll::Ready(()),
            false => std::task::Poll::Pending,
        }
    })
    .await
}

/// A TMA copy's moves under the emulation (SPEC 3.9, "TMA copies"): for every box
/// coordinate of the map `dims` (innermost first, `(box, stride)` in elements) with the
/// swizzle of `swizzle_bits` (CuTe's B), the global element `off + stride . c` of `src`
/// goes to the shared element the box fill writes, past `dst` (the planner's
/// post-condition: these are element k of the two types, for every k). A box that crosses
/// the tensor's extent over the `src` array writes zeros past it, as TMA does, where the
/// map's source covers past its data (`zero_fill`, a tile at the data's edge); otherwise
/// the types read on where TMA fills zeros, and it is the thread's panic naming `decl`.
#[track_caller]
pub fn tma_move<T: Element>(
    src: &impl Access<T>,
    (off, len): (usize, usize),
    dst: &PtrMut<'_, T>,
    map: &crate::exec::launch::TmaMap,
    decl: &str,
) {
    use parray_layout::Swizzle;
    let plan = map.plan(size_of::<T>() as u64);
    let swizzle = plan.swizzle;
    // The kernel's shared arrays are aligned to the box's alignment (or more), so an
    // offset into one is aligned where the GPU's address is.
    let align = swizzle.atom_bytes();
    let at = dst.offset() as u64 * plan.elem_bytes;
    if !at.is_multiple_of(align) {
        panic!("the TMA copy of `{decl}` writes its box at byte {at} of {}, and TMA writes a box at a multiple of {align} bytes{}: place the stage at such an offset", dst.type_name(), match swizzle {
            Swizzle::None => String::new(),
            _ => format!(" (the {}-byte swizzle's pattern repeats every {align})", swizzle.span().unwrap_or(0)),
        })
    }
    let crossing = plan.crossing(off as u64, len as u64);
    if let Some((dim, at, extent)) = crossing.filter(|_| !plan.zero_fill) {
        panic!("the TMA copy of `{decl}` at element {off} of its array crosses the tensor's extent: its box starts at coordinate {at} of dimension {dim}, whose extent is {extent} over the array's {len} elements, and TMA fills what lies past it with zeros where `{decl}` reads on: place the tile so that its box lies inside the array, or cover the data with pieces counted by `ceil` (SPEC 2.4), whose edge tiles read TMA's zeros")
    }
    // Where the box crosses, each coordinate is checked against its dimension's extent.
    let (start, extents) = match crossing {
        Some(_) => (plan.coordinates(off as u64), plan.extents(len as u64)),
        None => (Vec::new(), Vec::new()),
    };
    let mut c = vec![0u64; plan.dims.len()];
    loop {
        let e = (plan.smem_byte(&c) / plan.elem_bytes) as usize;
        let outside = (0..extents.len()).any(|i| start[i] + c[i] >= extents[i]);
        match outside {
            // TMA copies numbers (the front end refuses records), whose default is zero.
            true => dst.store(e, T::default()),
            false => dst.store(e, src.load(off + plan.global_offset(&c) as usize)),
        }
        let mut i = 0;
        loop {
            if i == c.len() {
                return;
            }
            c[i] += 1;
            if c[i] < plan.dims[i].box_size {
                break;
            }
            c[i] = 0;
            i += 1;
        }
    }
}

/// [`run_grid_blocks`]' strategy: the body once per block.
struct Blocks<'f, F>(&'f F);

impl<F: Fn(&BlockThreads)> Strategy for Blocks<'_, F> {
    const BARRIERS: bool = true;

    fn run_block(
        &self,
        run: &Run,
        ctx: ThreadCtx<'_>,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError> {
        let block_id = ctx.block_id;
        // Until the body takes a thread's context, a panic is thread 0's.
        current.set(0);
        let threads = BlockThreads {
            first: ctx,
            run,
            current,
            diverged: Cell::new(None),
            blocked: RefCell::new(Vec::new()),
        };
        (self.0)(&threads);
        match threads.diverged.take() {
            Some((line, w, l)) => Err(run.diverged(block_id, line, w, l, None)),
            None => run.finished(threads.first.block),
        }
    }
}

/// One launch: the grid, the blocks left to run, the first failure.
struct Run {
    kernel: &'static str,
    grid: CudaGrid,
    blocks: u64,
    /// `threadIdx` of each thread id of a block, from the one mapping, once per launch.
    thread_idx: Vec<Dim3>,
    lanes: usize,
    /// The first block no lane has taken, and how many blocks a lane takes at once.
    next: AtomicU64,
    chunk: u64,
    /// Set when a thread failed: lanes take no more blocks.
    stop: AtomicBool,
    error: Mutex<Option<EmulateError>>,
    /// The race detector's watch of the launch's writes to global memory (debug builds).
    writes: Option<Arc<Writes>>,
}

impl Run {
    /// Checks the shape as CUDA would, and plans the lanes.
    fn new(kernel: &'static str, grid: CudaGrid) -> Result<Run, EmulateError> {
        let invalid = |reason| EmulateError::InvalidShape {
            kernel,
            shape: grid,
            reason,
        };
        grid.fits(0, &parray_layout::grid::CUDA).map_err(invalid)?;
        let (blocks, block_threads) = (grid.num_blocks(), grid.block_threads());
        let numbered = blocks
            .checked_mul(block_threads)
            .is_some_and(|n| usize::try_from(n).is_ok());
        if !numbered {
            return Err(invalid(format!(
                "{blocks} x {block_threads} threads are more than a usize numbers"
            )));
        }
        // Chunks cover about 4096 threads, so that tiny blocks do not contend on the
        // counter, yet leave at least 8 chunks per lane for balance.
        let lanes = (cores() as u64).min(blocks);
        let chunk = 4096u64
            .div_ceil(block_threads)
            .min(blocks / (lanes * 8))
            .max(1);
        Ok(Run {
            kernel,
            grid,
            blocks,
            thread_idx: (0..block_threads)
                .map(|t| grid.thread_idx(t).into())
                .collect(),
            // At most the cores, a usize.
            lanes: lanes as usize,
            next: AtomicU64::new(0),
            chunk,
            stop: AtomicBool::new(false),
            error: Mutex::new(None),
            writes: Writes::new(blocks * block_threads, block_threads),
        })
    }

    /// Runs every block on the lanes (the calling thread is one) with `strategy`, and
    /// returns the first failure.
    fn execute(self, strategy: impl Strategy + Sync) -> Result<(), EmulateError> {
        let lane = || self.lane(&strategy);
        thread::scope(|s| {
            for _ in 1..self.lanes {
                // A lane the OS refuses to start is no loss: the others take its blocks.
                let _ = thread::Builder::new().spawn_scoped(s, lane);
            }
            lane();
        });
        match self.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// One lane: takes chunks of blocks until none is left, running each with `strategy`.
    fn lane<S: Strategy>(&self, strategy: &S) {
        let block = Block::default();
        let _lane = block.clock.enter(self.writes.clone(), S::BARRIERS);
        let (block_id, thread_id) = (Cell::new(0), Cell::new(0));
        let result = panics::catch(|| {
            while let Some(ids) = self.take() {
                for b in ids {
                    block_id.set(b);
                    let block_tid = self.grid.tid(b as u64, 0);
                    block.reset(block_tid);
                    let ctx = ThreadCtx {
                        grid: self.grid,
                        block_idx: self.grid.block_idx(b as u64).into(),
                        thread_idx: self.thread_idx[0],
                        block_id: b,
                        thread_id: 0,
                        // Exact: `new` checked that every tid of the grid fits in a usize.
                        block_tid: block_tid as usize,
                        block: &block,
                    };
                    strategy.run_block(self, ctx, &thread_id)?;
                }
            }
            Ok(())
        });
        let err = match result {
            Ok(Ok(())) => return,
            Ok(Err(e)) => e,
            Err(caught) => {
                let panic = match caught {
                    Caught::Panicked(p) => p,
                    // Only a pthd `#sync` unwinds quietly: one that an emulated body called
                    // on an enclosing pthd array that failed.
                    Caught::Quiet => panics::Panic {
                        message: "left by the failure of an enclosing pthd array".into(),
                        at: None,
                    },
                };
                EmulateError::Panicked {
                    kernel: self.kernel,
                    thread: self.thread(block_id.get(), thread_id.get()),
                    at: panic.at,
                    message: panic.message,
                }
            }
        };
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(err);
        self.stop.store(true, Ordering::Relaxed);
    }

    /// The next chunk of block ids for a lane; `None` once all are taken or a thread failed.
    fn take(&self) -> Option<Range<usize>> {
        if self.stop.load(Ordering::Relaxed) {
            return None;
        }
        // No overflow: the counter ends below `blocks` (< 2^63) plus a chunk per lane.
        let first = self.next.fetch_add(self.chunk, Ordering::Relaxed);
        // Block ids fit in a usize (checked in `new`).
        (first < self.blocks).then(|| first as usize..self.blocks.min(first + self.chunk) as usize)
    }

    /// Thread `thread_id` of block `block_id`, as errors name it.
    fn thread(&self, block_id: usize, thread_id: usize) -> ThreadId {
        ThreadId::cuda(&self.grid, block_id as u64, thread_id as u64)
    }

    /// The block's threads have all ended: a `#copy async` still in flight (SPEC 3.9: a
    /// body waits for its copies), else the first race the block ran into.
    fn finished(&self, block: &Block) -> Result<(), EmulateError> {
        let threads = self.grid.block_threads();
        if let Some((warpgroup, at)) = block.clock.wgmmas.left() {
            let first = warpgroup * parray_compiler::mma::WARPGROUP as usize;
            return Err(EmulateError::Panicked {
                kernel: self.kernel,
                thread: ThreadId::cuda(&self.grid, block.clock.tid() / threads, first as u64),
                at: Some(format!("{}:{}", at.file(), at.line())),
                message: format!(
                    "warpgroup {warpgroup}'s asynchronous `#mma` is still in flight where its body ends: add `#mma wait 0 D(d);` before the end"
                ),
            });
        }
        let Some((tid, at, array, element, phase)) = block.clock.copies.left() else {
            return self.raced(block);
        };
        let message = match phase {
            Some(p) => format!(
                "its TMA copy of element {element} of {array} is still in flight where its body ends (no wait observed phase {p} of its mbarrier): add `#wait B(b) parity {};` on the copy's barrier before the end",
                p % 2
            ),
            None => format!(
                "its `#copy async` of element {element} of {array} is still in flight where its body ends: add `#wait 0;` before the end"
            ),
        };
        Err(EmulateError::Panicked {
            kernel: self.kernel,
            thread: ThreadId::cuda(&self.grid, tid / threads, tid % threads),
            at: Some(format!("{}:{}", at.file(), at.line())),
            message,
        })
    }

    /// The first race the block ran into, if any (debug builds watch shared and global
    /// memory: `mem::watch`).
    fn raced(&self, block: &Block) -> Result<(), EmulateError> {
        let Some(race) = block.clock.take_race() else {
            return Ok(());
        };
        let threads = self.grid.block_threads();
        let access = |a: watch::Access| {
            Box::new(RaceAccess {
                thread: ThreadId::cuda(&self.grid, a.thread / threads, a.thread % threads),
                write: a.write,
                at: format!("{}:{}", a.at.file(), a.at.line()),
            })
        };
        Err(EmulateError::Race {
            kernel: self.kernel,
            memory: race.memory,
            array: race.array,
            element: race.element,
            first: access(race.first),
            second: access(race.second),
        })
    }

    /// Threads `waiting` and `left` of block `block_id` did not meet at the barrier at
    /// `line`.
    #[cold]
    fn diverged(
        &self,
        block_id: usize,
        line: u32,
        waiting: usize,
        left: usize,
        other_line: Option<u32>,
    ) -> EmulateError {
        EmulateError::DivergentSync {
            kernel: self.kernel,
            line,
            waiting: self.thread(block_id, waiting),
            left: self.thread(block_id, left),
            other_line,
        }
    }
}

/// Cores to use, computed once (the query reads cgroup files on Linux).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `body` once for every thread of the grid `shape`, as the CUDA kernel `kernel`
/// would, and returns when all are done. For bodies without `#sync`.
///
/// # Errors
/// [`EmulateError::InvalidShape`] for a configuration CUDA would refuse,
/// [`EmulateError::Panicked`] if a thread panicked (the remaining blocks are skipped).
pub fn run_grid<F>(kernel: &'static str, shape: CudaGrid, body: F) -> Result<(), EmulateError>
where
    F: Fn(&ThreadCtx) + Sync,
{
    Run::new(kernel, shape)?.execute(Loops(&body))
}

/// Runs `body` once for every block of the grid `shape`, as the CUDA kernel `kernel`
/// would, for a body with barriers: `body` runs the block's threads itself, stretch by
/// stretch between barriers (see [`BlockThreads`]), which keeps the plain loops of
/// [`run_grid`] (and the CPU's overlap of one thread's memory accesses with the next's)
/// between barriers.
///
/// # Errors
/// As [`run_grid`], and [`EmulateError::DivergentSync`] for a barrier not every thread of
/// a block reached.
pub fn run_grid_blocks<F>(
    kernel: &'static str,
    shape: CudaGrid,
    body: F,
) -> Result<(), EmulateError>
where
    F: Fn(&BlockThreads) + Sync,
{
    Run::new(kernel, shape)?.execute(Blocks(&body))
}

/// `shfl_down(value, delta)` of an emulated cuda body, for thread `t` of its block: the
/// block's threads present at the shuffle are `present`, and `values` and `deltas` hold
/// each one's operands. The value of the lane `deltas[t] % 32` above `t`'s in its warp of
/// [`WARP`](parray_compiler::ir::WARP) threads, or `t`'s own where that lane is past the
/// warp, as CUDA's `__shfl_down_sync` (measured on an H100: a delta of 40 reads 8 lanes up).
///
/// # Panics
/// When a lane of `t`'s warp is not present (it left the body or took another branch), or
/// the block's last warp is short: the lanes of a warp execute a shuffle together, and on a
/// GPU a shuffle without all of them is undefined.
#[track_caller]
pub fn shfl_down<T: Copy>(present: &[bool], values: &[T], deltas: &[u32], t: usize) -> T {
    let warp = parray_compiler::ir::WARP as usize;
    let first = t - t % warp;
    if let Some(lane) = (first..first + warp).find(|&l| !present.get(l).copied().unwrap_or(false)) {
        if lane >= present.len() {
            panic!(
                "parray: shfl_down in a block of {} threads, whose last warp has {} lanes: a \
                 shuffle needs all {warp} lanes of its warp (make the block a multiple of {warp} threads)",
                present.len(),
                present.len() - first
            );
        }
        panic!(
            "parray: shfl_down: lane {} of this warp (thread {lane} of the block) did not reach \
             it: the {warp} lanes of a warp execute a shuffle together",
            lane - first
        );
    }
    // The hardware reads the low 5 bits of the delta.
    match t - first + deltas[t] as usize % warp {
        src if src < warp => values[first + src],
        _ => values[t],
    }
}

/// The first thread of each warp of a block with threads present (`present`) at a warp
/// collective of an emulated cuda body, the form `form` at `line` (`#mma`, or a `#copy`
/// that is an `ldmatrix` or `stmatrix`), the hardware's `instruction`.
///
/// # Panics
/// When some but not all lanes of a warp are present, or the block's last warp is short:
/// the 32 lanes of a warp execute the instruction together (on a GPU, without all of them
/// it is undefined).
#[track_caller]
pub fn whole_warps(present: &[bool], form: &str, instruction: &str, line: u32) -> Vec<usize> {
    whole_groups(
        present,
        parray_compiler::ir::WARP as usize,
        form,
        instruction,
        line,
    )
}

/// [`whole_warps`] for groups of `size` threads (32, a warp; 128, a warpgroup).
#[track_caller]
fn whole_groups(
    present: &[bool],
    size: usize,
    form: &str,
    instruction: &str,
    line: u32,
) -> Vec<usize> {
    let (group, member) = match size {
        32 => ("warp", "lane"),
        _ => ("warpgroup", "thread"),
    };
    let mut firsts = Vec::new();
    for first in (0..present.len()).step_by(size) {
        let lanes = first..(first + size).min(present.len());
        if !present[lanes].contains(&true) {
            continue;
        }
        if let Some(lane) =
            (first..first + size).find(|&l| !present.get(l).copied().unwrap_or(false))
        {
            if lane >= present.len() {
                panic!(
                    "parray: {form} at line {line} in a block of {} threads, whose last {group} has \
                     {} {member}s: the {size} {member}s of a {group} execute it together",
                    present.len(),
                    present.len() - first
                );
            }
            panic!(
                "parray: {form} at line {line}: {member} {} of this {group} (thread {lane} of the \
                 block) did not reach it: the {size} {member}s of a {group} execute {instruction} \
                 together",
                lane - first
            );
        }
        firsts.push(first);
    }
    firsts
}

/// `#mma D(d) += A(a) * B(b)` (`mma.sync.aligned.m16n8k16.row.col`) of an emulated cuda
/// body at line `line`, for the block's threads present there (`present`): `a`, `b` and
/// `d` hold each thread's registers of the A, B and C/D fragments, in the PTX ISA's order
/// ([`mma_isa`]). Each warp whose lanes are there gathers its lanes' registers into A (16
/// x 16), B (16 x 8) and C = D (16 x 8) and computes `d[m][n] = c[m][n] + sum_k a[m][k] *
/// b[k][n]` in `f64`: each product of two halves is exact (at most 22 significant bits),
/// added in the order c, k = 0, 1, .., 15, and the sum is rounded once to `f32` (exact for
/// all but sums of terms more than 2^31 apart in magnitude). A tensor core's sum is the
/// same within the tolerance SPEC 3.5 ("MMA") states.
///
/// # Panics
/// When some but not all lanes of a warp are present, or the block's last warp is short:
/// the 32 lanes of a warp execute an `mma.sync` together (on a GPU, without all of them it
/// is undefined).
#[track_caller]
pub fn mma_m16n8k16<T, SA, SB, SD>(
    present: &[bool],
    a: &[Registers<T, SA>],
    b: &[Registers<T, SB>],
    d: &[Registers<f32, SD>],
    line: u32,
) where
    T: Element + Into<f64>,
    SA: Cells<T>,
    SB: Cells<T>,
    SD: Cells<f32>,
{
    use parray_compiler::ir::{mma_isa, MMA_K, MMA_M, MMA_N};
    for first in whole_warps(present, "#mma", "an mma.sync", line) {
        let am: [[f64; MMA_K]; MMA_M] = std::array::from_fn(|m| {
            std::array::from_fn(|k| {
                let (l, v) = mma_isa::a(m, k);
                a[first + l].load(v).into()
            })
        });
        let bm: [[f64; MMA_N]; MMA_K] = std::array::from_fn(|k| {
            std::array::from_fn(|n| {
                let (l, v) = mma_isa::b(k, n);
                b[first + l].load(v).into()
            })
        });
        for (m, row) in am.iter().enumerate() {
            for n in 0..MMA_N {
                let (l, v) = mma_isa::c(m, n);
                let c = f64::from(d[first + l].load(v));
                let sum = row.iter().zip(&bm).fold(c, |s, (x, b)| s + x * b[n]);
                d[first + l].store(v, sum as f32);
            }
        }
    }
}

/// `#mma D(d) += A(a) * B(b)` of shared tiles, a wgmma m64nNkK (N = `n`, K 32 bytes of
/// the element: 16 of `bf16` or `half`, 8 of `float`), of an emulated
/// cuda body at line `line`, for the block's threads present there (`present`): each
/// thread's pointers to A and B (`tiles`, the statement evaluated by each thread) and its
/// `n / 2` registers of D in the ISA's order ([`wgmma_isa`]). Each warpgroup reads A (64 x
/// K) and B (K x n) through their types (`offsets`, in elements from each pointer,
/// row-major; the build verified that the hardware's matrix descriptors, `descriptors`,
/// read the same elements from an aligned start) from its first thread's pointers, as the
/// hardware does from any start ([`Descriptor::read_byte`]: a K-major swizzled tile's
/// k-step within its atom's row reads the row further along), and computes D as
/// [`mma_m16n8k16`] does: products exact, summed in `f64` in the order c, k = 0, .., K - 1,
/// rounded once to `f32`; a `float` element is read as the tensor core reads tf32, its 13
/// low mantissa bits dropped ([`tf32`]). An `asynchronous` one (`#mma async`) is computed here too; in a
/// debug build its tiles are then noted as read until its group completes
/// ([`BlockThreads::wgmma_wait`]), and a write of them before is refused.
///
/// # Panics
/// When some but not all threads of a warpgroup are present, or the block's last one is
/// short (the 128 threads execute a wgmma together); when a tile's start is not one its
/// descriptor allows ([`Descriptor::start_allowed`]: the hardware's swizzle XORs absolute
/// address bits, so another start reads other elements than the type's); when a read is
/// out of the tile's array.
#[track_caller]
pub fn wgmma_m64nk<T, SD>(
    present: &[bool],
    tiles: [&[Option<PtrMut<'_, T>>]; 2],
    offsets: [&[u32]; 2],
    descriptors: [Descriptor; 2],
    d: &[Registers<f32, SD>],
    n: usize,
    (line, asynchronous): (u32, bool),
) where
    T: Element + Into<f64>,
    SD: Cells<f32>,
{
    use parray_compiler::ir::{wgmma_isa, WGMMA_M};
    let group = parray_compiler::mma::WARPGROUP as usize;
    let at = std::panic::Location::caller();
    let bytes = size_of::<T>();
    let k_elems = parray_compiler::mma::k_of(bytes as u64);
    for first in whole_groups(present, group, "#mma", "a wgmma", line) {
        let [a, b] = [0, 1].map(|i| {
            let p = tiles[i][first].expect("each present thread evaluated its pointers");
            let descriptor = &descriptors[i];
            let start = p.offset() * bytes;
            if !descriptor.start_allowed(start as u64) {
                let within = match descriptor.step_within_row() {
                    0 => String::new(),
                    step => format!(" (or up to {step} bytes past one, a k-step within its atom's first row)"),
                };
                panic!(
                    "parray: #mma at line {line}: {} starts {start} bytes into its shared array `{}`, \
                     not a multiple of {} bytes{within}: a wgmma's descriptor addresses 16-byte units and \
                     its swizzle acts on absolute address bits, so the tile must start where its \
                     type's pattern does",
                    ["A", "B"][i],
                    p.type_name(),
                    descriptor.alignment()
                );
            }
            // The elements read, from the pointer: at an aligned start the type's offsets.
            let read: Vec<u32> = offsets[i]
                .iter()
                .map(|&o| {
                    let byte = descriptor.read_byte(start as u64, u64::from(o) * bytes as u64);
                    // An allowed start reads at or past itself (its row first, then rows after).
                    let from_start = (byte as usize / bytes)
                        .checked_sub(p.offset())
                        .expect("an allowed start reads no element before itself");
                    u32::try_from(from_start).expect("a tile's elements are u32 offsets")
                })
                .collect();
            if asynchronous {
                p.raw().note_tile_read(first / group, &read, at);
            }
            read.iter()
                .map(|&o| {
                    let v: f64 = p.load(o as usize).into();
                    if bytes == 4 {
                        f64::from(tf32(v as f32))
                    } else {
                        v
                    }
                })
                .collect::<Vec<f64>>()
        });
        for m in 0..WGMMA_M {
            for col in 0..n {
                let (t, v) = wgmma_isa::d(m, col);
                let c = f64::from(d[first + t].load(v));
                let sum = (0..k_elems).fold(c, |s, k| s + a[m * k_elems + k] * b[k * n + col]);
                d[first + t].store(v, sum as f32);
            }
        }
    }
}

/// `x` as a tf32 wgmma reads it from an f32 in shared memory: its 13 low mantissa bits
/// dropped (the tensor core reads the upper 19 bits, a rounding toward zero).
pub fn tf32(x: f32) -> f32 {
    f32::from_bits(x.to_bits() & !0x1fff)
}

/// `R::create()` of an rmem type in a cuda body run on the CPU: one thread's register
/// array, accessed like an array through `Access`/`AccessMut` (checked). `S` holds its
/// elements: `[UnsafeCell<T>; N]` where the type's sizes are numbers (its length a
/// constant to rustc, [`Registers::new`]), `Box<[UnsafeCell<T>]>` where they are given at
/// run time ([`Registers::with_len`]).
pub struct Registers<T: Element, S: Cells<T>> {
    values: S,
    name: &'static str,
    elem: std::marker::PhantomData<T>,
}

/// The storage of a [`Registers`]: its elements, each writable through a shared reference
/// (one thread owns the array: `Registers` is not `Sync`).
pub trait Cells<T> {
    fn cells(&self) -> &[std::cell::UnsafeCell<T>];
}

impl<T, const N: usize> Cells<T> for [std::cell::UnsafeCell<T>; N] {
    #[inline(always)]
    fn cells(&self) -> &[std::cell::UnsafeCell<T>] {
        self
    }
}

impl<T> Cells<T> for Box<[std::cell::UnsafeCell<T>]> {
    #[inline(always)]
    fn cells(&self) -> &[std::cell::UnsafeCell<T>] {
        self
    }
}

impl<T: Element, const N: usize> Registers<T, [std::cell::UnsafeCell<T>; N]> {
    /// `N` elements, zero.
    #[inline]
    pub fn new(name: &'static str) -> Self {
        Registers {
            values: std::array::from_fn(|_| std::cell::UnsafeCell::new(T::default())),
            name,
            elem: std::marker::PhantomData,
        }
    }
}

impl<T: Element> Registers<T, Box<[std::cell::UnsafeCell<T>]>> {
    /// `len` elements, zero: an rmem type whose sizes are given at run time.
    pub fn with_len(len: usize, name: &'static str) -> Self {
        Registers {
            values: (0..len)
                .map(|_| std::cell::UnsafeCell::new(T::default()))
                .collect(),
            name,
            elem: std::marker::PhantomData,
        }
    }
}

impl<T: Element, S: Cells<T>> Registers<T, S> {
    /// Its number of elements.
    #[inline(always)]
    fn len(&self) -> usize {
        self.values.cells().len()
    }

    /// Its first element: `UnsafeCell<T>` has `T`'s layout, and the pointer, derived
    /// from the cells, may write them.
    #[inline(always)]
    fn base(&self) -> *mut T {
        std::cell::UnsafeCell::raw_get(self.values.cells().as_ptr())
    }

    /// The element `off`, checked like an array access.
    #[inline(always)]
    #[track_caller]
    fn at(&self, off: usize) -> *mut T {
        if off >= self.len() {
            Raw::new(
                self.base(),
                0,
                self.len(),
                self.name,
                MemKind::Rmem,
                None,
                false,
            )
            .at(off);
        }
        // SAFETY: `off < len`, inside the array.
        unsafe { self.base().add(off) }
    }

    /// Lane 0 of the vector `V` at `off`, checked like an array's (every lane inside, `off`
    /// a multiple of the lanes).
    #[inline(always)]
    #[track_caller]
    fn vector_at<V: Vector<Lane = T>>(&self, off: usize) -> *mut T {
        Raw::new(
            self.base(),
            0,
            self.len(),
            self.name,
            MemKind::Rmem,
            None,
            false,
        )
        .at_vector::<V>(off)
    }
}

impl<T: Element, S: Cells<T>> Access<T> for Registers<T, S> {
    #[inline(always)]
    #[track_caller]
    fn load(&self, off: usize) -> T {
        // SAFETY: an element of the array, which one thread owns (`Registers` is not
        // `Sync`) and no reference into which escapes.
        unsafe { *self.at(off) }
    }

    #[inline(always)]
    unsafe fn load_unchecked(&self, off: usize) -> T {
        #[cfg(debug_assertions)]
        if off >= self.len() {
            crate::mem::ptr::proved_out_of_bounds(off as u128, self.name, self.len());
        }
        // SAFETY: in bounds by the caller's contract; one owner as in `load`.
        unsafe { *self.base().add(off) }
    }

    #[inline(always)]
    #[track_caller]
    fn load_vector<V: Vector<Lane = T>>(&self, off: usize) -> V {
        let p = self.vector_at::<V>(off);
        // SAFETY: `vector_at` checked the lanes inside the array, which one thread owns.
        V::from_lanes(|i| unsafe { *p.add(i) })
    }
}

impl<T: Element, S: Cells<T>> AccessMut<T> for Registers<T, S> {
    #[track_caller]
    fn atomic_exch(&self, off: usize, v: T) -> T
    where
        T: AtomicSwap,
    {
        // SAFETY: an element that only this thread accesses, aligned as its type.
        unsafe { T::atomic_exch(self.at(off), v) }
    }

    #[track_caller]
    fn atomic_cas(&self, off: usize, compare: T, v: T) -> T
    where
        T: AtomicSwap,
    {
        // SAFETY: as in `atomic_exch`.
        unsafe { T::atomic_cas(self.at(off), compare, v) }
    }

    #[inline(always)]
    #[track_caller]
    fn store(&self, off: usize, v: T) {
        // SAFETY: as in `load`.
        unsafe { *self.at(off) = v }
    }

    #[inline(always)]
    unsafe fn store_unchecked(&self, off: usize, v: T) {
        #[cfg(debug_assertions)]
        if off >= self.len() {
            crate::mem::ptr::proved_out_of_bounds(off as u128, self.name, self.len());
        }
        // SAFETY: as in `load_unchecked`.
        unsafe { *self.base().add(off) = v }
    }

    #[track_caller]
    fn atomic_add(&self, off: usize, v: T) -> T
    where
        T: AtomicAdd,
    {
        let p = self.at(off);
        assert!(
            p.addr().is_multiple_of(T::ATOMIC_ALIGN),
            "parray: atomic_add on a register of {} that is not {}-byte aligned",
            self.name,
            T::ATOMIC_ALIGN
        );
        // SAFETY: an aligned element that only this thread accesses.
        unsafe { atomic_add(p, v) }
    }

    #[inline(always)]
    #[track_caller]
    fn store_vector<V: Vector<Lane = T>>(&self, off: usize, v: V) {
        let p = self.vector_at::<V>(off);
        for i in 0..V::LANES {
            // SAFETY: as in `load_vector`.
            unsafe { *p.add(i) = v.lane(i) }
        }
    }
}
