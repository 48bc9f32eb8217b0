//! Attribute requests: getattr, setattr (with the set-id rules on a size change or chown),
//! readlink and access.

use std::time::Duration;

use fuser::{AccessFlags, Errno, FileAttr, FileHandle, INodeNo, TimeOrNow};
use vfs::{FileType, SetAttr, VfsError};

use crate::answer::{AnsAttr, AnsData, AnsEmpty, Caller};

use super::convert::{attr, err, kind, mode_without_suid, time_set};
use super::state::{DbFuse, TTL};

// The operations keep the argument lists of fuser's `Filesystem` methods they stand for.
#[allow(clippy::too_many_arguments)]
impl DbFuse {
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
}
