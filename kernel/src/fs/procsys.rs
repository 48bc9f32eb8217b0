//! `/proc/sys`: the few kernel tunables programs read (LTP's library and tests read
//! `kernel/pid_max` and `kernel/tainted`), each showing the value the kernel really works
//! with, in Linux's format (a number and a newline). Read-only: nothing here can be tuned.
//!
//! - `kernel/hostname`, `kernel/domainname`: the names uname reports (`task::uts`; set with
//!   sethostname and setdomainname);
//! - `kernel/pid_max`: where process and thread ids wrap (`task::PID_MAX`);
//! - `kernel/tainted`: 0 (nothing taints this kernel: no modules, no forced loads);
//! - `fs/nr_open`: the most descriptors a process may have (`fs::file::MAX_FDS`);
//! - `fs/pipe-max-size`: the largest pipe `F_SETPIPE_SZ` gives without privilege
//!   (`ipc::pipe::PIPE_MAX_SIZE`).

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use vfs::{DirEntry, FileType, Metadata, Node, NodeRef, VfsError, VfsResult};

use super::devfs::{list, meta};

/// What a name under `/proc/sys` is: a directory of more, or a file made by a function.
enum Entry {
    Dir(&'static [(&'static str, Entry)]),
    File(fn() -> String),
}

const KERNEL: [(&str, Entry); 4] = [
    (
        "domainname",
        Entry::File(|| format!("{}\n", crate::task::uts::domainname())),
    ),
    (
        "hostname",
        Entry::File(|| format!("{}\n", crate::task::uts::nodename())),
    ),
    (
        "pid_max",
        Entry::File(|| format!("{}\n", crate::task::PID_MAX)),
    ),
    ("tainted", Entry::File(|| String::from("0\n"))),
];
const FS: [(&str, Entry); 2] = [
    (
        "nr_open",
        Entry::File(|| format!("{}\n", super::file::MAX_FDS)),
    ),
    (
        "pipe-max-size",
        Entry::File(|| format!("{}\n", crate::ipc::pipe::PIPE_MAX_SIZE)),
    ),
];
const ROOT: [(&str, Entry); 2] = [("fs", Entry::Dir(&FS)), ("kernel", Entry::Dir(&KERNEL))];

/// Inode numbers: a range of their own, above procfs's (`pid << 8 | k`, pids < 2^15).
pub(super) const INO_BASE: u64 = 1 << 40;

/// `/proc/sys` itself.
pub(super) fn root() -> NodeRef {
    Arc::new(SysNode {
        entry: &SYS_ROOT,
        ino: INO_BASE,
    })
}

static SYS_ROOT: Entry = Entry::Dir(&ROOT);

struct SysNode {
    entry: &'static Entry,
    ino: u64,
}

/// A child's inode number: its parent's, shifted, plus its place (1-based); the tree is at
/// most a few levels of a few entries.
fn child_ino(parent: u64, i: usize) -> u64 {
    INO_BASE | ((parent - INO_BASE) << 4) | (i as u64 + 1)
}

impl Node for SysNode {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(match self.entry {
            Entry::Dir(_) => meta(self.ino, FileType::Directory, 0o555, 0, 0),
            Entry::File(_) => meta(self.ino, FileType::Regular, 0o444, 0, 0),
        })
    }
    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        let Entry::Dir(entries) = self.entry else {
            return Err(VfsError::NotADirectory);
        };
        let (i, (_, entry)) = entries
            .iter()
            .enumerate()
            .find(|(_, (n, _))| *n == name)
            .ok_or(VfsError::NotFound)?;
        Ok(Arc::new(SysNode {
            entry,
            ino: child_ino(self.ino, i),
        }))
    }
    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        let Entry::Dir(entries) = self.entry else {
            return Err(VfsError::NotADirectory);
        };
        let list_: Vec<(String, u64, FileType)> = entries
            .iter()
            .enumerate()
            .map(|(i, (n, e))| {
                let t = match e {
                    Entry::Dir(_) => FileType::Directory,
                    Entry::File(_) => FileType::Regular,
                };
                (String::from(*n), child_ino(self.ino, i), t)
            })
            .collect();
        list(cookie, self.ino, &list_, sink)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let Entry::File(make) = self.entry else {
            return Err(VfsError::IsADirectory);
        };
        let text = make();
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(text.len());
        let n = buf.len().min(text.len() - start);
        buf[..n].copy_from_slice(&text.as_bytes()[start..start + n]);
        Ok(n)
    }
}
