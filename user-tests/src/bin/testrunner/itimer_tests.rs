//! Interval timers: setitimer/getitimer (glibc's alarm is setitimer with ITIMER_REAL).

use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall2, syscall3, syscall4};
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

/// adjtimex(buf) with `modes` and the rest of `fields` (8-byte words at their offsets):
/// the result and the struct the kernel wrote back.
fn adjtimex(modes: u32, fields: &[(usize, i64)]) -> (SysResult<usize>, [u8; 208]) {
    let mut t = [0u8; 208];
    t[..4].copy_from_slice(&modes.to_le_bytes());
    for &(at, v) in fields {
        t[at..at + 8].copy_from_slice(&v.to_le_bytes());
    }
    // SAFETY: `t` is a writable struct timex (208 bytes on riscv64).
    let r = unsafe { syscall1(abi::syscall::SYS_ADJTIMEX, t.as_mut_ptr() as usize) };
    (Errno::from_ret(r).map(|v| v as usize), t)
}

fn word(t: &[u8; 208], at: usize) -> i64 {
    i64::from_le_bytes(t[at..at + 8].try_into().unwrap_or_default())
}

/// adjtimex (stress-ng's get stressor found it ENOSYS): anyone reads the NTP parameters, an
/// unsynchronised clock's state (TIME_ERROR, STA_UNSYNC), the tick and the time now; setting
/// needs CAP_SYS_TIME and Linux's checks; what would step or slew the clock (by more than 0)
/// is EOPNOTSUPP;
/// clock_adjtime is adjtimex for CLOCK_REALTIME only.
pub fn adjtimex_semantics(_cx: &Ctx) -> TestResult {
    const TIME_ERROR: usize = 5;
    const STA_UNSYNC: i64 = 0x40;
    const ADJ_MAXERROR: u32 = 0x0004;
    const ADJ_TICK: u32 = 0x4000;
    let (r, t) = adjtimex(0, &[]);
    ensure!(r == Ok(TIME_ERROR), "adjtimex read: {r:?}");
    let status = i32::from_le_bytes(t[40..44].try_into().unwrap_or_default()) as i64;
    ensure!(
        status & STA_UNSYNC != 0,
        "status {status:#x} without STA_UNSYNC"
    );
    ensure!(word(&t, 88) == 10_000, "tick {}", word(&t, 88));
    let now = now_realtime_sec();
    ensure!(
        (word(&t, 72) - now).abs() <= 2,
        "time {} against {now}",
        word(&t, 72)
    );
    // Root sets the tick and the maximum error and reads them back; bad ticks are EINVAL.
    let old_tick = word(&t, 88);
    let (r, _) = adjtimex(ADJ_TICK, &[(88, 8999)]);
    expect_errno(r, Errno::EINVAL, "a tick below 900000/HZ")?;
    let (r, _) = adjtimex(ADJ_TICK, &[(88, 11_001)]);
    expect_errno(r, Errno::EINVAL, "a tick above 1100000/HZ")?;
    let (r, _) = adjtimex(ADJ_TICK | ADJ_MAXERROR, &[(88, 10_001), (24, 12_345)]);
    r.what("set tick and maxerror")?;
    let (_, t) = adjtimex(0, &[]);
    let (tick, maxerror) = (word(&t, 88), word(&t, 24));
    adjtimex(ADJ_TICK, &[(88, old_tick)])
        .0
        .what("restore the tick")?;
    ensure!(
        tick == 10_001 && maxerror == 12_345,
        "read back: tick {tick}, maxerror {maxerror}"
    );
    // adjtime(3)'s modes: reading the slew to go is fine (none), slewing and stepping not.
    expect_errno(adjtimex(0x8000, &[]).0, Errno::EINVAL, "ADJ_ADJTIME alone")?;
    let (r, t) = adjtimex(0xa001, &[]);
    ensure!(
        r.is_ok() && word(&t, 8) == 0,
        "ADJ_OFFSET_SS_READ: {r:?}, offset {}",
        word(&t, 8)
    );
    expect_errno(
        adjtimex(0x8001, &[(8, 1000)]).0,
        Errno::EOPNOTSUPP,
        "ADJ_OFFSET_SINGLESHOT",
    )?;
    let (r, t) = adjtimex(0x8001, &[(8, 0)]);
    ensure!(
        r.is_ok() && word(&t, 8) == 0,
        "a slew of 0: {r:?}, offset {}",
        word(&t, 8)
    );
    expect_errno(adjtimex(0x0100, &[]).0, Errno::EOPNOTSUPP, "ADJ_SETOFFSET")?;
    let mut t = [0u8; 208];
    // SAFETY: `t` is a writable struct timex.
    let r = unsafe { syscall2(abi::syscall::SYS_CLOCK_ADJTIME, 0, t.as_mut_ptr() as usize) };
    ensure!(
        Errno::from_ret(r) == Ok(TIME_ERROR),
        "clock_adjtime(CLOCK_REALTIME): {r}"
    );
    // SAFETY: as above.
    let r = unsafe { syscall2(abi::syscall::SYS_CLOCK_ADJTIME, 1, t.as_mut_ptr() as usize) };
    expect_errno(
        Errno::from_ret(r),
        Errno::EOPNOTSUPP,
        "clock_adjtime(CLOCK_MONOTONIC)",
    )?;
    // SAFETY: as above.
    let r = unsafe { syscall2(abi::syscall::SYS_CLOCK_ADJTIME, 99, t.as_mut_ptr() as usize) };
    expect_errno(
        Errno::from_ret(r),
        Errno::EINVAL,
        "clock_adjtime of clock 99",
    )?;
    crate::stress_tests::in_child("adjtimex as uid 65534", None, || {
        // SAFETY: no pointer arguments.
        if unsafe { syscall3(abi::syscall::SYS_SETRESUID, 65534, 65534, 65534) } != 0 {
            return 1;
        }
        if adjtimex(0, &[]).0 != Ok(TIME_ERROR) {
            return 2;
        }
        if adjtimex(ADJ_MAXERROR, &[(24, 1)]).0 != Err(Errno::EPERM) {
            return 3;
        }
        0
    })
}

fn now_realtime_sec() -> i64 {
    let mut ts = [0i64; 2];
    // SAFETY: `ts` is a writable timespec.
    unsafe { syscall2(abi::syscall::SYS_CLOCK_GETTIME, 0, ts.as_mut_ptr() as usize) };
    ts[0]
}
