//! `/proc/<pid>/fd`: one entry per open descriptor of the process, each a symbolic link whose
//! text names the open file (its path, or `pipe:[ino]` for a pipe) and which a path walk does
//! not read but follows to the open file itself, as Linux's "magic" links do: opening
//! `/proc/self/fd/3` (or `/dev/fd/3`, a link to it) reaches the file descriptor 3 holds even
//! when no path names it any more (an unlinked file, a pipe: bash's `<(command)`).
//!
//! Only the process itself and root may follow another process's links (Linux asks for
//! ptrace access, which here is the same rule); listing the directory is allowed to the same.
//!
//! `/proc/<pid>/fdinfo`: one file per descriptor, under the same rule, in Linux's format:
//! `pos:` (the offset), `flags:` (the status flags, access mode and O_CLOEXEC, in octal),
//! `mnt_id:` (the mount's id, as mountinfo and statx give it) and `ino:`.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use abi::Errno;
use vfs::{DirEntry, FileType, Metadata, Node, NodeRef, VfsError, VfsResult};

use super::devfs::{list, meta};
use super::file::OpenFile;
use super::mount_table::Loc;

/// `/proc/<pid>/fd`, or with `info` `/proc/<pid>/fdinfo`, inode `dir_ino` (given by procfs).
pub struct FdDir {
    pub pid: usize,
    pub dir_ino: u64,
    pub info: bool,
}

/// `/proc/<pid>/fd/<fd>`.
pub struct FdLink {
    pid: usize,
    fd: i32,
}

fn link_ino(pid: usize, fd: i32) -> u64 {
    (1 << 40) | ((pid as u64) << 12) | fd as u64
}

/// `/proc/<pid>/fdinfo/<fd>`.
struct FdInfo {
    pid: usize,
    fd: i32,
}

fn info_ino(pid: usize, fd: i32) -> u64 {
    (1 << 39) | ((pid as u64) << 12) | fd as u64
}

/// Whether the caller may follow process `pid`'s magic links: it is that process's owner or
/// root (EACCES otherwise; NotFound for a process that is gone).
fn may_follow(pid: usize) -> VfsResult<()> {
    let owner = crate::task::ps::info(pid).ok_or(VfsError::NotFound)?.uid;
    let euid = crate::task::with_current(|p| p.cred.euid);
    if euid != 0 && euid != owner {
        return Err(VfsError::PermissionDenied);
    }
    Ok(())
}

/// The file descriptor `fd` of process `pid` holds, if both exist and [`may_follow`].
fn open_file(pid: usize, fd: i32) -> VfsResult<Arc<OpenFile>> {
    may_follow(pid)?;
    crate::task::ps::with_files(pid, |t| t.fds().get(fd))
        .ok_or(VfsError::NotFound)?
        .map_err(|_| VfsError::NotFound)
}

/// `/proc/<pid>/exe`: the program the process runs, inode `ino` (given by procfs).
pub struct ExeLink {
    pub pid: usize,
    pub ino: u64,
}

/// Where the program process `pid` runs is, under the same rule as its descriptors.
fn exe_loc(pid: usize) -> VfsResult<Loc> {
    may_follow(pid)?;
    let exe = crate::task::ps::exe(pid).ok_or(VfsError::NotFound)?;
    let f = exe
        .as_any()
        .downcast_ref::<OpenFile>()
        .ok_or(VfsError::NotFound)?;
    Ok(f.loc.clone())
}

/// Where a walk that meets `node` goes instead of reading it as a link: the location of the
/// open file a `/proc/<pid>/fd/<fd>` link stands for, or of the program `/proc/<pid>/exe`
/// names; `None` for every other node.
pub fn magic_target(node: &NodeRef) -> Option<Result<Loc, Errno>> {
    if let Some(exe) = node.as_any().downcast_ref::<ExeLink>() {
        return Some(exe_loc(exe.pid).map_err(Errno::from));
    }
    let link = node.as_any().downcast_ref::<FdLink>()?;
    Some(
        open_file(link.pid, link.fd)
            .map(|f| f.loc.clone())
            .map_err(Errno::from),
    )
}

impl Node for FdDir {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        fd_dir_meta(self.pid, self.dir_ino)
    }
    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        let (pid, fd) = (self.pid, fd_named(self.pid, name)?);
        Ok(if self.info {
            Arc::new(FdInfo { pid, fd })
        } else {
            Arc::new(FdLink { pid, fd })
        })
    }
    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        let (ftype, ino): (_, fn(usize, i32) -> u64) = if self.info {
            (FileType::Regular, info_ino)
        } else {
            (FileType::Symlink, link_ino)
        };
        let fds = crate::task::ps::with_files(self.pid, |t| t.fds().numbers())
            .ok_or(VfsError::NotFound)?;
        let entries: Vec<(String, u64, FileType)> = fds
            .into_iter()
            .map(|fd| (format!("{fd}"), ino(self.pid, fd), ftype))
            .collect();
        list(cookie, self.dir_ino, &entries, sink)
    }
}

/// The attributes of `/proc/<pid>/fd` and `/proc/<pid>/fdinfo`: the process's owner's, who
/// may read and search them.
fn fd_dir_meta(pid: usize, ino: u64) -> VfsResult<Metadata> {
    let p = crate::task::ps::info(pid).ok_or(VfsError::NotFound)?;
    let mut m = meta(ino, FileType::Directory, 0o500, 0, 0);
    m.uid = p.uid;
    m.gid = p.gid;
    Ok(m)
}

/// The descriptor `name` names in such a directory ("3"; not "03" nor "+3"), if it is open
/// and [`may_follow`].
fn fd_named(pid: usize, name: &str) -> VfsResult<i32> {
    let fd: i32 = name.parse().map_err(|_| VfsError::NotFound)?;
    if name.starts_with('+') || (name.starts_with('0') && name != "0") {
        return Err(VfsError::NotFound);
    }
    open_file(pid, fd)?;
    Ok(fd)
}

impl Node for FdLink {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let target = self.readlink()?;
        let p = crate::task::ps::info(self.pid).ok_or(VfsError::NotFound)?;
        let mut m = meta(
            link_ino(self.pid, self.fd),
            FileType::Symlink,
            0o700,
            target.len() as u64,
            0,
        );
        m.uid = p.uid;
        m.gid = p.gid;
        Ok(m)
    }
    fn readlink(&self) -> VfsResult<String> {
        let f = open_file(self.pid, self.fd)?;
        let path = &f.loc.path;
        // Nodes without a name (pipes, sockets) carry a `kind:` path: Linux writes `kind:[ino]`.
        if path.ends_with(':') {
            let ino = f.loc.node.getattr().map(|m| m.ino).unwrap_or(0);
            return Ok(format!("{path}[{ino}]"));
        }
        Ok(path.clone())
    }
}

impl Node for ExeLink {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let p = crate::task::ps::info(self.pid).ok_or(VfsError::NotFound)?;
        let len = crate::task::ps::exe(self.pid).map_or(0, |f| f.path().len());
        let mut m = meta(self.ino, FileType::Symlink, 0o777, len as u64, 0);
        m.uid = p.uid;
        m.gid = p.gid;
        Ok(m)
    }
    fn readlink(&self) -> VfsResult<String> {
        Ok(exe_loc(self.pid)?.path)
    }
}

impl FdInfo {
    fn text(&self) -> VfsResult<String> {
        use abi::fcntl::{O_ACCMODE, O_CLOEXEC, O_RDONLY, O_RDWR, O_WRONLY};
        let f = open_file(self.pid, self.fd)?;
        let cloexec = crate::task::ps::with_files(self.pid, |t| t.fds().cloexec(self.fd))
            .ok_or(VfsError::NotFound)?
            .map_err(|_| VfsError::NotFound)?;
        let access = match (f.readable, f.writable) {
            (true, true) => O_RDWR,
            (false, true) => O_WRONLY,
            _ => O_RDONLY,
        };
        let mut flags = (*f.status_flags.lock() & !O_ACCMODE) | access;
        if cloexec {
            flags |= O_CLOEXEC;
        }
        let ino = f.loc.node.getattr().map(|m| m.ino).unwrap_or(0);
        Ok(format!(
            "pos:\t{}\nflags:\t0{:o}\nmnt_id:\t{}\nino:\t{}\n",
            *f.offset.lock(),
            flags,
            f.loc.mount.id,
            ino
        ))
    }
}

impl Node for FdInfo {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let p = crate::task::ps::info(self.pid).ok_or(VfsError::NotFound)?;
        let mut m = meta(info_ino(self.pid, self.fd), FileType::Regular, 0o400, 0, 0);
        m.uid = p.uid;
        m.gid = p.gid;
        Ok(m)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        super::devfs::read_text(self.text()?.as_bytes(), offset, buf)
    }
}
