//! POSIX per-process timers: timer_create, timer_settime, timer_gettime, timer_getoverrun,
//! timer_delete.
//!
//! A timer counts one clock: the wall clocks (CLOCK_REALTIME, CLOCK_MONOTONIC,
//! CLOCK_BOOTTIME) by the monotonic clock (an absolute CLOCK_REALTIME time is turned into a
//! monotonic deadline when set, as timerfd does), the CPU clocks by the process's or the
//! creating thread's CPU time. When it runs out it notifies as its `sigevent` asks: a signal
//! to the process (SIGEV_SIGNAL, SIGEV_THREAD), to one of its threads (SIGEV_THREAD_ID), or
//! nothing (SIGEV_NONE); then again every interval. The signal's siginfo is SI_TIMER with
//! the timer's id, the sigevent's value and the overrun. Expirations while its signal is
//! still queued, and those a late check skipped (or that an absolute time in the past
//! stands for), are that signal's overrun: counted in the queued siginfo, and reported by
//! timer_getoverrun once it has been delivered (before, the previous one's).
//!
//! All armed timers are in one list checked with the interval timers (`itimer`) at every
//! timer tick and in the idle loop. Ids are per process, the lowest free from 0; a fork's
//! child has none, execve and exit delete them (Linux does the same).

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;
use core::sync::atomic::Ordering::Relaxed;

use crate::arch::lockcheck::{rank, SpinLock};
use abi::Errno;

use super::process::{Process, Thread};
use super::siginfo::{SigInfo, SI_TIMER};
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
    /// How long before its deadline the first expiry really was (an absolute CLOCK_REALTIME
    /// time further back than the monotonic clock reaches), counted at that expiry.
    late: u64,
    /// The sigevent's `sigev_value`, the siginfo's `si_value`.
    value: u64,
    process: Weak<Process>,
}

static TIMERS: SpinLock<Vec<Timer>, { rank::POSIX_TIMERS }> = SpinLock::new(Vec::new());

/// `clock` now; None when its thread is gone. `now` is the monotonic clock.
fn clock_now(clock: &Clock, p: &Weak<Process>, now: u64) -> Option<u64> {
    match clock {
        Clock::Wall(_) => Some(now),
        Clock::ProcessCpu => p.upgrade().map(|p| p.cpu_ns()),
        Clock::ThreadCpu(t) => t.upgrade().map(|t| t.cpu_ns.load(Relaxed)),
    }
}

/// A new disarmed timer of `p`; its id. `value` is the siginfo's `si_value` (None: the id,
/// as Linux gives a timer created without a sigevent).
pub fn create(
    p: &Arc<Process>,
    clock: Clock,
    notify: Notify,
    value: Option<u64>,
) -> Result<i32, Errno> {
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
        late: 0,
        value: value.unwrap_or(id as u32 as u64),
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
/// disarm: `value` 0; `late`: how far before `value` the absolute time asked for really
/// is (see [`Timer::late`]). Returns the old setting as [`gettime`] does.
#[allow(clippy::too_many_arguments)]
pub fn settime(
    pid: usize,
    id: i32,
    now: u64,
    cpu: (u64, u64),
    value: u64,
    absolute: bool,
    interval: u64,
    late: u64,
) -> Result<(u64, u64), Errno> {
    with_timer(pid, id, |t| {
        let old = left(t, now, cpu);
        t.overrun = 0;
        t.overrun_last = 0;
        t.late = late;
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
    let pending = p.upgrade().is_some_and(|p| queued(&n, &p, id, None));
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

/// Whether timer `id`'s signal is still queued where `n` sends it; if so, and `overrun` is
/// given, its siginfo's `si_overrun` becomes that (capped at DELAYTIMER_MAX).
fn queued(n: &Notify, p: &Process, id: i32, overrun: Option<u64>) -> bool {
    let (thread, sig) = match n {
        Notify::None => return false,
        Notify::Process(sig) => (None, *sig),
        Notify::Thread(t, sig) => match t.upgrade() {
            Some(t) => (Some(t), *sig),
            None => return false,
        },
    };
    let mine = |i: &SigInfo| i.signo == sig as i32 && i.code == SI_TIMER && i.pid == id as u32;
    signal::update_queued(p, thread.as_deref(), mine, |i| {
        if let Some(n) = overrun {
            *i = SigInfo::timer(sig, id, n.min(OVERRUN_MAX) as i32, i.value);
        }
    })
}

/// Notify for every timer whose time has come and re-arm periodic ones; the earliest
/// wall-clock deadline still pending.
pub fn fire_expired(now: u64) -> Option<u64> {
    let mut due: Vec<(Arc<Process>, Notify, SigInfo)> = Vec::new();
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
            let behind = (at - d).saturating_add(core::mem::take(&mut t.late));
            let runs = match behind.checked_div(t.interval) {
                Some(q) => q.saturating_add(1),
                None => 1,
            };
            t.deadline =
                (t.interval > 0).then(|| at.saturating_add(t.interval - behind % t.interval));
            let more = t.overrun.saturating_add(runs);
            if queued(&t.notify, &p, t.id, Some(more)) {
                t.overrun = more;
            } else {
                // The previous signal has been delivered: its count is final.
                t.overrun_last = t.overrun;
                t.overrun = runs - 1;
                let sig = match t.notify {
                    Notify::Process(sig) | Notify::Thread(_, sig) => sig,
                    Notify::None => 0,
                };
                let overrun = t.overrun.min(OVERRUN_MAX) as i32;
                let info = SigInfo::timer(sig, t.id, overrun, t.value);
                due.push((p, t.notify.clone(), info));
            }
            true
        });
    }
    for (p, n, info) in due {
        // Past RLIMIT_SIGPENDING this expiry is lost, as on Linux when its siginfo cannot be
        // allocated.
        let _ = match n {
            Notify::None => Ok(()),
            Notify::Process(_) => signal::send_info(&p, info),
            Notify::Thread(t, _) => match t.upgrade() {
                Some(t) => signal::send_thread_info(&t, info),
                None => signal::send_info(&p, info),
            },
        };
    }
    TIMERS
        .lock()
        .iter()
        .filter(|t| matches!(t.clock, Clock::Wall(_)))
        .filter_map(|t| t.deadline)
        .min()
}
