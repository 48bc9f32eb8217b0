//! Queued signals and their siginfo: real-time signals queue in order, each with its own
//! value, a standard one collapses to one instance; RLIMIT_SIGPENDING bounds the queue
//! (EAGAIN past it); a forged sender (si_code >= 0) to another process is EPERM; the value
//! reaches an SA_SIGINFO handler, rt_sigtimedwait, a signalfd record; a POSIX timer's
//! signal is SI_TIMER with the timer's id and value; SIGCHLD is CLD_EXITED with the status.

use core::sync::atomic::{AtomicI32, AtomicU64, Ordering::SeqCst};

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall3, syscall4};

use crate::anonfd_tests::{ret, sigprocmask};
use crate::stress_tests::in_child;
use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const SIGUSR1: usize = 10;
const SIGCHLD: usize = 17;
/// Real-time signals this test uses (above glibc's reserved 32..34).
const SIG_RT_A: usize = 40;
const SIG_RT_B: usize = 41;
const SIG_RT_TIMER: usize = 42;
const SI_USER: i32 = 0;
const SI_QUEUE: i32 = -1;
const SI_TIMER: i32 = -2;
const CLD_EXITED: i32 = 1;
const SA_SIGINFO: u64 = 4;
const RLIMIT_SIGPENDING: usize = 11;
const CLOCK_MONOTONIC: usize = 1;
const O_NONBLOCK: usize = 0o4000;

fn bit(sig: usize) -> u64 {
    1 << (sig - 1)
}

/// The fields of a `siginfo_t` this test reads: signo, code, pid (or the timer id), uid (or
/// the overrun), value (or a child's status in its low 32 bits).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Info {
    pub(crate) signo: i32,
    pub(crate) code: i32,
    pub(crate) pid: i32,
    pub(crate) uid: u32,
    pub(crate) value: u64,
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

impl Info {
    fn parse(b: &[u8; 128]) -> Info {
        Info {
            signo: word(b, 0) as i32,
            code: word(b, 8) as i32,
            pid: word(b, 16) as i32,
            uid: word(b, 20),
            value: u64::from(word(b, 24)) | u64::from(word(b, 28)) << 32,
        }
    }
}

/// rt_sigqueueinfo(pid, sig, {sig, code, our pid and uid, value}).
fn queue(pid: i32, sig: usize, code: i32, value: u64) -> SysResult<usize> {
    let mut b = [0u8; 128];
    b[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
    b[8..12].copy_from_slice(&code.to_le_bytes());
    b[16..20].copy_from_slice(&sys::getpid().to_le_bytes());
    b[24..32].copy_from_slice(&value.to_le_bytes());
    // SAFETY: `b` is a readable 128-byte siginfo_t.
    ret(unsafe { syscall3(SYS_RT_SIGQUEUEINFO, pid as usize, sig, b.as_ptr() as usize) })
}

/// rt_sigtimedwait for a signal of `set`, waiting at most `ms`: the siginfo taken.
pub(crate) fn wait(set: u64, ms: u64) -> SysResult<Info> {
    let mut b = [0u8; 128];
    let ts: [u64; 2] = [ms / 1000, (ms % 1000) * 1_000_000];
    // SAFETY: `set` is a readable sigset_t, `b` a writable siginfo_t, `ts` a timespec.
    let sig = ret(unsafe {
        syscall4(
            SYS_RT_SIGTIMEDWAIT,
            &set as *const u64 as usize,
            b.as_mut_ptr() as usize,
            ts.as_ptr() as usize,
            8,
        )
    })?;
    let info = Info::parse(&b);
    if info.signo as usize != sig {
        return Err(Errno::EIO);
    }
    Ok(info)
}

/// With `mask` blocked, run `body`; the mask comes back however it ends.
pub(crate) fn with_blocked(mask: u64, body: impl FnOnce() -> TestResult) -> TestResult {
    sigprocmask(0, mask).what("block the test's signals")?;
    let r = body();
    // Nothing of the test may stay pending for the next one.
    while wait(mask, 0).is_ok() {}
    sigprocmask(1, mask).what("unblock")?;
    r
}

/// Three queued SIG_RT_A arrive in order with their values; two SIGUSR1 collapse into the
/// first; rt_sigpending shows both while they wait; a zero timeout with nothing pending is
/// EAGAIN.
pub fn rt_signals_queue_in_order(_cx: &Ctx) -> TestResult {
    let me = sys::getpid();
    let set = bit(SIG_RT_A) | bit(SIGUSR1);
    with_blocked(set, || {
        for v in [11, 22, 33] {
            queue(me, SIG_RT_A, SI_QUEUE, v).what("rt_sigqueueinfo SIG_RT_A")?;
        }
        queue(me, SIGUSR1, SI_QUEUE, 7).what("rt_sigqueueinfo SIGUSR1")?;
        queue(me, SIGUSR1, SI_QUEUE, 8).what("second rt_sigqueueinfo SIGUSR1")?;
        let mut pend = 0u64;
        // SAFETY: `pend` is a writable sigset_t.
        ret(unsafe { syscall3(SYS_RT_SIGPENDING, &mut pend as *mut u64 as usize, 8, 0) })
            .what("rt_sigpending")?;
        ensure!(pend & set == set, "rt_sigpending {pend:#x} lacks {set:#x}");
        // The lower signal first: SIGUSR1, once, with the first value.
        let first = wait(set, 0).what("take SIGUSR1")?;
        ensure!(
            (first.signo, first.code, first.pid, first.value) == (SIGUSR1 as i32, SI_QUEUE, me, 7),
            "first signal taken: {first:?}, expected SIGUSR1 SI_QUEUE from {me} with value 7"
        );
        for v in [11, 22, 33] {
            let i = wait(set, 0).what("take SIG_RT_A")?;
            ensure!(
                (i.signo, i.code, i.value) == (SIG_RT_A as i32, SI_QUEUE, v),
                "queued SIG_RT_A out of order or lost: {i:?}, expected value {v}"
            );
        }
        expect_errno(
            wait(set, 0),
            Errno::EAGAIN,
            "rt_sigtimedwait with nothing left",
        )?;
        // A bad sigset size is EINVAL.
        let s = bit(SIGUSR1);
        // SAFETY: `s` is a readable sigset_t; no siginfo or timeout.
        let r = ret(unsafe { syscall4(SYS_RT_SIGTIMEDWAIT, &s as *const u64 as usize, 0, 0, 4) });
        expect_errno(r, Errno::EINVAL, "rt_sigtimedwait with sigsetsize 4")
    })
}

/// RLIMIT_SIGPENDING: a user with a limit of 3 queues 3 real-time signals, the fourth is
/// EAGAIN, and /proc/self/status says SigQ 3/3; kill(2) past the limit still succeeds.
pub fn rt_signal_queue_limit(_cx: &Ctx) -> TestResult {
    in_child("RLIMIT_SIGPENDING", None, || {
        // A user of its own, so no other process's queued signals count.
        // SAFETY: no pointer arguments.
        if unsafe { syscall3(SYS_SETRESUID, 4242, 4242, 4242) } != 0 {
            return 1;
        }
        let lim = [3u64, 3];
        // SAFETY: `lim` is a readable struct rlimit64; no old value.
        let r = unsafe {
            syscall4(
                SYS_PRLIMIT64,
                0,
                RLIMIT_SIGPENDING,
                lim.as_ptr() as usize,
                0,
            )
        };
        if r != 0 || sigprocmask(0, bit(SIG_RT_A)).is_err() {
            return 2;
        }
        let me = sys::getpid();
        for v in 0..3 {
            if queue(me, SIG_RT_A, SI_QUEUE, v).is_err() {
                return 3;
            }
        }
        if queue(me, SIG_RT_A, SI_QUEUE, 3) != Err(Errno::EAGAIN) {
            return 4;
        }
        let Ok(f) = File::open_read("/proc/self/status") else {
            return 5;
        };
        let mut buf = [0u8; 1024];
        let n = f.read(&mut buf).unwrap_or(0);
        let text = core::str::from_utf8(&buf[..n]).unwrap_or("");
        if !text.lines().any(|l| l == "SigQ:\t3/3") {
            return 6;
        }
        // kill(2) of a real-time signal past the limit: pending without its siginfo.
        // SAFETY: no pointer arguments.
        if unsafe { syscall3(SYS_KILL, me as usize, SIG_RT_A, 0) } != 0 {
            return 7;
        }
        for v in 0..3 {
            match wait(bit(SIG_RT_A), 0) {
                Ok(i) if i.value == v && i.code == SI_QUEUE => {}
                _ => return 8,
            }
        }
        // The queue is empty again: one more fits.
        if queue(me, SIG_RT_A, SI_QUEUE, 9).is_err() {
            return 9;
        }
        0
    })
}

/// A siginfo claiming kill(2) (SI_USER) sent to another process is EPERM; SI_QUEUE
/// reaches the child, whose rt_sigtimedwait sees our pid and value; kill(2)'s siginfo is
/// SI_USER with our pid; the child's exit is SIGCHLD with CLD_EXITED and its status.
pub fn sigqueue_to_child_and_sigchld(_cx: &Ctx) -> TestResult {
    let me = sys::getpid();
    let set = bit(SIG_RT_B) | bit(SIGCHLD);
    with_blocked(set, || {
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            let a = wait(bit(SIG_RT_B), 5000);
            let b = wait(bit(SIG_RT_B), 5000);
            let ok = matches!(a, Ok(i) if (i.code, i.pid, i.value) == (SI_QUEUE, me, 0x5eed))
                && matches!(b, Ok(i) if (i.code, i.pid) == (SI_USER, me));
            sys::exit(if ok { 42 } else { 1 });
        }
        expect_errno(
            queue(pid, SIG_RT_B, SI_USER, 1),
            Errno::EPERM,
            "rt_sigqueueinfo with si_code SI_USER to another process",
        )?;
        queue(pid, SIG_RT_B, SI_QUEUE, 0x5eed).what("rt_sigqueueinfo to the child")?;
        // SAFETY: no pointer arguments.
        ret(unsafe { syscall3(SYS_KILL, pid as usize, SIG_RT_B, 0) }).what("kill the child")?;
        let c = wait(bit(SIGCHLD), 10_000).what("wait for SIGCHLD")?;
        ensure!(
            (c.code, c.pid, c.value as u32) == (CLD_EXITED, pid, 42),
            "SIGCHLD's siginfo {c:?}: expected CLD_EXITED from {pid} with status 42 (1: the child saw the wrong siginfo)"
        );
        let (_, st) = sys::waitpid(pid).what("wait4")?;
        ensure!(
            st.exited() && st.exit_code() == 42,
            "child status {:#x}",
            st.0
        );
        Ok(())
    })
}

static HANDLED: AtomicI32 = AtomicI32::new(0);
static HANDLED_VALUE: AtomicU64 = AtomicU64::new(0);

extern "C" fn info_handler(sig: i32, info: *const u8, _uc: *const u8) {
    // SAFETY: the kernel passes a readable 128-byte siginfo_t to an SA_SIGINFO handler.
    let b = unsafe { &*(info as *const [u8; 128]) };
    let i = Info::parse(b);
    if i.signo == sig {
        HANDLED.store(i.code, SeqCst);
        HANDLED_VALUE.store(i.value, SeqCst);
    }
}

/// An SA_SIGINFO handler receives the queued value and code; a POSIX timer's signal,
/// taken by rt_sigtimedwait, is SI_TIMER with the timer's id and the sigevent's value; a
/// signalfd record carries a queued signal's pid, uid and value.
pub fn siginfo_reaches_handler_timer_signalfd(_cx: &Ctx) -> TestResult {
    let act: [u64; 3] = [
        info_handler as extern "C" fn(i32, *const u8, *const u8) as usize as u64,
        SA_SIGINFO,
        0,
    ];
    // SAFETY: `act` is a 24-byte sigaction whose handler is `info_handler`; no old action.
    ret(unsafe { syscall4(SYS_RT_SIGACTION, SIG_RT_B, act.as_ptr() as usize, 0, 8) })
        .what("rt_sigaction SA_SIGINFO")?;
    HANDLED.store(99, SeqCst);
    queue(sys::getpid(), SIG_RT_B, SI_QUEUE, 0xfeed_f00d).what("rt_sigqueueinfo to self")?;
    let dfl: [u64; 3] = [0; 3];
    sys::rt_sigaction_raw(SIG_RT_B as i32, Some(&dfl), None).what("rt_sigaction SIG_DFL")?;
    ensure!(
        HANDLED.load(SeqCst) == SI_QUEUE && HANDLED_VALUE.load(SeqCst) == 0xfeed_f00d,
        "the handler saw code {} value {:#x}",
        HANDLED.load(SeqCst),
        HANDLED_VALUE.load(SeqCst)
    );
    with_blocked(bit(SIG_RT_TIMER) | bit(SIG_RT_A), || {
        timer_siginfo()?;
        signalfd_siginfo()
    })
}

fn timer_siginfo() -> TestResult {
    // struct sigevent: value, signo, notify (SIGEV_SIGNAL 0).
    let mut sev = [0u8; 64];
    sev[..8].copy_from_slice(&0xabcd_u64.to_le_bytes());
    sev[8..12].copy_from_slice(&(SIG_RT_TIMER as i32).to_le_bytes());
    let mut id: i32 = -1;
    // SAFETY: `sev` is a readable sigevent, `id` a writable timer id.
    ret(unsafe {
        syscall3(
            SYS_TIMER_CREATE,
            CLOCK_MONOTONIC,
            sev.as_ptr() as usize,
            &mut id as *mut i32 as usize,
        )
    })
    .what("timer_create")?;
    // A one-shot timer 20 ms from now.
    let spec: [u64; 4] = [0, 0, 0, 20_000_000];
    // SAFETY: `spec` is a readable itimerspec; no old value.
    ret(unsafe { syscall4(SYS_TIMER_SETTIME, id as usize, 0, spec.as_ptr() as usize, 0) })
        .what("timer_settime")?;
    let i = wait(bit(SIG_RT_TIMER), 5000).what("rt_sigtimedwait for the timer")?;
    // SAFETY: no pointer arguments.
    ret(unsafe { syscall1(SYS_TIMER_DELETE, id as usize) }).what("timer_delete")?;
    ensure!(
        (i.code, i.pid, i.uid, i.value) == (SI_TIMER, id, 0, 0xabcd),
        "timer siginfo {i:?}: expected SI_TIMER, timer id {id}, overrun 0, value 0xabcd"
    );
    Ok(())
}

fn signalfd_siginfo() -> TestResult {
    let mask = bit(SIG_RT_A);
    // SAFETY: `mask` is a readable sigset_t.
    let sfd = ret(unsafe {
        syscall4(
            SYS_SIGNALFD4,
            usize::MAX,
            &mask as *const u64 as usize,
            8,
            O_NONBLOCK,
        )
    })
    .what("signalfd4")? as i32;
    let me = sys::getpid();
    let r = (|| {
        queue(me, SIG_RT_A, SI_QUEUE, 0x77).what("rt_sigqueueinfo")?;
        queue(me, SIG_RT_A, SI_QUEUE, 0x78).what("rt_sigqueueinfo")?;
        let mut rec = [0u8; 256];
        let n = sys::read(sfd, &mut rec).what("read signalfd")?;
        ensure!(
            n == 256,
            "signalfd read {n} bytes, not the two queued records"
        );
        for (k, want) in [0x77u32, 0x78].into_iter().enumerate() {
            let r = &rec[k * 128..];
            // ssi_signo, ssi_code, ssi_pid, ssi_uid, ssi_int, ssi_ptr.
            let got = (
                word(r, 0),
                word(r, 8) as i32,
                word(r, 12),
                word(r, 44),
                word(r, 48),
            );
            ensure!(
                got == (SIG_RT_A as u32, SI_QUEUE, me as u32, want, want),
                "signalfd record {k}: (signo, code, pid, int, ptr) {got:?}"
            );
        }
        Ok(())
    })();
    sys::close(sfd).what("close signalfd")?;
    r
}

/// Core files: a child killed by SIGSEGV with RLIMIT_CORE unlimited leaves an ELF core file
/// (`core` in its working directory: ET_CORE, EM_RISCV) and a wait status with the core
/// bit; with RLIMIT_CORE below a page, no file and no core bit; SIGTERM (no core action)
/// never dumps.
pub fn core_dump_written(cx: &Ctx) -> TestResult {
    const RLIMIT_CORE: usize = 4;
    const SIGSEGV: usize = 11;
    const SIGTERM: usize = 15;
    let core = cx.path("core");
    let run = |limit: u64, sig: usize| -> SysResult<user_tests::sys::WaitStatus> {
        let dir = cx.dir.clone();
        let pid = sys::fork()?;
        if pid == 0 {
            let mut p = Vec::from(dir.as_bytes());
            p.push(0);
            let lim = [limit, u64::MAX];
            // SAFETY: `p` is a NUL-terminated path, `lim` a readable struct rlimit64.
            unsafe {
                if syscall1(SYS_CHDIR, p.as_ptr() as usize) != 0
                    || syscall4(SYS_PRLIMIT64, 0, RLIMIT_CORE, lim.as_ptr() as usize, 0) != 0
                {
                    sys::exit(100);
                }
                syscall3(SYS_KILL, sys::getpid() as usize, sig, 0);
            }
            sys::exit(101);
        }
        Ok(sys::waitpid(pid)?.1)
    };
    let st = run(u64::MAX, SIGSEGV).what("fork")?;
    ensure!(
        st.signal() == Some(SIGSEGV as i32) && st.0 & 0x80 != 0,
        "SIGSEGV with RLIMIT_CORE unlimited: status {:#x} (no core bit)",
        st.0
    );
    let head = crate::get_file(&core)?;
    ensure!(
        head.len() > 64 && head.starts_with(b"\x7fELF") && head[16] == 4 && head[18] == 243,
        "the core file is not an ELF core for RISC-V ({} bytes)",
        head.len()
    );
    sys::unlink(&core).what("unlink core")?;
    // No core: a limit below a page, and a signal whose action is not to dump.
    for (limit, sig, what) in [
        (1000, SIGSEGV, "RLIMIT_CORE below a page"),
        (u64::MAX, SIGTERM, "SIGTERM"),
    ] {
        let st = run(limit, sig).what("fork")?;
        ensure!(
            st.signal() == Some(sig as i32) && st.0 & 0x80 == 0,
            "{what}: status {:#x}",
            st.0
        );
        expect_errno(sys::open(&core, O_RDONLY, 0), Errno::ENOENT, what)?;
    }
    Ok(())
}
