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
//! Keys, ids and permissions are `sysv`'s. Lock order: the table lock is a leaf (taken with no other kernel lock held, and nothing
//! taken under it but the heap).

use alloc::sync::Arc;

use abi::Errno;

use super::sysv::{IpcObject, Perm, Registry, IPC64_PERM_SIZE};
use crate::mm::area::SharedAnon;
use crate::sync::Mutex;
use crate::task::cred::Cred;

/// Largest segment (bytes) by default: what the mmap range can hold comfortably.
const SHMMAX_DEFAULT: usize = 64 << 30;
static SHMMAX: core::sync::atomic::AtomicUsize =
    core::sync::atomic::AtomicUsize::new(SHMMAX_DEFAULT);

/// The largest segment shmget makes (`/proc/sys/kernel/shmmax`).
pub fn shmmax() -> usize {
    SHMMAX.load(core::sync::atomic::Ordering::Relaxed)
}

/// Writing `/proc/sys/kernel/shmmax` (root, checked by procfs).
pub fn set_shmmax(bytes: usize) {
    SHMMAX.store(bytes, core::sync::atomic::Ordering::Relaxed);
}
/// Most segments at once (Linux's default SHMMNI).
pub const SHMMNI: usize = 4096;
/// Most pages of all segments together (Linux's default SHMALL: no limit of its own).
pub const SHMALL: u64 = u64::MAX - (1 << 24);

/// One segment: its pages and what `IPC_STAT` reports.
pub struct Segment {
    pub perm: Perm,
    pub size: usize,
    pub pages: Arc<SharedAnon>,
    pub cpid: usize,
    /// The process of the last shmat or shmdt.
    pub lpid: usize,
    pub ctime: u64,
    /// Times of the last shmat and shmdt (0: none yet).
    pub atime: u64,
    pub dtime: u64,
    /// `SHM_LOCK`ed: reported as `SHM_LOCKED` in the mode. Its pages stay in memory either
    /// way (nothing is ever swapped out here).
    pub locked: bool,
}

/// `shmid_ds.shm_perm.mode`'s bit for a segment locked by `SHM_LOCK`.
pub const SHM_LOCKED: u32 = 0o2000;

impl Segment {
    /// Processes attached to it (areas mapping it: one split by mprotect counts twice).
    pub fn nattch(&self) -> usize {
        Arc::strong_count(&self.pages) - 1
    }
}

impl IpcObject for Segment {
    fn perm(&self) -> &Perm {
        &self.perm
    }
    fn perm_mut(&mut self) -> &mut Perm {
        &mut self.perm
    }
}

static TABLE: Mutex<Registry<Segment>> = Mutex::new(Registry::new(SHMMNI));

/// `shmget`: the id of the segment of `key`, created (zero-filled, `size` bytes) when the key
/// is `IPC_PRIVATE` or `IPC_CREAT` asks for it (not with SHM_HUGETLB: EINVAL).
pub fn get(key: i32, size: usize, flags: u32, cred: &Cred, pid: usize) -> Result<i32, Errno> {
    TABLE.lock().get_or_create(
        key,
        flags,
        cred,
        |seg| {
            if size > seg.size {
                return Err(Errno::EINVAL);
            }
            Ok(())
        },
        |perm| {
            // No huge pages here (Linux without CONFIG_HUGETLBFS): EINVAL.
            const SHM_HUGETLB: u32 = 0o4000;
            if size == 0 || size > shmmax() || flags & SHM_HUGETLB != 0 {
                return Err(Errno::EINVAL);
            }
            Ok(Segment {
                perm,
                size,
                pages: Arc::new(SharedAnon::default()),
                cpid: pid,
                lpid: 0,
                ctime: super::sysv::now_secs(),
                atime: 0,
                dtime: 0,
                locked: false,
            })
        },
    )
}

/// `shmat`'s look-up: the segment's pages and size, if `cred` may attach it for `want`
/// (process `pid`, recorded with the time as the last to attach).
pub fn attach(
    id: i32,
    cred: &Cred,
    want: u32,
    pid: usize,
) -> Result<(Arc<SharedAnon>, usize), Errno> {
    let mut t = TABLE.lock();
    t.checked(id, cred, want)?;
    let seg = t.get_mut(id)?;
    seg.lpid = pid;
    seg.atime = super::sysv::now_secs();
    Ok((seg.pages.clone(), seg.size))
}

/// `shmdt` of the segment whose pages are `pages` by process `pid` (nothing if it was removed).
pub fn detached(pages: &Arc<SharedAnon>, pid: usize) {
    let mut t = TABLE.lock();
    let id = t
        .iter()
        .find(|(_, seg)| Arc::ptr_eq(&seg.pages, pages))
        .map(|(id, _)| id);
    if let Some(seg) = id.and_then(|id| t.get_mut(id).ok()) {
        seg.lpid = pid;
        seg.dtime = super::sysv::now_secs();
    }
}

/// `shmctl(SHM_LOCK, SHM_UNLOCK)`: the owner, the creator or CAP_IPC_LOCK (Linux's rule;
/// RLIMIT_MEMLOCK is not counted against: locking here only sets the flag).
pub fn set_locked(id: i32, cred: &Cred, locked: bool) -> Result<(), Errno> {
    const CAP_IPC_LOCK: u32 = 14;
    let mut t = TABLE.lock();
    let seg = t.get_mut(id)?;
    let p = &seg.perm;
    if !cred.caps.has(CAP_IPC_LOCK) && cred.euid != p.uid && cred.euid != p.cuid {
        return Err(Errno::EPERM);
    }
    seg.locked = locked;
    Ok(())
}

/// `shmctl(SHM_STAT, SHM_STAT_ANY)`: run `f` on the segment in slot `index` and give its id;
/// SHM_STAT needs read permission, SHM_STAT_ANY does not.
pub fn stat_index<R>(
    index: usize,
    cred: &Cred,
    any: bool,
    f: impl FnOnce(&Segment) -> R,
) -> Result<(i32, R), Errno> {
    let t = TABLE.lock();
    let (id, seg) = t.by_index(index)?;
    if !any && !seg.perm.allows(cred, crate::task::cred::MAY_READ) {
        return Err(Errno::EACCES);
    }
    Ok((id, f(seg)))
}

/// `shmctl(SHM_INFO)`: segments in use and their pages (total and resident: the same here,
/// nothing is swapped), and the highest slot in use.
pub fn usage() -> (usize, u64, usize) {
    let t = TABLE.lock();
    let pages = t
        .iter()
        .map(|(_, seg)| seg.size.div_ceil(crate::mm::PAGE_SIZE) as u64)
        .sum();
    (t.len(), pages, t.max_index())
}

/// `shmctl(IPC_RMID)`: only the owner, the creator or CAP_SYS_ADMIN.
pub fn remove(id: i32, cred: &Cred) -> Result<(), Errno> {
    TABLE.lock().remove(id, cred).map(|_| ())
}

/// `shmctl(IPC_SET)`: owner and mode from a `struct ipc64_perm`; the change time is now.
pub fn set(id: i32, cred: &Cred, perm: &[u8; IPC64_PERM_SIZE]) -> Result<(), Errno> {
    let mut t = TABLE.lock();
    t.set_perm(id, cred, perm)?;
    t.get_mut(id)?.ctime = super::sysv::now_secs();
    Ok(())
}

/// `shmctl(IPC_STAT)`: run `f` on the segment (read permission needed).
pub fn stat<R>(id: i32, cred: &Cred, f: impl FnOnce(&Segment) -> R) -> Result<R, Errno> {
    let t = TABLE.lock();
    Ok(f(t.checked(id, cred, crate::task::cred::MAY_READ)?))
}

/// The highest slot in use (`shmctl(IPC_INFO)`'s result).
pub fn max_index() -> usize {
    TABLE.lock().max_index()
}

/// `/proc/sysvipc/shm`'s lines: one per segment.
pub fn proc_lines() -> alloc::string::String {
    use core::fmt::Write;
    let mut s = alloc::string::String::from(
        "       key      shmid perms                  size  cpid  lpid nattch   uid   gid  cuid  cgid      atime      dtime      ctime\n",
    );
    for (id, seg) in TABLE.lock().iter() {
        let p = &seg.perm;
        let _ = writeln!(
            s,
            "{:10} {:10} {:5o} {:21} {:5} {:5} {:6} {:5} {:5} {:5} {:5} {:10} {:10} {:10}",
            p.key,
            id,
            p.mode,
            seg.size,
            seg.cpid,
            seg.lpid,
            seg.nattch(),
            p.uid,
            p.gid,
            p.cuid,
            p.cgid,
            seg.atime,
            seg.dtime,
            seg.ctime
        );
    }
    s
}
