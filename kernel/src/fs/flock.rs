//! BSD whole-file locks: `flock(2)`.
//!
//! A lock belongs to an open file description, as on Linux: descriptors made from it by dup
//! or fork share it, a second open of the file is another owner, and the lock goes when the
//! description's last descriptor is closed ([`release`]) or by `LOCK_UN`. A file may have
//! one exclusive holder or any number of shared ones. Asking for the other kind while
//! holding one converts it: the old lock is dropped first, as Linux does, so a conversion
//! that has to wait may let another process in. A request that conflicts fails with
//! `EWOULDBLOCK` under `LOCK_NB`, else sleeps until the holders change; a signal ends the
//! sleep (`ERESTARTSYS`). Independent of the POSIX record locks of `lock`, as on Linux.
//!
//! Lock order: the table's lock is a leaf.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;

use abi::Errno;

use super::lock::FileKey;
use crate::sync::Mutex;
use crate::task::signal;
use crate::task::wait::WaitQueue;

struct Holder {
    /// The open file description (its address while it lives).
    owner: usize,
    exclusive: bool,
}

static TABLE: Mutex<BTreeMap<FileKey, Vec<Holder>>> = Mutex::new(BTreeMap::new());
/// Woken whenever a lock is dropped.
static RELEASED: WaitQueue = WaitQueue::new();

/// Drop `owner`'s lock on `key` (if any) from the table; whether there was one.
fn drop_lock(t: &mut BTreeMap<FileKey, Vec<Holder>>, key: FileKey, owner: usize) -> bool {
    let Some(v) = t.get_mut(&key) else {
        return false;
    };
    let before = v.len();
    v.retain(|h| h.owner != owner);
    let dropped = v.len() != before;
    if v.is_empty() {
        t.remove(&key);
    }
    dropped
}

/// `LOCK_SH` (`exclusive` false) or `LOCK_EX` on the file `key` for description `owner`.
pub fn lock(key: FileKey, owner: usize, exclusive: bool, nonblock: bool) -> Result<(), Errno> {
    loop {
        {
            let mut t = TABLE.lock();
            let holders = t.get(&key).map_or(&[][..], |v| &v[..]);
            let mine = holders
                .iter()
                .find(|h| h.owner == owner)
                .map(|h| h.exclusive);
            if mine == Some(exclusive) {
                return Ok(());
            }
            let conflict = holders
                .iter()
                .any(|h| h.owner != owner && (exclusive || h.exclusive));
            if !conflict {
                crate::mm::heap::admit(core::mem::size_of::<Holder>())
                    .map_err(|_| Errno::ENOLCK)?;
                let v = t.entry(key).or_default();
                v.retain(|h| h.owner != owner);
                v.push(Holder { owner, exclusive });
                return Ok(());
            }
            if mine.is_some() {
                // A conversion that must wait gives up the old lock first.
                drop_lock(&mut t, key, owner);
                drop(t);
                RELEASED.wake_all();
            }
        }
        if nonblock {
            return Err(Errno::EAGAIN);
        }
        if signal::pending() {
            return Err(signal::ERESTARTSYS);
        }
        RELEASED.sleep();
    }
}

/// `LOCK_UN`, and the last close of a description that took a lock.
pub fn release(key: FileKey, owner: usize) {
    let dropped = drop_lock(&mut TABLE.lock(), key, owner);
    if dropped {
        RELEASED.wake_all();
    }
}
