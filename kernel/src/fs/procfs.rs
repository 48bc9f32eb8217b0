//! procfs: `/proc`, made on every read from the kernel's own tables, so `ps`, `top`, `free`,
//! `mount` and `df` (busybox reads these files) see the system as it is now.
//!
//! Layout (a subset of Linux's, same formats):
//! - `/proc/<pid>/`: `stat` (the 52 fields of proc(5), zeros where we keep nothing),
//!   `status`, `statm`, `cmdline` (the arguments, each ended by NUL), `comm`, `cwd` (a link),
//!   `fd/` (a link per open descriptor, followed to the open file itself: `proc_fd.rs`),
//!   `exe` (a link to the program it runs, followed the same way), `task/<tid>/` (the same
//!   files for each thread, `stat` and `status` with the thread's own id and state),
//!   `mounts` (as `/proc/mounts`: Debian's `/etc/mtab` links to `/proc/self/mounts`),
//!   `mountinfo` (what coreutils' `df` and util-linux read), `syscall` (the call a sleeping
//!   thread waits in, with its arguments, as Linux writes it: where a hung program is);
//! - `/proc/self` (a link to the caller's directory), `mounts`, `meminfo`, `uptime`, `stat`,
//!   `loadavg`, `filesystems`, `version`, `cpuinfo`, `config.gz` (the kernel's configuration:
//!   `proc_config`), `cmdline` (the kernel's command line), `interrupts` (the disks'
//!   completion interrupts per hart), `diskstats` (each disk's requests, sectors and times,
//!   Linux's twenty fields: what `iostat`, `vmstat -d` and busybox `iostat` read);
//! - `/proc/sys`: a few tunables, read-only, and `/proc/sysvipc` (`procsys`);
//! - `/proc/counters` (ours, like Linux's `vmstat`): the kernel's I/O counters since boot
//!   (`name value` lines, the figures the benchmarks print beside each result), so
//!   `cat /proc/counters` before and after a command shows what it cost.
//!
//! Files report size 0, as Linux's do; a read at an offset cuts the text made for that read,
//! so a reader that reads in pieces can see two states of a process (as on Linux without
//! seq_file's buffering). A process that is gone makes its nodes answer `NotFound`.
//! Nothing here is writable.

use alloc::format;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::any::Any;
use core::fmt::Write;

use abi::syscall::KernelCounters;
use vfs::{DirEntry, FileSystem, FileType, Metadata, Node, NodeRef, VfsError, VfsResult};

use super::devfs::{list, meta, read_text};
use super::proc_fd::{ExeLink, FdDir};
use crate::task::ps::PsInfo;

/// Clock ticks per second in `stat` (Linux's USER_HZ, as `times` counts).
const HZ: u64 = crate::arch::time::CLK_TCK;

fn ticks(ns: u64) -> u64 {
    ns / (1_000_000_000 / HZ)
}

pub struct ProcFs {
    root: Arc<ProcRoot>,
}

impl ProcFs {
    pub fn new() -> Arc<ProcFs> {
        Arc::new(ProcFs {
            root: Arc::new(ProcRoot),
        })
    }
}

impl FileSystem for ProcFs {
    fn fs_name(&self) -> &'static str {
        "proc"
    }
    fn root(&self) -> VfsResult<NodeRef> {
        Ok(self.root.clone())
    }
    fn statfs(&self) -> VfsResult<vfs::FsStats> {
        Ok(vfs::FsStats {
            fs_type: 0x9fa0, // PROC_SUPER_MAGIC
            block_size: 4096,
            name_max: 255,
            ..Default::default()
        })
    }
}

/// Files of the root directory, with their inode numbers (pids use `pid << 8 | k`).
const ROOT_FILES: [(&str, Gen, u64); 16] = [
    ("mounts", Gen::Mounts, 3),
    ("meminfo", Gen::Meminfo, 4),
    ("uptime", Gen::Uptime, 5),
    ("stat", Gen::Stat, 6),
    ("loadavg", Gen::Loadavg, 7),
    ("filesystems", Gen::Filesystems, 8),
    ("version", Gen::Version, 9),
    ("cpuinfo", Gen::Cpuinfo, 10),
    ("self", Gen::SelfLink, 11),
    ("counters", Gen::Counters, 12),
    ("bkl", Gen::Bkl, 13),
    ("config.gz", Gen::ConfigGz, 14),
    ("cmdline", Gen::Cmdline, 15),
    ("interrupts", Gen::Interrupts, 16),
    ("lockstat", Gen::Lockstat, 17),
    ("diskstats", Gen::Diskstats, 18),
];

/// The kernel's command line (`/proc/cmdline`), as the boot code was given it.
static CMDLINE: spin::Once<String> = spin::Once::new();

/// Record the kernel's command line for `/proc/cmdline` (boot, once).
pub fn set_cmdline(cmdline: &str) {
    CMDLINE.call_once(|| String::from(cmdline));
}

/// Files of a process directory: name, what, and the low byte of the inode number.
const PID_FILES: [(&str, PidGen, u64); 10] = [
    ("stat", PidGen::Stat, 2),
    ("status", PidGen::Status, 3),
    ("statm", PidGen::Statm, 4),
    ("cmdline", PidGen::Cmdline, 5),
    ("comm", PidGen::Comm, 6),
    ("cwd", PidGen::Cwd, 7),
    ("mounts", PidGen::Mounts, 9),
    ("mountinfo", PidGen::Mountinfo, 10),
    ("maps", PidGen::Maps, 11),
    ("syscall", PidGen::Syscall, 14),
];

/// The low byte of `/proc/<pid>/fd`'s inode number.
const FD_DIR_INO: u64 = 8;
/// The low byte of `/proc/<pid>/exe`'s inode number.
const EXE_INO: u64 = 12;
/// The low byte of `/proc/<pid>/fdinfo`'s inode number.
const FDINFO_DIR_INO: u64 = 15;
/// The low byte of `/proc/<pid>/task`'s inode number.
const TASK_DIR_INO: u64 = 13;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Gen {
    Mounts,
    Meminfo,
    Uptime,
    Stat,
    Loadavg,
    Filesystems,
    Version,
    Cpuinfo,
    SelfLink,
    Counters,
    Bkl,
    ConfigGz,
    Cmdline,
    Interrupts,
    Lockstat,
    Diskstats,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum PidGen {
    Stat,
    Status,
    Statm,
    Cmdline,
    Comm,
    Cwd,
    Mounts,
    Mountinfo,
    Maps,
    Syscall,
}

struct ProcRoot;
/// `/proc/<pid>`, or `/proc/<pid>/task/<tid>` (`tid`): the same files, those of a thread
/// telling its own id and state.
struct PidDir {
    pid: usize,
    tid: Option<usize>,
}
/// `/proc/<pid>/task`: a directory per thread.
struct TaskDir {
    pid: usize,
}
struct RootFile {
    what: Gen,
    ino: u64,
}
struct PidFile {
    pid: usize,
    tid: Option<usize>,
    what: PidGen,
}

/// The pid a `/proc/<pid>` directory node stands for (pidfd_send_signal accepts a
/// descriptor of one, as Linux does).
pub fn pid_of_dir(node: &dyn Node) -> Option<usize> {
    node.as_any().downcast_ref::<PidDir>().map(|d| d.pid)
}

fn pid_ino(pid: usize, k: u64) -> u64 {
    ((pid as u64) << 8) | k
}

fn info(pid: usize) -> VfsResult<PsInfo> {
    crate::task::ps::info(pid).ok_or(VfsError::NotFound)
}

/// The high bit that sets a thread's nodes (`/proc/<pid>/task/<tid>/...`) apart from its
/// process's.
const TASK_INO: u64 = 1 << 38;

/// A process's or a thread's inode number for the node of low byte `k`.
fn node_ino(pid: usize, tid: Option<usize>, k: u64) -> u64 {
    match tid {
        None => pid_ino(pid, k),
        Some(t) => TASK_INO | pid_ino(t, k),
    }
}

/// A directory of process `p`'s (`/proc/<pid>`, its `task` and the threads' directories):
/// inode `ino`, readable and searchable by all, owned by the process's user.
fn process_dir(p: &PsInfo, ino: u64) -> Metadata {
    let mut m = meta(ino, FileType::Directory, 0o555, 0, 0);
    m.uid = p.uid;
    m.gid = p.gid;
    m
}

/// What a process's or (with `tid`) one of its threads' files say.
fn info_of(pid: usize, tid: Option<usize>) -> VfsResult<PsInfo> {
    match tid {
        None => info(pid),
        Some(t) => crate::task::ps::thread_info(pid, t).ok_or(VfsError::NotFound),
    }
}

impl Node for ProcRoot {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        Ok(meta(1, FileType::Directory, 0o555, 0, 0))
    }
    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        if let Some(&(_, what, ino)) = ROOT_FILES.iter().find(|(n, _, _)| *n == name) {
            return Ok(Arc::new(RootFile { what, ino }));
        }
        if name == "sys" {
            return Ok(super::procsys::root());
        }
        if name == "sysvipc" {
            return Ok(super::procsys::sysvipc_root());
        }
        let pid: usize = name.parse().map_err(|_| VfsError::NotFound)?;
        if name.starts_with('0') || crate::task::ps::info(pid).is_none() {
            return Err(VfsError::NotFound);
        }
        Ok(Arc::new(PidDir { pid, tid: None }))
    }
    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        let mut entries: Vec<(String, u64, FileType)> = ROOT_FILES
            .iter()
            .map(|&(n, what, ino)| {
                let t = if what == Gen::SelfLink {
                    FileType::Symlink
                } else {
                    FileType::Regular
                };
                (String::from(n), ino, t)
            })
            .collect();
        entries.push((
            String::from("sys"),
            super::procsys::INO_BASE,
            FileType::Directory,
        ));
        entries.push((
            String::from("sysvipc"),
            super::procsys::SYSVIPC_INO,
            FileType::Directory,
        ));
        for pid in crate::task::ps::pids() {
            entries.push((format!("{pid}"), pid_ino(pid, 1), FileType::Directory));
        }
        list(cookie, 1, &entries, sink)
    }
}

impl Node for PidDir {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let p = info_of(self.pid, self.tid)?;
        Ok(process_dir(&p, node_ino(self.pid, self.tid, 1)))
    }
    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        info_of(self.pid, self.tid)?;
        if name == "task" && self.tid.is_none() {
            return Ok(Arc::new(TaskDir { pid: self.pid }));
        }
        if name == "fd" {
            return Ok(Arc::new(FdDir {
                pid: self.pid,
                dir_ino: pid_ino(self.pid, FD_DIR_INO),
                info: false,
            }));
        }
        if name == "fdinfo" {
            return Ok(Arc::new(FdDir {
                pid: self.pid,
                dir_ino: pid_ino(self.pid, FDINFO_DIR_INO),
                info: true,
            }));
        }
        if name == "exe" {
            return Ok(Arc::new(ExeLink {
                pid: self.pid,
                ino: pid_ino(self.pid, EXE_INO),
            }));
        }
        let &(_, what, _) = PID_FILES
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or(VfsError::NotFound)?;
        Ok(Arc::new(PidFile {
            pid: self.pid,
            tid: self.tid,
            what,
        }))
    }
    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        info_of(self.pid, self.tid)?;
        let mut entries: Vec<(String, u64, FileType)> = PID_FILES
            .iter()
            .map(|&(n, what, k)| {
                let t = if what == PidGen::Cwd {
                    FileType::Symlink
                } else {
                    FileType::Regular
                };
                (String::from(n), node_ino(self.pid, self.tid, k), t)
            })
            .collect();
        entries.push((
            String::from("fd"),
            pid_ino(self.pid, FD_DIR_INO),
            FileType::Directory,
        ));
        entries.push((
            String::from("fdinfo"),
            pid_ino(self.pid, FDINFO_DIR_INO),
            FileType::Directory,
        ));
        entries.push((
            String::from("exe"),
            pid_ino(self.pid, EXE_INO),
            FileType::Symlink,
        ));
        if self.tid.is_none() {
            entries.push((
                String::from("task"),
                pid_ino(self.pid, TASK_DIR_INO),
                FileType::Directory,
            ));
        }
        list(cookie, node_ino(self.pid, self.tid, 1), &entries, sink)
    }
}

impl Node for TaskDir {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let p = info(self.pid)?;
        Ok(process_dir(&p, pid_ino(self.pid, TASK_DIR_INO)))
    }
    fn lookup(&self, name: &str) -> VfsResult<NodeRef> {
        let tid: usize = name.parse().map_err(|_| VfsError::NotFound)?;
        let tids = crate::task::ps::thread_ids(self.pid).ok_or(VfsError::NotFound)?;
        if name.starts_with('0') || !tids.contains(&tid) {
            return Err(VfsError::NotFound);
        }
        Ok(Arc::new(PidDir {
            pid: self.pid,
            tid: Some(tid),
        }))
    }
    fn readdir(&self, cookie: u64, sink: &mut dyn FnMut(DirEntry<'_>) -> bool) -> VfsResult<()> {
        let tids = crate::task::ps::thread_ids(self.pid).ok_or(VfsError::NotFound)?;
        let entries: Vec<(String, u64, FileType)> = tids
            .into_iter()
            .map(|t| {
                (
                    format!("{t}"),
                    node_ino(self.pid, Some(t), 1),
                    FileType::Directory,
                )
            })
            .collect();
        list(cookie, pid_ino(self.pid, TASK_DIR_INO), &entries, sink)
    }
}

impl Node for RootFile {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        if self.what == Gen::SelfLink {
            let target = self.readlink()?;
            return Ok(meta(
                self.ino,
                FileType::Symlink,
                0o777,
                target.len() as u64,
                0,
            ));
        }
        Ok(meta(self.ino, FileType::Regular, 0o444, 0, 0))
    }
    fn readlink(&self) -> VfsResult<String> {
        match self.what {
            Gen::SelfLink => Ok(format!("{}", crate::task::current_pid())),
            _ => Err(VfsError::InvalidInput),
        }
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let text = match self.what {
            Gen::Mounts => mounts(),
            Gen::Meminfo => meminfo(),
            Gen::Uptime => {
                let ns = crate::arch::time::monotonic_ns();
                let up = format!("{}.{:02}", ns / 1_000_000_000, ns / 10_000_000 % 100);
                format!("{up} {up}\n")
            }
            Gen::Stat => stat(),
            Gen::Bkl => bkl(),
            Gen::Interrupts => interrupts(),
            Gen::Diskstats => diskstats(),
            Gen::Lockstat => lockstat(),
            Gen::Loadavg => {
                let pids = crate::task::ps::pids();
                let last = pids.iter().max().copied().unwrap_or(0);
                format!("0.00 0.00 0.00 1/{} {}\n", pids.len(), last)
            }
            Gen::Filesystems => String::from("\tvfat\n\tdbfs\nnodev\tdevfs\nnodev\tproc\n"),
            Gen::Version => format!(
                "dbfs-os version {} (riscv64, Rust kernel)\n",
                env!("CARGO_PKG_VERSION")
            ),
            Gen::Cpuinfo => {
                let mut text = String::new();
                for i in
                    (0..crate::arch::hart::count()).filter(|&i| crate::arch::hart::is_started(i))
                {
                    text += &format!(
                        "processor\t: {}\nhart\t\t: {}\nisa\t\t: rv64imafdc\nmmu\t\t: sv39\n\n",
                        i,
                        crate::arch::hart::hartid(i)
                    );
                }
                text
            }
            Gen::Counters => counters(),
            Gen::ConfigGz => return read_text(&super::proc_config::config_gz(), offset, buf),
            Gen::SelfLink => return Err(VfsError::InvalidInput),
            Gen::Cmdline => format!("{}\n", CMDLINE.get().map_or("", |s| s.as_str())),
        };
        read_text(text.as_bytes(), offset, buf)
    }
}

impl Node for PidFile {
    fn as_any(&self) -> &dyn Any {
        self
    }
    fn getattr(&self) -> VfsResult<Metadata> {
        let p = info_of(self.pid, self.tid)?;
        let k = PID_FILES
            .iter()
            .find(|(_, w, _)| *w == self.what)
            .map_or(0, |f| f.2);
        let mut m = if self.what == PidGen::Cwd {
            meta(
                node_ino(self.pid, self.tid, k),
                FileType::Symlink,
                0o777,
                p.cwd.len() as u64,
                0,
            )
        } else {
            meta(
                node_ino(self.pid, self.tid, k),
                FileType::Regular,
                0o444,
                0,
                0,
            )
        };
        m.uid = p.uid;
        m.gid = p.gid;
        Ok(m)
    }
    fn readlink(&self) -> VfsResult<String> {
        match self.what {
            PidGen::Cwd => Ok(info_of(self.pid, self.tid)?.cwd),
            _ => Err(VfsError::InvalidInput),
        }
    }
    fn read_at(&self, offset: u64, buf: &mut [u8]) -> VfsResult<usize> {
        let p = info_of(self.pid, self.tid)?;
        let text: Vec<u8> = match self.what {
            PidGen::Stat => pid_stat(&p).into_bytes(),
            PidGen::Status => pid_status(&p).into_bytes(),
            PidGen::Statm => format!(
                "{} {} 0 0 0 0 0\n",
                p.vsize / crate::mm::PAGE_SIZE as u64,
                p.rss_pages
            )
            .into_bytes(),
            PidGen::Cmdline => p.cmdline,
            PidGen::Comm => format!("{}\n", p.comm).into_bytes(),
            PidGen::Mounts => mounts().into_bytes(),
            PidGen::Mountinfo => mountinfo().into_bytes(),
            PidGen::Maps => maps(self.pid)?.into_bytes(),
            PidGen::Syscall => crate::task::ps::syscall_text(self.pid, self.tid)
                .ok_or(VfsError::NotFound)?
                .into_bytes(),
            PidGen::Cwd => return Err(VfsError::InvalidInput),
        };
        read_text(&text, offset, buf)
    }
}

/// `/proc/<pid>/stat`: proc(5)'s fields in order.
fn pid_stat(p: &PsInfo) -> String {
    let mut s = format!(
        "{} ({}) {} {} {} {} 0 -1 0 0 0 0 0 {} {} {} {} {} {} {} 0 {} {}",
        p.pid,
        p.comm,
        p.state,
        p.ppid,
        p.pgid,
        p.sid,
        ticks(p.cpu.user_ns()),          // utime
        ticks(p.cpu.sys_ns),             // stime
        ticks(p.children_cpu.user_ns()), // cutime
        ticks(p.children_cpu.sys_ns),    // cstime
        20 + p.nice,                     // priority
        p.nice,
        p.threads,
        0,       // starttime: not recorded
        p.vsize, // vsize, bytes
    );
    let _ = write!(s, " {}", p.rss_pages);
    // rsslim .. exit_code: 27 more fields Linux fills; zeros here.
    for _ in 0..27 {
        s.push_str(" 0");
    }
    s.push('\n');
    s
}

fn pid_status(p: &PsInfo) -> String {
    let state = match p.state {
        'R' => "R (running)",
        'Z' => "Z (zombie)",
        _ => "S (sleeping)",
    };
    format!(
        "Name:\t{}\nState:\t{}\nTgid:\t{}\nPid:\t{}\nPPid:\t{}\nUid:\t{u}\t{u}\t{u}\t{u}\nGid:\t{g}\t{g}\t{g}\t{g}\nThreads:\t{}\nSigQ:\t{}/{}\nVmSize:\t{} kB\nVmLck:\t{} kB\nVmHWM:\t{} kB\nVmRSS:\t{} kB\nVmSwap:\t0 kB\n",
        p.comm,
        state,
        p.pid,
        p.pid,
        p.ppid,
        p.threads,
        p.sig_queued,
        p.sig_limit,
        p.vsize / 1024,
        p.locked / 1024,
        p.rss_peak_pages * crate::mm::PAGE_SIZE as u64 / 1024,
        p.rss_pages * crate::mm::PAGE_SIZE as u64 / 1024,
        u = p.uid,
        g = p.gid,
    )
}

fn mounts() -> String {
    let mut s = String::new();
    for m in super::mounts() {
        let name = m.fs.fs_name();
        let source = m.source.as_ref().map_or(name, |src| src.name.as_str());
        let rw = if m.is_readonly() { "ro" } else { "rw" };
        let _ = writeln!(s, "{source} {} {name} {rw} 0 0", m.path);
    }
    s
}

/// `/proc/<pid>/maps` (proc(5)): address range, permissions (`rwx`, then `s` for a shared
/// mapping, `p` for a private one), file offset, device (major:minor: 0 and the mount id, the
/// `st_dev` of its files), inode number and the file's path or `[heap]`, `[stack]`, `[vdso]`,
/// the path padded to column 74 as Linux does.
fn maps(pid: usize) -> VfsResult<String> {
    let areas = crate::task::ps::maps(pid).ok_or(VfsError::NotFound)?;
    let mut s = String::new();
    for a in areas {
        let flag = |on: bool, c: char| if on { c } else { '-' };
        let line = format!(
            "{:08x}-{:08x} {}{}{}{} {:08x} {:02x}:{:02x} {} ",
            a.start,
            a.end,
            flag(a.read, 'r'),
            flag(a.write, 'w'),
            flag(a.exec, 'x'),
            if a.shared { 's' } else { 'p' },
            a.offset,
            0,
            a.dev,
            a.ino,
        );
        if a.name.is_empty() {
            let _ = writeln!(s, "{}", line.trim_end());
        } else {
            let _ = writeln!(s, "{line:<73}{}", a.name);
        }
    }
    Ok(s)
}

/// proc(5)'s mountinfo: mount id, parent's id, st_dev as major:minor (0:id, the `st_dev` of the
/// mount's files), root within the file system, mount point, options, `-`, type, source, options.
/// The root's parent is itself.
fn mountinfo() -> String {
    let all = super::mounts();
    let mut s = String::new();
    for m in &all {
        let parent = all
            .iter()
            .filter(|p| p.id != m.id && is_below(&m.path, &p.path))
            .max_by_key(|p| p.path.len())
            .map_or(m.id, |p| p.id);
        let name = m.fs.fs_name();
        let source = m.source.as_ref().map_or(name, |src| src.name.as_str());
        let rw = if m.is_readonly() { "ro" } else { "rw" };
        let _ = writeln!(
            s,
            "{} {parent} 0:{} / {} {rw},relatime - {name} {source} {rw}",
            m.id, m.id, m.path
        );
    }
    s
}

/// Whether `path` lies below directory `dir` (both canonical).
fn is_below(path: &str, dir: &str) -> bool {
    dir == "/" || path.strip_prefix(dir).is_some_and(|r| r.starts_with('/'))
}

fn meminfo() -> String {
    let kib = crate::mm::PAGE_SIZE as u64 / 1024;
    let free = crate::mm::frame::free_count() as u64 * kib;
    let used = crate::mm::frame::used_count() as u64 * kib;
    let heap_free = crate::mm::heap::free_bytes() as u64 / 1024;
    format!(
        "MemTotal:       {:8} kB\nMemFree:        {:8} kB\nMemAvailable:   {:8} kB\nBuffers:        {:8} kB\nCached:         {:8} kB\nSwapTotal:      {:8} kB\nSwapFree:       {:8} kB\nKernelHeapFree: {:8} kB\n",
        free + used,
        free,
        free,
        0,
        0,
        0,
        0,
        heap_free
    )
}

fn stat() -> String {
    let now = crate::arch::time::monotonic_ns();
    let harts: Vec<usize> = (0..crate::arch::hart::count())
        .filter(|&i| crate::arch::hart::is_started(i))
        .collect();
    // Per hart: the time it ran threads, and the rest of the time since boot as idle.
    let per: Vec<(u64, u64)> = harts
        .iter()
        .map(|&i| {
            let busy = crate::task::hart_busy_ns(i);
            (ticks(busy), ticks(now.saturating_sub(busy)))
        })
        .collect();
    let (user, idle) = per
        .iter()
        .fold((0, 0), |(u, d), &(bu, bd)| (u + bu, d + bd));
    let boot = crate::arch::time::realtime_ns().saturating_sub(now) / 1_000_000_000;
    let procs = crate::task::ps::pids().len();
    let ctxt = crate::task::context_switches();
    let mut text = format!("cpu  {user} 0 0 {idle} 0 0 0 0 0 0\n");
    for (i, (u, d)) in harts.iter().zip(&per) {
        text += &format!("cpu{i} {u} 0 0 {d} 0 0 0 0 0 0\n");
    }
    text += &format!(
        "ctxt {ctxt}\nbtime {boot}\nprocesses {procs}\nprocs_running 1\nprocs_blocked 0\n"
    );
    text
}

/// `/proc/bkl`: per started hart, its big-kernel-lock, IPI and idle counters
/// (`arch::hart::Stats`), times in microseconds.
fn bkl() -> String {
    use core::sync::atomic::Ordering::Relaxed;
    let us =
        |t: &core::sync::atomic::AtomicU64| crate::arch::hart::ticks_to_ns(t.load(Relaxed)) / 1000;
    let mut s = String::new();
    for i in (0..crate::arch::hart::count()).filter(|&i| crate::arch::hart::is_started(i)) {
        let h = crate::arch::hart::stats(i);
        let _ = writeln!(
            s,
            "hart{i} acquires {} contended {} wait_us {} wait_max_us {} held_us {} lock_sleeps {} ipi_sent {} ipi_handoff {} ipi_recv {} idle_sleeps {} idle_us {} ticks {}",
            h.acquires.load(Relaxed),
            h.contended.load(Relaxed),
            us(&h.wait_t),
            us(&h.wait_max_t),
            us(&h.held_t),
            h.lock_sleeps.load(Relaxed),
            h.ipi_sent.load(Relaxed),
            h.ipi_handoff.load(Relaxed),
            h.ipi_recv.load(Relaxed),
            h.idle_sleeps.load(Relaxed),
            us(&h.idle_t),
            h.ticks.load(Relaxed),
        );
    }
    s
}

/// `/proc/lockstat`: each rank of kernel spin lock that was ever found held
/// (`arch::lockstat`): the acquisitions that waited and their total wait in microseconds.
fn lockstat() -> String {
    let mut s = String::new();
    for &(rank, name) in &crate::arch::lockcheck::rank::NAMES {
        let (n, t) = crate::arch::lockstat::counts(rank);
        if n > 0 {
            let us = crate::arch::hart::ticks_to_ns(t) / 1000;
            let _ = writeln!(s, "{name} contended {n} wait_us {us}");
        }
    }
    s
}

/// `/proc/interrupts` as Linux lays it out: a `CPUn` column per started hart, then a row per
/// routed source with the interrupts each hart took (every source goes to the boot hart
/// alone, `arch::plic`, so the other columns stay 0), its chip, number, trigger and device.
fn interrupts() -> String {
    let harts: Vec<usize> = (0..crate::arch::hart::count())
        .filter(|&i| crate::arch::hart::is_started(i))
        .collect();
    let mut s = String::from("          ");
    for i in &harts {
        let _ = write!(s, " {:>10}", format!("CPU{i}"));
    }
    s.push('\n');
    for (irq, count, name) in crate::drivers::virtio_blk::interrupts::interrupt_counts() {
        let _ = write!(s, "{:>9}:", irq);
        for &i in &harts {
            let _ = write!(s, " {:>10}", count[i]);
        }
        let _ = writeln!(s, "  PLIC {:>3} Level     virtio-blk {}", irq, name);
    }
    s
}

/// `/proc/diskstats`: a line per disk (vda first), Linux's layout
/// (`virtio_blk_req::stats::DiskStats::line`), its device number that of its `/dev` node.
fn diskstats() -> String {
    let mut s = String::new();
    for (i, (name, stats)) in crate::drivers::virtio_blk::interrupts::disk_stats()
        .into_iter()
        .enumerate()
    {
        let rdev = super::devfs::disk_rdev(i);
        s += &stats.line(rdev >> 8, rdev & 0xff, &name);
    }
    s
}

fn counters() -> String {
    let c = crate::counters::snapshot();
    let rows: [(&str, u64); KernelCounters::WORDS] = [
        ("dev_read_requests", c.dev_read_requests),
        ("dev_read_bytes", c.dev_read_bytes),
        ("dev_write_requests", c.dev_write_requests),
        ("dev_write_bytes", c.dev_write_bytes),
        ("dev_flushes", c.dev_flushes),
        ("cache_hits", c.cache_hits),
        ("cache_misses", c.cache_misses),
        ("page_faults", c.page_faults),
        ("user_copy_bytes", c.user_copy_bytes),
        ("window_pages_read", c.window_pages_read),
        ("window_pages_written", c.window_pages_written),
        ("transactions", c.transactions),
        ("window_direct_bytes", c.window_direct_bytes),
        ("syscalls", c.syscalls),
        ("window_fault_sleeps", c.window_fault_sleeps),
        ("window_stale_loads", c.window_stale_loads),
        ("unlocked_syscalls", c.unlocked_syscalls),
        ("unlocked_took_lock", c.unlocked_took_lock),
        ("dev_reads_overlapped", c.dev_reads_overlapped),
        ("window_cached_bytes", c.window_cached_bytes),
        ("window_kept_pages", c.window_kept_pages),
    ];
    let mut s = String::new();
    for (name, v) in rows {
        let _ = writeln!(s, "{name} {v}");
    }
    s
}
