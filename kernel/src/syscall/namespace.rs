//! Names: mkdir, mknod, unlink/rmdir, rename, link, symlink, readlink, and the working
//! directory (getcwd, chdir, fchdir). Every call that adds or removes a name checks the
//! directory's permissions (`fs::perm`).

use alloc::string::String;
use alloc::sync::Arc;

use abi::fcntl::*;
use abi::Errno;
use vfs::{FileType, RenameFlags};

use super::args::{copy_out, read_path, SysResult};
use crate::fs::path::{self, Loc};
use crate::fs::perm;
use crate::task::with_current;

use super::fd::{base, file, umask};

pub fn sys_mkdirat(dirfd: i32, path_ptr: usize, mode: u32) -> SysResult {
    let path = read_path(path_ptr)?;
    let (parent, name) = path::resolve_parent(&base(dirfd, &path)?, &path)?;
    crate::fs::create(
        &parent,
        &name,
        FileType::Directory,
        mode & 0o7777 & !umask(),
        0,
    )?;
    Ok(0)
}

pub fn sys_unlinkat(dirfd: i32, path_ptr: usize, flags: u32) -> SysResult {
    if flags & !AT_REMOVEDIR != 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    let base = base(dirfd, &path)?;
    let (parent, name) = match path::resolve_parent_or_special(&base, &path) {
        Ok(r) => r,
        Err(Err(e)) => return Err(e),
        // Linux: rmdir "/" is EBUSY, rmdir "." EINVAL, rmdir ".." ENOTEMPTY; unlink of any EISDIR.
        Err(Ok(_)) if flags & AT_REMOVEDIR == 0 => return Err(Errno::EISDIR),
        Err(Ok(path::Special::Root)) => return Err(Errno::EBUSY),
        Err(Ok(path::Special::Dot)) => return Err(Errno::EINVAL),
        Err(Ok(path::Special::DotDot)) => return Err(Errno::ENOTEMPTY),
    };
    parent.mount.want_write()?;
    let full = parent.child_path(&name);
    if crate::fs::mount_at(&full).is_some() {
        return Err(Errno::EBUSY);
    }
    let c = perm::cred();
    if !c.is_root() {
        let victim = path::resolve(&parent, &name, false)?.node.getattr()?;
        perm::may_delete(&c, &parent, &victim)?;
    }
    if flags & AT_REMOVEDIR != 0 {
        parent.node.rmdir(&name)?;
    } else {
        if path.ends_with('/') {
            // "unlink dir/" names a directory: EISDIR if it is one, else ENOTDIR.
            let l = path::resolve(&parent, &name, false)?;
            return Err(if l.is_dir()? {
                Errno::EISDIR
            } else {
                Errno::ENOTDIR
            });
        }
        parent.node.unlink(&name)?;
    }
    Ok(0)
}

pub fn sys_renameat2(
    olddirfd: i32,
    old_ptr: usize,
    newdirfd: i32,
    new_ptr: usize,
    flags: u32,
) -> SysResult {
    if flags & !(RENAME_NOREPLACE | RENAME_EXCHANGE) != 0
        || (flags & RENAME_NOREPLACE != 0 && flags & RENAME_EXCHANGE != 0)
    {
        return Err(Errno::EINVAL);
    }
    let old = read_path(old_ptr)?;
    let new = read_path(new_ptr)?;
    let (op, on) = path::resolve_parent_as(&base(olddirfd, &old)?, &old, Errno::EBUSY)?;
    let (np, nn) = path::resolve_parent_as(&base(newdirfd, &new)?, &new, Errno::EBUSY)?;
    if !Arc::ptr_eq(&op.mount, &np.mount) {
        return Err(Errno::EXDEV);
    }
    op.mount.want_write()?;
    let (old_full, new_full) = (op.child_path(&on), np.child_path(&nn));
    if crate::fs::mount_at(&old_full).is_some() || crate::fs::mount_at(&new_full).is_some() {
        return Err(Errno::EBUSY);
    }
    let src = path::resolve(&op, &on, false)?;
    if src.is_dir()? && new_full.starts_with(&alloc::format!("{}/", old_full)) {
        return Err(Errno::EINVAL);
    }
    let c = perm::cred();
    if !c.is_root() {
        let sm = src.node.getattr()?;
        perm::may_delete(&c, &op, &sm)?;
        match path::resolve(&np, &nn, false) {
            Ok(t) => perm::may_delete(&c, &np, &t.node.getattr()?)?,
            Err(Errno::ENOENT) => perm::may_modify_dir(&c, &np)?,
            Err(e) => return Err(e),
        }
        // A directory that changes parent gets a new `..`: it must be writable.
        if sm.ftype == FileType::Directory && op.path != np.path {
            perm::check_meta(&c, &sm, perm::MAY_WRITE)?;
        }
    }
    let flags = RenameFlags {
        noreplace: flags & RENAME_NOREPLACE != 0,
        exchange: flags & RENAME_EXCHANGE != 0,
    };
    op.node.rename(&on, &*np.node, &nn, flags)?;
    Ok(0)
}

pub fn sys_linkat(
    olddirfd: i32,
    old_ptr: usize,
    newdirfd: i32,
    new_ptr: usize,
    flags: u32,
) -> SysResult {
    if flags & !(AT_SYMLINK_FOLLOW | AT_EMPTY_PATH) != 0 {
        return Err(Errno::EINVAL);
    }
    let old = read_path(old_ptr)?;
    let new = read_path(new_ptr)?;
    let src = path::resolve(&base(olddirfd, &old)?, &old, flags & AT_SYMLINK_FOLLOW != 0)?;
    let (np, nn) = path::resolve_parent(&base(newdirfd, &new)?, &new)?;
    // Linux looks the new name up before asking the file system (which may not support
    // links at all: EPERM on FAT), so an existing name is EEXIST everywhere.
    if np.node.lookup(&nn).is_ok() {
        return Err(Errno::EEXIST);
    }
    np.mount.want_write()?;
    if !Arc::ptr_eq(&src.mount, &np.mount) {
        return Err(Errno::EXDEV);
    }
    perm::may_modify_dir(&perm::cred(), &np)?;
    // A directory cannot be linked; Linux says so only after the checks above (a read-only
    // mount is EROFS first).
    if src.is_dir()? {
        return Err(Errno::EPERM);
    }
    np.node.link(&nn, &*src.node)?;
    Ok(0)
}

pub fn sys_symlinkat(target_ptr: usize, newdirfd: i32, link_ptr: usize) -> SysResult {
    let target = read_path(target_ptr)?;
    let link = read_path(link_ptr)?;
    if target.is_empty() {
        return Err(Errno::ENOENT);
    }
    let (parent, name) = path::resolve_parent(&base(newdirfd, &link)?, &link)?;
    if parent.node.lookup(&name).is_ok() {
        return Err(Errno::EEXIST); // as in `sys_linkat`
    }
    let c = perm::cred();
    perm::may_modify_dir(&c, &parent)?;
    let new = perm::new_node(&c, &parent, FileType::Symlink, 0o777)?;
    parent.node.symlink(&name, &target, &new)?;
    Ok(0)
}

pub fn sys_readlinkat(dirfd: i32, path_ptr: usize, buf: usize, size: isize) -> SysResult {
    if size <= 0 {
        return Err(Errno::EINVAL);
    }
    let path = read_path(path_ptr)?;
    // An empty path names `dirfd` itself (an `O_PATH | O_NOFOLLOW` descriptor of a link);
    // anything else is then ENOENT, as Linux's.
    let loc = if path.is_empty() {
        let loc = if dirfd == abi::fcntl::AT_FDCWD {
            base(dirfd, ".")?
        } else {
            super::fd::file(dirfd)?.loc.clone()
        };
        if loc.node.ftype()? != FileType::Symlink {
            return Err(Errno::ENOENT);
        }
        loc
    } else {
        path::resolve(&base(dirfd, &path)?, &path, false)?
    };
    if loc.node.ftype()? != FileType::Symlink {
        return Err(Errno::EINVAL);
    }
    let target = loc.node.readlink()?;
    let n = target.len().min(size as usize);
    copy_out(buf, &target.as_bytes()[..n])?;
    Ok(n)
}

/// mknodat: regular files, FIFOs, sockets, and (root only) character and block devices.
pub fn sys_mknodat(dirfd: i32, path_ptr: usize, mode: u32, dev: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let ftype = match mode & 0o170000 {
        0 | 0o100000 => FileType::Regular,
        0o010000 => FileType::Fifo,
        0o140000 => FileType::Socket,
        0o020000 => FileType::CharDevice,
        0o060000 => FileType::BlockDevice,
        0o040000 => return Err(Errno::EPERM),
        _ => return Err(Errno::EINVAL),
    };
    let (parent, name) = path::resolve_parent(&base(dirfd, &path)?, &path)?;
    let c = perm::cred();
    if matches!(ftype, FileType::CharDevice | FileType::BlockDevice) && !c.is_root() {
        return Err(Errno::EPERM);
    }
    let rdev = if matches!(ftype, FileType::CharDevice | FileType::BlockDevice) {
        dev as u32 as u64
    } else {
        0
    };
    crate::fs::create(&parent, &name, ftype, mode & 0o7777 & !umask(), rdev)?;
    Ok(0)
}

pub fn sys_getcwd(buf: usize, size: usize) -> SysResult {
    let cwd = cwd_seen_from_root(
        &with_current(|p| p.cwd.clone()),
        crate::task::current_root().as_deref(),
    );
    if cwd.len() + 1 > size {
        return Err(Errno::ERANGE);
    }
    let mut bytes = cwd.into_bytes();
    bytes.push(0);
    copy_out(buf, &bytes)?;
    Ok(bytes.len())
}

/// The working directory as a process with root `root` (chroot) names it: its path below
/// the root, or, when it lies outside (chroot without chdir), its whole path after
/// "(unreachable)", as Linux's getcwd gives it.
fn cwd_seen_from_root(cwd: &str, root: Option<&str>) -> String {
    match root {
        None => String::from(cwd),
        Some(r) if cwd == r => String::from("/"),
        Some(r) => match cwd.strip_prefix(r) {
            Some(rest) if rest.starts_with('/') => String::from(rest),
            _ => alloc::format!("(unreachable){cwd}"),
        },
    }
}

/// chroot: the directory `path` names becomes the root of the caller's absolute paths and
/// the place `..` stops; its cwd stays where it is. Linux's checks in Linux's order: the
/// path resolves (ENOENT, ENOTDIR, EACCES, ELOOP, ENAMETOOLONG, EFAULT), names a directory
/// (ENOTDIR) the caller may search (EACCES), and the caller has CAP_SYS_CHROOT (EPERM).
pub fn sys_chroot(path_ptr: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    if !loc.is_dir()? {
        return Err(Errno::ENOTDIR);
    }
    let cred = perm::cred();
    perm::check(&cred, &loc, perm::MAY_EXEC)?;
    if cred.euid != 0 {
        return Err(Errno::EPERM);
    }
    let root = (loc.path != "/").then(|| Arc::<str>::from(loc.path.as_str()));
    *crate::task::current_process().root.lock() = root;
    Ok(0)
}

/// chdir and fchdir alike: a directory (ENOTDIR) the caller may search (EACCES).
fn set_cwd(loc: Loc) -> SysResult {
    if !loc.is_dir()? {
        return Err(Errno::ENOTDIR);
    }
    perm::check(&perm::cred(), &loc, perm::MAY_EXEC)?;
    with_current(|p| p.cwd = loc.path);
    Ok(0)
}

pub fn sys_chdir(path_ptr: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    let loc = path::resolve(&base(AT_FDCWD, &path)?, &path, true)?;
    set_cwd(loc)
}

pub fn sys_fchdir(fd: i32) -> SysResult {
    set_cwd(file(fd)?.loc.clone())
}
