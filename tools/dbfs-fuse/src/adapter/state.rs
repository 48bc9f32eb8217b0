//! The adapter's shared state: [`DbFuse`] (the image, the nodes the kernel knows with their
//! lookup counts, the open handles, the mount's settings and the write-back errors waiting for
//! a flush), the lock helpers every request uses, and the helpers the request handlers share
//! (resolving an inode or handle, remembering a node handed to the kernel, making a node).
//!
//! Lock rule: `nodes` and `handles` are held only to clone or insert an `Arc`, never across a
//! dbfs call (see the module docs of [`crate::adapter`]).

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::Duration;

use fuser::{Errno, FileAttr, FileHandle, FopenFlags, INodeNo};
use vfs::{FileSystem, FileType, NewNode, NodeRef, SetAttr, VfsError};

use crate::answer::Caller;
use crate::image::Fs;
use crate::split_read;

use super::convert::{attr, err, mode_without_suid, utf8};

/// How long the kernel may cache attributes and entries: an hour. The mount is the only
/// writer of the image (it is locked), and every change reaches dbfs through this kernel,
/// which updates or invalidates what it caches for each request it sends (names on create,
/// unlink and rename; a directory's attributes after a change in it; a file's after a write,
/// truncate or setattr). So the cache cannot go stale behind the kernel's back, and a longer
/// time only spares requests: with one second, every name not used for a second was looked
/// up again before an unlink or open, a LOOKUP round trip each (one of four per unlink in
/// createdel of 20000 files).
pub(super) const TTL: Duration = Duration::from_secs(3600);

/// Largest read or write the kernel is asked to send.
pub(crate) const MAX_IO: u32 = 1 << 20;

pub(super) struct Known {
    pub(super) node: NodeRef,
    pub(super) lookups: u64,
}

pub(super) struct Handle {
    pub(super) node: NodeRef,
}

/// The FUSE file system over one mounted dbfs image.
pub struct DbFuse {
    pub(super) fs: Arc<Fs>,
    pub(super) nodes: RwLock<HashMap<u64, Known>>,
    pub(super) handles: RwLock<HashMap<u64, Handle>>,
    pub(super) next_fh: AtomicU64,
    pub(super) stop_timer: Arc<AtomicBool>,
    /// Mounted `ro`: the pager refuses writes, so nothing is committed (not even atime).
    pub(super) read_only: bool,
    /// Ask for the kernel's write-back cache (see [`DbFuse::set_writeback_cache`]); cleared
    /// at `init` if the kernel refuses it.
    pub(super) writeback_cache: AtomicBool,
    /// Ask for FUSE over io_uring (see [`DbFuse::set_uring`]); cleared at `init` if the kernel
    /// does not offer it.
    pub(super) uring: AtomicBool,
    /// Helpers that read the second half of a large read (see [`crate::split_read`]); set
    /// when requests come through io_uring.
    pub(super) read_helpers: std::sync::OnceLock<split_read::Helpers>,
    /// The io_uring threads serve requests (set when they start, cleared when one fails): only
    /// FORGET, BATCH_FORGET and INTERRUPT then come through `/dev/fuse` (see [`crate::dev`]).
    pub(super) rings_serving: AtomicBool,
    /// Open files with `FOPEN_KEEP_CACHE` (see [`DbFuse::set_keep_cache`]).
    pub(super) keep_cache: bool,
    /// Files whose data a request failed to change since their last open: the kernel's
    /// cached pages may hold what dbfs refused, so their next open drops them.
    pub(super) cache_suspect: Mutex<HashSet<u64>>,
    /// Answer `flush` (see [`DbFuse::set_close_errors`]).
    pub(super) close_errors: bool,
    /// The error of a write-back `write` (`FUSE_WRITE_CACHE`: the kernel writing its dirty
    /// pages) that failed, per file, until a `flush` or `fsync` of the file reports it.
    pub(super) writeback_errors: Mutex<HashMap<u64, Errno>>,
}

pub(super) fn read_lock<T>(l: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn write_lock<T>(l: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

pub(super) fn lock<T>(l: &Mutex<T>) -> MutexGuard<'_, T> {
    l.lock().unwrap_or_else(|p| p.into_inner())
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
    pub(super) fn open_flags(&self, ino: u64) -> FopenFlags {
        if !self.keep_cache || lock(&self.cache_suspect).remove(&ino) {
            FopenFlags::empty()
        } else {
            FopenFlags::FOPEN_KEEP_CACHE
        }
    }

    /// The error of a failed write-back write of `ino` not reported yet (see
    /// [`DbFuse::set_close_errors`]), taken: reported once.
    pub(super) fn take_writeback_error(&self, ino: INodeNo) -> Result<(), Errno> {
        match lock(&self.writeback_errors).remove(&ino.0) {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }

    /// A request that changes `ino`'s data failed (possibly after changing part of it).
    pub(super) fn data_change_failed(&self, ino: INodeNo) {
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

    pub(super) fn writeback_cache(&self) -> bool {
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

    pub(super) fn node(&self, ino: INodeNo) -> Result<NodeRef, Errno> {
        match read_lock(&self.nodes).get(&ino.0) {
            Some(k) => Ok(k.node.clone()),
            None => Err(Errno::ENOENT),
        }
    }

    pub(super) fn handle(&self, fh: FileHandle, ino: INodeNo) -> Result<NodeRef, Errno> {
        match read_lock(&self.handles).get(&fh.0) {
            Some(h) => Ok(h.node.clone()),
            None => self.node(ino),
        }
    }

    /// Tell the kernel about `node` (one more lookup) and return its attributes.
    pub(super) fn remember(&self, node: NodeRef) -> Result<FileAttr, Errno> {
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
    pub(super) fn kill_suid_sgid(node: &NodeRef) -> Result<(), Errno> {
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

    pub(super) fn open_handle(&self, node: NodeRef) -> Result<FileHandle, Errno> {
        node.open().map_err(err)?;
        let fh = self.next_fh.fetch_add(1, Ordering::Relaxed);
        write_lock(&self.handles).insert(fh, Handle { node });
        Ok(FileHandle(fh))
    }

    pub(super) fn new_node(
        req: &Caller,
        ftype: FileType,
        mode: u32,
        umask: u32,
        rdev: u64,
    ) -> NewNode {
        NewNode {
            ftype,
            perm: mode & !umask & 0o7777,
            uid: req.uid(),
            gid: req.gid(),
            rdev,
        }
    }

    pub(super) fn make(
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
}

impl Drop for DbFuse {
    fn drop(&mut self) {
        self.stop_timer.store(true, Ordering::Relaxed);
    }
}
