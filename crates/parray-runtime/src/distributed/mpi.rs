//! mpi thread arrays: a detour runs its body on every rank of the job, and `#copy` between
//! arrays of types distributed over the ranks is communication (SPEC.md 3.12).
//!
//! Over Open MPI through rsmpi (the `mpi` feature of this crate; without it, an mpi detour
//! or a distributed array is `Error::MpiUnavailable`). MPI is initialised on first use and
//! finalised when the process exits (`crate::job`).
//!
//! **No hangs.** Every collective point of a job (a `#sync` in an mpi body, a `#copy` of
//! distributed arrays, the end of an mpi detour) starts with the ranks agreeing on where
//! they are: an all-gather of each rank's point. Ranks at different points all get
//! `Error::RankDivergence`, instead of meeting in mismatched collectives. A panic in a rank
//! prints the rank and the message and aborts the job (`MPI_Abort`): the other ranks may be
//! inside a collective that rank will never join.

use std::ops::Range;
use std::sync::Mutex;

pub use crate::job::{job, Job};
pub use parray_layout::copy::Collective;
use parray_layout::copy::{DigitExchange, Placement, RankDigit};
use parray_layout::Distribution;

use crate::array::Array;
use crate::distributed::comm;
use crate::distributed::exchange::{self, exchange_on_gpu};
use crate::error::{DetourSite, Error, Result};
use crate::exec::panics::{self, Caught};
use crate::exec::pthd::{Team, ThreadCtx};
use crate::job::job_of;
use crate::mem::buffer::same_gpu;
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
    /// A failure in the work a pipelined `#copy` at a line overlaps with its chunks.
    Failed { line: u32 },
}

impl Point {
    fn code(self) -> u64 {
        match self {
            Point::Sync { line } => 1 << 32 | u64::from(line),
            Point::Copy { line } => 2 << 32 | u64::from(line),
            Point::End => 3 << 32,
            Point::Failed { line } => 4 << 32 | u64::from(line),
        }
    }

    fn from_code(code: u64) -> Point {
        let line = code as u32;
        match code >> 32 {
            1 => Point::Sync { line },
            2 => Point::Copy { line },
            4 => Point::Failed { line },
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
            Point::Failed { line } => {
                write!(f, "a failure producing a chunk of the #copy at line {line}")
            }
        }
    }
}

/// The ranks agree that they are all at `point`; otherwise every rank gets the same
/// `Error::RankDivergence`, naming the first rank that is elsewhere.
pub fn agree(point: Point, what: &str) -> Result<()> {
    let all = comm::all_gather(point.code());
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

/// The ranks of a job running the body of an mpi detour: a `#sync` is a point they agree
/// on.
struct Ranks<'w> {
    /// The detour, as the errors name it.
    what: &'w str,
    /// The failure of the first `#sync` the ranks did not all reach.
    error: Mutex<Option<Error>>,
}

impl Team for Ranks<'_> {
    fn meet(&self, _rank: usize, line: u32) -> bool {
        match agree(Point::Sync { line }, self.what) {
            Ok(()) => true,
            Err(e) => {
                *self.error.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                false
            }
        }
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
    let ranks = Ranks {
        what: &what,
        error: Mutex::new(None),
    };
    match panics::catch(|| body(&ThreadCtx::new(job.rank, job.size, &ranks))) {
        Ok(()) => agree(Point::End, &what),
        // A divergent `#sync`: every rank left its body with the same error.
        Err(Caught::Quiet) => Err(ranks
            .error
            .into_inner()
            .unwrap_or_else(|e| e.into_inner())
            .expect("a quiet exit records its error")),
        Err(Caught::Panicked(p)) => {
            crate::diag::note(format_args!(
                "{site}: rank {} of {} panicked{}: {}",
                job.rank,
                job.size,
                p.at.map(|at| format!(" at {at}")).unwrap_or_default(),
                p.message
            ));
            comm::abort(101)
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

/// `#copy S(src) to D(dst)` where `S` or `D` is distributed: element `k` goes from the rank
/// that holds it in `S` (each rank's own copy when `S` is whole on every rank) to the ranks
/// that hold it in `D` (all of them when `D` is whole on every rank), in one all-to-all of
/// the counts the offsets give. Every rank calls it, with its part.
pub(crate) fn copy<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &Array<S>,
    dst: &mut Array<D>,
    collective: Collective,
    site: &'static DetourSite,
) -> Result<()> {
    let (job, _) = meet::<S, D>(site)?;
    let (me, n) = (job.rank, job.size);
    if let Some((s_digit, d_digit, exchange)) = on_gpu_by_digits::<S, D>(src, dst, collective) {
        let digits = (&s_digit, &d_digit);
        return exchange_on_gpu(src, dst, digits, exchange.as_ref(), me, site);
    }
    let (mut s_at, mut d_at) = (Side::of::<S>()?, Side::of::<D>()?);
    let from = src.to_vec()?;
    let mut to = dst.to_vec()?;
    if S::distribution().is_none() {
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
        comm::exchange(collective, &sends, &mut recv, &recv_counts)?;
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

/// The start of a `#copy` between `S` and `D`, one of them distributed, at `site`: the job,
/// both types checked against it, and the ranks agreeing that they are all at this copy;
/// with the copy's name, as errors give it.
fn meet<S: DataType, D: DataType>(site: &DetourSite) -> Result<(Job, String)> {
    let what = format!(
        "#copy {} to {} at {}:{}",
        S::NAME,
        D::NAME,
        site.file,
        site.line
    );
    let job = job()?;
    placed::<S>(&job)?;
    placed::<D>(&job)?;
    agree(Point::Copy { line: site.line }, &what)?;
    Ok((job, what))
}

/// The work a pipelined copy overlaps with its chunks: it makes the elements of a chunk
/// (offsets of this rank's part) of the source.
pub(crate) type Produce<'a, S> = dyn FnMut(&mut Array<S>, Range<usize>) -> Result<()> + 'a;

/// [`copy`] pipelined with `produce` (`copy::copy_in_chunks`): for each `chunk` of this
/// rank's part of the source, in order, `produce` queues the work making it, and the copy
/// of its elements is queued on the device's side stream, where it overlaps the producing
/// of the next. Chunks overlap where both parts are on GPUs and the copy is an all-to-all
/// whose runs move straight from part to part (`exchange::moves_runs`) or one rank's copy
/// in logical order; elsewhere every chunk is produced, then [`copy`] runs. The ranks
/// agree after each chunk, so that a rank whose `produce` failed leaves none waiting for
/// its messages.
pub(crate) fn copy_in_chunks<S: DataType, D: DataType<Elem = S::Elem>>(
    src: &mut Array<S>,
    dst: &mut Array<D>,
    (collective, site): (Collective, &'static DetourSite),
    chunks: impl Iterator<Item = Range<usize>> + Clone,
    (produce, consume): (&mut Produce<'_, S>, &mut exchange::Consume<'_, D>),
) -> Result<()> {
    let (job, what) = meet::<S, D>(site)?;
    let line = site.line;
    // Each chunk's producer and consumer; the ranks agree that every one of them ran.
    let agreed = |done: Result<()>| match done {
        Ok(()) => agree(Point::Copy { line }, &what),
        Err(e) => {
            let _ = agree(Point::Failed { line }, &what);
            Err(e)
        }
    };
    let mut produced = |src: &mut Array<S>, chunk: Range<usize>| agreed(produce(src, chunk));
    let mut consumed = |dst: &mut Array<D>, chunk: Range<usize>| agreed(consume(dst, chunk));
    let pipelined = match on_gpu_by_digits::<S, D>(src, dst, collective) {
        Some((s, d, None)) if s.ranks == 1 && d.ranks == 1 => Some(None),
        Some((_, _, Some(ex))) => {
            let cuda = same_gpu(src.buffer(), dst.buffer())?;
            exchange::moves_runs::<S::Elem>(cuda, &ex)?.then_some(Some(ex))
        }
        _ => None,
    };
    let Some(how) = pipelined else {
        for chunk in chunks.clone() {
            produced(src, chunk)?;
        }
        copy(src, dst, collective, site)?;
        for chunk in chunks {
            consumed(dst, chunk)?;
        }
        return Ok(());
    };
    let device = src.device().expect("on a GPU (the digits say so)").clone();
    exchange::on_side_stream(&device, || {
        let mut behind = exchange::Behind::default();
        for chunk in chunks {
            produced(src, chunk.clone())?;
            let range = chunk.start as u64..chunk.end as u64;
            match &how {
                Some(ex) => exchange::queue_runs(src, dst, ex, (job.rank, range), site)?,
                None => exchange::queue_in_place(src, dst, chunk.clone())?,
            }
            behind.queued(dst, chunk, &mut consumed)?;
        }
        behind.finish(dst, &mut consumed)
    })
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
        Ok(Side::Offsets(placement, T::size() as u64))
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
