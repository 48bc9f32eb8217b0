//! File I/O requests on open handles: open, read, write, flush, release, fsync, fallocate,
//! lseek and copy_file_range (with the chunk-by-chunk copy behind it).

use fuser::{CopyFileRangeFlags, Errno, FileHandle, INodeNo, LockOwner, OpenFlags, WriteFlags};
use vfs::{FileType, NodeRef};

use crate::answer::{AnsData, AnsEmpty, AnsLseek, AnsOpen, AnsWrite, Caller};
use crate::image::ImagePager;

use super::convert::err;
use super::state::{lock, write_lock, DbFuse, MAX_IO};

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
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
            const KEEP_SIZE: i32 = libc::FALLOC_FL_KEEP_SIZE;
            const PUNCH: i32 = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
            const ZERO: i32 = libc::FALLOC_FL_ZERO_RANGE;
            if ![0, KEEP_SIZE, PUNCH, ZERO, ZERO | KEEP_SIZE].contains(&mode) {
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
            let end = offset.checked_add(length).ok_or(Errno::EFBIG)?;
            if mode & (PUNCH | ZERO) != 0 {
                // The range inside the size reads zeros: a hole (the guest kernel's
                // fallocate does the same).
                let size = node.getattr().map_err(err)?.size;
                if offset < size {
                    vfs::Node::punch_hole(&*node, offset, end.min(size) - offset).map_err(err)?;
                }
                if mode & KEEP_SIZE != 0 || end <= size {
                    return Ok(());
                }
                // ZERO_RANGE past the end: zeros there, allocated, and the size grows.
                return db
                    .fallocate(offset.max(size), end - offset.max(size))
                    .map_err(err);
            }
            if mode & KEEP_SIZE != 0 {
                // Space beyond the size is not reserved ahead of time: nothing to do.
                let size = node.getattr().map_err(err)?.size;
                if offset >= size {
                    return Ok(());
                }
                return db.fallocate(offset, end.min(size) - offset).map_err(err);
            }
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
