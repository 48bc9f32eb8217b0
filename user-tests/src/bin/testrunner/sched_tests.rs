//! Scheduling policy calls (sched_setscheduler and friends), the host's names
//! (sethostname, setdomainname, uname, /proc/sys/kernel/hostname), personality and getcpu,
//! each with Linux's answers.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall2, syscall3, syscall4};

use crate::stress_tests::in_child;
use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const SCHED_OTHER: usize = 0;
const SCHED_FIFO: usize = 1;
const SCHED_RR: usize = 2;
const SCHED_BATCH: usize = 3;
const SCHED_IDLE: usize = 5;
const SCHED_DEADLINE: usize = 6;
const SCHED_RESET_ON_FORK: usize = 0x4000_0000;
const NOBODY: usize = 65534;

fn ret(r: isize) -> SysResult<usize> {
    Errno::from_ret(r)
}

fn setscheduler(pid: usize, policy: usize, prio: i32) -> SysResult<usize> {
    let p = prio;
    // SAFETY: `p` is a 4-byte struct sched_param.
    ret(unsafe {
        syscall3(
            SYS_SCHED_SETSCHEDULER,
            pid,
            policy,
            &p as *const i32 as usize,
        )
    })
}

fn getscheduler(pid: usize) -> SysResult<usize> {
    // SAFETY: no pointer arguments.
    ret(unsafe { syscall1(SYS_SCHED_GETSCHEDULER, pid) })
}

fn getparam(pid: usize) -> SysResult<i32> {
    let mut p = -1i32;
    // SAFETY: `p` is a 4-byte struct sched_param.
    ret(unsafe { syscall2(SYS_SCHED_GETPARAM, pid, &mut p as *mut i32 as usize) }).map(|_| p)
}

fn rr_interval(pid: usize) -> SysResult<(i64, i64)> {
    let mut ts = [-1i64; 2];
    // SAFETY: `ts` is a struct timespec.
    ret(unsafe { syscall2(SYS_SCHED_RR_GET_INTERVAL, pid, ts.as_mut_ptr() as usize) })
        .map(|_| (ts[0], ts[1]))
}

fn setresuid_nobody() -> bool {
    // SAFETY: no pointer arguments.
    unsafe { syscall3(SYS_SETRESUID, NOBODY, NOBODY, NOBODY) == 0 }
}

/// sched_get_priority_max/min, sched_setscheduler/getscheduler/setparam/getparam,
/// sched_rr_get_interval, SCHED_RESET_ON_FORK and sched_setattr/getattr: values, ranges and
/// errnos as Linux's; a process without CAP_SYS_NICE and RLIMIT_RTPRIO 0 cannot take a
/// real-time policy.
pub fn sched_policy_calls(_cx: &Ctx) -> TestResult {
    let range = |p: usize| -> SysResult<(usize, usize)> {
        // SAFETY: no pointer arguments.
        let max = ret(unsafe { syscall1(SYS_SCHED_GET_PRIORITY_MAX, p) })?;
        // SAFETY: as above.
        let min = ret(unsafe { syscall1(SYS_SCHED_GET_PRIORITY_MIN, p) })?;
        Ok((min, max))
    };
    for (p, want) in [
        (SCHED_FIFO, (1, 99)),
        (SCHED_RR, (1, 99)),
        (SCHED_OTHER, (0, 0)),
        (SCHED_BATCH, (0, 0)),
        (SCHED_IDLE, (0, 0)),
    ] {
        let got = range(p).what("sched_get_priority_min/max")?;
        ensure!(got == want, "policy {p}: range {got:?}, expected {want:?}");
    }
    expect_errno(range(SCHED_DEADLINE + 100), Errno::EINVAL, "unknown policy")?;
    ensure!(getscheduler(0) == Ok(SCHED_OTHER), "initial policy");
    ensure!(getparam(0) == Ok(0), "initial priority");
    setscheduler(0, SCHED_FIFO, 10).what("SCHED_FIFO 10")?;
    ensure!(getscheduler(0) == Ok(SCHED_FIFO), "policy after SCHED_FIFO");
    ensure!(getparam(0) == Ok(10), "priority after SCHED_FIFO 10");
    ensure!(rr_interval(0) == Ok((0, 0)), "SCHED_FIFO's time slice is 0");
    let p = 20i32;
    // SAFETY: `p` is a struct sched_param.
    ret(unsafe { syscall2(SYS_SCHED_SETPARAM, 0, &p as *const i32 as usize) })
        .what("sched_setparam 20")?;
    ensure!(getparam(0) == Ok(20), "priority after sched_setparam");
    expect_errno(setscheduler(0, SCHED_FIFO, 0), Errno::EINVAL, "FIFO 0")?;
    expect_errno(setscheduler(0, SCHED_RR, 100), Errno::EINVAL, "RR 100")?;
    expect_errno(setscheduler(0, SCHED_OTHER, 5), Errno::EINVAL, "OTHER 5")?;
    expect_errno(setscheduler(0, 4, 0), Errno::EINVAL, "policy 4")?;
    expect_errno(
        setscheduler(usize::MAX, SCHED_OTHER, 0),
        Errno::EINVAL,
        "pid -1",
    )?;
    expect_errno(
        setscheduler(99_999, SCHED_OTHER, 0),
        Errno::ESRCH,
        "no such pid",
    )?;
    // SAFETY: a null param must be refused before it is read.
    let null = ret(unsafe { syscall3(SYS_SCHED_SETSCHEDULER, 0, SCHED_OTHER, 0) });
    expect_errno(null, Errno::EINVAL, "null param")?;
    // SAFETY: as above.
    let null = ret(unsafe { syscall2(SYS_SCHED_GETPARAM, 0, 0) });
    expect_errno(null, Errno::EINVAL, "getparam null")?;
    expect_errno(getscheduler(usize::MAX), Errno::EINVAL, "getscheduler(-1)")?;
    expect_errno(getscheduler(99_999), Errno::ESRCH, "getscheduler(no pid)")?;
    // SAFETY: a bad timespec pointer must be refused with EFAULT.
    let bad = ret(unsafe { syscall2(SYS_SCHED_RR_GET_INTERVAL, 0, 8) });
    expect_errno(bad, Errno::EFAULT, "rr_get_interval into address 8")?;

    setscheduler(0, SCHED_RR | SCHED_RESET_ON_FORK, 5).what("RR with RESET_ON_FORK")?;
    ensure!(
        getscheduler(0) == Ok(SCHED_RR | SCHED_RESET_ON_FORK),
        "getscheduler reports SCHED_RESET_ON_FORK"
    );
    let (s, ns) = rr_interval(0).what("rr_get_interval")?;
    ensure!(s == 0 && ns > 0, "SCHED_RR's time slice {s}s {ns}ns");
    in_child("SCHED_RESET_ON_FORK child", None, || {
        if getscheduler(0) != Ok(SCHED_OTHER) || getparam(0) != Ok(0) {
            return 1;
        }
        0
    })?;
    setscheduler(0, SCHED_OTHER, 0).what("back to SCHED_OTHER")?;

    // sched_setattr / sched_getattr: a nice value with SCHED_BATCH, read back.
    let mut attr = [0u8; 56];
    attr[..4].copy_from_slice(&48u32.to_le_bytes());
    attr[4..8].copy_from_slice(&(SCHED_BATCH as u32).to_le_bytes());
    attr[8..16].copy_from_slice(&1u64.to_le_bytes());
    attr[16..20].copy_from_slice(&5i32.to_le_bytes());
    // SAFETY: `attr` is a 48-byte struct sched_attr (VER0) and more.
    ret(unsafe { syscall3(SYS_SCHED_SETATTR, 0, attr.as_ptr() as usize, 0) })
        .what("sched_setattr")?;
    let mut back = [0xffu8; 56];
    // SAFETY: `back` has room for the 56 bytes asked.
    ret(unsafe { syscall4(SYS_SCHED_GETATTR, 0, back.as_mut_ptr() as usize, 56, 0) })
        .what("sched_getattr")?;
    let word = |b: &[u8], o: usize| u32::from_le_bytes([b[o], b[o + 1], b[o + 2], b[o + 3]]);
    ensure!(
        word(&back, 0) == 56 && word(&back, 4) == SCHED_BATCH as u32 && word(&back, 16) == 5,
        "sched_getattr gave size {} policy {} nice {}",
        word(&back, 0),
        word(&back, 4),
        word(&back, 16) as i32
    );
    // SAFETY: a size below VER0 is refused before anything is written.
    let small = ret(unsafe { syscall4(SYS_SCHED_GETATTR, 0, back.as_mut_ptr() as usize, 47, 0) });
    expect_errno(small, Errno::EINVAL, "sched_getattr size 47")?;
    attr[4..8].copy_from_slice(&(SCHED_DEADLINE as u32).to_le_bytes());
    // SAFETY: as above.
    let dl = ret(unsafe { syscall3(SYS_SCHED_SETATTR, 0, attr.as_ptr() as usize, 0) });
    expect_errno(dl, Errno::EINVAL, "SCHED_DEADLINE (not built)")?;
    attr[4..8].copy_from_slice(&(SCHED_OTHER as u32).to_le_bytes());
    attr[8..16].copy_from_slice(&0u64.to_le_bytes());
    attr[16..20].copy_from_slice(&0i32.to_le_bytes());
    // SAFETY: as above.
    ret(unsafe { syscall3(SYS_SCHED_SETATTR, 0, attr.as_ptr() as usize, 0) })
        .what("back to SCHED_OTHER, nice 0")?;

    in_child("an unprivileged real-time policy", None, || {
        if !setresuid_nobody() {
            return 1;
        }
        if setscheduler(0, SCHED_FIFO, 1) != Err(Errno::EPERM) {
            return 2;
        }
        if setscheduler(1, SCHED_OTHER, 0) != Err(Errno::EPERM) {
            return 3;
        }
        if setscheduler(0, SCHED_BATCH, 0).is_err() || getscheduler(0) != Ok(SCHED_BATCH) {
            return 4;
        }
        0
    })
}

/// uname's 65-byte field `i` (0 sysname, 1 nodename, 2 release, ..., 5 domainname).
fn uname_field(i: usize) -> Result<String, String> {
    let mut buf = [0u8; 65 * 6];
    // SAFETY: `buf` is a struct utsname.
    ret(unsafe { syscall1(SYS_UNAME, buf.as_mut_ptr() as usize) }).what("uname")?;
    let f = &buf[i * 65..(i + 1) * 65];
    let n = f.iter().position(|&b| b == 0).unwrap_or(65);
    Ok(String::from_utf8_lossy(&f[..n]).into_owned())
}

fn setname(nr: usize, name: &[u8], len: usize) -> SysResult<usize> {
    // SAFETY: `name` has at least `len` bytes, or the kernel refuses `len`.
    ret(unsafe { syscall2(nr, name.as_ptr() as usize, len) })
}

fn read_text(path: &str) -> Result<String, String> {
    let f = File::open_read(path).what(&format!("open {path}"))?;
    let mut buf = vec![0u8; 256];
    let n = f.read_full(&mut buf).what(&format!("read {path}"))?;
    Ok(String::from_utf8_lossy(&buf[..n]).into_owned())
}

/// sethostname / setdomainname change what uname and /proc/sys/kernel/{hostname,domainname}
/// report; a name longer than 64 bytes is EINVAL, a caller without CAP_SYS_ADMIN gets EPERM.
pub fn host_names(_cx: &Ctx) -> TestResult {
    let (old_host, old_domain) = (uname_field(1)?, uname_field(5)?);
    setname(SYS_SETHOSTNAME, b"ltp-test-host", 13).what("sethostname")?;
    setname(SYS_SETDOMAINNAME, b"example.org", 11).what("setdomainname")?;
    let got = (uname_field(1)?, uname_field(5)?);
    let procs = (
        read_text("/proc/sys/kernel/hostname")?,
        read_text("/proc/sys/kernel/domainname")?,
    );
    setname(SYS_SETHOSTNAME, old_host.as_bytes(), old_host.len()).what("restore host")?;
    setname(SYS_SETDOMAINNAME, old_domain.as_bytes(), old_domain.len()).what("restore")?;
    ensure!(
        got.0 == "ltp-test-host" && got.1 == "example.org",
        "uname gave {got:?}"
    );
    ensure!(
        procs.0 == "ltp-test-host\n" && procs.1 == "example.org\n",
        "/proc/sys/kernel gave {procs:?}"
    );
    let long = [b'x'; 65];
    expect_errno(
        setname(SYS_SETHOSTNAME, &long, 65),
        Errno::EINVAL,
        "65 bytes",
    )?;
    expect_errno(
        setname(SYS_SETHOSTNAME, &long, usize::MAX),
        Errno::EINVAL,
        "-1",
    )?;
    expect_errno(
        setname(SYS_SETDOMAINNAME, &long, 65),
        Errno::EINVAL,
        "65 bytes",
    )?;
    // SAFETY: a bad name pointer must be refused with EFAULT.
    let bad = ret(unsafe { syscall2(SYS_SETHOSTNAME, 8, 4) });
    expect_errno(bad, Errno::EFAULT, "sethostname from address 8")?;
    ensure!(uname_field(1)? == old_host, "the host name changed");
    in_child("an unprivileged sethostname", None, || {
        if !setresuid_nobody() {
            return 1;
        }
        if setname(SYS_SETHOSTNAME, b"x", 1) != Err(Errno::EPERM) {
            return 2;
        }
        if setname(SYS_SETDOMAINNAME, b"x", 1) != Err(Errno::EPERM) {
            return 3;
        }
        0
    })
}

/// personality: 0xffffffff only reads; the old value comes back; UNAME26 makes uname
/// report a 2.6 release. getcpu: a hart that exists, node 0, EFAULT for a bad pointer.
pub fn personality_getcpu(_cx: &Ctx) -> TestResult {
    const UNAME26: usize = 0x0002_0000;
    let persona = |v: usize| -> SysResult<usize> {
        // SAFETY: no pointer arguments.
        ret(unsafe { syscall1(SYS_PERSONALITY, v) })
    };
    ensure!(persona(0xffff_ffff) == Ok(0), "initial personality");
    let release = uname_field(2)?;
    ensure!(
        persona(UNAME26) == Ok(0),
        "setting UNAME26 returns the old 0"
    );
    let old = uname_field(2)?;
    ensure!(
        persona(0xffff_ffff) == Ok(UNAME26),
        "personality reads back"
    );
    ensure!(persona(0) == Ok(UNAME26), "back to PER_LINUX");
    ensure!(
        old.starts_with("2.6.") && uname_field(2)? == release,
        "UNAME26 release {old:?}, normal {release:?}"
    );
    let (mut cpu, mut node) = (u32::MAX, u32::MAX);
    // SAFETY: `cpu` and `node` are u32s.
    ret(unsafe {
        syscall3(
            SYS_GETCPU,
            &mut cpu as *mut u32 as usize,
            &mut node as *mut u32 as usize,
            0,
        )
    })
    .what("getcpu")?;
    ensure!(cpu < 8 && node == 0, "getcpu gave cpu {cpu} node {node}");
    // SAFETY: null pointers are allowed; address 8 must be refused.
    ret(unsafe { syscall3(SYS_GETCPU, 0, 0, 0) }).what("getcpu(NULL, NULL)")?;
    // SAFETY: as above.
    let bad = ret(unsafe { syscall3(SYS_GETCPU, 8, 0, 0) });
    expect_errno(bad, Errno::EFAULT, "getcpu into address 8")
}

/// reboot's LINUX_REBOOT_CMD_CAD_OFF / _CAD_ON are accepted from root (EPERM otherwise, EINVAL
/// for an unknown command); wait4(INT_MIN) is ESRCH, as Linux answers.
pub fn reboot_cad_wait_int_min(_cx: &Ctx) -> TestResult {
    let reboot = |cmd: usize| -> SysResult<usize> {
        // SAFETY: no pointer arguments; the commands used here do not power off.
        ret(unsafe { syscall4(SYS_REBOOT, LINUX_REBOOT_MAGIC1, LINUX_REBOOT_MAGIC2, cmd, 0) })
    };
    reboot(0).what("reboot(CAD_OFF)")?;
    reboot(0x89ab_cdef).what("reboot(CAD_ON)")?;
    expect_errno(
        reboot(0x1234_5678),
        Errno::EINVAL,
        "reboot(unknown command)",
    )?;
    in_child("an unprivileged reboot(CAD_ON)", None, || {
        if !setresuid_nobody() {
            return 1;
        }
        if reboot(0x89ab_cdef) != Err(Errno::EPERM) {
            return 2;
        }
        0
    })?;
    let r = sys::wait4(i32::MIN, 0);
    expect_errno(r.map(|(p, _)| p), Errno::ESRCH, "wait4(INT_MIN)")
}

pub(crate) fn getaffinity(pid: usize, size: usize) -> SysResult<u64> {
    let mut m = 0u64;
    // SAFETY: `m` is an 8-byte cpu mask, and `size` is at most 8 here.
    ret(unsafe {
        syscall3(
            SYS_SCHED_GETAFFINITY,
            pid,
            size,
            &mut m as *mut u64 as usize,
        )
    })
    .map(|_| m)
}

pub(crate) fn setaffinity(pid: usize, m: u64) -> SysResult<usize> {
    // SAFETY: `m` is an 8-byte cpu mask.
    ret(unsafe { syscall3(SYS_SCHED_SETAFFINITY, pid, 8, &m as *const u64 as usize) })
}

pub(crate) fn getcpu() -> SysResult<u32> {
    let mut cpu = u32::MAX;
    // SAFETY: `cpu` is a u32; the node pointer is null.
    ret(unsafe { syscall3(SYS_GETCPU, &mut cpu as *mut u32 as usize, 0, 0) }).map(|_| cpu)
}

/// sched_setaffinity and sched_getaffinity: a thread pinned to a hart runs there (at once and
/// after yields), the mask reads back and a forked child keeps it, with Linux's errnos: an
/// empty or offline-only mask EINVAL, a bad pointer EFAULT, a size not a multiple of 8
/// EINVAL (getaffinity), no such thread ESRCH, another user's process EPERM.
pub fn sched_affinity(_cx: &Ctx) -> TestResult {
    in_child("sched_setaffinity", None, || {
        let all = match getaffinity(0, 8) {
            Ok(m) if m != 0 => m,
            _ => return 1,
        };
        for hart in (0..64).filter(|h| all & (1 << h) != 0) {
            if setaffinity(0, 1 << hart) != Ok(0) || getaffinity(0, 8) != Ok(1 << hart) {
                return 2;
            }
            for _ in 0..20 {
                if getcpu() != Ok(hart) {
                    return 3;
                }
                sys::sched_yield();
            }
        }
        // The last hart's mask is inherited.
        let last = 63 - all.leading_zeros();
        let Ok(pid) = sys::fork() else { return 4 };
        if pid == 0 {
            let same = getaffinity(0, 8) == Ok(1 << last) && getcpu() == Ok(last);
            sys::exit(if same { 0 } else { 1 });
        }
        match sys::waitpid(pid) {
            Ok((_, st)) if st.exited() && st.exit_code() == 0 => {}
            _ => return 5,
        }
        if setaffinity(0, all) != Ok(0) || getaffinity(0, 8) != Ok(all) {
            return 6;
        }
        if setaffinity(0, 0) != Err(Errno::EINVAL) || setaffinity(0, 1 << 63) != Err(Errno::EINVAL)
        {
            return 7;
        }
        // SAFETY: address 8 is never mapped: the kernel must refuse it.
        if ret(unsafe { syscall3(SYS_SCHED_SETAFFINITY, 0, 8, 8) }) != Err(Errno::EFAULT) {
            return 8;
        }
        if getaffinity(0, 4) != Err(Errno::EINVAL) {
            return 9;
        }
        if setaffinity(0x3fff_ffff, all) != Err(Errno::ESRCH)
            || getaffinity(0x3fff_ffff, 8) != Err(Errno::ESRCH)
        {
            return 10;
        }
        // Without CAP_SYS_NICE: init (root's) is out of reach, the caller itself is not.
        if !setresuid_nobody() {
            return 11;
        }
        if setaffinity(1, all) != Err(Errno::EPERM) || getaffinity(1, 8) != Ok(all) {
            return 12;
        }
        if setaffinity(0, all) != Ok(0) {
            return 13;
        }
        0
    })
}
