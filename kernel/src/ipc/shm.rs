//! System V shared memory segments (`shmget`, `shmat`, `shmdt`, `shmctl`): the table of
//! segments by id.
//!
//! A segment is a [`SharedAnon`] page set, the same object a `MAP_SHARED | MAP_ANONYMOUS`
//! mapping holds. `shmat` maps it into the caller's space, fork passes the mapping on, and its
//! pages live until the last mapping is gone. The table only names segments: `IPC_RMID`
//! takes a segment out of the table at once (the id and key are free again), and attached
//! processes keep its pages. Linux instead keeps a removed segment reachable by id until the
//! last detach; POSIX leaves that undefined, and programs (fio) remove right after attaching.
//!
//! Lock order: the table lock is a leaf (taken with no other kernel lock held, and nothing
//! taken under it but the heap).

use alloc::collections::BTreeMap;
use alloc::sync::Arc;

use abi::Errno;

use crate::mm::area::SharedAnon;
use crate::sync::Mutex;
use crate::task::cred::Cred;

/// `shmget` key asking for a new segment nobody else can look up.
pub const IPC_PRIVATE: i32 = 0;
/// `shmget` flag: create the segment if the key has none.
pub const IPC_CREAT: u32 = 0o1000;
/// `shmget` flag with `IPC_CREAT`: fail with EEXIST if the key has one.
pub const IPC_EXCL: u32 = 0o2000;
/// Largest segment (bytes): what the mmap range can hold comfortably.
pub const SHMMAX: usize = 64 << 30;
/// Most segments at once (Linux's default SHMMNI).
pub const SHMMNI: usize = 4096;

/// One segment: its pages and what `IPC_STAT` reports.
pub struct Segment {
    pub key: i32,
    pub size: usize,
    pub pages: Arc<SharedAnon>,
    pub mode: u32,
    pub uid: u32,
    pub gid: u32,
    pub cuid: u32,
    pub cgid: u32,
    pub cpid: usize,
    pub ctime: u64,
}

struct Table {
    segments: BTreeMap<i32, Segment>,
    next_id: i32,
}

static TABLE: Mutex<Table> = Mutex::new(Table {
    segments: BTreeMap::new(),
    next_id: 1,
});

/// May `cred` use a segment of `mode`/`uid`/`gid`/`cuid`/`cgid` for `want` (MAY_* bits)?
/// Linux's `ipcperms`: the owner or the creator gets the owner bits.
fn allowed(cred: &Cred, seg: &Segment, want: u32) -> bool {
    let uid = if cred.fsuid == seg.cuid {
        seg.cuid
    } else {
        seg.uid
    };
    let gid = if cred.in_group(seg.cgid) {
        seg.cgid
    } else {
        seg.gid
    };
    cred.may(seg.mode & 0o777, uid, gid, want, false)
}

/// `shmget`: the id of the segment of `key`, created (zero-filled, `size` bytes) when the key
/// is `IPC_PRIVATE` or `IPC_CREAT` asks for it.
pub fn get(key: i32, size: usize, flags: u32, cred: &Cred, pid: usize) -> Result<i32, Errno> {
    let mut t = TABLE.lock();
    if key != IPC_PRIVATE {
        if let Some((&id, seg)) = t.segments.iter().find(|(_, s)| s.key == key) {
            if flags & IPC_CREAT != 0 && flags & IPC_EXCL != 0 {
                return Err(Errno::EEXIST);
            }
            if size > seg.size {
                return Err(Errno::EINVAL);
            }
            if !allowed(cred, seg, (flags >> 6) & 7) {
                return Err(Errno::EACCES);
            }
            return Ok(id);
        }
        if flags & IPC_CREAT == 0 {
            return Err(Errno::ENOENT);
        }
    }
    if size == 0 || size > SHMMAX {
        return Err(Errno::EINVAL);
    }
    if t.segments.len() >= SHMMNI {
        return Err(Errno::ENOSPC);
    }
    let mut id = t.next_id;
    while t.segments.contains_key(&id) {
        id = id.checked_add(1).unwrap_or(1);
    }
    t.next_id = id.checked_add(1).unwrap_or(1);
    t.segments.insert(
        id,
        Segment {
            key,
            size,
            pages: Arc::new(SharedAnon::default()),
            mode: flags & 0o777,
            uid: cred.euid,
            gid: cred.egid,
            cuid: cred.euid,
            cgid: cred.egid,
            cpid: pid,
            ctime: crate::arch::time::realtime_ns() / 1_000_000_000,
        },
    );
    Ok(id)
}

/// `shmat`'s look-up: the segment's pages and size, if `cred` may attach it for `want`.
pub fn attach(id: i32, cred: &Cred, want: u32) -> Result<(Arc<SharedAnon>, usize), Errno> {
    let t = TABLE.lock();
    let seg = t.segments.get(&id).ok_or(Errno::EINVAL)?;
    if !allowed(cred, seg, want) {
        return Err(Errno::EACCES);
    }
    Ok((seg.pages.clone(), seg.size))
}

/// `shmctl(IPC_RMID)`: only the owner, the creator or root.
pub fn remove(id: i32, cred: &Cred) -> Result<(), Errno> {
    let mut t = TABLE.lock();
    let seg = t.segments.get(&id).ok_or(Errno::EINVAL)?;
    if !cred.is_root() && cred.fsuid != seg.uid && cred.fsuid != seg.cuid {
        return Err(Errno::EPERM);
    }
    t.segments.remove(&id);
    Ok(())
}

/// `shmctl(IPC_STAT)`: run `f` on the segment (read permission needed).
pub fn stat<R>(id: i32, cred: &Cred, f: impl FnOnce(&Segment) -> R) -> Result<R, Errno> {
    let t = TABLE.lock();
    let seg = t.segments.get(&id).ok_or(Errno::EINVAL)?;
    if !allowed(cred, seg, crate::task::cred::MAY_READ) {
        return Err(Errno::EACCES);
    }
    Ok(f(seg))
}
