//! What getrusage and times report, and what a process's children leave behind: user and
//! system time told apart, no zombie when SIGCHLD is ignored (or SA_NOCLDWAIT is set), and
//! peak memory in `ru_maxrss`.

use user_tests::prelude::*;
use user_tests::raw::syscall1;
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, get_file, Check, Ctx, TestResult};

const SIGCHLD: i32 = 17;
const SIG_IGN: u64 = 1;
const SA_NOCLDWAIT: u64 = 2;
const RUSAGE_SELF: i32 = 0;
const RUSAGE_CHILDREN: i32 = -1;

/// getrusage(`who`)'s `ru_maxrss`, KiB.
fn maxrss_kib(who: i32) -> SysResult<i64> {
    sys::getrusage(who).map(|ru| ru[4])
}

/// Run `step` again and again for 200 ms: the user and system time that added, in
/// microseconds.
fn for_200ms(mut step: impl FnMut() -> TestResult) -> Result<(i64, i64), String> {
    let user_sys = || {
        sys::getrusage(RUSAGE_SELF)
            .map(|ru| (ru[0] * 1_000_000 + ru[1], ru[2] * 1_000_000 + ru[3]))
            .what("getrusage")
    };
    let (u0, s0) = user_sys()?;
    let start = now_ns();
    while now_ns() - start < 200_000_000 {
        step()?;
    }
    let (u1, s1) = user_sys()?;
    Ok((u1 - u0, s1 - s0))
}

/// CPU time is split into user and system time: 200 ms of arithmetic in user mode adds more
/// user than system time, 200 ms of 64 KiB reads of /dev/zero (the kernel fills the buffer)
/// more system than user time; times(2) gives the same split in clock ticks.
pub fn cpu_time_user_and_system(_cx: &Ctx) -> TestResult {
    let mut x = 1u64;
    let (u, s) = for_200ms(|| {
        for _ in 0..10_000 {
            x = core::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
        Ok(())
    })?;
    ensure!(
        u > s,
        "200 ms in user mode: user time +{u} us, system time +{s} us"
    );
    let zero = sys::open("/dev/zero", 0, 0).what("open /dev/zero")?;
    let mut buf = vec![0u8; 65536];
    let spent = for_200ms(|| sys::read(zero, &mut buf).map(|_| ()).what("read /dev/zero"));
    let _ = sys::close(zero);
    let (u, s) = spent?;
    ensure!(
        s > u,
        "200 ms of reads of /dev/zero: system time +{s} us, user time +{u} us"
    );
    let mut tms = [0i64; 4];
    // SAFETY: `tms` is a writable struct tms.
    let r = unsafe { syscall1(abi::syscall::SYS_TIMES, tms.as_mut_ptr() as usize) };
    Errno::from_ret(r).what("times")?;
    ensure!(
        tms[0] > 0 && tms[1] > 0,
        "times: tms_utime {} and tms_stime {} ticks after 200 ms of each kind",
        tms[0],
        tms[1]
    );
    Ok(())
}

/// With SIGCHLD set to SIG_IGN, and with SA_NOCLDWAIT on the default action, an exited child
/// leaves no zombie: wait4 sleeps until it is gone and fails with ECHILD, and its /proc
/// directory is gone.
pub fn sigchld_ignored_leaves_no_zombie(_cx: &Ctx) -> TestResult {
    let mut old = [0u64; 3];
    sys::rt_sigaction_raw(SIGCHLD, None, Some(&mut old)).what("rt_sigaction")?;
    let res = (|| -> TestResult {
        for (handler, flags, what) in [(SIG_IGN, 0, "SIG_IGN"), (0, SA_NOCLDWAIT, "SA_NOCLDWAIT")] {
            sys::rt_sigaction_raw(SIGCHLD, Some(&[handler, flags, 0]), None)
                .what("rt_sigaction")?;
            let pid = sys::fork().what("fork")?;
            if pid == 0 {
                sys::exit(3);
            }
            expect_errno(
                sys::wait4(-1, 0).map(|_| 0usize),
                Errno::ECHILD,
                &format!("wait4 with {what}"),
            )?;
            ensure!(
                sys::stat(&format!("/proc/{pid}")).is_err(),
                "/proc/{pid} is still there with {what}"
            );
        }
        Ok(())
    })();
    sys::rt_sigaction_raw(SIGCHLD, Some(&old), None).what("rt_sigaction restore")?;
    res
}

/// A child that touched 16 MiB shows a peak of at least that in the parent's
/// getrusage(RUSAGE_CHILDREN) once reaped; the caller's own peak is at least its resident
/// memory now, and /proc/self/status shows VmHWM and VmSwap.
pub fn maxrss_of_self_and_children(_cx: &Ctx) -> TestResult {
    const MIB: usize = 16;
    let before = maxrss_kib(RUSAGE_CHILDREN).what("getrusage children")?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let v = vec![0x5au8; MIB << 20];
        core::hint::black_box(&v);
        sys::exit(0);
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(status.exited(), "child: status {:#x}", status.0);
    let after = maxrss_kib(RUSAGE_CHILDREN).what("getrusage children")?;
    ensure!(
        after >= (MIB as i64) << 10 && after >= before,
        "children's ru_maxrss {after} KiB after a child touched {MIB} MiB (before: {before})"
    );
    let own = maxrss_kib(RUSAGE_SELF).what("getrusage self")?;
    let status = get_file("/proc/self/status")?;
    let text = String::from_utf8_lossy(&status);
    let field = |name: &str| -> Option<i64> {
        text.lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|r| r.trim().trim_end_matches("kB").trim().parse().ok())
    };
    let (hwm, rss) = (field("VmHWM:"), field("VmRSS:"));
    ensure!(
        matches!((hwm, rss), (Some(h), Some(r)) if h >= r && own >= r),
        "VmHWM {hwm:?}, VmRSS {rss:?}, ru_maxrss {own}"
    );
    ensure!(
        field("VmSwap:") == Some(0),
        "VmSwap: {:?}",
        field("VmSwap:")
    );
    Ok(())
}
