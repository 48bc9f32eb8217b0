//! The FUSE adapter: `fuser::Filesystem` requests turned into the same [`vfs::Node`] calls the
//! kernel makes on dbfs.
//!
//! # Contract
//! - FUSE inode numbers are dbfs inode numbers (`vfs::Metadata::ino`); dbfs's root is inode 1,
//!   which is also FUSE's root, so no translation table is needed.
//! - [`DbFuse::nodes`] keeps one [`NodeRef`] per inode the kernel knows, with its lookup count:
//!   every reply that hands the kernel an entry (lookup, create, mkdir, mknod, symlink, link,
//!   readdirplus) adds one; `forget` takes them away and drops the node at zero. The root is
//!   never dropped.
//! - An open file is a handle ([`DbFuse::handles`]) holding its node, so a file unlinked while
//!   open keeps working until `release`, which calls `Node::release` (dbfs frees it then).
//! - Every error is `abi::Errno::from(VfsError)`, the project's one errno table; names that are
//!   not UTF-8 (dbfs stores `str`) are `EILSEQ`. Nothing here panics on a request.
//! - Permission checks: dbfs leaves them to the caller; the tool mounts with
//!   `default_permissions` so the Linux kernel checks mode bits before calling us, unless only
//!   root can reach the mount (`mount_opts::kernel_checks_permissions`: root passes them).
//!   `access` is answered from the mode bits for mounts without it.
//! - Set-user-id and set-group-id bits are cleared here, not by the kernel
//!   (`FUSE_HANDLE_KILLPRIV_V2`, see [`DbFuse::kill_suid_sgid`]): on a write the kernel marks
//!   `FUSE_WRITE_KILL_SUIDGID`; on a truncate, fallocate or copy_file_range by a caller other
//!   than root (the kernel's flag for those is not passed on by fuser, or not sent); and
//!   dbfs's own `setattr` on a chown. `security.capability` is still removed by the kernel, which probes
//!   for it whenever the inode is not marked free of it.
//!
//! # Locks
//! `nodes` and `handles` are `RwLock`s held only to clone or insert an `Arc`, never across a
//! dbfs call, so requests run in parallel on the session's worker threads; reads take only
//! read locks here and dbfs's readers do not wait for each other.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use fuser::{
    AccessFlags, CopyFileRangeFlags, Errno, FileAttr, FileHandle, FopenFlags, Generation, INodeNo,
    InitFlags, KernelConfig, LockOwner, OpenFlags, TimeOrNow, WriteFlags,
};
use vfs::{
    FileSystem, FileType, Metadata, NewNode, NodeRef, RenameFlags, SetAttr, TimeSet, VfsError,
    XattrMode,
};

use crate::answer::{
    AnsAttr, AnsCreate, AnsData, AnsDir, AnsDirPlus, AnsEmpty, AnsEntry, AnsLseek, AnsOpen,
    AnsStatfs, AnsWrite, AnsXattr, Caller,
};
use crate::image::{system_to_timestamp, timestamp_to_system, Fs, ImagePager};
use crate::split_read;

/// How long the kernel may cache attributes and entries: an hour. The mount is the only
/// writer of the image (it is locked), and every change reaches dbfs through this kernel,
/// which updates or invalidates what it caches for each request it sends (names on create,
/// unlink and rename; a directory's attributes after a change in it; a file's after a write,
/// truncate or setattr). So the cache cannot go stale behind the kernel's back, and a longer
/// time only spares requests: with one second, every name not used for a second was looked
/// up again before an unlink or open, a LOOKUP round trip each (one of four per unlink in
/// createdel of 20000 files).
const TTL: Duration = Duration::from_secs(3600);
/// Largest read or write the kernel is asked to send.
pub(crate) const MAX_IO: u32 = 1 << 20;

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IXGRP: u32 = 0o010;

/// The mode of a regular file `m` after a write or truncate by a caller without CAP_FSETID
/// (Linux's rule: set-user-id goes; set-group-id goes only with group-execute, since without
/// it the bit marks mandatory locking, not a privilege). `None` when nothing changes.
fn mode_without_suid(m: &Metadata) -> Option<u32> {
    if m.ftype != FileType::Regular {
        return None;
    }
    let mut perm = m.perm & 0o7777 & !S_ISUID;
    if perm & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP {
        perm &= !S_ISGID;
    }
    (perm != m.perm & 0o7777).then_some(perm)
}

struct Known {
    node: NodeRef,
    lookups: u64,
}

struct Handle {
    node: NodeRef,
}

/// The FUSE file system over one mounted dbfs image.
pub struct DbFuse {
    fs: Arc<Fs>,
    nodes: RwLock<HashMap<u64, Known>>,
    handles: RwLock<HashMap<u64, Handle>>,
    next_fh: AtomicU64,
    stop_timer: Arc<AtomicBool>,
    /// Mounted `ro`: the pager refuses writes, so nothing is committed (not even atime).
    read_only: bool,
    /// Ask for the kernel's write-back cache (see [`DbFuse::set_writeback_cache`]); cleared
    /// at `init` if the kernel refuses it.
    writeback_cache: AtomicBool,
    /// Ask for FUSE over io_uring (see [`DbFuse::set_uring`]); cleared at `init` if the kernel
    /// does not offer it.
    uring: AtomicBool,
    /// Helpers that read the second half of a large read (see [`crate::split_read`]); set
    /// when requests come through io_uring.
    read_helpers: std::sync::OnceLock<split_read::Helpers>,
    /// The io_uring threads serve requests (set when they start, cleared when one fails): only
    /// FORGET, BATCH_FORGET and INTERRUPT then come through `/dev/fuse` (see [`crate::dev`]).
    rings_serving: AtomicBool,
    /// Open files with `FOPEN_KEEP_CACHE` (see [`DbFuse::set_keep_cache`]).
    keep_cache: bool,
    /// Files whose data a request failed to change since their last open: the kernel's
    /// cached pages may hold what dbfs refused, so their next open drops them.
    cache_suspect: Mutex<HashSet<u64>>,
    /// Answer `flush` (see [`DbFuse::set_close_errors`]).
    close_errors: bool,
    /// The error of a write-back `write` (`FUSE_WRITE_CACHE`: the kernel writing its dirty
    /// pages) that failed, per file, until a `flush` or `fsync` of the file reports it.
    writeback_errors: Mutex<HashMap<u64, Errno>>,
}

fn err(e: VfsError) -> Errno {
    Errno::from_i32(abi::Errno::from(e).0)
}

fn read_lock<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write_lock<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

fn lock<T>(l: &Mutex<T>) -> MutexGuard<'_, T> {
    l.lock().unwrap_or_else(|p| p.into_inner())
}

fn utf8(name: &OsStr) -> Result<&str, Errno> {
    name.to_str().ok_or(Errno::from_i32(libc::EILSEQ))
}

fn kind(t: FileType) -> fuser::FileType {
    match t {
        FileType::Regular => fuser::FileType::RegularFile,
        FileType::Directory => fuser::FileType::Directory,
        FileType::Symlink => fuser::FileType::Symlink,
        FileType::CharDevice => fuser::FileType::CharDevice,
        FileType::BlockDevice => fuser::FileType::BlockDevice,
        FileType::Fifo => fuser::FileType::NamedPipe,
        FileType::Socket => fuser::FileType::Socket,
    }
}

pub fn attr(m: &Metadata) -> FileAttr {
    FileAttr {
        ino: INodeNo(m.ino),
        size: m.size,
        blocks: m.blocks,
        atime: timestamp_to_system(m.atime),
        mtime: timestamp_to_system(m.mtime),
        ctime: timestamp_to_system(m.ctime),
        crtime: timestamp_to_system(m.ctime),
        kind: kind(m.ftype),
        perm: (m.perm & 0o7777) as u16,
        nlink: m.nlink,
        uid: m.uid,
        gid: m.gid,
        rdev: m.rdev as u32,
        blksize: m.blksize,
        flags: 0,
    }
}

fn time_set(t: TimeOrNow) -> TimeSet {
    match t {
        TimeOrNow::Now => TimeSet::Now,
        TimeOrNow::SpecificTime(s) => TimeSet::At(system_to_timestamp(s)),
    }
}

impl DbFuse {
    /// Wrap a mounted image. Starts the write-back timer (a thread that stops with the mount)
    /// unless the image is read-only.
    pub fn new(fs: Arc<Fs>, read_only: bool) -> Result<DbFuse, VfsError> {
        let root = fs.root()?;
        let root_ino = root.getattr()?.ino;
        let mut nodes = HashMap::new();
        nodes.insert(
            root_ino,
            Known {
                node: root,
                lookups: 1,
            },
        );
        let stop_timer = Arc::new(AtomicBool::new(read_only));
        let weak = Arc::downgrade(&fs);
        let stop = stop_timer.clone();
        let spawned = std::thread::Builder::new()
            .name("dbfs-writeback".into())
            .spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    std::thread::sleep(Duration::from_millis(500));
                    let Some(fs) = weak.upgrade() else { break };
                    if let Err(e) = fs.writeback_tick() {
                        eprintln!("dbfs-fuse: write-back failed: {e}");
                    }
                }
            });
        if spawned.is_err() {
            return Err(VfsError::NoMemory);
        }
        Ok(DbFuse {
            fs,
            nodes: RwLock::new(nodes),
            handles: RwLock::new(HashMap::new()),
            next_fh: AtomicU64::new(1),
            stop_timer,
            read_only,
            writeback_cache: AtomicBool::new(false),
            uring: AtomicBool::new(false),
            read_helpers: std::sync::OnceLock::new(),
            rings_serving: AtomicBool::new(false),
            keep_cache: false,
            cache_suspect: Mutex::new(HashSet::new()),
            close_errors: true,
            writeback_errors: Mutex::new(HashMap::new()),
        })
    }

    /// Let the kernel keep a file's cached pages when it is opened again (`FOPEN_KEEP_CACHE`,
    /// what fuse2fs's `kernel_cache` does for every open), so re-reading a file read or
    /// written recently does not reach the daemon. The cache cannot go stale: the mount is
    /// the image's only writer, and every change to a file's data comes through this kernel,
    /// which updates or drops its own pages (writes, truncates, fallocate, copy_file_range).
    /// The one way it can differ from dbfs is a change dbfs refused (a failed write, e.g.
    /// ENOSPC at write-back): such a file's next open drops the pages (`cache_suspect`).
    pub fn set_keep_cache(&mut self, on: bool) {
        self.keep_cache = on;
    }

    /// Answer FUSE `flush` (one request per close(2)) to report there a write-back `write`
    /// of the file that failed (e.g. ENOSPC when the kernel wrote its dirty pages) or a
    /// background commit of its data that failed ([`dbfs::DbNode::take_write_error`]), each
    /// once. On by default. The kernel is meant to report a failed write-back write at close
    /// by itself, but does not always: with the image filling under other load, close(2)
    /// returned 0 after the kernel had sent every dirty page and dbfs had refused some with
    /// ENOSPC (`refused_writes_are_not_read_back_from_the_kernels_cache` failed 1 to 3 times in
    /// 40 runs, through /dev/fuse as through io_uring), and the kernel's flush request came
    /// after those refusals. Off, the first `flush` answers ENOSYS and the kernel sends no
    /// more (a round trip less per close), and close(2) reports only what the kernel kept.
    pub fn set_close_errors(&mut self, on: bool) {
        self.close_errors = on;
    }

    /// The flags of a file's open: [`FopenFlags::FOPEN_KEEP_CACHE`] unless a change to its
    /// data failed since its last open.
    fn open_flags(&self, ino: u64) -> FopenFlags {
        if !self.keep_cache || lock(&self.cache_suspect).remove(&ino) {
            FopenFlags::empty()
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        }
    }

    /// The error of a failed write-back write of `ino` not reported yet (see
    /// [`DbFuse::set_close_errors`]), taken: reported once.
    fn take_writeback_error(&self, ino: INodeNo) -> Result<(), Errno> {
        match lock(&self.writeback_errors).remove(&ino.0) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A request that changes `ino`'s data failed (possibly after changing part of it).
    fn data_change_failed(&self, ino: INodeNo) {
        if self.keep_cache {
            lock(&self.cache_suspect).insert(ino.0);
        }
    }

    /// Ask the kernel for FUSE's write-back cache (`FUSE_WRITEBACK_CACHE`, at `init`; ignored
    /// on a read-only mount). Buffered writes then go to the kernel's page cache and reach us
    /// merged, up to [`MAX_IO`] bytes a request, at write-back, fsync, close or when dirty
    /// pages must go. What that asks of this adapter, and how it is met:
    /// - the kernel may READ through a handle opened write-only (to fill a partial page): a
    ///   handle is not tied to an access mode here;
    /// - writes arrive late (at flush, release, fsync, or after the writer returned), through
    ///   any writable handle of the file: `write` uses the offset it is given;
    /// - O_APPEND is done by the kernel (the offset it sends is its own end of file);
    /// - the kernel owns size, mtime and ctime while it caches the file: it sends them back
    ///   with `setattr` (it writes dirty pages back before a `setattr` of times or mode);
    /// - our idea of the size may be behind the kernel's, so SEEK_DATA / SEEK_HOLE are left
    ///   to the kernel (`lseek` answers ENOSYS), which answers them from its own size;
    /// - the times may come after dbfs freed the file (unlinked or replaced after its last
    ///   close): `setattr` of times only then succeeds (see there).
    pub fn set_writeback_cache(&mut self, on: bool) {
        *self.writeback_cache.get_mut() = on && !self.read_only;
    }

    fn writeback_cache(&self) -> bool {
        self.writeback_cache.load(Ordering::Relaxed)
    }

    /// Ask the kernel, at `init`, to pass requests through per-CPU io_uring queues
    /// (`FUSE_OVER_IO_URING`, see [`crate::uring`]). The kernel offers it only when the `fuse`
    /// module's `enable_uring` parameter is on.
    pub fn set_uring(&mut self, on: bool) {
        *self.uring.get_mut() = on;
    }

    /// Read the second half of large reads on a helper thread (once requests come through the
    /// io_uring queues, whose threads stay on the caller's core).
    pub fn set_read_helpers(&self, helpers: split_read::Helpers) {
        let _ = self.read_helpers.set(helpers);
    }

    /// Note whether the io_uring threads serve requests (see [`crate::uring::start`]).
    pub fn set_rings_serving(&self, on: bool) {
        self.rings_serving.store(on, Ordering::Relaxed);
    }

    /// Whether the io_uring threads serve requests, leaving `/dev/fuse` to the forgets.
    pub fn rings_serving(&self) -> bool {
        self.rings_serving.load(Ordering::Relaxed)
    }

    /// Whether the kernel agreed to FUSE over io_uring (meaningful after `init`).
    pub fn uring(&self) -> bool {
        self.uring.load(Ordering::Relaxed)
    }

    fn node(&self, ino: INodeNo) -> Result<NodeRef, Errno> {
        match read_lock(&self.nodes).get(&ino.0) {
            Some(k) => Ok(k.node.clone()),
            None => Err(Errno::ENOENT),
        }
    }

    fn handle(&self, fh: FileHandle, ino: INodeNo) -> Result<NodeRef, Errno> {
        match read_lock(&self.handles).get(&fh.0) {
            Some(h) => Ok(h.node.clone()),
            None => self.node(ino),
        }
    }

    /// Tell the kernel about `node` (one more lookup) and return its attributes.
    fn remember(&self, node: NodeRef) -> Result<FileAttr, Errno> {
        let m = node.getattr().map_err(err)?;
        let mut nodes = write_lock(&self.nodes);
        nodes
            .entry(m.ino)
            .and_modify(|k| k.lookups += 1)
            .or_insert(Known { node, lookups: 1 });
        Ok(attr(&m))
    }

    /// What `FUSE_WRITE_KILL_SUIDGID` asks of a write (under `FUSE_HANDLE_KILLPRIV_V2` the
    /// kernel leaves it to us): clear the set-id bits before the data changes. Asking for
    /// `FUSE_HANDLE_KILLPRIV_V2` is what saves a round trip per write: without it the kernel
    /// asks for `security.capability` (a `getxattr` request) before every write, since a FUSE
    /// inode is never marked free of it.
    fn kill_suid_sgid(node: &NodeRef) -> Result<(), Errno> {
        let m = node.getattr().map_err(err)?;
        if let Some(perm) = mode_without_suid(&m) {
            let set = SetAttr {
                perm: Some(perm),
                ..SetAttr::default()
            };
            node.setattr(&set).map_err(err)?;
        }
        Ok(())
    }

    fn open_handle(&self, node: NodeRef) -> Result<FileHandle, Errno> {
        node.open().map_err(err)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        write_lock(&self.handles).insert(fh, Handle { node });
        Ok(FileHandle(fh))
    }

    fn new_node(req: &Caller, ftype: FileType, mode: u32, umask: u32, rdev: u64) -> NewNode {
        NewNode {
            ftype,
            perm: mode & !umask & 0o7777,
            uid: req.uid(),
            gid: req.gid(),
            rdev,
        }
    }

    fn make(
        &self,
        parent: INodeNo,
        name: &OsStr,
        new: &NewNode,
        target: Option<&Path>,
    ) -> Result<FileAttr, Errno> {
        let dir = self.node(parent)?;
        let name = utf8(name)?;
        let node = match target {
            Some(t) => {
                let t = t.to_str().ok_or(Errno::from_i32(libc::EILSEQ))?;
                dir.symlink(name, t, new)
            }
            None => dir.create(name, new),
        }
        .map_err(err)?;
        self.remember(node)
    }

    fn xattr_reply(data: &[u8], size: u32, reply: impl AnsXattr) {
        if size == 0 {
            reply.size(data.len() as u32);
        } else if (size as usize) < data.len() {
            reply.error(Errno::ERANGE);
        } else {
            reply.data(data);
        }
    }

    fn do_copy(
        &self,
        src: &NodeRef,
        mut off_in: u64,
        dst: &NodeRef,
        mut off_out: u64,
        len: u64,
    ) -> Result<u32, Errno> {
        let total = len.min(u64::from(u32::MAX) & !0xfff);
        let mut buf = vec![0u8; total.min(u64::from(MAX_IO)) as usize];
        let mut done = 0u64;
        while done < total {
            let want = (total - done).min(buf.len() as u64) as usize;
            let n = src
                .read_at(off_in, &mut buf[..want])
                .map_err(err)?
                .min(want);
            if n == 0 {
                break;
            }
            let mut w = 0;
            while w < n {
                let m = dst.write_at(off_out + w as u64, &buf[w..n]).map_err(err)?;
                if m == 0 {
                    return Err(Errno::EIO);
                }
                w += m;
            }
            done += n as u64;
            off_in += n as u64;
            off_out += n as u64;
        }
        Ok(done as u32)
    }
}

impl Drop for DbFuse {
    fn drop(&mut self) {
        self.stop_timer.store(true, Ordering::Relaxed);
    }
}

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
    pub(crate) fn init(&self, config: &mut KernelConfig) -> std::io::Result<()> {
        // Best effort: the kernel may refuse any of these and still work.
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_readahead(MAX_IO);
        let _ = config.add_capabilities(InitFlags::FUSE_PARALLEL_DIROPS);
        // An O_DIRECT read larger than `max_read` (mount_opts::MAX_READ) goes to the daemon
        // as several requests at once instead of one after the other, so the worker threads
        // serve one large read together (their image reads and copies overlap).
        let _ = config.add_capabilities(InitFlags::FUSE_ASYNC_DIO);
        // Set-id bits are cleared here (see the module doc); the kernel then skips its
        // `security.capability` probe on writes to an inode it has seen free of one.
        if !self.read_only {
            let _ = config.add_capabilities(InitFlags::FUSE_HANDLE_KILLPRIV_V2);
        }
        let _ = config
            .add_capabilities(InitFlags::FUSE_DO_READDIRPLUS | InitFlags::FUSE_READDIRPLUS_AUTO);
        if self.uring()
            && config
                .add_capabilities(InitFlags::FUSE_OVER_IO_URING)
                .is_err()
        {
            self.uring.store(false, Ordering::Relaxed);
        }
        if self.writeback_cache()
            && config
                .add_capabilities(InitFlags::FUSE_WRITEBACK_CACHE)
                .is_err()
        {
            // The kernel runs the mount without it: we then answer lseek ourselves.
            self.writeback_cache.store(false, Ordering::Relaxed);
        }
        Ok(())
    }

    pub(crate) fn destroy(&self) {
        self.stop_timer.store(true, Ordering::Relaxed);
        for (_, h) in write_lock(&self.handles).drain() {
            let _ = h.node.release();
        }
        if self.read_only {
            return;
        }
        if let Err(e) = self.fs.sync() {
            eprintln!("dbfs-fuse: sync at unmount failed: {e}");
        }
        if let Err(e) = self.fs.pager().sync_file() {
            eprintln!("dbfs-fuse: flushing the image at unmount failed: {e}");
        }
    }

    pub(crate) fn lookup(
        &self,
        _req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        reply: impl AnsEntry,
    ) {
        let r = (|| {
            let dir = self.node(parent)?;
            let node = dir.lookup(utf8(name)?).map_err(err)?;
            self.remember(node)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn forget(&self, _req: &Caller, ino: INodeNo, nlookup: u64) {
        if ino == INodeNo::ROOT {
            return;
        }
        let mut nodes = write_lock(&self.nodes);
        if let Some(k) = nodes.get_mut(&ino.0) {
            k.lookups = k.lookups.saturating_sub(nlookup);
            if k.lookups == 0 {
                nodes.remove(&ino.0);
                // No file of it is open: no flush or fsync will come to report this.
                lock(&self.writeback_errors).remove(&ino.0);
            }
        }
    }

    pub(crate) fn getattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        fh: Option<FileHandle>,
        reply: impl AnsAttr,
    ) {
        let r = (|| {
            let node = match fh {
                Some(fh) => self.handle(fh, ino)?,
                None => self.node(ino)?,
            };
            node.getattr().map_err(err)
        })();
        match r {
            Ok(m) => reply.attr(&TTL, &attr(&m)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn setattr(
        &self,
        req: &Caller,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<std::time::SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<std::time::SystemTime>,
        _chgtime: Option<std::time::SystemTime>,
        _bkuptime: Option<std::time::SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: impl AnsAttr,
    ) {
        let r = (|| {
            let node = match fh {
                Some(fh) => self.handle(fh, ino)?,
                None => self.node(ino)?,
            };
            let mut perm = mode.map(|m| m & 0o7777);
            // A truncate clears the set-id bits like a write (`FATTR_KILL_SUIDGID`, which
            // fuser does not pass on: the kernel sets it for callers without CAP_FSETID,
            // taken here as callers other than root).
            if size.is_some() && perm.is_none() && req.uid() != 0 {
                perm = mode_without_suid(&node.getattr().map_err(err)?);
            }
            let set = SetAttr {
                perm,
                uid,
                gid,
                size,
                atime: atime.map(time_set),
                mtime: mtime.map(time_set),
            };
            let only_times = mode.is_none() && uid.is_none() && gid.is_none() && size.is_none();
            match node.setattr(&set) {
                Ok(m) => Ok((TTL, attr(&m))),
                // With the write-back cache the kernel sends a file's times after the fact
                // (at write-back or syncfs), also for a file unlinked or renamed over after
                // its last close, which dbfs has freed by then. Nobody can see that file any
                // more: take the times and answer with what the kernel sent (not cached), so
                // that syncfs does not fail for it.
                Err(VfsError::NotFound) if self.writeback_cache() && only_times => {
                    let now = std::time::SystemTime::now();
                    let t = |x: Option<TimeOrNow>| match x {
                        Some(TimeOrNow::SpecificTime(s)) => s,
                        _ => now,
                    };
                    Ok((
                        Duration::ZERO,
                        FileAttr {
                            ino,
                            size: 0,
                            blocks: 0,
                            atime: t(atime),
                            mtime: t(mtime),
                            ctime: ctime.unwrap_or(now),
                            crtime: ctime.unwrap_or(now),
                            kind: kind(node.ftype().unwrap_or(FileType::Regular)),
                            perm: 0,
                            nlink: 0,
                            uid: req.uid(),
                            gid: req.gid(),
                            rdev: 0,
                            blksize: 4096,
                            flags: 0,
                        },
                    ))
                }
                Err(e) => Err(err(e)),
            }
        })();
        match r {
            Ok((ttl, a)) => reply.attr(&ttl, &a),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn readlink(&self, _req: &Caller, ino: INodeNo, reply: impl AnsData) {
        match self.node(ino).and_then(|n| n.readlink().map_err(err)) {
            Ok(t) => reply.data(t.as_bytes()),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn mknod(
        &self,
        req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: impl AnsEntry,
    ) {
        let r = (|| {
            let ftype = FileType::from_mode(mode).ok_or(Errno::EINVAL)?;
            if ftype == FileType::Directory || ftype == FileType::Symlink {
                return Err(Errno::EINVAL);
            }
            self.make(
                parent,
                name,
                &Self::new_node(req, ftype, mode, umask, u64::from(rdev)),
                None,
            )
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn mkdir(
        &self,
        req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: impl AnsEntry,
    ) {
        match self.make(
            parent,
            name,
            &Self::new_node(req, FileType::Directory, mode, umask, 0),
            None,
        ) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn unlink(
        &self,
        _req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        reply: impl AnsEmpty,
    ) {
        match self
            .node(parent)
            .and_then(|d| d.unlink(utf8(name)?).map_err(err))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn rmdir(&self, _req: &Caller, parent: INodeNo, name: &OsStr, reply: impl AnsEmpty) {
        match self
            .node(parent)
            .and_then(|d| d.rmdir(utf8(name)?).map_err(err))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn symlink(
        &self,
        req: &Caller,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: impl AnsEntry,
    ) {
        match self.make(
            parent,
            link_name,
            &Self::new_node(req, FileType::Symlink, 0o777, 0, 0),
            Some(target),
        ) {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn rename(
        &self,
        _req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: fuser::RenameFlags,
        reply: impl AnsEmpty,
    ) {
        let r = (|| {
            if flags.contains(fuser::RenameFlags::RENAME_WHITEOUT) {
                return Err(Errno::EINVAL);
            }
            let f = RenameFlags {
                noreplace: flags.contains(fuser::RenameFlags::RENAME_NOREPLACE),
                exchange: flags.contains(fuser::RenameFlags::RENAME_EXCHANGE),
            };
            let from = self.node(parent)?;
            let to = self.node(newparent)?;
            from.rename(utf8(name)?, &*to, utf8(newname)?, f)
                .map_err(err)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn link(
        &self,
        _req: &Caller,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: impl AnsEntry,
    ) {
        let r = (|| {
            let target = self.node(ino)?;
            let dir = self.node(newparent)?;
            dir.link(utf8(newname)?, &*target).map_err(err)?;
            self.remember(target)
        })();
        match r {
            Ok(a) => reply.entry(&TTL, &a, Generation(0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn open(&self, _req: &Caller, ino: INodeNo, _flags: OpenFlags, reply: impl AnsOpen) {
        let r = (|| {
            let node = self.node(ino)?;
            if node.ftype().map_err(err)? == FileType::Directory {
                return Err(Errno::EISDIR);
            }
            self.open_handle(node)
        })();
        match r {
            Ok(fh) => reply.opened(fh, self.open_flags(ino.0)),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn read(
        &self,
        _req: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: impl AnsData,
    ) {
        let node = match self.handle(fh, ino) {
            Ok(n) => n,
            Err(e) => return reply.error(e),
        };
        let fill = |buf: &mut [u8]| -> Result<usize, Errno> {
            match self.read_helpers.get() {
                Some(h) => h.read(&node, offset, buf),
                None => vfs::read_fully(&*node, offset, buf),
            }
            .map_err(err)
        };
        reply.data_from(size.min(16 << 20) as usize, fill);
    }

    pub(crate) fn write(
        &self,
        _req: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: impl AnsWrite,
    ) {
        let r = (|| {
            let node = self.handle(fh, ino)?;
            if write_flags.contains(WriteFlags::FUSE_WRITE_KILL_SUIDGID) {
                Self::kill_suid_sgid(&node)?;
            }
            let mut done = 0;
            while done < data.len() {
                let n = node
                    .write_at(offset + done as u64, &data[done..])
                    .map_err(err)?;
                if n == 0 {
                    return Err(Errno::EIO);
                }
                done += n;
            }
            Ok(done as u32)
        })();
        match r {
            Ok(n) => reply.written(n),
            Err(e) => {
                self.data_change_failed(ino);
                if write_flags.contains(WriteFlags::FUSE_WRITE_CACHE) {
                    // Nobody waits for this answer but the kernel; keep it for close and
                    // fsync (the first error is the one reported).
                    lock(&self.writeback_errors).entry(ino.0).or_insert(e);
                }
                reply.error(e)
            }
        }
    }

    pub(crate) fn flush(
        &self,
        _req: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: impl AnsEmpty,
    ) {
        // close(2): report a write-back error of this file that nobody was told about yet: a
        // write-back write dbfs refused, or a commit by the timer or the dirty limit that
        // failed (its data still buffered). close does not commit (that would make every
        // close wait for a transaction); the space of accepted writes is reserved, so what can
        // fail later is I/O, not room.
        if !self.close_errors {
            // The kernel sends no more flush requests after this answer.
            return reply.error(Errno::ENOSYS);
        }
        if self.read_only {
            return reply.ok();
        }
        let r = self.take_writeback_error(ino).and_then(|()| {
            self.handle(fh, ino).and_then(|node| {
                match node.as_any().downcast_ref::<dbfs::DbNode<ImagePager>>() {
                    Some(db) => db.take_write_error().map_err(err),
                    None => Ok(()),
                }
            })
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn release(
        &self,
        _req: &Caller,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: impl AnsEmpty,
    ) {
        let h = write_lock(&self.handles).remove(&fh.0);
        match h.map(|h| h.node.release()) {
            Some(Err(e)) => reply.error(err(e)),
            _ => reply.ok(),
        }
    }

    pub(crate) fn fsync(
        &self,
        _req: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: impl AnsEmpty,
    ) {
        if self.read_only {
            return reply.ok();
        }
        let r = self
            .handle(fh, ino)
            .and_then(|n| n.fsync(datasync).map_err(err))
            .and_then(|()| self.fs.pager().sync_after_fsync().map_err(|_| Errno::EIO))
            // A write-back write refused since the last report is this fsync's error (when
            // the kernel's own check missed it, it sends this request), so close(2) does not
            // report it again.
            .and_then(|()| self.take_writeback_error(ino));
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    /// Directories need no open state here (readdir starts from the cookie it is given, and
    /// the kernel opens only inodes it knows to be directories), so the first opendir answers
    /// ENOSYS: the kernel then opens directories without a request, closes them without a
    /// releasedir (two round trips less per opendir(3), e.g. per fsync of a directory), and
    /// caches their listings (`FOPEN_CACHE_DIR`, dropped when it changes the directory).
    pub(crate) fn opendir(
        &self,
        _req: &Caller,
        _ino: INodeNo,
        _flags: OpenFlags,
        reply: impl AnsOpen,
    ) {
        reply.error(Errno::ENOSYS);
    }

    pub(crate) fn readdir(
        &self,
        _req: &Caller,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: impl AnsDir,
    ) {
        let r = self.node(ino).and_then(|dir| {
            dir.readdir(offset, &mut |e| {
                !reply.add(INodeNo(e.ino), e.next_cookie, kind(e.ftype), e.name)
            })
            .map_err(err)
        });
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn readdirplus(
        &self,
        _req: &Caller,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        mut reply: impl AnsDirPlus,
    ) {
        let r = (|| {
            let dir = self.node(ino)?;
            let dir_attr = attr(&dir.getattr().map_err(err)?);
            // Collect first: no dbfs snapshot is held while we look entries up.
            let mut entries = Vec::new();
            dir.readdir(offset, &mut |e| {
                entries.push((e.name.to_string(), e.next_cookie));
                entries.len() < 256
            })
            .map_err(err)?;
            for (name, cookie) in entries {
                if name == "." || name == ".." {
                    // The kernel does not take a reference for these.
                    if reply.add(dir_attr.ino, cookie, &name, &TTL, &dir_attr, Generation(0)) {
                        break;
                    }
                    continue;
                }
                let node = match dir.lookup(&name) {
                    Ok(n) => n,
                    Err(VfsError::NotFound) => continue, // removed since the listing
                    Err(e) => return Err(err(e)),
                };
                let m = node.getattr().map_err(err)?;
                let a = attr(&m);
                if reply.add(a.ino, cookie, &name, &TTL, &a, Generation(0)) {
                    break;
                }
                let mut nodes = write_lock(&self.nodes);
                nodes
                    .entry(m.ino)
                    .and_modify(|k| k.lookups += 1)
                    .or_insert(Known { node, lookups: 1 });
            }
            Ok(())
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn fsyncdir(
        &self,
        _req: &Caller,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: impl AnsEmpty,
    ) {
        // Directory operations commit deferred: fsync of the directory is the barrier that
        // makes its entries (and every earlier commit) durable.
        if self.read_only {
            return reply.ok();
        }
        let r = self.node(ino).and_then(|n| n.fsync(false).map_err(err));
        match r.and_then(|()| self.fs.pager().sync_after_fsync().map_err(|_| Errno::EIO)) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn statfs(&self, _req: &Caller, _ino: INodeNo, reply: impl AnsStatfs) {
        match self.fs.statfs() {
            Ok(s) => reply.statfs(
                s.blocks,
                s.blocks_free,
                s.blocks_available,
                s.files,
                s.files_free,
                s.block_size as u32,
                s.name_max as u32,
                s.block_size as u32,
            ),
            Err(e) => reply.error(err(e)),
        }
    }

    pub(crate) fn setxattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: impl AnsEmpty,
    ) {
        let r = (|| {
            let mode = match flags {
                0 => XattrMode::Any,
                libc::XATTR_CREATE => XattrMode::Create,
                libc::XATTR_REPLACE => XattrMode::Replace,
                _ => return Err(Errno::EINVAL),
            };
            self.node(ino)?
                .setxattr(utf8(name)?, value, mode)
                .map_err(err)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn getxattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        name: &OsStr,
        size: u32,
        reply: impl AnsXattr,
    ) {
        match self
            .node(ino)
            .and_then(|n| n.getxattr(utf8(name)?).map_err(err))
        {
            Ok(v) => Self::xattr_reply(&v, size, reply),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn listxattr(&self, _req: &Caller, ino: INodeNo, size: u32, reply: impl AnsXattr) {
        match self.node(ino).and_then(|n| n.listxattr().map_err(err)) {
            Ok(names) => {
                let mut buf = Vec::new();
                for n in names {
                    buf.extend_from_slice(n.as_bytes());
                    buf.push(0);
                }
                Self::xattr_reply(&buf, size, reply)
            }
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn removexattr(
        &self,
        _req: &Caller,
        ino: INodeNo,
        name: &OsStr,
        reply: impl AnsEmpty,
    ) {
        match self
            .node(ino)
            .and_then(|n| n.removexattr(utf8(name)?).map_err(err))
        {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn access(
        &self,
        req: &Caller,
        ino: INodeNo,
        mask: AccessFlags,
        reply: impl AnsEmpty,
    ) {
        let r = (|| {
            let m = self.node(ino)?.getattr().map_err(err)?;
            let want = (mask.bits() & 7) as u32;
            if want == 0 {
                return Ok(());
            }
            let granted = if req.uid() == 0 {
                // root may read and write anything, and execute what anyone may execute.
                let x = if m.ftype == FileType::Directory || m.perm & 0o111 != 0 {
                    1
                } else {
                    0
                };
                6 | x
            } else if req.uid() == m.uid {
                (m.perm >> 6) & 7
            } else if req.gid() == m.gid {
                (m.perm >> 3) & 7
            } else {
                m.perm & 7
            };
            if want & !granted == 0 {
                Ok(())
            } else {
                Err(Errno::EACCES)
            }
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn create(
        &self,
        req: &Caller,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: impl AnsCreate,
    ) {
        let r = (|| {
            let ftype = FileType::from_mode(mode).unwrap_or(FileType::Regular);
            if ftype != FileType::Regular {
                return Err(Errno::EINVAL);
            }
            let dir = self.node(parent)?;
            let node = dir
                .create(utf8(name)?, &Self::new_node(req, ftype, mode, umask, 0))
                .map_err(err)?;
            let a = self.remember(node.clone())?;
            let fh = self.open_handle(node)?;
            Ok((a, fh))
        })();
        match r {
            Ok((a, fh)) => {
                let flags = self.open_flags(a.ino.0);
                reply.created(&TTL, &a, Generation(0), fh, flags)
            }
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn fallocate(
        &self,
        req: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: impl AnsEmpty,
    ) {
        let r = (|| {
            if mode != 0 {
                return Err(Errno::EOPNOTSUPP);
            }
            let node = self.handle(fh, ino)?;
            if req.uid() != 0 {
                // The kernel's file_modified() leaves the set-id bits to us (see `write`);
                // it sends no flag here, so the caller's uid decides, as for a truncate.
                Self::kill_suid_sgid(&node)?;
            }
            let db = node
                .as_any()
                .downcast_ref::<dbfs::DbNode<ImagePager>>()
                .ok_or(Errno::EOPNOTSUPP)?;
            db.fallocate(offset, length).map_err(err)
        })();
        match r {
            Ok(()) => reply.ok(),
            Err(e) => {
                self.data_change_failed(ino);
                reply.error(e)
            }
        }
    }

    pub(crate) fn lseek(
        &self,
        _req: &Caller,
        ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: impl AnsLseek,
    ) {
        let r = (|| {
            if self.writeback_cache() && matches!(whence, libc::SEEK_DATA | libc::SEEK_HOLE) {
                // Our size may lag the kernel's (dirty pages not yet written back). ENOSYS
                // makes the kernel answer these from its own size from now on, the same way
                // we would: all data below the size, one hole at it.
                return Err(Errno::ENOSYS);
            }
            let m = self.handle(fh, ino)?.getattr().map_err(err)?;
            let size = i64::try_from(m.size).map_err(|_| Errno::EOVERFLOW)?;
            // dbfs does not report where its holes are: the whole file is data, and the only
            // hole is the implicit one at end of file (what Linux reports for such files).
            match whence {
                libc::SEEK_SET if offset >= 0 => Ok(offset),
                libc::SEEK_END => size
                    .checked_add(offset)
                    .filter(|&o| o >= 0)
                    .ok_or(Errno::EINVAL),
                libc::SEEK_DATA if offset < 0 => Err(Errno::EINVAL),
                libc::SEEK_HOLE if offset < 0 => Err(Errno::EINVAL),
                libc::SEEK_DATA | libc::SEEK_HOLE if offset >= size => Err(Errno::ENXIO),
                libc::SEEK_DATA => Ok(offset),
                libc::SEEK_HOLE => Ok(size),
                _ => Err(Errno::EINVAL),
            }
        })();
        match r {
            Ok(o) => reply.offset(o),
            Err(e) => reply.error(e),
        }
    }

    pub(crate) fn copy_file_range(
        &self,
        req: &Caller,
        ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        _flags: CopyFileRangeFlags,
        reply: impl AnsWrite,
    ) {
        let r = (|| {
            let src = self.handle(fh_in, ino_in)?;
            let dst = self.handle(fh_out, ino_out)?;
            if req.uid() != 0 {
                // As for fallocate: no flag from the kernel, the caller's uid decides.
                Self::kill_suid_sgid(&dst)?;
            }
            self.do_copy(&src, offset_in, &dst, offset_out, len)
        })();
        match r {
            Ok(n) => reply.written(n),
            Err(e) => {
                self.data_change_failed(ino_out);
                reply.error(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::answer::AnsError;
    use std::cell::Cell;
    use std::rc::Rc;

    /// A reply that keeps what the operation answered: `Ok(value)` or the error.
    #[derive(Clone, Default)]
    struct Probe(Rc<Cell<Option<Result<u64, Errno>>>>);

    impl Probe {
        fn take(&self) -> Result<u64, Errno> {
            self.0.take().expect("the operation answered")
        }
    }

    impl AnsError for Probe {
        fn error(self, e: Errno) {
            self.0.set(Some(Err(e)));
        }
    }
    impl AnsEntry for Probe {
        fn entry(self, _: &Duration, attr: &FileAttr, _: Generation) {
            self.0.set(Some(Ok(attr.ino.0)));
        }
    }
    impl AnsOpen for Probe {
        fn opened(self, fh: FileHandle, _: FopenFlags) {
            self.0.set(Some(Ok(fh.0)));
        }
    }
    impl AnsWrite for Probe {
        fn written(self, n: u32) {
            self.0.set(Some(Ok(u64::from(n))));
        }
    }
    impl AnsEmpty for Probe {
        fn ok(self) {
            self.0.set(Some(Ok(0)));
        }
    }

    /// A write-back write (`FUSE_WRITE_CACHE`) dbfs refuses is reported by the file's next
    /// flush (close) or fsync, once; a refused write of a caller (O_DIRECT, or without the
    /// write-back cache) is that caller's error alone. The kernel does not always keep the
    /// error of its write-back writes for close(2) (see `set_close_errors`).
    #[test]
    fn a_refused_write_back_write_is_reported_by_the_next_flush_or_fsync() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("img");
        crate::image::mkfs(&path, 12 << 20, 16 << 10, 4096, "t").unwrap();
        let fs = crate::image::open_image(&path, false).unwrap();
        let root = fs.root().unwrap();
        let new = vfs::NewNode {
            ftype: vfs::FileType::Regular,
            perm: 0o644,
            uid: 0,
            gid: 0,
            rdev: 0,
        };
        for name in ["cached", "direct", "synced"] {
            root.create(name, &new).unwrap();
        }
        let fuse = DbFuse::new(fs, false).unwrap();
        let me = Caller { uid: 0, gid: 0 };
        let root_ino = INodeNo(root.getattr().unwrap().ino);
        let open = |name: &str| {
            let p = Probe::default();
            fuse.lookup(&me, root_ino, OsStr::new(name), p.clone());
            let ino = INodeNo(p.take().unwrap());
            fuse.open(&me, ino, OpenFlags(libc::O_RDWR), p.clone());
            (ino, FileHandle(p.take().unwrap()))
        };
        let piece = vec![7u8; 1 << 20];
        // Fill the image 1 MiB at a time until dbfs refuses a write.
        let fill = |ino: INodeNo, fh: FileHandle, flags: WriteFlags| {
            for i in 0..64u64 {
                let p = Probe::default();
                fuse.write(
                    &me,
                    ino,
                    fh,
                    i << 20,
                    &piece,
                    flags,
                    OpenFlags(0),
                    None,
                    p.clone(),
                );
                if let Err(e) = p.take() {
                    return e;
                }
            }
            panic!("64 MiB accepted on a 12 MiB image");
        };
        let flush = |ino, fh| {
            let p = Probe::default();
            fuse.flush(&me, ino, fh, LockOwner(0), p.clone());
            p.take()
        };
        let fsync = |ino, fh| {
            let p = Probe::default();
            fuse.fsync(&me, ino, fh, false, p.clone());
            p.take()
        };
        let unlink = |name: &str| {
            let p = Probe::default();
            fuse.unlink(&me, root_ino, OsStr::new(name), p.clone());
            p.take().unwrap();
        };

        let (ino, fh) = open("cached");
        assert_eq!(fill(ino, fh, WriteFlags::FUSE_WRITE_CACHE), Errno::ENOSPC);
        assert_eq!(
            flush(ino, fh),
            Err(Errno::ENOSPC),
            "close after a refused write-back"
        );
        assert_eq!(flush(ino, fh), Ok(0), "reported once");

        // The space the first file holds is given back, then a caller's own write is refused.
        unlink("cached");
        let (ino, fh) = open("direct");
        assert_eq!(fill(ino, fh, WriteFlags::empty()), Errno::ENOSPC);
        assert_eq!(flush(ino, fh), Ok(0), "the caller was told already");

        unlink("direct");
        let (ino, fh) = open("synced");
        assert_eq!(fill(ino, fh, WriteFlags::FUSE_WRITE_CACHE), Errno::ENOSPC);
        assert_eq!(
            fsync(ino, fh),
            Err(Errno::ENOSPC),
            "fsync after a refused write-back"
        );
        assert_eq!(flush(ino, fh), Ok(0), "fsync reported it");
    }
}
