//! fchmodat2(2) (Linux 6.6, what glibc 2.39+ and coreutils call first): the mode of a path
//! relative to a descriptor, of the descriptor itself with AT_EMPTY_PATH, EOPNOTSUPP for a
//! symbolic link with AT_SYMLINK_NOFOLLOW, EINVAL for unknown flags.

use user_tests::abi::fcntl::{AT_EMPTY_PATH, AT_FDCWD, AT_SYMLINK_NOFOLLOW, O_RDONLY};
use user_tests::prelude::*;

use crate::{ensure, expect_errno, put_file, Check, Ctx, TestResult};

pub fn fchmodat2_semantics(cx: &Ctx) -> TestResult {
    let f = cx.path("chmod2");
    put_file(&f, b"x")?;
    sys::fchmodat2(AT_FDCWD, &f, 0o640, 0).what("fchmodat2")?;
    let mode = sys::stat(&f).what("stat")?.st_mode & 0o7777;
    ensure!(mode == 0o640, "mode {mode:o} after fchmodat2 0640");
    let fd = sys::open(&f, O_RDONLY, 0).what("open")?;
    let by_fd = sys::fchmodat2(fd, "", 0o600, AT_EMPTY_PATH).what("fchmodat2 AT_EMPTY_PATH");
    let _ = sys::close(fd);
    by_fd?;
    let mode = sys::stat(&f).what("stat")?.st_mode & 0o7777;
    ensure!(
        mode == 0o600,
        "mode {mode:o} after fchmodat2 AT_EMPTY_PATH 0600"
    );
    expect_errno(
        sys::fchmodat2(AT_FDCWD, &f, 0o644, 0x4000),
        Errno::EINVAL,
        "fchmodat2 with an unknown flag",
    )?;
    let link = cx.path("chmod2-link");
    if sys::symlink(&f, &link).is_ok() {
        let r = sys::fchmodat2(AT_FDCWD, &link, 0o644, AT_SYMLINK_NOFOLLOW);
        let _ = sys::unlink(&link);
        expect_errno(r, Errno::EOPNOTSUPP, "fchmodat2 NOFOLLOW on a symlink")?;
    }
    sys::unlink(&f).what("unlink")
}
