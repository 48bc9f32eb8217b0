//! File leases (fcntl F_SETLEASE, F_GETLEASE): an open file description's promise that it
//! will be told before another process opens or truncates the file in a way that conflicts
//! with what it holds.
//!
//! A read lease (F_RDLCK) is broken by an open for writing or a truncate, a write lease
//! (F_WRLCK) by any open. Taking one follows Linux's rules: regular files only (EINVAL), the
//! file's owner or CAP_LEASE (EACCES), a read lease only while nothing has the file open for
//! writing, a write lease only while no other description has it open at all, and neither
//! against another description's conflicting lease or one being broken (EAGAIN). Taking a
//! lease makes the calling process the description's `sigio` owner, as Linux does.
//!
//! A break: the holder is sent its signal (`sigio`: SIGIO, or F_SETSIG's with `si_fd` and
//! POLL_MSG), F_GETLEASE reports what the lease must become (F_RDLCK for a write lease an
//! open for reading broke, else F_UNLCK), and the opener sleeps until the holder has given
//! that much up or `/proc/sys/fs/lease-break-time` seconds (45) have passed, when the kernel
//! takes it away. An opener with O_NONBLOCK gets EWOULDBLOCK at once, the break under way.
//! A description's lease goes with its last close.
//!
//! The system call layer checks what a lease asks of the opens (`syscall::fcntl`, which reads
//! every process's descriptor table: leases are rare, and opens are not slowed down for
//! them); this table keeps the leases, by file, each with its holder's description (by
//! address) and the `sigio` settings and descriptor it is told through. Lock order: the
//! table's lock is a leaf; signals are sent without it.

use alloc::collections::BTreeMap;
use alloc::sync::Weak;
use alloc::vec::Vec;
use core::sync::atomic::{AtomicU64, Ordering::Relaxed};

use abi::fcntl::{F_RDLCK, F_UNLCK, F_WRLCK};
use abi::Errno;

use super::sigio::SigIo;
use crate::mm::file_pages::FileKey;
use crate::sync::Mutex;
use crate::task::wait::WaitQueue;

/// Seconds a lease holder has to give up its lease (`/proc/sys/fs/lease-break-time`).
static BREAK_TIME_SECS: AtomicU64 = AtomicU64::new(45);

/// `/proc/sys/fs/lease-break-time`.
pub fn break_time_secs() -> u64 {
    BREAK_TIME_SECS.load(Relaxed)
}

/// Writing `/proc/sys/fs/lease-break-time` (root only, checked by procfs).
pub fn set_break_time_secs(secs: u64) {
    BREAK_TIME_SECS.store(secs, Relaxed);
}

/// Who holds a lease: the description, by address (as flock's owners), and how it is told
/// of a break (its signal-driven I/O settings, through the descriptor F_SETLEASE was given).
pub struct Holder {
    pub owner: usize,
    pub sigio: Weak<Mutex<SigIo>>,
    pub fd: i32,
}

struct Lease {
    holder: Holder,
    write: bool,
    /// Under way: what the lease must become (`Some(false)`: a read lease; `None`: none)
    /// and when the kernel takes it away (monotonic ns).
    breaking: Option<(Option<bool>, u64)>,
}

static TABLE: Mutex<BTreeMap<FileKey, Vec<Lease>>> = Mutex::new(BTreeMap::new());
/// Woken when a lease is given up or changed.
static CHANGED: WaitQueue = WaitQueue::new();

/// F_SETLEASE F_RDLCK (`write` false) or F_WRLCK on the file `key` for `holder`, whose
/// checks of the opens the caller made: EAGAIN if another description's lease conflicts or
/// one is being broken; a lease of its own is changed (a read lease given while a break asks
/// for one ends that break).
pub fn set(key: FileKey, holder: Holder, write: bool) -> Result<(), Errno> {
    {
        let mut t = TABLE.lock();
        let leases = t.entry(key).or_default();
        let me = holder.owner;
        let conflict = leases
            .iter()
            .any(|l| l.holder.owner != me && (write || l.write || l.breaking.is_some()));
        if conflict {
            return Err(Errno::EAGAIN);
        }
        match leases.iter_mut().find(|l| l.holder.owner == me) {
            Some(l) => {
                if l.breaking.is_some_and(|(to, _)| to == Some(false)) && !write {
                    l.breaking = None;
                } else if l.breaking.is_some() {
                    return Err(Errno::EAGAIN);
                }
                l.write = write;
                l.holder = holder;
            }
            None => {
                if crate::mm::heap::admit(core::mem::size_of::<Lease>()).is_err()
                    || leases.try_reserve(1).is_err()
                {
                    if leases.is_empty() {
                        t.remove(&key);
                    }
                    return Err(Errno::ENOMEM);
                }
                leases.push(Lease {
                    holder,
                    write,
                    breaking: None,
                });
            }
        }
    }
    CHANGED.wake_all();
    Ok(())
}

/// F_SETLEASE F_UNLCK by the description at `owner`: EAGAIN if it holds no lease (Linux's
/// answer).
pub fn unlock(key: FileKey, owner: usize) -> Result<(), Errno> {
    if !remove(key, owner) {
        return Err(Errno::EAGAIN);
    }
    Ok(())
}

fn remove(key: FileKey, owner: usize) -> bool {
    let removed = {
        let mut t = TABLE.lock();
        let Some(leases) = t.get_mut(&key) else {
            return false;
        };
        let before = leases.len();
        leases.retain(|l| l.holder.owner != owner);
        let removed = leases.len() != before;
        if leases.is_empty() {
            t.remove(&key);
        }
        removed
    };
    if removed {
        CHANGED.wake_all();
    }
    removed
}

/// The last close of the description at `owner`: its lease goes.
pub fn release(key: FileKey, owner: usize) {
    remove(key, owner);
}

/// F_GETLEASE: the lease the description at `owner` holds on `key`, or what a break under
/// way will leave of it.
pub fn get(key: FileKey, owner: usize) -> i16 {
    let t = TABLE.lock();
    let held = t
        .get(&key)
        .and_then(|leases| leases.iter().find(|l| l.holder.owner == owner));
    match held {
        None => F_UNLCK,
        Some(l) => match l.breaking {
            Some((None, _)) => F_UNLCK,
            Some((Some(_), _)) => F_RDLCK,
            None if l.write => F_WRLCK,
            None => F_RDLCK,
        },
    }
}

/// An open (`write`: for writing or with O_TRUNC) or a truncate (`write`) of the file at
/// `loc`: [`break_leases`] when any lease is held anywhere (else nothing is looked up).
pub fn break_for(loc: &super::path::Loc, write: bool, nonblock: bool) -> Result<(), Errno> {
    if TABLE.lock().is_empty() {
        return Ok(());
    }
    let key = FileKey {
        mount: loc.mount.id,
        ino: loc.node.getattr()?.ino,
    };
    break_leases(key, write, nonblock)
}

/// An open of the file `key` (`write`: for writing or truncating), or a truncate
/// (`write`), by someone other than a lease's holder: break the leases it conflicts with
/// and wait until they are given up or taken away. EWOULDBLOCK with `nonblock` while any is;
/// ERESTARTSYS if a signal comes first.
fn break_leases(key: FileKey, write: bool, nonblock: bool) -> Result<(), Errno> {
    let now = crate::arch::time::monotonic_ns();
    let deadline = now + break_time_secs() * 1_000_000_000;
    let mut newly = Vec::new();
    {
        let mut t = TABLE.lock();
        let Some(leases) = t.get_mut(&key) else {
            return Ok(());
        };
        for l in leases.iter_mut() {
            if !(write || l.write) || l.breaking.is_some() {
                continue;
            }
            let to = if write { None } else { Some(false) };
            l.breaking = Some((to, deadline));
            newly.push((l.holder.sigio.clone(), l.holder.fd));
        }
    }
    // The holder's signal (POLL_MSG), as its settings are now.
    for (sigio, fd) in newly {
        if let Some(s) = sigio.upgrade() {
            let settings = *s.lock();
            settings.notify(fd, crate::task::siginfo::POLL_MSG, 0x41);
        }
    }
    loop {
        let next = {
            let mut t = TABLE.lock();
            let now = crate::arch::time::monotonic_ns();
            let Some(leases) = t.get_mut(&key) else {
                return Ok(());
            };
            // Those past their time are taken away (or down to a read lease).
            leases.retain_mut(|l| match l.breaking {
                Some((to, at)) if at <= now => {
                    l.breaking = None;
                    match to {
                        Some(_) => {
                            l.write = false;
                            true
                        }
                        None => false,
                    }
                }
                _ => true,
            });
            let waiting = leases
                .iter()
                .filter(|l| write || l.write)
                .filter_map(|l| l.breaking.map(|(_, at)| at))
                .min();
            if leases.is_empty() {
                t.remove(&key);
            }
            waiting
        };
        let Some(at) = next else {
            CHANGED.wake_all();
            return Ok(());
        };
        if nonblock {
            return Err(Errno::EAGAIN); // EWOULDBLOCK
        }
        if crate::task::signal::pending() {
            return Err(crate::task::signal::ERESTARTSYS);
        }
        CHANGED.sleep_until(Some(at));
    }
}
