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
