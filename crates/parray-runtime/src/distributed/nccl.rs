//! The blocks of an all-to-all between the GPU parts of a job's ranks: by NCCL on the
//! devices where every rank has it, else through host memory and MPI; and, where NCCL is
//! there, runs of elements moved straight from part to part ([`move_runs`]).
//!
//! NCCL's messages go on the device's side stream (`CudaDevice::side_stream`), so that
//! they overlap work on its stream; each call here orders the two by events.

#[cfg(feature = "mpi")]
pub(crate) use with_mpi::{has_nccl, move_blocks, move_runs};
#[cfg(not(feature = "mpi"))]
pub(crate) use without_mpi::{has_nccl, move_blocks, move_runs};

/// One message of a group: `len` elements from (or into) offset `at` of a part, or of a
/// staging array where `staged`, to (or from) rank `peer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Message {
    pub(crate) peer: usize,
    pub(crate) at: usize,
    pub(crate) len: usize,
    pub(crate) staged: bool,
}

/// The arrays of one side of a group of messages: the part, and a staging array.
pub(crate) type Ends<'a, B> = (B, Option<B>, &'a [Message]);

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::sync::{Mutex, OnceLock};

    use cudarc::driver::CudaSlice;
    use mpi::topology::Communicator;
    use mpi::traits::*;
    use parray_layout::copy::Collective;

    use super::{Ends, Message};
    use crate::devices::device::CudaDevice;
    use crate::distributed::comm;
    use crate::error::{Error, Result};
    use crate::mem::buffer::Buffer;
    use crate::mem::elem::Element;

    /// The blocks of an all-to-all between GPU parts: `send` holds `block` elements for
    /// each rank in turn, `recv` receives each rank's in turn. By NCCL on the devices when
    /// every rank has libnccl (and `PARRAY_NCCL` is not `0`), else through host memory.
    pub(crate) fn move_blocks<T: Element>(
        cuda: &CudaDevice,
        send: &Buffer<T>,
        recv: &mut Buffer<T>,
        block: usize,
    ) -> Result<()> {
        if let Some(gpus) = nccl(cuda)? {
            return gpus.all_to_all(cuda, send, recv, block);
        }
        let sent = send.to_vec()?;
        let mut received = vec![T::default(); sent.len()];
        let size = comm::world().size() as usize;
        let sends: Vec<Vec<T>> = (0..size)
            .map(|d| sent[d * block..(d + 1) * block].to_vec())
            .collect();
        comm::exchange(
            Collective::AllToAll,
            &sends,
            &mut received,
            &vec![block; size],
        )?;
        recv.copy_prefix_from_slice(&received)
    }

    /// Whether messages between GPU parts on `cuda` go by NCCL: decided alike on every
    /// rank (the communicator is made, or not, by all of them).
    pub(crate) fn has_nccl(cuda: &CudaDevice) -> Result<bool> {
        Ok(nccl(cuda)?.is_some())
    }

    /// One group of NCCL messages on the device's side stream, queued after the work
    /// queued on its stream so far and not waited for: the sends from the source's part or
    /// staging array, the receives into the destination's (offsets and lengths in
    /// elements, within the arrays: checked). Every rank posts its group of the same
    /// exchange in the same order, so that each send meets the receive of its length.
    pub(crate) fn move_runs<T: Element>(
        cuda: &CudaDevice,
        sends: Ends<'_, &Buffer<T>>,
        recvs: Ends<'_, &mut Buffer<T>>,
    ) -> Result<()> {
        let gpus = nccl(cuda)?.ok_or_else(|| Error::Mpi {
            what: "#copy between GPU parts".into(),
            reason: "messages straight between parts need NCCL on every rank".into(),
        })?;
        gpus.move_runs(cuda, sends, recvs)
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
                if comm::all_gather(u64::from(present)).contains(&0) {
                    return Ok(None);
                }
                let world = comm::world();
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
                let side = cuda.side_stream().map_err(|e| e.to_string())?;
                let comm = cudarc::nccl::Comm::from_rank(
                    side.clone(),
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
    struct Nccl {
        comm: Mutex<cudarc::nccl::Comm>,
        ordinal: usize,
    }

    // SAFETY: an NCCL communicator may be used from any thread when calls on it are not
    // concurrent; the mutex serialises them.
    unsafe impl Send for Nccl {}
    // SAFETY: as above.
    unsafe impl Sync for Nccl {}

    impl Nccl {
        /// Every rank's block to every rank: a group of sends and receives, complete when
        /// this returns.
        fn all_to_all<T: Element>(
            &self,
            cuda: &CudaDevice,
            send: &Buffer<T>,
            recv: &mut Buffer<T>,
            block: usize,
        ) -> Result<()> {
            let me = comm::world().rank() as usize;
            let size = comm::world().size() as usize;
            let message = |peer: usize| Message {
                peer,
                at: peer * block,
                len: block,
                staged: false,
            };
            let peers: Vec<Message> = (0..size).filter(|p| *p != me).map(message).collect();
            // This rank's own block: a device copy, not a message.
            let side = cuda.side_stream()?;
            let fail = |e| Error::driver("#copy", "a device-to-device copy", e);
            side.join(&cuda.stream).map_err(fail)?;
            let own = me * block..(me + 1) * block;
            let (from, to) = (device_slice(send)?, device_slice_mut(recv)?);
            side.memcpy_dtod(&from.slice(own.clone()), &mut to.slice_mut(own))
                .map_err(fail)?;
            self.move_runs(cuda, (send, None, &peers), (recv, None, &peers))?;
            side.synchronize()
                .map_err(|e| Error::driver("#copy", "an NCCL exchange", e))
        }

        /// [`move_runs`]: the group on the side stream, after the device stream's work.
        fn move_runs<T: Element>(
            &self,
            cuda: &CudaDevice,
            (src, src_staging, sends): Ends<'_, &Buffer<T>>,
            (dst, dst_staging, recvs): Ends<'_, &mut Buffer<T>>,
        ) -> Result<()> {
            let t = size_of::<T>();
            let bytes = |m: &Message| m.at * t..(m.at + m.len) * t;
            fn as_bytes<T: Element>(b: &Buffer<T>) -> Result<cudarc::driver::CudaView<'_, u8>> {
                let slice = device_slice(b)?;
                let n = slice.len() * size_of::<T>();
                // SAFETY: `T` is an `Element` (plain bytes, no padding), so its slices are
                // as many bytes; the view covers exactly the array.
                Ok(unsafe { slice.transmute::<u8>(n) }.expect("as many bytes"))
            }
            let (part, staging) = (as_bytes(src)?, src_staging.map(as_bytes).transpose()?);
            let source = |m: &Message| {
                if m.staged {
                    staging.as_ref()
                } else {
                    Some(&part)
                }
            };
            let within =
                |m: &Message, len: Option<usize>| len.is_some_and(|len| bytes(m).end <= len);
            if let Some(m) = sends
                .iter()
                .find(|m| !within(m, source(m).map(|v| v.len())))
            {
                return Err(outside(m));
            }
            let dst_lens = (
                dst.extent() * t,
                dst_staging.as_ref().map(|b| b.extent() * t),
            );
            let target_len = |m: &Message| {
                if m.staged {
                    dst_lens.1
                } else {
                    Some(dst_lens.0)
                }
            };
            if let Some(m) = recvs.iter().find(|m| !within(m, target_len(m))) {
                return Err(outside(m));
            }
            let comm = self.comm.lock().unwrap_or_else(|e| e.into_inner());
            let fail = |e: cudarc::nccl::result::NcclError| Error::Mpi {
                what: "#copy between GPU parts".into(),
                reason: format!("NCCL: {e:?}"),
            };
            comm.stream()
                .join(&cuda.stream)
                .map_err(|e| Error::driver("#copy", "ordering NCCL after the device's work", e))?;
            let (dst_part, mut dst_staging) = (
                device_slice_mut(dst)?,
                match dst_staging {
                    Some(b) => Some(device_slice_mut(b)?),
                    None => None,
                },
            );
            let mut into_bytes = |m: &Message| {
                let slice = if m.staged {
                    dst_staging.as_deref_mut()
                } else {
                    Some(&mut *dst_part)
                }
                .expect("checked: a staged receive has a staging array");
                let n = slice.len() * t;
                // SAFETY: as in `as_bytes`, for the destination's array.
                let mut all = unsafe { slice.transmute_mut::<u8>(n) }.expect("as many bytes");
                comm.recv(&mut all.slice_mut(bytes(m)), m.peer as i32)
                    .map(|_| ())
            };
            // One group: every send and receive posted before any must complete.
            cudarc::nccl::group_start().map_err(fail)?;
            let mut posted = Ok(());
            for m in sends {
                let from = source(m).expect("checked above");
                posted = posted.and_then(|_| comm.send(&from.slice(bytes(m)), m.peer as i32));
            }
            for m in recvs {
                posted = posted.and_then(|_| into_bytes(m));
            }
            let ended = cudarc::nccl::group_end();
            posted.map_err(fail)?;
            ended.map_err(fail)?;
            Ok(())
        }
    }

    /// A message that reaches past its array.
    fn outside(m: &Message) -> Error {
        Error::CopyUnsupported {
            reason: format!(
                "a message of {} elements at {} reaches past its array",
                m.len, m.at
            ),
        }
    }

    fn device_slice<T: Element>(b: &Buffer<T>) -> Result<&CudaSlice<T>> {
        b.device_slice().ok_or_else(|| Error::CudaUnavailable {
            reason: format!("{} is not in GPU memory", b.type_name()),
        })
    }

    fn device_slice_mut<T: Element>(b: &mut Buffer<T>) -> Result<&mut CudaSlice<T>> {
        let name = b.type_name();
        b.device_slice_mut().ok_or_else(|| Error::CudaUnavailable {
            reason: format!("{name} is not in GPU memory"),
        })
    }
}

#[cfg(not(feature = "mpi"))]
mod without_mpi {
    use super::Ends;
    use crate::devices::device::CudaDevice;
    use crate::error::{Error, Result};
    use crate::mem::buffer::Buffer;
    use crate::mem::elem::Element;

    pub(crate) fn move_blocks<T: Element>(
        _: &CudaDevice,
        _: &Buffer<T>,
        _: &mut Buffer<T>,
        _: usize,
    ) -> Result<()> {
        Err(Error::MpiUnavailable)
    }

    pub(crate) fn has_nccl(_: &CudaDevice) -> Result<bool> {
        Ok(false)
    }

    pub(crate) fn move_runs<T: Element>(
        _: &CudaDevice,
        _: Ends<'_, &Buffer<T>>,
        _: Ends<'_, &mut Buffer<T>>,
    ) -> Result<()> {
        Err(Error::MpiUnavailable)
    }
}
