//! What a process's children leave behind: no zombie when SIGCHLD is ignored (or
//! SA_NOCLDWAIT is set), and their peak memory in getrusage's `ru_maxrss`.

use user_tests::prelude::*;
use user_tests::raw::syscall2;

use crate::{ensure, expect_errno, get_file, Check, Ctx, TestResult};

const SIGCHLD: i32 = 17;
const SIG_IGN: u64 = 1;
const SA_NOCLDWAIT: u64 = 1;
const RUSAGE_SELF: usize = 0;
const RUSAGE_CHILDREN: usize = usize::MAX; // -1

/// getrusage(`who`)'s `ru_maxrss`, KiB.
fn maxrss_kib(who: usize) -> SysResult<i64> {
    let mut ru = [0i64; 18];
    // SAFETY: `ru` is a writable struct rusage (144 bytes).
    let r = unsafe { syscall2(abi::syscall::SYS_GETRUSAGE, who, ru.as_mut_ptr() as usize) };
    Errno::from_ret(r).map(|_| ru[4])
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
