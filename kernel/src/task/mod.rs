//! Processes, threads and the scheduler (one hart).
//!
//! A [`Process`] is a thread group (its pid is the tgid): it owns what its threads share, the
//! address space, the fd table, cwd and umask, signal actions, credentials, process group and
//! session, children, and the process-directed pending signals ([`ProcInner`]). A [`Thread`]
//! is what the scheduler runs: tid, trap frame, kernel stack, signal mask, thread-directed
//! pending signals, `clear_child_tid` and the robust-futex list head ([`ThreadInner`]). A
//! process made by fork has one thread whose tid is the pid; `clone(CLONE_THREAD)` adds
//! threads. Since one `ProcInner` serves every thread of a group, the threads share its
//! address space and descriptors by construction; fork copies them into a new process.
//!
//! The scheduler runs on the boot stack and switches to a thread's kernel context; the
//! thread returns to it by `yield_now` (timer preemption from user mode, `sched_yield`),
//! `block_current` (a sleep) or by exiting. Kernel code runs with interrupts off, so nothing
//! else runs between a check and the matching block: no lost wake-ups.
//!
//! Exit: `exit` ends one thread (its `clear_child_tid` word is zeroed and woken, its robust
//! futexes are marked `FUTEX_OWNER_DIED`); `exit_group`, a fatal signal or execve's
//! [`de_thread`] tell the other threads to go (`Thread::must_exit`, seen when they next
//! return to user mode or test for a signal while asleep). The last thread out makes the
//! process a zombie for its parent; wait4 reaps processes, never threads.
//!
//! Lock order: `SCHED`, then a process's `inner`, then (parent before child) another's, then
//! a thread's `inner` (a leaf). No lock is held across a context switch.

pub mod cred;
pub mod files;
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
use core::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, AtomicUsize};

use abi::Errno;
use spin::Mutex;

use crate::arch::trap::TrapFrame;
use crate::mm::addr_space::AddrSpace;
use crate::mm::file_pages::FileKey;
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

/// A thread's scheduling state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Ready,
    Running,
    /// Sleeping (wait4, a pipe, the terminal, a timer, a futex) until `wake`.
    Waiting,
    /// Exited; the scheduler drops its last reference after switching away.
    Dead,
}

/// The state a process's threads share (reached by [`with_current`]).
pub struct ProcInner {
    pub ppid: usize,
    pub children: Vec<Arc<Process>>,
    /// The live threads (not yet exited).
    pub threads: Vec<Arc<Thread>>,
    /// Set when the process has exited (its last thread is gone): the parent may reap it.
    pub zombie: Option<ExitStatus>,
    /// Set by the first `exit_group` or fatal signal: the status the process ends with.
    pub group_exit: Option<ExitStatus>,
    pub space: AddrSpace,
    pub files: Box<dyn files::FileTable>,
    /// Absolute, canonical working directory.
    pub cwd: String,
    pub umask: u32,
    /// Signal actions (masks are per thread: [`ThreadInner::sig`]).
    pub sig: signal::SigState,
    /// Process group and session.
    pub pgid: usize,
    pub sid: usize,
    pub cred: cred::Cred,
    /// CPU time of its reaped children (and theirs); its own is [`Process::cpu_ns`].
    pub children_cpu_ns: u64,
    /// The voluntary and involuntary context switches of its reaped children (and theirs).
    pub children_switches: [u64; 2],
    /// Nice value (-20..=19; getpriority/setpriority). Inherited by fork; the round-robin
    /// scheduler does not weigh it yet.
    pub nice: i32,
    /// The program's name (`comm`: the executable's file name, at most 15 bytes) and its
    /// arguments as /proc/<pid>/cmdline gives them (each followed by a NUL byte).
    pub comm: String,
    pub cmdline: Vec<u8>,
    /// The parent's thread asleep in vfork (`clone(CLONE_VFORK)`) until this child execs
    /// or exits ([`release_vfork_parent`]); `None` for any other child, or once released.
    pub vfork_parent: Option<Arc<Thread>>,
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

/// A thread group.
pub struct Process {
    pub pid: usize,
    pub inner: crate::sync::Mutex<ProcInner>,
    /// Process-directed pending signals (bit `n - 1` for signal `n`), readable without the
    /// lock; any thread that does not block one takes it.
    pub sig_pending: AtomicU64,
    /// The `satp` value of the address space (`inner.space`), kept beside it so that the
    /// scheduler switches to it without the lock: a thread may give the CPU away holding
    /// the lock (a device flush below a page fault or an munmap's write-back).
    pub satp: AtomicUsize,
    /// CPU time of all its threads so far, added by the scheduler (which takes no lock of
    /// the process, see `satp`).
    cpu_ns: AtomicU64,
    /// Context switches of its threads: voluntary (waiting: for a wake-up, a lock, a device)
    /// and involuntary (preempted, or `sched_yield`), getrusage's `ru_nvcsw` / `ru_nivcsw`.
    switches: [AtomicU64; 2],
    /// Threads away inside a read whose device requests fill pages of this address space
    /// ([`reading_own_pages`]): a change to the space waits for them ([`changing_space`]).
    readers_away: AtomicUsize,
    /// Threads inside [`changing_space`]: while there are any, no read goes away.
    space_changing: AtomicUsize,
}

impl Process {
    /// Count a context switch of one of its threads.
    fn count_switch(&self, voluntary: bool) {
        self.switches[usize::from(!voluntary)].fetch_add(1, Relaxed);
    }

    /// [voluntary, involuntary] context switches so far.
    pub fn switch_counts(&self) -> [u64; 2] {
        self.switches.each_ref().map(|c| c.load(Relaxed))
    }

    /// CPU time of its threads so far.
    pub fn cpu_ns(&self) -> u64 {
        self.cpu_ns.load(Relaxed)
    }
}

/// A thread's own state (reached by [`with_thread`]).
pub struct ThreadInner {
    pub state: State,
    pub tf: Box<TrapFrame>,
    /// Blocked mask and the mask an `rt_sigsuspend`/`ppoll` restores.
    pub sig: signal::SigMask,
    /// `CLONE_CHILD_CLEARTID` / set_tid_address: zeroed and futex-woken at exit (0: none).
    pub clear_child_tid: usize,
    /// set_robust_list: the user address of the thread's `robust_list_head` (0: none).
    pub robust_list: usize,
}

/// A schedulable thread of a process.
pub struct Thread {
    pub tid: usize,
    pub process: Arc<Process>,
    pub inner: Mutex<ThreadInner>,
    /// Thread-directed pending signals (tgkill, faults).
    pub sig_pending: AtomicU64,
    /// Set when the thread must end without a signal of its own (another thread called
    /// exit_group, died of a signal, or called execve).
    must_exit: AtomicBool,
    /// Set while the thread must not give the CPU away (see [`keep_cpu`]).
    keep_cpu: AtomicBool,
    /// Set while the thread reads into user pages that nothing else can unmap (see
    /// [`reading_own_pages`]).
    own_pages: AtomicBool,
    ctx: Mutex<TaskContext>,
    /// Owned here so it lives exactly as long as the thread (the scheduler drops the last
    /// reference after switching away from a dead thread).
    _kstack: Box<[u8]>,
}

impl Thread {
    /// Whether the thread has been told to exit (see [`ProcInner::group_exit`]).
    pub fn must_exit(&self) -> bool {
        self.must_exit.load(Relaxed)
    }
}

struct Scheduler {
    ready: VecDeque<Arc<Thread>>,
    current: Option<Arc<Thread>>,
    /// Every process not yet reaped.
    all: BTreeMap<usize, Arc<Process>>,
    /// Every live thread, by tid.
    threads: BTreeMap<usize, Arc<Thread>>,
    /// Processes that are zombies (they count against [`MAX_PROCS`] until reaped).
    zombies: usize,
    next_pid: usize,
}

impl Scheduler {
    fn alloc_id(&mut self) -> usize {
        let id = self.next_pid;
        self.next_pid += 1;
        id
    }
    /// Threads and zombies: what [`MAX_PROCS`] limits.
    fn tasks(&self) -> usize {
        self.threads.len() + self.zombies
    }
}

static SCHED: Mutex<Scheduler> = Mutex::new(Scheduler {
    ready: VecDeque::new(),
    current: None,
    all: BTreeMap::new(),
    threads: BTreeMap::new(),
    zombies: 0,
    next_pid: 1,
});
static IDLE_CTX: Mutex<TaskContext> = Mutex::new(TaskContext::zero());
/// The thread in `SCHED.current`, for [`with_current`] on the system-call path without the
/// scheduler lock or a reference-count round trip (each an atomic operation, which QEMU
/// charges for). Set and cleared by [`run`] together with `SCHED.current`, whose `Arc` keeps
/// the thread (and so its process) alive for exactly that time; null while the scheduler
/// itself runs.
static CURRENT: AtomicPtr<Thread> = AtomicPtr::new(core::ptr::null_mut());
/// Threads switched to since boot (`ctxt` in /proc/stat).
static SWITCHES: AtomicU64 = AtomicU64::new(0);

/// How many times the scheduler has switched to a thread since boot.
pub fn context_switches() -> u64 {
    SWITCHES.load(Relaxed)
}

/// A kernel stack, or ENOMEM when the heap cannot give one (a fork bomb must not abort the
/// kernel: the allocation is fallible).
fn new_kstack() -> Result<Box<[u8]>, Errno> {
    // The stack, and the few small pieces of a new thread (its `Thread`, trap frame, and for
    // a process its descriptor table and strings) that come from the heap's reserve.
    crate::mm::heap::admit(PROCESS_SMALL_BYTES)?;
    Ok(crate::mm::heap::try_zeroed(KERNEL_STACK_SIZE)?.into_boxed_slice())
}

/// About what a process costs the heap besides its kernel stack (checked at fork and thread
/// creation, so the reserve can hold MAX_PROCS of them: see `mm::heap`).
const PROCESS_SMALL_BYTES: usize = 4096;

/// Most threads (and zombies) that may exist at once (RLIMIT_NPROC, as prlimit64 reports
/// it): fork or clone beyond it is EAGAIN, as Linux answers.
pub const MAX_PROCS: usize = 4096;

fn kstack_top(k: &[u8]) -> usize {
    (k.as_ptr() as usize + k.len()) & !0xf
}

extern "C" fn first_entry() -> ! {
    return_to_user()
}

/// A new process (pid from `SCHED`) with one thread running `tf` (whose `kernel_sp` is set
/// here), ready to run.
fn make_process(
    s: &mut Scheduler,
    inner: ProcInner,
    tf: Box<TrapFrame>,
    kstack: Box<[u8]>,
    mask: signal::SigMask,
) -> Arc<Process> {
    let pid = s.alloc_id();
    let p = Arc::new(Process {
        pid,
        satp: AtomicUsize::new(inner.space.satp()),
        cpu_ns: AtomicU64::new(0),
        switches: [AtomicU64::new(0), AtomicU64::new(0)],
        readers_away: AtomicUsize::new(0),
        space_changing: AtomicUsize::new(0),
        inner: crate::sync::Mutex::new(inner),
        sig_pending: AtomicU64::new(0),
    });
    s.all.insert(pid, p.clone());
    let t = make_thread(pid, &p, tf, kstack, mask);
    p.inner.lock().threads.push(t.clone());
    s.threads.insert(pid, t.clone());
    s.ready.push_back(t);
    p
}

/// A thread of `p` with id `tid`, not yet registered anywhere.
fn make_thread(
    tid: usize,
    p: &Arc<Process>,
    mut tf: Box<TrapFrame>,
    kstack: Box<[u8]>,
    mask: signal::SigMask,
) -> Arc<Thread> {
    let top = kstack_top(&kstack);
    tf.kernel_sp = top;
    Arc::new(Thread {
        tid,
        process: p.clone(),
        inner: Mutex::new(ThreadInner {
            state: State::Ready,
            tf,
            sig: mask,
            clear_child_tid: 0,
            robust_list: 0,
        }),
        sig_pending: AtomicU64::new(0),
        must_exit: AtomicBool::new(false),
        keep_cpu: AtomicBool::new(false),
        own_pages: AtomicBool::new(false),
        ctx: Mutex::new(TaskContext::new(first_entry as *const () as usize, top)),
        _kstack: kstack,
    })
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
    read_file: ReadFile,
    cwd: &str,
    path: &str,
    mut argv: Vec<String>,
    envp: &[String],
    creds: &cred::Cred,
) -> Result<(AddrSpace, usize, usize), Errno> {
    let mut path = String::from(path);
    let mut image = read_file(cwd, &path)?;
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
        image = read_file(cwd, &interp)?;
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

/// How the loader reads a program (or a script's interpreter) whole: `(cwd, path)` to its
/// bytes. The file layer's, handed in by the caller (exec and boot live above it).
pub type ReadFile = fn(&str, &str) -> Result<Vec<u8>, Errno>;

/// Create the first process from the executable at `path`, with descriptors `files`.
pub fn spawn_init(
    path: &str,
    argv: Vec<String>,
    files: Box<dyn files::FileTable>,
    read_file: ReadFile,
) -> Result<(), Errno> {
    let env: Vec<String> = INIT_ENV.iter().map(|s| String::from(*s)).collect();
    let (comm, cmdline) = names_of(path, &argv);
    let (space, entry, sp) =
        load_program(read_file, "/", path, argv, &env, &cred::Cred::default())?;
    let kstack = new_kstack()?;
    let tf = Box::new(TrapFrame::new_user(entry, sp, kstack_top(&kstack)));
    let inner = ProcInner {
        ppid: 0,
        children: Vec::new(),
        threads: Vec::new(),
        zombie: None,
        group_exit: None,
        space,
        files,
        cwd: String::from("/"),
        umask: 0o022,
        sig: signal::SigState::default(),
        pgid: 1,
        sid: 1,
        cred: cred::Cred::default(),
        children_cpu_ns: 0,
        children_switches: [0; 2],
        nice: 0,
        comm,
        cmdline,
        vfork_parent: None,
    };
    make_process(
        &mut SCHED.lock(),
        inner,
        tf,
        kstack,
        signal::SigMask::default(),
    );
    Ok(())
}

/// The current thread.
pub fn current_thread() -> Arc<Thread> {
    SCHED.lock().current.clone().expect("no current thread")
}

fn current() -> Arc<Process> {
    current_thread().process.clone()
}

/// The current process's pid (the thread group id; 0 while no thread runs).
pub fn current_pid() -> usize {
    SCHED.lock().current.as_ref().map_or(0, |t| t.process.pid)
}

/// The current thread's id (gettid).
pub fn current_tid() -> usize {
    SCHED.lock().current.as_ref().map_or(0, |t| t.tid)
}

/// The current thread, without touching its reference count.
fn current_ref() -> &'static Thread {
    let t = CURRENT.load(Relaxed);
    assert!(!t.is_null(), "no current thread");
    // SAFETY: `CURRENT` points at the thread `SCHED.current` holds an `Arc` of; only `run`
    // drops that `Arc`, and it runs on this hart only after the thread has switched away. A
    // thread that switches away inside a caller's use of the reference (giving the CPU away
    // while it holds its process's lock) is kept alive meanwhile by the ready queue and by
    // its process's thread list, and is the current thread again when the use goes on.
    unsafe { &*t }
}

/// Run `f` with the current process's (shared) state locked.
pub fn with_current<R>(f: impl FnOnce(&mut ProcInner) -> R) -> R {
    let mut inner = current_ref().process.inner.lock();
    f(&mut inner)
}

/// Run `f` with the current thread's own state locked.
pub fn with_thread<R>(f: impl FnOnce(&mut ThreadInner) -> R) -> R {
    let mut inner = current_ref().inner.lock();
    f(&mut inner)
}

/// The address of a context, for `switch` (the lock only guards against re-entrancy bugs:
/// contexts are touched by this hart alone).
fn ctx_ptr(ctx: &Mutex<TaskContext>) -> *mut TaskContext {
    let mut g = ctx.lock();
    &mut *g as *mut TaskContext
}

/// Switch from the current thread to the scheduler.
fn switch_to_scheduler() {
    let t = current_thread();
    let from: *mut TaskContext = ctx_ptr(&t.ctx);
    let to: *const TaskContext = ctx_ptr(&IDLE_CTX);
    drop(t);
    // SAFETY: both contexts live in statics or in a thread kept alive by `SCHED.current`
    // until the scheduler runs again; no lock is held across the switch and nothing else
    // runs on this hart meanwhile.
    unsafe { switch::switch(from, to) };
}

/// Give up the CPU; the thread stays runnable (an involuntary switch in getrusage's terms:
/// it could have run on).
pub fn yield_now() {
    yield_counted(false);
}

/// [`yield_now`], counted as a voluntary or an involuntary context switch.
fn yield_counted(voluntary: bool) {
    {
        let mut s = SCHED.lock();
        let Some(t) = s.current.clone() else { return };
        t.process.count_switch(voluntary);
        t.inner.lock().state = State::Ready;
        s.ready.push_back(t);
    }
    switch_to_scheduler();
}

/// Wait a moment for a lock another task holds, or a device request: give the CPU to a
/// ready thread if there is one (the caller stays runnable and tries again when its turn
/// comes), else spin once. On this one hart a kernel lock is only ever found held when its
/// holder gave the CPU away (waiting for a device flush): spinning would never let it finish.
pub fn relax() {
    let others = {
        let s = SCHED.lock();
        s.current.is_some() && !s.ready.is_empty()
    };
    if others {
        away(|| yield_counted(true));
    } else {
        core::hint::spin_loop();
    }
}

/// Threads that gave the CPU away inside the kernel and may hold locks meanwhile: in
/// [`relax`], or waiting for a device flush ([`away`]).
static AWAY: AtomicUsize = AtomicUsize::new(0);

/// Run `f`, a wait during which the thread may give the CPU away ([`relax`]) while it holds
/// locks, counted in [`AWAY`] (a device flush's whole wait, not only its yields).
pub fn away<R>(f: impl FnOnce() -> R) -> R {
    AWAY.fetch_add(1, Relaxed);
    let r = f();
    AWAY.fetch_sub(1, Relaxed);
    r
}

/// Whether the current thread may give the CPU away while it waits for a device: not while
/// it runs [`keep_cpu`]'s work (it then polls the device instead).
pub fn may_give_cpu_away() -> bool {
    let t = CURRENT.load(Relaxed);
    // SAFETY: as in `current_ref`: the running thread, alive while it runs.
    !t.is_null() && !unsafe { &*t }.keep_cpu.load(Relaxed)
}

/// Run `f`, a read that hands the user's pages to a file system, so that its device waits
/// may give the CPU away ([`may_wait_away_reading`]) when nothing can unmap those pages
/// meanwhile. In a process with one thread nothing can (a `vfork` child has its own copy of
/// the space; another process's truncate unmaps only when no thread is [`away`]). With
/// several, the read counts itself in the process's `readers_away`, and a sibling's change
/// to the address space waits until none is away ([`changing_space`]); a read that finds a
/// change under way polls instead. The caller must hold no lock that a task may wait for by
/// spinning.
pub fn reading_own_pages<R>(f: impl FnOnce() -> R) -> R {
    let me = current_ref();
    let p = &me.process;
    let shared = p.inner.lock().threads.len() > 1;
    if shared {
        if p.space_changing.load(Relaxed) != 0 {
            return f();
        }
        p.readers_away.fetch_add(1, Relaxed);
    }
    me.own_pages.store(true, Relaxed);
    let r = f();
    me.own_pages.store(false, Relaxed);
    if shared {
        p.readers_away.fetch_sub(1, Relaxed);
    }
    r
}

/// Run `f`, a system call that unmaps, remaps or shares (fork) pages of the current
/// process's address space, once no sibling thread is away inside a read into its pages
/// ([`reading_own_pages`]), and with no new one going away until `f` returns. The caller
/// holds no lock: the readers it waits for may need one.
pub fn changing_space<R>(f: impl FnOnce() -> R) -> R {
    let p = &current_ref().process;
    p.space_changing.fetch_add(1, Relaxed);
    while p.readers_away.load(Relaxed) != 0 {
        yield_counted(true);
    }
    let r = f();
    p.space_changing.fetch_sub(1, Relaxed);
    r
}

/// Whether the current thread's device read may give the CPU away: inside
/// [`reading_own_pages`], and not in [`keep_cpu`].
pub fn may_wait_away_reading() -> bool {
    let t = CURRENT.load(Relaxed);
    // SAFETY: as in `current_ref`: the running thread, alive while it runs.
    !t.is_null() && {
        let t = unsafe { &*t };
        t.own_pages.load(Relaxed) && !t.keep_cpu.load(Relaxed)
    }
}

/// Run `f` without giving the CPU away: first wait (giving it away) until no thread is away
/// holding locks, then run `f` with the current thread marked so that its device waits poll.
/// Nothing else then runs until `f` returns: no lock `f` takes can be found held, and no
/// other thread of the process can change its address space. For system calls of a
/// multi-threaded process that hand the user's pages to a file system
/// ([`crate::mm::uaccess::UserPages`]). The caller must hold no lock: an away thread may be
/// waiting for it.
pub fn keep_cpu<R>(f: impl FnOnce() -> R) -> R {
    // An away thread is ready (it gave the CPU away with `yield`), so this lets it run.
    while AWAY.load(Relaxed) != 0 {
        yield_counted(true);
    }
    let me = current_ref();
    me.keep_cpu.store(true, Relaxed);
    let r = f();
    me.keep_cpu.store(false, Relaxed);
    r
}

/// Sleep until [`wake`] (the caller has put itself where its waker finds it).
pub fn block_current() {
    current_ref().process.count_switch(true);
    with_thread(|t| t.state = State::Waiting);
    switch_to_scheduler();
}

/// Make a sleeping thread runnable (no effect on one that is not sleeping).
pub fn wake(t: &Arc<Thread>) {
    let mut s = SCHED.lock();
    let mut inner = t.inner.lock();
    if inner.state == State::Waiting {
        inner.state = State::Ready;
        drop(inner);
        s.ready.push_back(t.clone());
    }
}

/// Wake every thread of `p` (each re-checks what it waits for: wait4, a signal).
pub fn wake_process(p: &Arc<Process>) {
    let threads = p.inner.lock().threads.clone();
    for t in &threads {
        wake(t);
    }
}

/// Return to user mode in the current thread, delivering its pending signals first.
pub fn return_to_user() -> ! {
    return_to_user_restarting(None)
}

/// As [`return_to_user`], after a system call that asked to be restarted
/// ([`signal::ERESTARTSYS`]) with `restart` = its original first argument.
pub fn return_to_user_restarting(restart: Option<usize>) -> ! {
    let tf: *mut TrapFrame = with_thread(|t| &mut *t.tf as *mut TrapFrame);
    let me = current_ref();
    if restart.is_some()
        || me.must_exit()
        || me.sig_pending.load(Relaxed) | me.process.sig_pending.load(Relaxed) != 0
    {
        // SAFETY: the frame belongs to the current thread, which only this code touches now.
        signal::deliver(unsafe { &mut *tf }, restart);
    }
    // SAFETY: the trap frame is boxed inside the current thread, which stays alive while it
    // runs; its page table was activated by the scheduler.
    unsafe { crate::arch::trap::enter_user(tf) }
}

/// What the scheduler calls in the layers above it, registered once at boot
/// ([`set_services`]): the task layer never names them.
pub struct Services {
    /// An idle moment's first job: take console input (which may wake a reader).
    pub take_input: fn(),
    /// An idle moment's last job: the file systems' periodic work.
    pub periodic: fn(),
    /// Write back every file system and power off with this status (init has exited, or
    /// no process is left).
    pub power_off: fn(u32) -> !,
}

static SERVICES: spin::Once<Services> = spin::Once::new();

/// Register the [`Services`] (once, at boot, before [`run`]).
pub fn set_services(services: Services) {
    SERVICES.call_once(|| services);
}

/// Power off through the registered service (straight away, if none is registered).
fn power_off(code: u32) -> ! {
    match SERVICES.get() {
        Some(s) => (s.power_off)(code),
        None => crate::arch::power::shutdown(code),
    }
}

/// The scheduler loop: run ready threads round-robin until none is left.
pub fn run() -> ! {
    crate::arch::time::set_timer_in_ms(TIME_SLICE_MS);
    loop {
        let next = {
            let mut s = SCHED.lock();
            let n = s.ready.pop_front();
            if let Some(t) = &n {
                s.current = Some(t.clone());
                CURRENT.store(Arc::as_ptr(t).cast_mut(), Relaxed);
            }
            n
        };
        let Some(t) = next else {
            if SCHED.lock().all.is_empty() {
                log::info!("no processes left");
                power_off(0);
            }
            idle();
            continue;
        };
        t.inner.lock().state = State::Running;
        SWITCHES.fetch_add(1, Relaxed);
        crate::arch::csr::set_satp(t.process.satp.load(Relaxed));
        let to: *const TaskContext = ctx_ptr(&t.ctx);
        let from: *mut TaskContext = ctx_ptr(&IDLE_CTX);
        let started = crate::arch::time::monotonic_ns();
        // SAFETY: see `switch_to_scheduler`.
        unsafe { switch::switch(from, to) };
        let ran = crate::arch::time::monotonic_ns().saturating_sub(started);
        t.process.cpu_ns.fetch_add(ran, Relaxed);
        let mut s = SCHED.lock();
        CURRENT.store(core::ptr::null_mut(), Relaxed);
        s.current = None;
        drop(s);
        // A dead thread's kernel stack goes here, now that nothing runs on it.
        drop(t);
    }
}

/// Nothing is runnable: take console input, wake sleepers whose time has come, run the file
/// systems' periodic work, and wait for the next timer tick (`wfi`; the timer is set to the
/// earliest deadline, at most a few milliseconds away so typing is picked up).
fn idle() {
    let now = crate::arch::time::monotonic_ns();
    let services = SERVICES.get();
    if let Some(s) = services {
        (s.take_input)();
    }
    let next = wait::wake_expired(now);
    if let Some(s) = services {
        (s.periodic)();
    }
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
            i.pgid == pgid && i.zombie.is_none()
        })
        .collect()
}

/// Every live process.
pub fn all_processes() -> Vec<Arc<Process>> {
    SCHED.lock().all.values().cloned().collect()
}

/// mm's `SpaceAccess::unmap_file_pages`: in every process, inside [`keep_cpu`].
pub fn unmap_file_pages_everywhere(key: FileKey, first_gone: u64) {
    keep_cpu(|| {
        for p in all_processes() {
            p.inner.lock().space.unmap_file_pages(key, first_gone);
        }
    });
}

/// mm's `SpaceAccess::write_protect_file_pages`: in every process.
pub fn write_protect_file_pages_everywhere(key: FileKey, first: u64, end: u64) {
    for p in all_processes() {
        p.inner
            .lock()
            .space
            .write_protect_file_pages(key, first, end);
    }
}

/// The process with this pid, if it exists (zombies included).
pub fn find(pid: usize) -> Option<Arc<Process>> {
    SCHED.lock().all.get(&pid).cloned()
}

/// The live thread with this tid.
pub fn find_thread(tid: usize) -> Option<Arc<Thread>> {
    SCHED.lock().threads.get(&tid).cloned()
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

/// fork: a copy of the current process, with one thread (a copy of the caller running
/// `tf`); returns the child's pid. With `vfork`, the child holds the calling thread as its
/// [`ProcInner::vfork_parent`] from the start, so that [`wait_vfork_done`] sees an exec or
/// exit that happens before it is called (a `CLONE_CHILD_SETTID` store may give the CPU away).
pub fn fork(tf: &TrapFrame, vfork: bool) -> Result<usize, Errno> {
    if SCHED.lock().tasks() >= MAX_PROCS {
        return Err(Errno::EAGAIN);
    }
    let parent = current();
    let mask = with_thread(|t| signal::SigMask {
        blocked: t.sig.blocked,
        saved_mask: None,
    });
    // The stack first: it is the large heap allocation, and fails before the address space
    // is shared copy-on-write.
    let kstack = new_kstack()?;
    let vfork_parent = vfork.then(current_thread);
    let (child_inner, ctf) = {
        let mut p = parent.inner.lock();
        let space = p.space.fork()?;
        let mut ctf = Box::new(tf.clone());
        ctf.regs[10] = 0;
        let inner = ProcInner {
            ppid: parent.pid,
            children: Vec::new(),
            threads: Vec::new(),
            zombie: None,
            group_exit: None,
            space,
            files: p.files.fork(),
            cwd: p.cwd.clone(),
            umask: p.umask,
            sig: p.sig.clone(),
            pgid: p.pgid,
            sid: p.sid,
            cred: p.cred.clone(),
            children_cpu_ns: 0,
            children_switches: [0; 2],
            nice: p.nice,
            comm: p.comm.clone(),
            cmdline: p.cmdline.clone(),
            vfork_parent,
        };
        (inner, ctf)
    };
    let child = make_process(&mut SCHED.lock(), child_inner, ctf, kstack, mask);
    parent.inner.lock().children.push(child.clone());
    Ok(child.pid)
}

/// The vfork wait (Linux's `wait_for_vfork_done`): sleep until child `pid` has execed or
/// exited ([`release_vfork_parent`]). Killable as Linux's: a signal that will end the caller
/// ([`signal::fatal_pending`]: SIGKILL, or a default-terminating one it does not block or
/// handle) ends the wait; any other signal stays pending until the child lets go, and is
/// delivered when the vfork call returns.
pub fn wait_vfork_done(pid: usize) {
    let Some(child) = find(pid) else { return };
    let me = current_ref();
    loop {
        let waiting = {
            let c = child.inner.lock();
            c.vfork_parent
                .as_ref()
                .is_some_and(|t| core::ptr::eq(Arc::as_ptr(t), me))
        };
        if !waiting || signal::fatal_pending() {
            return;
        }
        // The child wakes this thread by `wake` (it holds it in `vfork_parent`); a signal's
        // wake-up only makes the loop look again.
        block_current();
    }
}

/// Let the parent asleep in vfork go on (the child has execed or is exiting): called with
/// the child's lock held, so it only takes the parent out; the caller wakes it once the lock
/// is gone (`wake` takes `SCHED`, which comes before a process's lock).
fn release_vfork_parent(inner: &mut ProcInner) -> Option<Arc<Thread>> {
    inner.vfork_parent.take()
}

/// clone(CLONE_THREAD): a new thread of the current process running `tf` (with `a0` = 0);
/// it starts with the caller's signal mask and `clear_child_tid` (0: none). Returns its tid.
pub fn spawn_thread(tf: &TrapFrame, clear_child_tid: usize) -> Result<usize, Errno> {
    if SCHED.lock().tasks() >= MAX_PROCS {
        return Err(Errno::EAGAIN);
    }
    let me = current();
    if me.inner.lock().group_exit.is_some() {
        // The group is going away (exit_group in another thread): no new members.
        return Err(Errno::EAGAIN);
    }
    let mask = with_thread(|t| signal::SigMask {
        blocked: t.sig.blocked,
        saved_mask: None,
    });
    let kstack = new_kstack()?;
    let mut ctf = Box::new(tf.clone());
    ctf.regs[10] = 0;
    let tid = SCHED.lock().alloc_id();
    let t = make_thread(tid, &me, ctf, kstack, mask);
    t.inner.lock().clear_child_tid = clear_child_tid;
    let mut s = SCHED.lock();
    me.inner.lock().threads.push(t.clone());
    s.threads.insert(tid, t.clone());
    s.ready.push_back(t);
    Ok(tid)
}

/// Tell every thread of `p` but `except` to exit, and wake them so they see it.
fn stop_other_threads(p: &Arc<Process>, except: &Thread) {
    let threads = p.inner.lock().threads.clone();
    for t in &threads {
        if !core::ptr::eq(Arc::as_ptr(t), except) {
            t.must_exit.store(true, Relaxed);
            wake(t);
        }
    }
}

/// execve's first step in a process with several threads (Linux's `de_thread`): the others
/// exit, and the caller waits until they are gone. The caller keeps its tid (Linux gives
/// it the pid; here a non-leader thread that execs keeps its own tid).
fn de_thread() -> Result<(), Errno> {
    let me = current_ref();
    let p = me.process.clone();
    loop {
        if me.must_exit() {
            // Another thread exits the group or execs at the same time: it wins.
            return Err(signal::ERESTARTSYS);
        }
        if p.inner.lock().threads.len() <= 1 {
            return Ok(());
        }
        stop_other_threads(&p, me);
        yield_now();
    }
}

/// Replace the current program (execve), its file read by `read_file`.
pub fn exec(
    path: &str,
    argv: Vec<String>,
    envp: Vec<String>,
    read_file: ReadFile,
) -> Result<(), Errno> {
    let (cwd, creds) = with_current(|p| (p.cwd.clone(), p.cred.clone()));
    let (comm, cmdline) = names_of(path, &argv);
    let (space, entry, sp) = load_program(read_file, &cwd, path, argv, &envp, &creds)?;
    // The point of no return: Linux also kills the other threads only once the new image
    // has loaded.
    de_thread()?;
    with_thread(|t| {
        let ksp = t.tf.kernel_sp;
        *t.tf = TrapFrame::new_user(entry, sp, ksp);
        t.sig.saved_mask = None;
        t.robust_list = 0;
        t.clear_child_tid = 0;
    });
    let closed = with_current(|p| {
        p.comm = comm;
        p.cmdline = cmdline;
        space.activate();
        current_ref().process.satp.store(space.satp(), Relaxed);
        p.space = space;
        p.sig.reset_for_exec();
        // The new image is in place: a parent waiting in vfork goes on (Linux releases it
        // in exec_mmap, once the old memory is no longer the child's).
        let vfork_parent = release_vfork_parent(p);
        (p.files.take_close_on_exec(), vfork_parent)
    });
    let (closed, vfork_parent) = closed;
    if let Some(parent) = vfork_parent {
        wake(&parent);
    }
    // Outside the process lock: a last close may write back data.
    let pid = current_pid();
    closed.close(pid);
    Ok(())
}

/// End the current process (exit_group, a fatal signal): every thread exits, and the process
/// ends with `status` (or with that of an exit_group already under way).
pub fn exit_current(status: ExitStatus) -> ! {
    let me = current_ref();
    let p = me.process.clone();
    {
        let mut inner = p.inner.lock();
        if inner.group_exit.is_none() {
            inner.group_exit = Some(status);
        }
    }
    stop_other_threads(&p, me);
    drop(p);
    exit_thread(status)
}

/// End the current thread (exit). If it is the last one, the process ends with `status`
/// (unless an exit_group chose another).
pub fn exit_thread(status: ExitStatus) -> ! {
    let t = current_thread();
    let p = t.process.clone();
    let (clear_tid, robust) = {
        let mut ti = t.inner.lock();
        (
            core::mem::take(&mut ti.clear_child_tid),
            core::mem::take(&mut ti.robust_list),
        )
    };
    // As Linux's mm_release, for the last thread too: a robust mutex or the tid word may be
    // in memory shared with another process.
    if robust != 0 {
        futex::exit_robust_list(robust, t.tid);
    }
    if clear_tid != 0 {
        futex::clear_child_tid(clear_tid);
    }
    let last = p.inner.lock().threads.len() <= 1;
    {
        let mut s = SCHED.lock();
        s.threads.remove(&t.tid);
        let mut inner = p.inner.lock();
        inner.threads.retain(|x| !Arc::ptr_eq(x, &t));
        if inner.threads.is_empty() {
            s.zombies += 1;
        }
        t.inner.lock().state = State::Dead;
    }
    wait::drop_timers(t.tid);
    drop(t);
    if last {
        let status = p.inner.lock().group_exit.unwrap_or(status);
        process_exit(p, status);
    } else {
        drop(p);
    }
    switch_to_scheduler();
    unreachable!("a dead thread was scheduled");
}

/// The last thread of `p` (the current one) has exited: free the process's resources, hand
/// its children to init and tell the parent.
fn process_exit(p: Arc<Process>, status: ExitStatus) {
    crate::mm::page_table::activate_kernel();
    let (ppid, children, files, vfork_parent) = {
        let mut inner = p.inner.lock();
        inner.zombie = Some(status);
        // A parent waiting in vfork goes on, and finds the child's status waiting for it.
        let vfork_parent = release_vfork_parent(&mut inner);
        // Free memory now (allocating nothing).
        inner.space.clear();
        (
            inner.ppid,
            core::mem::take(&mut inner.children),
            inner.files.take_all(),
            vfork_parent,
        )
    };
    if let Some(parent) = vfork_parent {
        wake(&parent);
    }
    files.close(p.pid); // closes every descriptor (may write back data)
    if p.pid == 1 {
        let code = match status {
            ExitStatus::Exited(c) => c as u32 & 0xff,
            ExitStatus::Signaled(s) => 128 + s as u32,
        };
        crate::println!("[kernel] init exited with status {}", code);
        power_off(code);
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
            wake_process(&init);
        }
    }
    if let Some(parent) = parent {
        wake_process(&parent);
        signal::send(&parent, signal::SIGCHLD);
    }
}

/// wait4: reap a zombie child (`pid` = -1 for any). `Ok(None)` with WNOHANG and nothing yet.
/// The third value is the CPU time (ns) the child and its reaped children used (wait4's
/// rusage). Children are processes: a thread is never waited for.
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
                    if let Some(st) = c.inner.lock().zombie {
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
            let (spent, switches) = {
                let c = child.inner.lock();
                let own = child.switch_counts();
                (
                    child.cpu_ns() + c.children_cpu_ns,
                    [0, 1].map(|k| own[k] + c.children_switches[k]),
                )
            };
            {
                let mut m = me.inner.lock();
                m.children_cpu_ns += spent;
                for (total, add) in m.children_switches.iter_mut().zip(switches) {
                    *total += add;
                }
            }
            let mut s = SCHED.lock();
            s.all.remove(&child.pid);
            s.zombies -= 1;
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
