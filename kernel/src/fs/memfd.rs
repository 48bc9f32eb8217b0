//! memfd_create(2)'s files: regular files in memory that no directory names, as Linux's are
//! shmem files on an internal mount. Each [`MemFile`] keeps its bytes in frames of the frame
//! pool, one per 4 KiB page written (pages never written, or punched, are holes that read
//! zeros), and its seals (fcntl F_ADD_SEALS / F_GET_SEALS): what the file refuses from then
//! on, checked here for every path that reaches the node (write, truncate, fallocate, a
//! reopen with O_TRUNC through /proc/self/fd) and by mmap for new shared writable mappings.
//!
//! Every memfd lives on one internal mount ([`mount`]: in no table, no path leads to it, its
//! own `st_dev`; statfs says tmpfs). All memfds together hold at most half of the frame pool
//! (tmpfs's default size): past it a write is ENOSPC, so a program filling memfds cannot
//! take the memory every other process needs. A mapping of a memfd maps the frames of the
//! mapped-file tables (`mm::file_pages`), filled from here and written back here, as for any
//! file.

use alloc::collections::btree_map::Entry;
use alloc::collections::BTreeMap;
use alloc::sync::Arc;
use core::any::Any;
use core::sync::atomic::{AtomicU64, AtomicUsize, Ordering::Relaxed};

use vfs::{
    Clock, FileSystem, FileType, FsStats, Metadata, Node, NodeRef, SetAttr, TimeSet, Timestamp,
    VfsError, VfsResult,
};

use super::mount_table::{self, Mount};
use crate::mm::frame::{self, Frame};
use crate::mm::PAGE_SIZE;
use crate::sync::Mutex;

/// The seals (fcntl.h's F_SEAL_*).
pub const F_SEAL_SEAL: u32 = 0x01;
pub const F_SEAL_SHRINK: u32 = 0x02;
pub const F_SEAL_GROW: u32 = 0x04;
pub const F_SEAL_WRITE: u32 = 0x08;
pub const F_SEAL_FUTURE_WRITE: u32 = 0x10;
pub const F_SEAL_EXEC: u32 = 0x20;
pub const ALL_SEALS: u32 =
    F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_FUTURE_WRITE | F_SEAL_EXEC;
/// The seals that refuse write(2) and new shared writable mappings.
pub const WRITE_SEALS: u32 = F_SEAL_WRITE | F_SEAL_FUTURE_WRITE;

/// statfs's `f_type` for the memfd mount (Linux's TMPFS_MAGIC).
const TMPFS_MAGIC: u64 = 0x0102_1994;
/// Linux's largest file (MAX_LFS_FILESIZE on 64 bits).
const MAX_SIZE: u64 = i64::MAX as u64;
const PAGE: u64 = PAGE_SIZE as u64;

/// Pages all memfds hold.
static PAGES: AtomicUsize = AtomicUsize::new(0);
static NEXT_INO: AtomicU64 = AtomicU64::new(1);

/// The most pages all memfds may hold: half the frame pool.
fn page_limit() -> usize {
    (frame::used_count() + frame::free_count()) / 2
}

fn now() -> Timestamp {
    crate::arch::time::KernelClock.now()
}

/// A memfd.
pub struct MemFile {
    ino: u64,
    inner: Mutex<Inner>,
}

struct Inner {
    perm: u32,
    uid: u32,
    gid: u32,
    size: u64,
    /// The written pages by index; an absent page reads zeros.
    pages: BTreeMap<u64, Frame>,
    seals: u32,
    atime: Timestamp,
    mtime: Timestamp,
    ctime: Timestamp,
}

impl MemFile {
    /// A new empty memfd with permission bits `perm`, owned by `uid`/`gid`, with `seals`.
    pub fn new(perm: u32, uid: u32, gid: u32, seals: u32) -> Arc<MemFile> {
        let t = now();
        Arc::new(MemFile {
            ino: NEXT_INO.fetch_add(1, Relaxed),
            inner: Mutex::new(Inner {
                perm,
                uid,
                gid,
                size: 0,
                pages: BTreeMap::new(),
                seals,
                atime: t,
                mtime: t,
                ctime: t,
            }),
        })
    }

    /// The seals (F_GET_SEALS).
    pub fn seals(&self) -> u32 {
        self.inner.lock().seals
    }

    /// Add `seals` (F_ADD_SEALS; the caller checked that they are known seals and that the
    /// file is open for writing): EPERM once F_SEAL_SEAL is set, EBUSY for F_SEAL_WRITE while
    /// `writably_mapped` says a shared mapping may still store into the file.
    pub fn add_seals(&self, seals: u32, writably_mapped: impl FnOnce() -> bool) -> VfsResult<()> {
        let mut inner = self.inner.lock();
        if inner.seals & F_SEAL_SEAL != 0 {
            return Err(VfsError::NotPermitted);
        }
        if seals & F_SEAL_WRITE != 0 && inner.seals & F_SEAL_WRITE == 0 && writably_mapped() {
            return Err(VfsError::Busy);
        }
        inner.seals |= seals;
        Ok(())
    }

    /// Store `buf` at `offset`, page by page, allocating the pages it needs: the bytes
    /// stored (short when memory ran out after some), NoSpace when none could be.
    fn store(inner: &mut Inner, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        let end = offset
            .checked_add(buf.len() as u64)
            .filter(|&e| e <= MAX_SIZE)
            .ok_or(VfsError::FileTooLarge)?;
        if end > inner.size && inner.seals & F_SEAL_GROW != 0 {
            return Err(VfsError::NotPermitted);
        }
        let mut done = 0usize;
        while done < buf.len() {
            let at = offset + done as u64;
            let index = at / PAGE;
            let in_page = (at % PAGE) as usize;
            let n = (PAGE_SIZE - in_page).min(buf.len() - done);
            let page = match inner.pages.entry(index) {
                Entry::Occupied(e) => e.into_mut(),
                Entry::Vacant(e) => {
                    let fresh = (PAGES.load(Relaxed) < page_limit())
                        .then(frame::alloc_reclaiming)
                        .flatten();
                    let Some(fresh) = fresh else {
                        break;
                    };
                    PAGES.fetch_add(1, Relaxed);
                    e.insert(fresh)
                }
            };
            page.bytes_mut()[in_page..in_page + n].copy_from_slice(&buf[done..done + n]);
            done += n;
        }
        if done == 0 && !buf.is_empty() {
            return Err(VfsError::NoSpace);
        }
        inner.size = inner.size.max(offset + done as u64);
        let t = now();
        inner.mtime = t;
        inner.ctime = t;
        Ok(done)
    }

    /// Zero `[from, to)`: pages wholly inside are freed, the ends zeroed in place.
    fn zero(inner: &mut Inner, from: u64, to: u64) {
        if from >= to {
            return;
        }
        let first_whole = from.div_ceil(PAGE);
        let end_whole = to / PAGE;
        if first_whole < end_whole {
            let gone: alloc::vec::Vec<u64> = inner
                .pages
                .range(first_whole..end_whole)
                .map(|(&i, _)| i)
                .collect();
            for i in gone {
                inner.pages.remove(&i);
                PAGES.fetch_sub(1, Relaxed);
            }
        }
        // The partial pages at either end (one page when the range lies inside it).
        for index in [from / PAGE, (to - 1) / PAGE] {
            let start = (index * PAGE).max(from);
            let end = ((index + 1) * PAGE).min(to);
            if end - start == PAGE {
                continue;
            }
            if let Some(p) = inner.pages.get_mut(&index) {
                let s = (start - index * PAGE) as usize;
                let e = (end - index * PAGE) as usize;
                p.bytes_mut()[s..e].fill(0);
            }
        }
    }

    fn resize(inner: &mut Inner, size: u64) -> VfsResult<()> {
        if size > MAX_SIZE {
            return Err(VfsError::FileTooLarge);
        }
        if size < inner.size && inner.seals & F_SEAL_SHRINK != 0
            || size > inner.size && inner.seals & F_SEAL_GROW != 0
        {
            return Err(VfsError::NotPermitted);
        }
        if size < inner.size {
            let old = inner.size;
            Self::zero(inner, size, old.next_multiple_of(PAGE));
        }
        inner.size = size;
        let t = now();
        inner.mtime = t;
        inner.ctime = t;
        Ok(())
    }

    fn meta(&self, inner: &Inner) -> Metadata {
        Metadata {
            ino: self.ino,
            ftype: FileType::Regular,
            perm: inner.perm,
            nlink: 1,
            uid: inner.uid,
            gid: inner.gid,
            size: inner.size,
            blocks: inner.pages.len() as u64 * (PAGE / 512),
            blksize: PAGE_SIZE as u32,
            rdev: 0,
            atime: inner.atime,
            mtime: inner.mtime,
            ctime: inner.ctime,
        }
    }
}

impl Drop for MemFile {
    fn drop(&mut self) {
        PAGES.fetch_sub(self.inner.get_mut().pages.len(), Relaxed);
    }
}

impl Node for MemFile {
    fn as_any(&self) -> &dyn Any {
        self
    }

    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(self.meta(&self.inner.lock()))
    }

    fn setattr(&self, attr: &SetAttr) -> VfsResult<Metadata> {
        let mut inner = self.inner.lock();
        // F_SEAL_EXEC: the execute bits stay as they are.
        if let Some(perm) = attr.perm {
            if inner.seals & F_SEAL_EXEC != 0 && (perm ^ inner.perm) & 0o111 != 0 {
                return Err(VfsError::NotPermitted);
            }
        }
        if let Some(size) = attr.size {
            Self::resize(&mut inner, size)?;
        }
        if let Some(perm) = attr.perm {
            inner.perm = perm & 0o7777;
        }
        if let Some(uid) = attr.uid {
            inner.uid = uid;
        }
        if let Some(gid) = attr.gid {
            inner.gid = gid;
        }
        let t = now();
        let at = |s: TimeSet| match s {
            TimeSet::Now => t,
            TimeSet::At(x) => x,
        };
        if let Some(a) = attr.atime {
            inner.atime = at(a);
        }
        if let Some(m) = attr.mtime {
            inner.mtime = at(m);
        }
        inner.ctime = t;
        Ok(self.meta(&inner))
    }

    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let inner = self.inner.lock();
        if offset >= inner.size {
            return Ok(0);
        }
        let n = buf.len().min((inner.size - offset) as usize);
        let mut done = 0;
        while done < n {
            let at = offset + done as u64;
            let in_page = (at % PAGE) as usize;
            let k = (PAGE_SIZE - in_page).min(n - done);
            match inner.pages.get(&(at / PAGE)) {
                Some(p) => buf[done..done + k].copy_from_slice(&p.bytes()[in_page..in_page + k]),
                None => buf[done..done + k].fill(0),
            }
            done += k;
        }
        Ok(n)
    }

    fn write_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        let mut inner = self.inner.lock();
        if inner.seals & WRITE_SEALS != 0 {
            return Err(VfsError::NotPermitted);
        }
        Self::store(&mut inner, offset, buf)
    }

    fn write_back_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        // A mapping made before F_SEAL_FUTURE_WRITE keeps storing (F_SEAL_WRITE was refused
        // while it existed).
        let mut inner = self.inner.lock();
        if inner.seals & F_SEAL_WRITE != 0 {
            return Err(VfsError::NotPermitted);
        }
        Self::store(&mut inner, offset, buf)
    }

    fn truncate(&self, size: u64) -> VfsResult<()> {
        Self::resize(&mut self.inner.lock(), size)
    }

    fn punch_hole(&self, offset: u64, len: u64) -> VfsResult<()> {
        let mut inner = self.inner.lock();
        if inner.seals & WRITE_SEALS != 0 {
            return Err(VfsError::NotPermitted);
        }
        let end = offset.saturating_add(len).min(inner.size);
        Self::zero(&mut inner, offset, end);
        let t = now();
        inner.mtime = t;
        inner.ctime = t;
        Ok(())
    }
}

/// Whether `node` is a memfd sealed against writes (a new shared writable mapping is EPERM;
/// an existing read-only one may not become writable).
pub fn write_sealed(node: &NodeRef) -> bool {
    node.as_any()
        .downcast_ref::<MemFile>()
        .is_some_and(|m| m.seals() & WRITE_SEALS != 0)
}

/// The memfd mount's file system: statfs and a root no path reaches.
struct MemFs;

impl FileSystem for MemFs {
    fn fs_name(&self) -> &'static str {
        "tmpfs"
    }
    fn root(&self) -> VfsResult<NodeRef> {
        Ok(Arc::new(MemRoot))
    }
    fn statfs(&self) -> VfsResult<FsStats> {
        let limit = page_limit() as u64;
        let free = limit.saturating_sub(PAGES.load(Relaxed) as u64);
        Ok(FsStats {
            fs_type: TMPFS_MAGIC,
            block_size: PAGE,
            blocks: limit,
            blocks_free: free,
            blocks_available: free,
            files: 0,
            files_free: 0,
            name_max: 255,
        })
    }
}

/// The memfd mount's root directory (empty; no path leads to it).
struct MemRoot;

impl Node for MemRoot {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let t = Timestamp::default();
        Ok(Metadata {
            ino: 0,
            ftype: FileType::Directory,
            perm: 0o1777,
            nlink: 2,
            uid: 0,
            gid: 0,
            size: 0,
            blocks: 0,
            blksize: PAGE_SIZE as u32,
            rdev: 0,
            atime: t,
            mtime: t,
            ctime: t,
        })
    }
}

static MOUNT: spin::Once<Arc<Mount>> = spin::Once::new();

/// The internal mount every memfd lives on.
pub fn mount() -> Arc<Mount> {
    MOUNT
        .call_once(|| mount_table::internal("memfd:", Arc::new(MemFs), Arc::new(MemRoot)))
        .clone()
}
