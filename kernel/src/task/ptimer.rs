//! POSIX per-process timers: timer_create, timer_settime, timer_gettime, timer_getoverrun,
//! timer_delete.
//!
//! A timer counts one clock: the wall clocks (CLOCK_REALTIME, CLOCK_MONOTONIC,
//! CLOCK_BOOTTIME) by the monotonic clock (an absolute CLOCK_REALTIME time is turned into a
//! monotonic deadline when set, as timerfd does), the CPU clocks by the process's or the
//! creating thread's CPU time. When it runs out it notifies as its `sigevent` asks: a signal
//! to the process (SIGEV_SIGNAL, SIGEV_THREAD), to one of its threads (SIGEV_THREAD_ID), or
//! nothing (SIGEV_NONE); then again every interval. Expirations while its signal is still
//! pending, and those a late check skipped, are that signal's overrun, which
//! timer_getoverrun reports once it has been delivered (before, the previous one's). The sigevent's value is not handed to the handler: this
//! kernel's signal frames carry no `si_value`.
//!
//! All armed timers are in one list checked with the interval timers (`itimer`) at every
//! timer tick and in the idle loop. Ids are per process, the lowest free from 0; a fork's
//! child has none, execve and exit delete them (Linux does the same).

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use abi::Errno;
use spin::Mutex;

use super::process::{Process, Thread};
use super::signal;

/// The most timers one process may have (Linux bounds them by RLIMIT_SIGPENDING): EAGAIN.
const MAX_TIMERS: usize = 256;
/// timer_getoverrun's ceiling (DELAYTIMER_MAX).
const OVERRUN_MAX: u64 = i32::MAX as u64;

/// What a timer's time is.
#[derive(Clone)]
pub enum Clock {
    /// The monotonic clock (the wall clocks); true for CLOCK_REALTIME, whose absolute times
    /// the caller converts.
    Wall(bool),
    /// The process's CPU time.
    ProcessCpu,
    /// One thread's CPU time.
    ThreadCpu(Weak<Thread>),
}

/// How a timer tells its process.
#[derive(Clone)]
pub enum Notify {
    None,
    Process(usize),
    Thread(Weak<Thread>, usize),
}

struct Timer {
    pid: usize,
    id: i32,
    clock: Clock,
    notify: Notify,
    /// When it runs out next, on its clock; None: disarmed.
    deadline: Option<u64>,
    interval: u64,
    /// Expirations the newest signal stands for beyond one (counted while it is pending),
    /// and the count of the signal before it (timer_getoverrun).
    overrun: u64,
    overrun_last: u64,
    process: Weak<Process>,
}

static TIMERS: Mutex<Vec<Timer>> = Mutex::new(Vec::new());

/// `clock` now; None when its thread is gone. `now` is the monotonic clock.
fn clock_now(clock: &Clock, p: &Weak<Process>, now: u64) -> Option<u64> {
    match clock {
        Clock::Wall(_) => Some(now),
        Clock::ProcessCpu => p.upgrade().map(|p| p.cpu_ns()),
        Clock::ThreadCpu(t) => t.upgrade().map(|t| t.cpu_ns.load(Relaxed)),
    }
}

/// A new disarmed timer of `p`; its id.
pub fn create(p: &Arc<Process>, clock: Clock, notify: Notify) -> Result<i32, Errno> {
    let mut list = TIMERS.lock();
    let mut ids: Vec<i32> = list
        .iter()
        .filter(|t| t.pid == p.pid)
        .map(|t| t.id)
        .collect();
    if ids.len() >= MAX_TIMERS {
        return Err(Errno::EAGAIN);
    }
    ids.sort_unstable();
    let id = ids
        .iter()
        .enumerate()
        .find(|(i, id)| **id != *i as i32)
        .map_or(ids.len() as i32, |(i, _)| i as i32);
    list.push(Timer {
        pid: p.pid,
        id,
        clock,
        notify,
        deadline: None,
        interval: 0,
        overrun: 0,
        overrun_last: 0,
        process: Arc::downgrade(p),
    });
    Ok(id)
}

fn with_timer<R>(pid: usize, id: i32, f: impl FnOnce(&mut Timer) -> R) -> Result<R, Errno> {
    let mut list = TIMERS.lock();
    let t = list
        .iter_mut()
        .find(|t| t.pid == pid && t.id == id)
        .ok_or(Errno::EINVAL)?;
    Ok(f(t))
}

/// The timer's clock as its own process (the caller) reads it: the CPU clocks with the
/// slice now running, which the scheduler has not added up yet: `cpu` is the caller's
/// (process, thread) CPU time as `task::cpu_times` gives it.
fn caller_clock(t: &Timer, now: u64, cpu: (u64, u64)) -> Option<u64> {
    let (proc_cpu, thread_cpu) = cpu;
    match &t.clock {
        Clock::Wall(_) => Some(now),
        Clock::ProcessCpu => Some(proc_cpu),
        Clock::ThreadCpu(w) => {
            let th = w.upgrade()?;
            if Arc::ptr_eq(&th, &super::sched::current_thread()) {
                Some(thread_cpu)
            } else {
                Some(th.cpu_ns.load(Relaxed))
            }
        }
    }
}

/// (time left, interval) in ns; (0, 0) when disarmed. `now` is the monotonic clock.
fn left(t: &Timer, now: u64, cpu: (u64, u64)) -> (u64, u64) {
    match (t.deadline, caller_clock(t, now, cpu)) {
        // An armed timer whose time has come reports at least 1 ns (it fires at the tick).
        (Some(d), Some(at)) => (d.saturating_sub(at).max(1), t.interval),
        _ => (0, t.interval),
    }
}

pub fn gettime(pid: usize, id: i32, now: u64, cpu: (u64, u64)) -> Result<(u64, u64), Errno> {
    with_timer(pid, id, |t| left(t, now, cpu))
}

/// Arm: the first expiry `value` ns from now on the timer's clock (`absolute`: at `value`
/// on it; for a wall timer the caller gives the monotonic time), then every `interval`;
/// disarm: `value` 0. Returns the old setting as [`gettime`] does.
pub fn settime(
    pid: usize,
    id: i32,
    now: u64,
    cpu: (u64, u64),
    value: u64,
    absolute: bool,
    interval: u64,
) -> Result<(u64, u64), Errno> {
    with_timer(pid, id, |t| {
        let old = left(t, now, cpu);
        t.overrun = 0;
        t.overrun_last = 0;
        t.interval = if value == 0 { 0 } else { interval };
        t.deadline = if value == 0 {
            None
        } else if absolute {
            Some(value)
        } else {
            caller_clock(t, now, cpu).map(|at| at.saturating_add(value))
        };
        old
    })
}

/// Whether timer `id` counts CLOCK_REALTIME.
pub fn is_realtime(pid: usize, id: i32) -> Result<bool, Errno> {
    with_timer(pid, id, |t| matches!(t.clock, Clock::Wall(true)))
}

/// The overrun of the last signal delivered: while the newest is still pending, the one
/// before it's; once it has been delivered, what it gathered.
pub fn getoverrun(pid: usize, id: i32) -> Result<usize, Errno> {
    let (n, p) = with_timer(pid, id, |t| (t.notify.clone(), t.process.clone()))?;
    let pending = p.upgrade().is_some_and(|p| still_pending(&n, &p));
    with_timer(pid, id, |t| {
        let v = if pending { t.overrun_last } else { t.overrun };
        v.min(OVERRUN_MAX) as usize
    })
}

pub fn delete(pid: usize, id: i32) -> Result<(), Errno> {
    let mut list = TIMERS.lock();
    let i = list
        .iter()
        .position(|t| t.pid == pid && t.id == id)
        .ok_or(Errno::EINVAL)?;
    list.swap_remove(i);
    Ok(())
}

/// Delete every timer of process `pid` (execve, exit).
pub fn delete_all(pid: usize) {
    TIMERS.lock().retain(|t| t.pid != pid);
}

/// Whether signal `sig` is still pending where `n` sends it.
fn still_pending(n: &Notify, p: &Process) -> bool {
    match n {
        Notify::None => false,
        Notify::Process(sig) => p.sig_pending.load(Relaxed) & signal::bit(*sig) != 0,
        Notify::Thread(t, sig) => t
            .upgrade()
            .is_some_and(|t| t.sig_pending.load(Relaxed) & signal::bit(*sig) != 0),
    }
}

/// Notify for every timer whose time has come and re-arm periodic ones; the earliest
/// wall-clock deadline still pending.
pub fn fire_expired(now: u64) -> Option<u64> {
    let mut due: Vec<(Arc<Process>, Notify)> = Vec::new();
    {
        let mut list = TIMERS.lock();
        list.retain_mut(|t| {
            let Some(d) = t.deadline else { return true };
            let Some(p) = t.process.upgrade() else {
                return false;
            };
            let Some(at) = clock_now(&t.clock, &t.process, now) else {
                t.deadline = None;
                return true;
            };
            if d > at {
                return true;
            }
            let runs = match (at - d).checked_div(t.interval) {
                Some(q) => q + 1,
                None => 1,
            };
            t.deadline = (t.interval > 0).then(|| d.saturating_add(runs * t.interval));
            if still_pending(&t.notify, &p) {
                t.overrun = t.overrun.saturating_add(runs);
            } else {
                // The previous signal has been delivered: its count is final.
                t.overrun_last = t.overrun;
                t.overrun = runs - 1;
                due.push((p, t.notify.clone()));
            }
            true
        });
    }
    for (p, n) in due {
        match n {
            Notify::None => {}
            Notify::Process(sig) => signal::send(&p, sig),
            Notify::Thread(t, sig) => match t.upgrade() {
                Some(t) => signal::send_thread(&t, sig),
                None => signal::send(&p, sig),
            },
        }
    }
    TIMERS
        .lock()
        .iter()
        .filter(|t| matches!(t.clock, Clock::Wall(_)))
        .filter_map(|t| t.deadline)
        .min()
}
