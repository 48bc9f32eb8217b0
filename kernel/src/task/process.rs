//! Processes and threads as data (task layer): a [`Process`] is a thread group, with the
//! state its threads share in [`ProcInner`]; a [`Thread`] is what the scheduler runs, with its
//! own state in [`ThreadInner`]; kernel stacks and the limits on how many may exist.

use alloc::boxed::Box;
use alloc::string::String;
use alloc::sync::Arc;
use alloc::vec::Vec;
use core::sync::atomic::AtomicBool;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::AtomicUsize;
use core::sync::atomic::Ordering::Relaxed;

use crate::arch::lockcheck::{rank, SpinLock};
use abi::Errno;

use super::cred;
use super::files;
use super::siginfo::SigQueue;
use super::sigstate;
use super::switch::TaskContext;
use crate::arch::trap::TrapFrame;
use crate::mm::addr_space::AddrSpace;

pub(super) const KERNEL_STACK_SIZE: usize = 128 * 1024;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatus {
    Exited(i32),
    Signaled(i32),
    /// Killed by a signal whose default action dumps core, with a core file written.
    Dumped(i32),
}

impl ExitStatus {
    /// The `wstatus` word of wait4.
    pub fn wait_status(self) -> i32 {
        match self {
            ExitStatus::Exited(c) => (c & 0xff) << 8,
            ExitStatus::Signaled(s) => s & 0x7f,
            ExitStatus::Dumped(s) => (s & 0x7f) | 0x80,
        }
    }
}

/// What a child's parent has yet to take with wait (job control, `jobctl`): a stop by signal
/// `sig`, or a continue.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JobReport {
    Stopped(i32),
    Continued,
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
    pub sig: sigstate::SigState,
    /// Process group and session.
    pub pgid: usize,
    pub sid: usize,
    pub cred: cred::Cred,
    /// CPU time of its reaped children (and theirs); its own is [`Process::cpu`].
    pub children_cpu: CpuTime,
    /// The voluntary and involuntary context switches of its reaped children (and theirs).
    pub children_switches: [u64; 2],
    /// Peak resident pages of the images it ran before its last execve, and at its exit of
    /// all of them ([`ProcInner::rss_peak`] adds the current space's).
    pub old_rss_peak: usize,
    /// The largest peak of its reaped children (and theirs): getrusage(RUSAGE_CHILDREN)'s
    /// `ru_maxrss`.
    pub children_rss_peak: usize,
    /// Nice value (-20..=19; getpriority/setpriority). Inherited by fork; the round-robin
    /// scheduler does not weigh it yet.
    pub nice: i32,
    /// I/O priority (ioprio_set: class << 13 | level; 0, class NONE, until set). Inherited
    /// by fork; the block layer serves requests in order, whatever their priority.
    pub ioprio: u16,
    /// The program's name (`comm`: the executable's file name, at most 15 bytes) and its
    /// arguments as /proc/<pid>/cmdline gives them (each followed by a NUL byte).
    pub comm: String,
    pub cmdline: Vec<u8>,
    /// The parent's thread asleep in vfork (`clone(CLONE_VFORK)`) until this child execs
    /// or exits ([`release_vfork_parent`]); `None` for any other child, or once released.
    pub vfork_parent: Option<Arc<Thread>>,
    /// The resource limits enforced per process (RLIMIT_FSIZE, _MEMLOCK, _NICE, _RTPRIO).
    pub limits: super::policy::Limits,
    /// The scheduling policy (sched_setscheduler) and real-time priority.
    pub sched: super::policy::SchedPolicy,
    /// The execution domain and its flags (personality(2)): inherited by fork, kept by
    /// execve. Of the flags, the kernel honours UNAME26 (uname's release); pselect6 never
    /// writes the time left back, as STICKY_TIMEOUTS asks.
    pub personality: u32,
    /// The program the process runs (for a script, its interpreter), held open as Linux's
    /// `mm->exe_file`: `/proc/<pid>/exe`. Kept by fork, replaced by execve.
    pub exe: Option<Arc<dyn crate::mm::file_pages::MappedFile>>,
    /// Whether a core-action signal may write a core file (prctl PR_SET_DUMPABLE): kept by
    /// fork, set again by execve.
    pub dumpable: bool,
    /// Whether it has run execve since it was forked (Linux's `PF_FORKNOEXEC` cleared): its
    /// parent may then no longer move it to another process group (setpgid: EACCES).
    pub execed: bool,
    /// The signal it gets when its parent exits (prctl PR_SET_PDEATHSIG; 0: none). Not
    /// inherited by fork, kept by execve.
    pub pdeath_signal: u32,
    /// prctl PR_SET_TIMERSLACK's value in nanoseconds (Linux keeps it per thread; here per
    /// process, inherited by fork): reported by PR_GET_TIMERSLACK. The kernel adds no slack:
    /// a sleep ends at its deadline's first timer interrupt whatever the value.
    pub timer_slack_ns: u64,
    /// RLIMIT_CPU: the second of CPU time at which the next SIGXCPU is due (0: at the soft
    /// limit). Not inherited by fork (the child's CPU time starts at 0).
    pub xcpu_next_sec: u64,
    /// A stop or continue its parent's wait has yet to take (`jobctl`).
    pub job_report: Option<JobReport>,
}

/// Linux's default timer slack, 50 us (PR_GET_TIMERSLACK before any PR_SET_TIMERSLACK).
pub const DEFAULT_TIMER_SLACK_NS: u64 = 50_000;

impl ProcInner {
    /// Its peak resident pages: of the space it runs now and of those before its execve
    /// (getrusage(RUSAGE_SELF)'s `ru_maxrss`, `/proc/<pid>/status`'s VmHWM).
    pub fn rss_peak(&self) -> usize {
        self.old_rss_peak.max(self.space.peak_pages())
    }

    /// The state of a process made from nothing (init, the kernel threads' process): no
    /// parent, children or threads yet, root's credentials, `/` as working directory,
    /// process group and session `session`, dumpable if it runs a program (`exe`).
    pub(super) fn first(
        space: AddrSpace,
        files: Box<dyn files::FileTable>,
        session: usize,
        comm: String,
        cmdline: Vec<u8>,
        exe: Option<Arc<dyn crate::mm::file_pages::MappedFile>>,
    ) -> Self {
        ProcInner {
            ppid: 0,
            children: Vec::new(),
            threads: Vec::new(),
            zombie: None,
            group_exit: None,
            space,
            files,
            cwd: String::from("/"),
            umask: 0o022,
            sig: Default::default(),
            pgid: session,
            sid: session,
            cred: cred::Cred::default(),
            children_cpu: CpuTime::default(),
            children_switches: [0; 2],
            old_rss_peak: 0,
            children_rss_peak: 0,
            nice: 0,
            ioprio: 0,
            comm,
            cmdline,
            vfork_parent: None,
            limits: Default::default(),
            sched: Default::default(),
            personality: 0,
            dumpable: exe.is_some(),
            execed: exe.is_some(),
            pdeath_signal: 0,
            timer_slack_ns: DEFAULT_TIMER_SLACK_NS,
            xcpu_next_sec: 0,
            job_report: None,
            exe,
        }
    }
}

/// A thread group.
pub struct Process {
    pub pid: usize,
    pub inner: crate::sync::Mutex<ProcInner>,
    /// Process-directed pending signals (bit `n - 1` for signal `n`), readable without the
    /// lock; any thread that does not block one takes it.
    pub sig_pending: AtomicU64,
    /// The siginfos of the process-directed pending signals (see `siginfo`).
    pub sig_queue: SpinLock<SigQueue, { rank::SIGQUEUE }>,
    /// Stopped by a stop signal (`jobctl`): its threads sleep on their way to user mode
    /// until SIGCONT or SIGKILL. Read without the lock on every return to user mode.
    pub stopped: AtomicBool,
    /// The `satp` value of the address space (`inner.space`), kept beside it so that the
    /// scheduler switches to it without the lock: a thread may give the CPU away holding
    /// the lock (a device flush below a page fault or an munmap's write-back).
    pub satp: AtomicUsize,
    /// CPU time of all its threads so far, added by the scheduler (which takes no lock of
    /// the process, see `satp`), and the part of it spent in the kernel (system time).
    pub(super) cpu_ns: AtomicU64,
    pub(super) sys_ns: AtomicU64,
    /// Context switches of its threads: voluntary (waiting: for a wake-up, a lock, a device)
    /// and involuntary (preempted, or `sched_yield`), getrusage's `ru_nvcsw` / `ru_nivcsw`.
    pub(super) switches: [AtomicU64; 2],
    /// Threads away inside a read whose device requests fill pages of this address space
    /// ([`reading_own_pages`]): a change to the space waits for them ([`changing_space`]).
    pub(super) readers_away: AtomicUsize,
    /// Threads inside [`changing_space`]: while there are any, no read goes away.
    pub(super) space_changing: AtomicUsize,
    /// Its root directory (`chroot`), a canonical path of the whole tree; `None`: `/`.
    /// Path resolution reads it without the process's lock (a caller may hold that).
    pub root: SpinLock<Option<alloc::sync::Arc<str>>, { rank::PROCESS_ROOT }>,
}

impl Process {
    /// Count a context switch of one of its threads.
    pub(super) fn count_switch(&self, voluntary: bool) {
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

    /// CPU time of its threads so far, with the part spent in the kernel.
    pub fn cpu(&self) -> CpuTime {
        CpuTime {
            total_ns: self.cpu_ns.load(Relaxed),
            sys_ns: self.sys_ns.load(Relaxed),
        }
    }
}

/// CPU time (ns): all of it, and the part spent in the kernel (system time); the rest is
/// user time. times, getrusage, wait4, waitid and `/proc/<pid>/stat` report the two parts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub total_ns: u64,
    pub sys_ns: u64,
}

impl CpuTime {
    /// The time spent in user mode.
    pub fn user_ns(self) -> u64 {
        self.total_ns.saturating_sub(self.sys_ns)
    }

    /// Both parts of `self` and `other` added.
    pub fn plus(self, other: CpuTime) -> CpuTime {
        CpuTime {
            total_ns: self.total_ns + other.total_ns,
            sys_ns: self.sys_ns + other.sys_ns,
        }
    }
}

/// A thread's own state (reached by [`with_thread`]).
pub struct ThreadInner {
    pub state: State,
    pub tf: Box<TrapFrame>,
    /// Blocked mask and the mask an `rt_sigsuspend`/`ppoll` restores.
    pub sig: sigstate::SigMask,
    /// `CLONE_CHILD_CLEARTID` / set_tid_address: zeroed and futex-woken at exit (0: none).
    pub clear_child_tid: usize,
    /// set_robust_list: the user address of the thread's `robust_list_head` (0: none).
    pub robust_list: usize,
}

/// A schedulable thread of a process.
pub struct Thread {
    pub tid: usize,
    pub process: Arc<Process>,
    pub inner: SpinLock<ThreadInner, { rank::THREAD }>,
    /// Thread-directed pending signals (tgkill, faults).
    pub sig_pending: AtomicU64,
    /// The siginfos of the thread-directed pending signals.
    pub sig_queue: SpinLock<SigQueue, { rank::SIGQUEUE }>,
    /// Set when the thread must end without a signal of its own (another thread called
    /// exit_group, died of a signal, or called execve).
    pub(super) must_exit: AtomicBool,
    /// Set while the thread must not give the CPU away (see [`keep_cpu`]).
    pub(super) keep_cpu: AtomicBool,
    /// Set by a hart's scheduler while the thread runs there, cleared once it has switched
    /// away (its registers saved): the check that it never runs on two harts at once.
    pub(super) on_cpu: AtomicBool,
    /// The harts (bit i: hart slot i) the thread may run on: sched_setaffinity's mask,
    /// inherited from the thread that created it. Only those harts' schedulers take it from
    /// the run queue.
    pub(super) affinity: AtomicU64,
    /// Set while the thread reads into user pages that nothing else can unmap (see
    /// [`reading_own_pages`]).
    pub(super) own_pages: AtomicBool,
    /// Set while the thread runs a system call (what `/proc/<pid>/syscall` shows of a
    /// sleeping thread: its call, or that it sleeps in a fault).
    pub(super) in_syscall: AtomicBool,
    pub(super) ctx: SpinLock<TaskContext, { rank::CONTEXT }>,
    /// CPU time of this thread so far, added by the scheduler when it leaves the CPU.
    pub(super) cpu_ns: AtomicU64,
    /// Owned here so it lives exactly as long as the thread (the scheduler drops the last
    /// reference after switching away from a dead thread).
    pub(super) _kstack: Box<[u8]>,
}

impl Thread {
    /// The harts the thread may run on (bit i: hart slot i), as sched_setaffinity set them.
    pub fn affinity(&self) -> u64 {
        self.affinity.load(Relaxed)
    }

    /// Whether the thread may run on hart slot `hart`.
    pub(super) fn allows(&self, hart: usize) -> bool {
        self.affinity.load(Relaxed) & (1 << hart) != 0
    }

    /// Whether the thread has been told to exit (see [`ProcInner::group_exit`]).
    pub fn must_exit(&self) -> bool {
        self.must_exit.load(Relaxed)
    }
}

/// A kernel stack, or ENOMEM when the heap cannot give one (a fork bomb must not abort the
/// kernel: the allocation is fallible).
pub(super) fn new_kstack() -> Result<Box<[u8]>, Errno> {
    // The stack, and the few small pieces of a new thread (its `Thread`, trap frame, and for
    // a process its descriptor table and strings) that come from the heap's reserve.
    crate::mm::heap::admit(PROCESS_SMALL_BYTES)?;
    Ok(crate::mm::heap::try_zeroed(KERNEL_STACK_SIZE)?.into_boxed_slice())
}

/// About what a process costs the heap besides its kernel stack (checked at fork and thread
/// creation, so the reserve can hold MAX_PROCS of them: see `mm::heap`).
pub(super) const PROCESS_SMALL_BYTES: usize = 4096;

/// Most threads (and zombies) that may exist at once (RLIMIT_NPROC, as prlimit64 reports
/// it): fork or clone beyond it is EAGAIN, as Linux answers.
pub const MAX_PROCS: usize = 4096;

pub(super) fn kstack_top(k: &[u8]) -> usize {
    (k.as_ptr() as usize + k.len()) & !0xf
}

/// Let the parent asleep in vfork go on (the child has execed or is exiting): called with
/// the child's lock held, so it only takes the parent out; the caller wakes it once the lock
/// is gone (`wake` takes `SCHED`, which comes before a process's lock).
pub(super) fn release_vfork_parent(inner: &mut ProcInner) -> Option<Arc<Thread>> {
    inner.vfork_parent.take()
}
