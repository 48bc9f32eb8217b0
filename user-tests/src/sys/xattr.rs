//! Extended attribute wrappers: get, set, list and remove, on a path, on a path without
//! following a final symlink (`l*`), and on a descriptor (`f*`).

use alloc::string::String;
use alloc::vec::Vec;

use abi::syscall::*;
use abi::Errno;

use crate::raw::*;

use super::marshal::{check, with_cstr, Fd, SysResult};

/// `getxattr` / `lgetxattr` (by `nr`) into `buf`; an empty `buf` asks for the size.
fn path_getxattr(nr: usize, path: &str, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    with_cstr(path, |p| {
        with_cstr(name, |n| {
            // SAFETY: both strings are NUL-terminated and alive; `buf` is writable for its length.
            check(unsafe {
                syscall4(
                    nr,
                    p as usize,
                    n as usize,
                    buf.as_mut_ptr() as usize,
                    buf.len(),
                )
            })
        })
    })
}

/// `getxattr(path, name, buf, buf.len())`, following a final symlink: the value's length.
/// An empty `buf` returns the size needed; a short one is `ERANGE`.
pub fn getxattr_into(path: &str, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_getxattr(SYS_GETXATTR, path, name, buf)
}

/// `lgetxattr(path, name, buf, buf.len())`: as [`getxattr_into`] on the link itself.
pub fn lgetxattr_into(path: &str, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_getxattr(SYS_LGETXATTR, path, name, buf)
}

/// `fgetxattr(fd, name, buf, buf.len())`.
pub fn fgetxattr_into(fd: Fd, name: &str, buf: &mut [u8]) -> SysResult<usize> {
    with_cstr(name, |n| {
        // SAFETY: `n` is NUL-terminated; `buf` is writable for its length.
        check(unsafe {
            syscall4(
                SYS_FGETXATTR,
                fd as usize,
                n as usize,
                buf.as_mut_ptr() as usize,
                buf.len(),
            )
        })
    })
}

/// Ask for the size, then read; retried (a few times) if the value grew in between.
fn read_sized(mut get: impl FnMut(&mut [u8]) -> SysResult<usize>) -> SysResult<Vec<u8>> {
    for _ in 0..8 {
        let n = get(&mut [])?;
        let mut v = alloc::vec![0u8; n];
        match get(&mut v) {
            Ok(got) => {
                v.truncate(got);
                return Ok(v);
            }
            Err(Errno::ERANGE) => continue,
            Err(e) => return Err(e),
        }
    }
    Err(Errno::ERANGE)
}

/// The value of attribute `name` of `path` (following a final symlink).
pub fn getxattr(path: &str, name: &str) -> SysResult<Vec<u8>> {
    read_sized(|b| getxattr_into(path, name, b))
}

/// The value of attribute `name` of `path` itself (not following a final symlink).
pub fn lgetxattr(path: &str, name: &str) -> SysResult<Vec<u8>> {
    read_sized(|b| lgetxattr_into(path, name, b))
}

/// `setxattr` / `lsetxattr` by `nr`.
fn path_setxattr(nr: usize, path: &str, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    with_cstr(path, |p| {
        with_cstr(name, |n| {
            // SAFETY: both strings are NUL-terminated and alive; `value` is readable.
            check(unsafe {
                syscall5(
                    nr,
                    p as usize,
                    n as usize,
                    value.as_ptr() as usize,
                    value.len(),
                    flags as usize,
                )
            })
            .map(|_| ())
        })
    })
}

/// `setxattr(path, name, value, flags)` (`XATTR_CREATE`, `XATTR_REPLACE` or 0), following a
/// final symlink.
pub fn setxattr(path: &str, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    path_setxattr(SYS_SETXATTR, path, name, value, flags)
}

/// `lsetxattr(path, name, value, flags)`: on the link itself.
pub fn lsetxattr(path: &str, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    path_setxattr(SYS_LSETXATTR, path, name, value, flags)
}

/// `fsetxattr(fd, name, value, flags)`.
pub fn fsetxattr(fd: Fd, name: &str, value: &[u8], flags: u32) -> SysResult<()> {
    with_cstr(name, |n| {
        // SAFETY: `n` is NUL-terminated; `value` is readable for its length.
        check(unsafe {
            syscall5(
                SYS_FSETXATTR,
                fd as usize,
                n as usize,
                value.as_ptr() as usize,
                value.len(),
                flags as usize,
            )
        })
        .map(|_| ())
    })
}

/// `listxattr` / `llistxattr` by `nr` into `buf` (NUL-separated names; empty: the size).
fn path_listxattr(nr: usize, path: &str, buf: &mut [u8]) -> SysResult<usize> {
    with_cstr(path, |p| {
        // SAFETY: `p` is NUL-terminated; `buf` is writable for its length.
        check(unsafe { syscall3(nr, p as usize, buf.as_mut_ptr() as usize, buf.len()) })
    })
}

/// `listxattr(path, buf, buf.len())`: raw NUL-terminated names, following a final symlink.
pub fn listxattr_into(path: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_listxattr(SYS_LISTXATTR, path, buf)
}

/// `llistxattr(path, buf, buf.len())`: as [`listxattr_into`] on the link itself.
pub fn llistxattr_into(path: &str, buf: &mut [u8]) -> SysResult<usize> {
    path_listxattr(SYS_LLISTXATTR, path, buf)
}

/// `flistxattr(fd, buf, buf.len())`.
pub fn flistxattr_into(fd: Fd, buf: &mut [u8]) -> SysResult<usize> {
    // SAFETY: `buf` is writable for its length.
    check(unsafe {
        syscall3(
            SYS_FLISTXATTR,
            fd as usize,
            buf.as_mut_ptr() as usize,
            buf.len(),
        )
    })
}

fn split_names(raw: Vec<u8>) -> SysResult<Vec<String>> {
    if raw.last().is_some_and(|&b| b != 0) {
        return Err(Errno::EIO);
    }
    raw.split(|&b| b == 0)
        .filter(|n| !n.is_empty())
        .map(|n| String::from_utf8(n.to_vec()).map_err(|_| Errno::EIO))
        .collect()
}

/// The attribute names of `path` (following a final symlink).
pub fn listxattr(path: &str) -> SysResult<Vec<String>> {
    split_names(read_sized(|b| listxattr_into(path, b))?)
}

/// The attribute names of `path` itself (not following a final symlink).
pub fn llistxattr(path: &str) -> SysResult<Vec<String>> {
    split_names(read_sized(|b| llistxattr_into(path, b))?)
}

/// `removexattr` / `lremovexattr` by `nr`.
fn path_removexattr(nr: usize, path: &str, name: &str) -> SysResult<()> {
    with_cstr(path, |p| {
        with_cstr(name, |n| {
            // SAFETY: both strings are NUL-terminated and alive for the call.
            check(unsafe { syscall2(nr, p as usize, n as usize) }).map(|_| ())
        })
    })
}

/// `removexattr(path, name)`, following a final symlink.
pub fn removexattr(path: &str, name: &str) -> SysResult<()> {
    path_removexattr(SYS_REMOVEXATTR, path, name)
}

/// `lremovexattr(path, name)`: on the link itself.
pub fn lremovexattr(path: &str, name: &str) -> SysResult<()> {
    path_removexattr(SYS_LREMOVEXATTR, path, name)
}

/// `fremovexattr(fd, name)`.
pub fn fremovexattr(fd: Fd, name: &str) -> SysResult<()> {
    with_cstr(name, |n| {
        // SAFETY: `n` is NUL-terminated.
        check(unsafe { syscall2(SYS_FREMOVEXATTR, fd as usize, n as usize) }).map(|_| ())
    })
}
