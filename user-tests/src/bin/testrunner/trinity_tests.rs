//! What trinity (`make fuzz-kernel`, tests/trinity) found: the smallest reproducer of each
//! finding, so that it cannot come back unnoticed. Each runs its calls in a forked child that
//! gives up root first (uid and gid 65534, as trinity runs), and the child's exit status says
//! what it saw.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw;

use crate::{ensure, Check, Ctx, TestResult};

const NOBODY: usize = 65534;

/// Fork a child that drops to uid/gid 65534 and exits with what `body` returns (0 for as
/// expected); return an error naming `what` when it did not exit 0.
fn as_nobody(what: &str, body: fn() -> i32) -> TestResult {
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        // SAFETY: no pointer arguments.
        let g = unsafe { raw::syscall3(SYS_SETRESGID, NOBODY, NOBODY, NOBODY) };
        // SAFETY: no pointer arguments.
        let u = unsafe { raw::syscall3(SYS_SETRESUID, NOBODY, NOBODY, NOBODY) };
        if g != 0 || u != 0 {
            sys::exit(100);
        }
        sys::exit(body());
    }
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "{what}: the unprivileged child's status {:#x} (exit 0 is as expected)",
        status.0
    );
    Ok(())
}

/// reboot(2) with the right magic numbers from uid 65534: Linux answers EPERM (no
/// CAP_SYS_BOOT); the kernel powered off instead.
pub fn reboot_unprivileged_eperm(_cx: &Ctx) -> TestResult {
    as_nobody("reboot(POWER_OFF) as uid 65534", || {
        // SAFETY: no pointer arguments.
        let r = unsafe {
            raw::syscall4(
                SYS_REBOOT,
                LINUX_REBOOT_MAGIC1,
                LINUX_REBOOT_MAGIC2,
                LINUX_REBOOT_CMD_POWER_OFF,
                0,
            )
        };
        i32::from(r != -(Errno::EPERM.0 as isize))
    })
}

/// Store through a shared mapping of a file, close and unlink the file, then unmap it: the
/// last unmap writes the dirty page back while the file is still open (the mapping holds it,
/// as Linux's does). The kernel released the file first and dbfs freed the unlinked inode,
/// so the write-back found no file and logged `write-back of mapped file ... failed: ENOENT`
/// (in every long trinity run); `make test-guest` fails on that line.
pub fn unmap_after_unlink_writes_back_quietly(cx: &Ctx) -> TestResult {
    const PAGE: usize = 4096;
    let path = cx.path("mapped-unlinked");
    let f = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.pwrite_all(&[7u8; 2 * PAGE], 0).what("pwrite")?;
    let m = sys::mmap(0, 2 * PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, f.fd(), 0).what("mmap")?;
    m.write(10, b"dirty");
    f.close().what("close")?;
    sys::unlink(&path).what("unlink")?;
    ensure!(
        m.read(10, 5) == b"dirty",
        "the store is gone from the mapping"
    );
    ensure!(m.get(PAGE + 1) == 7, "the file's second page reads wrong");
    drop(m);
    Ok(())
}
