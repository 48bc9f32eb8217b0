//! The lock kernel state takes when its holder may give the CPU away while holding it.
//!
//! The kernel runs on one hart and is not preempted, so a lock is only ever found held when
//! its holder is a task that gave up the CPU inside its critical section: today, a dbfs
//! barrier waiting for its device flush ([`vfs::BlockDevice::flush_shared`]) while it holds
//! kvdb's writer lock, and any task that then waits for that lock while holding locks of its
//! own (an open file's offset, the I/O bounce buffer, an address space). A `spin::Mutex` found
//! held would spin for ever, since the holder never runs again; this one gives the CPU to
//! another task between attempts ([`crate::task::relax`]), as kvdb's locks do
//! ([`kvdb::sync::set_relax`]).
//!
//! Used for the state a system call may hold while it reaches dbfs: a process's state (its
//! address space: a page fault or an munmap writes mapped pages back), open files, the I/O
//! bounce buffer, file locks, mapped files' pages, and the IPC objects (whose calls copy
//! user memory under their lock). Locks taken by the scheduler (which cannot give the CPU
//! away), in a kernel trap (the disk window's page faults), or by the request layer stay
//! `spin` locks: nothing holding them gives the CPU away, so they are never found held.

/// Holds a [`Mutex`] locked; unlocks when dropped.
pub type MutexGuard<'a, T> = spin::MutexGuard<'a, T>;

/// A mutual-exclusion lock whose waiters give the CPU away (see the module documentation).
#[derive(Default)]
pub struct Mutex<T: ?Sized>(spin::Mutex<T>);

impl<T> Mutex<T> {
    /// An unlocked mutex guarding `value`.
    pub const fn new(value: T) -> Self {
        Mutex(spin::Mutex::new(value))
    }
}

impl<T: ?Sized> Mutex<T> {
    /// Wait until the mutex is free (other tasks run meanwhile), then hold it.
    #[inline]
    pub fn lock(&self) -> MutexGuard<'_, T> {
        // Free now: nothing can take it before `lock` does (one hart, no preemption).
        if !self.0.is_locked() {
            return self.0.lock();
        }
        self.lock_held()
    }

    /// [`Mutex::lock`] of a mutex found held, out of line (the common path stays a leaf).
    #[cold]
    #[inline(never)]
    fn lock_held(&self) -> MutexGuard<'_, T> {
        loop {
            crate::task::relax();
            if !self.0.is_locked() {
                return self.0.lock();
            }
        }
    }

    /// Hold the mutex if it is free now.
    #[inline]
    pub fn try_lock(&self) -> Option<MutexGuard<'_, T>> {
        self.0.try_lock()
    }
}
