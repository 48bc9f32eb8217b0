//! Calls Debian's glibc, gcc, as, ld and bash make that a kernel may lack: clone3 (glibc's
//! posix_spawn tries it first), riscv_hwprobe (every glibc start), mincore, getsockname and
//! getpeername (bash asks whether its input is a socket).

use user_tests::abi::fcntl::SIGCHLD;
use user_tests::prelude::*;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const CLONE_VFORK: u64 = 0x4000;
const CLONE_CLEAR_SIGHAND: u64 = 1 << 32;
const SIGUSR1: i32 = 10;
const SIGUSR2: i32 = 12;

/// A `struct clone_args` of `size` bytes: flags, exit_signal, stack and stack_size set.
fn clone_args(size: usize, flags: u64, exit_signal: u64, stack: u64, stack_size: u64) -> Vec<u8> {
    let mut b = vec![0u8; size.max(64)];
    for (i, v) in [(0, flags), (4, exit_signal), (5, stack), (6, stack_size)] {
        b[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
    }
    b.truncate(size);
    b
}

/// clone3 as fork and as vfork (the parent waits), CLONE_CLEAR_SIGHAND (caught signals back to
/// the default action, ignored ones stay ignored), and Linux's EINVAL / E2BIG checks.
pub fn clone3_semantics(_cx: &Ctx) -> TestResult {
    let bad: [(Vec<u8>, Errno, &str); 6] = [
        (clone_args(63, 0, SIGCHLD, 0, 0), Errno::EINVAL, "size 63"),
        (
            clone_args(5000, 0, SIGCHLD, 0, 0),
            Errno::E2BIG,
            "size 5000",
        ),
        (
            {
                let mut b = clone_args(96, 0, SIGCHLD, 0, 0);
                b[95] = 1;
                b
            },
            Errno::E2BIG,
            "an unknown field set",
        ),
        (
            clone_args(64, 0, 0x100, 0, 0),
            Errno::EINVAL,
            "exit_signal 0x100",
        ),
        (
            clone_args(64, SIGCHLD, 0, 0, 0),
            Errno::EINVAL,
            "a signal in flags",
        ),
        (
            clone_args(64, 0, SIGCHLD, 0, 4096),
            Errno::EINVAL,
            "stack_size without stack",
        ),
    ];
    for (args, errno, what) in &bad {
        expect_errno(
            sys::clone3_raw(args),
            *errno,
            &format!("clone3 with {what}"),
        )?;
    }
    for (flags, code) in [(0, 42), (CLONE_VFORK, 7)] {
        let pid = sys::clone3_raw(&clone_args(64, flags, SIGCHLD, 0, 0)).what("clone3")?;
        if pid == 0 {
            sys::exit(code);
        }
        let (got, status) = sys::waitpid(pid).what("wait4")?;
        ensure!(
            got == pid && status.exited() && status.exit_code() == code,
            "clone3 flags {flags:#x}: child status {:#x}",
            status.0
        );
    }
    // A caught signal (a handler address is never called here) and an ignored one.
    let caught = [0x1000u64, 0, 0];
    let ignored = [1u64, 0, 0]; // SIG_IGN
    let mut saved = [[0u64; 3]; 2];
    let [s1, s2] = &mut saved;
    sys::rt_sigaction_raw(SIGUSR1, Some(&caught), Some(s1)).what("sigaction SIGUSR1")?;
    sys::rt_sigaction_raw(SIGUSR2, Some(&ignored), Some(s2)).what("sigaction SIGUSR2")?;
    let pid = sys::clone3_raw(&clone_args(64, CLONE_CLEAR_SIGHAND, SIGCHLD, 0, 0));
    if pid == Ok(0) {
        let (mut a1, mut a2) = ([9u64; 3], [9u64; 3]);
        let r1 = sys::rt_sigaction_raw(SIGUSR1, None, Some(&mut a1));
        let r2 = sys::rt_sigaction_raw(SIGUSR2, None, Some(&mut a2));
        sys::exit(if r1.is_ok() && r2.is_ok() && a1[0] == 0 && a2[0] == 1 {
            0
        } else {
            1
        });
    }
    let restored = sys::rt_sigaction_raw(SIGUSR1, Some(&saved[0]), None)
        .and(sys::rt_sigaction_raw(SIGUSR2, Some(&saved[1]), None));
    let pid = pid.what("clone3 CLONE_CLEAR_SIGHAND")?;
    restored.what("restore the signal actions")?;
    let (_, status) = sys::waitpid(pid).what("wait4")?;
    ensure!(
        status.exited() && status.exit_code() == 0,
        "CLONE_CLEAR_SIGHAND: the child's actions were not reset (status {:#x})",
        status.0
    );
    Ok(())
}

/// mincore: touched anonymous pages are in memory, untouched ones not; EINVAL, ENOMEM, EFAULT.
pub fn mincore_semantics(_cx: &Ctx) -> TestResult {
    let page = user_tests::PAGE_SIZE;
    let mut m = sys::AnonMap::new(4 * page).what("mmap")?;
    let s = m.as_mut_slice();
    s[0] = 1;
    s[2 * page] = 1;
    let mut vec = [9u8; 4];
    sys::mincore(m.addr(), 4 * page, vec.as_mut_ptr() as usize).what("mincore")?;
    ensure!(
        vec.map(|b| b & 1) == [1, 0, 1, 0],
        "mincore of pages 0 and 2 touched: {vec:?}"
    );
    sys::mincore(m.addr(), 0, vec.as_mut_ptr() as usize).what("mincore of 0 bytes")?;
    expect_errno(
        sys::mincore(m.addr() + 1, page, vec.as_mut_ptr() as usize),
        Errno::EINVAL,
        "mincore of an unaligned address",
    )?;
    expect_errno(
        sys::mincore(m.addr(), 4 * page, 8),
        Errno::EFAULT,
        "mincore into address 8",
    )?;
    let hole = m.addr() + 4 * page;
    sys::munmap(m.addr() + 3 * page, page).what("munmap the last page")?;
    expect_errno(
        sys::mincore(hole - 2 * page, 2 * page, vec.as_mut_ptr() as usize),
        Errno::ENOMEM,
        "mincore over an unmapped page",
    )?;
    Ok(())
}

/// getsockname: the family alone before bind, the path after, cut to the room given while
/// the length says all; getpeername of a socket never connected is ENOTCONN; both are
/// ENOTSOCK on a file and EBADF on a closed descriptor.
pub fn socket_names(cx: &Ctx) -> TestResult {
    let fd = sys::socket(sys::AF_UNIX, 1, 0).what("socket")?;
    let (b, len) = sys::sockname(fd, 110, false).what("getsockname unbound")?;
    ensure!(len == 2 && b == [1, 0], "unbound: {b:?} len {len}");
    expect_errno(sys::sockname(fd, 110, true), Errno::ENOTCONN, "getpeername")?;
    // FAT cannot hold the socket's name: the bound half runs elsewhere.
    if !cx.fat {
        let path = cx.path("sock");
        sys::bind_unix(fd, &path).what("bind")?;
        let (b, len) = sys::sockname(fd, 110, false).what("getsockname bound")?;
        ensure!(
            len as usize == 3 + path.len() && b[2..2 + path.len()] == *path.as_bytes(),
            "bound: len {len}, {b:?}"
        );
        let (b, len) = sys::sockname(fd, 4, false).what("getsockname into 4 bytes")?;
        ensure!(
            b.len() == 4 && len as usize == 3 + path.len(),
            "cut: {b:?} len {len}"
        );
    }
    let f = File::open(&cx.path("file"), O_RDWR | O_CREAT, 0o644).what("create")?;
    expect_errno(
        sys::sockname(f.fd(), 110, true),
        Errno::ENOTSOCK,
        "getpeername of a file",
    )?;
    expect_errno(
        sys::sockname(f.fd(), 110, false),
        Errno::ENOTSOCK,
        "getsockname of a file",
    )?;
    let _ = sys::close(fd);
    expect_errno(
        sys::sockname(fd, 110, false),
        Errno::EBADF,
        "getsockname of a closed fd",
    )?;
    Ok(())
}

/// riscv_hwprobe: the base behaviour (IMA), F+D and C, the timer's frequency; an unknown key
/// comes back as -1; unknown flags are EINVAL; RISCV_HWPROBE_WHICH_CPUS keeps the CPU that
/// has what is asked for.
pub fn riscv_hwprobe_keys(_cx: &Ctx) -> TestResult {
    let mut pairs = [[3u64, 0], [4, 0], [8, 0], [9999, 5]];
    sys::riscv_hwprobe(&mut pairs, None, 0).what("riscv_hwprobe")?;
    ensure!(pairs[0] == [3, 1], "BASE_BEHAVIOR: {:?}", pairs[0]);
    ensure!(
        pairs[1][1] & 3 == 3,
        "IMA_EXT_0 lacks FD or C: {:#x}",
        pairs[1][1]
    );
    ensure!(pairs[2][1] > 0, "TIME_CSR_FREQ 0");
    ensure!(pairs[3] == [u64::MAX, 0], "unknown key: {:?}", pairs[3]);
    expect_errno(
        sys::riscv_hwprobe(&mut pairs, None, 2),
        Errno::EINVAL,
        "flags 2",
    )?;
    let mut cpus = [1u8; 8];
    let mut want = [[4u64, 3]];
    sys::riscv_hwprobe(&mut want, Some(&mut cpus), 1).what("WHICH_CPUS")?;
    ensure!(
        cpus[0] & 1 == 1,
        "CPU 0 has FD and C, yet it was dropped: {cpus:?}"
    );
    Ok(())
}
