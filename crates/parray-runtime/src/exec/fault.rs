//! The fault record a kernel with checked accesses or checked barriers writes
//! (`parray_compiler::fault`), read back after its launch: the first access out of bounds
//! (or, for a vector, misaligned) becomes the error the emulation gives for the same
//! access, a panic of that thread at that line; a `#sync` that not every thread of a block
//! reached becomes the emulation's `Error::DivergentSync`; a `#wait` on an mbarrier that
//! gave up becomes that thread's panic, as the emulation's deadlock is.

use parray_compiler::fault::{self, Recorded};
use parray_layout::grid::CudaGrid;

use crate::devices::device::{CudaDevice, FaultRecord};
use crate::error::{DetourSite, Error, ThreadId};
use crate::mem::ptr::{misaligned_message, out_of_bounds_message, vector_out_of_bounds_message};

/// What the record holds, if anything (its words read back into `record.host` after the
/// launch), with the record cleared for the next launch; the error says which step failed.
pub(crate) fn take(
    cuda: &CudaDevice,
    record: &mut FaultRecord,
) -> Result<Option<Recorded>, String> {
    let mut words = [0u64; fault::WORDS];
    words.copy_from_slice(record.host.as_slice().map_err(|e| e.to_string())?);
    let Some(f) = Recorded::decode(&words) else {
        return Ok(None);
    };
    let clear = |e| format!("clearing the kernel's fault record: {e}");
    cuda.stream
        .memset_zeros(&mut record.device)
        .map_err(clear)?;
    cuda.stream.synchronize().map_err(clear)?;
    Ok(Some(f))
}

/// What a launch of `grid` at `site` recorded, whose checked arrays are `names` (by the
/// record's number), as the emulation's error: the panic of the faulting thread, or the
/// divergent `#sync`.
pub(crate) fn as_error(
    recorded: &Recorded,
    grid: &CudaGrid,
    site: &'static DetourSite,
    names: &[&str],
) -> Error {
    let thread = |block: [u32; 3], thread: [u32; 3]| {
        ThreadId::cuda(grid, grid.block_id(block), grid.thread_id(thread))
    };
    let f = match recorded {
        Recorded::Fault(f) => f,
        Recorded::Diverged(d) => {
            return Error::DivergentSync {
                site,
                line: d.line,
                waiting: thread(d.block, d.waiting),
                left: thread(d.block, d.left),
                other_line: d.other_line,
            }
        }
        Recorded::Stalled(w) => {
            return Error::ThreadPanicked {
                site,
                thread: thread(w.block, w.thread),
                at: Some(format!("{}:{}", site.file, w.line)),
                message: format!(
                    "`#wait` at line {}: this thread waited {} s for the phase of parity {} of its mbarrier, which did not complete: a deadlock (an `#mbarrier arrive` or a TMA copy's bytes that never come, such as a producer and its consumers waiting for each other)",
                    w.line,
                    fault::WAIT_LIMIT_NS / 1_000_000_000,
                    w.parity
                ),
            }
        }
    };
    let name = names.get(f.which).copied().unwrap_or("an array");
    let (offset, extent) = (u128::from(f.offset), f.extent as usize);
    let message = match f.vector {
        None => out_of_bounds_message(offset, name, extent),
        Some((v, false)) => vector_out_of_bounds_message(v, offset, name, extent),
        Some((v, true)) => misaligned_message(v, offset, name),
    };
    Error::ThreadPanicked {
        site,
        thread: thread(f.block, f.thread),
        at: Some(format!("{}:{}", site.file, f.line)),
        message,
    }
}
