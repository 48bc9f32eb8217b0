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
//!
//! The lock is kvdb's (`kvdb::sync::Mutex`, a ticket lock): one implementation of a lock
//! whose waiters relax, with the hook set once at boot to [`crate::task::relax`].

pub use kvdb::sync::Mutex;
