//! Process and thread calls: clone (fork, vfork, threads), execve, wait4, exit and
//! exit_group, set_tid_address and set_robust_list, umask, process groups and sessions,
//! credentials, resource limits and usage.

use alloc::string::String;
use alloc::vec::Vec;

use abi::Errno;

use super::args::{read_path, with_space, SysResult};
use crate::arch::trap::TrapFrame;
use crate::mm::uaccess;
use crate::task::{self, ExitStatus};

/// exit: end the calling thread (the process too, if it was the last).
pub fn sys_exit(code: i32) -> SysResult {
    task::exit_thread(ExitStatus::Exited(code & 0xff))
}

/// exit_group: end every thread of the process.
pub fn sys_exit_group(code: i32) -> SysResult {
    task::exit_current(ExitStatus::Exited(code & 0xff))
}

/// set_tid_address: the word to zero and futex-wake when this thread exits; returns the tid.
pub fn sys_set_tid_address(addr: usize) -> SysResult {
    task::with_thread(|t| t.clear_child_tid = addr);
    Ok(task::current_tid())
}

/// set_robust_list: remember the thread's robust-futex list head (walked at its exit, see
/// `task::futex::exit_robust_list`). `len` must be that of `struct robust_list_head`.
pub fn sys_set_robust_list(head: usize, len: usize) -> SysResult {
    const ROBUST_LIST_HEAD_SIZE: usize = 24;
    if len != ROBUST_LIST_HEAD_SIZE {
        return Err(Errno::EINVAL);
    }
    task::with_thread(|t| t.robust_list = head);
    Ok(0)
}

pub fn sys_getppid() -> SysResult {
    Ok(task::with_current(|p| p.ppid))
}

pub fn sys_umask(mask: u32) -> SysResult {
    Ok(task::with_current(|p| core::mem::replace(&mut p.umask, mask & 0o777)) as usize)
}

pub fn sys_clone(
    flags: usize,
    stack: usize,
    ptid: usize,
    tls: usize,
    ctid: usize,
    tf: &TrapFrame,
) -> SysResult {
    use abi::fcntl::{CLONE_PARENT_SETTID, CLONE_PIDFD};
    // `clone` puts the pidfd where the parent's copy of the tid would go: not both.
    let pidfd_at = if flags as u64 & CLONE_PIDFD != 0 {
        if flags as u64 & CLONE_PARENT_SETTID != 0 {
            return Err(Errno::EINVAL);
        }
        ptid
    } else {
        0
    };
    clone_with(flags, stack, ptid, tls, ctid, pidfd_at, tf)
}

/// clone and clone3: `pidfd_at` is where `CLONE_PIDFD` puts the child's pidfd.
fn clone_with(
    flags: usize,
    stack: usize,
    ptid: usize,
    tls: usize,
    ctid: usize,
    pidfd_at: usize,
    tf: &TrapFrame,
) -> SysResult {
    use abi::fcntl::{
        CLONE_CHILD_CLEARTID, CLONE_CHILD_SETTID, CLONE_DETACHED, CLONE_FILES, CLONE_FS,
        CLONE_PARENT_SETTID, CLONE_PIDFD, CLONE_SETTLS, CLONE_SIGHAND, CLONE_SYSVSEM, CLONE_THREAD,
        CLONE_VFORK, CLONE_VM,
    };
    let flags = flags as u64;
    let exit_signal = flags & 0xff;
    // Processes: fork (glibc's passes CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID) and vfork
    // (CLONE_VFORK, with or without CLONE_VM): the caller sleeps until the child execs or
    // exits, as Linux's. The child still gets a copy-on-write copy of the memory rather than
    // the parent's own: an address space is a value each process owns under its lock (its
    // `satp` mirrored beside it for the scheduler, its file mappings and the
    // `readers_away`/`space_changing` counts kept per process), so two processes cannot
    // share one without making it a shared, separately locked object everywhere it is
    // reached. A program that follows vfork's rules (the child only execs or _exits) cannot
    // tell the copy apart; one whose child writes to memory for the parent to read can.
    // Threads:
    // CLONE_THREAD, which needs CLONE_SIGHAND and CLONE_VM (EINVAL otherwise, as Linux),
    // and, here, CLONE_FILES and CLONE_FS too (a thread with its own descriptor table or
    // cwd is ENOSYS: they belong to the process). CLONE_SYSVSEM has nothing to share: there
    // are no System V semaphores. A process sharing its parent's memory without being a
    // thread (CLONE_VM alone) is ENOSYS.
    let known = CLONE_VM
        | CLONE_VFORK
        | CLONE_FS
        | CLONE_FILES
        | CLONE_SIGHAND
        | CLONE_THREAD
        | CLONE_SYSVSEM
        | CLONE_SETTLS
        | CLONE_PARENT_SETTID
        | CLONE_CHILD_CLEARTID
        | CLONE_DETACHED
        | CLONE_CHILD_SETTID
        | CLONE_PIDFD;
    if flags & !0xff & !known != 0 {
        return Err(Errno::EINVAL);
    }
    // A pidfd names a process here: not of a thread (PIDFD_THREAD is not built), nor with
    // the obsolete CLONE_DETACHED (Linux's EINVAL).
    let pidfd = flags & CLONE_PIDFD != 0;
    if pidfd && flags & (CLONE_THREAD | CLONE_DETACHED) != 0 {
        return Err(Errno::EINVAL);
    }
    // Linux stores the pidfd before the child exists, so a bad address fails the clone.
    if pidfd {
        super::args::copy_out(pidfd_at, &(-1i32).to_le_bytes())?;
    }
    let thread = flags & CLONE_THREAD != 0;
    if thread && flags & CLONE_SIGHAND == 0 || flags & CLONE_SIGHAND != 0 && flags & CLONE_VM == 0 {
        return Err(Errno::EINVAL);
    }
    if thread {
        if flags & (CLONE_FILES | CLONE_FS) != CLONE_FILES | CLONE_FS || flags & CLONE_VFORK != 0 {
            return Err(Errno::ENOSYS);
        }
    } else {
        if flags & CLONE_VM != 0 && flags & CLONE_VFORK == 0 {
            return Err(Errno::ENOSYS);
        }
        if flags & (CLONE_FILES | CLONE_FS | CLONE_SIGHAND) != 0 {
            return Err(Errno::ENOSYS);
        }
        if exit_signal != 0 && exit_signal != abi::fcntl::SIGCHLD {
            return Err(Errno::EINVAL);
        }
    }
    let mut child_tf = tf.clone();
    if stack != 0 {
        child_tf.regs[2] = stack;
    }
    if flags & CLONE_SETTLS != 0 {
        child_tf.regs[4] = tls;
    }
    let clear_tid = if flags & CLONE_CHILD_CLEARTID != 0 {
        ctid
    } else {
        0
    };
    let vfork = flags & CLONE_VFORK != 0;
    // The ids are written before the child can run, as Linux does (see `task::spawn_thread`);
    // a bad address there is ignored, as Linux's `put_user` results are.
    let ids = |t: &alloc::sync::Arc<task::Thread>| {
        let tid = (t.tid as u32).to_le_bytes();
        if flags & CLONE_PARENT_SETTID != 0 {
            let _ = super::args::copy_out(ptid, &tid);
        }
        if flags & CLONE_CHILD_SETTID != 0 {
            if thread {
                let _ = super::args::copy_out(ctid, &tid);
            } else {
                let _ = uaccess::copy_out(&mut t.process.inner.lock().space, ctid, &tid);
            }
        }
        if !thread && clear_tid != 0 {
            // The child process's one thread: its word is in its own copy of the memory.
            t.inner.lock().clear_child_tid = clear_tid;
        }
    };
    let id = if thread {
        task::spawn_thread(&child_tf, clear_tid, ids)?
    } else {
        task::fork(&child_tf, vfork, ids)?
    };
    if pidfd {
        // The child exists: a failure here (no descriptor left) is the clone's, as the
        // child runs on (Linux reserves the descriptor first; the caller sees EMFILE).
        let child = task::find(id).ok_or(Errno::ESRCH)?;
        let fd = crate::ipc::pidfd::install(child, 0)?;
        let _ = super::args::copy_out(pidfd_at, &fd.to_le_bytes());
    }
    Ok(id)
}

/// clone3(args, size): `struct clone_args` (64 bytes in its first version; 80 with `set_tid`,
/// 88 with `cgroup`; longer structures are accepted if what we do not know is zero, else
/// E2BIG), checked as Linux checks it, then done as `clone` with the stack's top as the new
/// stack pointer. `CLONE_CLEAR_SIGHAND` gives the child its default signal actions (ignored
/// signals stay ignored). Choosing the child's tid (`set_tid`) and `CLONE_INTO_CGROUP`
/// (no cgroups here) are EINVAL; `CLONE_PIDFD` puts the child's pidfd at `pidfd`.
pub fn sys_clone3(uargs: usize, size: usize, tf: &TrapFrame) -> SysResult {
    use abi::fcntl::{CLONE_DETACHED, CLONE_SIGHAND, CLONE_THREAD, CLONE_VFORK};
    const VER0: usize = 64;
    const KNOWN: usize = 88;
    const CLONE_PARENT: u64 = 0x8000;
    const CLONE_CLEAR_SIGHAND: u64 = 1 << 32;
    const CLONE_INTO_CGROUP: u64 = 1 << 33;
    if size < VER0 {
        return Err(Errno::EINVAL);
    }
    if size > crate::mm::PAGE_SIZE {
        return Err(Errno::E2BIG);
    }
    let mut raw = alloc::vec![0u8; size.max(KNOWN)];
    super::args::copy_in(uargs, &mut raw[..size])?;
    if raw[KNOWN..].iter().any(|&b| b != 0) {
        return Err(Errno::E2BIG);
    }
    let w = |i: usize| u64::from_le_bytes(raw[i * 8..i * 8 + 8].try_into().unwrap_or([0; 8]));
    let (flags, pidfd, child_tid, parent_tid, exit_signal) = (w(0), w(1), w(2), w(3), w(4));
    let (stack, stack_size, tls, set_tid, set_tid_size) = (w(5), w(6), w(7), w(8), w(9));
    if set_tid_size > 32 || (set_tid == 0) != (set_tid_size == 0) {
        return Err(Errno::EINVAL);
    }
    if exit_signal & !0xff != 0 || flags & (CLONE_DETACHED | 0xff) != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & (CLONE_THREAD | CLONE_PARENT) != 0 && exit_signal != 0 {
        return Err(Errno::EINVAL);
    }
    if (stack == 0) != (stack_size == 0) {
        return Err(Errno::EINVAL);
    }
    if flags & CLONE_CLEAR_SIGHAND != 0 && flags & CLONE_SIGHAND != 0 {
        return Err(Errno::EINVAL);
    }
    if set_tid_size != 0 || flags & (CLONE_INTO_CGROUP | CLONE_PARENT) != 0 {
        return Err(Errno::EINVAL);
    }
    let legacy = (flags & !CLONE_CLEAR_SIGHAND & 0xffff_ffff) | exit_signal;
    let Some(top) = stack.checked_add(stack_size) else {
        return Err(Errno::EINVAL);
    };
    let (legacy, top) = (legacy as usize, top as usize);
    let clone = || {
        clone_with(
            legacy,
            top,
            parent_tid as usize,
            tls as usize,
            child_tid as usize,
            pidfd as usize,
            tf,
        )
    };
    // A fork shares every private page copy-on-write: not while a sibling reads into one.
    let cloned = if flags & CLONE_THREAD == 0 {
        task::changing_space(clone)
    } else {
        clone()
    };
    if let (Ok(id), true) = (&cloned, flags & CLONE_CLEAR_SIGHAND != 0) {
        if let Some(child) = task::find(*id) {
            child.inner.lock().sig.reset_for_exec();
        }
    }
    if flags & CLONE_VFORK != 0 {
        return finish_vfork(legacy, cloned);
    }
    cloned
}

/// After a successful clone with `CLONE_VFORK` in `flags`: sleep until the child `id` has
/// execed or exited (the dispatcher calls it outside `changing_space`, so the caller's other
/// threads are not held up meanwhile).
pub fn finish_vfork(flags: usize, cloned: SysResult) -> SysResult {
    if let Ok(id) = cloned {
        if flags as u64 & abi::fcntl::CLONE_VFORK != 0 {
            task::wait_vfork_done(id);
        }
    }
    cloned
}

/// Read a NULL-terminated array of string pointers (argv, envp).
fn read_str_array(ptr: usize) -> Result<Vec<String>, Errno> {
    let mut out = Vec::new();
    if ptr == 0 {
        return Ok(out);
    }
    let mut total = 0;
    loop {
        if out.len() >= 4096 {
            return Err(Errno::E2BIG);
        }
        let p = with_space(|s| uaccess::read_u64(s, ptr + out.len() * 8))? as usize;
        if p == 0 {
            return Ok(out);
        }
        let s = with_space(|s| uaccess::read_cstr(s, p, 128 * 1024))?;
        total += s.len() + 1;
        if total > 256 * 1024 {
            return Err(Errno::E2BIG);
        }
        out.push(s);
    }
}

pub fn sys_execve(path_ptr: usize, argv_ptr: usize, envp_ptr: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let mut argv = read_str_array(argv_ptr)?;
    // An empty argv gets one empty argument, as Linux (5.18 on) gives it, so the program's
    // argv[0] is never NULL.
    if argv.is_empty() {
        argv.push(alloc::string::String::new());
    }
    let envp = read_str_array(envp_ptr)?;
    task::exec(&path, argv, envp, crate::fs::open_exec)?;
    Ok(0)
}

pub fn sys_wait4(pid: isize, wstatus: usize, options: u32, rusage: usize) -> SysResult {
    const WNOHANG: u32 = 1;
    const WUNTRACED: u32 = 2;
    const WCONTINUED: u32 = 8;
    const WALL: u32 = 0x4000_0000;
    const WCLONE: u32 = 0x8000_0000;
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    // Linux: -INT_MIN names no process group.
    if pid as i32 == i32::MIN {
        return Err(Errno::ESRCH);
    }
    if wstatus != 0 {
        // Check the status pointer before reaping, so a bad pointer loses no child.
        with_space(|s| uaccess::segments(s, wstatus, 4, crate::mm::area::Access::Write))?;
    }
    if rusage != 0 {
        with_space(|s| uaccess::segments(s, rusage, 144, crate::mm::area::Access::Write))?;
    }
    let which = match pid {
        -1 => task::WaitFor::Any,
        0 => task::WaitFor::Pgid(task::with_current(|p| p.pgid)),
        p if p < 0 => task::WaitFor::Pgid(p.unsigned_abs()),
        p => task::WaitFor::Pid(p as usize),
    };
    let jobs = (true, options & WUNTRACED != 0, options & WCONTINUED != 0);
    match task::wait_child(which, jobs, options & WNOHANG != 0, true)? {
        None => Ok(0),
        Some(w) => {
            if wstatus != 0 {
                // A stop is `sig << 8 | 0x7f`, a continue 0xffff (Linux's encoding).
                let word = match w.report {
                    Some(task::JobReport::Stopped(sig)) => (sig << 8) | 0x7f,
                    Some(task::JobReport::Continued) => 0xffff,
                    None => w.status.wait_status(),
                };
                super::args::copy_out(wstatus, &word.to_le_bytes())?;
            }
            if rusage != 0 {
                super::args::copy_out(rusage, &rusage_of(w.cpu, w.rss_peak))?;
            }
            Ok(w.pid)
        }
    }
}

/// `struct rusage` (144 bytes) for `cpu` and a peak of `rss_pages` resident pages: ru_utime
/// and ru_stime (timevals), ru_maxrss (KiB); the rest zero.
pub(super) fn rusage_of(cpu: crate::task::CpuTime, rss_pages: usize) -> [u8; 144] {
    let mut b = [0u8; 144];
    let kib = (rss_pages * crate::mm::PAGE_SIZE / 1024) as u64;
    b[32..40].copy_from_slice(&kib.to_le_bytes());
    for (at, ns) in [(0, cpu.user_ns()), (16, cpu.sys_ns)] {
        b[at..at + 8].copy_from_slice(&(ns / 1_000_000_000).to_le_bytes());
        b[at + 8..at + 16].copy_from_slice(&(ns % 1_000_000_000 / 1000).to_le_bytes());
    }
    b
}

/// waitid: wait for a child that `idtype`/`id` selects (P_ALL, P_PID, P_PGID, P_PIDFD) to
/// exit, and describe it in the `siginfo_t` at `infop` as Linux does (`si_signo` SIGCHLD,
/// `si_code` CLD_EXITED or CLD_KILLED, `si_pid`, `si_uid`, `si_status`). WNOWAIT leaves the
/// child to be waited for again; WNOHANG with nothing ready returns 0 with a zeroed
/// `siginfo_t` (`si_pid` 0). WSTOPPED and WCONTINUED report a child's stop (CLD_STOPPED, the
/// signal) and continue (CLD_CONTINUED, SIGCONT) once (`task::jobctl`).
pub fn sys_waitid(
    idtype: usize,
    id: usize,
    infop: usize,
    options: u32,
    rusage: usize,
) -> SysResult {
    const WNOHANG: u32 = 1;
    const WSTOPPED: u32 = 2;
    const WEXITED: u32 = 4;
    const WCONTINUED: u32 = 8;
    const WNOWAIT: u32 = 0x0100_0000;
    const WNOTHREAD: u32 = 0x2000_0000;
    const WALL: u32 = 0x4000_0000;
    const WCLONE: u32 = 0x8000_0000;
    const P_ALL: usize = 0;
    const P_PID: usize = 1;
    const P_PGID: usize = 2;
    const P_PIDFD: usize = 3;
    use task::siginfo::{SigInfo, CLD_DUMPED, CLD_EXITED, CLD_KILLED, SIGINFO_BYTES};
    let known = WNOHANG | WSTOPPED | WEXITED | WCONTINUED | WNOWAIT | WNOTHREAD | WALL | WCLONE;
    if options & !known != 0 || options & (WEXITED | WSTOPPED | WCONTINUED) == 0 {
        return Err(Errno::EINVAL);
    }
    let id = id as u32 as i32;
    let mut nohang = options & WNOHANG != 0;
    let mut pidfd_nonblock = false;
    let which = match idtype {
        P_ALL => task::WaitFor::Any,
        P_PID if id > 0 => task::WaitFor::Pid(id as usize),
        P_PGID if id == 0 => task::WaitFor::Pgid(task::with_current(|p| p.pgid)),
        P_PGID if id > 0 => task::WaitFor::Pgid(id as usize),
        P_PIDFD => {
            let f = task::with_current(|p| p.files.fds().get(id))?;
            let pidfd = f
                .loc
                .node
                .as_any()
                .downcast_ref::<crate::ipc::pidfd::PidFd>()
                .ok_or(Errno::EBADF)?;
            let pid = pidfd.process.pid;
            let mine = task::with_current(|p| p.children.iter().any(|c| c.pid == pid));
            if !mine {
                return Err(Errno::ECHILD);
            }
            // A non-blocking pidfd (PIDFD_NONBLOCK) makes the wait non-blocking: EAGAIN
            // while the process runs.
            pidfd_nonblock = *f.status_flags.lock() & abi::fcntl::O_NONBLOCK != 0;
            nohang |= pidfd_nonblock;
            task::WaitFor::Pid(pid)
        }
        _ => return Err(Errno::EINVAL),
    };
    if infop != 0 {
        with_space(|s| uaccess::segments(s, infop, 128, crate::mm::area::Access::Write))?;
    }
    let jobs = (
        options & WEXITED != 0,
        options & WSTOPPED != 0,
        options & WCONTINUED != 0,
    );
    let waited = task::wait_child(which, jobs, nohang, options & WNOWAIT == 0)?;
    if waited.is_none() && pidfd_nonblock {
        return Err(Errno::EAGAIN);
    }
    let mut info = [0u8; SIGINFO_BYTES];
    if let Some(w) = waited {
        use task::siginfo::{CLD_CONTINUED, CLD_STOPPED};
        let (code, status) = match (w.report, w.status) {
            (Some(task::JobReport::Stopped(sig)), _) => (CLD_STOPPED, sig),
            (Some(task::JobReport::Continued), _) => (CLD_CONTINUED, 18),
            (None, task::ExitStatus::Exited(c)) => (CLD_EXITED, c & 0xff),
            (None, task::ExitStatus::Signaled(s)) => (CLD_KILLED, s),
            (None, task::ExitStatus::Dumped(s)) => (CLD_DUMPED, s),
        };
        // Linux's waitid fills signo, code, pid, uid and status; the times stay 0.
        info = SigInfo::child(code, w.pid, w.uid, status, 0, 0).to_user();
        if rusage != 0 {
            super::args::copy_out(rusage, &rusage_of(w.cpu, w.rss_peak))?;
        }
    }
    if infop != 0 {
        super::args::copy_out(infop, &info)?;
    }
    Ok(0)
}

/// setpgid: move process `pid` (0: the caller) into group `pgid` (0: its own pid). Linux's
/// rules: only the caller or one of its children that has not run execve since its fork
/// (EACCES), not a session leader, within one session.
pub fn sys_setpgid(pid: isize, pgid: isize) -> SysResult {
    if pgid < 0 {
        return Err(Errno::EINVAL);
    }
    let me = task::current_pid();
    let pid = if pid == 0 { me } else { pid as usize };
    let target = task::find(pid).ok_or(Errno::ESRCH)?;
    let (my_sid, is_child) = {
        let my = task::with_current(|p| (p.sid, p.children.iter().any(|c| c.pid == pid)));
        my
    };
    if pid != me && !is_child {
        return Err(Errno::ESRCH);
    }
    let pgid = if pgid == 0 { pid } else { pgid as usize };
    let mut t = target.inner.lock();
    if t.sid != my_sid {
        return Err(Errno::EPERM);
    }
    if pid != me && t.execed {
        return Err(Errno::EACCES);
    }
    if t.sid == pid {
        return Err(Errno::EPERM); // a session leader
    }
    if pgid != pid {
        drop(t);
        let same_session = task::processes_in_group(pgid)
            .iter()
            .any(|p| p.pid == pid || p.inner.lock().sid == my_sid);
        if !same_session {
            return Err(Errno::EPERM);
        }
        t = target.inner.lock();
    }
    t.pgid = pgid;
    Ok(0)
}

fn proc_field(pid: isize, f: impl Fn(&task::ProcInner) -> usize) -> SysResult {
    if pid < 0 {
        return Err(Errno::ESRCH);
    }
    if pid == 0 {
        return Ok(task::with_current(|p| f(p)));
    }
    let p = task::find(pid as usize).ok_or(Errno::ESRCH)?;
    let v = f(&p.inner.lock());
    Ok(v)
}

pub fn sys_getpgid(pid: isize) -> SysResult {
    proc_field(pid, |p| p.pgid)
}

pub fn sys_getsid(pid: isize) -> SysResult {
    proc_field(pid, |p| p.sid)
}

/// setsid: a new session and group led by the caller (EPERM for a group leader).
pub fn sys_setsid() -> SysResult {
    let me = task::current_pid();
    if !task::processes_in_group(me).is_empty() {
        return Err(Errno::EPERM);
    }
    task::with_current(|p| {
        p.sid = me;
        p.pgid = me;
    });
    Ok(me)
}

/// The id arguments of the set*id calls: -1 (as u32) means "unchanged".
fn id(a: usize) -> u32 {
    a as u32
}

pub fn sys_setuid(uid: usize) -> SysResult {
    task::with_current(|p| p.cred.setuid(id(uid))).map(|_| 0)
}
pub fn sys_setgid(gid: usize) -> SysResult {
    task::with_current(|p| p.cred.setgid(id(gid))).map(|_| 0)
}
pub fn sys_setreuid(r: usize, e: usize) -> SysResult {
    task::with_current(|p| p.cred.setreuid(id(r), id(e))).map(|_| 0)
}
pub fn sys_setregid(r: usize, e: usize) -> SysResult {
    task::with_current(|p| p.cred.setregid(id(r), id(e))).map(|_| 0)
}
pub fn sys_setresuid(r: usize, e: usize, s: usize) -> SysResult {
    task::with_current(|p| p.cred.setresuid(id(r), id(e), id(s))).map(|_| 0)
}
pub fn sys_setresgid(r: usize, e: usize, s: usize) -> SysResult {
    task::with_current(|p| p.cred.setresgid(id(r), id(e), id(s))).map(|_| 0)
}

fn put_ids(ptrs: [usize; 3], ids: [u32; 3]) -> SysResult {
    for (ptr, v) in ptrs.iter().zip(ids) {
        super::args::copy_out(*ptr, &v.to_le_bytes())?;
    }
    Ok(0)
}

pub fn sys_getresuid(r: usize, e: usize, s: usize) -> SysResult {
    let c = task::with_current(|p| p.cred.clone());
    put_ids([r, e, s], [c.uid, c.euid, c.suid])
}
pub fn sys_getresgid(r: usize, e: usize, s: usize) -> SysResult {
    let c = task::with_current(|p| p.cred.clone());
    put_ids([r, e, s], [c.gid, c.egid, c.sgid])
}

pub fn sys_getid(which: usize) -> SysResult {
    let c = task::with_current(|p| p.cred.clone());
    Ok(match which {
        abi::syscall::SYS_GETUID => c.uid,
        abi::syscall::SYS_GETEUID => c.euid,
        abi::syscall::SYS_GETGID => c.gid,
        _ => c.egid,
    } as usize)
}

/// setfsuid/setfsgid: always return the old id; change it when allowed (root, or one of the
/// caller's ids).
pub fn sys_setfsid(new: usize, group: bool) -> SysResult {
    task::with_current(|p| {
        let c = &mut p.cred;
        let old = if group { c.fsgid } else { c.fsuid };
        let new = id(new);
        let allowed = c.euid == 0
            || if group {
                [c.gid, c.egid, c.sgid, c.fsgid].contains(&new)
            } else {
                [c.uid, c.euid, c.suid, c.fsuid].contains(&new)
            };
        if allowed && new != u32::MAX {
            if group {
                c.fsgid = new;
            } else {
                c.fsuid = new;
                c.caps.fix_setfsuid(old, new);
            }
        }
        Ok(old as usize)
    })
}

pub fn sys_getgroups(size: usize, list: usize) -> SysResult {
    let groups = task::with_current(|p| p.cred.groups.clone());
    if size == 0 {
        return Ok(groups.len());
    }
    if size < groups.len() || size > (i32::MAX as usize) {
        return Err(Errno::EINVAL);
    }
    let bytes: Vec<u8> = groups.iter().flat_map(|g| g.to_le_bytes()).collect();
    super::args::copy_out(list, &bytes)?;
    Ok(groups.len())
}

pub fn sys_setgroups(size: usize, list: usize) -> SysResult {
    const NGROUPS_MAX: usize = 65536;
    if size > NGROUPS_MAX {
        return Err(Errno::EINVAL);
    }
    if task::with_current(|p| p.cred.euid) != 0 {
        return Err(Errno::EPERM);
    }
    let mut bytes = alloc::vec![0u8; size * 4];
    super::args::copy_in(list, &mut bytes)?;
    let mut groups: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    groups.sort_unstable();
    groups.dedup();
    task::with_current(|p| p.cred.groups = groups);
    Ok(0)
}

/// Resource limits: (soft, hard) per resource, the same for every process except those each
/// process keeps and the kernel enforces (`task::policy::Limits`: FSIZE, MEMLOCK, NICE,
/// RTPRIO, SIGPENDING). Setting the others is accepted with Linux's checks but changes nothing.
const RLIMIT_NOFILE: usize = 7;

pub(super) fn limit_of(resource: usize) -> Option<(u64, u64)> {
    const INF: u64 = u64::MAX;
    Some(match resource {
        0 => (INF, INF),                                      // CPU
        1 => (INF, INF),                                      // FSIZE
        2 => (INF, INF),                                      // DATA
        3 => (crate::mm::addr_space::STACK_SIZE as u64, INF), // STACK
        4 => (0, INF),                                        // CORE
        5 => (INF, INF),                                      // RSS
        6 => (4096, 4096),                                    // NPROC
        7 => (
            crate::fs::file::MAX_FDS as u64,
            crate::fs::file::MAX_FDS as u64,
        ), // NOFILE
        8 => (8 << 20, 8 << 20),                              // MEMLOCK
        9 => (INF, INF),                                      // AS
        10 => (INF, INF),                                     // LOCKS
        11 => (INF, INF),                                     // SIGPENDING
        12 => (819200, 819200),                               // MSGQUEUE
        13 => (0, 0),                                         // NICE
        14 => (0, 0),                                         // RTPRIO
        15 => (INF, INF),                                     // RTTIME
        _ => return None,
    })
}

pub fn sys_prlimit64(pid: usize, resource: usize, new: usize, old: usize) -> SysResult {
    let target = if pid == 0 {
        task::current_process()
    } else {
        task::find(pid).ok_or(Errno::ESRCH)?
    };
    let (mut soft, mut hard) = limit_of(resource).ok_or(Errno::EINVAL)?;
    // Another process's limits: only for a caller of the same user (or root), as Linux's
    // check without CAP_SYS_RESOURCE.
    if pid != 0 && pid != task::current_pid() {
        let me = task::current_cred();
        let c = target.inner.lock().cred.clone();
        let same = [c.uid, c.euid, c.suid].iter().all(|&u| u == me.uid)
            && [c.gid, c.egid, c.sgid].iter().all(|&g| g == me.gid);
        if me.euid != 0 && !same {
            return Err(Errno::EPERM);
        }
    }
    {
        let mut t = target.inner.lock();
        if let Some(&mut kept) = t.limits.get_mut(resource) {
            (soft, hard) = kept;
        } else if let Some(kept) = t.limits.other[resource] {
            (soft, hard) = kept;
        }
    }
    let mut wanted = None;
    if new != 0 {
        let mut b = [0u8; 16];
        super::args::copy_in(new, &mut b)?;
        let ns = u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8]));
        let nh = u64::from_le_bytes(b[8..].try_into().unwrap_or([0; 8]));
        if ns > nh {
            return Err(Errno::EINVAL);
        }
        if nh > hard && task::with_current(|p| p.cred.euid) != 0 {
            return Err(Errno::EPERM);
        }
        // No descriptor limit above nr_open, for root too (Linux's sysctl_nr_open check).
        if resource == RLIMIT_NOFILE && nh > crate::fs::file::MAX_FDS as u64 {
            return Err(Errno::EPERM);
        }
        wanted = Some((ns, nh));
    }
    // The old values are those before the change (Linux copies them out after it).
    if let Some(limit) = wanted {
        let mut t = target.inner.lock();
        if let Some(kept) = t.limits.get_mut(resource) {
            *kept = limit;
        } else {
            t.limits.other[resource] = Some(limit);
        }
        if resource == RLIMIT_NOFILE {
            t.files.fds().set_limit(limit.0);
        }
    }
    if old != 0 {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&soft.to_le_bytes());
        b[8..].copy_from_slice(&hard.to_le_bytes());
        super::args::copy_out(old, &b)?;
    }
    Ok(0)
}

pub fn sys_getrlimit(resource: usize, old: usize) -> SysResult {
    sys_prlimit64(0, resource, 0, old)
}

pub fn sys_setrlimit(resource: usize, new: usize) -> SysResult {
    sys_prlimit64(0, resource, new, 0)
}

const PRIO_PROCESS: usize = 0;
const PRIO_PGRP: usize = 1;
const PRIO_USER: usize = 2;

/// The processes getpriority/setpriority name: `who` 0 is the caller (its group, its user).
fn prio_targets(
    which: usize,
    who: usize,
) -> Result<alloc::vec::Vec<alloc::sync::Arc<task::Process>>, Errno> {
    let me = task::current_process();
    let v: alloc::vec::Vec<_> = match which {
        PRIO_PROCESS if who == 0 => alloc::vec![me],
        PRIO_PROCESS => task::find(who).into_iter().collect(),
        PRIO_PGRP => {
            let pgid = if who == 0 { me.inner.lock().pgid } else { who };
            task::processes_in_group(pgid)
        }
        PRIO_USER => {
            let uid = if who == 0 {
                me.inner.lock().cred.uid as usize
            } else {
                who
            };
            task::all_processes()
                .into_iter()
                .filter(|p| p.inner.lock().cred.uid as usize == uid)
                .collect()
        }
        _ => return Err(Errno::EINVAL),
    };
    if v.is_empty() {
        return Err(Errno::ESRCH);
    }
    Ok(v)
}

/// getpriority: the highest priority (lowest nice) among the targets, as `20 - nice` (the
/// raw system call's form; libc turns it back into a nice value).
pub fn sys_getpriority(which: usize, who: usize) -> SysResult {
    let nice = prio_targets(which, who)?
        .iter()
        .map(|p| p.inner.lock().nice)
        .min()
        .unwrap_or(0);
    Ok((20 - nice) as usize)
}

/// setpriority: set the nice value (clamped to -20..=19) of every target. Another user's
/// process needs CAP_SYS_NICE (EPERM); lowering the value needs it too, or a target's
/// RLIMIT_NICE that allows it (EACCES).
pub fn sys_setpriority(which: usize, who: usize, prio: usize) -> SysResult {
    let nice = (prio as i32).clamp(-20, 19);
    let cred = task::current_cred();
    for p in prio_targets(which, who)? {
        let mut t = p.inner.lock();
        if !may_renice(&cred, &t.cred) {
            return Err(Errno::EPERM);
        }
        if nice < t.nice && !can_nice(&cred, &t, nice) {
            return Err(Errno::EACCES);
        }
        t.nice = nice;
    }
    Ok(0)
}

/// May a caller with `cred` change the priority or policy of a process with `target`'s
/// credentials (Linux's `set_one_prio_perm`, `check_same_owner`)?
pub(super) fn may_renice(cred: &task::cred::Cred, target: &task::cred::Cred) -> bool {
    cred.caps.has(CAP_SYS_NICE) || cred.euid == target.uid || cred.euid == target.euid
}

/// May the caller set `t`'s nice value to `nice` (Linux's `can_nice`): with CAP_SYS_NICE,
/// or when `20 - nice` is within `t`'s RLIMIT_NICE.
pub(super) fn can_nice(cred: &task::cred::Cred, t: &task::ProcInner, nice: i32) -> bool {
    cred.caps.has(CAP_SYS_NICE) || (20 - nice) as u64 <= t.limits.nice.0
}

const IOPRIO_CLASS_NONE: usize = 0;
const IOPRIO_CLASS_RT: usize = 1;
const IOPRIO_CLASS_BE: usize = 2;
const IOPRIO_CLASS_IDLE: usize = 3;
const CAP_SYS_ADMIN: u32 = 21;
pub(super) const CAP_SYS_NICE: u32 = 23;

/// ioprio_get/ioprio_set's `which` (IOPRIO_WHO_PROCESS 1, _PGRP 2, _USER 3) are
/// getpriority's PRIO_* plus one.
fn ioprio_targets(
    which: usize,
    who: usize,
) -> Result<alloc::vec::Vec<alloc::sync::Arc<task::Process>>, Errno> {
    prio_targets(which.checked_sub(1).ok_or(Errno::EINVAL)?, who)
}

/// ioprio_get: the priority of the target (of several, the highest: the lowest value).
pub fn sys_ioprio_get(which: usize, who: usize) -> SysResult {
    let best = ioprio_targets(which, who)?
        .iter()
        .map(|p| p.inner.lock().ioprio)
        .min()
        .unwrap_or(0);
    Ok(best as usize)
}

/// ioprio_set: class (bits 13..15) and level (0..=7); the real-time class needs
/// CAP_SYS_NICE or CAP_SYS_ADMIN, another user's process the same rule as setpriority.
pub fn sys_ioprio_set(which: usize, who: usize, ioprio: usize) -> SysResult {
    if ioprio > u16::MAX as usize {
        return Err(Errno::EINVAL);
    }
    let (class, hint, level) = (ioprio >> 13, (ioprio >> 3) & 0x3ff, ioprio & 7);
    let cred = task::current_cred();
    match class {
        IOPRIO_CLASS_RT => {
            if !cred.caps.has(CAP_SYS_NICE) && !cred.caps.has(CAP_SYS_ADMIN) {
                return Err(Errno::EPERM);
            }
        }
        IOPRIO_CLASS_BE | IOPRIO_CLASS_IDLE => {}
        IOPRIO_CLASS_NONE if level == 0 => {}
        _ => return Err(Errno::EINVAL),
    }
    // Bits 3..12 (Linux 6.5's duration-limit hints) are a level of 8 or more here: EINVAL,
    // as Linux answered before hints.
    if hint != 0 {
        return Err(Errno::EINVAL);
    }
    for p in ioprio_targets(which, who)? {
        let mut t = p.inner.lock();
        if cred.euid != 0 && cred.euid != t.cred.uid && cred.euid != t.cred.euid {
            return Err(Errno::EPERM);
        }
        t.ioprio = ioprio as u16;
    }
    Ok(0)
}
