//! The MPI calls the ranks of a job make to one another: an all-gather of one word (how
//! they agree on where they are), the messages of a `#copy` by the collective its types
//! give, and the abort of the job. Without the `mpi` feature there is no job to call them
//! in.

#[cfg(feature = "mpi")]
pub(crate) use with_mpi::{abort, all_gather, exchange, world};
#[cfg(not(feature = "mpi"))]
pub(crate) use without_mpi::{abort, all_gather, exchange};

#[cfg(feature = "mpi")]
mod with_mpi {
    use mpi::topology::{Communicator, SimpleCommunicator};
    use mpi::traits::*;

    use crate::error::{Error, Result};
    use crate::mem::elem::Element;
    use parray_layout::copy::Collective;

    /// The job's communicator of every rank.
    pub(crate) fn world() -> SimpleCommunicator {
        SimpleCommunicator::world()
    }

    /// Every rank's `value`, in rank order.
    pub(crate) fn all_gather(value: u64) -> Vec<u64> {
        let world = world();
        let mut all = vec![0u64; world.size() as usize];
        world.all_gather_into(&value, &mut all[..]);
        all
    }

    /// Ends the job: every rank's process exits with `code`.
    pub(crate) fn abort(code: i32) -> ! {
        world().abort(code)
    }

    /// The messages of one copy, by the MPI call its collective names: `sends[d]` are the
    /// elements for rank `d` (for a broadcast and an all-gather, every rank's are this
    /// rank's elements; for a scatter, only the root has any), and `recv` receives each
    /// source's, `recv_counts[s]` of them, in rank order. Elements travel as words of their
    /// size (8-byte words for 16-byte vectors); counts are checked to fit MPI's `int`.
    pub(crate) fn exchange<T: Element>(
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
mod without_mpi {
    use crate::error::{Error, Result};
    use crate::mem::elem::Element;
    use parray_layout::copy::Collective;

    pub(crate) fn all_gather(_: u64) -> Vec<u64> {
        unreachable!("no job without MPI")
    }

    pub(crate) fn abort(_: i32) -> ! {
        std::process::exit(1)
    }

    pub(crate) fn exchange<T: Element>(
        _: Collective,
        _: &[Vec<T>],
        _: &mut [T],
        _: &[usize],
    ) -> Result<()> {
        Err(Error::MpiUnavailable)
    }
}
