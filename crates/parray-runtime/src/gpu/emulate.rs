//! CPU emulation of a CUDA grid: runs a `cuda` thread array's detour where no GPU exists.
//!
//! The emulation gives the body what a CUDA kernel gets, and no more: every block and every
//! thread runs exactly once with its `blockIdx`/`threadIdx`, each block has its own
//! [shared memory](ThreadCtx::shared), threads of a block meet at
//! [`ThreadCtx::sync_block`] (`__syncthreads`, Parray's `#sync_1`), and
//! [`atomic_add`] updates memory like `atomicAdd`. Blocks run in no particular order,
//! concurrently, as on a GPU.
//!
//! Two strategies, chosen by the caller (the code generator knows whether a body syncs):
//! - without barriers, each core runs whole blocks as plain loops over the threads, so a
//!   thread costs a few nanoseconds on top of its body;
//! - with barriers, each core owns a *team* of OS threads, one per thread of a block, that
//!   runs the core's blocks one after the other, meeting at a [`Barrier`].
//!
//! A panic in any emulated thread poisons the barriers, stops the remaining blocks and
//! comes back as [`EmulateError::Panicked`]; nothing hangs.

use crate::barrier::Barrier;
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::mem::{align_of, size_of};
use std::panic::{self, AssertUnwindSafe};
use std::sync::atomic::{
    AtomicBool, AtomicI32, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering,
};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::thread;

/// Most threads in one block (CUDA's limit on every current GPU).
pub const MAX_BLOCK_THREADS: u32 = 1024;
/// Most bytes of shared memory one block may create: the largest a current GPU grants
/// (227 KiB on Hopper, with the dynamic shared memory opt-in), so that no kernel the GPU
/// path can launch is refused here.
pub const MAX_SHARED_BYTES: usize = 227 * 1024;
/// Stack of each team thread of a barrier-using launch: bodies keep only a few locals, and
/// a launch may start 1024 threads per core.
const TEAM_STACK_BYTES: usize = 256 * 1024;

/// A CUDA `dim3`: used both for sizes (grid, block) and for indices (blockIdx, threadIdx).
///
/// Named fields rather than `[u32; 3]` so generated code reads like CUDA (`.x`, `.y`,
/// `.z`); `x` varies fastest in every flattening.
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

    /// Number of points of a size: `x * y * z`.
    pub const fn volume(self) -> usize {
        self.x as usize * self.y as usize * self.z as usize
    }

    /// The flat id of index `self` within size `dims`, `x` fastest.
    pub const fn flatten(self, dims: Dim3) -> usize {
        self.x as usize + dims.x as usize * (self.y as usize + dims.y as usize * self.z as usize)
    }

    /// The index whose flat id within size `dims` is `id` (inverse of [`Dim3::flatten`]).
    pub const fn unflatten(id: usize, dims: Dim3) -> Self {
        let (dx, dy) = (dims.x as usize, dims.y as usize);
        // Each component is below a u32 extent, so the casts are exact.
        Dim3 {
            x: (id % dx) as u32,
            y: (id / dx % dy) as u32,
            z: (id / dx / dy) as u32,
        }
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

    /// Number of blocks in the grid.
    pub const fn num_blocks(&self) -> usize {
        self.grid.volume()
    }

    /// Number of threads in each block.
    pub const fn block_threads(&self) -> usize {
        self.block.volume()
    }

    /// Rejects what a CUDA launch would reject, so that a kernel that runs here also
    /// launches on a GPU.
    fn validate(&self) -> Result<(), String> {
        let (g, b) = (self.grid, self.block);
        if g.volume() == 0 || b.volume() == 0 {
            return Err("every grid and block extent must be at least 1".into());
        }
        if g.x > i32::MAX as u32 || g.y > 65535 || g.z > 65535 {
            return Err("grid extents are limited to (2^31-1, 65535, 65535)".into());
        }
        if b.x > 1024 || b.y > 1024 || b.z > 64 {
            return Err("block extents are limited to (1024, 1024, 64)".into());
        }
        if b.volume() > MAX_BLOCK_THREADS as usize {
            return Err(format!(
                "a block has at most {MAX_BLOCK_THREADS} threads, not {}",
                b.volume()
            ));
        }
        Ok(())
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
    /// The configuration is one CUDA would refuse to launch.
    #[error("kernel `{kernel}`: invalid launch configuration {shape}: {reason}")]
    InvalidShape {
        kernel: &'static str,
        shape: GridShape,
        reason: String,
    },
    /// An emulated thread panicked (the first one, if several did).
    #[error("kernel `{kernel}`: thread {thread} of block {block} panicked: {message}")]
    Panicked {
        kernel: &'static str,
        block: Dim3,
        thread: Dim3,
        message: String,
    },
    /// The operating system refused to start a thread of a block team.
    #[error("kernel `{kernel}`: cannot start an emulation thread: {message}")]
    Spawn {
        kernel: &'static str,
        message: String,
    },
}

/// What one emulated thread sees: its indices, its block's shared memory and barrier.
///
/// Registers are not here: they are the body's ordinary locals.
pub struct ThreadCtx<'a> {
    shape: GridShape,
    block_idx: Dim3,
    thread_idx: Dim3,
    block_id: usize,
    thread_id: usize,
    shared: &'a BlockShared,
    /// The block's barrier; `None` when the launch runs blocks as loops.
    barrier: Option<&'a Barrier>,
}

impl<'a> ThreadCtx<'a> {
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
        self.shape.block
    }

    /// `gridDim`.
    #[inline]
    pub fn grid_dim(&self) -> Dim3 {
        self.shape.grid
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
        self.block_id * self.shape.block_threads() + self.thread_id
    }

    /// `__syncthreads()`: waits until every thread of the block has arrived.
    ///
    /// As in CUDA, all threads of a block must reach the same sequence of syncs. If another
    /// thread of the launch panicked, this unwinds the calling thread quietly (no panic
    /// message) so that the launch ends with that thread's error.
    ///
    /// # Panics
    /// When the launch was made with `uses_barrier == false` and the block has more than
    /// one thread: the code generator declared a body without barriers that has one.
    pub fn sync_block(&self) {
        match self.barrier {
            Some(b) => {
                if b.wait().is_err() {
                    panic::resume_unwind(Box::new(Cancelled));
                }
            }
            None => assert!(
                self.shape.block_threads() == 1,
                "sync_block in a kernel launched with uses_barrier == false"
            ),
        }
    }

    /// The block's shared array number `slot` of `len` elements (Parray's `#create` of an
    /// `smem` type; each `create` in a body has its own compile-time slot).
    ///
    /// All threads of a block get the same memory, every block its own; it holds
    /// `T::default()` (zero for numbers) when the block starts. The memory is valid until
    /// the body returns.
    ///
    /// # Panics
    /// If `slot` was created earlier in the block with another element size or length, if
    /// `T` is zero-sized or needs more than 16-byte alignment, or if the block's shared
    /// arrays would exceed [`MAX_SHARED_BYTES`].
    pub fn shared<T: Copy + Default>(&self, slot: usize, len: usize) -> SharedArray<'_, T> {
        SharedArray {
            ptr: self.shared.get::<T>(slot, len),
            len,
            _life: PhantomData,
        }
    }
}

/// A handle on one shared array of a block (see [`ThreadCtx::shared`]).
///
/// Threads of a block share the memory without synchronisation, as on a GPU: the handle
/// only gives raw access, and the body orders conflicting accesses with
/// [`ThreadCtx::sync_block`].
pub struct SharedArray<'a, T> {
    ptr: *mut T,
    len: usize,
    _life: PhantomData<&'a T>,
}

impl<T> Clone for SharedArray<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for SharedArray<'_, T> {}

impl<T: Copy> SharedArray<'_, T> {
    /// The first element; valid for `len()` elements while the handle lives.
    #[inline]
    pub fn as_ptr(&self) -> *mut T {
        self.ptr
    }

    /// Number of elements.
    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the array has no elements.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads element `i`.
    ///
    /// # Safety
    /// No other thread of the block may write element `i` between the last
    /// [`ThreadCtx::sync_block`] and the next one (CUDA's rule for a race-free read).
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub unsafe fn read(&self, i: usize) -> T {
        assert!(
            i < self.len,
            "shared index {i} out of bounds (len {})",
            self.len
        );
        // SAFETY: in bounds and initialised (filled with T::default() at block start); the
        // caller excludes concurrent writes.
        unsafe { self.ptr.add(i).read() }
    }

    /// Writes element `i`.
    ///
    /// # Safety
    /// No other thread of the block may read or write element `i` between the last
    /// [`ThreadCtx::sync_block`] and the next one.
    ///
    /// # Panics
    /// If `i >= len()`.
    #[inline]
    pub unsafe fn write(&self, i: usize, v: T) {
        assert!(
            i < self.len,
            "shared index {i} out of bounds (len {})",
            self.len
        );
        // SAFETY: in bounds; the caller excludes concurrent accesses.
        unsafe { self.ptr.add(i).write(v) }
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
    /// Refills the array with `T::default()`, for the `T` it was created with.
    refill: unsafe fn(*mut u8, usize),
}

/// Writes `T::default()` to `len` elements at `ptr`.
///
/// # Safety
/// `ptr` must be valid for writing `len` elements of `T`, aligned, and unshared meanwhile.
unsafe fn fill_default<T: Copy + Default>(ptr: *mut u8, len: usize) {
    let p = ptr.cast::<T>();
    for i in 0..len {
        // SAFETY: the caller guarantees `len` writable, aligned, unshared elements.
        unsafe { p.add(i).write(T::default()) };
    }
}

/// The shared memory of the block a team (or a loop lane) is running.
///
/// Storage is created on first use and kept for the next blocks, refilled in between.
struct BlockShared {
    slots: Mutex<Vec<Option<Slot>>>,
}

impl BlockShared {
    fn new() -> Self {
        BlockShared {
            slots: Mutex::new(Vec::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Option<Slot>>> {
        // A panic never leaves the table half-updated, so std's poisoning adds nothing.
        self.slots.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The storage of `slot`, created (and filled with defaults) on first use.
    fn get<T: Copy + Default>(&self, slot: usize, len: usize) -> *mut T {
        assert!(
            size_of::<T>() > 0 && align_of::<T>() <= align_of::<Chunk>(),
            "shared element types must be sized and at most 16-byte aligned"
        );
        let bytes = len
            .checked_mul(size_of::<T>())
            .expect("shared array size overflows");
        let mut slots = self.lock();
        if slots.len() <= slot {
            slots.resize_with(slot + 1, || None);
        }
        if slots[slot].is_none() {
            let used: usize = slots.iter().flatten().map(|s| s.elem_size * s.len).sum();
            assert!(
                used + bytes <= MAX_SHARED_BYTES,
                "shared memory of a block would be {} bytes, over the GPU limit {MAX_SHARED_BYTES}",
                used + bytes
            );
            let mut store = vec![Chunk([0; 16]); bytes.div_ceil(size_of::<Chunk>())];
            // SAFETY: `store` holds at least `bytes` bytes, 16-aligned, and is not shared yet.
            unsafe { fill_default::<T>(store.as_mut_ptr().cast(), len) };
            slots[slot] = Some(Slot {
                store,
                elem_size: size_of::<T>(),
                len,
                refill: fill_default::<T>,
            });
        }
        let s = slots[slot].as_mut().expect("slot was just created");
        assert!(
            s.elem_size == size_of::<T>() && s.len == len,
            "shared slot {slot} created as {} x {} bytes, used as {len} x {} bytes",
            s.len,
            s.elem_size,
            size_of::<T>()
        );
        // Vec::as_mut_ptr does not reborrow the buffer, so pointers handed out earlier to
        // other threads stay valid; the buffer never moves or shrinks while the block runs.
        s.store.as_mut_ptr().cast()
    }

    /// Gives every array its initial value again, for the next block.
    ///
    /// Only call while no thread runs a block on this memory.
    fn reset(&self) {
        for s in self.lock().iter_mut().flatten() {
            // SAFETY: the slot was created for `s.len` elements of the type `refill` writes,
            // and the caller guarantees nobody uses the memory meanwhile.
            unsafe { (s.refill)(s.store.as_mut_ptr().cast(), s.len) };
        }
    }
}

/// The unwinding payload of a thread cancelled because another one panicked.
struct Cancelled;

/// State shared by all workers of one launch.
struct Launch<'f, F> {
    kernel: &'static str,
    shape: GridShape,
    body: &'f F,
    /// Set (before the barriers are poisoned) when a thread panicked.
    stop: AtomicBool,
    error: Mutex<Option<EmulateError>>,
    /// One per team; empty for loop launches.
    barriers: Vec<Barrier>,
}

impl<F: Fn(&ThreadCtx) + Sync> Launch<'_, F> {
    /// Records the first failure, then stops every worker and releases every waiter.
    fn fail(&self, err: EmulateError) {
        self.error
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get_or_insert(err);
        self.stop.store(true, Ordering::SeqCst);
        for b in &self.barriers {
            b.poison();
        }
    }

    /// Records the panic `payload` of the thread described by `ctx`, unless it is a
    /// cancellation caused by an earlier panic.
    fn fail_panicked(&self, ctx: &ThreadCtx, payload: Box<dyn Any + Send>) {
        if payload.is::<Cancelled>() {
            return;
        }
        let message = if let Some(s) = payload.downcast_ref::<&str>() {
            (*s).to_string()
        } else if let Some(s) = payload.downcast_ref::<String>() {
            s.clone()
        } else {
            "non-string panic payload".to_string()
        };
        self.fail(EmulateError::Panicked {
            kernel: self.kernel,
            block: ctx.block_idx,
            thread: ctx.thread_idx,
            message,
        });
    }

    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    fn finish(self) -> Result<(), EmulateError> {
        match self.error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A context for thread 0 of block 0, to be moved through the grid.
    fn ctx<'a>(&self, shared: &'a BlockShared, barrier: Option<&'a Barrier>) -> ThreadCtx<'a> {
        ThreadCtx {
            shape: self.shape,
            block_idx: Dim3::new(0, 0, 0),
            thread_idx: Dim3::new(0, 0, 0),
            block_id: 0,
            thread_id: 0,
            shared,
            barrier,
        }
    }

    /// Loop strategy, one lane: takes chunks of blocks from `next` and runs each block's
    /// threads in order, `x` fastest.
    fn loop_lane(&self, next: &AtomicUsize, chunk: usize) {
        let shared = BlockShared::new();
        let mut ctx = self.ctx(&shared, None);
        let n = self.shape.num_blocks();
        let (grid, block) = (self.shape.grid, self.shape.block);
        let run = panic::catch_unwind(AssertUnwindSafe(|| {
            while !self.stopped() {
                let first = next.fetch_add(chunk, Ordering::Relaxed);
                if first >= n {
                    break;
                }
                for b in first..n.min(first + chunk) {
                    shared.reset();
                    ctx.block_id = b;
                    ctx.block_idx = Dim3::unflatten(b, grid);
                    let mut t = 0;
                    for z in 0..block.z {
                        for y in 0..block.y {
                            for x in 0..block.x {
                                ctx.thread_idx = Dim3 { x, y, z };
                                ctx.thread_id = t;
                                (self.body)(&ctx);
                                t += 1;
                            }
                        }
                    }
                }
            }
        }));
        if let Err(payload) = run {
            self.fail_panicked(&ctx, payload);
        }
    }

    /// Team strategy, one member: thread `thread_id` of every block `lane, lane + lanes,
    /// ...`, meeting its team at `barrier` inside and between blocks.
    ///
    /// Two shared memories alternate between consecutive blocks: while the team runs one,
    /// the leader refills the other, which nobody touches any more (everyone passed the
    /// barrier that ended the block before), so one barrier per block is enough.
    fn team_member(
        &self,
        lane: usize,
        lanes: usize,
        thread_id: usize,
        barrier: &Barrier,
        shared: &[BlockShared; 2],
    ) {
        let thread_idx = Dim3::unflatten(thread_id, self.shape.block);
        for (k, b) in (lane..self.shape.num_blocks()).step_by(lanes).enumerate() {
            if self.stopped() {
                return;
            }
            if thread_id == 0 {
                shared[(k + 1) % 2].reset();
            }
            let mut ctx = self.ctx(&shared[k % 2], Some(barrier));
            ctx.block_id = b;
            ctx.block_idx = Dim3::unflatten(b, self.shape.grid);
            ctx.thread_id = thread_id;
            ctx.thread_idx = thread_idx;
            if let Err(payload) = panic::catch_unwind(AssertUnwindSafe(|| (self.body)(&ctx))) {
                self.fail_panicked(&ctx, payload);
                return;
            }
            if barrier.wait().is_err() {
                return;
            }
        }
    }
}

/// Cores to use, computed once (the query reads cgroup files on Linux).
fn cores() -> usize {
    static CORES: OnceLock<usize> = OnceLock::new();
    *CORES.get_or_init(|| thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Runs `body` once for every thread of the grid `shape`, as the CUDA kernel `kernel`
/// would, and returns when all are done.
///
/// `uses_barrier` says whether the body may call [`ThreadCtx::sync_block`]: if not, blocks
/// run as plain loops (fast); if so, each block's threads are OS threads of a team.
///
/// # Errors
/// [`EmulateError::InvalidShape`] for a configuration CUDA would refuse,
/// [`EmulateError::Panicked`] if a thread panicked (the remaining blocks are skipped),
/// [`EmulateError::Spawn`] if a team thread could not be started.
pub fn run_grid<F>(
    kernel: &'static str,
    shape: GridShape,
    uses_barrier: bool,
    body: F,
) -> Result<(), EmulateError>
where
    F: Fn(&ThreadCtx) + Sync,
{
    shape
        .validate()
        .map_err(|reason| EmulateError::InvalidShape {
            kernel,
            shape,
            reason,
        })?;
    let blocks = shape.num_blocks();
    let lanes = cores().min(blocks);
    // A one-thread block needs no team: its syncs are no-ops.
    let teams = uses_barrier && shape.block_threads() > 1;
    let launch = Launch {
        kernel,
        shape,
        body: &body,
        stop: AtomicBool::new(false),
        error: Mutex::new(None),
        barriers: if teams {
            (0..lanes)
                .map(|_| Barrier::new(shape.block_threads()))
                .collect()
        } else {
            Vec::new()
        },
    };
    if teams {
        run_teams(&launch, lanes);
    } else {
        run_loops(&launch, lanes);
    }
    launch.finish()
}

/// Loop strategy: `lanes` workers (the caller is one) take chunks of blocks until none is
/// left. Chunks cover about 4096 threads, so tiny blocks do not contend on the counter,
/// yet leave at least 8 chunks per lane for balance.
fn run_loops<F: Fn(&ThreadCtx) + Sync>(launch: &Launch<'_, F>, lanes: usize) {
    let blocks = launch.shape.num_blocks();
    let chunk = 4096usize
        .div_ceil(launch.shape.block_threads())
        .min(blocks / (lanes * 8))
        .max(1);
    let next = AtomicUsize::new(0);
    thread::scope(|s| {
        for _ in 1..lanes {
            s.spawn(|| launch.loop_lane(&next, chunk));
        }
        launch.loop_lane(&next, chunk);
    });
}

/// Team strategy: one team of `block_threads` OS threads per lane, lane `l` running blocks
/// `l, l + lanes, ...`.
fn run_teams<F: Fn(&ThreadCtx) + Sync>(launch: &Launch<'_, F>, lanes: usize) {
    let shared: Vec<[BlockShared; 2]> = (0..lanes)
        .map(|_| [BlockShared::new(), BlockShared::new()])
        .collect();
    thread::scope(|s| {
        for (lane, (barrier, shared)) in launch.barriers.iter().zip(&shared).enumerate() {
            for t in 0..launch.shape.block_threads() {
                let spawned = thread::Builder::new()
                    .stack_size(TEAM_STACK_BYTES)
                    .spawn_scoped(s, move || {
                        launch.team_member(lane, lanes, t, barrier, shared)
                    });
                if let Err(e) = spawned {
                    // Started members are released by the poisoned barriers.
                    launch.fail(EmulateError::Spawn {
                        kernel: launch.kernel,
                        message: e.to_string(),
                    });
                    return;
                }
            }
        }
    });
}

/// Element types of CUDA's `atomicAdd`.
pub trait AtomicAdd: Copy {
    /// Adds `v` to `*ptr` atomically and returns the old value.
    ///
    /// # Safety
    /// As [`atomic_add`].
    unsafe fn atomic_add(ptr: *mut Self, v: Self) -> Self;
}

macro_rules! atomic_add_int {
    ($($t:ty => $atomic:ty),*) => {$(
        impl AtomicAdd for $t {
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
/// `ptr` must be valid for reads and writes, aligned for `T`'s atomic counterpart
/// (`align_of::<T>()` for all types on 64-bit targets; 8 for `f64`/`u64`/`i64` on others),
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
