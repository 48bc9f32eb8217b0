//! statx(2): the `struct statx` of a file agrees with `stat`, a symbolic link is followed
//! unless AT_SYMLINK_NOFOLLOW, AT_EMPTY_PATH names the descriptor itself, and bad input gets
//! Linux's errno (EFAULT, EBADF, ENOENT, EINVAL).

use user_tests::abi::fcntl::{AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_NOFOLLOW, O_RDONLY};
use user_tests::abi::stat::{STATX_BASIC_STATS, STATX__RESERVED, S_IFLNK, S_IFMT, S_IFREG};
use user_tests::prelude::*;

use crate::{ensure, expect_errno, put_file, Check, Ctx, TestResult};

pub fn statx_semantics(cx: &Ctx) -> TestResult {
    let f = cx.path("f");
    put_file(&f, b"hello statx")?;
    let st = sys::stat(&f).what("stat")?;
    let x = sys::statx(AT_FDCWD, &f, 0, STATX_BASIC_STATS).what("statx")?;
    ensure!(
        x.stx_mask & STATX_BASIC_STATS == STATX_BASIC_STATS,
        "stx_mask {:#x}",
        x.stx_mask
    );
    ensure!(x.stx_size == 11, "stx_size {}", x.stx_size);
    ensure!(
        u32::from(x.stx_mode) == st.st_mode && x.stx_ino == st.st_ino,
        "mode {:o} ino {} against stat's {:o} {}",
        x.stx_mode,
        x.stx_ino,
        st.st_mode,
        st.st_ino
    );
    ensure!(
        x.stx_mtime.tv_sec == st.st_mtime && u64::from(x.stx_mtime.tv_nsec) == st.st_mtime_nsec,
        "stx_mtime differs from st_mtime"
    );
    // AT_EMPTY_PATH: the descriptor itself.
    let fd = sys::open(&f, O_RDONLY, 0).what("open")?;
    let by_fd = sys::statx(fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS);
    let _ = sys::close(fd);
    ensure!(
        by_fd.what("statx AT_EMPTY_PATH")?.stx_ino == st.st_ino,
        "AT_EMPTY_PATH named another file"
    );
    // Bad input.
    expect_errno(
        sys::statx_raw(AT_FDCWD, &f, 0, STATX_BASIC_STATS, 8),
        Errno::EFAULT,
        "statx into address 8",
    )?;
    expect_errno(
        sys::statx(1000, "x", 0, STATX_BASIC_STATS),
        Errno::EBADF,
        "statx relative to fd 1000",
    )?;
    expect_errno(
        sys::statx(AT_FDCWD, &cx.path("missing"), 0, STATX_BASIC_STATS),
        Errno::ENOENT,
        "statx of a missing name",
    )?;
    expect_errno(
        sys::statx(AT_FDCWD, &f, 0x1, STATX_BASIC_STATS),
        Errno::EINVAL,
        "statx with an unknown flag",
    )?;
    expect_errno(
        sys::statx(AT_FDCWD, &f, 0x6000, STATX_BASIC_STATS),
        Errno::EINVAL,
        "statx with both sync modes",
    )?;
    expect_errno(
        sys::statx(AT_FDCWD, &f, 0, STATX__RESERVED),
        Errno::EINVAL,
        "statx asking for STATX__RESERVED",
    )?;
    if cx.fat {
        return Ok(()); // FAT stores no symbolic links
    }
    let l = cx.path("l");
    sys::symlink(&f, &l).what("symlink")?;
    let followed = sys::statx(AT_FDCWD, &l, 0, STATX_BASIC_STATS).what("statx of the link")?;
    ensure!(
        u32::from(followed.stx_mode) & S_IFMT == S_IFREG && followed.stx_ino == st.st_ino,
        "statx did not follow the link"
    );
    let link = sys::statx(AT_FDCWD, &l, AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS)
        .what("statx AT_SYMLINK_NOFOLLOW")?;
    ensure!(
        u32::from(link.stx_mode) & S_IFMT == S_IFLNK && link.stx_size == f.len() as u64,
        "NOFOLLOW: mode {:o} size {}",
        link.stx_mode,
        link.stx_size
    );
    Ok(())
}
