//! `/proc/self/fd` and `/dev/fd`: a descriptor's link names its file (`pipe:[ino]` for a
//! pipe), and opening the link reaches the open file itself, even after its name moved, with
//! an offset of its own; a pipe opened through it is the same pipe (bash's `<(command)`).

use user_tests::prelude::*;

use crate::{ensure, expect_errno, get_file, put_file, Check, Ctx, TestResult};

pub fn proc_fd_links(cx: &Ctx) -> TestResult {
    let (f, moved) = (cx.path("fdlink"), cx.path("fdlink-moved"));
    put_file(&f, b"hello fd")?;
    let fd = sys::open(&f, O_RDONLY, 0).what("open")?;
    let link = format!("/proc/self/fd/{fd}");
    let text = sys::readlink(&link).what("readlink /proc/self/fd/N");
    let mut head = [0u8; 2];
    let first = sys::read(fd, &mut head).what("read 2 bytes");
    // The walk follows the link to the open file, not to the name it had.
    let renamed = sys::rename(&f, &moved).what("rename");
    let again = sys::open(&format!("/dev/fd/{fd}"), O_RDONLY, 0).what("open /dev/fd/N");
    let mut buf = [0u8; 16];
    let got = again.and_then(|g| {
        let n = sys::read(g, &mut buf).what("read through the link");
        let _ = sys::close(g);
        n
    });
    let _ = sys::close(fd);
    let _ = sys::unlink(&moved);
    ensure!(text? == f, "the link's text is not the file's path");
    ensure!(first? == 2, "short read");
    renamed?;
    let n = got?;
    ensure!(
        &buf[..n] == b"hello fd",
        "the file opened through the link read {:?} (its own offset starts at 0)",
        core::str::from_utf8(&buf[..n])
    );
    // A closed descriptor, and names that are not a descriptor's.
    expect_errno(
        sys::open("/proc/self/fd/999", O_RDONLY, 0),
        Errno::ENOENT,
        "open /proc/self/fd/999",
    )?;
    expect_errno(
        sys::readlink("/proc/self/fd/01"),
        Errno::ENOENT,
        "readlink /proc/self/fd/01",
    )?;
    // A pipe: the link says pipe:[ino], and an open of it reads what the write end writes.
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let text = sys::readlink(&format!("/dev/fd/{r}")).what("readlink a pipe's link");
    let r2 = sys::open(&format!("/dev/fd/{r}"), O_RDONLY, 0).what("open a pipe's link");
    let wrote = sys::write(w, b"through the pipe").what("write");
    let mut pbuf = [0u8; 32];
    let read = r2
        .as_ref()
        .map_err(|e| e.clone())
        .and_then(|&r2| sys::read(r2, &mut pbuf).what("read the reopened pipe"));
    for d in [Ok(r), Ok(w), r2] {
        if let Ok(d) = d {
            let _ = sys::close(d);
        }
    }
    let text = text?;
    ensure!(
        text.starts_with("pipe:[") && text.ends_with(']'),
        "a pipe's link reads {text:?}"
    );
    wrote?;
    let n = read?;
    ensure!(
        &pbuf[..n] == b"through the pipe",
        "the reopened pipe read other bytes"
    );
    Ok(())
}

/// `/proc/self/exe` names the running program and opens it (an ELF file); `/proc/self/task`
/// holds one directory per thread, whose `stat` gives the thread's id and state;
/// `/proc/cmdline` gives the kernel's command line.
pub fn proc_exe_task(_cx: &Ctx) -> TestResult {
    let exe = sys::readlink("/proc/self/exe").what("readlink /proc/self/exe")?;
    ensure!(
        exe.starts_with('/') && exe.ends_with("testrunner"),
        "/proc/self/exe reads {exe:?}"
    );
    let head = get_file("/proc/self/exe")?;
    ensure!(
        head.starts_with(b"\x7fELF"),
        "/proc/self/exe opened something that is not an ELF file"
    );
    // SAFETY: no arguments.
    let tid = unsafe { user_tests::raw::syscall0(user_tests::abi::syscall::SYS_GETTID) } as usize;
    let stat = get_file(&format!("/proc/self/task/{tid}/stat"))?;
    let stat = String::from_utf8_lossy(&stat);
    ensure!(
        stat.starts_with(&format!("{tid} (testrunner) R ")),
        "/proc/self/task/{tid}/stat reads {stat:?}"
    );
    expect_errno(
        sys::open("/proc/self/task/999999/stat", O_RDONLY, 0),
        Errno::ENOENT,
        "open a thread that does not exist",
    )?;
    let cmdline = get_file("/proc/cmdline")?;
    ensure!(
        cmdline.len() > 1 && cmdline.ends_with(b"\n"),
        "/proc/cmdline reads {:?}",
        String::from_utf8_lossy(&cmdline)
    );
    Ok(())
}

/// RLIMIT_NOFILE: setrlimit's values read back; no descriptor is handed out at or above the
/// soft limit (open: EMFILE, dup2 to it: EBADF, F_DUPFD from it: EINVAL); a hard limit
/// above nr_open is EPERM even for root.
pub fn nofile_limit(_cx: &Ctx) -> TestResult {
    use user_tests::abi::syscall::{SYS_DUP3, SYS_FCNTL, SYS_PRLIMIT64};
    use user_tests::raw::{syscall3, syscall4};
    const RLIMIT_NOFILE: usize = 7;
    const F_DUPFD: usize = 0;
    crate::stress_tests::in_child("RLIMIT_NOFILE", None, || {
        let set = |soft: u64, hard: u64| {
            let lim = [soft, hard];
            // SAFETY: `lim` is a readable struct rlimit64; no old value.
            unsafe { syscall4(SYS_PRLIMIT64, 0, RLIMIT_NOFILE, lim.as_ptr() as usize, 0) }
        };
        if set(16, 1024) != 0 {
            return 1;
        }
        let mut got = [0u64; 2];
        // SAFETY: `got` is a writable struct rlimit64.
        let r = unsafe {
            syscall4(
                SYS_PRLIMIT64,
                0,
                RLIMIT_NOFILE,
                0,
                got.as_mut_ptr() as usize,
            )
        };
        if r != 0 || got != [16, 1024] {
            return 2;
        }
        // Fill the table up to the limit: the next open is EMFILE.
        let mut last = 0;
        loop {
            match sys::open("/proc/cmdline", O_RDONLY, 0) {
                Ok(fd) => last = fd,
                Err(Errno::EMFILE) => break,
                Err(_) => return 3,
            }
        }
        if last != 15 {
            return 4;
        }
        // SAFETY: no pointer arguments.
        if unsafe { syscall3(SYS_DUP3, 0, 16, 0) } != -(Errno::EBADF.0 as isize) {
            return 5;
        }
        // SAFETY: no pointer arguments.
        if unsafe { syscall3(SYS_FCNTL, 0, F_DUPFD, 16) } != -(Errno::EINVAL.0 as isize) {
            return 6;
        }
        if set(1024, 1025) != -(Errno::EPERM.0 as isize) {
            return 7;
        }
        // Raised again: descriptors above 16 are handed out.
        if set(1024, 1024) != 0 || sys::open("/proc/cmdline", O_RDONLY, 0) != Ok(16) {
            return 8;
        }
        0
    })
}
