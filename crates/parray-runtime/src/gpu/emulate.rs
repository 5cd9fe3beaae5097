//! CPU emulation of a CUDA grid: runs a `cuda` thread array's detour where no GPU exists.
//!
//! The emulation gives the body what a CUDA kernel gets, and no more: every block and every
//! thread runs exactly once with its `blockIdx`/`threadIdx`, each block has its own
//! [shared memory](ThreadCtx::shared_ptr), the threads of a block meet at
//! [`ThreadCtx::barrier`] (`__syncthreads`, Parray's `#sync`), and [`atomic_add`] updates
//! memory like `atomicAdd`. Blocks run in no particular order, concurrently, as on a GPU.
//!
//! Blocks are spread over the cores ("lanes"); a lane runs one block at a time, all of its
//! threads on the lane's OS thread, so a block has no data races of its own:
//! - [`run_grid`], for a body without `#sync`, calls the body once per thread, in order: a
//!   thread costs a few nanoseconds on top of its body;
//! - [`run_grid_sync`], for a body with `#sync`, takes an `async` body in which each `#sync`
//!   is `ctx.barrier(LINE).await`: one stackless coroutine per thread. The lane polls the
//!   block's coroutines in thread order, round after round; a round ends with every thread
//!   waiting at a barrier (which opens if it is the same for all) or every thread finished
//!   (the block is done). Anything else is a `#sync` that not every thread reaches, where a
//!   GPU would hang or worse: it is reported at once as [`EmulateError::DivergentSync`].
//!
//! A panic in an emulated thread stops the remaining blocks and comes back as
//! [`EmulateError::Panicked`], with the place of the panic; nothing hangs.

use std::cell::{Cell, RefCell};
use std::fmt;
use std::future::Future;
use std::mem::{align_of, size_of};
use std::ops::Range;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::task::{Context, Poll, Waker};
use std::thread;

use parray_core::grid::CudaGrid;
use parray_core::MemKind;

use crate::elem::Element;
use crate::error::{divergence_message, panic_place, ThreadId};
use crate::panics::{self, Caught};
use crate::ptr::Ptr;

/// Most bytes of shared memory one block may create: the largest a current GPU grants
/// (227 KiB on Hopper, with the dynamic shared memory opt-in), so that no kernel the GPU
/// path can launch is refused here.
pub const MAX_SHARED_BYTES: usize = 227 * 1024;

/// A CUDA `dim3`: used both for sizes (grid, block) and for indices (blockIdx, threadIdx).
///
/// Named fields rather than `[u32; 3]` so generated code reads like CUDA (`.x`, `.y`,
/// `.z`). How indices flatten is `parray_core::grid::CudaGrid`'s business.
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

/// The launch configuration `<<<grid, block>>>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GridShape {
    pub grid: Dim3,
    pub block: Dim3,
}

impl GridShape {
    /// `<<<grid, block>>>`.
    pub fn new(grid: impl Into<Dim3>, block: impl Into<Dim3>) -> Self {
        GridShape {
            grid: grid.into(),
            block: block.into(),
        }
    }
}

impl From<GridShape> for CudaGrid {
    /// The shape as the one mapping of grids knows it (limits, flat ids).
    fn from(s: GridShape) -> Self {
        CudaGrid::new(s.grid.into(), s.block.into())
    }
}

impl fmt::Display for GridShape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<<<{}, {}>>>", self.grid, self.block)
    }
}

/// Why an emulated launch failed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EmulateError {
    /// The configuration is one CUDA would refuse to launch (or one with more threads
    /// than a `usize` numbers).
    #[error("kernel `{kernel}`: invalid launch configuration {shape}: {reason}")]
    InvalidShape {
        kernel: &'static str,
        shape: GridShape,
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
    /// Not every thread of a block reached the barrier at `line`: `left` finished while
    /// `waiting` waited there, or `left` waits at the barrier at `other_line`.
    #[error("kernel `{kernel}`: {}", divergence_message(None, *line, waiting, left, *other_line))]
    DivergentSync {
        kernel: &'static str,
        line: u32,
        waiting: ThreadId,
        left: ThreadId,
        other_line: Option<u32>,
    },
    /// A thread's body awaited something other than [`ThreadCtx::barrier`], which nothing
    /// in the emulation will ever complete.
    #[error("kernel `{kernel}`: {thread} awaited something other than a #sync")]
    Stalled {
        kernel: &'static str,
        thread: ThreadId,
    },
}

/// What one emulated thread sees: its indices, its block's shared memory and barrier.
///
/// No lifetime, so that an `async` body owns it (`move |ctx: ThreadCtx| async move {..}`);
/// not `Send`: a block's threads never leave their lane's OS thread. Registers are not
/// here: they are the body's ordinary locals.
pub struct ThreadCtx {
    grid: CudaGrid,
    block_idx: Dim3,
    thread_idx: Dim3,
    block_id: usize,
    thread_id: usize,
    /// The tid of the block's thread 0: a block's tids are consecutive (`CudaGrid::tid`).
    block_tid: usize,
    block: Rc<Block>,
}

impl ThreadCtx {
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

    /// `#sync` at line `line` of the detour's file, in a body run by [`run_grid_sync`]:
    /// `ctx.barrier(line).await` returns when every thread of the block waits at it.
    ///
    /// As in CUDA, every thread of a block must reach the same barriers in the same order;
    /// the emulator reports any other case as [`EmulateError::DivergentSync`].
    #[inline]
    pub fn barrier(&self, line: u32) -> SyncWait<'_> {
        self.block.barrier(line)
    }

    /// `S::create()` of an smem type: the block's shared array number `slot` (each
    /// `create` in a body has its own compile-time slot) of `len` elements, as a `Ptr` of
    /// `MemKind::Smem` named `name`.
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
    pub fn shared_ptr<T: Element>(&self, slot: usize, len: usize, name: &'static str) -> Ptr<T> {
        self.block.shared_ptr(slot, len, name)
    }

    /// What the thread's coroutine keeps of this context across its barriers: the block.
    #[inline]
    pub fn into_block(self) -> BlockCtx {
        BlockCtx(self.block)
    }

    /// This block's thread `thread_id`, whose `threadIdx` is `thread_idx`.
    fn set_thread(&mut self, thread_id: usize, thread_idx: Dim3) {
        self.thread_id = thread_id;
        self.thread_idx = thread_idx;
    }

    /// A context for another thread of the same block.
    fn for_thread(&self, thread_id: usize, thread_idx: Dim3) -> ThreadCtx {
        let mut ctx = ThreadCtx {
            block: self.block.clone(),
            ..*self
        };
        ctx.set_thread(thread_id, thread_idx);
        ctx
    }
}

/// The part of a [`ThreadCtx`] a body with barriers keeps across them: its block's
/// barrier and shared arrays, one pointer wide, so that the futures of a block's threads
/// stay small enough to stay in cache between rounds.
#[derive(Clone)]
pub struct BlockCtx(Rc<Block>);

impl BlockCtx {
    /// As [`ThreadCtx::barrier`].
    #[inline]
    pub fn barrier(&self, line: u32) -> SyncWait<'_> {
        self.0.barrier(line)
    }

    /// As [`ThreadCtx::shared_ptr`].
    #[track_caller]
    pub fn shared_ptr<T: Element>(&self, slot: usize, len: usize, name: &'static str) -> Ptr<T> {
        self.0.shared_ptr(slot, len, name)
    }
}

/// The future of [`ThreadCtx::barrier`]: pending once, at the barrier, then ready when
/// the emulator has opened it.
#[must_use = "a barrier does nothing unless awaited"]
pub struct SyncWait<'a> {
    block: &'a Block,
    line: u32,
    /// The barrier phase in which this thread arrived.
    arrived_in: Option<u32>,
}

impl Future for SyncWait<'_> {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
        let phase = self.block.phase.get();
        if self.arrived_in.is_some_and(|arrived| arrived != phase) {
            return Poll::Ready(());
        }
        self.arrived_in = Some(phase);
        self.block.arrived.set(Some(self.line));
        Poll::Pending
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
}

/// The state of the block a lane is running, shared by the block's threads.
///
/// Kept for the lane's next blocks: shared storage is created on first use and zeroed
/// between blocks.
#[derive(Default)]
struct Block {
    /// Shared arrays by slot.
    shared: RefCell<Vec<Option<Slot>>>,
    /// The line of the barrier at which the thread just polled waits (set by its
    /// [`SyncWait`], taken by the lane).
    arrived: Cell<Option<u32>>,
    /// Incremented (wrapping) each time the lane opens the barrier.
    phase: Cell<u32>,
}

impl Block {
    #[inline]
    fn barrier(&self, line: u32) -> SyncWait<'_> {
        SyncWait {
            block: self,
            line,
            arrived_in: None,
        }
    }

    #[track_caller]
    fn shared_ptr<T: Element>(&self, slot: usize, len: usize, name: &'static str) -> Ptr<T> {
        let base = self.shared::<T>(slot, len);
        // SAFETY: `base` points to `len` elements of `T`, aligned, initialised (zero bits
        // are a valid `Element`), which stay allocated until the lane ends, after every
        // body of the launch; all users of the block run on this OS thread, one at a time,
        // through `Access`.
        unsafe { Ptr::from_raw(base, len, name, MemKind::Smem) }
    }

    /// The storage of shared array `slot`, created (zeroed) on first use in the lane.
    #[track_caller]
    fn shared<T: Element>(&self, slot: usize, len: usize) -> *mut T {
        assert!(
            align_of::<T>() <= align_of::<Chunk>(),
            "shared element types must be at most 16-byte aligned"
        );
        let bytes = len.saturating_mul(size_of::<T>());
        let mut slots = self.shared.borrow_mut();
        if slots.len() <= slot {
            slots.resize_with(slot + 1, || None);
        }
        if slots[slot].is_none() {
            let used: usize = slots.iter().flatten().map(|s| s.elem_size * s.len).sum();
            assert!(
                bytes <= MAX_SHARED_BYTES - used,
                "shared memory of a block would be over the GPU limit of {MAX_SHARED_BYTES} \
                 bytes ({used} bytes, and {len} elements of {} bytes more)",
                size_of::<T>()
            );
            slots[slot] = Some(Slot {
                store: vec![Chunk([0; 16]); bytes.div_ceil(size_of::<Chunk>())],
                elem_size: size_of::<T>(),
                len,
            });
        }
        let Some(s) = slots[slot].as_mut() else {
            unreachable!("slot {slot} was created above")
        };
        assert!(
            s.elem_size == size_of::<T>() && s.len == len,
            "shared slot {slot} created as {} x {} bytes, used as {len} x {} bytes",
            s.len,
            s.elem_size,
            size_of::<T>()
        );
        // Vec::as_mut_ptr does not reborrow the buffer, so pointers handed out earlier
        // stay valid; the buffer never moves or shrinks while the lane runs.
        s.store.as_mut_ptr().cast()
    }

    /// Readies the block state for the next block: shared arrays zeroed, no arrival.
    ///
    /// Only call while no thread of the previous block can run any more.
    fn reset(&self) {
        for s in self.shared.borrow_mut().iter_mut().flatten() {
            s.store.fill(Chunk([0; 16]));
        }
        self.arrived.set(None);
    }
}

/// How a lane runs the threads of one block.
trait Strategy {
    /// Runs every thread of the block whose thread 0 is `ctx`, keeping in `current` the
    /// id of the thread running (for errors).
    fn run_block(
        &mut self,
        run: &Run,
        ctx: ThreadCtx,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError>;
}

/// [`run_grid`]'s strategy: one call of the body per thread.
struct Loops<'f, F>(&'f F);

impl<F: Fn(&ThreadCtx)> Strategy for Loops<'_, F> {
    fn run_block(
        &mut self,
        run: &Run,
        mut ctx: ThreadCtx,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError> {
        for (t, &thread_idx) in run.thread_idx.iter().enumerate() {
            ctx.set_thread(t, thread_idx);
            current.set(t);
            (self.0)(&ctx);
        }
        Ok(())
    }
}

/// [`run_grid_sync`]'s strategy: one coroutine per thread, polled round after round.
struct Coroutines<'f, F, Fut> {
    body: &'f F,
    /// The block's threads, by thread id; kept empty between blocks, so that its
    /// allocation serves every block of the lane.
    threads: Vec<Fut>,
}

impl<F, Fut> Strategy for Coroutines<'_, F, Fut>
where
    F: Fn(ThreadCtx) -> Fut,
    Fut: Future<Output = ()>,
{
    fn run_block(
        &mut self,
        run: &Run,
        ctx: ThreadCtx,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError> {
        let result = self.rounds(run, &ctx, current);
        // Drops every future in place, before any can move.
        self.threads.clear();
        result
    }
}

/// What a round of polls saw: the first thread waiting at a barrier (with the barrier's
/// line) and the first that finished.
#[derive(Default)]
struct Round {
    waiting: Option<(u32, usize)>,
    left: Option<usize>,
}

impl Round {
    /// Takes in that thread `t` waits at the barrier at `at` (or finished, `None`); the
    /// divergence it reveals, as (line, waiting, left, other line).
    fn see(&mut self, t: usize, at: Option<u32>) -> Option<(u32, usize, usize, Option<u32>)> {
        match (at, self.waiting, self.left) {
            (None, Some((line, w)), _) => Some((line, w, t, None)),
            (None, None, _) => {
                self.left.get_or_insert(t);
                None
            }
            (Some(line), _, Some(l)) => Some((line, t, l, None)),
            (Some(line), None, None) => {
                self.waiting = Some((line, t));
                None
            }
            (Some(line), Some((first, w)), None) => {
                (line != first).then_some((first, w, t, Some(line)))
            }
        }
    }
}

impl<F, Fut> Coroutines<'_, F, Fut>
where
    F: Fn(ThreadCtx) -> Fut,
    Fut: Future<Output = ()>,
{
    /// Starts the block's threads and polls them in order, round after round, until all
    /// have finished or they diverge. A thread's first poll follows its creation at once,
    /// while its future is still in cache.
    fn rounds(
        &mut self,
        run: &Run,
        ctx: &ThreadCtx,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError> {
        let block = &ctx.block;
        let n = run.thread_idx.len();
        // With room for the whole block, the pushes below never reallocate: a future, once
        // pushed, stays where it is until `run_block` clears the vector.
        self.threads.reserve_exact(n);
        let mut round = Round::default();
        for (t, &thread_idx) in run.thread_idx.iter().enumerate() {
            current.set(t);
            self.threads
                .push((self.body)(ctx.for_thread(t, thread_idx)));
            let at = self
                .poll(ctx, t)
                .ok_or_else(|| run.stalled(ctx.block_id, t))?;
            if let Some((line, w, l, other)) = round.see(t, at) {
                return Err(run.diverged(ctx.block_id, line, w, l, other));
            }
        }
        while round.waiting.is_some() {
            // Every thread waits at the same barrier: open it.
            block.phase.set(block.phase.get().wrapping_add(1));
            round = Round::default();
            for t in 0..n {
                current.set(t);
                let at = self
                    .poll(ctx, t)
                    .ok_or_else(|| run.stalled(ctx.block_id, t))?;
                if let Some((line, w, l, other)) = round.see(t, at) {
                    return Err(run.diverged(ctx.block_id, line, w, l, other));
                }
            }
        }
        Ok(())
    }

    /// Polls thread `t`: `Some(None)` when it finished, `Some(Some(line))` when it waits at
    /// the barrier at `line`, `None` when it waits at anything else (stalled). Small, so
    /// that the hot loop passes it in registers.
    #[inline]
    fn poll(&mut self, ctx: &ThreadCtx, t: usize) -> Option<Option<u32>> {
        let mut cx = Context::from_waker(Waker::noop());
        // SAFETY: the future is pinned from its first poll until `run_block` clears the
        // vector (or the lane drops it, after a panic), which drops it in place: meanwhile
        // the vector never reallocates (`rounds` reserved room for the whole block before
        // the first push) and nothing moves, swaps or replaces its elements.
        let thread = unsafe { Pin::new_unchecked(&mut self.threads[t]) };
        let poll = thread.poll(&mut cx);
        // Taken whatever the poll gave, so that no arrival outlives its thread's turn.
        let arrived = ctx.block.arrived.take();
        match poll {
            Poll::Ready(()) => Some(None),
            Poll::Pending => arrived.map(Some),
        }
    }
}

/// The threads of one block, for a body with barriers (see [`run_grid_blocks`]): the code
/// `detour!` generates runs each stretch of the body between barriers as a loop over the
/// threads present there (a mask), and meets the block's barriers through
/// [`BlockThreads::sync`]. A block's threads run one after another on one OS thread, so
/// they share its memory without data races.
pub struct BlockThreads<'a> {
    /// Thread 0 of the block.
    first: ThreadCtx,
    run: &'a Run,
    current: &'a Cell<usize>,
    /// The first barrier the threads did not meet at: (line, waiting, left).
    diverged: Cell<Option<(u32, usize, usize)>>,
}

impl BlockThreads<'_> {
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

    /// The context of thread `t` of the block, which runs next (errors name it).
    #[inline]
    pub fn thread(&self, t: usize) -> ThreadCtx {
        self.current.set(t);
        self.first.for_thread(t, self.run.thread_idx[t])
    }

    /// As [`ThreadCtx::shared_ptr`]: the block's shared array `slot`.
    #[track_caller]
    pub fn shared_ptr<T: Element>(&self, slot: usize, len: usize, name: &'static str) -> Ptr<T> {
        self.first.shared_ptr(slot, len, name)
    }

    /// `#sync` at line `line`: `present[t]` says whether thread `t` reached it. Every
    /// thread must (or none, when all have left): otherwise the barrier is recorded as
    /// diverged and `false` returned, and the body returns at once; the launch then fails
    /// with [`EmulateError::DivergentSync`].
    pub fn sync(&self, line: u32, present: &[bool]) -> bool {
        let waiting = present.iter().position(|p| *p);
        let left = present.iter().position(|p| !*p);
        match (waiting, left) {
            (Some(w), Some(l)) => {
                self.diverged.set(Some((line, w, l)));
                false
            }
            _ => true,
        }
    }
}

/// [`run_grid_blocks`]' strategy: the body once per block.
struct Blocks<'f, F>(&'f F);

impl<F: Fn(&BlockThreads)> Strategy for Blocks<'_, F> {
    fn run_block(
        &mut self,
        run: &Run,
        ctx: ThreadCtx,
        current: &Cell<usize>,
    ) -> Result<(), EmulateError> {
        let block_id = ctx.block_id;
        let threads = BlockThreads {
            first: ctx,
            run,
            current,
            diverged: Cell::new(None),
        };
        (self.0)(&threads);
        match threads.diverged.take() {
            Some((line, w, l)) => Err(run.diverged(block_id, line, w, l, None)),
            None => Ok(()),
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
}

impl Run {
    /// Checks the shape as CUDA would, and plans the lanes.
    fn new(kernel: &'static str, shape: GridShape) -> Result<Run, EmulateError> {
        let grid = CudaGrid::from(shape);
        let invalid = |reason| EmulateError::InvalidShape {
            kernel,
            shape,
            reason,
        };
        grid.validate().map_err(invalid)?;
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
        })
    }

    /// Runs every block on the lanes (the calling thread is one), each lane with its own
    /// `strategy()`, and returns the first failure.
    fn execute<S: Strategy>(self, strategy: impl Fn() -> S + Sync) -> Result<(), EmulateError> {
        let lane = || self.lane(&mut strategy());
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
    fn lane(&self, strategy: &mut impl Strategy) {
        let block = Rc::new(Block::default());
        let (block_id, thread_id) = (Cell::new(0), Cell::new(0));
        let result = panics::catch(|| {
            while let Some(ids) = self.take() {
                for b in ids {
                    block_id.set(b);
                    block.reset();
                    let ctx = ThreadCtx {
                        grid: self.grid,
                        block_idx: self.grid.block_idx(b as u64).into(),
                        thread_idx: self.thread_idx[0],
                        block_id: b,
                        thread_id: 0,
                        // Exact: `new` checked that every tid of the grid fits in a usize.
                        block_tid: self.grid.tid(b as u64, 0) as usize,
                        block: block.clone(),
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
        let (b, t) = (block_id as u64, thread_id as u64);
        ThreadId::Cuda {
            tid: self.grid.tid(b, t),
            block: self.grid.block_idx(b),
            thread: self.grid.thread_idx(t),
        }
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

    #[cold]
    fn stalled(&self, block_id: usize, thread_id: usize) -> EmulateError {
        EmulateError::Stalled {
            kernel: self.kernel,
            thread: self.thread(block_id, thread_id),
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
pub fn run_grid<F>(kernel: &'static str, shape: GridShape, body: F) -> Result<(), EmulateError>
where
    F: Fn(&ThreadCtx) + Sync,
{
    Run::new(kernel, shape)?.execute(|| Loops(&body))
}

/// Runs the coroutine `body(ctx)` for every thread of the grid `shape`, as the CUDA
/// kernel `kernel` would, and returns when all are done. For bodies with `#sync`, each of
/// which is `ctx.barrier(line).await`.
///
/// # Errors
/// As [`run_grid`], and [`EmulateError::DivergentSync`] when not every thread of a block
/// reaches the same barrier, [`EmulateError::Stalled`] when a body awaits anything else.
pub fn run_grid_sync<F, Fut>(
    kernel: &'static str,
    shape: GridShape,
    body: F,
) -> Result<(), EmulateError>
where
    F: Fn(ThreadCtx) -> Fut + Sync,
    Fut: Future<Output = ()>,
{
    Run::new(kernel, shape)?.execute(|| Coroutines {
        body: &body,
        threads: Vec::new(),
    })
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
pub fn run_grid_blocks<F>(kernel: &'static str, shape: GridShape, body: F) -> Result<(), EmulateError>
where
    F: Fn(&BlockThreads) + Sync,
{
    Run::new(kernel, shape)?.execute(|| Blocks(&body))
}

/// Element types of CUDA's `atomicAdd`.
pub trait AtomicAdd: Copy {
    /// The alignment the update needs: that of the atomic type of the same size.
    const ATOMIC_ALIGN: usize;

    /// Adds `v` to `*ptr` atomically and returns the old value.
    ///
    /// # Safety
    /// As [`atomic_add`].
    unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self;
}

macro_rules! atomic_add_int {
    ($($t:ty => $atomic:ty),*) => {$(
        impl AtomicAdd for $t {
            const ATOMIC_ALIGN: usize = align_of::<$atomic>();

            /// Wrapping on overflow, as on a GPU.
            #[inline]
            unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: the caller guarantees a valid, aligned pointer accessed only
                // atomically meanwhile; the atomic type has the integer's size and alignment.
                unsafe { <$atomic>::from_ptr(ptr) }.fetch_add(v, Ordering::Relaxed)
            }
        }
    )*};
}

atomic_add_int!(i32 => AtomicI32, u32 => AtomicU32, i64 => AtomicI64, u64 => AtomicU64);

macro_rules! atomic_add_float {
    ($($t:ty => $atomic:ty),*) => {$(
        impl AtomicAdd for $t {
            const ATOMIC_ALIGN: usize = align_of::<$atomic>();

            /// A compare-and-swap loop on the bits, as CUDA's own emulation of float atomics.
            #[inline]
            unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self {
                // SAFETY: the caller guarantees a valid pointer accessed only atomically
                // meanwhile, aligned for the atomic (same size and, on 64-bit targets, same
                // alignment as the float).
                let cell = unsafe { <$atomic>::from_ptr(ptr.cast()) };
                let mut old = cell.load(Ordering::Relaxed);
                loop {
                    let new = (<$t>::from_bits(old) + v).to_bits();
                    let relaxed = Ordering::Relaxed;
                    match cell.compare_exchange_weak(old, new, relaxed, relaxed) {
                        Ok(_) => return <$t>::from_bits(old),
                        Err(current) => old = current,
                    }
                }
            }
        }
    )*};
}

atomic_add_float!(f32 => AtomicU32, f64 => AtomicU64);

/// CUDA's `atomicAdd`: adds `v` to `*ptr` atomically and returns the old value.
///
/// Relaxed ordering, as on a GPU: it orders nothing else; a kernel's results are visible
/// to the host once [`run_grid`] returns.
///
/// # Safety
/// `ptr` must be valid for reads and writes, aligned to `T::ATOMIC_ALIGN` (that of `T`
/// on 64-bit targets; 8 for `f64`/`u64`/`i64` on some others),
/// and while any thread may be updating it, every access to `*ptr` must go through these
/// atomics.
#[inline]
pub unsafe fn atomic_add<T: AtomicAdd>(ptr: *mut T, v: T) -> T {
    // SAFETY: forwarded to the caller.
    unsafe { T::atomic_add(ptr, v) }
}

/// [`atomic_add`] for `f32`, the common case.
///
/// # Safety
/// As [`atomic_add`].
#[inline]
pub unsafe fn atomic_add_f32(ptr: *mut f32, v: f32) -> f32 {
    // SAFETY: forwarded to the caller.
    unsafe { f32::atomic_add(ptr, v) }
}
