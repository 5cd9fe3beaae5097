//! The blocks of an all-to-all between the GPU parts of a job's ranks: by NCCL on the
//! devices where every rank has it, else through host memory and MPI.

#[cfg(feature = "mpi")]
pub(crate) use with_mpi::move_blocks;
#[cfg(not(feature = "mpi"))]
pub(crate) use without_mpi::move_blocks;

#[cfg(feature = "mpi")]
mod with_mpi {
    use std::sync::{Mutex, OnceLock};

    use cudarc::driver::CudaSlice;
    use mpi::topology::Communicator;
    use mpi::traits::*;
    use parray_layout::copy::Collective;

    use crate::devices::device::CudaDevice;
    use crate::distributed::comm;
    use crate::error::{Error, Result};
    use crate::mem::elem::Element;

    /// The blocks of an all-to-all between GPU parts: `send` holds `block` elements for
    /// each rank in turn, `recv` receives each rank's in turn. By NCCL on the devices when
    /// every rank has libnccl (and `PARRAY_NCCL` is not `0`), else through host memory.
    pub(crate) fn move_blocks<T: Element>(
        cuda: &CudaDevice,
        send: &CudaSlice<T>,
        recv: &mut CudaSlice<T>,
        block: usize,
    ) -> Result<()> {
        if let Some(gpus) = nccl(cuda)? {
            return gpus.all_to_all(send, recv, block);
        }
        let sent = cuda
            .stream
            .clone_dtoh(send)
            .map_err(|e| Error::driver("#copy", "device-to-host copy", e))?;
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
}

#[cfg(not(feature = "mpi"))]
mod without_mpi {
    use cudarc::driver::CudaSlice;

    use crate::devices::device::CudaDevice;
    use crate::error::{Error, Result};
    use crate::mem::elem::Element;

    pub(crate) fn move_blocks<T: Element>(
        _: &CudaDevice,
        _: &CudaSlice<T>,
        _: &mut CudaSlice<T>,
        _: usize,
    ) -> Result<()> {
        Err(Error::MpiUnavailable)
    }
}
