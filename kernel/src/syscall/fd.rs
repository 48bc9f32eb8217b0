//! Lookups the file calls share: a descriptor's open file, the directory a `*at` call's path
//! starts from, the caller's umask, and a node's `struct stat`.

use alloc::sync::Arc;

use abi::fcntl::AT_FDCWD;
use abi::stat::Stat;
use abi::Errno;
use vfs::{Metadata, Timestamp};

use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::task::with_current;

pub(super) const MAX_RW: usize = 0x7fff_f000;

pub(super) fn file(fd: i32) -> Result<Arc<OpenFile>, Errno> {
    with_current(|p| p.files.fds().get(fd))
}

/// The open file of a call that acts on the file itself (Linux's `fdget`, not `fdget_raw`):
/// fchmod, fchown, ioctl, mmap, the xattr calls. EBADF for an `O_PATH` descriptor, which
/// only names its file.
pub(super) fn file_not_path(fd: i32) -> Result<Arc<OpenFile>, Errno> {
    let f = file(fd)?;
    if *f.status_flags.lock() & abi::fcntl::O_PATH != 0 {
        return Err(Errno::EBADF);
    }
    Ok(f)
}

/// The directory relative paths start from: the cwd, or the directory open at `dirfd`.
pub(super) fn base(dirfd: i32, path: &str) -> Result<Loc, Errno> {
    if path.starts_with('/') {
        return Loc::root();
    }
    if dirfd == AT_FDCWD {
        let cwd = with_current(|p| p.cwd.clone());
        return Loc::from_path(&cwd);
    }
    let f = file(dirfd)?;
    if !f.is_dir() {
        return Err(Errno::ENOTDIR);
    }
    Ok(f.loc.clone())
}

pub(super) fn umask() -> u32 {
    with_current(|p| p.umask)
}

pub(super) fn stat_of(m: &Metadata, dev: usize) -> Stat {
    let ts = |t: Timestamp| (t.sec, t.nsec as u64);
    Stat {
        st_dev: dev as u64,
        st_ino: m.ino,
        st_mode: m.mode(),
        st_nlink: m.nlink,
        st_uid: m.uid,
        st_gid: m.gid,
        st_rdev: m.rdev,
        st_size: m.size as i64,
        st_blksize: m.blksize as i32,
        st_blocks: m.blocks as i64,
        st_atime: ts(m.atime).0,
        st_atime_nsec: ts(m.atime).1,
        st_mtime: ts(m.mtime).0,
        st_mtime_nsec: ts(m.mtime).1,
        st_ctime: ts(m.ctime).0,
        st_ctime_nsec: ts(m.ctime).1,
        ..Default::default()
    }
}
