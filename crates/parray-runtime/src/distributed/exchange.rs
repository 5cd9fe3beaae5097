//! The GPU side of a `#copy` between the parts of two types distributed by one digit each
//! (SPEC.md 3.12): where the blocks are long runs of elements and NCCL is there, each run
//! moves straight from the sender's part to the receiver's (NCCL messages, and 2-D device
//! copies for a rank's own block: no pack, no unpack), in chunks that a pipelined copy
//! overlaps with the work producing the next; otherwise kernels pack a rank's part into
//! one block per rank, the blocks move between the ranks' GPUs (`nccl`), and kernels
//! unpack what arrived; or, when every element stays on its rank, one kernel from part to
//! part.

use std::any::TypeId;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Mutex, OnceLock};

use parray_compiler::back::c::Dialect;
use parray_compiler::kernels::{self, ExchangeStep, Kernel};
use parray_layout::copy::{DigitExchange, RankDigit};

use crate::array::Array;
use crate::copy::queue_2d;
use crate::devices::device::{on_gpu, CudaDevice};
use crate::devices::Device;
use crate::distributed::nccl::{self, Message};
use crate::error::{DetourSite, Error, Result};
use crate::exec::launch::{built_kernel, run_on_gpu, BuiltKernels, Launch};
use crate::mem::buffer::{same_gpu, Arrangement, Buffer};
use crate::mem::elem::Element;
use crate::mem::kernel_arg::KernelValue;
use crate::types::DataType;
use parray_layout::{MemKind, Rows};

/// `#copy` between the GPU parts of two types distributed by one digit each, on rank
/// `me` (SPEC.md 3.12): with `exchange`, pack into a send buffer on the device, fill the
/// receive buffer from every rank's send buffer (the blocks of
/// every rank, in rank order, in and out: NCCL on the devices, or MPI through host
/// memory), and unpack it on the device; without (every element stays on its rank), one
/// kernel from part to part, or one device copy when both parts are in logical order.
/// Both arrays are on one GPU.
pub(crate) fn exchange_on_gpu<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
    (s_digit, d_digit): (&RankDigit, &RankDigit),
    exchange: Option<&DigitExchange>,
    me: usize,
    site: &'static DetourSite,
) -> Result<()> {
    let (s, d) = (src.buffer(), dst.buffer_mut());
    let cuda = same_gpu(s, d)?;
    // One step on the part it walks; a rank without one has nothing to move.
    let step = |step: ExchangeStep, (from, to): (u64, u64), part: usize| -> Result<()> {
        if part == 0 {
            return Ok(());
        }
        let kernel = exchange_kernel::<S, D>((step, me), || {
            kernels::exchange_kernel(
                <S::Elem as Element>::ELEM,
                step,
                (s_digit, d_digit),
                exchange,
                me as u64,
                Dialect::Cuda,
            )
        })?;
        launch_exchange(cuda, kernel, from, to, site)
    };
    let (from, to) = (s.device_address(cuda), d.device_address_mut(cuda));
    // The kernels walk the parts the digits define, which the arrays hold (an array of a
    // distributed type is created with its part, and a view of one fits in its storage).
    let (s_part, d_part) = (s_digit.part_of(me) as usize, d_digit.part_of(me) as usize);
    if s.extent() < s_part || d.extent() < d_part {
        return Err(Error::CopyUnsupported {
            reason: format!(
                "{} holds {} elements and {} {}, less than their parts ({s_part}, {d_part})",
                S::NAME,
                s.extent(),
                D::NAME,
                d.extent()
            ),
        });
    }
    let in_order = |r: &RankDigit| r.ranks == 1;
    if exchange.is_none() && in_order(s_digit) && in_order(d_digit) {
        // One rank holds both, each in logical order: the copy is a copy.
        return d.copy_prefix_from(s, s_part);
    }
    let Some(ex) = exchange else {
        return step(ExchangeStep::Local, (from, to), d_part);
    };
    if moves_runs::<S::Elem>(cuda, ex)? {
        let device = src.device().expect("on a GPU (checked above)").clone();
        return on_side_stream(&device, || {
            queue_runs(src, dst, ex, (me, 0..s_part as u64), site)
        });
    }
    let n = (ex.block() * ex.src.ranks) as usize;
    let device = s.device().expect("on a GPU (checked above)");
    let (mut sending, mut receiving) = (staging::<S::Elem>(device, n)?, staging(device, n)?);
    let send = sending.device_address_mut(cuda);
    step(ExchangeStep::Pack, (from, send), s_part)?;
    nccl::move_blocks(cuda, &sending, &mut receiving, ex.block() as usize)?;
    let recv = receiving.device_address(cuda);
    let unpacked = step(ExchangeStep::Unpack, (recv, to), d_part);
    keep_staging(sending);
    keep_staging(receiving);
    unpacked
}

/// Runs shorter than this (in bytes) go through the pack and unpack kernels: a message
/// costs NCCL microseconds of its own, which many short ones would not repay.
const DIRECT_RUN_BYTES: u64 = 64 << 10;

/// Whether the exchange `ex` between GPU parts on `cuda` moves its runs straight from part
/// to part ([`queue_runs`]): runs of at least [`DIRECT_RUN_BYTES`], and NCCL on every
/// rank. The same answer on every rank (the types decide the first, and the second is
/// asked of all of them or none).
pub(crate) fn moves_runs<T: Element>(cuda: &CudaDevice, ex: &DigitExchange) -> Result<bool> {
    // `PARRAY_EXCHANGE_RUNS=0` keeps the pack and unpack kernels (to compare the two; a
    // job's ranks must agree, as `mpirun -x` makes them).
    static WANTED: OnceLock<bool> = OnceLock::new();
    let wanted =
        *WANTED.get_or_init(|| std::env::var("PARRAY_EXCHANGE_RUNS").map_or(true, |v| v != "0"));
    Ok(wanted && ex.run() * size_of::<T>() as u64 >= DIRECT_RUN_BYTES && nccl::has_nccl(cuda)?)
}

/// Queues, after the work queued on the device's stream so far, the runs of the exchange
/// `ex` whose first element is at an offset in `chunk` of the sending rank's part of the
/// source, on rank `me`: those of its own block as 2-D device copies from part to part on
/// the device's stream (beside the messages), and on its side stream one NCCL message to
/// and one from every other rank (NCCL spends microseconds on each message of a group, so
/// a message a run costs more than a gather), each straight from (or into) the part where
/// its runs are consecutive there, else gathered on the device's stream into (or
/// scattered on the side stream from) a staging array of the chunk's own by 2-D device
/// copies (3.9's rows kernel). Every rank queues the same chunks in the same order,
/// with `site` the copy's. Not waited for: called inside [`on_side_stream`], which waits.
pub(crate) fn queue_runs<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
    ex: &DigitExchange,
    (me, chunk): (usize, Range<u64>),
    site: &'static DetourSite,
) -> Result<()> {
    let (s, d) = (src.buffer(), dst.buffer_mut());
    let cuda = same_gpu(s, d)?;
    let device = s.device().expect("on a GPU (checked above)").clone();
    let side = cuda.side_stream()?;
    let me = me as u64;
    // The runs of block (from, to) in this chunk, grouped into rows of one pitch.
    let rows = |(from, to): (u64, u64)| {
        let runs: Vec<(u64, u64)> = (0..ex.runs())
            .map(|i| ex.run_at((from, to), i))
            .filter(|(at, _)| chunk.contains(at))
            .collect();
        rows_of(&runs, ex.run())
    };
    let t = size_of::<S::Elem>() as u64;
    let bytes = |r: Rows| Rows {
        start: r.start * t,
        width: r.width * t,
        pitch: r.pitch * t,
    };
    let packed = |start: u64, width: u64| Rows {
        start,
        width,
        pitch: width,
    };
    // One message a peer each way: its runs in order, from or into the part where they
    // are consecutive there (`Some(start)`), else through a staging array.
    let peers = (0..ex.src.ranks).filter(|p| *p != me);
    let outgoing: Vec<(u64, Vec<RowGroup>)> = peers.clone().map(|p| (p, rows((me, p)))).collect();
    let incoming: Vec<(u64, Vec<RowGroup>)> = peers.map(|p| (p, rows((p, me)))).collect();
    let staged = |ends: &[(u64, Vec<RowGroup>)], side_of: fn(&RowGroup) -> Rows| -> u64 {
        ends.iter()
            .filter(|(_, g)| consecutive(g, side_of).is_none())
            .map(|(_, g)| elements(g))
            .sum()
    };
    let staging_of = |n: u64| {
        (n > 0)
            .then(|| staging::<S::Elem>(&device, n as usize))
            .transpose()
    };
    let mut sending = staging_of(staged(&outgoing, |g| g.0))?;
    let mut receiving = staging_of(staged(&incoming, |g| g.1))?;
    let (mut sends, mut cursor) = (Vec::new(), 0);
    for (peer, groups) in &outgoing {
        let Some(m) = message(*peer, groups, |g| g.0, &mut cursor) else {
            continue;
        };
        if m.staged {
            // Gathered into the staging array, in order, from the message's offset on, on
            // the device's stream after the chunk's producer: so that they overlap the
            // messages of the chunk before, not wait behind them on the side stream.
            let staging = sending.as_mut().expect("made for the gathered runs");
            let mut into = m.at as u64;
            for &(from, _, height) in groups {
                let to = packed(into, from.width);
                queue_2d(s, staging, (bytes(from), bytes(to)), height, None, site)?;
                into += from.width * height;
            }
        }
        sends.push(m);
    }
    // After the chunk's producer, its gathers and a new staging array's zeroing.
    side.join(&cuda.stream)
        .map_err(|e| Error::driver("#copy", "ordering a chunk after the device's work", e))?;
    let (mut recvs, mut scatters, mut cursor) = (Vec::new(), Vec::new(), 0);
    for (peer, groups) in &incoming {
        let Some(m) = message(*peer, groups, |g| g.1, &mut cursor) else {
            continue;
        };
        if m.staged {
            scatters.push((m.at as u64, groups));
        }
        recvs.push(m);
    }
    nccl::move_runs(
        cuda,
        (s, sending.as_ref(), &sends),
        (&mut *d, receiving.as_mut(), &recvs),
    )?;
    // The own block on the device's stream, after its producer, beside the messages.
    for (from, to, height) in rows((me, me)) {
        queue_2d(s, d, (bytes(from), bytes(to)), height, None, site)?;
    }
    for (mut from, groups) in scatters {
        let staging = receiving.as_ref().expect("made for the scattered runs");
        for &(_, to, height) in groups {
            let rows = (bytes(packed(from, to.width)), bytes(to));
            queue_2d(staging, d, rows, height, Some(side), site)?;
            from += to.width * height;
        }
    }
    // Not dropped, nor given to a later chunk, while the streams may still use them: back
    // in the pool once `on_side_stream` has waited for both.
    for staging in [sending, receiving].into_iter().flatten() {
        keep_staging_after_sync(staging);
    }
    Ok(())
}

/// The message of one peer's runs, on one side (`side_of`): straight from or into the
/// part where its rows are consecutive there, else at `cursor` of the staging array,
/// which it advances; `None` for no runs.
fn message(
    peer: u64,
    groups: &[RowGroup],
    side_of: fn(&RowGroup) -> Rows,
    cursor: &mut u64,
) -> Option<Message> {
    let len = elements(groups);
    let (at, staged) = match consecutive(groups, side_of) {
        _ if len == 0 => return None,
        Some(at) => (at, false),
        None => (std::mem::replace(cursor, *cursor + len), true),
    };
    Some(Message {
        peer: peer as usize,
        at: at as usize,
        len: len as usize,
        staged,
    })
}

/// Rows of runs: on the source side, on the destination side, and how many.
type RowGroup = (Rows, Rows, u64);

/// The elements of groups of rows.
fn elements(groups: &[RowGroup]) -> u64 {
    groups.iter().map(|(r, _, height)| r.width * height).sum()
}

/// Where the rows of `groups` on one side (`side_of`) start when they are consecutive
/// there, each row beginning where the one before it ends; `None` otherwise.
fn consecutive(groups: &[RowGroup], side_of: fn(&RowGroup) -> Rows) -> Option<u64> {
    let start = groups.first().map_or(0, |g| side_of(g).start);
    let mut end = start;
    for g in groups {
        let (rows, height) = (side_of(g), g.2);
        if rows.start != end || (height > 1 && rows.pitch != rows.width) {
            return None;
        }
        end += rows.width * height;
    }
    Some(start)
}

/// Queues on the device's side stream, after the work queued on its stream so far, a
/// device copy of the elements at offsets `chunk` of `src` to the same offsets of `dst`
/// (a chunk of a copy between two arrays in logical order on one GPU). Not waited for:
/// called inside [`on_side_stream`], which waits.
pub(crate) fn queue_in_place<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
    chunk: Range<usize>,
) -> Result<()> {
    let (s, d) = (src.buffer(), dst.buffer_mut());
    let cuda = same_gpu(s, d)?;
    let side = cuda.side_stream()?;
    let fail = |e| Error::driver("#copy", "a chunk's device-to-device copy", e);
    side.join(&cuda.stream).map_err(fail)?;
    let (from, to) = (
        s.device_slice().expect("on a GPU (checked above)"),
        d.device_slice_mut().expect("on a GPU (checked above)"),
    );
    if chunk.end > from.len() || chunk.end > to.len() {
        return Err(Error::CopyUnsupported {
            reason: format!(
                "a chunk reaching element {} of {} ({} elements) and {} ({})",
                chunk.end,
                S::NAME,
                from.len(),
                D::NAME,
                to.len()
            ),
        });
    }
    side.memcpy_dtod(&from.slice(chunk.clone()), &mut to.slice_mut(chunk))
        .map_err(fail)
}

/// The work that reads a chunk of a pipelined copy's destination once it has arrived
/// (`copy::copy_in_chunks_then`), given the chunk's range of the source's part.
pub(crate) type Consume<'a, D> = dyn FnMut(&mut Array<D>, Range<usize>) -> Result<()> + 'a;

/// The consumer of a pipelined copy's chunks, one chunk behind their copies: chunk `i`
/// is consumed on the device's stream after chunk `i + 1` is produced there, once chunk
/// `i`'s copy on the side stream has arrived (an event recorded after it), so that the
/// device's stream does not wait for a copy while it has a chunk to produce.
#[derive(Default)]
pub(crate) struct Behind {
    waiting: Option<(Range<usize>, cudarc::driver::CudaEvent)>,
}

impl Behind {
    /// Chunk `chunk`'s copy is queued on the side stream: the chunk before it is consumed.
    pub(crate) fn queued<D: DataType>(
        &mut self,
        dst: &mut Array<D>,
        chunk: Range<usize>,
        consume: &mut Consume<'_, D>,
    ) -> Result<()> {
        let cuda = on_gpu(dst.device(), D::NAME)?;
        let arrived = cuda
            .side_stream()?
            .record_event(None)
            .map_err(|e| Error::driver("#copy", "marking a chunk's copy", e))?;
        match self.waiting.replace((chunk, arrived)) {
            Some(before) => Self::consume(dst, before, consume),
            None => Ok(()),
        }
    }

    /// The last chunk consumed, after its copy.
    pub(crate) fn finish<D: DataType>(
        &mut self,
        dst: &mut Array<D>,
        consume: &mut Consume<'_, D>,
    ) -> Result<()> {
        match self.waiting.take() {
            Some(last) => Self::consume(dst, last, consume),
            None => Ok(()),
        }
    }

    fn consume<D: DataType>(
        dst: &mut Array<D>,
        (chunk, arrived): (Range<usize>, cudarc::driver::CudaEvent),
        consume: &mut Consume<'_, D>,
    ) -> Result<()> {
        let cuda = on_gpu(dst.device(), D::NAME)?;
        cuda.stream
            .wait(&arrived)
            .map_err(|e| Error::driver("#copy", "waiting for a chunk's copy", e))?;
        consume(dst, chunk)
    }
}

/// Runs `queue`, which queues copies on `device`'s two streams ([`queue_runs`],
/// [`queue_in_place`]), then, whether it failed or not, orders the device's stream after
/// the side stream and waits for both: nothing queued there outlives the call, so the arrays
/// those copies read and write may be used or dropped once it returns, after an error too.
/// Returns `queue`'s error first.
pub(crate) fn on_side_stream(device: &Device, queue: impl FnOnce() -> Result<()>) -> Result<()> {
    let queued = queue();
    let cuda = on_gpu(Some(device), "#copy")?;
    let side = cuda.side_stream()?;
    let finished = cuda
        .stream
        .join(side)
        .and_then(|()| cuda.stream.synchronize())
        .map_err(|e| Error::driver("#copy", "waiting for a pipelined copy", e));
    // Where the wait failed the copies' staging arrays stay held: they may still be in use.
    if finished.is_ok() {
        release_staging(device.ordinal());
    }
    queued.and(finished)
}

/// Runs of `len` elements, each a pair of offsets (source, destination), as groups of
/// rows: the longest prefixes of equal pitches on both sides, each pitch at least `len`
/// (so that rows do not overlap), in order.
///
/// @post the rows of the groups, in order, are the runs, in order.
fn rows_of(runs: &[(u64, u64)], len: u64) -> Vec<(Rows, Rows, u64)> {
    let mut groups: Vec<(Rows, Rows, u64)> = Vec::new();
    for &(from, to) in runs {
        if let Some((s, d, height)) = groups.last_mut() {
            let next = |r: &Rows, at: u64| at.checked_sub(r.start);
            match (next(s, from), next(d, to)) {
                (Some(ps), Some(pd)) if *height == 1 && ps >= len && pd >= len => {
                    (s.pitch, d.pitch, *height) = (ps, pd, 2);
                    continue;
                }
                (Some(ps), Some(pd))
                    if *height > 1 && ps == *height * s.pitch && pd == *height * d.pitch =>
                {
                    *height += 1;
                    continue;
                }
                _ => {}
            }
        }
        let row = |start| Rows {
            start,
            width: len,
            pitch: len,
        };
        groups.push((row(from), row(to), 1));
    }
    groups
}

/// A staging array of `n` elements on `device` (a GPU) for an exchange's messages, kept
/// between copies (an FFT repeats the same transpose; allocating and zeroing 2 x 512 MiB
/// each time cost more than moving it): one kept from an earlier exchange of that size,
/// else new.
fn staging<T: Element>(device: &Device, n: usize) -> Result<Buffer<T>> {
    let key = (device.ordinal(), TypeId::of::<T>(), n);
    let kept = lock(&STAGING)
        .get_mut(&key)
        .and_then(Vec::pop)
        .and_then(|b| b.downcast::<Buffer<T>>().ok());
    match kept {
        Some(buffer) => Ok(*buffer),
        None => Buffer::new_on(
            "#copy staging",
            MemKind::Dmem,
            n,
            Arrangement::Whole,
            device,
        ),
    }
}

/// Keeps a staging array for the next exchange of its size on its device.
fn keep_staging<T: Element>(buffer: Buffer<T>) {
    let (key, kept) = pooled(buffer);
    lock(&STAGING).entry(key).or_default().push(kept);
}

/// Holds a staging array that a pipelined copy's streams may still use until
/// [`on_side_stream`] has waited for them ([`release_staging`]).
fn keep_staging_after_sync<T: Element>(buffer: Buffer<T>) {
    lock(&IN_FLIGHT).push(pooled(buffer));
}

/// Returns the staging arrays held for the pipelined copies on device `ordinal` to the
/// pool: its streams have finished with them.
fn release_staging(ordinal: usize) {
    let mut held = lock(&IN_FLIGHT);
    let (done, still): (Vec<_>, Vec<_>) = held.drain(..).partition(|(key, _)| key.0 == ordinal);
    *held = still;
    let mut pool = lock(&STAGING);
    for (key, kept) in done {
        pool.entry(key).or_default().push(kept);
    }
}

/// A staging array as the pool keeps it: by device, element and extent.
fn pooled<T: Element>(buffer: Buffer<T>) -> (StagingKey, Box<dyn std::any::Any + Send>) {
    let ordinal = buffer.device().map_or(0, Device::ordinal);
    let key = (ordinal, TypeId::of::<T>(), buffer.extent());
    (key, Box::new(buffer))
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

type StagingKey = (usize, TypeId, usize);

type StagingPool = HashMap<StagingKey, Vec<Box<dyn std::any::Any + Send>>>;

static STAGING: std::sync::LazyLock<Mutex<StagingPool>> =
    std::sync::LazyLock::new(Default::default);

static IN_FLIGHT: Mutex<Vec<(StagingKey, Box<dyn std::any::Any + Send>)>> = Mutex::new(Vec::new());

/// The kernel of one step of the exchange between `S` and `D` on a rank.
fn exchange_kernel<S: 'static, D: 'static>(
    (step, me): (ExchangeStep, usize),
    make: impl FnOnce() -> parray_layout::Result<Kernel>,
) -> Result<&'static Kernel> {
    static KERNELS: BuiltKernels<(TypeId, TypeId, ExchangeStep, usize)> = OnceLock::new();
    built_kernel(
        &KERNELS,
        (TypeId::of::<S>(), TypeId::of::<D>(), step, me),
        make,
    )
}

fn launch_exchange(
    cuda: &CudaDevice,
    kernel: &'static Kernel,
    from: u64,
    to: u64,
    site: &'static DetourSite,
) -> Result<()> {
    // SAFETY: `parray_exchange(T* from, T* to)` takes these two device addresses of
    // distinct arrays on that device: a part of the source or the receive buffer, and a
    // part of the destination or the send buffer, each holding the elements its step's
    // kernel was proved within (the parts the digits define, which the caller checked the
    // arrays hold, and the buffers of every rank's block).
    unsafe {
        run_on_gpu(
            cuda,
            &cuda.stream,
            &Launch::mover("parray_exchange", &kernel.source, kernel.grid, site),
            &[KernelValue::U64(from), KernelValue::U64(to)],
        )?
    };
    cuda.stream
        .synchronize()
        .map_err(|e| Error::driver("#copy", "an exchange kernel", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The rows of the groups, in order, as (source, destination) offsets.
    fn rows_in(groups: &[RowGroup]) -> Vec<(u64, u64)> {
        groups
            .iter()
            .flat_map(|&(s, d, height)| {
                (0..height).map(move |r| (s.start + r * s.pitch, d.start + r * d.pitch))
            })
            .collect()
    }

    #[test]
    fn rows_of_groups_runs_of_one_pitch_and_keeps_their_order() {
        // The slab FFT's sends (pitch 4 runs on the source, consecutive on the
        // destination), then two runs a pitch apart, and a last one.
        let runs = [(0, 0), (4, 1), (8, 2), (20, 3), (30, 10), (31, 11)];
        let groups = rows_of(&runs, 1);
        assert_eq!(rows_in(&groups), runs);
        assert_eq!(groups.iter().map(|g| g.2).collect::<Vec<_>>(), [3, 2, 1]);
        assert_eq!((groups[0].0.pitch, groups[0].1.pitch), (4, 1));
        // Rows that would overlap (a pitch under the run's length) are groups of their own.
        let overlapping = rows_of(&[(0, 0), (1, 2)], 2);
        assert_eq!(overlapping.len(), 2);
        assert_eq!(rows_in(&overlapping), [(0, 0), (1, 2)]);
    }

    #[test]
    fn consecutive_rows_are_one_message_and_others_are_not() {
        let groups = rows_of(&[(0, 8), (4, 10), (8, 12)], 2);
        // Destination side: rows 8, 10, 12 of 2 elements follow each other.
        assert_eq!(consecutive(&groups, |g| g.1), Some(8));
        // Source side: a pitch of 4 leaves gaps.
        assert_eq!(consecutive(&groups, |g| g.0), None);
        assert_eq!(elements(&groups), 6);
        assert_eq!(consecutive(&[], |g| g.0), Some(0));
    }
}
