//! POSIX timers, signalfd and eventfd together: a timer's signal, blocked, is read from a
//! signal descriptor that ppoll reports readable; an event counter's limits and semaphore
//! mode; bad input gets Linux's errno.

use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall2, syscall3, syscall4, syscall5};
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const SIGUSR2: usize = 12;
const O_NONBLOCK: usize = 0o4000;
const CLOCK_MONOTONIC: usize = 1;
const POLLIN: u16 = 1;
const POLLOUT: u16 = 4;

pub(crate) fn ret(r: isize) -> SysResult<usize> {
    Errno::from_ret(r).map(|v| v as usize)
}

pub(crate) fn sigprocmask(how: usize, set: u64) -> SysResult<usize> {
    // SAFETY: `set` is a readable 8-byte sigset_t; no old-set pointer.
    ret(unsafe {
        syscall4(
            abi::syscall::SYS_RT_SIGPROCMASK,
            how,
            &set as *const u64 as usize,
            0,
            8,
        )
    })
}

/// ppoll of one descriptor for `events`, waiting at most `ms`: its revents (0: timed out).
fn poll1(fd: i32, events: u16, ms: u64) -> SysResult<u16> {
    let mut pfd = [0u8; 8];
    pfd[..4].copy_from_slice(&fd.to_le_bytes());
    pfd[4..6].copy_from_slice(&events.to_le_bytes());
    let ts: [u64; 2] = [ms / 1000, (ms % 1000) * 1_000_000];
    // SAFETY: `pfd` is one writable struct pollfd, `ts` a readable timespec.
    ret(unsafe {
        syscall5(
            abi::syscall::SYS_PPOLL,
            pfd.as_mut_ptr() as usize,
            1,
            ts.as_ptr() as usize,
            0,
            0,
        )
    })?;
    Ok(u16::from_le_bytes([pfd[6], pfd[7]]))
}

/// A one-shot CLOCK_MONOTONIC timer sending SIGUSR2 (blocked) after 50 ms: ppoll sees the
/// signalfd readable after about that long, the read gives SIGUSR2's record, the signal is
/// then no longer pending; timer_gettime shows it disarmed; a deleted id is EINVAL.
pub fn timer_signalfd_eventfd(_cx: &Ctx) -> TestResult {
    let mask: u64 = 1 << (SIGUSR2 - 1);
    sigprocmask(0, mask).what("block SIGUSR2")?;
    let r = timer_and_signalfd(mask);
    let _ = sigprocmask(1, mask);
    r?;
    eventfd_counter()
}

fn timer_and_signalfd(mask: u64) -> TestResult {
    // SAFETY: `mask` is a readable 8-byte sigset_t.
    let sfd = ret(unsafe {
        syscall4(
            abi::syscall::SYS_SIGNALFD4,
            usize::MAX, // -1: a new descriptor
            &mask as *const u64 as usize,
            8,
            O_NONBLOCK,
        )
    })
    .what("signalfd4")? as i32;
    let mut rec = [0u8; 128];
    expect_errno(
        sys::read(sfd, &mut rec),
        Errno::EAGAIN,
        "read of an empty signalfd",
    )?;

    // struct sigevent: value, signo, notify (SIGEV_SIGNAL 0).
    let mut sev = [0u8; 64];
    sev[8..12].copy_from_slice(&(SIGUSR2 as i32).to_le_bytes());
    let mut id: i32 = -1;
    // SAFETY: `sev` is a readable sigevent, `id` a writable timer id.
    ret(unsafe {
        syscall3(
            abi::syscall::SYS_TIMER_CREATE,
            CLOCK_MONOTONIC,
            sev.as_ptr() as usize,
            &mut id as *mut i32 as usize,
        )
    })
    .what("timer_create")?;
    // it_interval 0, it_value 50 ms.
    let spec: [u64; 4] = [0, 0, 0, 50_000_000];
    let t0 = now_ns();
    // SAFETY: `spec` is a readable itimerspec; no old-value pointer.
    ret(unsafe {
        syscall4(
            abi::syscall::SYS_TIMER_SETTIME,
            id as usize,
            0,
            spec.as_ptr() as usize,
            0,
        )
    })
    .what("timer_settime")?;
    let rev = poll1(sfd, POLLIN, 5000).what("ppoll signalfd")?;
    let ms = (now_ns() - t0) / 1_000_000;
    ensure!(
        rev == POLLIN,
        "signalfd not readable after the timer (revents {rev:#x})"
    );
    ensure!(
        (40..4000).contains(&ms),
        "the timer's signal came after {ms} ms, not about 50"
    );
    let n = sys::read(sfd, &mut rec).what("read signalfd")?;
    ensure!(n == 128, "signalfd read {n} bytes, not one 128-byte record");
    let signo = u32::from_le_bytes([rec[0], rec[1], rec[2], rec[3]]);
    ensure!(signo == SIGUSR2 as u32, "ssi_signo {signo}, not SIGUSR2");
    expect_errno(
        sys::read(sfd, &mut rec),
        Errno::EAGAIN,
        "read after the signal was taken",
    )?;
    let mut cur: [u64; 4] = [1; 4];
    // SAFETY: `cur` is a writable itimerspec.
    ret(unsafe {
        syscall2(
            abi::syscall::SYS_TIMER_GETTIME,
            id as usize,
            cur.as_mut_ptr() as usize,
        )
    })
    .what("timer_gettime")?;
    ensure!(
        cur == [0; 4],
        "a one-shot timer that fired is not disarmed: {cur:?}"
    );
    // SAFETY: no pointer arguments.
    let overrun = ret(unsafe { syscall1(abi::syscall::SYS_TIMER_GETOVERRUN, id as usize) });
    ensure!(overrun == Ok(0), "timer_getoverrun: {overrun:?}");
    // SAFETY: no pointer arguments.
    ret(unsafe { syscall1(abi::syscall::SYS_TIMER_DELETE, id as usize) }).what("timer_delete")?;
    expect_errno(
        // SAFETY: no pointer arguments.
        ret(unsafe { syscall1(abi::syscall::SYS_TIMER_DELETE, id as usize) }),
        Errno::EINVAL,
        "timer_delete of a deleted timer",
    )?;
    expect_errno(
        // SAFETY: the sigevent pointer is never read: the clock is checked first.
        ret(unsafe { syscall3(abi::syscall::SYS_TIMER_CREATE, 99, 0, 0) }),
        Errno::EINVAL,
        "timer_create on clock 99",
    )?;
    sys::close(sfd).what("close signalfd")
}

/// eventfd2 in semaphore mode starting at 2: two reads of 1, then EAGAIN; writes up to
/// 0xffff_ffff_ffff_fffe, then EAGAIN and no POLLOUT; all ones is EINVAL; short buffers
/// are EINVAL.
fn eventfd_counter() -> TestResult {
    const EFD_SEMAPHORE: usize = 1;
    // SAFETY: no pointer arguments.
    let fd = ret(unsafe { syscall2(abi::syscall::SYS_EVENTFD2, 2, EFD_SEMAPHORE | O_NONBLOCK) })
        .what("eventfd2")? as i32;
    let mut b = [0u8; 8];
    for i in 0..2 {
        sys::read(fd, &mut b).what("read eventfd")?;
        ensure!(
            u64::from_le_bytes(b) == 1,
            "semaphore read {i} gave {}",
            u64::from_le_bytes(b)
        );
    }
    expect_errno(
        sys::read(fd, &mut b),
        Errno::EAGAIN,
        "read of a zero eventfd",
    )?;
    expect_errno(
        sys::read(fd, &mut b[..4]),
        Errno::EINVAL,
        "4-byte eventfd read",
    )?;
    expect_errno(
        sys::write(fd, &u64::MAX.to_le_bytes()),
        Errno::EINVAL,
        "write of all ones",
    )?;
    ensure!(
        poll1(fd, POLLOUT, 0).what("ppoll")? == POLLOUT,
        "an empty eventfd is not writable"
    );
    sys::write(fd, &(u64::MAX - 1).to_le_bytes()).what("write the maximum")?;
    ensure!(
        poll1(fd, POLLOUT, 0).what("ppoll")? == 0,
        "a full eventfd polls writable"
    );
    ensure!(
        poll1(fd, POLLIN, 0).what("ppoll")? == POLLIN,
        "a full eventfd is not readable"
    );
    expect_errno(
        sys::write(fd, &1u64.to_le_bytes()),
        Errno::EAGAIN,
        "write past the maximum",
    )?;
    sys::close(fd).what("close eventfd")
}
