//! Open file descriptions and per-process descriptor tables.
//!
//! An [`OpenFile`] is shared by every descriptor dup'ed or inherited from one `openat`; it
//! holds the offset (a directory's readdir cookie lives there too) and the access mode. The
//! node's `release` hook runs when the last descriptor closes.

use alloc::boxed::Box;
use alloc::sync::Arc;
use alloc::vec::Vec;

use abi::Errno;

use super::mount_table::Loc;
use crate::mm::file_pages::FileKey;
use crate::sync::Mutex;
use crate::task::files::{ClosingFiles, FileTable};

pub struct OpenFile {
    pub loc: Loc,
    /// The node's type (it never changes while the node exists).
    pub ftype: vfs::FileType,
    pub readable: bool,
    pub writable: bool,
    /// O_APPEND, O_NONBLOCK, ... as given to open (F_GETFL).
    pub status_flags: Mutex<u32>,
    pub offset: Mutex<u64>,
    /// The file's name in the record-lock table, once looked up (a lock taken, or a close
    /// while the process held locks): a file unlinked meanwhile may no longer answer getattr.
    lock_key: Mutex<Option<FileKey>>,
    /// `release` already ran (through [`OpenFile::close_last`]): `Drop` skips it.
    released: bool,
    /// A `flock` was taken through this description: its last close drops it.
    flocked: core::sync::atomic::AtomicBool,
    /// An OFD record lock was taken through this description: its last close drops them.
    ofd_locked: core::sync::atomic::AtomicBool,
    /// Counted among its mount's writers (a regular file opened for writing).
    mount_writer: bool,
    /// The open that made this description created the file (fcntl F_CREATED_QUERY).
    pub created: core::sync::atomic::AtomicBool,
    /// Whom signal-driven I/O and lease breaks tell, with which signal (`super::sigio`).
    /// Shared with the lease table, which tells a lease's holder through it.
    pub sigio: Arc<Mutex<super::sigio::SigIo>>,
    /// A lease was taken through this description: its last close drops it.
    leased: core::sync::atomic::AtomicBool,
}

impl OpenFile {
    pub fn new(
        loc: Loc,
        readable: bool,
        writable: bool,
        status_flags: u32,
    ) -> Result<Arc<OpenFile>, Errno> {
        use core::sync::atomic::Ordering::Relaxed;
        let ftype = loc.node.ftype()?;
        if OPEN_FILES.fetch_add(1, Relaxed) >= MAX_OPEN_FILES {
            OPEN_FILES.fetch_sub(1, Relaxed);
            return Err(Errno::ENFILE);
        }
        // Linux: only a regular file's writers hold write access to the mount; a device
        // or a FIFO on a read-only mount may still be written.
        let mount_writer = writable && ftype == vfs::FileType::Regular;
        if mount_writer {
            if let Err(e) = loc.mount.add_writer() {
                OPEN_FILES.fetch_sub(1, Relaxed);
                return Err(e);
            }
        }
        if let Err(e) = loc.node.open() {
            OPEN_FILES.fetch_sub(1, Relaxed);
            if mount_writer {
                loc.mount.drop_writer();
            }
            return Err(e.into());
        }
        Ok(Arc::new(OpenFile {
            loc,
            ftype,
            readable,
            writable,
            status_flags: Mutex::new(status_flags),
            offset: Mutex::new(0),
            lock_key: Mutex::new(None),
            released: false,
            flocked: core::sync::atomic::AtomicBool::new(false),
            ofd_locked: core::sync::atomic::AtomicBool::new(false),
            mount_writer,
            created: core::sync::atomic::AtomicBool::new(false),
            sigio: Arc::new(Mutex::new(Default::default())),
            leased: core::sync::atomic::AtomicBool::new(false),
        }))
    }

    /// Drop one descriptor's reference; when it was the last, run the node's `release` here
    /// and return its error, as Linux's close(2) reports the final flush's (a file system
    /// that buffers writes may only learn at that commit that the disk is full: ENOSPC).
    pub fn close_last(this: Arc<OpenFile>) -> Result<(), Errno> {
        // The flock owner is the address in the `Arc`, not that of the value moved out.
        let owner = Arc::as_ptr(&this) as usize;
        match Arc::try_unwrap(this) {
            Ok(mut f) => {
                f.drop_locks(owner);
                f.released = true;
                f.loc.node.release()?;
                Ok(())
            }
            Err(_) => Ok(()), // other descriptors still share it
        }
    }

    pub fn is_dir(&self) -> bool {
        self.ftype == vfs::FileType::Directory
    }

    /// Whether the description has a position (not a terminal, pipe or socket).
    pub fn seekable(&self) -> bool {
        !matches!(
            self.ftype,
            vfs::FileType::CharDevice | vfs::FileType::Fifo | vfs::FileType::Socket
        )
    }

    pub fn append(&self) -> bool {
        *self.status_flags.lock() & abi::fcntl::O_APPEND != 0
    }

    /// The file's name in the record-lock table (mount and inode number).
    pub fn lock_key(&self) -> Result<FileKey, Errno> {
        if let Some(key) = *self.lock_key.lock() {
            return Ok(key);
        }
        let key = FileKey {
            mount: self.loc.mount.id,
            ino: self.loc.node.getattr()?.ino,
        };
        *self.lock_key.lock() = Some(key);
        Ok(key)
    }

    /// flock(2) through this description: `LOCK_SH` (`Some(false)`), `LOCK_EX` (`Some(true)`)
    /// or `LOCK_UN` (`None`); `super::flock` has the rules.
    pub fn flock(&self, want: Option<bool>, nonblock: bool) -> Result<(), Errno> {
        let key = self.lock_key()?;
        let owner = self as *const OpenFile as usize;
        match want {
            Some(exclusive) => {
                super::flock::lock(key, owner, exclusive, nonblock)?;
                self.flocked
                    .store(true, core::sync::atomic::Ordering::Relaxed);
            }
            None => super::flock::release(key, owner),
        }
        Ok(())
    }

    /// The description (owner address `owner`) is going: its flock, OFD record locks and
    /// lease go with it.
    fn drop_locks(&self, owner: usize) {
        use core::sync::atomic::Ordering::Relaxed;
        if let Some(key) = *self.lock_key.lock() {
            if self.flocked.load(Relaxed) {
                super::flock::release(key, owner);
            }
            if self.ofd_locked.load(Relaxed) {
                super::lock::release_on_close(key, super::lock::Owner::File(owner));
            }
            if self.leased.load(Relaxed) {
                super::lease::release(key, owner);
            }
        }
    }

    /// Mark the description as one that took a lease (`super::lease`): its last close drops
    /// it. Its lock key, the lease table's, is looked up here.
    pub fn lease_key(&self) -> Result<FileKey, Errno> {
        let key = self.lock_key()?;
        self.leased
            .store(true, core::sync::atomic::Ordering::Relaxed);
        Ok(key)
    }

    /// The owner of the OFD record locks taken through this description (`F_OFD_SETLK`),
    /// marked so that its last close releases them.
    pub fn ofd_owner(self: &Arc<Self>) -> super::lock::Owner {
        self.ofd_locked
            .store(true, core::sync::atomic::Ordering::Relaxed);
        super::lock::Owner::File(Arc::as_ptr(self) as usize)
    }

    /// A descriptor of this file was closed by `pid`: POSIX drops all of `pid`'s record
    /// locks on the file, whichever descriptor took them.
    pub fn release_locks(&self, pid: usize) {
        if !super::lock::holds_any(pid) {
            return;
        }
        match self.lock_key() {
            Ok(key) => super::lock::release_on_close(key, super::lock::Owner::Process(pid)),
            // A file that is gone (FAT32 cannot keep an unlinked open file) and was never
            // locked through this description: exit releases whatever the process still holds.
            Err(e) => log::debug!("record locks of {} not looked up: {}", self.loc.path, e),
        }
    }
}

/// Open file descriptions in the whole system (Linux's `file-max`): past it, open, pipe2 and
/// socket answer ENFILE, so descriptors spread over many processes cannot exhaust the kernel
/// heap (each process is also held to [`MAX_FDS`]).
pub const MAX_OPEN_FILES: usize = 16384;
static OPEN_FILES: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

impl Drop for OpenFile {
    fn drop(&mut self) {
        OPEN_FILES.fetch_sub(1, core::sync::atomic::Ordering::Relaxed);
        if self.mount_writer {
            self.loc.mount.drop_writer();
        }
        if self.released {
            return;
        }
        self.drop_locks(self as *const OpenFile as usize);
        if let Err(e) = self.loc.node.release() {
            log::warn!("release of {} failed: {}", self.loc.path, e);
        }
    }
}

#[derive(Clone)]
struct Slot {
    file: Arc<OpenFile>,
    cloexec: bool,
}

/// A process's descriptors.
#[derive(Clone, Default)]
pub struct FdTable {
    slots: Vec<Option<Slot>>,
    /// RLIMIT_NOFILE's soft limit, when set below [`MAX_FDS`]: no descriptor at or above it
    /// is handed out.
    soft_limit: Option<usize>,
}

/// Most descriptors a process may hold (`/proc/sys/fs/nr_open`, RLIMIT_NOFILE's default and
/// highest hard limit).
pub const MAX_FDS: usize = 1024;

impl FdTable {
    /// Descriptors 0, 1, 2 on the console (`console`: where `/dev/console` resolves).
    pub fn with_console(console: Loc) -> Result<FdTable, Errno> {
        let mut t = FdTable::default();
        for fd in 0..3 {
            let f = OpenFile::new(console.clone(), fd == 0, fd != 0, 0)?;
            t.install_at(fd, f, false);
        }
        Ok(t)
    }

    /// The first descriptor number not handed out (RLIMIT_NOFILE's soft limit).
    pub fn limit(&self) -> usize {
        self.soft_limit.unwrap_or(MAX_FDS).min(MAX_FDS)
    }

    /// Set RLIMIT_NOFILE's soft limit (descriptors already open above it stay open).
    pub fn set_limit(&mut self, n: u64) {
        self.soft_limit = usize::try_from(n).ok().filter(|&n| n < MAX_FDS);
    }

    /// The open descriptors' numbers, lowest first.
    pub fn numbers(&self) -> Vec<i32> {
        (0..self.slots.len())
            .filter(|&i| self.slots[i].is_some())
            .map(|i| i as i32)
            .collect()
    }

    pub fn get(&self, fd: i32) -> Result<Arc<OpenFile>, Errno> {
        usize::try_from(fd)
            .ok()
            .and_then(|i| self.slots.get(i))
            .and_then(|s| s.as_ref())
            .map(|s| s.file.clone())
            .ok_or(Errno::EBADF)
    }

    /// Install at the lowest free descriptor >= `min`.
    pub fn install_from(
        &mut self,
        min: usize,
        file: Arc<OpenFile>,
        cloexec: bool,
    ) -> Result<i32, Errno> {
        let mut fd = min;
        while fd < self.slots.len() && self.slots[fd].is_some() {
            fd += 1;
        }
        if fd >= self.limit() {
            return Err(Errno::EMFILE);
        }
        self.make_room(fd)?;
        self.install_at(fd, file, cloexec);
        Ok(fd as i32)
    }

    /// Grow the table so that `fd` (< MAX_FDS) has a slot: ENOMEM when the heap cannot.
    pub fn make_room(&mut self, fd: usize) -> Result<(), Errno> {
        if fd < self.slots.len() {
            return Ok(());
        }
        let more = fd + 1 - self.slots.len();
        crate::mm::heap::admit(more * core::mem::size_of::<Option<Slot>>())?;
        self.slots.try_reserve(more).map_err(|_| Errno::ENOMEM)
    }

    pub fn install(&mut self, file: Arc<OpenFile>, cloexec: bool) -> Result<i32, Errno> {
        self.install_from(0, file, cloexec)
    }

    /// Put `file` at `fd`, returning what was there (closed by the caller dropping it).
    pub fn install_at(
        &mut self,
        fd: usize,
        file: Arc<OpenFile>,
        cloexec: bool,
    ) -> Option<Arc<OpenFile>> {
        if self.slots.len() <= fd {
            self.slots.resize(fd + 1, None);
        }
        self.slots[fd]
            .replace(Slot { file, cloexec })
            .map(|s| s.file)
    }

    pub fn close(&mut self, fd: i32) -> Result<Arc<OpenFile>, Errno> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        self.slots
            .get_mut(i)
            .and_then(|s| s.take())
            .map(|s| s.file)
            .ok_or(Errno::EBADF)
    }

    pub fn cloexec(&self, fd: i32) -> Result<bool, Errno> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        self.slots
            .get(i)
            .and_then(|s| s.as_ref())
            .map(|s| s.cloexec)
            .ok_or(Errno::EBADF)
    }

    pub fn set_cloexec(&mut self, fd: i32, on: bool) -> Result<(), Errno> {
        let i = usize::try_from(fd).map_err(|_| Errno::EBADF)?;
        let s = self
            .slots
            .get_mut(i)
            .and_then(|s| s.as_mut())
            .ok_or(Errno::EBADF)?;
        s.cloexec = on;
        Ok(())
    }

    /// Close every close-on-exec descriptor; returns their files (dropping them closes).
    pub fn close_on_exec(&mut self) -> Vec<Arc<OpenFile>> {
        let mut closed = Vec::new();
        for s in self.slots.iter_mut() {
            if s.as_ref().is_some_and(|s| s.cloexec) {
                if let Some(slot) = s.take() {
                    closed.push(slot.file);
                }
            }
        }
        closed
    }
}

impl crate::mm::file_pages::MappedFile for OpenFile {
    fn node(&self) -> &vfs::NodeRef {
        &self.loc.node
    }
    fn key(&self) -> Result<FileKey, Errno> {
        self.lock_key()
    }
    fn is_regular(&self) -> bool {
        self.ftype == vfs::FileType::Regular
    }
    fn writable(&self) -> bool {
        self.writable && !super::memfd::write_sealed(&self.loc.node)
    }
    fn path(&self) -> alloc::string::String {
        self.loc.path.clone()
    }
    fn as_any(&self) -> &dyn core::any::Any {
        self
    }
}

impl FileTable for FdTable {
    fn fork(&self) -> Box<dyn FileTable> {
        Box::new(self.clone())
    }

    fn take_close_on_exec(&mut self) -> Box<dyn ClosingFiles> {
        Box::new(ClosedOnExec(self.close_on_exec()))
    }

    fn take_all(&mut self) -> Box<dyn ClosingFiles> {
        Box::new(ClosedAtExit(core::mem::take(self)))
    }
}

/// execve's close-on-exec descriptors: each file's record locks of the process go with it.
struct ClosedOnExec(Vec<Arc<OpenFile>>);

impl ClosingFiles for ClosedOnExec {
    fn close(self: Box<Self>, pid: usize) {
        for f in self.0 {
            f.release_locks(pid);
        }
    }
}

/// An exiting process's whole table: every record lock it holds goes, then every descriptor.
struct ClosedAtExit(FdTable);

impl ClosingFiles for ClosedAtExit {
    fn close(self: Box<Self>, pid: usize) {
        super::lock::release_all(pid);
        let ClosedAtExit(table) = *self;
        drop(table); // closes every descriptor (may write back data)
    }
}

impl dyn FileTable {
    /// The process's descriptors as the file layer keeps them (every process's table is an
    /// [`FdTable`]: this layer makes them all, at boot and by fork).
    pub fn fds(&mut self) -> &mut FdTable {
        let any: &mut dyn core::any::Any = self;
        any.downcast_mut::<FdTable>()
            .expect("a process's file table is always an fs::file::FdTable")
    }
}
