//! timer_create, timer_settime, timer_gettime, timer_getoverrun, timer_delete: the calls on
//! `task::ptimer`'s POSIX timers, with Linux's errno (a bad clock, sigevent, id or time is
//! EINVAL, a bad pointer EFAULT, a clock with no timers here EOPNOTSUPP).

use abi::stat::Timespec;
use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use super::timerfd::read_ns;
use crate::arch::time;
use crate::task::ptimer::{self, Clock, Notify};

const CLOCK_REALTIME: usize = 0;
const CLOCK_MONOTONIC: usize = 1;
const CLOCK_PROCESS_CPUTIME_ID: usize = 2;
const CLOCK_THREAD_CPUTIME_ID: usize = 3;
const CLOCK_MONOTONIC_RAW: usize = 4;
const CLOCK_REALTIME_COARSE: usize = 5;
const CLOCK_MONOTONIC_COARSE: usize = 6;
const CLOCK_BOOTTIME: usize = 7;
const CLOCK_REALTIME_ALARM: usize = 8;
const CLOCK_BOOTTIME_ALARM: usize = 9;

const SIGEV_SIGNAL: i32 = 0;
const SIGEV_NONE: i32 = 1;
const SIGEV_THREAD: i32 = 2;
const SIGEV_THREAD_ID: i32 = 4;
const SIGALRM: usize = 14;
const SIGRTMAX: i32 = 64;

const TIMER_ABSTIME: u32 = 1;

fn timer_id(id: usize) -> i32 {
    id as u32 as i32
}

pub fn sys_timer_create(clock: usize, sevp: usize, id_ptr: usize) -> SysResult {
    let clock = match clock {
        CLOCK_REALTIME => Clock::Wall(true),
        CLOCK_MONOTONIC | CLOCK_BOOTTIME => Clock::Wall(false),
        CLOCK_PROCESS_CPUTIME_ID => Clock::ProcessCpu,
        CLOCK_THREAD_CPUTIME_ID => {
            let me = crate::task::find_thread(crate::task::current_tid()).ok_or(Errno::ESRCH)?;
            Clock::ThreadCpu(alloc::sync::Arc::downgrade(&me))
        }
        // Clocks Linux has no timers on, and the alarm clocks (no wake-up RTC here).
        CLOCK_MONOTONIC_RAW
        | CLOCK_REALTIME_COARSE
        | CLOCK_MONOTONIC_COARSE
        | CLOCK_REALTIME_ALARM
        | CLOCK_BOOTTIME_ALARM => return Err(Errno::EOPNOTSUPP),
        _ => return Err(Errno::EINVAL),
    };
    let p = crate::task::current_process();
    let mut value = None;
    let notify = if sevp == 0 {
        Notify::Process(SIGALRM)
    } else {
        // struct sigevent: sigev_value (8), sigev_signo, sigev_notify, then the thread id.
        let mut b = [0u8; 20];
        copy_in(sevp, &mut b)?;
        let word = |at: usize| i32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
        let (signo, how, tid) = (word(8), word(12), word(16));
        value = Some(u64::from_le_bytes(b[..8].try_into().unwrap_or([0; 8])));
        let valid_sig = (1..=SIGRTMAX).contains(&signo);
        match how {
            SIGEV_NONE => Notify::None,
            SIGEV_SIGNAL | SIGEV_THREAD if valid_sig => Notify::Process(signo as usize),
            SIGEV_THREAD_ID if valid_sig => {
                let t = crate::task::find_thread(tid.max(0) as usize)
                    .filter(|t| alloc::sync::Arc::ptr_eq(&t.process, &p))
                    .ok_or(Errno::EINVAL)?;
                Notify::Thread(alloc::sync::Arc::downgrade(&t), signo as usize)
            }
            _ => return Err(Errno::EINVAL),
        }
    };
    let id = ptimer::create(&p, clock, notify, value)?;
    if let Err(e) = copy_out(id_ptr, &id.to_le_bytes()) {
        let _ = ptimer::delete(p.pid, id);
        return Err(e);
    }
    Ok(0)
}

fn itimerspec(interval: u64, value: u64) -> [u8; 32] {
    let ts = |ns: u64| Timespec {
        tv_sec: (ns / 1_000_000_000) as i64,
        tv_nsec: (ns % 1_000_000_000) as i64,
    };
    let mut b = [0u8; 32];
    b[..16].copy_from_slice(&ts(interval).as_bytes());
    b[16..].copy_from_slice(&ts(value).as_bytes());
    b
}

/// timer_settime: arm (relative, or TIMER_ABSTIME on the timer's clock) or disarm (value 0);
/// the old setting into `old` if given.
pub fn sys_timer_settime(id: usize, flags: u32, new: usize, old: usize) -> SysResult {
    let id = timer_id(id);
    let pid = crate::task::current_pid();
    if new == 0 {
        // Linux checks the id before the pointer.
        ptimer::gettime(pid, id, time::monotonic_ns(), crate::task::cpu_times())?;
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 32];
    copy_in(new, &mut b)?;
    let (interval, value) = (read_ns(&b[..16])?, read_ns(&b[16..])?);
    let now = time::monotonic_ns();
    let absolute = flags & TIMER_ABSTIME != 0 && value != 0;
    let (value, late) = if absolute && ptimer::is_realtime(pid, id)? {
        // A wall-clock time as a monotonic deadline (one already past fires at once, and
        // how long ago it was counts in its first overrun).
        let real = time::realtime_ns();
        let late = real.saturating_sub(value);
        (value.saturating_sub(real).saturating_add(now).max(1), late)
    } else {
        (value, 0)
    };
    let cpu = crate::task::cpu_times();
    let (left, ival) = ptimer::settime(pid, id, now, cpu, value, absolute, interval, late)?;
    if old != 0 {
        copy_out(old, &itimerspec(ival, left))?;
    }
    Ok(0)
}

pub fn sys_timer_gettime(id: usize, cur: usize) -> SysResult {
    let (left, ival) = ptimer::gettime(
        crate::task::current_pid(),
        timer_id(id),
        time::monotonic_ns(),
        crate::task::cpu_times(),
    )?;
    copy_out(cur, &itimerspec(ival, left))?;
    Ok(0)
}

pub fn sys_timer_getoverrun(id: usize) -> SysResult {
    ptimer::getoverrun(crate::task::current_pid(), timer_id(id))
}

pub fn sys_timer_delete(id: usize) -> SysResult {
    ptimer::delete(crate::task::current_pid(), timer_id(id)).map(|_| 0)
}
