//! What `/proc` shows of processes (`fs::procfs`): a copy of one process's figures, taken
//! under its lock and handed over, so procfs never holds a process lock while it formats.

use alloc::string::String;
use alloc::vec::Vec;

use super::process::State;
use super::sched::SCHED;

/// What `/proc/<pid>` shows of one process (filled by [`info`]).
pub struct PsInfo {
    pub pid: usize,
    pub ppid: usize,
    pub pgid: usize,
    pub sid: usize,
    /// proc(5)'s state letter: R, S, Z.
    pub state: char,
    /// The program's name (the executable's file name, at most 15 bytes, as `comm`).
    pub comm: String,
    /// argv, each argument followed by a NUL byte.
    pub cmdline: Vec<u8>,
    pub cwd: String,
    pub uid: u32,
    pub gid: u32,
    pub threads: usize,
    /// CPU time of the process and of its reaped children, in nanoseconds.
    pub cpu: super::process::CpuTime,
    pub children_cpu: super::process::CpuTime,
    pub nice: i32,
    /// Bytes of user address space in areas, resident pages, and bytes locked (mlock).
    pub vsize: u64,
    pub rss_pages: u64,
    /// Peak resident pages (VmHWM).
    pub rss_peak_pages: u64,
    pub locked: u64,
    /// Siginfos queued for the process's real user, and its RLIMIT_SIGPENDING (SigQ).
    pub sig_queued: usize,
    pub sig_limit: u64,
}

/// The tids of process `pid`'s live threads, lowest first (`/proc/<pid>/task`).
pub fn thread_ids(pid: usize) -> Option<Vec<usize>> {
    let p = super::lookup::find(pid)?;
    let i = p.inner.lock();
    let mut tids: Vec<usize> = i.threads.iter().map(|t| t.tid).collect();
    tids.sort_unstable();
    Some(tids)
}

/// What [`info`] says of process `pid`, seen from its thread `tid`: the tid in place of
/// the pid and that thread's own state letter (`/proc/<pid>/task/<tid>/stat`).
pub fn thread_info(pid: usize, tid: usize) -> Option<PsInfo> {
    let mut info = info(pid)?;
    let t = super::lookup::find_thread(tid).filter(|t| t.process.pid == pid)?;
    info.state = match t.inner.lock().state {
        State::Running | State::Ready => 'R',
        State::Waiting => 'S',
        State::Dead => 'Z',
    };
    info.pid = tid;
    info.threads = 1;
    Some(info)
}

/// The program process `pid` runs (`/proc/<pid>/exe`), if it exists and has one.
pub fn exe(pid: usize) -> Option<alloc::sync::Arc<dyn crate::mm::file_pages::MappedFile>> {
    super::lookup::find(pid)?.inner.lock().exe.clone()
}

/// Every process's pid, in order (zombies included until reaped, as on Linux).
pub fn pids() -> Vec<usize> {
    SCHED.lock().all.keys().copied().collect()
}

/// Run `f` on process `pid`'s descriptor table (`/proc/<pid>/fd`), if the process exists and
/// still has one (a zombie's is gone: an empty table then).
pub fn with_files<R>(
    pid: usize,
    f: impl FnOnce(&mut dyn super::files::FileTable) -> R,
) -> Option<R> {
    let p = super::lookup::find(pid)?;
    let mut i = p.inner.lock();
    Some(f(&mut *i.files))
}

/// The areas of process `pid`'s address space (`/proc/<pid>/maps`), if it exists.
pub fn maps(pid: usize) -> Option<Vec<crate::mm::maps::MapEntry>> {
    let p = super::lookup::find(pid)?;
    let i = p.inner.lock();
    Some(i.space.maps())
}

/// The figures of process `pid`, if it exists.
pub fn info(pid: usize) -> Option<PsInfo> {
    let p = super::lookup::find(pid)?;
    let i = p.inner.lock();
    // As Linux's /proc/<pid>/stat: the state of the thread group's leader (the thread whose
    // id is the pid; LTP waits for a process to sleep by it while a helper thread runs);
    // without one (the leader exited first, or exec gave the process another thread's
    // id), runnable while any thread can be. A zombie has no threads left.
    let leader = i.threads.iter().find(|t| t.tid == pid);
    let runnable = match leader {
        Some(t) => matches!(t.inner.lock().state, State::Running | State::Ready),
        None => i
            .threads
            .iter()
            .any(|t| matches!(t.inner.lock().state, State::Running | State::Ready)),
    };
    let state = match (i.zombie, runnable) {
        (Some(_), _) => 'Z',
        (None, true) => 'R',
        (None, false) => 'S',
    };
    Some(PsInfo {
        pid,
        ppid: i.ppid,
        pgid: i.pgid,
        sid: i.sid,
        state,
        comm: String::from(i.comm.as_str()),
        cmdline: i.cmdline.clone(),
        cwd: i.cwd.clone(),
        uid: i.cred.uid,
        gid: i.cred.gid,
        threads: i.threads.len().max(1),
        cpu: p.cpu(),
        children_cpu: i.children_cpu,
        nice: i.nice,
        vsize: i.space.mapped_bytes() as u64,
        rss_pages: i.space.resident_pages() as u64,
        rss_peak_pages: i.rss_peak() as u64,
        locked: i.space.locked_bytes() as u64,
        sig_queued: super::siginfo::queued_by(i.cred.uid),
        sig_limit: i.limits.sigpending.0,
    })
}

/// `/proc/<pid>/syscall` (thread `tid`, the process's own thread when `None`), as Linux writes
/// it: `running` for a thread on a hart or ready to run; for a sleeping one, the number and
/// six arguments of the system call it sleeps in, then its user stack pointer and the user
/// pc it returns to, or `-1`, the stack pointer and pc when it sleeps outside a call (a page
/// fault's wait). What a hang's sleepers wait in, for a person reading it from another shell.
pub fn syscall_text(pid: usize, tid: Option<usize>) -> Option<String> {
    let t = super::lookup::find_thread(tid.unwrap_or(pid)).filter(|t| t.process.pid == pid)?;
    let i = t.inner.lock();
    if i.state != State::Waiting {
        return Some(String::from("running\n"));
    }
    let r = &i.tf.regs;
    let (sp, pc) = (r[2], i.tf.sepc);
    Some(
        if t.in_syscall.load(core::sync::atomic::Ordering::Relaxed) {
            alloc::format!(
                "{} {:#x} {:#x} {:#x} {:#x} {:#x} {:#x} {:#x} {:#x}\n",
                r[17],
                r[10],
                r[11],
                r[12],
                r[13],
                r[14],
                r[15],
                sp,
                pc
            )
        } else {
            alloc::format!("-1 {sp:#x} {pc:#x}\n")
        },
    )
}
