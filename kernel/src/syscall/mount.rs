//! mount(2) and umount2(2): a file system on a block device (`/dev/vdX`, or a device node
//! naming one) attached to a directory at run time, and taken away again.
//!
//! What is built: new mounts of the types /proc/filesystems lists for block devices (vfat,
//! dbfs), read-write or read-only (MS_RDONLY), one mount per disk and per directory, and
//! remounts that switch a mount between read-write and read-only (EBUSY while a file is open
//! through it for writing). What is not, with Linux's errno for an unsupported request: bind
//! and move mounts, propagation changes (EINVAL); lazy unmounts of a busy file system
//! (MNT_DETACH: EBUSY as without it); MNT_FORCE only as a plain unmount.

use abi::Errno;

use super::args::{read_path, SysResult};
use crate::fs::mount_dev;
use crate::fs::path::{self, Loc};
use abi::fcntl::AT_FDCWD;

use super::fd::base;

const MS_RDONLY: usize = 1;
const MS_REMOUNT: usize = 32;
/// The per-mount flags built: MS_RDONLY. The others (MS_NOSUID, MS_NOEXEC, MS_NOATIME...)
/// are EINVAL rather than accepted and not enforced.
const MS_TUNE: usize = MS_RDONLY;
const MS_SILENT: usize = 32768;
/// The magic number old programs put in the top 16 bits of the flags (ignored by Linux).
const MS_MGC_MSK: usize = 0xffff_0000;
const MS_MGC_VAL: usize = 0xc0ed_0000;

const MNT_FORCE: u32 = 1;
const MNT_DETACH: u32 = 2;
const MNT_EXPIRE: u32 = 4;
const UMOUNT_NOFOLLOW: u32 = 8;

/// CAP_SYS_ADMIN: the effective user is root.
fn may_mount() -> bool {
    crate::task::current_cred().euid == 0
}

/// A string argument, or None for a NULL pointer.
fn opt_string(va: usize) -> Result<Option<alloc::string::String>, Errno> {
    if va == 0 {
        return Ok(None);
    }
    read_path(va).map(Some)
}

pub fn sys_mount(
    source: usize,
    target: usize,
    fstype: usize,
    flags: usize,
    _data: usize,
) -> SysResult {
    // As Linux: the strings are copied first (EFAULT), then the target is looked up.
    let fstype = opt_string(fstype)?;
    let source = opt_string(source)?;
    let target = read_path(target)?;
    let target = path::resolve(&base(AT_FDCWD, &target)?, &target, true)?;
    if !may_mount() {
        return Err(Errno::EPERM);
    }
    let mut flags = flags;
    if flags & MS_MGC_MSK == MS_MGC_VAL {
        flags &= !MS_MGC_MSK;
    }
    if flags & MS_REMOUNT != 0 {
        // Linux: EINVAL unless the target is a mount's root. Only MS_RDONLY changes.
        if target.mount.path != target.path || flags & !(MS_REMOUNT | MS_SILENT | MS_TUNE) != 0 {
            return Err(Errno::EINVAL);
        }
        let path = target.path.clone();
        drop(target);
        mount_dev::remount(&path, flags & MS_RDONLY != 0)?;
        return Ok(0);
    }
    if flags & !(MS_SILENT | MS_TUNE) != 0 {
        // Bind, move and propagation changes.
        return Err(Errno::EINVAL);
    }
    let fstype = fstype.ok_or(Errno::EINVAL)?;
    if !mount_dev::is_block_type(&fstype) {
        return Err(Errno::ENODEV);
    }
    let source_name = source.ok_or(Errno::EINVAL)?;
    if source_name.is_empty() {
        return Err(Errno::ENOENT);
    }
    let src = path::resolve(&base(AT_FDCWD, &source_name)?, &source_name, true)?;
    mount_dev::mount_block(&src, &src.path, &fstype, &target, flags & MS_RDONLY != 0)?;
    Ok(0)
}

pub fn sys_umount2(target: usize, flags: u32) -> SysResult {
    if flags & !(MNT_FORCE | MNT_DETACH | MNT_EXPIRE | UMOUNT_NOFOLLOW) != 0
        || (flags & MNT_EXPIRE != 0 && flags & (MNT_FORCE | MNT_DETACH) != 0)
    {
        return Err(Errno::EINVAL);
    }
    let target = read_path(target)?;
    let loc: Loc = path::resolve(
        &base(AT_FDCWD, &target)?,
        &target,
        flags & UMOUNT_NOFOLLOW == 0,
    )?;
    if !may_mount() {
        return Err(Errno::EPERM);
    }
    // Only the root of a mount can be unmounted.
    if loc.mount.path != loc.path {
        return Err(Errno::EINVAL);
    }
    if flags & MNT_EXPIRE != 0 {
        // Linux: the first MNT_EXPIRE only marks an unused mount (EAGAIN); the marks'
        // expiry is not built, so a mount is never unmounted this way.
        return Err(Errno::EAGAIN);
    }
    let path = loc.path.clone();
    drop(loc);
    mount_dev::unmount(&path, cwd_inside)?;
    Ok(0)
}

/// Whether some process works in the directory `dir` or below it.
fn cwd_inside(dir: &str) -> bool {
    crate::task::all_processes().iter().any(|p| {
        let i = p.inner.lock();
        i.zombie.is_none()
            && (i.cwd == dir || i.cwd.strip_prefix(dir).is_some_and(|r| r.starts_with('/')))
    })
}
