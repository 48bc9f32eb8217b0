//! Interval timers: setitimer/getitimer (and glibc's alarm, which is setitimer on riscv64).
//!
//! Each process has three, as on Linux: `ITIMER_REAL` counts wall time (the monotonic clock)
//! and sends SIGALRM; `ITIMER_VIRTUAL` counts the process's user time and sends SIGVTALRM;
//! `ITIMER_PROF` counts its user and system time and sends SIGPROF.
//! A timer fires when its time runs out, then again every interval if it has one.
//!
//! All armed timers are in one list checked by [`fire_expired`], which the timer tick and the
//! idle loop call beside the sleepers' deadlines (`wait::wake_expired`), so a timer fires
//! within a tick of its time (CPU time is added up when a thread leaves the CPU, so the CPU
//! timers see it a time slice late at most). As on Linux, a fork's child starts without
//! timers and execve keeps them; the timers of a process go at its exit.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use crate::arch::lockcheck::{rank, SpinLock};

use super::process::Process;
use super::signal;

/// `which` of setitimer: wall time, CPU time (user, here all), CPU time.
pub const ITIMER_REAL: usize = 0;
pub const ITIMER_VIRTUAL: usize = 1;
pub const ITIMER_PROF: usize = 2;

struct Timer {
    pid: usize,
    which: usize,
    /// When it fires next: monotonic ns (`ITIMER_REAL`) or the process's CPU ns.
    deadline: u64,
    /// 0: fires once.
    interval: u64,
    process: Weak<Process>,
}

static TIMERS: SpinLock<Vec<Timer>, { rank::ITIMERS }> = SpinLock::new(Vec::new());

/// The clock timer `which` of `p` counts, now (`now`: the monotonic clock): wall time
/// (`ITIMER_REAL`), the process's user time (`ITIMER_VIRTUAL`), or all its CPU time, user
/// and system (`ITIMER_PROF`).
fn clock(which: usize, p: &Process, now: u64) -> u64 {
    match which {
        ITIMER_REAL => now,
        ITIMER_VIRTUAL => p.cpu().user_ns(),
        _ => p.cpu_ns(),
    }
}

fn signal_of(which: usize) -> usize {
    match which {
        ITIMER_REAL => 14,    // SIGALRM
        ITIMER_VIRTUAL => 26, // SIGVTALRM
        _ => 27,              // SIGPROF
    }
}

/// Timer `which` (0..=2) of `p` as (time left, interval) in ns; (0, 0) if not armed. An
/// armed timer reports at least one microsecond left (it fires at the next tick), as Linux
/// does.
pub fn get(p: &Process, which: usize, now: u64) -> (u64, u64) {
    let at = clock(which, p, now);
    TIMERS
        .lock()
        .iter()
        .find(|t| t.pid == p.pid && t.which == which)
        .map_or((0, 0), |t| {
            (t.deadline.saturating_sub(at).max(1000), t.interval)
        })
}

/// Arm (`value` > 0) or disarm (`value` 0) timer `which` (0..=2) of `p`; returns the old one
/// as [`get`] does.
pub fn set(p: &Arc<Process>, which: usize, now: u64, value: u64, interval: u64) -> (u64, u64) {
    let old = get(p, which, now);
    let at = clock(which, p, now);
    let mut list = TIMERS.lock();
    list.retain(|t| !(t.pid == p.pid && t.which == which));
    if value > 0 {
        list.push(Timer {
            pid: p.pid,
            which,
            deadline: at.saturating_add(value),
            interval,
            process: Arc::downgrade(p),
        });
    }
    old
}

/// Forget the timers of process `pid` (it exited).
pub(super) fn cancel(pid: usize) {
    TIMERS.lock().retain(|t| t.pid != pid);
}

/// Send the signal of every timer whose time has come; re-arm periodic ones (a timer that
/// fell several intervals behind fires once: signals of one number do not queue). Returns
/// the earliest wall-clock deadline still pending, of these and of the POSIX timers
/// (`ptimer`, fired here too) (the CPU timers need no wake-up of their
/// own: their process is running, so the tick comes).
pub fn fire_expired(now: u64) -> Option<u64> {
    let due: Vec<(Weak<Process>, usize)> = {
        let mut list = TIMERS.lock();
        let mut due = Vec::new();
        list.retain_mut(|t| {
            let at = if t.which == ITIMER_REAL {
                now
            } else {
                match t.process.upgrade() {
                    Some(p) => clock(t.which, &p, now),
                    None => return false,
                }
            };
            if t.deadline > at {
                return true;
            }
            due.push((t.process.clone(), signal_of(t.which)));
            if t.interval == 0 {
                return false;
            }
            let behind = (at - t.deadline) / t.interval + 1;
            t.deadline = t.deadline.saturating_add(behind.saturating_mul(t.interval));
            true
        });
        due
    };
    for (p, sig) in &due {
        if let Some(p) = p.upgrade() {
            signal::send(&p, *sig);
        }
    }
    let next = TIMERS
        .lock()
        .iter()
        .filter(|t| t.which == ITIMER_REAL)
        .map(|t| t.deadline)
        .min();
    // The POSIX timers are checked at the same moments.
    match (next, super::ptimer::fire_expired(now)) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}
