//! POSIX advisory record locks: `fcntl(F_GETLK / F_SETLK / F_SETLKW)`.
//!
//! A lock belongs to a (process, file) pair, as POSIX and Linux say. A file is named by its
//! mount and inode number ([`FileKey`]), so two descriptors from two opens of one file share
//! the process's locks. Fork does not pass locks on. Closing *any* descriptor of the file
//! releases all of the process's locks on it ([`release_on_close`]), and so does exit
//! ([`release_all`]).
//!
//! A process's locks on one file never overlap each other. A new lock replaces whatever the
//! process held in its range, splitting a larger lock if it has to. Locks of one type that
//! touch or overlap are merged, as Linux merges them, so `F_GETLK` reports the merged range;
//! a file's locks are kept sorted by their start, and `F_GETLK` reports the first that conflicts.
//! The locks are advisory: read and write never look at them.
//!
//! `F_SETLKW` sleeps on one wait queue that every unlock wakes; waiters then re-check. A
//! signal ends the wait with `ERESTARTSYS`. Before it sleeps, a waiter follows the chain of
//! waiting processes from the lock's holder (at most [`MAX_DEADLOCK_LINKS`] links, as Linux
//! does). If the chain comes back to the waiter, the answer is `EDEADLK`.
//!
//! Lock order: the table's lock is a leaf. Nothing else is taken while it is held, except the
//! wait queue's own list.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use abi::Errno;

use crate::sync::Mutex;
use crate::task::wait::WaitQueue;

/// The last byte a lock can cover (Linux's `OFFSET_MAX`). A lock ending here runs to the end
/// of the file, however far the file grows.
pub const OFFSET_MAX: u64 = i64::MAX as u64;

/// Links of the waits-for chain followed before giving up on deadlock detection.
pub const MAX_DEADLOCK_LINKS: usize = 10;

/// Most locks held in the whole system: past it a new lock fails with `ENOLCK`. Each
/// `F_SETLK` can add at most two entries, so a program could otherwise fill the kernel heap.
const MAX_LOCKS: usize = 1 << 16;

/// Which file a lock is on (the key mapped files' pages go by too).
pub use crate::mm::file_pages::FileKey;

/// One lock: bytes `start..=end` of a file, held by `pid`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLock {
    pub pid: usize,
    pub write: bool,
    pub start: u64,
    pub end: u64,
}

impl RecordLock {
    fn overlaps(&self, start: u64, end: u64) -> bool {
        self.start <= end && start <= self.end
    }
}

struct Table {
    files: BTreeMap<FileKey, Vec<RecordLock>>,
    /// Processes sleeping in `F_SETLKW`, each with the holder of the lock it waits for.
    waiting: BTreeMap<usize, usize>,
    count: usize,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    files: BTreeMap::new(),
    waiting: BTreeMap::new(),
    count: 0,
});

/// Woken whenever locks are released or replaced.
static RELEASED: WaitQueue = WaitQueue::new();

impl Table {
    /// A lock of another process that keeps `pid` from locking `start..=end` (`write`: for
    /// writing).
    fn conflict(
        &self,
        key: FileKey,
        pid: usize,
        write: bool,
        start: u64,
        end: u64,
    ) -> Option<RecordLock> {
        self.files
            .get(&key)?
            .iter()
            .copied()
            .find(|l| l.pid != pid && l.overlaps(start, end) && (write || l.write))
    }

    /// Whether waiting for `holder` would close a cycle back to `pid`.
    fn would_deadlock(&self, pid: usize, holder: usize) -> bool {
        let mut p = holder;
        for _ in 0..MAX_DEADLOCK_LINKS {
            if p == pid {
                return true;
            }
            match self.waiting.get(&p) {
                Some(&next) => p = next,
                None => return false,
            }
        }
        false
    }

    /// Make `pid`'s locks on `key` in `start..=end` be `new` (`None`: none there).
    fn apply(
        &mut self,
        key: FileKey,
        pid: usize,
        new: Option<bool>,
        start: u64,
        end: u64,
    ) -> Result<(), Errno> {
        let old = self.files.remove(&key).unwrap_or_default();
        let old_len = old.len();
        let mut out = Vec::new();
        if crate::mm::heap::admit((old_len + 2) * core::mem::size_of::<RecordLock>()).is_err()
            || out.try_reserve(old_len + 2).is_err()
        {
            self.files.insert(key, old);
            return Err(Errno::ENOLCK);
        }
        for l in old.iter().copied() {
            if l.pid != pid || !l.overlaps(start, end) {
                out.push(l);
                continue;
            }
            if l.start < start {
                out.push(RecordLock {
                    end: start - 1,
                    ..l
                });
            }
            if l.end > end {
                out.push(RecordLock {
                    start: end + 1,
                    ..l
                });
            }
        }
        if let Some(write) = new {
            let mut lock = RecordLock {
                pid,
                write,
                start,
                end,
            };
            // Same-type neighbours of this process that touch it become one lock (they never
            // touch each other, so one pass finds them all).
            out.retain(|l| {
                let touches =
                    l.start <= lock.end.saturating_add(1) && lock.start <= l.end.saturating_add(1);
                if l.pid == pid && l.write == write && touches {
                    lock.start = lock.start.min(l.start);
                    lock.end = lock.end.max(l.end);
                    false
                } else {
                    true
                }
            });
            out.push(lock);
        }
        // Kept in file order, so F_GETLK reports the conflicting lock that starts first (as
        // Linux, whose list keeps each owner's locks sorted by start).
        out.sort_unstable_by_key(|l| (l.start, l.pid));
        let count = self.count - old_len + out.len();
        if count > MAX_LOCKS && out.len() > old_len {
            self.files.insert(key, old);
            return Err(Errno::ENOLCK);
        }
        self.count = count;
        if !out.is_empty() {
            self.files.insert(key, out);
        }
        Ok(())
    }
}

/// `F_GETLK`: the lock of another process, starting first, that would keep `pid` from taking
/// this one.
pub fn test(key: FileKey, pid: usize, write: bool, start: u64, end: u64) -> Option<RecordLock> {
    TABLE.lock().conflict(key, pid, write, start, end)
}

/// `F_SETLK` (`wait` false) and `F_SETLKW`: lock `start..=end` of the file for reading
/// (`Some(false)`) or writing (`Some(true)`), or unlock it (`None`). A conflict is `EAGAIN`,
/// or with `wait` a sleep until it is gone (`EDEADLK` if that could never happen,
/// `ERESTARTSYS` when a signal comes first).
pub fn set(
    key: FileKey,
    pid: usize,
    new: Option<bool>,
    start: u64,
    end: u64,
    wait: bool,
) -> Result<(), Errno> {
    loop {
        let mut t = TABLE.lock();
        if let Some(write) = new {
            if let Some(holder) = t.conflict(key, pid, write, start, end) {
                if !wait {
                    return Err(Errno::EAGAIN);
                }
                if t.would_deadlock(pid, holder.pid) {
                    return Err(Errno::EDEADLK);
                }
                if crate::task::signal::pending() {
                    return Err(crate::task::signal::ERESTARTSYS);
                }
                t.waiting.insert(pid, holder.pid);
                drop(t);
                // Kernel code is not preempted: no release can slip in between the check
                // above and this sleep.
                RELEASED.sleep();
                TABLE.lock().waiting.remove(&pid);
                continue;
            }
        }
        t.apply(key, pid, new, start, end)?;
        drop(t);
        // A replaced write lock may have become a read lock, or shrunk: let waiters look.
        RELEASED.wake_all();
        return Ok(());
    }
}

/// Close of a descriptor of `key` by `pid`: all of `pid`'s locks on the file go.
pub fn release_on_close(key: FileKey, pid: usize) {
    let released = {
        let mut t = TABLE.lock();
        t.apply(key, pid, None, 0, OFFSET_MAX).is_ok()
    };
    if released {
        RELEASED.wake_all();
    }
}

/// Whether `pid` holds any lock at all (the cheap test before a close looks up its file).
pub fn holds_any(pid: usize) -> bool {
    let t = TABLE.lock();
    t.count != 0 && t.files.values().any(|v| v.iter().any(|l| l.pid == pid))
}

/// Exit of `pid`: every lock it holds goes.
pub fn release_all(pid: usize) {
    let removed = {
        let mut t = TABLE.lock();
        t.waiting.remove(&pid);
        let before = t.count;
        let mut count = 0;
        t.files.retain(|_, v| {
            v.retain(|l| l.pid != pid);
            count += v.len();
            !v.is_empty()
        });
        t.count = count;
        before != count
    };
    if removed {
        RELEASED.wake_all();
    }
}
