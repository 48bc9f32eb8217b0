//! Interval timers: setitimer/getitimer (glibc's alarm is setitimer with ITIMER_REAL).

use user_tests::prelude::*;
use user_tests::raw::{syscall2, syscall3, syscall4};
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const ITIMER_REAL: usize = 0;
const SIGALRM: i32 = 14;

/// (it_interval, it_value) of a `struct itimerval`, each (seconds, microseconds).
type ItimerVal = [i64; 4];

fn setitimer(which: usize, new: Option<&ItimerVal>, old: Option<&mut ItimerVal>) -> SysResult<()> {
    let new = new.map_or(0, |v| v.as_ptr() as usize);
    let old = old.map_or(0, |v| v.as_mut_ptr() as usize);
    // SAFETY: `new` is null or a readable itimerval, `old` null or a writable one.
    let r = unsafe { syscall3(abi::syscall::SYS_SETITIMER, which, new, old) };
    Errno::from_ret(r).map(|_| ())
}

fn getitimer(which: usize) -> SysResult<ItimerVal> {
    let mut v: ItimerVal = [-1; 4];
    // SAFETY: `v` is a writable itimerval.
    let r = unsafe { syscall2(abi::syscall::SYS_GETITIMER, which, v.as_mut_ptr() as usize) };
    Errno::from_ret(r).map(|_| v)
}

fn usec(v: &ItimerVal, at: usize) -> i64 {
    v[at] * 1_000_000 + v[at + 1]
}

/// Sleep `ms` milliseconds (nanosleep; a signal may end it early).
fn sleep_ms(ms: u64) {
    let ts: [u64; 2] = [ms / 1000, (ms % 1000) * 1_000_000];
    // SAFETY: `ts` is a readable struct timespec; no remainder pointer.
    unsafe { syscall2(abi::syscall::SYS_NANOSLEEP, ts.as_ptr() as usize, 0) };
}

/// Block SIGALRM in the calling thread (rt_sigprocmask).
fn block_sigalrm() -> SysResult<()> {
    let set: u64 = 1 << (SIGALRM - 1);
    // SAFETY: `set` is a readable sigset_t of 8 bytes; no old-set pointer.
    let r = unsafe {
        syscall4(
            abi::syscall::SYS_RT_SIGPROCMASK,
            0,
            &set as *const u64 as usize,
            0,
            8,
        )
    };
    Errno::from_ret(r).map(|_| ())
}

fn sigalrm_pending() -> SysResult<bool> {
    let mut set: u64 = 0;
    // SAFETY: `set` is a writable sigset_t of 8 bytes.
    let r = unsafe {
        syscall2(
            abi::syscall::SYS_RT_SIGPENDING,
            &mut set as *mut u64 as usize,
            8,
        )
    };
    Errno::from_ret(r).map(|_| set & (1 << (SIGALRM - 1)) != 0)
}

/// A child arms ITIMER_REAL for 200 ms and sleeps 5 s: SIGALRM's default action ends it,
/// after about 200 ms. getitimer reports what was set, the old value comes back, a zero
/// value disarms, a fork's child starts disarmed, a periodic timer re-arms (seen with
/// SIGALRM blocked), and bad arguments get Linux's errors.
pub fn itimer_real(_cx: &Ctx) -> TestResult {
    // Disarmed: zeros.
    ensure!(
        getitimer(ITIMER_REAL).what("getitimer")? == [0; 4],
        "getitimer of a disarmed timer is not zero"
    );

    // Delivery: the default action of SIGALRM terminates.
    let t0 = now_ns();
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let _ = setitimer(ITIMER_REAL, Some(&[0, 0, 0, 200_000]), None);
        sleep_ms(5000);
        sys::exit(0);
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    let ms = (now_ns() - t0) / 1_000_000;
    ensure!(
        status.signal() == Some(SIGALRM),
        "the child was not killed by SIGALRM (status {:#x})",
        status.0
    );
    ensure!(
        ms >= 190 && ms < 4000,
        "SIGALRM came after {ms} ms, not about 200"
    );

    // Armed here, so disarmed again whatever happens (a SIGALRM would end the runner).
    let r = set_get_disarm();
    let _ = setitimer(ITIMER_REAL, Some(&[0; 4]), None);
    r?;
    periodic_and_errors()
}

/// Set, read back, replace (the old value comes back), disarm.
fn set_get_disarm() -> TestResult {
    setitimer(ITIMER_REAL, Some(&[0, 0, 10, 0]), None).what("setitimer 10 s")?;
    let v = getitimer(ITIMER_REAL).what("getitimer")?;
    ensure!(
        usec(&v, 0) == 0 && usec(&v, 2) > 9_000_000 && usec(&v, 2) <= 10_000_000,
        "getitimer after a 10 s setitimer: {v:?}"
    );
    // A fork's child has no timer.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let ok = getitimer(ITIMER_REAL).map(|v| v == [0; 4]).unwrap_or(false);
        sys::exit(if ok { 0 } else { 1 });
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "a fork's child inherited the timer (status {:#x})",
        status.0
    );
    let mut old: ItimerVal = [-1; 4];
    setitimer(ITIMER_REAL, Some(&[1, 500_000, 20, 0]), Some(&mut old)).what("setitimer 20 s")?;
    ensure!(
        old[0] == 0 && old[1] == 0 && usec(&old, 2) > 9_000_000 && usec(&old, 2) <= 10_000_000,
        "setitimer's old value: {old:?}"
    );
    let v = getitimer(ITIMER_REAL).what("getitimer")?;
    ensure!(
        usec(&v, 0) == 1_500_000 && usec(&v, 2) > 19_000_000,
        "getitimer after setitimer(20 s, interval 1.5 s): {v:?}"
    );
    setitimer(ITIMER_REAL, Some(&[0; 4]), Some(&mut old)).what("setitimer 0")?;
    ensure!(usec(&old, 0) == 1_500_000, "old interval {old:?}");
    ensure!(
        getitimer(ITIMER_REAL).what("getitimer")? == [0; 4],
        "a zero it_value did not disarm"
    );
    Ok(())
}

fn periodic_and_errors() -> TestResult {
    // A periodic timer re-arms itself: in a child with SIGALRM blocked, after three periods
    // the signal is pending and the timer still runs with its interval.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let code = (|| -> SysResult<i32> {
            block_sigalrm()?;
            setitimer(ITIMER_REAL, Some(&[0, 50_000, 0, 50_000]), None)?;
            sleep_ms(200);
            let v = getitimer(ITIMER_REAL)?;
            if !sigalrm_pending()? {
                return Ok(2);
            }
            Ok(
                if usec(&v, 0) == 50_000 && usec(&v, 2) > 0 && usec(&v, 2) <= 50_000 {
                    0
                } else {
                    3
                },
            )
        })()
        .unwrap_or(4);
        sys::exit(code);
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "periodic timer: child status {:#x} (2: no SIGALRM pending, 3: not re-armed)",
        status.0
    );

    // The CPU-time timers: a child that spins with ITIMER_VIRTUAL / ITIMER_PROF armed for
    // 100 ms of CPU dies of SIGVTALRM / SIGPROF (default action: terminate); one that sleeps
    // uses no CPU, and its timer has not moved.
    for (which, sig) in [(1usize, 26), (2, 27)] {
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            if setitimer(which, Some(&[0, 0, 0, 100_000]), None).is_err() {
                sys::exit(2);
            }
            let start = now_ns();
            while now_ns() - start < 5_000_000_000 {
                core::hint::spin_loop();
            }
            sys::exit(0);
        }
        let (_, status) = sys::waitpid(pid).what("wait4")?;
        ensure!(
            status.signal() == Some(sig),
            "timer {which}: the spinning child was not killed by signal {sig} (status {:#x})",
            status.0
        );
    }
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let ok = setitimer(2, Some(&[0, 0, 1, 0]), None).is_ok() && {
            sleep_ms(300);
            getitimer(2).map(|v| usec(&v, 2) > 900_000).unwrap_or(false)
        };
        sys::exit(if ok { 0 } else { 1 });
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "ITIMER_PROF ran on while its process slept (status {:#x})",
        status.0
    );

    // Errors.
    expect_errno(
        setitimer(3, Some(&[0; 4]), None),
        Errno::EINVAL,
        "setitimer(3)",
    )?;
    expect_errno(getitimer(3), Errno::EINVAL, "getitimer(3)")?;
    let bad_usec: ItimerVal = [0, 0, 1, 1_000_000];
    expect_errno(
        setitimer(ITIMER_REAL, Some(&bad_usec), None),
        Errno::EINVAL,
        "tv_usec 1e6",
    )?;
    let negative: ItimerVal = [0, 0, -1, 0];
    expect_errno(
        setitimer(ITIMER_REAL, Some(&negative), None),
        Errno::EINVAL,
        "tv_sec -1",
    )?;
    // SAFETY: a bad pointer on purpose: the kernel must answer EFAULT, not fault.
    let r = unsafe { syscall3(abi::syscall::SYS_SETITIMER, ITIMER_REAL, 8, 0) };
    expect_errno(Errno::from_ret(r), Errno::EFAULT, "setitimer(bad pointer)")?;
    // SAFETY: as above.
    let r = unsafe { syscall2(abi::syscall::SYS_GETITIMER, ITIMER_REAL, 8) };
    expect_errno(Errno::from_ret(r), Errno::EFAULT, "getitimer(bad pointer)")?;
    Ok(())
}
