//! Interval timers: setitimer/getitimer (and glibc's alarm, which is setitimer on riscv64).
//!
//! One `ITIMER_REAL` per process, counting wall time (the monotonic clock) and sending the
//! process SIGALRM when it runs out, then again every interval if it has one. Kept in one list
//! checked by [`fire_expired`], which the timer tick and the idle loop call beside the
//! sleepers' deadlines (`wait::wake_expired`), so a timer fires within a tick of its time.
//! As on Linux, a fork's child starts without timers and execve keeps them; the timers of a
//! process go at its exit.
//!
//! `ITIMER_VIRTUAL` (user CPU time, SIGVTALRM) and `ITIMER_PROF` (user and system CPU time,
//! SIGPROF) are not built (the kernel does not tell user time from system time): setitimer
//! and getitimer answer EINVAL for them, Linux's answer for a timer it does not know.

use alloc::sync::{Arc, Weak};
use alloc::vec::Vec;

use spin::Mutex;

use super::process::Process;
use super::signal;

/// SIGALRM's number.
const SIGALRM: usize = 14;

struct Real {
    pid: usize,
    /// When it fires next (monotonic ns).
    deadline: u64,
    /// 0: fires once.
    interval: u64,
    process: Weak<Process>,
}

static REAL: Mutex<Vec<Real>> = Mutex::new(Vec::new());

/// The `ITIMER_REAL` of process `pid` as (time left, interval) in ns; (0, 0) if not armed.
/// An armed timer reports at least one microsecond left (it fires at the next tick), as
/// Linux does.
pub fn get_real(pid: usize, now: u64) -> (u64, u64) {
    REAL.lock()
        .iter()
        .find(|r| r.pid == pid)
        .map_or((0, 0), |r| {
            (r.deadline.saturating_sub(now).max(1000), r.interval)
        })
}

/// Arm (`value` > 0) or disarm (`value` 0) the `ITIMER_REAL` of `p`; returns the old one as
/// [`get_real`] does.
pub fn set_real(p: &Arc<Process>, now: u64, value: u64, interval: u64) -> (u64, u64) {
    let old = get_real(p.pid, now);
    let mut list = REAL.lock();
    list.retain(|r| r.pid != p.pid);
    if value > 0 {
        list.push(Real {
            pid: p.pid,
            deadline: now.saturating_add(value),
            interval,
            process: Arc::downgrade(p),
        });
    }
    old
}

/// Forget the timers of process `pid` (it exited).
pub(super) fn cancel(pid: usize) {
    REAL.lock().retain(|r| r.pid != pid);
}

/// Send SIGALRM for every timer whose time has come; re-arm periodic ones (a timer that fell
/// several intervals behind fires once: signals of one number do not queue). Returns the
/// earliest deadline still pending.
pub fn fire_expired(now: u64) -> Option<u64> {
    let due: Vec<Weak<Process>> = {
        let mut list = REAL.lock();
        let mut due = Vec::new();
        list.retain_mut(|r| {
            if r.deadline > now {
                return true;
            }
            due.push(r.process.clone());
            if r.interval == 0 {
                return false;
            }
            let behind = (now - r.deadline) / r.interval + 1;
            r.deadline = r.deadline.saturating_add(behind.saturating_mul(r.interval));
            true
        });
        due
    };
    for p in due.iter().filter_map(Weak::upgrade) {
        signal::send(&p, SIGALRM);
    }
    REAL.lock().iter().map(|r| r.deadline).min()
}
