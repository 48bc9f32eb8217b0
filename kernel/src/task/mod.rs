//! Processes and the scheduler (one hart).
//!
//! A process owns an address space, a trap frame, a kernel stack, an fd table and a cwd.
//! The scheduler runs on the boot stack and switches to a process's kernel context; the
//! process returns to it by `yield_now` (timer preemption from user mode, `sched_yield`),
//! `block_current` (wait4) or `exit_current`. Kernel code runs with interrupts off, so
//! nothing else runs between a check and the matching block: no lost wake-ups.
//!
//! Lock order: `SCHED`, then a process's `inner`, then (parent before child) another's.
//! No lock is held across a context switch.

pub mod cred;
pub mod futex;
pub mod ps;
pub mod signal;
mod switch;
pub mod wait;

use alloc::boxed::Box;
use alloc::collections::{BTreeMap, VecDeque};
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;
use core::sync::atomic::{AtomicPtr, AtomicU64};

use abi::Errno;
use spin::Mutex;

use crate::arch::trap::TrapFrame;
use crate::fs::file::FdTable;
use crate::mm::addr_space::AddrSpace;
use switch::TaskContext;

pub const TIME_SLICE_MS: u64 = 10;
const KERNEL_STACK_SIZE: usize = 128 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Exited(i32),
    Signaled(i32),
}

impl ExitStatus {
    /// The `wstatus` word of wait4.
    pub fn wait_status(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => (c & 0xff) << 8,
            ExitStatus::Signaled(s) => s & 0x7f,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Ready,
    Running,
    /// Sleeping (wait4, a pipe, the terminal, a timer) until `wake`.
    Waiting,
    Zombie(ExitStatus),
}

/// The parts of a process that syscalls use.
pub struct ProcInner {
    pub state: State,
    pub ppid: usize,
    pub children: Vec<Arc<Process>>,
    pub space: AddrSpace,
    pub tf: Box<TrapFrame>,
    pub files: FdTable,
    /// Absolute, canonical working directory.
    pub cwd: String,
    pub umask: u32,
    /// Signal actions and mask (the pending set is `Process::sig_pending`).
    pub sig: signal::SigState,
    /// Process group and session.
    pub pgid: usize,
    pub sid: usize,
    pub cred: cred::Cred,
    /// CPU time this process ran, and that of its reaped children (times, getrusage).
    pub cpu_ns: u64,
    pub children_cpu_ns: u64,
    /// Nice value (-20..=19; getpriority/setpriority). Inherited by fork; the round-robin
    /// scheduler does not weigh it yet.
    pub nice: i32,
    /// The program's name (`comm`: the executable's file name, at most 15 bytes) and its
    /// arguments as /proc/<pid>/cmdline gives them (each followed by a NUL byte).
    pub comm: String,
    pub cmdline: Vec<u8>,
    kstack: Box<[u8]>,
}

/// `comm` and `cmdline` of a program run as `path` with `argv`.
fn names_of(path: &str, argv: &[String]) -> (String, Vec<u8>) {
    let base = path.rsplit('/').next().unwrap_or(path);
    let mut end = base.len().min(15);
    while !base.is_char_boundary(end) {
        end -= 1;
    }
    let mut cmdline = Vec::new();
    for a in argv {
        cmdline.extend_from_slice(a.as_bytes());
        cmdline.push(0);
    }
    (String::from(&base[..end]), cmdline)
}

pub struct Process {
    pub pid: usize,
    pub inner: Mutex<ProcInner>,
    /// Pending signals (bit `n - 1` for signal `n`), readable without the lock.
    pub sig_pending: AtomicU64,
    ctx: Mutex<TaskContext>,
}

struct Scheduler {
    ready: VecDeque<Arc<Process>>,
    current: Option<Arc<Process>>,
    /// Every live (not yet reaped) process.
    all: BTreeMap<usize, Arc<Process>>,
    next_pid: usize,
}

static SCHED: Mutex<Scheduler> = Mutex::new(Scheduler {
    ready: VecDeque::new(),
    current: None,
    all: BTreeMap::new(),
    next_pid: 1,
});
static IDLE_CTX: Mutex<TaskContext> = Mutex::new(TaskContext::zero());
/// The process in `SCHED.current`, for [`with_current`] on the system-call path without the
/// scheduler lock or a reference-count round trip (each an atomic operation, which QEMU
/// charges for). Set and cleared by [`run`] together with `SCHED.current`, whose `Arc` keeps
/// the process alive for exactly that time; null while the scheduler itself runs.
static CURRENT: AtomicPtr<Process> = AtomicPtr::new(core::ptr::null_mut());

/// A kernel stack, or ENOMEM when the heap cannot give one (a fork bomb must not abort the
/// kernel: the allocation is fallible).
fn new_kstack() -> Result<Box<[u8]>, Errno> {
    // The stack, and the few small pieces of a new process (its `Process`, trap frame,
    // descriptor table and strings) that come from the heap's reserve.
    crate::mm::heap::admit(PROCESS_SMALL_BYTES)?;
    Ok(crate::mm::heap::try_zeroed(KERNEL_STACK_SIZE)?.into_boxed_slice())
}

/// About what a process costs the heap besides its kernel stack (checked at fork, so the
/// reserve can hold MAX_PROCS of them: see `mm::heap`).
const PROCESS_SMALL_BYTES: usize = 4096;

/// Most processes that may exist at once (RLIMIT_NPROC, as prlimit64 reports it): fork
/// beyond it is EAGAIN, as Linux answers.
pub const MAX_PROCS: usize = 4096;

fn kstack_top(k: &[u8]) -> usize {
    (k.as_ptr() as usize + k.len()) & !0xf
}

extern "C" fn first_entry() -> ! {
    return_to_user()
}

fn make_process(inner: ProcInner) -> Arc<Process> {
    let mut s = SCHED.lock();
    let pid = s.next_pid;
    s.next_pid += 1;
    let top = kstack_top(&inner.kstack);
    let p = Arc::new(Process {
        pid,
        inner: Mutex::new(inner),
        sig_pending: AtomicU64::new(0),
        ctx: Mutex::new(TaskContext::new(first_entry as *const () as usize, top)),
    });
    p.inner.lock().tf.kernel_sp = top;
    s.all.insert(pid, p.clone());
    s.ready.push_back(p.clone());
    p
}

/// The environment init starts with.
const INIT_ENV: [&str; 7] = [
    "HOME=/",
    "PATH=/bin:/usr/bin:/sbin",
    "TERM=vt100",
    "SHELL=/bin/sh",
    "USER=root",
    "LOGNAME=root",
    "PS1=\\w # ",
];

/// How many `#!` interpreters may chain (Linux: 4).
const MAX_SHEBANG_DEPTH: usize = 4;

/// The interpreter line of a script (`#!interp [arg]`), if `image` is one.
fn shebang(image: &[u8]) -> Result<Option<(String, Option<String>)>, Errno> {
    if !image.starts_with(b"#!") {
        return Ok(None);
    }
    let line_end = image
        .iter()
        .position(|&b| b == b'\n')
        .unwrap_or(image.len());
    let line = &image[2..line_end.min(256)];
    let line = core::str::from_utf8(line)
        .map_err(|_| Errno::ENOEXEC)?
        .trim();
    let (interp, arg) = match line.find([' ', '\t']) {
        Some(i) => (&line[..i], Some(line[i..].trim())),
        None => (line, None),
    };
    if interp.is_empty() {
        return Err(Errno::ENOEXEC);
    }
    Ok(Some((
        String::from(interp),
        arg.filter(|a| !a.is_empty()).map(String::from),
    )))
}

/// A new address space running the program at `path` (a static ELF executable, or a `#!`
/// script run by its interpreter): (space, entry, stack pointer).
fn load_program(
    cwd: &str,
    path: &str,
    mut argv: Vec<String>,
    envp: &[String],
    creds: &cred::Cred,
) -> Result<(AddrSpace, usize, usize), Errno> {
    let mut path = String::from(path);
    let mut image = crate::fs::read_whole_file(cwd, &path)?;
    for depth in 0.. {
        let Some((interp, arg)) = shebang(&image)? else {
            break;
        };
        if depth == MAX_SHEBANG_DEPTH {
            return Err(Errno::ELOOP);
        }
        let mut new_argv = alloc::vec![interp.clone()];
        new_argv.extend(arg);
        new_argv.push(path.clone());
        new_argv.extend(argv.into_iter().skip(1));
        argv = new_argv;
        image = crate::fs::read_whole_file(cwd, &interp)?;
        path = interp;
    }
    let mut space = AddrSpace::new()?;
    let elf = space.load_elf(&image)?;
    drop(image);
    let ids = crate::mm::addr_space::AuxIds {
        uid: creds.uid,
        euid: creds.euid,
        gid: creds.gid,
        egid: creds.egid,
    };
    let sp = space.setup_stack(&argv, envp, &path, &elf, ids)?;
    Ok((space, elf.entry, sp))
}

/// Create the first process from the executable at `path`.
pub fn spawn_init(path: &str, argv: Vec<String>) -> Result<(), Errno> {
    let env: Vec<String> = INIT_ENV.iter().map(|s| String::from(*s)).collect();
    let (comm, cmdline) = names_of(path, &argv);
    let (space, entry, sp) = load_program("/", path, argv, &env, &cred::Cred::default())?;
    let kstack = new_kstack()?;
    let tf = Box::new(TrapFrame::new_user(entry, sp, kstack_top(&kstack)));
    let files = FdTable::with_console()?;
    make_process(ProcInner {
        state: State::Ready,
        ppid: 0,
        children: Vec::new(),
        space,
        tf,
        files,
        cwd: String::from("/"),
        umask: 0o022,
        sig: signal::SigState::default(),
        pgid: 1,
        sid: 1,
        cred: cred::Cred::default(),
        cpu_ns: 0,
        children_cpu_ns: 0,
        nice: 0,
        comm,
        cmdline,
        kstack,
    });
    Ok(())
}

fn current() -> Arc<Process> {
    SCHED.lock().current.clone().expect("no current process")
}

pub fn current_pid() -> usize {
    SCHED.lock().current.as_ref().map_or(0, |p| p.pid)
}

/// Run `f` with the current process's state locked.
pub fn with_current<R>(f: impl FnOnce(&mut ProcInner) -> R) -> R {
    let p = CURRENT.load(Relaxed);
    assert!(!p.is_null(), "no current process");
    // SAFETY: `CURRENT` points at the process `SCHED.current` holds an `Arc` of; only `run`
    // drops that `Arc`, and it runs on this hart only after the process has switched away,
    // which no code does while inside `f` (it holds the process's lock).
    let p = unsafe { &*p };
    let mut inner = p.inner.lock();
    f(&mut inner)
}

/// The address of a context, for `switch` (the lock only guards against re-entrancy bugs:
/// contexts are touched by this hart alone).
fn ctx_ptr(ctx: &Mutex<TaskContext>) -> *mut TaskContext {
    let mut g = ctx.lock();
    &mut *g as *mut TaskContext
}

/// Switch from the current process to the scheduler.
fn switch_to_scheduler() {
    let p = current();
    let from: *mut TaskContext = ctx_ptr(&p.ctx);
    let to: *const TaskContext = ctx_ptr(&IDLE_CTX);
    drop(p);
    // SAFETY: both contexts live in statics or in a process kept alive by `SCHED.current`
    // (and `SCHED.all`) until the scheduler runs again; no lock is held across the switch and
    // nothing else runs on this hart meanwhile.
    unsafe { switch::switch(from, to) };
}

/// Give up the CPU; the process stays runnable.
pub fn yield_now() {
    {
        let mut s = SCHED.lock();
        let Some(p) = s.current.clone() else { return };
        p.inner.lock().state = State::Ready;
        s.ready.push_back(p);
    }
    switch_to_scheduler();
}

/// Sleep until a child exits (wait4).
pub fn block_current() {
    with_current(|p| p.state = State::Waiting);
    switch_to_scheduler();
}

/// Make a sleeping process runnable (no effect on one that is not sleeping).
pub fn wake(p: &Arc<Process>) {
    let mut s = SCHED.lock();
    let mut inner = p.inner.lock();
    if inner.state == State::Waiting {
        inner.state = State::Ready;
        drop(inner);
        s.ready.push_back(p.clone());
    }
}

/// Return to user mode in the current process, delivering its pending signals first.
pub fn return_to_user() -> ! {
    return_to_user_restarting(None)
}

/// As [`return_to_user`], after a system call that asked to be restarted
/// ([`signal::ERESTARTSYS`]) with `restart` = its original first argument.
pub fn return_to_user_restarting(restart: Option<usize>) -> ! {
    let tf: *mut TrapFrame = with_current(|p| &mut *p.tf as *mut TrapFrame);
    let me = CURRENT.load(Relaxed);
    // SAFETY: as in `with_current`: the current process outlives this call.
    if restart.is_some() || unsafe { &*me }.sig_pending.load(Relaxed) != 0 {
        // SAFETY: the frame belongs to the current process, which only this code touches now.
        signal::deliver(unsafe { &mut *tf }, restart);
    }
    // SAFETY: the trap frame is boxed inside the current process, which stays alive while it
    // runs; its page table was activated by the scheduler.
    unsafe { crate::arch::trap::enter_user(tf) }
}

/// The scheduler loop: run ready processes round-robin until none is left.
pub fn run() -> ! {
    crate::arch::time::set_timer_in_ms(TIME_SLICE_MS);
    loop {
        let next = {
            let mut s = SCHED.lock();
            let n = s.ready.pop_front();
            if let Some(p) = &n {
                s.current = Some(p.clone());
                CURRENT.store(Arc::as_ptr(p).cast_mut(), Relaxed);
            }
            n
        };
        let Some(p) = next else {
            if SCHED.lock().all.is_empty() {
                log::info!("no processes left");
                crate::shutdown(0);
            }
            idle();
            continue;
        };
        {
            let mut inner = p.inner.lock();
            inner.state = State::Running;
            inner.space.activate();
        }
        let to: *const TaskContext = ctx_ptr(&p.ctx);
        let from: *mut TaskContext = ctx_ptr(&IDLE_CTX);
        let started = crate::arch::time::monotonic_ns();
        // SAFETY: see `switch_to_scheduler`.
        unsafe { switch::switch(from, to) };
        let ran = crate::arch::time::monotonic_ns().saturating_sub(started);
        p.inner.lock().cpu_ns += ran;
        drop(p);
        let mut s = SCHED.lock();
        CURRENT.store(core::ptr::null_mut(), Relaxed);
        s.current = None;
    }
}

/// Nothing is runnable: take console input, wake sleepers whose time has come, run the file
/// systems' periodic work, and wait for the next timer tick (`wfi`; the timer is set to the
/// earliest deadline, at most a few milliseconds away so typing is picked up).
fn idle() {
    let now = crate::arch::time::monotonic_ns();
    crate::tty::poll_input();
    let next = wait::wake_expired(now);
    crate::fs::tick();
    if !SCHED.lock().ready.is_empty() {
        return;
    }
    const POLL_NS: u64 = 5_000_000;
    let wait_ns = next.map_or(POLL_NS, |d| d.saturating_sub(now).min(POLL_NS));
    crate::arch::time::set_timer_in_ns(wait_ns.max(100_000));
    crate::arch::csr::wait_for_interrupt();
}

/// Every live process with process group `pgid`.
pub fn processes_in_group(pgid: usize) -> Vec<Arc<Process>> {
    let all: Vec<Arc<Process>> = SCHED.lock().all.values().cloned().collect();
    all.into_iter()
        .filter(|p| {
            let i = p.inner.lock();
            i.pgid == pgid && !matches!(i.state, State::Zombie(_))
        })
        .collect()
}

/// Every live process.
pub fn all_processes() -> Vec<Arc<Process>> {
    SCHED.lock().all.values().cloned().collect()
}

/// The process with this pid, if it exists (zombies included).
pub fn find(pid: usize) -> Option<Arc<Process>> {
    SCHED.lock().all.get(&pid).cloned()
}

/// The current process's credentials (root's while no process runs: boot, mounting).
pub fn current_cred() -> cred::Cred {
    if CURRENT.load(Relaxed).is_null() {
        return cred::Cred::default();
    }
    with_current(|p| p.cred.clone())
}

/// The current process.
pub fn current_process() -> Arc<Process> {
    current()
}

/// fork: a copy of the current process; returns the child's pid.
pub fn fork(tf: &TrapFrame) -> Result<usize, Errno> {
    if SCHED.lock().all.len() >= MAX_PROCS {
        return Err(Errno::EAGAIN);
    }
    let parent = current();
    let child_inner = {
        let p = parent.inner.lock();
        // The stack first: it is the large heap allocation, and fails before frames are copied.
        let kstack = new_kstack()?;
        let space = p.space.fork()?;
        let mut ctf = Box::new(tf.clone());
        ctf.regs[10] = 0;
        ctf.kernel_sp = kstack_top(&kstack);
        ProcInner {
            state: State::Ready,
            ppid: parent.pid,
            children: Vec::new(),
            space,
            tf: ctf,
            files: p.files.clone(),
            cwd: p.cwd.clone(),
            umask: p.umask,
            sig: signal::SigState {
                saved_mask: None,
                ..p.sig.clone()
            },
            pgid: p.pgid,
            sid: p.sid,
            cred: p.cred.clone(),
            cpu_ns: 0,
            children_cpu_ns: 0,
            nice: p.nice,
            comm: p.comm.clone(),
            cmdline: p.cmdline.clone(),
            kstack,
        }
    };
    let child = make_process(child_inner);
    parent.inner.lock().children.push(child.clone());
    Ok(child.pid)
}

/// Replace the current program (execve).
pub fn exec(path: &str, argv: Vec<String>, envp: Vec<String>) -> Result<(), Errno> {
    let (cwd, creds) = with_current(|p| (p.cwd.clone(), p.cred.clone()));
    let (comm, cmdline) = names_of(path, &argv);
    let (space, entry, sp) = load_program(&cwd, path, argv, &envp, &creds)?;
    let closed = with_current(|p| {
        p.comm = comm;
        p.cmdline = cmdline;
        let ksp = p.tf.kernel_sp;
        *p.tf = TrapFrame::new_user(entry, sp, ksp);
        space.activate();
        p.space = space;
        p.sig.reset_for_exec();
        p.files.close_on_exec()
    });
    // Outside the process lock: a last close may write back data.
    let pid = current_pid();
    for f in closed {
        f.release_locks(pid);
    }
    Ok(())
}

/// End the current process.
pub fn exit_current(status: ExitStatus) -> ! {
    let p = current();
    crate::mm::page_table::activate_kernel();
    let (ppid, children, files) = {
        let mut inner = p.inner.lock();
        inner.state = State::Zombie(status);
        // Free memory now (allocating nothing); the kernel stack (in use right now) goes
        // when the parent reaps.
        inner.space.clear();
        (
            inner.ppid,
            core::mem::take(&mut inner.children),
            core::mem::take(&mut inner.files),
        )
    };
    wait::drop_timers(p.pid);
    crate::fs::lock::release_all(p.pid);
    drop(files); // closes every descriptor (may write back data)
    if p.pid == 1 {
        let code = match status {
            ExitStatus::Exited(c) => c as u32 & 0xff,
            ExitStatus::Signaled(s) => 128 + s as u32,
        };
        crate::println!("[kernel] init exited with status {}", code);
        crate::shutdown(code);
    }
    let (parent, init) = {
        let s = SCHED.lock();
        (s.all.get(&ppid).cloned(), s.all.get(&1).cloned())
    };
    if let Some(init) = init {
        if !children.is_empty() {
            for c in &children {
                c.inner.lock().ppid = 1;
            }
            init.inner.lock().children.extend(children);
            wake(&init);
        }
    }
    if let Some(parent) = parent {
        wake(&parent);
        signal::send(&parent, signal::SIGCHLD);
    }
    drop(p);
    switch_to_scheduler();
    unreachable!("a zombie was scheduled");
}

/// wait4: reap a zombie child (`pid` = -1 for any). `Ok(None)` with WNOHANG and nothing yet.
/// The third value is the CPU time (ns) the child and its reaped children used (wait4's
/// rusage).
pub fn wait_child(pid: isize, nohang: bool) -> Result<Option<(usize, ExitStatus, u64)>, Errno> {
    loop {
        let me = current();
        let found = {
            let mut inner = me.inner.lock();
            let mut any = false;
            let mut zombie = None;
            for (i, c) in inner.children.iter().enumerate() {
                if pid == -1 || pid == c.pid as isize || pid == 0 {
                    any = true;
                    if let State::Zombie(st) = c.inner.lock().state {
                        zombie = Some((i, st));
                        break;
                    }
                }
            }
            if !any {
                return Err(Errno::ECHILD);
            }
            zombie.map(|(i, st)| (inner.children.remove(i), st))
        };
        if let Some((child, st)) = found {
            let spent = {
                let c = child.inner.lock();
                c.cpu_ns + c.children_cpu_ns
            };
            me.inner.lock().children_cpu_ns += spent;
            SCHED.lock().all.remove(&child.pid);
            return Ok(Some((child.pid, st, spent)));
        }
        if nohang {
            return Ok(None);
        }
        drop(me);
        if signal::pending() {
            return Err(signal::ERESTARTSYS);
        }
        block_current();
    }
}

/// Does a process with this pid exist?
pub fn exists(pid: usize) -> bool {
    SCHED.lock().all.contains_key(&pid)
}
