//! timerfd_create, timerfd_settime, timerfd_gettime (`ipc::timerfd` keeps the timers;
//! read and poll go through `stream`).

use abi::stat::Timespec;
use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::fs::file::OpenFile;
use crate::fs::path::Loc;
use crate::ipc::timerfd::TimerFd;
use crate::task::with_current;

const CLOCK_REALTIME: usize = 0;
const CLOCK_MONOTONIC: usize = 1;
const CLOCK_BOOTTIME: usize = 7;
const TFD_NONBLOCK: u32 = abi::fcntl::O_NONBLOCK;
const TFD_CLOEXEC: u32 = abi::fcntl::O_CLOEXEC;
const TFD_TIMER_ABSTIME: u32 = 1;
const TFD_TIMER_CANCEL_ON_SET: u32 = 2;

/// The clock of each timer descriptor is fixed at creation; only whether it is the wall
/// clock matters (absolute times are converted when set).
/// Run `f` on the timer behind `fd` and whether it counts CLOCK_REALTIME; `EINVAL` if `fd`
/// is not a timerfd.
fn with_timer<R>(fd: i32, f: impl FnOnce(&TimerFd, bool) -> Result<R, Errno>) -> Result<R, Errno> {
    let file = with_current(|p| p.files.fds().get(fd))?;
    let timer = file
        .loc
        .node
        .as_any()
        .downcast_ref::<TimerFd>()
        .ok_or(Errno::EINVAL)?;
    f(timer, file.loc.path == "anon_inode:[timerfd-realtime]")
}

pub fn sys_timerfd_create(clock: usize, flags: u32) -> SysResult {
    if ![CLOCK_REALTIME, CLOCK_MONOTONIC, CLOCK_BOOTTIME].contains(&clock) {
        return Err(Errno::EINVAL);
    }
    if flags & !(TFD_NONBLOCK | TFD_CLOEXEC) != 0 {
        return Err(Errno::EINVAL);
    }
    let root = Loc::root()?;
    let loc = Loc {
        node: TimerFd::new(),
        path: alloc::string::String::from(if clock == CLOCK_REALTIME {
            "anon_inode:[timerfd-realtime]"
        } else {
            "anon_inode:[timerfd]"
        }),
        mount: root.mount,
    };
    let f = OpenFile::new(loc, true, false, flags & TFD_NONBLOCK)?;
    with_current(|p| p.files.fds().install(f, flags & TFD_CLOEXEC != 0)).map(|fd| fd as usize)
}

/// A `struct timespec` (16 bytes) as nanoseconds; EINVAL if negative or not normalised
/// (timerfd_settime and timer_settime check it alike).
pub(super) fn read_ns(b: &[u8]) -> Result<u64, Errno> {
    let b: &[u8; 16] = b.try_into().map_err(|_| Errno::EINVAL)?;
    let t = Timespec::from_bytes(b);
    if t.tv_sec < 0 || !(0..1_000_000_000).contains(&t.tv_nsec) {
        return Err(Errno::EINVAL);
    }
    Ok((t.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(t.tv_nsec as u64))
}

fn put_itimerspec(ptr: usize, (value, interval): (u64, u64)) -> Result<(), Errno> {
    let mut b = [0u8; 32];
    for (i, ns) in [interval, value].into_iter().enumerate() {
        b[i * 16..i * 16 + 8].copy_from_slice(&((ns / 1_000_000_000) as i64).to_le_bytes());
        b[i * 16 + 8..i * 16 + 16].copy_from_slice(&((ns % 1_000_000_000) as i64).to_le_bytes());
    }
    copy_out(ptr, &b)
}

/// timerfd_settime(fd, flags, new, old): `struct itimerspec` is (interval, value).
pub fn sys_timerfd_settime(fd: i32, flags: u32, new: usize, old: usize) -> SysResult {
    if flags & !(TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET) != 0 {
        return Err(Errno::EINVAL);
    }
    with_timer(fd, |timer, realtime| {
        let mut b = [0u8; 32];
        copy_in(new, &mut b)?;
        let interval = read_ns(&b[0..16])?;
        let value = read_ns(&b[16..32])?;
        let now = crate::arch::time::monotonic_ns();
        let deadline = match value {
            0 => None,
            v if flags & TFD_TIMER_ABSTIME == 0 => Some(now.saturating_add(v)),
            v if realtime => {
                Some(now.saturating_add(v.saturating_sub(crate::arch::time::realtime_ns())))
            }
            v => Some(v),
        };
        let prev = timer.set(deadline, interval);
        if old != 0 {
            put_itimerspec(old, prev)?;
        }
        Ok(())
    })?;
    crate::task::wait::poll_wake();
    Ok(0)
}

pub fn sys_timerfd_gettime(fd: i32, cur: usize) -> SysResult {
    with_timer(fd, |timer, _| put_itimerspec(cur, timer.get()))?;
    Ok(0)
}
