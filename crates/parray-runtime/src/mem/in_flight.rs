//! The emulation's asynchronous copies (SPEC.md 3.9, "Asynchronous copies"): what a
//! block's threads started with `#copy async` and have not yet waited for.
//!
//! While a thread issues a `#copy async` ([`InFlight::begin`] .. [`InFlight::commit`]), each
//! of its stores to the block's shared memory is held here ([`Held`]), not made: it lands
//! when the thread's `#wait` retires the copy's group ([`InFlight::wait`]), as the thread's
//! write at the wait (the race detector sees it there). In debug builds, any access to a
//! held element before then, by any thread of the block, and any write of global memory
//! the copy read, by the block's threads, stop the launch with a message saying what to
//! wait for (`check_shared`, `check_global`): on a GPU such a read gets the old value or
//! the new, and such a write may or may not reach the copy.

use std::cell::{Cell, RefCell};
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
}

impl std::fmt::Debug for InFlight {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InFlight({} stores)", self.count.get())
    }
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
        let mut moves = self.moves.borrow_mut();
        moves.push(Move {
            thread,
            tid,
            group,
            held,
            sources,
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

    /// `#wait groups` of thread `thread` at `at`: its stores of all but its last `groups`
    /// groups land, in the order they were issued.
    pub fn wait(&self, thread: usize, groups: u32, at: &'static Location<'static>) {
        let committed = self.committed.borrow().get(thread).copied().unwrap_or(0);
        let retired = committed.saturating_sub(u64::from(groups));
        let landing = {
            let mut moves = self.moves.borrow_mut();
            let landing: Vec<Move> = moves
                .extract_if(.., |m| m.thread == thread && m.group < retired)
                .collect();
            self.count.set(moves.len());
            landing
        };
        // Outside the borrow: a landing notes its write, which looks at the moves.
        for m in landing {
            (m.held.land)(at);
        }
    }

    /// The block ended: the first store still in flight (its thread's grid id, where its
    /// copy is, the array and element), and nothing held any more.
    pub fn left(&self) -> Option<(u64, &'static Location<'static>, &'static str, usize)> {
        let moves = std::mem::take(&mut *self.moves.borrow_mut());
        self.count.set(0);
        self.issuing.set(false);
        self.read.borrow_mut().clear();
        self.committed.borrow_mut().clear();
        let m = moves.first()?;
        Some((m.tid, m.held.at, m.held.array, m.held.element))
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
        let moves = self.moves.borrow();
        let m = moves
            .iter()
            .find(|m| m.held.watch == watch && overlap(words, m.held.words))?;
        let whose = match m.thread == thread {
            true => "this thread's".to_string(),
            false => format!("thread {}'s", m.thread),
        };
        let what = if write { "wrote" } else { "read" };
        let fix = match m.thread == thread {
            true => "add `#wait 0;` (or `#wait N;` that retires the copy) before this access",
            false => "add `#wait 0;` in the copying thread and then `#sync` before this access",
        };
        Some(format!(
            "parray: thread {thread} of the block {what} element {} of {}, which {whose} `#copy async` at {}:{} has in flight (it lands at that thread's `#wait`): {fix}",
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
            "parray: thread {thread} of the block wrote element {} of {}, which thread {}'s `#copy async` at {}:{} reads and has in flight: add `#wait 0;` in the copying thread (and `#sync`, for another thread) before writing its source",
            source.words.0 / source.per_element.max(1),
            source.array,
            m.thread,
            m.held.at.file(),
            m.held.at.line()
        ))
    }
}
