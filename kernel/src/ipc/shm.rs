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

/// Largest segment (bytes): what the mmap range can hold comfortably.
pub const SHMMAX: usize = 64 << 30;
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
    pub ctime: u64,
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
/// is `IPC_PRIVATE` or `IPC_CREAT` asks for it.
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
            if size == 0 || size > SHMMAX {
                return Err(Errno::EINVAL);
            }
            Ok(Segment {
                perm,
                size,
                pages: Arc::new(SharedAnon::default()),
                cpid: pid,
                ctime: super::sysv::now_secs(),
            })
        },
    )
}

/// `shmat`'s look-up: the segment's pages and size, if `cred` may attach it for `want`.
pub fn attach(id: i32, cred: &Cred, want: u32) -> Result<(Arc<SharedAnon>, usize), Errno> {
    let t = TABLE.lock();
    let seg = t.checked(id, cred, want)?;
    Ok((seg.pages.clone(), seg.size))
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

/// `/proc/sysvipc/shm`'s lines: one per segment (no attach or detach times are kept: 0).
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
            0,
            Arc::strong_count(&seg.pages) - 1,
            p.uid,
            p.gid,
            p.cuid,
            p.cgid,
            0,
            0,
            seg.ctime
        );
    }
    s
}
