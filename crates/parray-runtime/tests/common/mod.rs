//! Helpers shared by the emulation tests.

/// A raw pointer that kernels may capture. Each test's accesses through it are race-free:
/// its kernels write disjoint elements or use atomics.
#[derive(Clone, Copy)]
pub struct SyncPtr<T>(pub *mut T);
// SAFETY: see the type's contract: the tests only share it for race-free accesses.
unsafe impl<T> Sync for SyncPtr<T> {}
// SAFETY: as above.
unsafe impl<T> Send for SyncPtr<T> {}
impl<T> SyncPtr<T> {
    /// A method rather than `.0`, so that closures capture the whole (Sync) wrapper.
    pub fn get(self) -> *mut T {
        self.0
    }
}
