//! Conversions between dbfs's vfs types and fuser's: errors, names, file types,
//! attributes, times, and the mode a file keeps after a write by a caller without CAP_FSETID.

use std::ffi::OsStr;

use fuser::{Errno, FileAttr, INodeNo, TimeOrNow};
use vfs::{FileType, Metadata, TimeSet, VfsError};

use crate::image::{system_to_timestamp, timestamp_to_system};

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_IXGRP: u32 = 0o010;

/// The mode of a regular file `m` after a write or truncate by a caller without CAP_FSETID
/// (Linux's rule: set-user-id goes; set-group-id goes only with group-execute, since without
/// it the bit marks mandatory locking, not a privilege). `None` when nothing changes.
pub(super) fn mode_without_suid(m: &Metadata) -> Option<u32> {
    if m.ftype != FileType::Regular {
        return None;
    }
    let mut perm = m.perm & 0o7777 & !S_ISUID;
    if perm & (S_ISGID | S_IXGRP) == S_ISGID | S_IXGRP {
        perm &= !S_ISGID;
    }
    (perm != m.perm & 0o7777).then_some(perm)
}

pub(super) fn err(e: VfsError) -> Errno {
    Errno::from_i32(abi::Errno::from(e).0)
}

pub(super) fn utf8(name: &OsStr) -> Result<&str, Errno> {
    name.to_str().ok_or(Errno::from_i32(libc::EILSEQ))
}

pub(super) fn kind(t: FileType) -> fuser::FileType {
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

pub(super) fn time_set(t: TimeOrNow) -> TimeSet {
    match t {
        TimeOrNow::Now => TimeSet::Now,
        TimeOrNow::SpecificTime(s) => TimeSet::At(system_to_timestamp(s)),
    }
}
