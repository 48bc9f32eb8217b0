//! Attributes: stat, chmod, chown, utimensat, truncate, access, statfs.

use abi::fcntl::*;
use abi::stat::{Statfs, Timespec};
use abi::Errno;
use vfs::{FileType, SetAttr, TimeSet, Timestamp};

use super::args::{copy_in, copy_out, read_path, SysResult};
use crate::fs::path::{self, Loc};
use crate::fs::perm;

use super::fd::{base, file, file_not_path, stat_of};
use super::io::{drop_suid_after_write, drop_suid_of, fsize_grow_ok};

pub fn sys_fstat(fd: i32, buf: usize) -> SysResult {
    let f = file(fd)?;
    let m = f.loc.node.getattr()?;
    copy_out(buf, &stat_of(&m, f.loc.mount.id).as_bytes())?;
    Ok(0)
}

/// What an `*at` call with AT_EMPTY_PATH and AT_SYMLINK_NOFOLLOW names: the descriptor
/// itself (an empty path with AT_EMPTY_PATH), or the path relative to it.
fn loc_at(dirfd: i32, path_ptr: usize, flags: u32) -> Result<Loc, Errno> {
    let path = read_path(path_ptr)?;
    if path.is_empty() && flags & AT_EMPTY_PATH != 0 {
        return if dirfd == AT_FDCWD {
            base(dirfd, "")
        } else {
            Ok(file(dirfd)?.loc.clone())
        };
    }
    path::resolve(
        &base(dirfd, &path)?,
        &path,
        flags & AT_SYMLINK_NOFOLLOW == 0,
    )
}

pub fn sys_newfstatat(dirfd: i32, path_ptr: usize, buf: usize, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800/* AT_NO_AUTOMOUNT */) != 0 {
        return Err(Errno::EINVAL);
    }
    let loc = loc_at(dirfd, path_ptr, flags)?;
    let m = loc.node.getattr()?;
    copy_out(buf, &stat_of(&m, loc.mount.id).as_bytes())?;
    Ok(0)
}

/// statx: `newfstatat`'s answer in `struct statx`. Unknown flags, both sync modes at once
/// and the reserved mask bit are EINVAL, as Linux; every basic field is filled whatever
/// `mask` asks (Linux may fill more than asked, and says what in `stx_mask`).
pub fn sys_statx(dirfd: i32, path_ptr: usize, flags: u32, mask: u32, buf: usize) -> SysResult {
    use abi::stat::{Statx, AT_STATX_SYNC_TYPE, STATX__RESERVED};
    let known =
        AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH | 0x800 /* AT_NO_AUTOMOUNT */ | AT_STATX_SYNC_TYPE;
    if flags & !known != 0
        || flags & AT_STATX_SYNC_TYPE == AT_STATX_SYNC_TYPE
        || mask & STATX__RESERVED != 0
    {
        return Err(Errno::EINVAL);
    }
    let loc = loc_at(dirfd, path_ptr, flags)?;
    let m = loc.node.getattr()?;
    let st = stat_of(&m, loc.mount.id);
    copy_out(buf, &Statx::from_stat(&st, loc.mount.id as u64).as_bytes())?;
    Ok(0)
}

pub fn sys_ftruncate(fd: i32, len: i64) -> SysResult {
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let f = file(fd)?;
    if !f.writable || f.ftype != FileType::Regular {
        return Err(Errno::EINVAL);
    }
    fsize_grow_ok(f.loc.node.getattr()?.size, len as u64)?;
    f.loc.node.truncate(len as u64)?;
    crate::mm::file_pages::truncated_open(&*f, len as u64);
    drop_suid_of(&f)?;
    Ok(0)
}

pub fn sys_truncate(path_ptr: usize, len: i64) -> SysResult {
    if len < 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    match loc.node.ftype()? {
        FileType::Regular => {}
        FileType::Directory => return Err(Errno::EISDIR),
        _ => return Err(Errno::EINVAL),
    }
    perm::check(&perm::cred(), &loc, perm::MAY_WRITE)?;
    fsize_grow_ok(loc.node.getattr()?.size, len as u64)?;
    crate::fs::lease::break_for(&loc, true, false)?;
    loc.node.truncate(len as u64)?;
    let m = loc.node.getattr()?;
    crate::mm::file_pages::truncated(
        crate::fs::lock::FileKey {
            mount: loc.mount.id,
            ino: m.ino,
        },
        len as u64,
    );
    drop_suid_after_write(&loc, &m)?;
    Ok(0)
}

fn statfs_of(loc: &Loc) -> Result<Statfs, Errno> {
    let s = loc.mount.fs.statfs()?;
    Ok(Statfs {
        f_type: s.fs_type as i64,
        f_bsize: s.block_size as i64,
        f_blocks: s.blocks,
        f_bfree: s.blocks_free,
        f_bavail: s.blocks_available,
        f_files: s.files,
        f_ffree: s.files_free,
        f_fsid: [loc.mount.id as i32, 0],
        f_namelen: s.name_max as i64,
        f_frsize: s.block_size as i64,
        // ST_RDONLY.
        f_flags: loc.mount.is_readonly() as i64,
        ..Default::default()
    })
}

pub fn sys_statfs(path_ptr: usize, buf: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    copy_out(buf, &statfs_of(&loc)?.as_bytes())?;
    Ok(0)
}

pub fn sys_fstatfs(fd: i32, buf: usize) -> SysResult {
    let f = file(fd)?;
    copy_out(buf, &statfs_of(&f.loc)?.as_bytes())?;
    Ok(0)
}

/// faccessat / faccessat2: checked with the real ids (the effective ones with AT_EACCESS),
/// as Linux does; root may read and write anything, executing needs some x bit.
pub fn sys_faccessat(dirfd: i32, path_ptr: usize, mode: u32, flags: u32) -> SysResult {
    const AT_EACCESS: u32 = 0x200;
    if mode & !7 != 0 || flags & !(AT_EACCESS | AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let loc = loc_at(dirfd, path_ptr, flags)?;
    let m = loc.node.getattr()?;
    let mut c = perm::cred();
    if flags & AT_EACCESS == 0 {
        c.fsuid = c.uid;
        c.fsgid = c.gid;
    }
    if mode & perm::MAY_WRITE != 0
        && loc.mount.is_readonly()
        && matches!(
            m.ftype,
            FileType::Regular | FileType::Directory | FileType::Symlink
        )
    {
        return Err(Errno::EROFS);
    }
    if mode != 0 {
        perm::check_meta(&c, &m, mode)?;
    }
    Ok(0)
}

fn chmod(loc: &Loc, mode: u32) -> SysResult {
    loc.mount.want_write()?;
    // A symbolic link has no mode of its own to change (Linux 6.6: EOPNOTSUPP), reached
    // through an `O_PATH` descriptor of it or its /proc/self/fd link.
    if loc.node.ftype()? == FileType::Symlink {
        return Err(Errno::EOPNOTSUPP);
    }
    let c = perm::cred();
    let mode = if c.is_root() {
        mode & 0o7777
    } else {
        let m = loc.node.getattr()?;
        if !perm::owns(&c, &m) {
            return Err(Errno::EPERM);
        }
        perm::chmod_mode(&c, &m, mode)
    };
    loc.node.setattr(&SetAttr {
        perm: Some(mode),
        ..Default::default()
    })?;
    Ok(0)
}

/// chown with Linux's rules (`chown_ok`, `chgrp_ok`): root may set any owner and group; the
/// owner may keep its uid and set a group it belongs to; -1 leaves an id alone. Changing
/// either id of a non-directory takes set-user-id off (and set-group-id with group-execute).
fn chown(loc: &Loc, uid: u32, gid: u32) -> SysResult {
    loc.mount.want_write()?;
    let c = perm::cred();
    let m = loc.node.getattr()?;
    let owner = c.fsuid == m.uid;
    if uid != u32::MAX && !c.is_root() && !(owner && uid == m.uid) {
        return Err(Errno::EPERM);
    }
    if gid != u32::MAX && !c.is_root() && !(owner && (gid == m.gid || c.in_group(gid))) {
        return Err(Errno::EPERM);
    }
    let new_mode = if m.ftype != FileType::Directory && (uid != u32::MAX || gid != u32::MAX) {
        perm::mode_without_suid(&m)
    } else {
        None
    };
    loc.node.setattr(&SetAttr {
        uid: (uid != u32::MAX).then_some(uid),
        gid: (gid != u32::MAX).then_some(gid),
        perm: new_mode,
        ..Default::default()
    })?;
    Ok(0)
}

pub fn sys_fchown(fd: i32, uid: usize, gid: usize) -> SysResult {
    chown(&file_not_path(fd)?.loc, uid as u32, gid as u32)
}

pub fn sys_fchownat(dirfd: i32, path_ptr: usize, uid: usize, gid: usize, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let loc = loc_at(dirfd, path_ptr, flags)?;
    chown(&loc, uid as u32, gid as u32)
}

pub fn sys_fchmod(fd: i32, mode: u32) -> SysResult {
    chmod(&file_not_path(fd)?.loc, mode)
}

pub fn sys_fchmodat(dirfd: i32, path_ptr: usize, mode: u32) -> SysResult {
    let path = read_path(path_ptr)?;
    if path.is_empty() {
        return Err(Errno::ENOENT); // before the descriptor is looked at, as Linux's getname
    }
    chmod(&path::resolve(&base(dirfd, &path)?, &path, true)?, mode)
}

/// fchmodat2 (Linux 6.6): fchmodat with flags. AT_EMPTY_PATH names the descriptor itself;
/// with AT_SYMLINK_NOFOLLOW a symbolic link is not changed (Linux: EOPNOTSUPP, links have no
/// mode of their own).
pub fn sys_fchmodat2(dirfd: i32, path_ptr: usize, mode: u32, flags: u32) -> SysResult {
    if flags & !(AT_SYMLINK_NOFOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    chmod(&loc_at(dirfd, path_ptr, flags)?, mode)
}

pub fn sys_utimensat(dirfd: i32, path_ptr: usize, times_ptr: usize, flags: u32) -> SysResult {
    const UTIME_NOW: i64 = (1 << 30) - 1;
    const UTIME_OMIT: i64 = (1 << 30) - 2;
    if flags & !AT_SYMLINK_NOFOLLOW != 0 {
        return Err(Errno::EINVAL);
    }
    let loc = if path_ptr == 0 {
        // Linux: a NULL path names the descriptor itself, except with AT_FDCWD (a bad path).
        if dirfd == AT_FDCWD {
            return Err(Errno::EFAULT);
        }
        file(dirfd)?.loc.clone()
    } else {
        let path = read_path(path_ptr)?;
        path::resolve(
            &base(dirfd, &path)?,
            &path,
            flags & AT_SYMLINK_NOFOLLOW == 0,
        )?
    };
    let (atime, mtime) = if times_ptr == 0 {
        (Some(TimeSet::Now), Some(TimeSet::Now))
    } else {
        let mut raw = [0u8; 32];
        copy_in(times_ptr, &mut raw)?;
        let conv = |b: &[u8]| -> Result<Option<TimeSet>, Errno> {
            let t = Timespec::from_bytes(b.try_into().map_err(|_| Errno::EFAULT)?);
            match t.tv_nsec {
                UTIME_NOW => Ok(Some(TimeSet::Now)),
                UTIME_OMIT => Ok(None),
                n if (0..1_000_000_000).contains(&n) => Ok(Some(TimeSet::At(Timestamp {
                    sec: t.tv_sec,
                    nsec: n as u32,
                }))),
                _ => Err(Errno::EINVAL),
            }
        };
        (conv(&raw[..16])?, conv(&raw[16..])?)
    };
    loc.mount.want_write()?;
    let c = perm::cred();
    if !c.is_root() {
        let m = loc.node.getattr()?;
        if !perm::owns(&c, &m) {
            // Setting times to "now" needs write permission; any other time, ownership.
            let explicit =
                matches!(atime, Some(TimeSet::At(_))) || matches!(mtime, Some(TimeSet::At(_)));
            if explicit {
                return Err(Errno::EPERM);
            }
            perm::check_meta(&c, &m, perm::MAY_WRITE)?;
        }
    }
    loc.node.setattr(&SetAttr {
        atime,
        mtime,
        ..Default::default()
    })?;
    Ok(0)
}
