//! The scheduler loop (task layer): run ready threads round-robin, and the idle moment
//! between them. What it calls above the task layer (console input, the file systems'
//! periodic work, power-off) it gets as [`Services`] registered at boot.

use alloc::sync::Arc;
use core::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};

use super::process::{CpuTime, State};
use super::sched::{ctx_ptr, BUSY_NS, CURRENT, IDLE_CTX, SCHED, SWITCHES};
use super::switch::TaskContext;
use super::wait;
use crate::arch::hart::{self, Padded, MAX_HARTS};

pub const TIME_SLICE_MS: u64 = 10;

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
    /// What other subsystems undo when a process exits, given its pid (System V
    /// semaphores' SEM_UNDO adjustments).
    pub process_exit: fn(usize),
    /// Write the current process's core file for signal `sig` with the faulting thread's
    /// registers `tf`; whether one was written (the wait status's core bit).
    pub core_dump: fn(usize, &crate::arch::trap::TrapFrame) -> bool,
    /// Every scheduler pass, and a thread spinning for a lock ([`super::relax`]): take a
    /// device interrupt that came while the hart ran kernel code, and wake the threads whose
    /// device requests completed.
    pub devices: fn(),
}

pub(super) static SERVICES: spin::Once<Services> = spin::Once::new();

/// Register the [`Services`] (once, at boot, before [`run`]).
pub fn set_services(services: Services) {
    SERVICES.call_once(|| services);
}

/// Power off through the registered service (straight away, if none is registered).
pub(super) fn power_off(code: u32) -> ! {
    match SERVICES.get() {
        Some(s) => (s.power_off)(code),
        None => crate::arch::power::shutdown(code),
    }
}

/// Run the registered [`Services::core_dump`] (false when none is registered).
pub(super) fn core_dump(sig: usize, tf: &crate::arch::trap::TrapFrame) -> bool {
    SERVICES.get().is_some_and(|s| (s.core_dump)(sig, tf))
}

/// Run the registered [`Services::process_exit`] for process `pid`.
pub(super) fn process_exit(pid: usize) {
    if let Some(s) = SERVICES.get() {
        (s.process_exit)(pid);
    }
}

/// The registered [`Services::devices`], if any.
pub(super) fn service_devices() {
    if let Some(s) = SERVICES.get() {
        (s.devices)();
    }
}

/// When each hart's running thread got the CPU (monotonic ns), for [`cpu_times`].
static RUNNING_SINCE: [Padded<AtomicU64>; MAX_HARTS] =
    [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];

/// CPU time of the current process and of the current thread so far (ns), the time slice
/// running now included: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID.
pub fn cpu_times() -> (u64, u64) {
    let t = super::sched::current_thread();
    let since = RUNNING_SINCE[hart::index()].load(Relaxed);
    let now = crate::arch::time::monotonic_ns().saturating_sub(since);
    (
        t.process.cpu_ns.load(Relaxed) + now,
        t.cpu_ns.load(Relaxed) + now,
    )
}

/// RLIMIT_CPU, checked at each timer tick that finds the current process in user mode:
/// SIGXCPU once its CPU time reaches the soft limit and again each second after, SIGKILL at
/// the hard limit, as Linux's. (Linux raises the soft limit by a second at each SIGXCPU;
/// here the limit stays as set and the next second is kept apart.)
pub fn check_cpu_limit() {
    const SIGXCPU: usize = 24;
    let me = super::sched::current_thread();
    let (soft, hard) = me.process.inner.lock().limits.cpu;
    if soft == super::policy::RLIM_INFINITY && hard == super::policy::RLIM_INFINITY {
        return;
    }
    let secs = cpu_times().0 / 1_000_000_000;
    let sig = {
        let mut p = me.process.inner.lock();
        if secs >= hard {
            Some(super::signal::SIGKILL)
        } else if secs >= soft && secs >= p.xcpu_next_sec {
            p.xcpu_next_sec = secs + 1;
            Some(SIGXCPU)
        } else {
            None
        }
    };
    if let Some(sig) = sig {
        super::signal::send(&me.process, sig);
    }
}

/// When each hart's running thread last came into the kernel (timer ticks): a trap out of
/// user mode, or its switch-in (a thread resumes in the kernel).
static KERNEL_SINCE: [Padded<AtomicU64>; MAX_HARTS] =
    [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];
/// System time (timer ticks) of each hart's running thread since its switch-in, up to its
/// last return to user mode: added to the thread and its process at its switch-out, with the
/// CPU time. Ticks, not ns: the trap path reads the clock twice and converts nothing.
static KERNEL_PENDING: [Padded<AtomicU64>; MAX_HARTS] =
    [const { Padded(AtomicU64::new(0)) }; MAX_HARTS];

/// A trap out of user mode: the running thread's time is system time from here on.
#[inline]
pub fn entered_kernel() {
    KERNEL_SINCE[hart::index()].store(crate::arch::time::ticks(), Relaxed);
}

/// Set by [`idle`] when it skipped the tick's work because a thread was away ([`super::away`]).
static OWED_TICK: AtomicBool = AtomicBool::new(false);

/// Whether the tick's work (console input, timeouts, interval timers, the file systems'
/// periodic work) is owed because [`idle`] skipped it, clearing the debt: the trap handler
/// does it on its way back to user mode, and a timer tick does it anyway.
#[inline]
pub fn take_owed_tick() -> bool {
    OWED_TICK.load(Relaxed) && OWED_TICK.swap(false, Relaxed)
}

/// The running thread begins (`true`) or ends a system call: `/proc/<pid>/syscall` of a
/// sleeping thread names its call only in between.
#[inline]
pub fn in_syscall(yes: bool) {
    super::sched::current_ref().in_syscall.store(yes, Relaxed);
}

/// Back to user mode: the time since the thread came into the kernel was system time.
#[inline]
pub(super) fn leaving_kernel() {
    let h = hart::index();
    let spent = crate::arch::time::ticks().saturating_sub(KERNEL_SINCE[h].load(Relaxed));
    KERNEL_PENDING[h].store(KERNEL_PENDING[h].load(Relaxed) + spent, Relaxed);
}

/// The system time (ns) of the thread running on hart `h` since its switch-in, up to now.
fn kernel_time_here(h: usize) -> u64 {
    let since = KERNEL_SINCE[h].load(Relaxed);
    let ticks = KERNEL_PENDING[h].load(Relaxed) + crate::arch::time::ticks().saturating_sub(since);
    crate::arch::time::ticks_to_ns(ticks)
}

/// The current process's CPU time so far, user and system, this hart's running slice
/// included (the caller is in the kernel: times and getrusage asking).
pub fn process_cpu() -> CpuTime {
    let t = super::sched::current_thread();
    let (total, _) = cpu_times();
    let sys = t.process.sys_ns.load(Relaxed) + kernel_time_here(hart::index());
    CpuTime {
        total_ns: total,
        sys_ns: sys.min(total),
    }
}

/// The current thread of this hart waited `ns` for the big kernel lock (another hart ran
/// kernel code, maybe a disk wait): not its CPU time, so its slice starts that much later.
pub fn not_running_for(ns: u64) {
    let h = hart::index();
    RUNNING_SINCE[h].fetch_add(ns, Relaxed);
    KERNEL_SINCE[h].fetch_add(crate::arch::time::ns_to_ticks(ns), Relaxed);
}

/// The scheduler loop of every hart, entered with the big kernel lock held (which it keeps
/// except while it idles): run ready threads round-robin from the shared queue (those whose
/// affinity names this hart) until none is left.
pub fn run() -> ! {
    crate::arch::time::set_timer_in_ms(TIME_SLICE_MS);
    let me = hart::index();
    loop {
        // Between two threads, harts waiting for the big kernel lock go first: a thread that
        // waits in the kernel by yielding (`changing_space`, `keep_cpu`) for something a thread
        // on another hart must finish would otherwise come straight back here, the big kernel
        // lock never leaving this hart, and that thread would never get into the kernel.
        hart::let_waiters_in();
        service_devices();
        let next = {
            let mut s = SCHED.lock();
            let n = s.take_ready_for(me);
            if let Some(t) = &n {
                s.current[me] = Some(t.clone());
                CURRENT[me].store(Arc::as_ptr(t).cast_mut(), Relaxed);
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
        let tf = {
            let mut inner = t.inner.lock();
            inner.state = State::Running;
            &*inner.tf as *const crate::arch::trap::TrapFrame as usize
        };
        // The thread may have run on another hart since this one last loaded its FP
        // registers: those harts must reload them if it comes back.
        hart::fp_forget_elsewhere(tf);
        // The handshake: a thread is queued only after it switched away (under the big
        // kernel lock, which its hart held until its registers were saved), so it never runs
        // on two harts at once.
        assert!(
            !t.on_cpu.swap(true, Relaxed),
            "thread {} already runs on another hart",
            t.tid
        );
        SWITCHES.fetch_add(1, Relaxed);
        if me == 0 {
            crate::arch::check_boot_stack();
        }
        // A kernel thread (satp 0) runs on the table the hart has, the last thread's or the
        // kernel's, as Linux's kernel threads borrow the last mm: the kernel half is the same
        // in every table, and a switch would flush the TLB twice per kernel thread's turn.
        // The borrowed table stays alive: its process has a thread that ran here last (a
        // process's last thread leaves the kernel's table behind), and with several harts
        // this hart takes the kernel's table before it lets go of the big kernel lock
        // (`hart::borrow_table`). A thread whose table the hart has already (a thread of the
        // same process, or the one a kernel thread borrowed) keeps its TLB entries.
        let satp = t.process.satp.load(Relaxed);
        if satp != 0 {
            hart::use_satp(satp);
        }
        // Code pages may have changed while this hart ran other spaces (`fence_i_user` only
        // reaches the harts running the space).
        hart::fence_i_local();
        let to: *const TaskContext = ctx_ptr(&t.ctx);
        let from: *mut TaskContext = ctx_ptr(&IDLE_CTX[me]);
        let started = crate::arch::time::ticks();
        RUNNING_SINCE[me].store(crate::arch::time::ticks_to_ns(started), Relaxed);
        KERNEL_SINCE[me].store(started, Relaxed);
        KERNEL_PENDING[me].store(0, Relaxed);
        crate::arch::lockcheck::assert_none_held("switches to a thread");
        // SAFETY: see `switch_to_scheduler`.
        unsafe { super::switch::switch(from, to) };
        // From the switch-in, less what the thread waited for the big kernel lock.
        // It left in the kernel: the time since it came in is system time too.
        let ran = crate::arch::time::monotonic_ns().saturating_sub(RUNNING_SINCE[me].load(Relaxed));
        let sys = kernel_time_here(me).min(ran);
        t.process.cpu_ns.fetch_add(ran, Relaxed);
        t.cpu_ns.fetch_add(ran, Relaxed);
        t.process.sys_ns.fetch_add(sys, Relaxed);
        BUSY_NS[me].fetch_add(ran, Relaxed);
        // Its registers are saved: it may now run elsewhere (once this hart lets go of the
        // big kernel lock).
        t.on_cpu.store(false, Relaxed);
        // The scheduler now borrows the thread's table, as kernel threads do: another hart
        // may free it (its process's last thread exits there) once this one lets go of the
        // big kernel lock, and the hart takes the kernel's table before that.
        hart::borrow_table();
        let mut s = SCHED.lock();
        CURRENT[me].store(core::ptr::null_mut(), Relaxed);
        s.current[me] = None;
        drop(s);
        // A dead thread's kernel stack goes here, now that nothing runs on it.
        drop(t);
    }
}

/// Nothing is runnable: take console input, wake sleepers whose time has come, run the file
/// systems' periodic work, and wait for the next timer tick (`wfi`; the timer is set to the
/// earliest deadline, at most a few milliseconds away so typing is picked up). That is the
/// boot hart's idle moment; the other harts' is [`idle_secondary`].
pub(super) fn idle() {
    if hart::index() != 0 {
        return idle_secondary();
    }
    let now = crate::arch::time::monotonic_ns();
    // A thread asleep in a device wait ([`super::away`]: a dbfs barrier's flush, a large read)
    // may hold relaxing locks meanwhile: kvdb's writer lock, its process's state. Console
    // input and the interval timers send signals (a process's state) and the periodic work
    // commits (kvdb's writer lock); run here, on the scheduler's own stack, such work that
    // found one held could not give the CPU away and would spin for ever, the sleeper's
    // wake-up runnable but never run (one hart: LTP's fsync02, whose long fsync left nothing
    // else to run while dbfs's write-back came due). They wait for a pass with nobody away;
    // a timer tick in user mode does them too.
    let quiet = super::sched::AWAY.load(Relaxed) == 0;
    if !quiet {
        // Owed to the next return to user mode (`take_owed_tick`): the tick there may never
        // come, as each idle pass sets the timer a few ms on.
        OWED_TICK.store(true, Relaxed);
    }
    let services = SERVICES.get().filter(|_| quiet);
    if let Some(s) = services {
        (s.take_input)();
    }
    // (Skipped, the interval timers are looked at again within `POLL_NS`.)
    let timers = quiet.then(|| super::itimer::fire_expired(now)).flatten();
    let next = match (wait::wake_expired(now, true), timers) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
    if let Some(s) = services {
        (s.periodic)();
    }
    if SCHED.lock().has_ready_for(0) {
        return;
    }
    const POLL_NS: u64 = 5_000_000;
    let wait_ns = next.map_or(POLL_NS, |d| d.saturating_sub(now).min(POLL_NS));
    crate::arch::time::set_timer_in_ns(wait_ns.max(100_000));
    // Without the big kernel lock: other harts run kernel code meanwhile, and one that makes
    // a thread runnable wakes this hart with an IPI.
    hart::idle_wait();
}

/// A secondary hart's idle moment: sleep until a hart that makes a thread runnable kicks it
/// (`hart::kick_idle`). Console input, timeouts, interval timers and the file systems'
/// periodic work are the boot hart's (its idle loop, or its timer tick while it runs a
/// thread; any hart's tick also wakes expired sleepers), so an idle secondary hart does not
/// wake every 5 ms to take the big kernel lock only to poll them. Its timer stays a
/// backstop, a second away.
fn idle_secondary() {
    if SCHED.lock().has_ready_for(hart::index()) {
        return;
    }
    crate::arch::time::set_timer_in_ms(1000);
    hart::idle_wait();
    // The next thread's time slice.
    crate::arch::time::set_timer_in_ms(TIME_SLICE_MS);
}
