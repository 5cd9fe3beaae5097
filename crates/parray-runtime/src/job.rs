//! This process's place in its MPI job: its rank and the job's size, MPI initialised on
//! first use and finalised when the process exits, and the part of a distributed type
//! that the rank holds (SPEC.md 2.13), which its arrays are allocated with. Layer 3, below
//! the arrays; what the ranks say to one another is `distributed`'s. Without the `mpi`
//! feature there is no job: `Error::MpiUnavailable`.

use crate::error::{Error, Result};
use crate::types::DataType;

/// This process's rank and the job's size.
#[derive(Debug, Clone, Copy)]
pub struct Job {
    pub rank: usize,
    pub size: usize,
}

/// This process's rank in its MPI job and the job's size (MPI initialised on first use).
///
/// # Errors
/// `Error::MpiUnavailable` in a build without the `mpi` feature.
pub fn job() -> Result<Job> {
    init::get()
}

impl Job {
    /// Waits until every rank of the job has called this (`MPI_Barrier`): a rank that
    /// times work which meets other ranks' starts its clock with theirs, not ahead of a
    /// slower rank's setup.
    pub fn barrier(&self) {
        init::barrier();
    }
}

/// The job, checked to run as many ranks as the mpi array `array` has processes.
pub(crate) fn job_of(array: &str, processes: u64, what: &str) -> Result<Job> {
    let job = job()?;
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

/// Elements of storage a value of `T` needs in this process: this rank's part of a
/// distributed type (`Error::RankCount` unless the job runs its mpi array's processes),
/// else the type's extent.
pub(crate) fn extent_here<T: DataType>() -> Result<usize> {
    // A type with sizes given at run time: bound, and fitting its declaration.
    if T::FIXED_SIZE.is_none() {
        T::try_module()?;
    }
    let Some(dist) = T::distribution() else {
        return Ok(T::extent());
    };
    let job = job_of(&dist.over, dist.ranks, T::NAME)?;
    Ok(dist.part_on(job.rank as u64, T::extent() as u64) as usize)
}

#[cfg(feature = "mpi")]
mod init {
    //! MPI, initialised once and finalised at exit.

    use std::sync::{Mutex, OnceLock};

    use mpi::topology::Communicator;

    use super::Job;
    use crate::error::{Error, Result};

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
    pub(super) fn get() -> Result<Job> {
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

    /// `MPI_Barrier` on the job's ranks.
    pub(super) fn barrier() {
        use mpi::collective::CommunicatorCollectives;
        mpi::topology::SimpleCommunicator::world().barrier();
    }
}

#[cfg(not(feature = "mpi"))]
mod init {
    //! Built without MPI: there is no job.

    use super::Job;
    use crate::error::{Error, Result};

    pub(super) fn get() -> Result<Job> {
        Err(Error::MpiUnavailable)
    }

    /// Without MPI a job is this process alone: there is no one to wait for.
    pub(super) fn barrier() {}
}
