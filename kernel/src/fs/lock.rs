//! Advisory record locks: POSIX's (`fcntl(F_GETLK / F_SETLK / F_SETLKW)`) and Linux's open
//! file description locks (`F_OFD_GETLK / F_OFD_SETLK / F_OFD_SETLKW`).
//!
//! A POSIX lock belongs to a (process, file) pair, as POSIX and Linux say. A file is named by
//! its mount and inode number ([`FileKey`]), so two descriptors from two opens of one file
//! share the process's locks. Fork does not pass locks on. Closing *any* descriptor of the
//! file releases all of the process's locks on it ([`release_on_close`]), and so does exit
//! ([`release_all`]).
//!
//! An OFD lock belongs to an open file description ([`Owner`]): descriptors that share it
//! (dup, fork) share its locks, two opens of a file conflict with each other even within one
//! process and thread, and the locks go with the description's last close. The two kinds
//! conflict with each other as with themselves; OFD waits are not checked for deadlocks
//! (Linux checks POSIX locks only).
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

/// Who holds a lock: a process (POSIX), or an open file description (OFD) named by its
/// address, which is never a small number like a pid.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Owner {
    Process(usize),
    File(usize),
}

impl Owner {
    /// The `l_pid` F_GETLK reports for it: Linux's -1 for an OFD lock.
    pub fn l_pid(self) -> i32 {
        match self {
            Owner::Process(pid) => pid as i32,
            Owner::File(_) => -1,
        }
    }
}

/// One lock: bytes `start..=end` of a file, held by `owner`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordLock {
    pub owner: Owner,
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
    waiting: BTreeMap<usize, Owner>,
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
    /// A lock of another owner that keeps `owner` from locking `start..=end` (`write`: for
    /// writing).
    fn conflict(
        &self,
        key: FileKey,
        owner: Owner,
        write: bool,
        start: u64,
        end: u64,
    ) -> Option<RecordLock> {
        self.files
            .get(&key)?
            .iter()
            .copied()
            .find(|l| l.owner != owner && l.overlaps(start, end) && (write || l.write))
    }

    /// Whether process `pid` waiting for `holder` would close a cycle back to `pid` (a
    /// chain of processes waiting for each other's POSIX locks).
    fn would_deadlock(&self, pid: usize, holder: Owner) -> bool {
        let Owner::Process(mut p) = holder else {
            return false;
        };
        for _ in 0..MAX_DEADLOCK_LINKS {
            if p == pid {
                return true;
            }
            match self.waiting.get(&p) {
                Some(&Owner::Process(next)) => p = next,
                _ => return false,
            }
        }
        false
    }

    /// Make `owner`'s locks on `key` in `start..=end` be `new` (`None`: none there).
    fn apply(
        &mut self,
        key: FileKey,
        owner: Owner,
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
            if l.owner != owner || !l.overlaps(start, end) {
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
                owner,
                write,
                start,
                end,
            };
            // Same-type neighbours of this owner that touch it become one lock (they never
            // touch each other, so one pass finds them all).
            out.retain(|l| {
                let touches =
                    l.start <= lock.end.saturating_add(1) && lock.start <= l.end.saturating_add(1);
                if l.owner == owner && l.write == write && touches {
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
        out.sort_unstable_by_key(|l| (l.start, l.owner));
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

/// `F_GETLK`: the lock of another owner, starting first, that would keep `owner` from taking
/// this one.
pub fn test(key: FileKey, owner: Owner, write: bool, start: u64, end: u64) -> Option<RecordLock> {
    TABLE.lock().conflict(key, owner, write, start, end)
}

/// `F_SETLK` (`wait` false) and `F_SETLKW`: lock `start..=end` of the file for reading
/// (`Some(false)`) or writing (`Some(true)`), or unlock it (`None`). A conflict is `EAGAIN`,
/// or with `wait` a sleep until it is gone (`EDEADLK` if that could never happen,
/// `ERESTARTSYS` when a signal comes first).
pub fn set(
    key: FileKey,
    owner: Owner,
    new: Option<bool>,
    start: u64,
    end: u64,
    wait: bool,
) -> Result<(), Errno> {
    loop {
        let mut t = TABLE.lock();
        if let Some(write) = new {
            if let Some(holder) = t.conflict(key, owner, write, start, end) {
                if !wait {
                    return Err(Errno::EAGAIN);
                }
                let waiter = match owner {
                    Owner::Process(pid) => Some(pid),
                    Owner::File(_) => None,
                };
                if let Some(pid) = waiter {
                    if t.would_deadlock(pid, holder.owner) {
                        return Err(Errno::EDEADLK);
                    }
                }
                if crate::task::signal::pending() {
                    return Err(crate::task::signal::ERESTARTSYS);
                }
                if let Some(pid) = waiter {
                    t.waiting.insert(pid, holder.owner);
                }
                drop(t);
                // Kernel code is not preempted: no release can slip in between the check
                // above and this sleep.
                RELEASED.sleep();
                if let Some(pid) = waiter {
                    TABLE.lock().waiting.remove(&pid);
                }
                continue;
            }
        }
        t.apply(key, owner, new, start, end)?;
        drop(t);
        // A replaced write lock may have become a read lock, or shrunk: let waiters look.
        RELEASED.wake_all();
        return Ok(());
    }
}

/// Close of a descriptor of `key` by process `pid` (`Owner::Process`), or the last close of
/// an open file description (`Owner::File`): all of the owner's locks on the file go.
pub fn release_on_close(key: FileKey, owner: Owner) {
    let released = {
        let mut t = TABLE.lock();
        t.apply(key, owner, None, 0, OFFSET_MAX).is_ok()
    };
    if released {
        RELEASED.wake_all();
    }
}

/// Whether `pid` holds any lock at all (the cheap test before a close looks up its file).
pub fn holds_any(pid: usize) -> bool {
    let t = TABLE.lock();
    let owner = Owner::Process(pid);
    t.count != 0 && t.files.values().any(|v| v.iter().any(|l| l.owner == owner))
}

/// Exit of `pid`: every lock it holds goes.
pub fn release_all(pid: usize) {
    let removed = {
        let mut t = TABLE.lock();
        t.waiting.remove(&pid);
        let before = t.count;
        let mut count = 0;
        t.files.retain(|_, v| {
            v.retain(|l| l.owner != Owner::Process(pid));
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
