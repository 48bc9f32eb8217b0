//! The scheduler's state and the current thread (task layer): the run queue and the tables
//! of processes and threads (`SCHED`), switching to and from the scheduler, yielding,
//! blocking and waking. Kernel code runs with interrupts off and under the big kernel lock
//! (`arch::hart`), so nothing else runs kernel code between a check and the matching block
//! (the sleeper marks itself Waiting and switches away under the lock): no lost wake-ups.
//! One run queue is shared by every hart; the current thread and the idle context are per hart.
//! A hart takes the first queued thread whose affinity (sched_setaffinity) names it.

use alloc::collections::BTreeMap;
use alloc::collections::VecDeque;
use alloc::sync::Arc;
use core::sync::atomic::AtomicPtr;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::Relaxed;

use crate::arch::lockcheck::{rank, SpinLock};

use super::cred;
use super::process::{ProcInner, Process, State, Thread, ThreadInner};
use super::switch::TaskContext;
use crate::arch::hart::{self, Padded, MAX_HARTS};

pub(super) struct Scheduler {
    pub(super) ready: VecDeque<Arc<Thread>>,
    /// The thread each hart runs (by `arch::hart::index`).
    pub(super) current: [Option<Arc<Thread>>; MAX_HARTS],
    /// Every process not yet reaped.
    pub(super) all: BTreeMap<usize, Arc<Process>>,
    /// Every live thread, by tid.
    pub(super) threads: BTreeMap<usize, Arc<Thread>>,
    /// Processes that are zombies (they count against [`MAX_PROCS`] until reaped).
    pub(super) zombies: usize,
    pub(super) next_pid: usize,
    /// Whether `next_pid` has wrapped: from then on a new id may still be in use.
    pub(super) pids_wrapped: bool,
}

/// Linux's default `pid_max` (`/proc/sys/kernel/pid_max`): ids stay below it. After the
/// last one they start again at [`PID_WRAP_TO`], skipping the ids of processes (zombies too)
/// and threads still there, as Linux's do (an id left only as a process group's or a
/// session's is not skipped: finding those would lock every process under `SCHED`).
pub const PID_MAX: usize = 32768;
/// Where ids start again after a wrap (Linux's `RESERVED_PIDS`).
const PID_WRAP_TO: usize = 300;

impl Scheduler {
    /// A new process or thread id. [`super::process::MAX_PROCS`] is far below
    /// `PID_MAX - PID_WRAP_TO`, so a free one is always found.
    pub(super) fn alloc_id(&mut self) -> usize {
        loop {
            let id = self.next_pid;
            self.next_pid = if id + 1 >= PID_MAX {
                self.pids_wrapped = true;
                PID_WRAP_TO
            } else {
                id + 1
            };
            if !self.pids_wrapped || !(self.all.contains_key(&id) || self.threads.contains_key(&id))
            {
                return id;
            }
        }
    }
    /// Threads and zombies: what [`MAX_PROCS`] limits.
    pub(super) fn tasks(&self) -> usize {
        self.threads.len() + self.zombies
    }
    /// The thread this hart runs.
    pub(super) fn cur(&self) -> &Option<Arc<Thread>> {
        &self.current[hart::index()]
    }
    /// Queue a runnable thread, waking an idle hart it may run on.
    pub(super) fn push_ready(&mut self, t: Arc<Thread>) {
        let harts = t.affinity();
        self.ready.push_back(t);
        hart::kick_idle(harts);
    }
    /// Queue the thread this hart is about to switch away from (a yield): no idle hart is
    /// woken if it may run here, since this hart runs the scheduler next and takes the
    /// queue's first thread itself. (Kicking one cost each timer tick's yield an IPI, and the
    /// idle hart a wake-up and a big-kernel-lock round trip only to find the queue empty
    /// again.) A thread whose affinity no longer names this hart wakes one it names.
    pub(super) fn push_yielded(&mut self, t: Arc<Thread>) {
        let harts = t.affinity();
        let here = t.allows(hart::index());
        self.ready.push_back(t);
        if !here {
            hart::kick_idle(harts);
        }
    }
    /// Take the first queued thread that may run on hart slot `me`.
    pub(super) fn take_ready_for(&mut self, me: usize) -> Option<Arc<Thread>> {
        let i = self.ready.iter().position(|t| t.allows(me))?;
        self.ready.remove(i)
    }
    /// Whether a queued thread may run on hart slot `me`.
    pub(super) fn has_ready_for(&self, me: usize) -> bool {
        self.ready.iter().any(|t| t.allows(me))
    }
}

pub(super) static SCHED: SpinLock<Scheduler, { rank::SCHED }> = SpinLock::new(Scheduler {
    ready: VecDeque::new(),
    current: [const { None }; MAX_HARTS],
    all: BTreeMap::new(),
    threads: BTreeMap::new(),
    zombies: 0,
    next_pid: 1,
    pids_wrapped: false,
});

/// Each hart's scheduler context (its boot stack, running [`super::run`]).
pub(super) static IDLE_CTX: [SpinLock<TaskContext, { rank::CONTEXT }>; MAX_HARTS] =
    [const { SpinLock::new(TaskContext::zero()) }; MAX_HARTS];

/// Per hart, the thread in `SCHED.current`, for [`with_current`] on the system-call path without the
/// scheduler lock or a reference-count round trip (each an atomic operation, which QEMU
/// charges for). Set and cleared by [`run`] together with `SCHED.current`, whose `Arc` keeps
/// the thread (and so its process) alive for exactly that time; null while the scheduler
/// itself runs.
pub(super) static CURRENT: [AtomicPtr<Thread>; MAX_HARTS] =
    [const { AtomicPtr::new(core::ptr::null_mut()) }; MAX_HARTS];

/// This hart's [`CURRENT`] pointer (null while its scheduler runs).
#[inline]
pub(super) fn current_ptr() -> *mut Thread {
    CURRENT[hart::index()].load(Relaxed)
}

/// Per hart, the time it ran threads since boot (`cpuN` in /proc/stat).
pub(super) static BUSY_NS: [Padded<AtomicU64>; MAX_HARTS] =
    [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];

/// The time hart slot `i` has run threads since boot, in ns.
pub fn hart_busy_ns(i: usize) -> u64 {
    BUSY_NS.get(i).map_or(0, |b| b.load(Relaxed))
}

/// Threads switched to since boot (`ctxt` in /proc/stat).
pub(super) static SWITCHES: AtomicU64 = AtomicU64::new(0);

/// Threads that gave the CPU away inside the kernel and may hold locks meanwhile: in
/// [`super::relax`], or waiting for a device ([`super::away`]). Here, below both, because the
/// scheduler's idle pass (`run.rs`) reads it too.
pub(super) static AWAY: core::sync::atomic::AtomicUsize = core::sync::atomic::AtomicUsize::new(0);

/// How many times the scheduler has switched to a thread since boot.
pub fn context_switches() -> u64 {
    SWITCHES.load(Relaxed)
}

/// The current thread.
pub fn current_thread() -> Arc<Thread> {
    SCHED.lock().cur().clone().expect("no current thread")
}

pub(super) fn current() -> Arc<Process> {
    current_thread().process.clone()
}

/// The current process's pid (the thread group id; 0 while no thread runs).
pub fn current_pid() -> usize {
    SCHED.lock().cur().as_ref().map_or(0, |t| t.process.pid)
}

/// The current thread's id (gettid).
pub fn current_tid() -> usize {
    SCHED.lock().cur().as_ref().map_or(0, |t| t.tid)
}

/// The current thread, without touching its reference count.
pub(super) fn current_ref() -> &'static Thread {
    let t = current_ptr();
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
pub(super) fn ctx_ptr(ctx: &SpinLock<TaskContext, { rank::CONTEXT }>) -> *mut TaskContext {
    let mut g = ctx.lock();
    &mut *g as *mut TaskContext
}

/// Switch from the current thread to the scheduler.
pub(super) fn switch_to_scheduler() {
    // A system call running without the lock (`task::unlocked`) takes it before it may wait.
    assert!(hart::holds_lock(), "switch without the big kernel lock");
    let t = current_thread();
    let from: *mut TaskContext = ctx_ptr(&t.ctx);
    let to: *const TaskContext = ctx_ptr(&IDLE_CTX[hart::index()]);
    drop(t);
    // Nothing that spins may stay locked while this thread sleeps or waits for its turn.
    crate::arch::lockcheck::assert_none_held("switches away from a thread");
    // SAFETY: both contexts live in statics or in a thread kept alive by `SCHED.current`
    // until the scheduler runs again; no lock is held across the switch and nothing else
    // runs on this hart meanwhile.
    unsafe { super::switch::switch(from, to) };
}

/// Set by `plant_lock_bug("switch")`: the next yield switches away holding a spin lock.
static PLANT_SWITCH: core::sync::atomic::AtomicBool = core::sync::atomic::AtomicBool::new(false);

/// The lock the planted order bug holds: ranked as the interval timers, above `SCHED`.
static PLANT_LOCK: SpinLock<(), { rank::ITIMERS }> = SpinLock::new(());
/// The lock the planted switch bug holds across a switch (ranked below everything).
static PLANT_LOW: SpinLock<(), { rank::PLANTED }> = SpinLock::new(());

/// Plant a spin-lock misuse the lock checker must catch (`lockcheck_plant=KIND` at boot, for
/// `make test-lockcheck`): `double` takes the scheduler lock twice, `order` takes it while
/// holding a higher-ranked lock ([`PLANT_LOCK`]), `switch` makes the next yield switch away
/// while it holds [`PLANT_LOW`]. A kernel without the checker deadlocks on the first and runs on past
/// the others. False for an unknown kind.
pub fn plant_lock_bug(kind: &str) -> bool {
    match kind {
        "double" => {
            let _a = SCHED.lock();
            let _b = SCHED.lock();
        }
        "order" => {
            let _high = PLANT_LOCK.lock();
            let _sched = SCHED.lock();
        }
        "switch" => PLANT_SWITCH.store(true, Relaxed),
        _ => return false,
    }
    true
}

/// Let `t` run only on the harts of `harts` (bit i: hart slot i; at least one of them runs).
/// If `t` is the caller and this hart is not among them, it moves now (a yield: the
/// scheduler of a hart it may run on takes it); another thread moves at its next switch.
pub fn set_affinity(t: &Arc<Thread>, harts: u64) {
    t.affinity.store(harts, Relaxed);
    let me = hart::index();
    let caller = SCHED.lock().current[me]
        .as_ref()
        .is_some_and(|c| Arc::ptr_eq(c, t));
    if caller && !t.allows(me) {
        yield_now();
    }
}

/// Give up the CPU; the thread stays runnable (an involuntary switch in getrusage's terms:
/// it could have run on).
pub fn yield_now() {
    yield_counted(false);
}

/// [`yield_now`], counted as a voluntary or an involuntary context switch.
pub(super) fn yield_counted(voluntary: bool) {
    {
        let mut s = SCHED.lock();
        let Some(t) = s.cur().clone() else { return };
        t.process.count_switch(voluntary);
        t.inner.lock().state = State::Ready;
        // Another hart can take it only once this one releases the big kernel lock, after
        // the switch below has saved its registers.
        s.push_yielded(t);
    }
    if PLANT_SWITCH.load(Relaxed) && PLANT_SWITCH.swap(false, Relaxed) {
        let _held = PLANT_LOW.lock();
        return switch_to_scheduler();
    }
    switch_to_scheduler();
}

/// Sleep until [`wake`] (the caller has put itself where its waker finds it).
pub fn block_current() {
    current_ref().process.count_switch(true);
    with_thread(|t| t.state = State::Waiting);
    switch_to_scheduler();
}

/// Make a sleeping thread runnable (no effect on one that is not sleeping).
pub fn wake(t: &Arc<Thread>) {
    wake_in(&mut SCHED.lock(), t);
}

/// [`wake`] with the scheduler held; true if `t` was asleep and is now runnable.
fn wake_in(s: &mut Scheduler, t: &Arc<Thread>) -> bool {
    make_ready(s, t, Scheduler::push_ready)
}

/// [`wake`] by a caller about to sleep: `t` is queued as a yielding thread is, an idle hart
/// woken only if `t` may not run on this one.
pub fn wake_sync(t: &Arc<Thread>) {
    make_ready(&mut SCHED.lock(), t, Scheduler::push_yielded);
}

/// Mark `t` runnable and `queue` it, if it was asleep (true then).
fn make_ready(s: &mut Scheduler, t: &Arc<Thread>, queue: fn(&mut Scheduler, Arc<Thread>)) -> bool {
    let mut inner = t.inner.lock();
    if inner.state != State::Waiting {
        return false;
    }
    inner.state = State::Ready;
    drop(inner);
    queue(s, t.clone());
    true
}

/// Make `t` look at its signals and exit requests soon: wake it if it sleeps ([`wake`]), and if
/// it runs on another hart (user code there enters the kernel only at its next trap, up to a
/// timer tick away) interrupt that hart with an IPI, whose trap returns to user mode through
/// the signal check.
pub fn wake_or_kick(t: &Arc<Thread>) {
    let mut s = SCHED.lock();
    if wake_in(&mut s, t) {
        return;
    }
    let me = hart::index();
    for (i, c) in s.current.iter().enumerate() {
        if i != me && c.as_ref().is_some_and(|c| Arc::ptr_eq(c, t)) {
            hart::send_ipi(i);
        }
    }
}

/// Wake every thread of `p` (each re-checks what it waits for: wait4, a signal).
pub fn wake_process(p: &Arc<Process>) {
    let threads = p.inner.lock().threads.clone();
    for t in &threads {
        wake(t);
    }
}

/// The current process's root directory (`chroot`): `None` for `/`, and while no process
/// runs (boot, mounting).
pub fn current_root() -> Option<Arc<str>> {
    if current_ptr().is_null() {
        return None;
    }
    current_ref().process.root.lock().clone()
}

/// The current process's credentials (root's while no process runs: boot, mounting).
pub fn current_cred() -> cred::Cred {
    if current_ptr().is_null() {
        return cred::Cred::default();
    }
    with_current(|p| p.cred.clone())
}

/// The current process.
pub fn current_process() -> Arc<Process> {
    current()
}
