//! Permission checks of the VFS, with Linux's rules (`generic_permission`, `may_delete`,
//! `inode_init_owner`, `setattr_prepare`), applied by the syscall layer and the path walk
//! with the calling process's credentials (`task::cred`).
//!
//! Root (fsuid 0) passes every check except executing a file without any x bit; its checks
//! never read attributes, so they cost nothing on the paths the benchmarks measure.

use abi::Errno;
use vfs::{FileType, Metadata, NewNode};

use super::path::Loc;
pub use crate::task::cred::{Cred, MAY_EXEC, MAY_READ, MAY_WRITE};

const S_ISUID: u32 = 0o4000;
const S_ISGID: u32 = 0o2000;
const S_ISVTX: u32 = 0o1000;

/// The credentials checks use: the current process's, or root's while none runs (boot).
pub fn cred() -> Cred {
    crate::task::current_cred()
}

/// May `c` access a node with attributes `m` as `want` (MAY_* bits)? EACCES if not.
pub fn check_meta(c: &Cred, m: &Metadata, want: u32) -> Result<(), Errno> {
    if c.may(m.perm, m.uid, m.gid, want, m.ftype == FileType::Directory) {
        Ok(())
    } else {
        Err(Errno::EACCES)
    }
}

/// [`check_meta`] for a location (root needs no attributes unless it executes). Writing a
/// regular file, a directory or a symlink on a read-only mount is EROFS, before the mode is
/// looked at (Linux's `sb_permission`); a device node or a FIFO there stays writable.
pub fn check(c: &Cred, loc: &Loc, want: u32) -> Result<(), Errno> {
    if want & MAY_WRITE != 0 && loc.mount.is_readonly() {
        let t = loc.node.ftype()?;
        if matches!(
            t,
            FileType::Regular | FileType::Directory | FileType::Symlink
        ) {
            return Err(Errno::EROFS);
        }
    }
    if c.is_root() && want & MAY_EXEC == 0 {
        return Ok(());
    }
    check_meta(c, &loc.node.getattr()?, want)
}

/// Search (x) permission on a directory the path walk passes through.
pub fn may_search(dir: &Loc) -> Result<(), Errno> {
    let c = cred();
    if c.is_root() {
        return Ok(());
    }
    check_meta(&c, &dir.node.getattr()?, MAY_EXEC)
}

/// May the caller add or remove names in `dir` (w and x)?
pub fn may_modify_dir(c: &Cred, dir: &Loc) -> Result<(), Errno> {
    check(c, dir, MAY_WRITE | MAY_EXEC)
}

/// May the caller remove `victim` (attributes) from `dir`: w+x on the directory and, if the
/// directory is sticky, ownership of the directory or the victim (EPERM otherwise).
pub fn may_delete(c: &Cred, dir: &Loc, victim: &Metadata) -> Result<(), Errno> {
    dir.mount.want_write()?;
    if c.is_root() {
        return Ok(());
    }
    let dm = dir.node.getattr()?;
    check_meta(c, &dm, MAY_WRITE | MAY_EXEC)?;
    if dm.perm & S_ISVTX != 0 && c.fsuid != dm.uid && c.fsuid != victim.uid {
        return Err(Errno::EPERM);
    }
    Ok(())
}

/// Whether the caller owns a node (or is root): what chmod, utimes with explicit times and
/// setting attributes need.
pub fn owns(c: &Cred, m: &Metadata) -> bool {
    c.is_root() || c.fsuid == m.uid
}

/// The attributes of a node created in `parent`: the caller's fsuid; the directory's group if
/// it is set-group-id (and a new directory inherits the bit), else the caller's fsgid; the
/// mode as asked (umask applied by the caller), without set-group-id when a non-root caller
/// is not in the resulting group.
pub fn new_node(c: &Cred, parent: &Loc, ftype: FileType, perm: u32) -> Result<NewNode, Errno> {
    let mut n = NewNode::new(ftype, perm);
    n.uid = c.fsuid;
    n.gid = c.fsgid;
    let pm = parent.node.getattr()?;
    if pm.perm & S_ISGID != 0 {
        n.gid = pm.gid;
        if ftype == FileType::Directory {
            n.perm |= S_ISGID;
        }
    }
    if n.perm & S_ISGID != 0 && ftype != FileType::Directory && !c.is_root() && !c.in_group(n.gid) {
        n.perm &= !S_ISGID;
    }
    Ok(n)
}

/// The mode a chmod by `c` really sets: a non-root caller outside the file's group cannot
/// set set-group-id (silently dropped, as Linux does).
pub fn chmod_mode(c: &Cred, m: &Metadata, mode: u32) -> u32 {
    let mut mode = mode & 0o7777;
    if !c.is_root() && mode & S_ISGID != 0 && !c.in_group(m.gid) {
        mode &= !S_ISGID;
    }
    mode
}

/// After a write or truncate by a caller without CAP_FSETID (not root), or any chown of a
/// non-directory: the mode without set-user-id, and without set-group-id when group-execute
/// is set (Linux's `should_remove_suid`). `None` when nothing changes.
pub fn mode_without_suid(m: &Metadata) -> Option<u32> {
    if m.ftype != FileType::Regular {
        return None;
    }
    let mut mode = m.perm;
    if mode & S_ISUID != 0 {
        mode &= !S_ISUID;
    }
    if mode & S_ISGID != 0 && mode & 0o010 != 0 {
        mode &= !S_ISGID;
    }
    (mode != m.perm).then_some(mode)
}
