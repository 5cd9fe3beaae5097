//! The emulation's race detector (debug builds), in two parts (SPEC.md 3.5, "Barriers and
//! races"):
//! - shared memory ([`Watch`]): for each word of a block's shared array, which thread last
//!   wrote it and which threads read it since the block's last barrier. Two accesses of one
//!   word by two threads of a block with no barrier between them, one of them a write, are
//!   a race: on a GPU the order of the two is anyone's, so the value read (or the one left)
//!   is too.
//! - global memory ([`Writes`]): for each word of a dmem array that a launch writes, the
//!   last thread that wrote it. Two threads writing one word in one launch race unless a
//!   barrier of their block passed between the writes, or the second writer had passed a
//!   fencing atomic (`atomic_exch`, `atomic_cas`: a lock may order it). Reads of global
//!   memory are not watched.
//!
//! Marks are kept per word of an element (`ElemType::word_bytes`): threads writing
//! different fields of one record touch different words, as on a GPU. The emulation runs
//! a block's threads one after another and would print one of the answers as if it were
//! the answer; it reports the first race of a block instead. Atomic updates are no race
//! with each other and are not watched.

use std::cell::{Cell, RefCell};
use std::marker::PhantomData;
use std::panic::Location;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use parray_layout::MemKind;

use crate::mem::elem::Element;
use crate::mem::in_flight::{InFlight, Wgmmas};

/// The words of an element of `T` the watch marks: the words its accesses move.
pub(crate) const fn words_of<T: Element>() -> usize {
    size_of::<T>() / T::ELEM.word_bytes() as usize
}

/// One access to shared memory: by which thread, between which barriers, where in the
/// user's code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Touch {
    /// The interval between barriers (the block's count of barriers passed).
    epoch: u64,
    /// The thread's id in its block.
    pub thread: u32,
    pub write: bool,
    pub at: &'static Location<'static>,
}

/// One of the two accesses of a race.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    /// The thread's id in the grid (`$tid$`).
    pub thread: u64,
    pub write: bool,
    pub at: &'static Location<'static>,
}

/// Two accesses of element `element` of the array `array` (shared or global memory, as
/// `memory` says) by two threads with nothing ordering them, at least one a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Race {
    pub memory: MemKind,
    pub array: &'static str,
    pub element: usize,
    /// The access made first (by the emulation's order) and the one that met it.
    pub first: Access,
    pub second: Access,
}

/// A lane's place in time: the block it runs and the interval between barriers it is in,
/// the thread running, the first race seen, and the lane's part of the launch's watch of
/// global memory.
#[derive(Debug, Default)]
pub struct Clock {
    epoch: Cell<u64>,
    thread: Cell<u32>,
    /// The grid id of the block's thread 0.
    block_tid: Cell<u64>,
    race: Cell<Option<Race>>,
    /// `None` where global memory is not watched (release builds, a launch too large).
    global: RefCell<Option<LaneWrites>>,
    /// The block's `#copy async`s in flight (all builds: they land at the `#wait`).
    pub(crate) copies: InFlight,
    /// The tiles its asynchronous wgmmas read (debug builds).
    pub(crate) wgmmas: Wgmmas,
    /// The block's mbarriers (SPEC 3.9, "TMA copies"), by their element's host address:
    /// the model of each, and what each thread of the block observed of it.
    pub(crate) mbarriers: RefCell<Mbarriers>,
    /// Changes of the block's mbarriers and waits passed, counted: a body whose branches
    /// are all waiting ([`crate::exec::emulate::run_block`]) and made none since is
    /// deadlocked.
    pub(crate) progress: Cell<u64>,
}

/// A block's mbarriers by their element's host address: the model of each, and by thread
/// of the block what it observed of it.
pub(crate) type Mbarriers = std::collections::HashMap<
    usize,
    (
        crate::mem::mbarrier::Mbarrier,
        std::collections::HashMap<usize, crate::mem::mbarrier::Observer>,
    ),
>;

impl Clock {
    /// Counts a change of an mbarrier, or a wait passed.
    pub(crate) fn progressed(&self) {
        self.progress.set(self.progress.get() + 1);
    }

    /// A new block, whose thread 0 is thread `block_tid` of the grid, starts: accesses of
    /// the last block race with none of it here (global memory keeps its marks).
    pub fn start_block(&self, block_tid: u64) {
        self.epoch.set(self.epoch.get() + 1);
        self.block_tid.set(block_tid);
        self.race.take();
        // What a failed block left in flight.
        let _ = self.copies.left();
        let _ = self.wgmmas.left();
        self.mbarriers.borrow_mut().clear();
        self.progress.set(0);
        if let Some(g) = self.global.borrow_mut().as_mut() {
            g.fenced.fill(0);
            if let Some(log) = &mut g.unsealed {
                log.clear();
            }
        }
    }

    /// The block's threads passed a barrier: accesses before it race with none after it
    /// by the block's threads.
    pub fn barrier(&self) {
        self.epoch.set(self.epoch.get() + 1);
        self.wgmmas.barrier();
        if let Some(g) = self.global.borrow_mut().as_mut() {
            g.seal();
        }
    }

    /// Thread `thread` of the block runs next.
    #[inline]
    pub fn run(&self, thread: usize) {
        // A block has at most 1024 threads.
        self.thread.set(thread as u32);
    }

    /// The first race since the last call.
    pub fn take_race(&self) -> Option<Race> {
        self.race.take()
    }

    /// Keeps `race` unless one was seen before.
    #[cold]
    fn met(&self, race: Race) {
        let seen = self.race.get();
        self.race.set(seen.or(Some(race)));
    }

    /// The block's id of the thread running.
    pub(crate) fn thread(&self) -> usize {
        self.thread.get() as usize
    }

    /// The grid id of the thread running.
    pub(crate) fn tid(&self) -> u64 {
        self.block_tid.get() + u64::from(self.thread.get())
    }

    /// Makes this the clock of the lane running on this OS thread, watching global memory
    /// in `writes` (if any) until the guard drops; `barriers`: whether the body has any
    /// (only then are writes logged for a barrier to order).
    pub(crate) fn enter(&self, writes: Option<Arc<Writes>>, barriers: bool) -> Entered<'_> {
        *self.global.borrow_mut() = writes.map(|launch| LaneWrites {
            fenced: vec![0; launch.block_threads.div_ceil(64) as usize],
            launch,
            shadows: Vec::new(),
            site: None,
            unsealed: barriers.then(Vec::new),
        });
        let previous = LANE.replace(Some(NonNull::from(self)));
        Entered {
            previous,
            _clock: PhantomData,
        }
    }
}

thread_local! {
    /// The clock of the emulated lane this OS thread runs, while it runs one
    /// ([`Clock::enter`]): how a dmem handle, which a launch's threads share, finds the
    /// thread writing through it.
    static LANE: Cell<Option<NonNull<Clock>>> = const { Cell::new(None) };
}

/// The lane's clock is current on this OS thread while this lives.
pub(crate) struct Entered<'c> {
    previous: Option<NonNull<Clock>>,
    _clock: PhantomData<&'c Clock>,
}

impl Drop for Entered<'_> {
    fn drop(&mut self) {
        LANE.set(self.previous);
    }
}

/// `f` of the clock of the lane this OS thread runs, if it runs one.
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
pub(crate) fn with_lane(f: impl FnOnce(&Clock)) {
    if let Some(clock) = LANE.get() {
        // SAFETY: `LANE` holds a clock only while the `Entered` guard that put it there
        // lives, which borrows it (so it outlives the guard); the guard restores the
        // previous value when it drops, and guards are dropped in the reverse order of
        // their making, on this OS thread, the only one that reads this `LANE`.
        f(unsafe { clock.as_ref() })
    }
}

/// Bits of a global mark that hold the writer's grid id plus one (0: no writer).
const THREAD_BITS: u32 = 44;
/// Bits of a global mark, above the thread's, that hold the writer's place in the user's
/// code (its number among the launch's [`Writes::sites`]).
const SITE_BITS: u32 = 19;
/// The bit of a global mark made before a barrier of the writer's block, which orders it
/// before every later access of the block's threads.
const SEALED: u64 = 1 << 63;

/// The watch of a launch's global memory, shared by its lanes: for each dmem array that it
/// writes, a mark per word (`Arc<[AtomicU64]>`, made at its first write and zero until a
/// word is written: the writer's grid id plus one, where it wrote it, whether a barrier
/// sealed it).
#[derive(Debug)]
pub struct Writes {
    block_threads: u64,
    /// By the array's address: its marks.
    shadows: Mutex<Vec<(usize, Arc<[AtomicU64]>)>>,
    /// The places in the user's code that wrote, numbered as the marks record them.
    sites: Mutex<Vec<&'static Location<'static>>>,
}

impl Writes {
    /// The watch of a launch of `threads` threads in blocks of `block_threads`: `None` in
    /// release builds, and where a thread's id would not fit a mark (2^44 threads, more
    /// than an emulation runs in a day).
    pub fn new(threads: u64, block_threads: u64) -> Option<Arc<Writes>> {
        (cfg!(debug_assertions) && threads < (1 << THREAD_BITS)).then(|| {
            Arc::new(Writes {
                block_threads,
                shadows: Mutex::default(),
                sites: Mutex::default(),
            })
        })
    }
}

/// A lane's view of the launch's [`Writes`], and what it knows of its block.
#[derive(Debug)]
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
struct LaneWrites {
    launch: Arc<Writes>,
    /// The launch's marks this lane met, by array address.
    shadows: Vec<(usize, Arc<[AtomicU64]>)>,
    /// The last place that wrote and its number.
    site: Option<(&'static Location<'static>, u64)>,
    /// A bit per thread of the block: whether it passed a fencing atomic.
    fenced: Vec<u64>,
    /// For a body with barriers: the marks the block's threads made since its last
    /// barrier (shadow, word, mark), which the next barrier seals.
    unsealed: Option<Vec<(usize, usize, u64)>>,
}

#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
impl LaneWrites {
    /// The number of the marks of the array at `addr` of `len` words among this lane's,
    /// made for the launch at the first write of any lane.
    fn shadow(&mut self, addr: usize, len: usize) -> usize {
        if let Some(k) = self.shadows.iter().position(|(a, _)| *a == addr) {
            return k;
        }
        let mut all = self
            .launch
            .shadows
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        let marks = match all.iter().find(|(a, _)| *a == addr) {
            Some((_, marks)) => marks.clone(),
            None => {
                // SAFETY: all-zero bits are an `AtomicU64` of 0 (it has `u64`'s
                // representation); the zeroed pages cost nothing until written.
                let marks: Arc<[AtomicU64]> = unsafe { Arc::new_zeroed_slice(len).assume_init() };
                all.push((addr, marks.clone()));
                marks
            }
        };
        self.shadows.push((addr, marks));
        self.shadows.len() - 1
    }

    /// The number of the place `at` in the launch's sites; `None` past the 2^19 a mark
    /// holds (a body has far fewer: its writes are the statements of its source).
    fn site(&mut self, at: &'static Location<'static>) -> Option<u64> {
        match self.site {
            Some((last, k)) if std::ptr::eq(last, at) => Some(k),
            _ => {
                let mut sites = self.launch.sites.lock().unwrap_or_else(|e| e.into_inner());
                let k = match sites.iter().position(|s| std::ptr::eq(*s, at)) {
                    Some(k) => k,
                    None => {
                        sites.push(at);
                        sites.len() - 1
                    }
                } as u64;
                (k < 1 << SITE_BITS).then(|| {
                    self.site = Some((at, k));
                    k
                })
            }
        }
    }

    /// The block's threads passed a barrier: its writes since the last one are ordered
    /// before the rest of the block's (a mark another lane replaced since stays as it is).
    fn seal(&mut self) {
        let Some(log) = &mut self.unsealed else {
            return;
        };
        for (k, word, mark) in log.drain(..) {
            let _ = self.shadows[k].1[word].compare_exchange(
                mark,
                mark | SEALED,
                Ordering::Relaxed,
                Ordering::Relaxed,
            );
        }
    }
}

/// The thread running on this OS thread's lane writes the `count` words from `first` of
/// the dmem array `array` at `addr` (of `len` words, `per_element` to an element; in
/// bounds: checked before), at `at`.
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
pub(crate) fn note_global_write(
    array: &'static str,
    (addr, len, per_element): (usize, usize, usize),
    first: usize,
    count: usize,
    at: &'static Location<'static>,
) {
    with_lane(|clock| {
        let mut global = clock.global.borrow_mut();
        let Some(g) = global.as_mut() else {
            return;
        };
        let (thread, tid) = (clock.thread.get() as usize, clock.tid());
        if g.fenced[thread / 64] >> (thread % 64) & 1 == 1 {
            return;
        }
        let Some(site) = g.site(at) else {
            return;
        };
        let mark = (tid + 1) | site << THREAD_BITS;
        let k = g.shadow(addr, len);
        let block = clock.block_tid.get()..clock.block_tid.get() + g.launch.block_threads;
        for word in first..first + count {
            let Some(cell) = g.shadows[k].1.get(word) else {
                break;
            };
            let old = cell.swap(mark, Ordering::Relaxed);
            // The earlier writer's grid id, where another thread wrote the word.
            let other = (old & ((1 << THREAD_BITS) - 1))
                .checked_sub(1)
                .filter(|&w| w != tid);
            let ordered = old & SEALED != 0 && other.is_some_and(|w| block.contains(&w));
            if let Some(writer) = other.filter(|_| !ordered) {
                let sites = g.launch.sites.lock().unwrap_or_else(|e| e.into_inner());
                let site = (old >> THREAD_BITS) & ((1 << SITE_BITS) - 1);
                clock.met(Race {
                    memory: MemKind::Dmem,
                    array,
                    element: word / per_element,
                    first: Access {
                        thread: writer,
                        write: true,
                        at: sites[site as usize],
                    },
                    second: Access {
                        thread: tid,
                        write: true,
                        at,
                    },
                });
            }
            if let Some(log) = &mut g.unsealed {
                log.push((k, word, mark));
            }
        }
    });
}

/// The thread running on this OS thread's lane passed a fencing atomic (`atomic_exch`,
/// `atomic_cas`): its later writes to global memory may be ordered by a lock, which the
/// watch does not follow, so they are not watched.
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
pub(crate) fn fenced() {
    with_lane(|clock| {
        if let Some(g) = clock.global.borrow_mut().as_mut() {
            let thread = clock.thread.get() as usize;
            g.fenced[thread / 64] |= 1 << (thread % 64);
        }
    });
}

/// What is known of one word of a shared array in the current interval.
#[derive(Debug, Default, Clone, Copy)]
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
struct Marks {
    write: Option<Touch>,
    /// The first read, and the first read by another thread than its.
    read: Option<Touch>,
    other_read: Option<Touch>,
}

/// The marks of one shared array of a block, a mark per word of its elements.
#[derive(Debug)]
#[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
pub struct Watch {
    name: &'static str,
    /// Words of an element.
    per_element: usize,
    marks: Box<[Cell<Marks>]>,
}

impl Watch {
    /// The watch of the shared array `name` of `len` elements of `T` (release builds note
    /// nothing, and hold no marks).
    pub fn new<T: Element>(name: &'static str, len: usize) -> Self {
        let per_element = words_of::<T>();
        let words = if cfg!(debug_assertions) {
            len * per_element
        } else {
            0
        };
        Watch {
            name,
            per_element,
            marks: (0..words).map(|_| Cell::new(Marks::default())).collect(),
        }
    }

    /// Thread `clock.thread` accesses the `count` words from `first` (in bounds: checked
    /// before), writing them or reading them, at `at`.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds note nothing
    pub fn note(
        &self,
        clock: &Clock,
        first: usize,
        count: usize,
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
        for (word, cell) in self.marks.iter().enumerate().skip(first).take(count) {
            let mut m = cell.get();
            let met = match write {
                true => other(m.write).or(other(m.read)).or(other(m.other_read)),
                false => other(m.write),
            };
            if let Some(first) = met {
                let access = |t: Touch| Access {
                    thread: clock.block_tid.get() + u64::from(t.thread),
                    write: t.write,
                    at: t.at,
                };
                clock.met(Race {
                    memory: MemKind::Smem,
                    array: self.name,
                    element: word / self.per_element,
                    first: access(first),
                    second: access(now),
                });
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

#[cfg(all(test, debug_assertions))]
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
        let (clock, w) = (Clock::default(), Watch::new::<f32>("S", 4));
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

    /// An element of two words (`double2`) is marked per word: two threads writing one
    /// word each do not race, two writing one word do, named by its element.
    #[test]
    fn the_words_of_an_element_are_marked_apart() {
        use crate::mem::elem::Double2;
        assert_eq!(words_of::<Double2>(), 2);
        let (clock, w) = (Clock::default(), Watch::new::<Double2>("R", 2));
        for (thread, word) in [(0, 2), (1, 3)] {
            clock.run(thread);
            w.note(&clock, word, 1, true, here());
        }
        assert_eq!(clock.take_race(), None);
        clock.run(2);
        w.note(&clock, 3, 1, true, here());
        let race = clock.take_race().expect("two writes of one word");
        assert_eq!(
            (race.element, race.first.thread, race.second.thread),
            (1, 1, 2)
        );
    }

    /// Global memory: two threads writing one word race, in any blocks, unless a barrier
    /// of their one block came between or the second passed a fencing atomic; one thread
    /// writing twice, and different words, are no race.
    #[test]
    fn two_writes_of_one_global_word_race_unless_ordered() {
        let clock = Clock::default();
        let _lane = clock.enter(Writes::new(16, 4), true);
        let array = (0x1000, 8, 1);
        let write = |thread: usize, word: usize| {
            clock.run(thread);
            note_global_write("G", array, word, 1, here());
        };
        // Block 0 (grid ids 0..4): each thread its word, thread 0 twice.
        clock.start_block(0);
        for t in 0..4 {
            write(t, t);
        }
        write(0, 0);
        assert_eq!(clock.take_race(), None);
        // A barrier orders thread 0's write before thread 1's.
        clock.barrier();
        write(1, 0);
        assert_eq!(clock.take_race(), None);
        // Without one, thread 2 meets thread 1.
        write(2, 0);
        let race = clock.take_race().expect("two writes between barriers");
        assert_eq!(race.memory, MemKind::Dmem);
        assert_eq!(
            (race.first.thread, race.second.thread, race.element),
            (1, 2, 0)
        );
        // Block 1 (grid ids 4..8) meets block 0's sealed write all the same.
        clock.barrier();
        clock.start_block(4);
        write(3, 1);
        let race = clock.take_race().expect("two blocks write one word");
        assert_eq!((race.first.thread, race.second.thread), (1, 7));
        // A thread past a fencing atomic is not watched.
        clock.run(0);
        fenced();
        write(0, 2);
        assert_eq!(clock.take_race(), None);
        // Nor is any lane once its clock is no longer current.
        drop(_lane);
        write(1, 3);
        assert_eq!(clock.take_race(), None);
    }
}
