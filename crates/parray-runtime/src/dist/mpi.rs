//! mpi thread arrays: a detour runs its body on every rank of the job, and `#copy` between
//! arrays of types distributed over the ranks is communication (SPEC.md 3.12).
//!
//! Over Open MPI through rsmpi (the `mpi` feature of this crate; without it, an mpi detour
//! or a distributed array is `Error::MpiUnavailable`). MPI is initialised on first use and
//! finalised when the process exits.
//!
//! **No hangs.** Every collective point of a job (a `#sync` in an mpi body, a `#copy` of
//! distributed arrays, the end of an mpi detour) starts with the ranks agreeing on where
//! they are: an all-gather of each rank's point. Ranks at different points all get
//! `Error::RankDivergence`, instead of meeting in mismatched collectives. A panic in a rank
//! prints the rank and the message and aborts the job (`MPI_Abort`): the other ranks may be
//! inside a collective that rank will never join.

use std::panic::Location;

pub use parray_core::copy::Collective;
use parray_core::copy::{DigitExchange, Placement, RankDigit};
use parray_core::Distribution;

use crate::array::Array;
use crate::error::{DetourSite, Error, Result};
use crate::exec::panics::{self, Caught};
use crate::exec::pthd::ThreadCtx;
use crate::types::DataType;

/// Where a rank is when the job meets: what [`agree`] compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Point {
    /// A `#sync` of an mpi body, at a line of the detour's file.
    Sync { line: u32 },
    /// A `#copy` between arrays of which one is distributed, at a line.
    Copy { line: u32 },
    /// The end of an mpi detour's body.
    End,
}

impl Point {
    fn code(self) -> u64 {
        match self {
            Point::Sync { line } => 1 << 32 | u64::from(line),
            Point::Copy { line } => 2 << 32 | u64::from(line),
            Point::End => 3 << 32,
        }
    }

    fn from_code(code: u64) -> Point {
        let line = code as u32;
        match code >> 32 {
            1 => Point::Sync { line },
            2 => Point::Copy { line },
            _ => Point::End,
        }
    }
}

impl std::fmt::Display for Point {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Point::Sync { line } => write!(f, "the #sync at line {line}"),
            Point::Copy { line } => write!(f, "the #copy at line {line}"),
            Point::End => write!(f, "the end of the detour"),
        }
    }
}

#[cfg(feature = "mpi")]
mod job {
    //! The MPI job this process belongs to: initialised once, finalised at exit.

    use std::sync::{Mutex, OnceLock};

    use cudarc::driver::CudaSlice;
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;

    use super::Collective;
    use crate::devices::device::CudaDevice;
    use crate::error::{Error, Result};
    use crate::mem::elem::Element;

    /// This process's rank and the job's size.
    #[derive(Debug, Clone, Copy)]
    pub struct Job {
        pub rank: usize,
        pub size: usize,
    }

    static UNIVERSE: Mutex<Option<mpi::environment::Universe>> = Mutex::new(None);

    /// Finalises MPI when the process exits (the universe's drop is `MPI_Finalize`).
    extern "C" fn finalize() {
        drop(UNIVERSE.lock().unwrap_or_else(|e| e.into_inner()).take());
    }

    extern "C" {
        fn atexit(f: extern "C" fn()) -> std::ffi::c_int;
    }

    /// The job, MPI initialised on first use (with full thread support: a rank's body may
    /// run pthd threads that copy).
    pub fn get() -> Result<Job> {
        static JOB: OnceLock<std::result::Result<Job, String>> = OnceLock::new();
        JOB.get_or_init(|| {
            let (universe, _) = mpi::initialize_with_threading(mpi::Threading::Multiple)
                .ok_or("MPI was initialised by someone else")?;
            let world = universe.world();
            let job = Job {
                rank: world.rank() as usize,
                size: world.size() as usize,
            };
            *UNIVERSE.lock().unwrap_or_else(|e| e.into_inner()) = Some(universe);
            // SAFETY: `finalize` is an `extern "C" fn()` that lives as long as the process.
            if unsafe { atexit(finalize) } != 0 {
                return Err("cannot register MPI_Finalize at exit".to_string());
            }
            Ok(job)
        })
        .clone()
        .map_err(|reason| Error::Mpi {
            what: "initialising MPI".into(),
            reason,
        })
    }

    fn world() -> SimpleCommunicator {
        SimpleCommunicator::world()
    }

    /// Every rank's `value`, in rank order.
    pub fn all_gather(value: u64) -> Vec<u64> {
        let world = world();
        let mut all = vec![0u64; world.size() as usize];
        world.all_gather_into(&value, &mut all[..]);
        all
    }

    /// Ends the job: every rank's process exits with `code`.
    pub fn abort(code: i32) -> ! {
        world().abort(code)
    }

    /// The blocks of an all-to-all between GPU parts: `send` holds `block` elements for
    /// each rank in turn, `recv` receives each rank's in turn. By NCCL on the devices when
    /// every rank has libnccl (and `PARRAY_NCCL` is not `0`), else through host memory.
    pub fn move_blocks<T: Element>(
        cuda: &CudaDevice,
        send: &CudaSlice<T>,
        recv: &mut CudaSlice<T>,
        block: usize,
    ) -> Result<()> {
        if let Some(comm) = nccl(cuda)? {
            return comm.all_to_all(send, recv, block);
        }
        let sent = cuda
            .stream
            .clone_dtoh(send)
            .map_err(|e| Error::driver("#copy", "device-to-host copy", e))?;
        let mut received = vec![T::default(); sent.len()];
        let size = world().size() as usize;
        let sends: Vec<Vec<T>> = (0..size)
            .map(|d| sent[d * block..(d + 1) * block].to_vec())
            .collect();
        exchange(
            Collective::AllToAll,
            &sends,
            &mut received,
            &vec![block; size],
        )?;
        cuda.stream
            .memcpy_htod(&received, recv)
            .map_err(|e| Error::driver("#copy", "host-to-device copy", e))
    }

    /// The job's NCCL communicator, on the device of the first exchange between GPU parts;
    /// `None` (decided alike on every rank) where a rank has no libnccl, `PARRAY_NCCL=0`
    /// is set, or the exchange is on another device than the communicator's.
    fn nccl(cuda: &CudaDevice) -> Result<Option<&'static Nccl>> {
        static NCCL: OnceLock<std::result::Result<Option<Nccl>, String>> = OnceLock::new();
        let comm = NCCL
            .get_or_init(|| {
                let wanted = std::env::var("PARRAY_NCCL").map_or(true, |v| v != "0");
                // SAFETY: only asks the loader whether libnccl can be opened.
                let present = wanted && unsafe { cudarc::nccl::sys::is_culib_present() };
                if all_gather(u64::from(present)).contains(&0) {
                    return Ok(None);
                }
                let world = world();
                let mut id = [0u8; 128];
                if world.rank() == 0 {
                    let made =
                        cudarc::nccl::Id::new().map_err(|e| format!("ncclGetUniqueId: {e:?}"))?;
                    for (b, c) in id.iter_mut().zip(made.internal()) {
                        *b = *c as u8;
                    }
                }
                world.process_at_rank(0).broadcast_into(&mut id[..]);
                let id = cudarc::nccl::Id::uninit(id.map(|b| b as std::ffi::c_char));
                let comm = cudarc::nccl::Comm::from_rank(
                    cuda.stream.clone(),
                    world.rank() as usize,
                    world.size() as usize,
                    id,
                )
                .map_err(|e| format!("ncclCommInitRank: {e:?}"))?;
                Ok(Some(Nccl {
                    comm: Mutex::new(comm),
                    ordinal: cuda.ctx.ordinal(),
                }))
            })
            .as_ref()
            .map_err(|reason| Error::Mpi {
                what: "#copy between GPU parts".into(),
                reason: reason.clone(),
            })?;
        Ok(comm.as_ref().filter(|c| c.ordinal == cuda.ctx.ordinal()))
    }

    /// A communicator of every rank's GPU.
    pub struct Nccl {
        comm: Mutex<cudarc::nccl::Comm>,
        ordinal: usize,
    }

    // SAFETY: an NCCL communicator may be used from any thread when calls on it are not
    // concurrent; the mutex serialises them.
    unsafe impl Send for Nccl {}
    // SAFETY: as above.
    unsafe impl Sync for Nccl {}

    impl Nccl {
        /// Every rank's block to every rank: a group of sends and receives, as bytes.
        fn all_to_all<T: Element>(
            &self,
            send: &CudaSlice<T>,
            recv: &mut CudaSlice<T>,
            block: usize,
        ) -> Result<()> {
            let comm = self.comm.lock().unwrap_or_else(|e| e.into_inner());
            let bytes = block * size_of::<T>();
            let fail = |e: cudarc::nccl::result::NcclError| Error::Mpi {
                what: "#copy between GPU parts".into(),
                reason: format!("NCCL: {e:?}"),
            };
            {
                // SAFETY: `T` is an `Element` (plain bytes, no padding), so its slices
                // are as many bytes; the views cover exactly the two buffers.
                let (send_bytes, mut recv_bytes) = unsafe {
                    (
                        send.transmute::<u8>(send.len() * size_of::<T>()),
                        recv.transmute_mut::<u8>(recv.len() * size_of::<T>()),
                    )
                };
                let (send_bytes, recv_bytes) = (
                    send_bytes.expect("as many bytes"),
                    recv_bytes.as_mut().expect("as many bytes"),
                );
                // This rank's own block: a device copy, not a message.
                let me = comm.rank();
                let own = me * bytes..(me + 1) * bytes;
                comm.stream()
                    .memcpy_dtod(
                        &send_bytes.slice(own.clone()),
                        &mut recv_bytes.slice_mut(own),
                    )
                    .map_err(|e| Error::driver("#copy", "a device-to-device copy", e))?;
                // One group: every send and receive posted before any must complete.
                cudarc::nccl::group_start().map_err(fail)?;
                let mut posted = Ok(());
                for peer in (0..comm.world_size()).filter(|p| *p != me) {
                    let range = peer * bytes..(peer + 1) * bytes;
                    posted = posted
                        .and_then(|_| comm.send(&send_bytes.slice(range.clone()), peer as i32))
                        .and_then(|_| {
                            comm.recv(&mut recv_bytes.slice_mut(range), peer as i32)
                                .map(|_| ())
                        });
                }
                let ended = cudarc::nccl::group_end();
                posted.map_err(fail)?;
                ended.map_err(fail)?;
            }
            comm.stream()
                .synchronize()
                .map_err(|e| Error::driver("#copy", "an NCCL exchange", e))
        }
    }

    /// The messages of one copy, by the MPI call its collective names: `sends[d]` are the
    /// elements for rank `d` (for a broadcast and an all-gather, every rank's are this
    /// rank's elements; for a scatter, only the root has any), and `recv` receives each
    /// source's, `recv_counts[s]` of them, in rank order. Elements travel as words of their
    /// size (8-byte words for 16-byte vectors); counts are checked to fit MPI's `int`.
    pub fn exchange<T: Element>(
        collective: Collective,
        sends: &[Vec<T>],
        recv: &mut [T],
        recv_counts: &[usize],
    ) -> Result<()> {
        let per = size_of::<T>() / size_of::<T>().min(8);
        macro_rules! as_words {
            ($word:ty) => {{
                // SAFETY: `Element` guarantees a size of 1, 4, 8 or 16 bytes, an alignment
                // of at least the word's, no padding, and that any bits are a value: the
                // slices are the same bytes as words, and any words written are elements.
                let sends: Vec<&[$word]> = sends
                    .iter()
                    .map(|v| unsafe {
                        std::slice::from_raw_parts(v.as_ptr().cast::<$word>(), v.len() * per)
                    })
                    .collect();
                // SAFETY: as above.
                let recv = unsafe {
                    std::slice::from_raw_parts_mut(
                        recv.as_mut_ptr().cast::<$word>(),
                        recv.len() * per,
                    )
                };
                let recv_counts: Vec<usize> = recv_counts.iter().map(|c| c * per).collect();
                exchange_words(collective, &sends, recv, &recv_counts)
            }};
        }
        match size_of::<T>() {
            1 => as_words!(u8),
            4 => as_words!(u32),
            _ => as_words!(u64),
        }
    }

    /// [`exchange`] of words.
    fn exchange_words<W: Equivalence + Copy>(
        collective: Collective,
        sends: &[&[W]],
        recv: &mut [W],
        recv_counts: &[usize],
    ) -> Result<()> {
        let world = world();
        let me = world.rank() as usize;
        let (rc, rd) = partition(recv_counts)?;
        fn by_source<'r, W: Equivalence>(
            recv: &'r mut [W],
            (rc, rd): (&'r [i32], &'r [i32]),
        ) -> mpi::datatype::PartitionMut<'r, [W], &'r [i32], &'r [i32]> {
            mpi::datatype::PartitionMut::new(recv, rc, rd)
        }
        let counts = (&rc[..], &rd[..]);
        match collective {
            Collective::Local => {}
            Collective::Broadcast { root } => {
                if me == root {
                    recv.copy_from_slice(sends[root]);
                }
                world.process_at_rank(root as i32).broadcast_into(recv);
            }
            Collective::AllGather => {
                world.all_gather_varcount_into(sends[me], &mut by_source(recv, counts))
            }
            Collective::Scatter { root } if me == root => {
                let all: Vec<W> = sends.concat();
                let (sc, sd) = partition(&sends.iter().map(|s| s.len()).collect::<Vec<_>>())?;
                let from = mpi::datatype::Partition::new(&all[..], &sc[..], &sd[..]);
                world
                    .process_at_rank(root as i32)
                    .scatter_varcount_into_root(&from, recv);
            }
            Collective::Scatter { root } => world
                .process_at_rank(root as i32)
                .scatter_varcount_into(recv),
            Collective::Gather { root } if me == root => world
                .process_at_rank(root as i32)
                .gather_varcount_into_root(sends[root], &mut by_source(recv, counts)),
            Collective::Gather { root } => world
                .process_at_rank(root as i32)
                .gather_varcount_into(sends[root]),
            Collective::PointToPoint => {
                let to = (0..sends.len()).find(|d| !sends[*d].is_empty());
                let from = (0..recv_counts.len()).find(|s| recv_counts[*s] > 0);
                let all = recv;
                match (to, from) {
                    (Some(d), Some(s)) if d == me && s == me => all.copy_from_slice(sends[me]),
                    (Some(d), Some(s)) => {
                        mpi::point_to_point::send_receive_into(
                            sends[d],
                            &world.process_at_rank(d as i32),
                            all,
                            &world.process_at_rank(s as i32),
                        );
                    }
                    (Some(d), None) => world.process_at_rank(d as i32).send(sends[d]),
                    (None, Some(s)) => {
                        world.process_at_rank(s as i32).receive_into(all);
                    }
                    (None, None) => {}
                }
            }
            Collective::AllToAll => {
                let all: Vec<W> = sends.concat();
                let (sc, sd) = partition(&sends.iter().map(|s| s.len()).collect::<Vec<_>>())?;
                let from = mpi::datatype::Partition::new(&all[..], &sc[..], &sd[..]);
                world.all_to_all_varcount_into(&from, &mut by_source(recv, counts));
            }
        }
        Ok(())
    }

    /// MPI's counts and displacements of consecutive blocks of `counts` words.
    fn partition(counts: &[usize]) -> Result<(Vec<i32>, Vec<i32>)> {
        let int = |v: usize| {
            i32::try_from(v).map_err(|_| Error::Mpi {
                what: "#copy".into(),
                reason: format!("{v} words to or from one rank exceed MPI's int counts"),
            })
        };
        let mut at = 0usize;
        let mut displs = Vec::with_capacity(counts.len());
        for c in counts {
            displs.push(int(at)?);
            at += c;
        }
        Ok((
            counts.iter().map(|c| int(*c)).collect::<Result<_>>()?,
            displs,
        ))
    }
}

#[cfg(not(feature = "mpi"))]
mod job {
    //! Built without MPI: every use says how to get it.

    use crate::error::{Error, Result};
    use crate::mem::elem::Element;

    #[derive(Debug, Clone, Copy)]
    pub struct Job {
        pub rank: usize,
        pub size: usize,
    }

    pub fn get() -> Result<Job> {
        Err(Error::MpiUnavailable)
    }

    pub fn all_gather(_: u64) -> Vec<u64> {
        unreachable!("no job without MPI")
    }

    pub fn abort(_: i32) -> ! {
        std::process::exit(1)
    }

    pub fn exchange<T: Element>(
        _: super::Collective,
        _: &[Vec<T>],
        _: &mut [T],
        _: &[usize],
    ) -> Result<()> {
        Err(Error::MpiUnavailable)
    }

    pub fn move_blocks<T: Element>(
        _: &crate::devices::device::CudaDevice,
        _: &cudarc::driver::CudaSlice<T>,
        _: &mut cudarc::driver::CudaSlice<T>,
        _: usize,
    ) -> Result<()> {
        Err(Error::MpiUnavailable)
    }
}

pub use job::Job;

/// This process's rank in its MPI job and the job's size (MPI initialised on first use).
///
/// # Errors
/// `Error::MpiUnavailable` in a build without the `mpi` feature.
pub fn job() -> Result<Job> {
    job::get()
}

/// The job, checked to run as many ranks as the mpi array `array` has processes.
fn job_of(array: &str, processes: u64, what: &str) -> Result<Job> {
    let job = job::get()?;
    if job.size as u64 != processes {
        return Err(Error::RankCount {
            what: what.to_string(),
            array: array.to_string(),
            processes,
            running: job.size,
        });
    }
    Ok(job)
}

/// The ranks agree that they are all at `point`; otherwise every rank gets the same
/// `Error::RankDivergence`, naming the first rank that is elsewhere.
pub fn agree(point: Point, what: &str) -> Result<()> {
    let all = job::all_gather(point.code());
    match all.iter().position(|c| *c != all[0]) {
        None => Ok(()),
        Some(other) => Err(Error::RankDivergence {
            what: what.to_string(),
            first: Point::from_code(all[0]).to_string(),
            rank: other,
            other: Point::from_code(all[other]).to_string(),
        }),
    }
}

/// `#detour` on an mpi array of `nranks` processes: runs `body` once on this rank, with
/// `$tid$` its rank, and returns when every rank has finished it.
///
/// # Errors
/// `Error::MpiUnavailable` without MPI, `Error::RankCount` when the job runs another
/// number of ranks, `Error::RankDivergence` when ranks meet at different points (on
/// every rank alike). A panic in the body prints the rank and the message and aborts the
/// job.
pub fn detour<F>(site: &'static DetourSite, nranks: usize, body: F) -> Result<()>
where
    F: Fn(&ThreadCtx),
{
    let what = site.to_string();
    let job = job_of(site.array, nranks as u64, &what)?;
    let ctx = ThreadCtx::rank(job.rank, job.size, site);
    match panics::catch(|| body(&ctx)) {
        Ok(()) => agree(Point::End, &what),
        // A divergent `#sync`: every rank left its body with the same error.
        Err(Caught::Quiet) => Err(ctx.take_error().expect("a quiet exit records its error")),
        Err(Caught::Panicked(p)) => {
            crate::diag::note(format_args!(
                "{site}: rank {} of {} panicked{}: {}",
                job.rank,
                job.size,
                p.at.map(|at| format!(" at {at}")).unwrap_or_default(),
                p.message
            ));
            job::abort(101)
        }
    }
}

/// A type's distribution checked against the job; `None` for a type whole on each rank.
fn placed<T: DataType>(job: &Job) -> Result<Option<&'static Distribution>> {
    let Some(dist) = T::distribution() else {
        return Ok(None);
    };
    if dist.ranks != job.size as u64 {
        return Err(Error::RankCount {
            what: format!("{}, distributed over {}", T::NAME, dist.over),
            array: dist.over.clone(),
            processes: dist.ranks,
            running: job.size,
        });
    }
    Ok(Some(dist))
}

/// Elements of storage a value of `T` needs in this process: this rank's part of a
/// distributed type (`Error::RankCount` unless the job runs its mpi array's processes),
/// else the type's extent.
pub(crate) fn extent_here<T: DataType>() -> Result<usize> {
    let Some(dist) = T::distribution() else {
        return Ok(T::EXTENT);
    };
    let job = job_of(&dist.over, dist.ranks, T::NAME)?;
    Ok(dist.part_on(job.rank as u64, T::EXTENT as u64) as usize)
}

/// `#copy S(src) to D(dst)` where `S` or `D` is distributed: element `k` goes from the rank
/// that holds it in `S` (each rank's own copy when `S` is whole on every rank) to the ranks
/// that hold it in `D` (all of them when `D` is whole on every rank), in one all-to-all of
/// the counts the offsets give. Every rank calls it, with its part.
pub(crate) fn copy<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
    collective: Collective,
    at: &'static Location<'static>,
) -> Result<()> {
    let what = format!(
        "#copy {} to {} at {}:{}",
        S::NAME,
        D::NAME,
        at.file(),
        at.line()
    );
    let job = job::get()?;
    let s_dist = placed::<S>(&job)?;
    placed::<D>(&job)?;
    agree(Point::Copy { line: at.line() }, &what)?;
    let (me, n) = (job.rank, job.size);
    if let Some((s_digit, d_digit, exchange)) = on_gpu_by_digits::<S, D>(src, dst, collective) {
        let block = exchange.map_or(0, |e| e.block() as usize);
        return crate::copy::exchange_on_gpu(
            src,
            dst,
            (&s_digit, &d_digit),
            exchange.as_ref(),
            me,
            at,
            |cuda, send, recv| job::move_blocks(cuda, send, recv, block),
        );
    }
    let (mut s_at, mut d_at) = (Side::of::<S>()?, Side::of::<D>()?);
    let from = src.to_vec()?;
    let mut to = dst.to_vec()?;
    if s_dist.is_none() {
        // Whole on every rank: each rank takes what it holds of D from its own copy.
        for (k, d_local) in d_at.held_by(me) {
            to[d_local] = from[s_at.at(k).1];
        }
        return dst.buffer_mut().copy_prefix_from_slice(&to);
    }
    // What this rank sends each rank, in order of k.
    let mut sends: Vec<Vec<S::Elem>> = vec![Vec::new(); n];
    for (k, s_local) in s_at.held_by(me) {
        match d_at.at(k).0 {
            Some(d) => sends[d].push(from[s_local]),
            None => sends.iter_mut().for_each(|v| v.push(from[s_local])),
        }
    }
    // What it receives from each rank, in order of k: the source and where it goes.
    let mut receives: Vec<(usize, usize)> = Vec::new();
    let mut recv_counts = vec![0usize; n];
    for (k, d_local) in d_at.held_by(me) {
        let s = s_at.at(k).0.expect("the source is distributed");
        recv_counts[s] += 1;
        receives.push((s, d_local));
    }
    // Every rank has the same collective from the types: all of them skip MPI, or none.
    let recv = if collective == Collective::Local {
        std::mem::take(&mut sends[me])
    } else {
        let mut recv = vec![S::Elem::default(); recv_counts.iter().sum()];
        job::exchange(collective, &sends, &mut recv, &recv_counts)?;
        recv
    };
    let mut cursor: Vec<usize> = Vec::with_capacity(n);
    let mut start = 0;
    for c in &recv_counts {
        cursor.push(start);
        start += c;
    }
    for (s, d_local) in receives {
        to[d_local] = recv[cursor[s]];
        cursor[s] += 1;
    }
    dst.buffer_mut().copy_prefix_from_slice(&to)
}

/// The digits of a copy between GPU parts that kernels move: both types distributed by
/// one digit of stride 1, and either an all-to-all of two such digits or no messages.
fn on_gpu_by_digits<S: DataType, D: DataType>(
    src: &Array<S>,
    dst: &Array<D>,
    collective: Collective,
) -> Option<(RankDigit, RankDigit, Option<DigitExchange>)> {
    let on_gpu = |b: Option<&crate::devices::Device>| b.is_some_and(|d| !d.is_emulated());
    if !on_gpu(src.device()) || !on_gpu(dst.device()) {
        return None;
    }
    let s = RankDigit::of(S::module(), S::NAME).filter(|d| d.stride == 1)?;
    let d = RankDigit::of(D::module(), D::NAME).filter(|d| d.stride == 1)?;
    match collective {
        Collective::Local => Some((s, d, None)),
        Collective::AllToAll => Some((s, d, Some(DigitExchange::of(s, d)?))),
        _ => None,
    }
}

/// Where the elements of one side of a copy are: by the rank digit of a natural type
/// distributed by one dimension (each rank lists its own elements), else by the offsets
/// (each rank walks all of them).
enum Side {
    Digit(RankDigit),
    Offsets(Placement, u64),
}

impl Side {
    fn of<T: DataType>() -> Result<Side> {
        if let Some(digit) = RankDigit::of(T::module(), T::NAME) {
            return Ok(Side::Digit(digit));
        }
        let placement =
            Placement::of(T::module(), T::NAME).map_err(|e| Error::CopyUnsupported {
                reason: format!("the offset function of {}: {e}", T::NAME),
            })?;
        Ok(Side::Offsets(placement, T::SIZE as u64))
    }

    /// The rank holding element `k` (`None`: every rank holds the type) and its offset
    /// there.
    fn at(&mut self, k: u64) -> (Option<usize>, usize) {
        match self {
            Side::Digit(d) => {
                let (rank, local) = d.at(k);
                (Some(rank), local)
            }
            Side::Offsets(p, _) => p.at(k),
        }
    }

    /// The elements `rank` holds (all of them, for a type whole on every rank), in
    /// increasing `k`, with their offsets there.
    fn held_by(&mut self, rank: usize) -> Box<dyn Iterator<Item = (u64, usize)> + '_> {
        match self {
            Side::Digit(d) => Box::new(d.held_by(rank)),
            Side::Offsets(p, size) => Box::new((0..*size).filter_map(move |k| match p.at(k) {
                (Some(r), _) if r != rank => None,
                (_, local) => Some((k, local)),
            })),
        }
    }
}
