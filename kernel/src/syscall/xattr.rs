//! Extended-attribute calls: `{,l,f}{get,set,list,remove}xattr`, with Linux's numbers and errno.
//!
//! - A name is 1..=255 bytes (`XATTR_NAME_MAX`), else `ERANGE`; its namespace is the file
//!   system's business (dbfs knows `user.`, `trusted.`, `security.`; others are `EOPNOTSUPP`).
//! - `get` / `list` with size 0 return the size needed; a buffer too small is `ERANGE` (`E2BIG`
//!   when even the largest allowed buffer, 64 KiB, is too small). A missing attribute is
//!   `ENODATA`.
//! - `set` refuses flags other than `XATTR_CREATE` / `XATTR_REPLACE` (`EINVAL`) and values over
//!   64 KiB (`E2BIG`); `XATTR_CREATE` on an existing attribute is `EEXIST`, `XATTR_REPLACE` on
//!   a missing one `ENODATA`.
//! - A file system without xattrs (FAT32) answers `get` / `set` / `remove` with `EOPNOTSUPP`
//!   and lists no names, as Linux's vfat does.
//! - The `l` variants do not follow a final symlink; the `f` variants refuse `O_PATH`
//!   descriptors (`EBADF`).

use alloc::vec::Vec;

use abi::fcntl::AT_FDCWD;
use abi::syscall::{XATTR_CREATE, XATTR_LIST_MAX, XATTR_NAME_MAX, XATTR_REPLACE, XATTR_SIZE_MAX};
use abi::Errno;
use vfs::{NodeRef, VfsError, XattrMode};

use super::args::{copy_in, copy_out, read_path, with_space, SysResult};
use crate::fs::path::{self, Loc};
use crate::task::with_current;

/// The location a path call names (relative paths from the cwd).
fn loc_at(path_ptr: usize, follow: bool) -> Result<Loc, Errno> {
    let path = read_path(path_ptr)?;
    let base = if path.starts_with('/') {
        Loc::root()?
    } else {
        Loc::from_path(&with_current(|p| p.cwd.clone()))?
    };
    path::resolve(&base, &path, follow)
}

fn node_at(path_ptr: usize, follow: bool) -> Result<NodeRef, Errno> {
    Ok(loc_at(path_ptr, follow)?.node)
}

/// The location behind a descriptor (not an `O_PATH` one).
fn loc_of(fd: i32) -> Result<Loc, Errno> {
    if fd == AT_FDCWD {
        return Err(Errno::EBADF);
    }
    Ok(super::fd::file_not_path(fd)?.loc.clone())
}

fn node_of(fd: i32) -> Result<NodeRef, Errno> {
    Ok(loc_of(fd)?.node)
}

/// The node of `loc` for a change: EROFS on a read-only mount.
fn writable(loc: Loc) -> Result<NodeRef, Errno> {
    loc.mount.want_write()?;
    Ok(loc.node)
}

/// An attribute name from user memory: 1..=255 bytes, else `ERANGE`.
fn read_name(va: usize) -> Result<alloc::string::String, Errno> {
    let name =
        with_space(|s| crate::mm::uaccess::read_cstr(s, va, XATTR_NAME_MAX + 1)).map_err(|e| {
            if e == Errno::ENAMETOOLONG {
                Errno::ERANGE
            } else {
                e
            }
        })?;
    if name.is_empty() {
        return Err(Errno::ERANGE);
    }
    Ok(name)
}

/// Copy `data` to a user buffer of `size` bytes with Linux's size rules.
fn reply(data: &[u8], va: usize, size: usize) -> SysResult {
    if size == 0 {
        return Ok(data.len());
    }
    if data.len() > size {
        return Err(if size >= XATTR_SIZE_MAX {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    copy_out(va, data)?;
    Ok(data.len())
}

fn get(node: NodeRef, name_ptr: usize, va: usize, size: usize) -> SysResult {
    let name = read_name(name_ptr)?;
    let value = node.getxattr(&name)?;
    reply(&value, va, size.min(XATTR_SIZE_MAX))
}

fn set(node: NodeRef, name_ptr: usize, va: usize, size: usize, flags: u32) -> SysResult {
    if flags & !(XATTR_CREATE | XATTR_REPLACE) != 0 {
        return Err(Errno::EINVAL);
    }
    let name = read_name(name_ptr)?;
    if size > XATTR_SIZE_MAX {
        return Err(Errno::E2BIG);
    }
    let mut value = alloc::vec![0u8; size];
    copy_in(va, &mut value)?;
    let mode = match flags {
        0 => XattrMode::Any,
        XATTR_CREATE => XattrMode::Create,
        XATTR_REPLACE => XattrMode::Replace,
        _ => {
            // Both flags: whichever condition fails, as Linux's file systems check them.
            return Err(match node.getxattr(&name) {
                Ok(_) => Errno::EEXIST,
                Err(VfsError::NoData) => Errno::ENODATA,
                Err(e) => e.into(),
            });
        }
    };
    node.setxattr(&name, &value, mode)?;
    Ok(0)
}

fn list(node: NodeRef, va: usize, size: usize) -> SysResult {
    let names = match node.listxattr() {
        Ok(n) => n,
        Err(VfsError::Unsupported) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut out = Vec::new();
    for n in names {
        out.extend_from_slice(n.as_bytes());
        out.push(0);
    }
    let size = size.min(XATTR_LIST_MAX);
    if size == 0 {
        return Ok(out.len());
    }
    if out.len() > size {
        return Err(if size >= XATTR_LIST_MAX {
            Errno::E2BIG
        } else {
            Errno::ERANGE
        });
    }
    copy_out(va, &out)?;
    Ok(out.len())
}

fn remove(node: NodeRef, name_ptr: usize) -> SysResult {
    let name = read_name(name_ptr)?;
    node.removexattr(&name)?;
    Ok(0)
}

pub fn sys_getxattr(path: usize, name: usize, va: usize, size: usize, follow: bool) -> SysResult {
    get(node_at(path, follow)?, name, va, size)
}

pub fn sys_fgetxattr(fd: i32, name: usize, va: usize, size: usize) -> SysResult {
    get(node_of(fd)?, name, va, size)
}

pub fn sys_setxattr(
    path: usize,
    name: usize,
    va: usize,
    size: usize,
    flags: u32,
    follow: bool,
) -> SysResult {
    set(writable(loc_at(path, follow)?)?, name, va, size, flags)
}

pub fn sys_fsetxattr(fd: i32, name: usize, va: usize, size: usize, flags: u32) -> SysResult {
    set(writable(loc_of(fd)?)?, name, va, size, flags)
}

pub fn sys_listxattr(path: usize, va: usize, size: usize, follow: bool) -> SysResult {
    list(node_at(path, follow)?, va, size)
}

pub fn sys_flistxattr(fd: i32, va: usize, size: usize) -> SysResult {
    list(node_of(fd)?, va, size)
}

pub fn sys_removexattr(path: usize, name: usize, follow: bool) -> SysResult {
    remove(writable(loc_at(path, follow)?)?, name)
}

pub fn sys_fremovexattr(fd: i32, name: usize) -> SysResult {
    remove(writable(loc_of(fd)?)?, name)
}
