//! The emulation's asynchronous copies (SPEC.md 3.9, "Asynchronous copies"): what a
//! block's threads started with `#copy async` and have not yet waited for; and the tiles
//! of shared memory its warpgroups' asynchronous wgmmas read (SPEC.md 3.5, "Asynchronous",
//! [`Wgmmas`]).
//!
//! While a thread issues a `#copy async` ([`InFlight::begin`] .. [`InFlight::commit`]), each
//! of its stores to the block's shared memory is held here ([`Held`]), not made: it lands
//! when the thread's `#wait` retires the copy's group ([`InFlight::wait`]); the race
//! detector sees it as the thread's write at the copy and at the wait (a GPU's copy writes
//! any time between the two). In debug builds, any access to a
//! held element before then, by any thread of the block, and any write of global memory
//! the copy read, by the block's threads, stop the launch with a message saying what to
//! wait for (`check_shared`, `check_global`): on a GPU such a read gets the old value or
//! the new, and such a write may or may not reach the copy.
//!
//! A TMA copy's stores (SPEC.md 3.9, "TMA copies") are held the same way, tagged with the
//! mbarrier and the phase the copy completes on ([`InFlight::commit_on`]): they land when
//! a wait observes that phase ([`InFlight::land_phase`]), never at a `#wait N`.

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::panic::Location;

/// One store of a `#copy async`, held until its group is retired.
pub(crate) struct Held {
    /// The shared array: its name and its watch's address (one per array of a block).
    pub array: &'static str,
    pub watch: usize,
    /// The element and its words in the array.
    pub element: usize,
    pub words: (usize, usize),
    /// The copy's statement, in the user's code.
    pub at: &'static Location<'static>,
    /// Makes the store, as the waiting thread's write at the given place.
    pub land: Box<dyn FnOnce(&'static Location<'static>)>,
}

/// A held store with its thread and group, and the global memory it read.
struct Move {
    /// The issuing thread: its id in the block and in the grid.
    thread: usize,
    tid: u64,
    /// Its number among the thread's groups.
    group: u64,
    held: Held,
    sources: Vec<Source>,
    /// A TMA copy's store (SPEC 3.9, "TMA copies"): the mbarrier (its element's host
    /// address) and the phase the copy completes on; it lands when a wait observes that
    /// phase ([`InFlight::land_phase`]), never at a `#wait N`.
    barrier: Option<(usize, u64)>,
}

/// Words of a dmem array that an issuing copy read: its name, its address (the
/// array's identity), the words, and the words to an element.
#[derive(Clone, Copy)]
pub(crate) struct Source {
    pub array: &'static str,
    pub addr: usize,
    pub words: (usize, usize),
    pub per_element: usize,
}

/// A block's copies in flight, in the order they were issued.
#[derive(Default)]
pub struct InFlight {
    issuing: Cell<bool>,
    /// Global memory the issuing copy read since its last store: that store's sources.
    read: RefCell<Vec<Source>>,
    /// For each thread of the block, its groups committed so far.
    committed: RefCell<Vec<u64>>,
    moves: RefCell<Vec<Move>>,
    /// `moves.len()`, read on every access of a watched array.
    count: Cell<usize>,
    /// For each word of a shared array (its watch's address, the word) that stores in
    /// flight hold, how many: what an access looks up (a pipeline keeps hundreds of
    /// stores in flight while every access of its tiles is checked).
    words: RefCell<HashMap<(usize, usize), u32>>,
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InFlight({} stores)", self.count.get())
    }
}

/// The words of the shared arrays that `held` holds.
fn held_words(held: &Held) -> impl Iterator<Item = (usize, usize)> + '_ {
    (held.words.0..held.words.0 + held.words.1).map(|w| (held.watch, w))
}

/// Whether the words `(first, count)` and `b` share one.
fn overlap((first, count): (usize, usize), b: (usize, usize)) -> bool {
    first < b.0 + b.1 && b.0 < first + count
}

impl InFlight {
    /// The thread running starts issuing a `#copy async`.
    pub fn begin(&self) {
        self.issuing.set(true);
    }

    /// Whether a thread is issuing a `#copy async` (its shared stores are then held).
    #[inline(always)]
    pub fn issuing(&self) -> bool {
        self.issuing.get()
    }

    /// Holds a store of the issuing thread `thread` (`tid` in the grid) in its group being
    /// issued, with the global memory read for it.
    pub fn hold(&self, thread: usize, tid: u64, held: Held) {
        let group = self.committed.borrow().get(thread).copied().unwrap_or(0);
        let sources = std::mem::take(&mut *self.read.borrow_mut());
        let mut words = self.words.borrow_mut();
        for w in held_words(&held) {
            *words.entry(w).or_insert(0) += 1;
        }
        let mut moves = self.moves.borrow_mut();
        moves.push(Move {
            thread,
            tid,
            group,
            held,
            sources,
            barrier: None,
        });
        self.count.set(moves.len());
    }

    /// Thread `thread`'s copy is issued: its stores are one group.
    pub fn commit(&self, thread: usize) {
        self.issuing.set(false);
        self.read.borrow_mut().clear();
        let mut committed = self.committed.borrow_mut();
        if committed.len() <= thread {
            committed.resize(thread + 1, 0);
        }
        committed[thread] += 1;
    }

    /// Thread `thread`'s TMA copy is issued: the stores held since [`InFlight::begin`]
    /// complete on phase `phase` of the mbarrier `barrier`, not in one of its groups.
    pub fn commit_on(&self, thread: usize, barrier: usize, phase: u64) {
        self.issuing.set(false);
        self.read.borrow_mut().clear();
        let group = self.committed.borrow().get(thread).copied().unwrap_or(0);
        for m in self.moves.borrow_mut().iter_mut() {
            if m.thread == thread && m.group == group && m.barrier.is_none() {
                m.group = u64::MAX;
                m.barrier = Some((barrier, phase));
            }
        }
    }

    /// A wait observed phase `phase` of the mbarrier `barrier` at `at`: the TMA copies'
    /// stores that complete on it (or on an earlier phase) land, in the order issued, as
    /// the running thread's writes.
    pub fn land_phase(&self, barrier: usize, phase: u64, at: &'static Location<'static>) {
        self.land(
            |m| m.barrier.is_some_and(|(b, p)| b == barrier && p <= phase),
            at,
        );
    }

    /// `#wait groups` of thread `thread` at `at`: its stores of all but its last `groups`
    /// groups land, in the order they were issued.
    pub fn wait(&self, thread: usize, groups: u32, at: &'static Location<'static>) {
        let committed = self.committed.borrow().get(thread).copied().unwrap_or(0);
        let retired = committed.saturating_sub(u64::from(groups));
        self.land(|m| m.thread == thread && m.group < retired, at);
    }

    /// The moves `landing` picks land at `at`, in the order they were issued, and their
    /// words are held one copy less.
    fn land(&self, landing: impl FnMut(&mut Move) -> bool, at: &'static Location<'static>) {
        let landing = {
            let mut moves = self.moves.borrow_mut();
            let landing: Vec<Move> = moves.extract_if(.., landing).collect();
            self.count.set(moves.len());
            let mut words = self.words.borrow_mut();
            for w in landing.iter().flat_map(|m| held_words(&m.held)) {
                if let Some(n) = words.get_mut(&w) {
                    *n -= 1;
                    if *n == 0 {
                        words.remove(&w);
                    }
                }
            }
            landing
        };
        // Outside the borrow: a landing notes its write, which looks at the moves.
        for m in landing {
            (m.held.land)(at);
        }
    }

    /// The block ended: the first store still in flight (its thread's grid id, where its
    /// copy is, the array and element, and for a TMA copy the phase it completes on), and
    /// nothing held any more.
    #[allow(clippy::type_complexity)]
    pub fn left(
        &self,
    ) -> Option<(
        u64,
        &'static Location<'static>,
        &'static str,
        usize,
        Option<u64>,
    )> {
        let moves = std::mem::take(&mut *self.moves.borrow_mut());
        self.count.set(0);
        self.words.borrow_mut().clear();
        self.issuing.set(false);
        self.read.borrow_mut().clear();
        self.committed.borrow_mut().clear();
        let m = moves.first()?;
        Some((
            m.tid,
            m.held.at,
            m.held.array,
            m.held.element,
            m.barrier.map(|(_, p)| p),
        ))
    }

    /// Why the access of the words `words` (`per_element` to an element) of the shared
    /// array watched at `watch`, by thread `thread` of the block, is refused: one of them
    /// is held by a copy in flight.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds check nothing
    pub fn check_shared(
        &self,
        watch: usize,
        (words, per_element): ((usize, usize), usize),
        write: bool,
        thread: usize,
    ) -> Option<String> {
        if self.count.get() == 0 {
            return None;
        }
        let (first, count) = words;
        let held = self.words.borrow();
        if !(first..first + count).any(|w| held.contains_key(&(watch, w))) {
            return None;
        }
        let moves = self.moves.borrow();
        let m = moves
            .iter()
            .find(|m| m.held.watch == watch && overlap(words, m.held.words))?;
        let whose = match m.thread == thread {
            true => "this thread's".to_string(),
            false => format!("thread {}'s", m.thread),
        };
        let what = if write { "wrote" } else { "read" };
        if let Some((_, phase)) = m.barrier {
            return Some(format!(
                "thread {thread} of the block {what} element {} of {}, which thread {}'s TMA copy at {}:{} has in flight (it lands when a wait observes phase {phase} of its mbarrier): add `#wait B(b) parity {};` on the copy's barrier before this access",
                words.0.max(m.held.words.0) / per_element.max(1),
                m.held.array,
                m.thread,
                m.held.at.file(),
                m.held.at.line(),
                phase % 2
            ));
        }
        let fix = match m.thread == thread {
            true => "add `#wait 0;` (or `#wait N;` that retires the copy) before this access",
            false => "add `#wait 0;` in the copying thread and then `#sync` before this access",
        };
        Some(format!(
            "thread {thread} of the block {what} element {} of {}, which {whose} `#copy async` at {}:{} has in flight (it lands at that thread's `#wait`): {fix}",
            words.0.max(m.held.words.0) / per_element.max(1),
            m.held.array,
            m.held.at.file(),
            m.held.at.line()
        ))
    }

    /// A read (noted as a source of the issuing copy) or a write of the words `source` of a
    /// dmem array by thread `thread` of the block; why a write is refused: a copy in flight
    /// reads them.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds check nothing
    pub fn check_global(&self, source: Source, write: bool, thread: usize) -> Option<String> {
        if !write {
            if self.issuing.get() {
                self.read.borrow_mut().push(source);
            }
            return None;
        }
        if self.count.get() == 0 {
            return None;
        }
        let moves = self.moves.borrow();
        let m = moves.iter().find(|m| {
            m.sources
                .iter()
                .any(|s| s.addr == source.addr && overlap(source.words, s.words))
        })?;
        Some(format!(
            "thread {thread} of the block wrote element {} of {}, which thread {}'s `#copy async` at {}:{} reads and has in flight: add `#wait 0;` in the copying thread (and `#sync`, for another thread) before writing its source",
            source.words.0 / source.per_element.max(1),
            source.array,
            m.thread,
            m.held.at.file(),
            m.held.at.line()
        ))
    }
}

/// The shared memory one asynchronous wgmma reads: a tile of one array.
struct TileRead {
    /// The issuing warpgroup (the block's threads by 128) and its group's number.
    warpgroup: usize,
    group: u64,
    /// Where the warpgroup's wait completed the group: from there on the warpgroup's own
    /// threads may write the tile, the others after the block's next barrier.
    waited: Option<&'static Location<'static>>,
    array: &'static str,
    watch: usize,
    per_element: usize,
    /// The first word of each element it reads, in the array.
    words: Vec<usize>,
    /// The `#mma async`, in the user's code.
    at: &'static Location<'static>,
}

/// A block's asynchronous wgmmas (debug builds): the emulation computes each one where it
/// is issued, so a GPU computes the same only if nothing writes its tiles before the
/// tensor core has read them: before the wait that completes its group for the
/// warpgroup's threads, and before the barrier after that wait for the others.
/// [`Wgmmas::check_write`] refuses the writes that come earlier.
#[derive(Default)]
pub struct Wgmmas {
    /// For each warpgroup of the block, its groups committed so far.
    committed: RefCell<Vec<u64>>,
    reads: RefCell<Vec<TileRead>>,
    /// For each word of a shared array (its watch's address, the word) that a tile read
    /// holds, how many: what a write looks up.
    words: RefCell<HashMap<(usize, usize), u32>>,
}

impl std::fmt::Debug for Wgmmas {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Wgmmas({} tiles)", self.reads.borrow().len())
    }
}

impl Wgmmas {
    /// Warpgroup `warpgroup` issues an asynchronous wgmma at `at` that reads the elements
    /// `elements` (`per_element` words each) of the shared array `array` watched at
    /// `watch`, in its group being issued.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds check nothing
    pub fn issue(
        &self,
        warpgroup: usize,
        (array, watch, per_element): (&'static str, usize, usize),
        elements: impl Iterator<Item = usize>,
        at: &'static Location<'static>,
    ) {
        let group = self.committed.borrow().get(warpgroup).copied().unwrap_or(0);
        let words: Vec<usize> = elements.map(|e| e * per_element).collect();
        let mut held = self.words.borrow_mut();
        for &w in &words {
            for k in w..w + per_element {
                *held.entry((watch, k)).or_insert(0) += 1;
            }
        }
        self.reads.borrow_mut().push(TileRead {
            warpgroup,
            group,
            waited: None,
            array,
            watch,
            per_element,
            words,
            at,
        });
    }

    /// Warpgroup `warpgroup` commits the wgmmas issued since its last commit as a group.
    pub fn commit(&self, warpgroup: usize) {
        let mut committed = self.committed.borrow_mut();
        if committed.len() <= warpgroup {
            committed.resize(warpgroup + 1, 0);
        }
        committed[warpgroup] += 1;
    }

    /// `#mma wait groups` of warpgroup `warpgroup` at `at`: all but its last `groups`
    /// groups are complete.
    pub fn wait(&self, warpgroup: usize, groups: u32, at: &'static Location<'static>) {
        let committed = self.committed.borrow().get(warpgroup).copied().unwrap_or(0);
        let complete = committed.saturating_sub(u64::from(groups));
        for r in self.reads.borrow_mut().iter_mut() {
            if r.warpgroup == warpgroup && r.group < complete && r.waited.is_none() {
                r.waited = Some(at);
            }
        }
    }

    /// Drops the tile reads `done` says are over.
    fn drop_reads(&self, done: impl Fn(&TileRead) -> bool) {
        let mut reads = self.reads.borrow_mut();
        let mut held = self.words.borrow_mut();
        for r in reads.extract_if(.., |r| done(r)) {
            for &w in &r.words {
                for k in w..w + r.per_element {
                    let key = (r.watch, k);
                    if let Some(n) = held.get_mut(&key) {
                        *n -= 1;
                        if *n == 0 {
                            held.remove(&key);
                        }
                    }
                }
            }
        }
    }

    /// The block's threads passed a barrier: the groups completed before it are complete
    /// for every thread.
    pub fn barrier(&self) {
        if !self.reads.borrow().is_empty() {
            self.drop_reads(|r| r.waited.is_some());
        }
    }

    /// The block ended: where a wgmma still in flight was issued (its warpgroup, its
    /// statement), and nothing held any more.
    pub fn left(&self) -> Option<(usize, &'static Location<'static>)> {
        self.committed.borrow_mut().clear();
        self.words.borrow_mut().clear();
        let reads = std::mem::take(&mut *self.reads.borrow_mut());
        reads
            .iter()
            .find(|r| r.waited.is_none())
            .map(|r| (r.warpgroup, r.at))
    }

    /// Why a write of the words `words` of the shared array watched at `watch` by thread
    /// `thread` of the block is refused: an asynchronous wgmma reads them and the writer
    /// is not ordered after its completion.
    #[cfg_attr(not(debug_assertions), allow(dead_code))] // release builds check nothing
    pub fn check_write(
        &self,
        watch: usize,
        words: (usize, usize),
        thread: usize,
    ) -> Option<String> {
        let (first, count) = words;
        {
            let held = self.words.borrow();
            if held.is_empty() || !(first..first + count).any(|w| held.contains_key(&(watch, w))) {
                return None;
            }
        }
        let warpgroup = thread / parray_compiler::mma::WARPGROUP as usize;
        let reads = self.reads.borrow();
        let (r, word) = reads.iter().filter(|r| r.watch == watch).find_map(|r| {
            let ordered = r.waited.is_some() && r.warpgroup == warpgroup;
            let word = r
                .words
                .iter()
                .find(|&&w| w < first + count && first < w + r.per_element)?;
            (!ordered).then_some((r, *word))
        })?;
        let element = word / r.per_element.max(1);
        let issued = format!(
            "thread {thread} of the block wrote element {element} of {}, which warpgroup {}'s `#mma async` at {}:{} reads",
            r.array,
            r.warpgroup,
            r.at.file(),
            r.at.line()
        );
        Some(match r.waited {
            None => {
                let then = match r.warpgroup == warpgroup {
                    true => "",
                    false => ", and then `#sync`,",
                };
                format!("{issued} and has in flight (the tensor core reads the tile until the `#mma wait` that completes its group): complete it first, `#mma wait 0` (or a `#mma wait N` that leaves only later groups in flight) in warpgroup {}{then} before this write", r.warpgroup)
            }
            Some(at) => format!(
                "{issued} until that warpgroup's `#mma wait` at {}:{}, which this thread is not ordered after: add `#sync` after that wait, before this write",
                at.file(),
                at.line()
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// A store of `value` to element `element` of an array `S` (its word), into `landed`.
    fn store(element: usize, value: u32, landed: &Rc<RefCell<Vec<(usize, u32)>>>) -> Held {
        let landed = landed.clone();
        Held {
            array: "S",
            watch: 1,
            element,
            words: (element, 1),
            at: Location::caller(),
            land: Box::new(move |_| landed.borrow_mut().push((element, value))),
        }
    }

    /// Issues one copy of thread `thread` storing `values` from element `first`.
    fn copy(
        f: &InFlight,
        thread: usize,
        first: usize,
        values: &[u32],
        landed: &Rc<RefCell<Vec<(usize, u32)>>>,
    ) {
        f.begin();
        for (k, v) in values.iter().enumerate() {
            f.hold(thread, thread as u64, store(first + k, *v, landed));
        }
        f.commit(thread);
    }

    #[test]
    fn a_wait_lands_all_but_the_newest_groups_of_its_thread_in_order() {
        let f = InFlight::default();
        let landed = Rc::new(RefCell::new(Vec::new()));
        copy(&f, 0, 0, &[10, 11], &landed);
        copy(&f, 1, 4, &[40], &landed);
        copy(&f, 0, 2, &[12, 13], &landed);
        // `#wait 1` of thread 0: its first group lands, its second stays in flight.
        f.wait(0, 1, Location::caller());
        assert_eq!(*landed.borrow(), [(0, 10), (1, 11)]);
        assert!(f.check_shared(1, ((2, 1), 1), false, 0).is_some());
        assert!(f.check_shared(1, ((1, 1), 1), false, 0).is_none());
        // Another thread's wait lands only its own.
        f.wait(1, 0, Location::caller());
        assert_eq!(landed.borrow().last(), Some(&(4, 40)));
        f.wait(0, 0, Location::caller());
        assert_eq!(landed.borrow().len(), 5);
        assert!(f.left().is_none());
    }

    #[test]
    fn an_access_in_flight_names_the_element_the_copy_and_the_fix() {
        let f = InFlight::default();
        let landed = Rc::new(RefCell::new(Vec::new()));
        copy(&f, 2, 8, &[1, 2, 3, 4], &landed);
        let own = f.check_shared(1, ((10, 1), 1), true, 2).expect("held");
        assert!(
            own.contains("thread 2 of the block wrote element 10 of S"),
            "{own}"
        );
        assert!(own.contains("this thread's `#copy async`"), "{own}");
        let other = f.check_shared(1, ((9, 2), 1), false, 5).expect("held");
        assert!(other.contains("thread 2's `#copy async`"), "{other}");
        assert!(other.contains("then `#sync`"), "{other}");
        // Another array, or elements the copy does not hold, are free.
        assert!(f.check_shared(2, ((8, 1), 1), false, 5).is_none());
        assert!(f.check_shared(1, ((12, 4), 1), false, 5).is_none());
        let (tid, _, array, element, phase) = f.left().expect("in flight");
        assert_eq!((tid, array, element, phase), (2, "S", 8, None));
        assert!(landed.borrow().is_empty());
    }

    #[test]
    fn a_source_in_flight_is_not_written() {
        let f = InFlight::default();
        let landed = Rc::new(RefCell::new(Vec::new()));
        let source = |first| Source {
            array: "a",
            addr: 64,
            words: (first, 4),
            per_element: 1,
        };
        f.begin();
        assert!(f.check_global(source(4), false, 0).is_none());
        f.hold(0, 0, store(0, 7, &landed));
        f.commit(0);
        let refused = f
            .check_global(source(6), true, 3)
            .expect("a source in flight");
        assert!(refused.contains("wrote element 6 of a"), "{refused}");
        assert!(f.check_global(source(8), true, 3).is_none());
        f.wait(0, 0, Location::caller());
        assert!(f.check_global(source(6), true, 3).is_none());
    }

    /// Two warpgroups' wgmmas reading elements 0..4 (warpgroup 0, two groups) and 8..12
    /// (warpgroup 1) of one array: a write waits for the group that reads the element,
    /// and another warpgroup's thread for the barrier after that group's wait too.
    #[test]
    fn a_tile_in_flight_is_written_after_its_wait_and_then_a_barrier() {
        let w = Wgmmas::default();
        let tile = |first: usize| first..first + 4;
        w.issue(0, ("S", 1, 1), tile(0), Location::caller());
        w.commit(0);
        w.issue(0, ("S", 1, 1), tile(4), Location::caller());
        w.commit(0);
        w.issue(1, ("S", 1, 1), tile(8), Location::caller());
        w.commit(1);
        let refused = w.check_write(1, (2, 1), 5).expect("in flight");
        assert!(
            refused.contains(
                "thread 5 of the block wrote element 2 of S, which warpgroup 0's `#mma async`"
            ),
            "{refused}"
        );
        assert!(refused.contains("and has in flight"), "{refused}");
        // Another array, or an element no tile holds, is free.
        assert!(w.check_write(2, (2, 1), 5).is_none());
        assert!(w.check_write(1, (12, 4), 5).is_none());
        // `#mma wait 1` of warpgroup 0: its first group is complete, its second is not.
        w.wait(0, 1, Location::caller());
        assert!(w.check_write(1, (2, 1), 5).is_none());
        assert!(w.check_write(1, (5, 1), 5).is_some());
        let other = w
            .check_write(1, (2, 1), 128)
            .expect("not ordered after the wait");
        assert!(other.contains("add `#sync` after that wait"), "{other}");
        // A barrier orders every thread after the completed group.
        w.barrier();
        assert!(w.check_write(1, (2, 1), 128).is_none());
        assert!(w.check_write(1, (9, 1), 0).is_some());
        w.wait(1, 0, Location::caller());
        let (warpgroup, _) = w.left().expect("warpgroup 0's second group");
        assert_eq!(warpgroup, 0);
        assert!(w.left().is_none());
    }
}
