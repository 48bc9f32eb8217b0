//! `/proc/sys`: the few kernel tunables programs read (LTP's library and tests read
//! `kernel/pid_max` and `kernel/tainted`), each showing the value the kernel really works
//! with, in Linux's format (a number and a newline). Read-only but for `kernel/msgmni`, which
//! root may set (LTP's msgget03 lowers it), `kernel/shmmax`, `kernel/hostname`,
//! `kernel/domainname`, `fs/pipe-max-size`, `fs/lease-break-time`, `vm/dbfs_keep_rereads`
//! and `vm/drop_caches`.
//! The same nodes serve `/proc/sysvipc` (`msg`, `sem`, `shm`: the System V IPC objects).
//!
//! - `kernel/msgmax`, `msgmnb`, `msgmni`, `sem`, `shmmax`, `shmmni`, `shmall`: the System V
//!   IPC limits (`ipc::msg`, `ipc::sem`, `ipc::shm`);
//! - `kernel/core_pattern`: `core` (core files are written there, in the process's directory);
//! - `kernel/osrelease`, `kernel/ostype`, `kernel/version`: uname's release, system name and
//!   version;
//!
//! - `kernel/hostname`, `kernel/domainname`: the names uname reports (`task::uts`; set with
//!   sethostname and setdomainname);
//! - `kernel/pid_max`: where process and thread ids wrap (`task::PID_MAX`);
//! - `kernel/tainted`: 0 (nothing taints this kernel: no modules, no forced loads);
//! - `fs/lease-break-time`: seconds a lease holder has to give its lease up before the
//!   kernel takes it (`fs::lease`; 45, root may set it);
//! - `fs/nr_open`: the most descriptors a process may have (`fs::file::MAX_FDS`);
//! - `fs/pipe-max-size`: the largest pipe `F_SETPIPE_SZ` gives without privilege, and the
//!   most a new pipe holds for a process without CAP_SYS_RESOURCE (`ipc::pipe::max_size`;
//!   1 MiB, root may set it, rounded up to a power of two pages);
//! - `vm/dbfs_keep_rereads`: 1 (the default) or 0, root may set it: whether a large dbfs read
//!   of a stretch read before keeps its pages in memory (`drivers::window`; boot parameter
//!   `dbfs_keep_rereads`);
//! - `vm/drop_caches`: root writes 1, 2 or 3 to write every file system back and forget the
//!   clean cached blocks and dbfs window pages (`fs::drop_caches`; 4 is accepted and does
//!   nothing, as Linux's only silences its log line); reads as 0.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;

use vfs::{DirEntry, FileType, Metadata, Node, NodeRef, VfsError, VfsResult};

use super::devfs::{list, meta};

/// What a name under `/proc/sys` is: a directory of more, a file made by a function, or a
/// tunable: a file root may also write (the text written goes to its second function).
enum Entry {
    Dir(&'static [(&'static str, Entry)]),
    File(fn() -> String),
    Tunable(fn() -> String, fn(&str) -> VfsResult<()>),
}

/// `kernel/random`: what the random devices report.
const RANDOM: [(&str, Entry); 4] = [
    ("boot_id", Entry::File(|| format!("{}\n", boot_id()))),
    (
        "entropy_avail",
        Entry::File(|| format!("{}\n", super::devfs::ENTROPY_BITS)),
    ),
    (
        "poolsize",
        Entry::File(|| format!("{}\n", super::devfs::ENTROPY_BITS)),
    ),
    ("uuid", Entry::File(random_uuid)),
];

/// A random (version 4) UUID in its text form, with a newline.
fn random_uuid() -> String {
    let mut b = [0u8; 16];
    crate::arch::random::fill(&mut b);
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: alloc::vec::Vec<String> = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}\n",
        h[..4].concat(),
        h[4..6].concat(),
        h[6..8].concat(),
        h[8..10].concat(),
        h[10..].concat()
    )
}

/// This boot's id: a random UUID made at its first read.
fn boot_id() -> String {
    static ID: spin::Once<String> = spin::Once::new();
    String::from(ID.call_once(random_uuid).trim_end())
}

const KERNEL: [(&str, Entry); 16] = [
    // Core files are written as `core` in the dying process's directory (syscall/coredump.rs).
    ("core_pattern", Entry::File(|| String::from("core\n"))),
    (
        "domainname",
        Entry::Tunable(
            || format!("{}\n", crate::task::uts::domainname()),
            |text| set_name(true, text),
        ),
    ),
    (
        "hostname",
        Entry::Tunable(
            || format!("{}\n", crate::task::uts::nodename()),
            |text| set_name(false, text),
        ),
    ),
    (
        "msgmax",
        Entry::File(|| format!("{}\n", crate::ipc::msg::MSGMAX)),
    ),
    (
        "msgmnb",
        Entry::File(|| format!("{}\n", crate::ipc::msg::MSGMNB)),
    ),
    (
        "msgmni",
        Entry::Tunable(
            || format!("{}\n", crate::ipc::msg::msgmni()),
            |text| {
                let n = text.trim().parse().map_err(|_| VfsError::InvalidInput)?;
                crate::ipc::msg::set_msgmni(n).map_err(|_| VfsError::InvalidInput)
            },
        ),
    ),
    (
        "osrelease",
        Entry::File(|| format!("{}\n", crate::task::uts::RELEASE)),
    ),
    ("ostype", Entry::File(|| String::from("Linux\n"))),
    (
        "pid_max",
        Entry::File(|| format!("{}\n", crate::task::PID_MAX)),
    ),
    ("random", Entry::Dir(&RANDOM)),
    (
        "sem",
        Entry::File(|| {
            use crate::ipc::sem::{SEMMNI, SEMMNS, SEMMSL, SEMOPM};
            format!("{SEMMSL}\t{SEMMNS}\t{SEMOPM}\t{SEMMNI}\n")
        }),
    ),
    (
        "shmall",
        Entry::File(|| format!("{}\n", crate::ipc::shm::SHMALL)),
    ),
    (
        "shmmax",
        Entry::Tunable(
            || format!("{}\n", crate::ipc::shm::shmmax()),
            |text| {
                let v = text.trim().parse().map_err(|_| VfsError::InvalidInput)?;
                crate::ipc::shm::set_shmmax(v);
                Ok(())
            },
        ),
    ),
    (
        "shmmni",
        Entry::File(|| format!("{}\n", crate::ipc::shm::SHMMNI)),
    ),
    ("tainted", Entry::File(|| String::from("0\n"))),
    (
        "version",
        Entry::File(|| format!("{}\n", crate::task::uts::VERSION)),
    ),
];
const FS: [(&str, Entry); 3] = [
    (
        "lease-break-time",
        Entry::Tunable(
            || format!("{}\n", super::lease::break_time_secs()),
            |text| {
                let secs = text.trim().parse().map_err(|_| VfsError::InvalidInput)?;
                super::lease::set_break_time_secs(secs);
                Ok(())
            },
        ),
    ),
    (
        "nr_open",
        Entry::File(|| format!("{}\n", super::file::MAX_FDS)),
    ),
    (
        "pipe-max-size",
        Entry::Tunable(
            || format!("{}\n", crate::ipc::pipe::max_size()),
            |text| {
                let v = text.trim().parse().map_err(|_| VfsError::InvalidInput)?;
                crate::ipc::pipe::set_max_size(v).map_err(|_| VfsError::InvalidInput)
            },
        ),
    ),
];
const VM: [(&str, Entry); 2] = [
    (
        "dbfs_keep_rereads",
        Entry::Tunable(
            || {
                format!(
                    "{}\n",
                    u8::from(crate::drivers::window::large_read::keep_rereads())
                )
            },
            |text| {
                let on = match text.trim() {
                    "0" => false,
                    "1" => true,
                    _ => return Err(VfsError::InvalidInput),
                };
                crate::drivers::window::large_read::set_keep_rereads(on);
                Ok(())
            },
        ),
    ),
    (
        "drop_caches",
        Entry::Tunable(
            || String::from("0\n"),
            |text| match text.trim() {
                // Linux: 1 the page cache, 2 slab objects, 3 both, 4 no more log lines about
                // it. Here one cache holds both kinds (block caches and the dbfs window).
                "1" | "2" | "3" => super::writeback::drop_caches(),
                "4" => Ok(()),
                _ => Err(VfsError::InvalidInput),
            },
        ),
    ),
];
const ROOT: [(&str, Entry); 3] = [
    ("fs", Entry::Dir(&FS)),
    ("kernel", Entry::Dir(&KERNEL)),
    ("vm", Entry::Dir(&VM)),
];

/// `kernel/hostname` and `kernel/domainname` written: the text up to its first newline, at
/// most uname's 64 bytes (EINVAL past them), as sethostname and setdomainname set it.
fn set_name(domain: bool, text: &str) -> VfsResult<()> {
    let name = text.split('\n').next().unwrap_or("");
    if name.len() > crate::task::uts::UTS_LEN {
        return Err(VfsError::InvalidInput);
    }
    crate::task::uts::set(domain, name.as_bytes());
    Ok(())
}

/// Inode numbers: a range of their own, above procfs's (`pid << 8 | k`, pids < 2^15).
pub(super) const INO_BASE: u64 = 1 << 40;

/// `/proc/sysvipc`: the System V IPC objects, one line each, as Linux lists them.
const SYSVIPC: [(&str, Entry); 3] = [
    ("msg", Entry::File(crate::ipc::msg::proc_lines)),
    ("sem", Entry::File(crate::ipc::sem::proc_lines)),
    ("shm", Entry::File(crate::ipc::shm::proc_lines)),
];
static SYSVIPC_ROOT: Entry = Entry::Dir(&SYSVIPC);

/// `/proc/sysvipc` itself (served by the same nodes as `/proc/sys`, an inode number of
/// its own: a slot `/proc/sys`'s root never gives a child).
pub(super) fn sysvipc_root() -> NodeRef {
    Arc::new(SysNode {
        entry: &SYSVIPC_ROOT,
        ino: SYSVIPC_INO,
    })
}

pub(super) const SYSVIPC_INO: u64 = INO_BASE | 0xf;

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
/// most a few levels of at most 31 entries.
fn child_ino(parent: u64, i: usize) -> u64 {
    INO_BASE | ((parent - INO_BASE) << 5) | (i as u64 + 1)
}

impl Node for SysNode {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(match self.entry {
            Entry::Dir(_) => meta(self.ino, FileType::Directory, 0o555, 0, 0),
            Entry::File(_) => meta(self.ino, FileType::Regular, 0o444, 0, 0),
            Entry::Tunable(..) => meta(self.ino, FileType::Regular, 0o644, 0, 0),
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
                    Entry::File(_) | Entry::Tunable(..) => FileType::Regular,
                };
                (String::from(*n), child_ino(self.ino, i), t)
            })
            .collect();
        list(cookie, self.ino, &list_, sink)
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let text = match self.entry {
            Entry::File(make) | Entry::Tunable(make, _) => make(),
            Entry::Dir(_) => return Err(VfsError::IsADirectory),
        };
        let start = usize::try_from(offset)
            .unwrap_or(usize::MAX)
            .min(text.len());
        let n = buf.len().min(text.len() - start);
        buf[..n].copy_from_slice(&text.as_bytes()[start..start + n]);
        Ok(n)
    }
    /// A tunable takes the whole value in one write at offset 0 (as Linux's sysctl files
    /// do for numbers); the mode bits (0644) keep others out.
    fn write_at(&self, offset: u64, buf: &[u8]) -> VfsResult<usize> {
        let Entry::Tunable(_, apply) = self.entry else {
            return Err(match self.entry {
                Entry::Dir(_) => VfsError::IsADirectory,
                _ => VfsError::PermissionDenied,
            });
        };
        if offset != 0 {
            return Err(VfsError::InvalidInput);
        }
        let text = core::str::from_utf8(buf).map_err(|_| VfsError::InvalidInput)?;
        apply(text)?;
        Ok(buf.len())
    }
    /// Opening with O_TRUNC (`echo N > file`) keeps the value: it is not a byte store.
    fn truncate(&self, _size: u64) -> VfsResult<()> {
        match self.entry {
            Entry::Tunable(..) => Ok(()),
            Entry::Dir(_) => Err(VfsError::IsADirectory),
            Entry::File(_) => Err(VfsError::PermissionDenied),
        }
    }
}
