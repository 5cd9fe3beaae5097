//! The emulation's race detector (debug builds): for each element of a block's shared
//! memory, which thread last wrote it and which threads read it since the block's last
//! barrier. Two accesses of one element by two threads of a block with no barrier between
//! them, one of them a write, are a race: on a GPU the order of the two is anyone's, so
//! the value read (or the one left) is too. The emulation runs a block's threads one after
//! another and would print one of the answers as if it were the answer; it reports the
//! first race of a block instead (SPEC.md 3.5, "Barriers and races").
//!
//! Atomic updates are no race with each other and are not watched; global memory is not
//! watched either.

use std::cell::Cell;
use std::panic::Location;

/// One access: by which thread, between which barriers, where in the user's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// The interval between barriers (the block's count of barriers passed).
    epoch: u64,
    /// The thread's id in its block.
    pub thread: u32,
    pub write: bool,
    pub at: &'static Location<'static>,
}

/// Two accesses of element `element` of the shared array `array` by two threads of a
/// block with no barrier between them, at least one a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Race {
    pub array: &'static str,
    pub element: usize,
    /// The access made first (by the emulation's order) and the one that met it.
    pub first: Touch,
    pub second: Touch,
}

/// A block's place in time: the interval between barriers it is in, the thread running,
/// and the first race seen.
#[derive(Debug, Default)]
pub struct Clock {
    epoch: Cell<u64>,
    thread: Cell<u32>,
    race: Cell<Option<Race>>,
}

impl Clock {
    /// The block's threads passed a barrier (or a new block starts): accesses before it
    /// race with none after it.
    pub fn barrier(&self) {
        self.epoch.set(self.epoch.get() + 1);
    }

    /// Thread `thread` of the block runs next.
    pub fn run(&self, thread: usize) {
        // A block has at most 1024 threads.
        self.thread.set(thread as u32);
    }

    /// The first race since the last call.
    pub fn take_race(&self) -> Option<Race> {
        self.race.take()
    }
}

/// What is known of one element in the current interval.
#[derive(Debug, Default, Clone, Copy)]
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
struct Marks {
    write: Option<Touch>,
    /// The first read, and the first read by another thread than its.
    read: Option<Touch>,
    other_read: Option<Touch>,
}

/// The marks of one shared array of a block.
#[derive(Debug)]
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
pub struct Watch {
    name: &'static str,
    marks: Box<[Cell<Marks>]>,
}

impl Watch {
    /// The watch of the shared array `name` of `len` elements (release builds note
    /// nothing, and hold no marks).
    pub fn new(name: &'static str, len: usize) -> Self {
        let len = if cfg!(debug_assertions) { len } else { 0 };
        Watch {
            name,
            marks: (0..len).map(|_| Cell::new(Marks::default())).collect(),
        }
    }

    /// Thread `clock.thread` accesses the `lanes` elements from `index` (in bounds:
    /// checked before), writing them or reading them, at `at`.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
    pub fn note(
        &self,
        clock: &Clock,
        index: usize,
        lanes: usize,
        write: bool,
        at: &'static Location<'static>,
    ) {
        let now = Touch {
            epoch: clock.epoch.get(),
            thread: clock.thread.get(),
            write,
            at,
        };
        let other = |t: Option<Touch>| t.filter(|t| t.epoch == now.epoch && t.thread != now.thread);
        for (element, cell) in self.marks.iter().enumerate().skip(index).take(lanes) {
            let mut m = cell.get();
            let met = match write {
                true => other(m.write).or(other(m.read)).or(other(m.other_read)),
                false => other(m.write),
            };
            if let Some(first) = met {
                let race = Race {
                    array: self.name,
                    element,
                    first,
                    second: now,
                };
                let seen = clock.race.get();
                clock.race.set(seen.or(Some(race)));
            }
            if write {
                m.write = Some(now);
            } else {
                match m.read {
                    Some(r) if r.epoch == now.epoch => {
                        if r.thread != now.thread
                            && m.other_read.is_none_or(|o| o.epoch != now.epoch)
                        {
                            m.other_read = Some(now);
                        }
                    }
                    _ => {
                        m.read = Some(now);
                        m.other_read = None;
                    }
                }
            }
            cell.set(m);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[track_caller]
    fn here() -> &'static Location<'static> {
        Location::caller()
    }

    /// Reads by many threads, and a thread's own accesses, are no race; a write met by
    /// another thread's read or write between the same barriers is, and a barrier
    /// separates them.
    #[test]
    fn two_threads_and_a_write_between_two_barriers_race() {
        let (clock, w) = (Clock::default(), Watch::new("S", 4));
        let access = |thread: usize, element: usize, write: bool| {
            clock.run(thread);
            w.note(&clock, element, 1, write, here());
        };
        // Each thread writes its element and reads it back; all read element 3.
        for t in 0..3 {
            access(t, t, true);
            access(t, t, false);
            access(t, 3, false);
        }
        assert_eq!(clock.take_race(), None);
        // After a barrier, thread 1 reads what thread 0 wrote before it.
        clock.barrier();
        access(1, 0, false);
        assert_eq!(clock.take_race(), None);
        // Element 3 was read before the barrier: writing it now is no race.
        access(2, 3, true);
        assert_eq!(clock.take_race(), None);
        access(2, 0, true);
        let race = clock
            .take_race()
            .expect("a write after another thread's read");
        assert_eq!((race.array, race.element), ("S", 0));
        assert_eq!((race.first.thread, race.first.write), (1, false));
        assert_eq!((race.second.thread, race.second.write), (2, true));
        // A read after another thread's write; the first race of the block is the one kept.
        access(0, 3, false);
        access(1, 2, true);
        let race = clock
            .take_race()
            .expect("a read after another thread's write");
        assert_eq!(
            (race.first.thread, race.second.thread, race.element),
            (2, 0, 3)
        );
        // Two readers, then one of them writes: the other reader is met.
        clock.barrier();
        access(0, 1, false);
        access(1, 1, false);
        access(0, 1, true);
        let race = clock
            .take_race()
            .expect("a write after another thread's read");
        assert_eq!((race.first.thread, race.second.thread), (1, 0));
        // A vector access notes each lane.
        clock.barrier();
        clock.run(0);
        w.note(&clock, 0, 4, true, here());
        access(1, 2, false);
        assert_eq!(clock.take_race().map(|r| r.element), Some(2));
    }
}
