//! The `/dev/fuse` path: fuser's session threads read requests from the device and hand
//! them to the adapter's operations, which answer through fuser's reply types (see
//! [`crate::answer`]). All requests come this way when the kernel's FUSE io_uring is off or not
//! yet ready, and the few it never puts on a ring (FORGET, BATCH_FORGET, INTERRUPT) always do.
//!
//! # Forgets, paced
//! The kernel forgets an inode when it drops it, and an unlinked file is dropped at once: one
//! FORGET per unlink. Each wakes a thread waiting on `/dev/fuse`, in the caller's unlink
//! (on this project's VMs a wake-up of an idle vCPU, an exit to the host), and one unlink
//! already takes two or three round trips on the rings (the UNLINK, the SETATTR of the file's
//! ctime that the write-back cache sends, and, on a mount with `default_permissions`, the
//! directory's GETATTR the kernel asks for after every change to it). So while the rings
//! serve, a thread about to handle a forget request first sleeps [`FORGET_PAUSE`]: the
//! threads then mostly sleep
//! instead of waiting on the device, forgets queue in the kernel meanwhile, and the kernel
//! hands the queue over as one BATCH_FORGET. A forget only lowers a lookup count (inode numbers
//! are never reused, so a late one cannot hit a newer file), so nothing waits for it. An
//! INTERRUPT finds a waiting thread unless all of them pause, and then waits at most one pause.
//! Through `/dev/fuse` alone (no rings) forgets are handled at once: the same threads answer
//! every request there.

use std::cell::Cell;
use std::ffi::OsStr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use fuser::{
    AccessFlags, CopyFileRangeFlags, FileHandle, Filesystem, INodeNo, KernelConfig, LockOwner,
    OpenFlags, ReplyAttr, ReplyCreate, ReplyData, ReplyDirectory, ReplyDirectoryPlus, ReplyEmpty,
    ReplyEntry, ReplyLseek, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr, Request, TimeOrNow,
    WriteFlags,
};

use crate::adapter::DbFuse;
use crate::answer::Caller;

/// How long a `/dev/fuse` thread sleeps before it handles a forget request while the rings
/// serve (see the module doc).
const FORGET_PAUSE: Duration = Duration::from_millis(5);

std::thread_local! {
    /// The id of the last forget request this thread handled.
    static LAST_FORGET: Cell<u64> = const { Cell::new(0) };
}

/// Whether a thread that last handled forget request `last` pauses before an entry of request
/// `unique`: only before a request's first entry, and only while the rings serve.
fn pause_before(last: &Cell<u64>, unique: u64, rings_serving: bool) -> bool {
    last.replace(unique) != unique && rings_serving
}

/// The adapter as fuser's file system; the io_uring threads hold the same `Arc`.
pub struct DevPath(pub Arc<DbFuse>);

impl Filesystem for DevPath {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        self.0.init(config)
    }

    fn destroy(&mut self) {
        self.0.destroy();
    }

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.0.lookup(&Caller::of(req), parent, name, reply)
    }

    fn forget(&self, req: &Request, ino: INodeNo, nlookup: u64) {
        // fuser hands a BATCH_FORGET over one entry at a time, all with the request's id:
        // pause once per request, before its first entry.
        if LAST_FORGET.with(|last| pause_before(last, req.unique().0, self.0.rings_serving())) {
            std::thread::sleep(FORGET_PAUSE);
        }
        self.0.forget(&Caller::of(req), ino, nlookup)
    }

    fn getattr(&self, req: &Request, ino: INodeNo, fh: Option<FileHandle>, reply: ReplyAttr) {
        self.0.getattr(&Caller::of(req), ino, fh, reply)
    }

    fn setattr(
        &self,
        req: &Request,
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
        reply: ReplyAttr,
    ) {
        self.0.setattr(
            &Caller::of(req),
            ino,
            mode,
            uid,
            gid,
            size,
            atime,
            mtime,
            ctime,
            fh,
            _crtime,
            _chgtime,
            _bkuptime,
            _flags,
            reply,
        )
    }

    fn readlink(&self, req: &Request, ino: INodeNo, reply: ReplyData) {
        self.0.readlink(&Caller::of(req), ino, reply)
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        self.0
            .mknod(&Caller::of(req), parent, name, mode, umask, rdev, reply)
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        self.0
            .mkdir(&Caller::of(req), parent, name, mode, umask, reply)
    }

    fn unlink(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.0.unlink(&Caller::of(req), parent, name, reply)
    }

    fn rmdir(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.0.rmdir(&Caller::of(req), parent, name, reply)
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &Path,
        reply: ReplyEntry,
    ) {
        self.0
            .symlink(&Caller::of(req), parent, link_name, target, reply)
    }

    fn rename(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: fuser::RenameFlags,
        reply: ReplyEmpty,
    ) {
        self.0.rename(
            &Caller::of(req),
            parent,
            name,
            newparent,
            newname,
            flags,
            reply,
        )
    }

    fn link(
        &self,
        req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        self.0
            .link(&Caller::of(req), ino, newparent, newname, reply)
    }

    fn open(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.0.open(&Caller::of(req), ino, _flags, reply)
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        self.0.read(
            &Caller::of(req),
            ino,
            fh,
            offset,
            size,
            _flags,
            _lock_owner,
            reply,
        )
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        self.0.write(
            &Caller::of(req),
            ino,
            fh,
            offset,
            data,
            write_flags,
            _flags,
            _lock_owner,
            reply,
        )
    }

    fn flush(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        self.0.flush(&Caller::of(req), ino, fh, _lock_owner, reply)
    }

    fn release(
        &self,
        req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.0.release(
            &Caller::of(req),
            _ino,
            fh,
            _flags,
            _lock_owner,
            _flush,
            reply,
        )
    }

    fn fsync(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.0.fsync(&Caller::of(req), ino, fh, datasync, reply)
    }

    fn opendir(&self, req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.0.opendir(&Caller::of(req), _ino, _flags, reply)
    }

    fn readdir(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectory,
    ) {
        self.0.readdir(&Caller::of(req), ino, _fh, offset, reply)
    }

    fn readdirplus(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        reply: ReplyDirectoryPlus,
    ) {
        self.0
            .readdirplus(&Caller::of(req), ino, _fh, offset, reply)
    }

    fn fsyncdir(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        self.0
            .fsyncdir(&Caller::of(req), ino, _fh, _datasync, reply)
    }

    fn statfs(&self, req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        self.0.statfs(&Caller::of(req), _ino, reply)
    }

    fn setxattr(
        &self,
        req: &Request,
        ino: INodeNo,
        name: &OsStr,
        value: &[u8],
        flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        self.0
            .setxattr(&Caller::of(req), ino, name, value, flags, _position, reply)
    }

    fn getxattr(&self, req: &Request, ino: INodeNo, name: &OsStr, size: u32, reply: ReplyXattr) {
        self.0.getxattr(&Caller::of(req), ino, name, size, reply)
    }

    fn listxattr(&self, req: &Request, ino: INodeNo, size: u32, reply: ReplyXattr) {
        self.0.listxattr(&Caller::of(req), ino, size, reply)
    }

    fn removexattr(&self, req: &Request, ino: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.0.removexattr(&Caller::of(req), ino, name, reply)
    }

    fn access(&self, req: &Request, ino: INodeNo, mask: AccessFlags, reply: ReplyEmpty) {
        self.0.access(&Caller::of(req), ino, mask, reply)
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        _flags: i32,
        reply: ReplyCreate,
    ) {
        self.0
            .create(&Caller::of(req), parent, name, mode, umask, _flags, reply)
    }

    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        self.0
            .fallocate(&Caller::of(req), ino, fh, offset, length, mode, reply)
    }

    fn lseek(
        &self,
        req: &Request,
        ino: INodeNo,
        fh: FileHandle,
        offset: i64,
        whence: i32,
        reply: ReplyLseek,
    ) {
        self.0
            .lseek(&Caller::of(req), ino, fh, offset, whence, reply)
    }

    fn copy_file_range(
        &self,
        req: &Request,
        ino_in: INodeNo,
        fh_in: FileHandle,
        offset_in: u64,
        ino_out: INodeNo,
        fh_out: FileHandle,
        offset_out: u64,
        len: u64,
        _flags: CopyFileRangeFlags,
        reply: ReplyWrite,
    ) {
        self.0.copy_file_range(
            &Caller::of(req),
            ino_in,
            fh_in,
            offset_in,
            ino_out,
            fh_out,
            offset_out,
            len,
            _flags,
            reply,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forgets_pause_once_per_request_and_only_beside_the_rings() {
        let last = Cell::new(0);
        // A BATCH_FORGET of three entries, then a FORGET: two pauses.
        let pauses: Vec<bool> = [7, 7, 7, 9]
            .iter()
            .map(|&u| pause_before(&last, u, true))
            .collect();
        assert_eq!(pauses, [true, false, false, true]);
        // Through /dev/fuse alone, never.
        assert!(!pause_before(&last, 11, false));
        assert!(!pause_before(&last, 12, false));
    }
}
