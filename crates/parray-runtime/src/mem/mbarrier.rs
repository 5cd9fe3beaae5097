//! The emulation's model of an mbarrier (PTX ISA, "Parallel Synchronization and
//! Communication Instructions: mbarrier"), the barrier a TMA copy completes on: the state
//! machine of one 8-byte barrier object, and what a thread has observed of it.
//!
//! A barrier counts down *arrivals* (the count it was initialised with) and *transaction
//! bytes* (armed by `expect_tx`, counted down by the copy engine's `complete_tx`); when both
//! reach zero the current *phase* completes, the next begins with the arrivals reset. A
//! thread waits for a phase by its parity (`try_wait.parity P`: true once the phase of
//! parity P before the current one has completed), so a wait names one of two phases;
//! the model counts phases in full and [`Observer`] refuses the waits whose parity names
//! a phase two or more back (on a GPU they return at once, with the data of a later
//! phase: a wait was skipped, or a producer ran two phases ahead of its consumer).
//!
//! The emulation completes a copy's transaction bytes when it is issued (it moves the
//! tile then, holding the stores until a wait observes the phase, as `mem::in_flight`
//! holds `cp.async`'s): a phase it cannot complete lacks arrivals, which only a thread can
//! make, so a wait for it while no thread can arrive is a deadlock, reported with
//! [`Mbarrier::missing`] instead of hanging.

use std::fmt;

/// The largest arrival count and transaction count an mbarrier holds (2^20 - 1).
pub const MAX_COUNT: u64 = (1 << 20) - 1;

/// What an mbarrier refuses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MbarrierError {
    /// `init` with a count outside 1..=2^20 - 1.
    Count(u64),
    /// `init` of a barrier whose phase has arrivals or bytes outstanding.
    InUse { arrived: u64, tx: i64 },
    /// The transaction count leaves -(2^20 - 1)..=2^20 - 1.
    TxOverflow { tx: i64 },
    /// A wait with a parity other than 0 or 1.
    Parity(u32),
    /// A wait whose parity names the phase two or more back from the one the thread saw
    /// last: `observed` is the phase it would observe, `last` the last it observed.
    Skipped { observed: i64, last: Option<i64> },
}

impl fmt::Display for MbarrierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MbarrierError::Count(n) => write!(
                f,
                "an mbarrier counts 1 to {MAX_COUNT} arrivals, not {n}"
            ),
            MbarrierError::InUse { arrived, tx } => write!(
                f,
                "the mbarrier is initialised again while its phase has {arrived} arrivals and {tx} transaction bytes outstanding: initialise it once, before its first use"
            ),
            MbarrierError::TxOverflow { tx } => write!(
                f,
                "the mbarrier's transaction count would be {tx}, outside -{MAX_COUNT}..={MAX_COUNT}: arm it with the bytes of at most one phase's copies"
            ),
            MbarrierError::Parity(p) => write!(f, "a wait's parity is 0 or 1, not {p}"),
            MbarrierError::Skipped { observed, last } => write!(
                f,
                "this wait's parity names phase {observed}, but {} phase {} completed unobserved in between (the parity of a phase is that of the phase two later): wait for each phase in turn",
                match last {
                    Some(l) => format!("this thread observed phase {l} last, and"),
                    None => "this thread observed no phase yet, and".to_string(),
                },
                observed - 1
            ),
        }
    }
}

/// One mbarrier object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mbarrier {
    /// The arrivals a phase waits for.
    expected: u64,
    /// Arrivals of the current phase so far.
    arrived: u64,
    /// Transaction bytes armed and not yet completed in the current phase.
    tx: i64,
    /// Phases completed: the current phase's number.
    phase: u64,
}

impl Mbarrier {
    /// `mbarrier.init` with `count` arrivals a phase.
    pub fn init(count: u64) -> Result<Mbarrier, MbarrierError> {
        if !(1..=MAX_COUNT).contains(&count) {
            return Err(MbarrierError::Count(count));
        }
        Ok(Mbarrier {
            expected: count,
            arrived: 0,
            tx: 0,
            phase: 0,
        })
    }

    /// `mbarrier.init` of this barrier again: allowed where its phase has nothing
    /// outstanding.
    pub fn reinit(&mut self, count: u64) -> Result<(), MbarrierError> {
        if self.arrived != 0 || self.tx != 0 {
            return Err(MbarrierError::InUse {
                arrived: self.arrived,
                tx: self.tx,
            });
        }
        *self = Mbarrier::init(count)?;
        Ok(())
    }

    /// The current phase's number (the phases completed before it).
    pub fn phase(&self) -> u64 {
        self.phase
    }

    fn add_tx(&mut self, bytes: i64) -> Result<(), MbarrierError> {
        let tx = self.tx + bytes;
        if tx.unsigned_abs() > MAX_COUNT {
            return Err(MbarrierError::TxOverflow { tx });
        }
        self.tx = tx;
        self.complete_if_done();
        Ok(())
    }

    /// `expect_tx`: the current phase waits for `bytes` more transaction bytes.
    pub fn expect_tx(&mut self, bytes: u64) -> Result<(), MbarrierError> {
        self.add_tx(bytes.min(MAX_COUNT + 1) as i64)
    }

    /// `complete_tx`: the copy engine delivered `bytes` (it may run ahead of the
    /// `expect_tx` that arms them: the count goes negative). Returns the phase they
    /// belong to.
    pub fn complete_tx(&mut self, bytes: u64) -> Result<u64, MbarrierError> {
        let phase = self.phase;
        self.add_tx(-(bytes.min(MAX_COUNT + 1) as i64))?;
        Ok(phase)
    }

    /// `mbarrier.arrive`: one arrival at the current phase, whose number it returns (the
    /// phase completes with the last arrival once its bytes are in).
    pub fn arrive(&mut self) -> u64 {
        let phase = self.phase;
        self.arrived += 1;
        self.complete_if_done();
        phase
    }

    fn complete_if_done(&mut self) {
        if self.arrived == self.expected && self.tx == 0 {
            self.arrived = 0;
            self.phase += 1;
        }
    }

    /// `mbarrier.try_wait.parity`: the phase a wait for `parity` observes complete (the
    /// one before the current phase, where its parity is `parity`), or `None` while the
    /// phase of that parity is the current one. Before the first phase completes, parity
    /// 1 observes phase -1 (a GPU's wait returns at once: how a producer's first wait for
    /// an empty stage passes).
    pub fn completed(&self, parity: u32) -> Result<Option<i64>, MbarrierError> {
        if parity > 1 {
            return Err(MbarrierError::Parity(parity));
        }
        Ok((self.phase % 2 != u64::from(parity)).then(|| self.phase as i64 - 1))
    }

    /// What the current phase waits for, as a deadlock's message says it: `2 of 3
    /// arrivals` and/or `16384 transaction bytes`.
    pub fn missing(&self) -> String {
        let mut parts = Vec::new();
        if self.arrived < self.expected {
            parts.push(format!(
                "{} of its {} arrivals",
                self.expected - self.arrived,
                self.expected
            ));
        }
        if self.tx > 0 {
            parts.push(format!("{} transaction bytes", self.tx));
        }
        format!("phase {} lacks {}", self.phase, parts.join(" and "))
    }
}

/// What one thread has observed of one mbarrier: the phases its waits saw complete.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observer {
    last: Option<i64>,
}

impl Observer {
    /// The last phase this thread observed complete.
    pub fn last(self) -> Option<i64> {
        self.last
    }

    /// A wait for `parity` on `barrier`: the phase it observes (`None`: not complete
    /// yet), refused where the phase before it completed unobserved by this thread.
    pub fn wait(&mut self, barrier: &Mbarrier, parity: u32) -> Result<Option<i64>, MbarrierError> {
        let Some(observed) = barrier.completed(parity)? else {
            return Ok(None);
        };
        // Observing the same phase again is a repeated wait; the next is the one after.
        let next = self.last.map_or(0, |l| l + 1);
        if observed > next {
            return Err(MbarrierError::Skipped {
                observed,
                last: self.last,
            });
        }
        self.last = Some(self.last.map_or(observed, |l| l.max(observed)));
        Ok(Some(observed))
    }

    /// Whether the thread has observed phase `phase` complete (a copy completing on it
    /// may be read).
    pub fn has_seen(self, phase: u64) -> bool {
        self.last.is_some_and(|l| l >= phase as i64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A TMA stage's full barrier: one arrival (the producer's `arrive.expect_tx`) and the
    /// box's bytes, whichever comes first.
    #[test]
    fn a_phase_completes_with_its_arrivals_and_its_bytes() {
        let mut b = Mbarrier::init(1).unwrap();
        let mut consumer = Observer::default();
        assert_eq!(consumer.wait(&b, 0), Ok(None));
        b.expect_tx(16384).unwrap();
        assert_eq!(b.arrive(), 0);
        assert_eq!(b.missing(), "phase 0 lacks 16384 transaction bytes");
        assert_eq!(consumer.wait(&b, 0), Ok(None));
        assert_eq!(b.complete_tx(16384), Ok(0));
        assert_eq!(b.phase(), 1);
        assert_eq!(consumer.wait(&b, 0), Ok(Some(0)));
        assert!(consumer.has_seen(0) && !consumer.has_seen(1));
        // A repeated wait observes the same phase; parity 1 is the current phase's.
        assert_eq!(consumer.wait(&b, 0), Ok(Some(0)));
        assert_eq!(consumer.wait(&b, 1), Ok(None));
        // The bytes may land before the arrival arms them.
        assert_eq!(b.complete_tx(100), Ok(1));
        b.expect_tx(100).unwrap();
        assert_eq!(b.phase(), 1);
        b.arrive();
        assert_eq!(consumer.wait(&b, 1), Ok(Some(1)));
    }

    /// An empty barrier of 128 consumer threads: the last arrival completes the phase.
    #[test]
    fn arrivals_count_down_and_reset() {
        let mut b = Mbarrier::init(128).unwrap();
        for _ in 0..127 {
            b.arrive();
        }
        assert_eq!(b.missing(), "phase 0 lacks 1 of its 128 arrivals");
        assert_eq!(b.completed(0), Ok(None));
        b.arrive();
        assert_eq!(b.completed(0), Ok(Some(0)));
        assert_eq!(b.missing(), "phase 1 lacks 128 of its 128 arrivals");
    }

    /// Two phases completed and the thread observed neither: parity 1 names phase 1, whose
    /// data a GPU returns, with phase 0's never seen.
    #[test]
    fn a_skipped_phase_is_refused() {
        let mut b = Mbarrier::init(1).unwrap();
        b.arrive();
        b.arrive();
        let mut t = Observer::default();
        let e = t.wait(&b, 1).unwrap_err();
        assert_eq!(
            e.to_string(),
            "this wait's parity names phase 1, but this thread observed no phase yet, and phase 0 completed unobserved in between (the parity of a phase is that of the phase two later): wait for each phase in turn"
        );
        // Parity 0 is the current phase, 2: not complete.
        assert_eq!(t.wait(&b, 0), Ok(None));
    }

    /// A producer's first wait for an empty stage, parity 1 on a fresh barrier, passes
    /// (phase -1); its next, parity 0, waits for the consumers' first release.
    #[test]
    fn parity_1_on_a_fresh_barrier_passes() {
        let mut empty = Mbarrier::init(2).unwrap();
        let mut producer = Observer::default();
        assert_eq!(producer.wait(&empty, 1), Ok(Some(-1)));
        assert!(!producer.has_seen(0));
        assert_eq!(producer.wait(&empty, 0), Ok(None));
        empty.arrive();
        empty.arrive();
        assert_eq!(producer.wait(&empty, 0), Ok(Some(0)));
        assert!(producer.has_seen(0));
    }

    #[test]
    fn misuse_is_refused() {
        assert_eq!(Mbarrier::init(0), Err(MbarrierError::Count(0)));
        assert_eq!(Mbarrier::init(1 << 20), Err(MbarrierError::Count(1 << 20)));
        let mut b = Mbarrier::init(2).unwrap();
        b.arrive();
        assert_eq!(b.reinit(1), Err(MbarrierError::InUse { arrived: 1, tx: 0 }));
        let mut b = Mbarrier::init(1).unwrap();
        assert_eq!(
            b.expect_tx(1 << 20),
            Err(MbarrierError::TxOverflow { tx: 1 << 20 })
        );
        assert_eq!(b.completed(2), Err(MbarrierError::Parity(2)));
        b.reinit(3).unwrap();
        assert_eq!(b.missing(), "phase 0 lacks 3 of its 3 arrivals");
    }
}
