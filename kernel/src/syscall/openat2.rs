//! openat2(2): openat with a `struct open_how` { flags: u64, mode: u64, resolve: u64 }, whose
//! unknown flags are errors (openat ignores them), and the `RESOLVE_*` walk restrictions.
//!
//! With restrictions the path is walked here first, one component at a time (symbolic links
//! read and spliced into the rest of the path, at most [`MAX_LINKS`] of them): a symbolic
//! link under RESOLVE_NO_SYMLINKS, or a /proc magic link (`exe`, `cwd`, `root`, `fd/N`)
//! under RESOLVE_NO_MAGICLINKS, is ELOOP; a mount crossed under RESOLVE_NO_XDEV, or a climb
//! above the starting directory (an absolute path, `..`, an absolute link) under
//! RESOLVE_BENEATH, is EXDEV; under RESOLVE_IN_ROOT the starting directory is the root (`/`
//! and `..` stay in it). The walk's result, a path below the starting directory without
//! links, is then opened as openat opens a path.

use alloc::string::String;
use alloc::vec::Vec;

use abi::fcntl::*;
use abi::Errno;
use vfs::FileType;

use super::args::{copy_in, read_path, SysResult};
use super::fd::base;
use crate::fs::path;

/// `struct open_how`'s first (and only) version's size.
const OPEN_HOW_SIZE: usize = 24;
/// Linux's limit on a struct passed by size (a page).
const MAX_STRUCT: usize = 4096;
/// Symbolic links one walk follows (Linux's MAXSYMLINKS).
const MAX_LINKS: usize = 40;
const RESOLVE_ALL: u64 = RESOLVE_NO_XDEV
    | RESOLVE_NO_MAGICLINKS
    | RESOLVE_NO_SYMLINKS
    | RESOLVE_BENEATH
    | RESOLVE_IN_ROOT
    | RESOLVE_CACHED;
/// Mode bits open may give a new file.
const S_IALLUGO: u64 = 0o7777;

pub fn sys_openat2(dirfd: i32, path_ptr: usize, how_ptr: usize, size: usize) -> SysResult {
    if size < OPEN_HOW_SIZE {
        return Err(Errno::EINVAL);
    }
    if size > MAX_STRUCT {
        return Err(Errno::E2BIG);
    }
    // A larger struct from a newer program is fine if what this kernel does not know is 0.
    let mut raw = alloc::vec![0u8; size];
    copy_in(how_ptr, &mut raw)?;
    if raw[OPEN_HOW_SIZE..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let word = |i: usize| u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap_or_default());
    let (flags, mode, resolve) = (word(0), word(1), word(2));
    if flags & !((O_KNOWN | O_TMPFILE) as u64) != 0 {
        return Err(Errno::EINVAL);
    }
    let flags = flags as u32;
    let creates = flags & O_CREAT != 0 || flags & O_TMPFILE == O_TMPFILE;
    if mode & !S_IALLUGO != 0 || (!creates && mode != 0) {
        return Err(Errno::EINVAL);
    }
    if resolve & !RESOLVE_ALL != 0
        || resolve & (RESOLVE_BENEATH | RESOLVE_IN_ROOT) == (RESOLVE_BENEATH | RESOLVE_IN_ROOT)
    {
        return Err(Errno::EINVAL);
    }
    if resolve & RESOLVE_CACHED != 0 && (creates || flags & O_TRUNC != 0) {
        return Err(Errno::EAGAIN);
    }
    let path = read_path(path_ptr)?;
    if resolve & !RESOLVE_CACHED == 0 {
        return super::fs::open_at(dirfd, &path, flags, mode as u32);
    }
    let walked = walk(dirfd, &path, resolve)?;
    super::fs::open_at(dirfd, &walked, flags, mode as u32)
}

/// Walk `path` from `dirfd` under the restrictions of `resolve`; the path to open: absolute
/// if it may leave the starting directory, else relative to it (`.` for itself).
fn walk(dirfd: i32, path: &str, resolve: u64) -> Result<String, Errno> {
    let beneath = resolve & RESOLVE_BENEATH != 0;
    let in_root = resolve & RESOLVE_IN_ROOT != 0;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut absolute = path.starts_with('/');
    if absolute && beneath {
        return Err(Errno::EXDEV);
    }
    let mut start = if in_root || !absolute {
        base(dirfd, ".")?
    } else {
        crate::fs::path::process_root()?
    };
    let start_mount = start.mount.id;
    // Components left to walk, last first; the ones walked so far.
    let mut todo: Vec<String> = path.split('/').rev().map(String::from).collect();
    let mut done: Vec<String> = Vec::new();
    let mut links = 0;
    let joined = |done: &[String]| {
        if done.is_empty() {
            String::from(".")
        } else {
            done.join("/")
        }
    };
    while let Some(name) = todo.pop() {
        match name.as_str() {
            "" | "." => continue,
            ".." => {
                if done.last().is_some_and(|c| c != "..") {
                    done.pop();
                } else if beneath {
                    return Err(Errno::EXDEV);
                } else if !in_root && !absolute {
                    // Above a relative start: the walk goes on from its parent.
                    done.push(name);
                }
                // IN_ROOT: `..` of the root is the root, as it is of `/`.
            }
            _ => done.push(name),
        }
        let loc = match path::resolve(&start, &joined(&done), false) {
            Ok(loc) => loc,
            // A missing last component may be created; openat says the rest.
            Err(Errno::ENOENT) if todo.iter().all(|c| c.is_empty() || c == ".") => break,
            Err(e) => return Err(e),
        };
        if resolve & RESOLVE_NO_XDEV != 0 && loc.mount.id != start_mount {
            return Err(Errno::EXDEV);
        }
        if loc.node.ftype()? != FileType::Symlink {
            continue;
        }
        if resolve & RESOLVE_NO_SYMLINKS != 0 {
            return Err(Errno::ELOOP);
        }
        if resolve & RESOLVE_NO_MAGICLINKS != 0 && is_magic_link(&loc.path) {
            return Err(Errno::ELOOP);
        }
        links += 1;
        if links > MAX_LINKS {
            return Err(Errno::ELOOP);
        }
        let target = loc.node.readlink()?;
        done.pop();
        if target.starts_with('/') {
            if beneath {
                return Err(Errno::EXDEV);
            }
            if !in_root {
                // An ordinary absolute link: the rest is walked from the root.
                start = crate::fs::path::process_root()?;
                absolute = true;
            }
            done.clear();
        }
        todo.extend(target.split('/').rev().map(String::from));
    }
    let mut out = joined(&done);
    if path.ends_with('/') {
        out.push('/');
    }
    if absolute && !in_root {
        out.insert(0, '/');
    }
    Ok(out)
}

/// A /proc link that names an object rather than a path (Linux's magic links).
fn is_magic_link(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("/proc/") else {
        return false;
    };
    let parts: Vec<&str> = rest.split('/').collect();
    matches!(
        parts.as_slice(),
        [_, "exe" | "cwd" | "root"]
            | [_, "fd" | "map_files", _]
            | [_, "task", _, "exe" | "cwd" | "root"]
    )
}
