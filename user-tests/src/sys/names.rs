//! Wrappers for calls that change the name space: mkdir, unlink, rmdir, rename, link,
//! symlink, readlink, chmod, mount and umount2.

use alloc::string::String;

use abi::fcntl::*;
use abi::syscall::*;
use abi::Errno;

use crate::raw::*;

use super::marshal::{check, with_cstr, Fd, SysResult};

/// `mkdirat(dirfd, path, mode)`.
pub fn mkdirat(dirfd: Fd, path: &str, mode: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall3(SYS_MKDIRAT, dirfd as usize, p as usize, mode as usize) })
            .map(|_| ())
    })
}

/// `mkdir(path, mode)`.
pub fn mkdir(path: &str, mode: u32) -> SysResult<()> {
    mkdirat(AT_FDCWD, path, mode)
}

/// `unlinkat(dirfd, path, flags)` (flags: `AT_REMOVEDIR`).
pub fn unlinkat(dirfd: Fd, path: &str, flags: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall3(SYS_UNLINKAT, dirfd as usize, p as usize, flags as usize) })
            .map(|_| ())
    })
}

/// `unlink(path)`: removes a non-directory.
pub fn unlink(path: &str) -> SysResult<()> {
    unlinkat(AT_FDCWD, path, 0)
}

/// `rmdir(path)`: `unlinkat(AT_FDCWD, path, AT_REMOVEDIR)`.
pub fn rmdir(path: &str) -> SysResult<()> {
    unlinkat(AT_FDCWD, path, AT_REMOVEDIR)
}

/// `renameat2(olddirfd, old, newdirfd, new, flags)` (flags: `RENAME_NOREPLACE`, ...).
pub fn renameat2(olddirfd: Fd, old: &str, newdirfd: Fd, new: &str, flags: u32) -> SysResult<()> {
    with_cstr(old, |o| {
        with_cstr(new, |n| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe {
                syscall5(
                    SYS_RENAMEAT2,
                    olddirfd as usize,
                    o as usize,
                    newdirfd as usize,
                    n as usize,
                    flags as usize,
                )
            })
            .map(|_| ())
        })
    })
}

/// `rename(old, new)`: replaces `new` if it exists.
pub fn rename(old: &str, new: &str) -> SysResult<()> {
    renameat2(AT_FDCWD, old, AT_FDCWD, new, 0)
}

/// `link(old, new)`: a hard link.
pub fn link(old: &str, new: &str) -> SysResult<()> {
    with_cstr(old, |o| {
        with_cstr(new, |n| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe {
                syscall5(
                    SYS_LINKAT,
                    AT_FDCWD as usize,
                    o as usize,
                    AT_FDCWD as usize,
                    n as usize,
                    0,
                )
            })
            .map(|_| ())
        })
    })
}

/// `symlink(target, linkpath)`.
pub fn symlink(target: &str, linkpath: &str) -> SysResult<()> {
    with_cstr(target, |t| {
        with_cstr(linkpath, |l| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe { syscall3(SYS_SYMLINKAT, t as usize, AT_FDCWD as usize, l as usize) })
                .map(|_| ())
        })
    })
}

/// `readlink(path)`: the link's target (Linux does not NUL-terminate it; neither do we).
pub fn readlink(path: &str) -> SysResult<String> {
    with_cstr(path, |p| {
        let mut buf = alloc::vec![0u8; PATH_MAX];
        // SAFETY: `p` is NUL-terminated; `buf` is writable for its length.
        let n = check(unsafe {
            syscall4(
                SYS_READLINKAT,
                AT_FDCWD as usize,
                p as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            )
        })?;
        buf.truncate(n);
        String::from_utf8(buf).map_err(|_| Errno::EINVAL)
    })
}

/// `fchmodat2(dirfd, path, mode, flags)` (Linux 6.6: fchmodat with AT_SYMLINK_NOFOLLOW and
/// AT_EMPTY_PATH).
pub fn fchmodat2(dirfd: Fd, path: &str, mode: u32, flags: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe {
            syscall4(
                SYS_FCHMODAT2,
                dirfd as usize,
                p as usize,
                mode as usize,
                flags as usize,
            )
        })
        .map(|_| ())
    })
}

/// `fchmodat(dirfd, path, mode)` (the Linux syscall has no flags argument).
pub fn fchmodat(dirfd: Fd, path: &str, mode: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall3(SYS_FCHMODAT, dirfd as usize, p as usize, mode as usize) })
            .map(|_| ())
    })
}

/// `chmod(path, mode)`.
pub fn chmod(path: &str, mode: u32) -> SysResult<()> {
    fchmodat(AT_FDCWD, path, mode)
}

/// `mount(source, target, fstype, flags, NULL)`; `None` passes a NULL pointer.
pub fn mount(
    source: Option<&str>,
    target: &str,
    fstype: Option<&str>,
    flags: usize,
) -> SysResult<()> {
    let with_opt = |s: Option<&str>, f: &mut dyn FnMut(usize) -> SysResult<()>| match s {
        Some(s) => with_cstr(s, |p| f(p as usize)),
        None => f(0),
    };
    with_opt(source, &mut |src| {
        with_cstr(target, |t| {
            with_opt(fstype, &mut |ty| {
                // SAFETY: each pointer is NULL or a NUL-terminated string; no data.
                check(unsafe { syscall5(SYS_MOUNT, src, t as usize, ty, flags, 0) }).map(|_| ())
            })
        })
    })
}

/// `umount2(target, flags)`.
pub fn umount2(target: &str, flags: u32) -> SysResult<()> {
    with_cstr(target, |p| {
        // SAFETY: `p` is NUL-terminated.
        check(unsafe { syscall2(SYS_UMOUNT2, p as usize, flags as usize) }).map(|_| ())
    })
}
