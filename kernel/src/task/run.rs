//! The scheduler loop (task layer): run ready threads round-robin, and the idle moment
//! between them. What it calls above the task layer (console input, the file systems'
//! periodic work, power-off) it gets as [`Services`] registered at boot.

use alloc::sync::Arc;
use core::sync::atomic::Ordering::Relaxed;

use super::process::State;
use super::sched::{ctx_ptr, CURRENT, IDLE_CTX, SCHED, SWITCHES};
use super::switch::TaskContext;
use super::wait;

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

/// When the running thread got the CPU (monotonic ns), for [`cpu_times`].
static RUNNING_SINCE: core::sync::atomic::AtomicU64 = core::sync::atomic::AtomicU64::new(0);

/// CPU time of the current process and of the current thread so far (ns), the time slice
/// running now included: CLOCK_PROCESS_CPUTIME_ID and CLOCK_THREAD_CPUTIME_ID.
pub fn cpu_times() -> (u64, u64) {
    let t = super::sched::current_thread();
    let now = crate::arch::time::monotonic_ns().saturating_sub(RUNNING_SINCE.load(Relaxed));
    (
        t.process.cpu_ns.load(Relaxed) + now,
        t.cpu_ns.load(Relaxed) + now,
    )
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
        RUNNING_SINCE.store(started, Relaxed);
        // SAFETY: see `switch_to_scheduler`.
        unsafe { super::switch::switch(from, to) };
        let ran = crate::arch::time::monotonic_ns().saturating_sub(started);
        t.process.cpu_ns.fetch_add(ran, Relaxed);
        t.cpu_ns.fetch_add(ran, Relaxed);
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
pub(super) fn idle() {
    let now = crate::arch::time::monotonic_ns();
    let services = SERVICES.get();
    if let Some(s) = services {
        (s.take_input)();
    }
    let next = match (wait::wake_expired(now), super::itimer::fire_expired(now)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };
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
