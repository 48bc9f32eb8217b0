//! Memory locks: mlock, mlock2 (MLOCK_ONFAULT), munlock, mlockall, munlockall and
//! MAP_LOCKED, seen through /proc/self/status's VmLck and mincore, with RLIMIT_MEMLOCK and
//! the errnos Linux gives.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall2, syscall3, syscall4, syscall6};

use crate::stress_tests::in_child;
use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const PAGE: usize = 4096;
const MLOCK_ONFAULT: usize = 1;
const MCL_CURRENT: usize = 1;
const MCL_FUTURE: usize = 2;
const MCL_ONFAULT: usize = 4;
const RLIMIT_MEMLOCK: usize = 8;

fn ret(r: isize) -> SysResult<usize> {
    Errno::from_ret(r)
}

fn mlock(addr: usize, len: usize) -> SysResult<usize> {
    // SAFETY: no memory is read or written through the arguments.
    ret(unsafe { syscall2(SYS_MLOCK, addr, len) })
}

fn mlock2(addr: usize, len: usize, flags: usize) -> SysResult<usize> {
    // SAFETY: as above.
    ret(unsafe { syscall3(SYS_MLOCK2, addr, len, flags) })
}

fn munlock(addr: usize, len: usize) -> SysResult<usize> {
    // SAFETY: as above.
    ret(unsafe { syscall2(SYS_MUNLOCK, addr, len) })
}

fn mlockall(flags: usize) -> SysResult<usize> {
    // SAFETY: no pointer arguments.
    ret(unsafe { syscall1(SYS_MLOCKALL, flags) })
}

fn munlockall() -> SysResult<usize> {
    // SAFETY: no arguments.
    ret(unsafe { user_tests::raw::syscall0(SYS_MUNLOCKALL) })
}

/// A `/proc/self/status` figure in kB (`VmLck`, `VmSize`).
fn status_kb(key: &str) -> Result<usize, String> {
    let f = File::open_read("/proc/self/status").what("open /proc/self/status")?;
    let mut buf = vec![0u8; 4096];
    let n = f.read_full(&mut buf).what("read /proc/self/status")?;
    let text = String::from_utf8_lossy(&buf[..n]).into_owned();
    text.lines()
        .find_map(|l| l.strip_prefix(key)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .ok_or_else(|| format!("no {key} line in /proc/self/status"))
}

/// How many of the `pages` pages at `addr` mincore reports resident.
fn resident(addr: usize, pages: usize) -> Result<usize, String> {
    let mut vec = vec![0u8; pages];
    sys::mincore(addr, pages * PAGE, vec.as_mut_ptr() as usize).what("mincore")?;
    Ok(vec.iter().filter(|&&b| b & 1 != 0).count())
}

fn set_memlock(soft: u64, hard: u64) -> SysResult<usize> {
    let lim = [soft, hard];
    // SAFETY: `lim` is a struct rlimit64; no old value is asked.
    ret(unsafe { syscall4(SYS_PRLIMIT64, 0, RLIMIT_MEMLOCK, lim.as_ptr() as usize, 0) })
}

/// mlock faults the (widened) range in and counts it in VmLck; MLOCK_ONFAULT counts without
/// faulting; munlock undoes both; holes, bad flags and RLIMIT_MEMLOCK give ENOMEM, EINVAL
/// and EPERM as Linux's.
pub fn mlock_ranges(_cx: &Ctx) -> TestResult {
    let m = sys::AnonMap::new(8 * PAGE).what("mmap 8 pages")?;
    let a = m.addr();
    let base = status_kb("VmLck")?;
    // Two pages and one byte, from an unaligned address: three pages locked and present.
    mlock(a + 10, 2 * PAGE + 1).what("mlock")?;
    ensure!(
        status_kb("VmLck")? == base + 12,
        "VmLck after mlock of 3 pages"
    );
    ensure!(
        resident(a, 8)? == 3,
        "mlock faulted {} pages in",
        resident(a, 8)?
    );
    mlock(a, 3 * PAGE).what("mlock again")?;
    ensure!(
        status_kb("VmLck")? == base + 12,
        "locking again counted twice"
    );
    munlock(a, 8 * PAGE).what("munlock")?;
    ensure!(status_kb("VmLck")? == base, "VmLck after munlock");
    // MLOCK_ONFAULT: counted, not faulted in.
    mlock2(a + 4 * PAGE, 4 * PAGE, MLOCK_ONFAULT).what("mlock2 ONFAULT")?;
    ensure!(
        status_kb("VmLck")? == base + 16,
        "VmLck after mlock2 ONFAULT"
    );
    ensure!(
        resident(a + 4 * PAGE, 4)? == 0,
        "MLOCK_ONFAULT faulted pages in"
    );
    munlock(a, 8 * PAGE).what("munlock")?;
    expect_errno(mlock2(a, PAGE, 2), Errno::EINVAL, "mlock2 flags 2")?;
    expect_errno(
        munlock(usize::MAX - PAGE, 2 * PAGE),
        Errno::EINVAL,
        "wrapping range",
    )?;
    // A hole in the range.
    let mut h = sys::AnonMap::new(3 * PAGE).what("mmap 3 pages")?;
    h.unmap_tail(PAGE).what("unmap 2 pages")?;
    expect_errno(
        mlock(h.addr(), 3 * PAGE),
        Errno::ENOMEM,
        "mlock over a hole",
    )?;
    expect_errno(
        munlock(h.addr(), 3 * PAGE),
        Errno::ENOMEM,
        "munlock over a hole",
    )?;
    // MAP_LOCKED: locked and present from the start.
    // SAFETY: a fresh anonymous mapping chosen by the kernel.
    let l = ret(unsafe {
        syscall6(
            SYS_MMAP,
            0,
            4 * PAGE,
            (PROT_READ | PROT_WRITE) as usize,
            (MAP_PRIVATE | MAP_ANONYMOUS | MAP_LOCKED) as usize,
            usize::MAX,
            0,
        )
    })
    .what("mmap MAP_LOCKED")?;
    let (lck, res) = (status_kb("VmLck")?, resident(l, 4)?);
    sys::munmap(l, 4 * PAGE).what("munmap")?;
    ensure!(
        lck == base + 16 && res == 4,
        "MAP_LOCKED: VmLck {lck} kB (base {base}), {res} pages present"
    );
    ensure!(status_kb("VmLck")? == base, "munmap kept the lock counted");
    // Locks are not inherited; RLIMIT_MEMLOCK binds a process without CAP_IPC_LOCK.
    mlock(a, PAGE).what("mlock for fork")?;
    in_child("mlock limits", None, || {
        if status_kb("VmLck") != Ok(0) {
            return 1;
        }
        if set_memlock(PAGE as u64 - 1, PAGE as u64 - 1).is_err() {
            return 2;
        }
        // SAFETY: no pointer arguments.
        if unsafe { syscall3(SYS_SETRESUID, 65534, 65534, 65534) } != 0 {
            return 3;
        }
        if mlock(a, PAGE) != Err(Errno::ENOMEM) {
            return 4;
        }
        if set_memlock(0, 0).is_err() || mlock(a, PAGE) != Err(Errno::EPERM) {
            return 5;
        }
        if mlockall(MCL_CURRENT) != Err(Errno::EPERM) {
            return 6;
        }
        0
    })?;
    munlock(a, PAGE).what("munlock")?;
    Ok(())
}

/// mlockall(MCL_CURRENT) locks every mapping (VmLck = VmSize), MCL_FUTURE the later ones;
/// munlockall undoes both; bad flags are EINVAL.
pub fn mlockall_semantics(_cx: &Ctx) -> TestResult {
    expect_errno(mlockall(0), Errno::EINVAL, "mlockall(0)")?;
    expect_errno(
        mlockall(MCL_ONFAULT),
        Errno::EINVAL,
        "mlockall(MCL_ONFAULT)",
    )?;
    expect_errno(mlockall(8), Errno::EINVAL, "mlockall(8)")?;
    mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT).what("mlockall")?;
    let (lck, size) = (status_kb("VmLck")?, status_kb("VmSize")?);
    let later = sys::AnonMap::new(4 * PAGE).what("mmap after MCL_FUTURE")?;
    let lck_later = status_kb("VmLck")?;
    let res = resident(later.addr(), 4)?;
    munlockall().what("munlockall")?;
    let after = status_kb("VmLck")?;
    let again = sys::AnonMap::new(4 * PAGE).what("mmap after munlockall")?;
    let after_map = status_kb("VmLck")?;
    drop((later, again));
    ensure!(lck == size, "mlockall: VmLck {lck} kB, VmSize {size} kB");
    ensure!(
        lck_later == lck + 16 && res == 0,
        "MCL_FUTURE|MCL_ONFAULT: VmLck {lck_later} kB after a 16 kB mapping ({res} pages in)"
    );
    ensure!(
        after == 0 && after_map == 0,
        "munlockall left VmLck {after} kB, {after_map} kB after mapping"
    );
    Ok(())
}
