//! Descriptors that are not open (negative, huge, never opened, just closed), of the wrong kind
//! (a file where a directory is needed and the reverse) or of the wrong access mode; `dup3`,
//! `fcntl` and `ioctl` bounds.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::sys::Fd;

use crate::case::{run, sc, sys, Runner, Want};
use crate::fixture::{CStr, Fixture, Mem};

/// The terminal ioctl every program tries first.
const TCGETS: usize = 0x5401;

pub fn cases(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let b = m.map.addr();
    let name = CStr::new("x");
    let x = name.p();
    let empty = CStr::new("");
    let f = fx.file.p();
    let closed = sc(SYS_DUP, &[fx.fd as usize]).map_or(900, |d| {
        let _ = sys::close(d as Fd);
        d as Fd
    });
    let iov_one = [b, 1usize];
    let iov = iov_one.as_ptr() as usize;
    for bad in [-1isize as usize, 999, 1 << 20, i32::MAX as usize, closed as usize] {
        let e = Errno::EBADF;
        let n = |call: &str| format!("{call} fd {}", bad as isize);
        let rel = |call: &str| format!("{call} relative to fd {}", bad as isize);
        // A dirfd of AT_FDCWD would not be bad: the *at rows are for the others only.
        let dirfd = bad != AT_FDCWD as usize;
        let empty_path = AT_EMPTY_PATH as usize;
        r.run(&[
            sys(n("read"), SYS_READ, &[bad, b, 1], e),
            sys(n("write"), SYS_WRITE, &[bad, b, 1], e),
            sys(n("pread"), SYS_PREAD64, &[bad, b, 1, 0], e),
            sys(n("pwrite"), SYS_PWRITE64, &[bad, b, 1, 0], e),
            sys(n("readv"), SYS_READV, &[bad, iov, 1], e),
            sys(n("writev"), SYS_WRITEV, &[bad, iov, 1], e),
            sys(n("preadv"), SYS_PREADV, &[bad, iov, 1, 0, 0], e),
            sys(n("pwritev"), SYS_PWRITEV, &[bad, iov, 1, 0, 0], e),
            sys(n("preadv2"), SYS_PREADV2, &[bad, iov, 1, 0, 0, 0], e),
            sys(n("pwritev2"), SYS_PWRITEV2, &[bad, iov, 1, 0, 0, 0], e),
            sys(n("sendfile to"), SYS_SENDFILE, &[bad, fx.ro_fd as usize, 0, 1], e),
            sys(n("sendfile from"), SYS_SENDFILE, &[fx.fd as usize, bad, 0, 1], e),
            sys(n("splice from"), SYS_SPLICE, &[bad, 0, fx.fd as usize, 0, 1, 0], e),
            sys(n("tee from"), SYS_TEE, &[bad, fx.fd as usize, 1, 0], e),
            sys(n("vmsplice"), SYS_VMSPLICE, &[bad, iov, 1, 0], e),
            sys(
                n("copy_file_range to"),
                SYS_COPY_FILE_RANGE,
                &[fx.ro_fd as usize, 0, bad, 0, 1, 0],
                e,
            ),
            sys(n("sync_file_range"), SYS_SYNC_FILE_RANGE, &[bad, 0, 0, 0], e),
            sys(n("close"), SYS_CLOSE, &[bad], e),
            sys(n("fstat"), SYS_FSTAT, &[bad, b], e),
            sys(n("fstatfs"), SYS_FSTATFS, &[bad, b], e),
            sys(n("lseek"), SYS_LSEEK, &[bad, 0, SEEK_SET as usize], e),
            sys(n("fsync"), SYS_FSYNC, &[bad], e),
            sys(n("fdatasync"), SYS_FDATASYNC, &[bad], e),
            sys(n("syncfs"), SYS_SYNCFS, &[bad], e),
            sys(n("getdents64"), SYS_GETDENTS64, &[bad, b, 4096], e),
            sys(n("ftruncate"), SYS_FTRUNCATE, &[bad, 0], e),
            sys(n("fchdir"), SYS_FCHDIR, &[bad], e),
            sys(n("fchmod"), SYS_FCHMOD, &[bad, 0o644], e),
            sys(n("fcntl F_GETFL"), SYS_FCNTL, &[bad, 3, 0], e),
            sys(n("fcntl F_GET_SEALS"), SYS_FCNTL, &[bad, 1034, 0], e),
            sys(n("fcntl F_ADD_SEALS"), SYS_FCNTL, &[bad, 1033, 1], e),
            sys(n("ioctl"), SYS_IOCTL, &[bad, TCGETS, b], e),
            sys(n("dup"), SYS_DUP, &[bad], e),
            sys(n("dup3 from"), SYS_DUP3, &[bad, 50, 0], e),
            sys(rel("openat"), SYS_OPENAT, &[bad, x, 0, 0], e).when(dirfd),
            sys(rel("mkdirat"), SYS_MKDIRAT, &[bad, x, 0o755], e).when(dirfd),
            sys(rel("unlinkat"), SYS_UNLINKAT, &[bad, x, 0], e).when(dirfd),
            sys(rel("newfstatat"), SYS_NEWFSTATAT, &[bad, x, b, 0], e).when(dirfd),
            sys(rel("faccessat"), SYS_FACCESSAT, &[bad, x, 0], e).when(dirfd),
            sys(rel("fchmodat"), SYS_FCHMODAT, &[bad, x, 0o644], e).when(dirfd),
            sys(rel("readlinkat"), SYS_READLINKAT, &[bad, x, b, 16], e).when(dirfd),
            sys(rel("utimensat"), SYS_UTIMENSAT, &[bad, x, 0, 0], e).when(dirfd),
            sys(n("utimensat(fd, NULL) on"), SYS_UTIMENSAT, &[bad, 0, 0, 0], e).when(dirfd),
            sys(rel("renameat2"), SYS_RENAMEAT2, &[bad, x, bad, x, 0], e).when(dirfd),
            sys(rel("linkat"), SYS_LINKAT, &[bad, x, bad, x, 0], e).when(dirfd),
            sys(rel("symlinkat"), SYS_SYMLINKAT, &[f, bad, x], e).when(dirfd),
            sys(
                n("newfstatat AT_EMPTY_PATH on"),
                SYS_NEWFSTATAT,
                &[bad, empty.p(), b, empty_path],
                e,
            )
            .when(dirfd),
        ]);
    }

    let fd = fx.fd as usize;
    // An absolute path ignores a bad dirfd.
    let open_absolute = || close_opened(sc(SYS_OPENAT, &[999, f, O_RDONLY as usize, 0]));
    let (inval, ebadf, notdir) = (Errno::EINVAL, Errno::EBADF, Errno::ENOTDIR);
    r.run(&[
        run("openat(999, absolute path)", &open_absolute, Want::Ok),
        // dup3 and fcntl bounds.
        sys("dup3 to itself", SYS_DUP3, &[fd, fd, 0], inval),
        sys("dup3 to fd -1", SYS_DUP3, &[fd, usize::MAX, 0], ebadf),
        sys("dup3 to fd 1<<20", SYS_DUP3, &[fd, 1 << 20, 0], ebadf),
        sys("dup3 with flag 0x1", SYS_DUP3, &[fd, 60, 1], inval),
        sys("fcntl F_DUPFD from 1<<20", SYS_FCNTL, &[fd, 0, 1 << 20], inval),
        sys("fcntl unknown command", SYS_FCNTL, &[fd, 0xdead, 0], inval),
        // Seals belong to memfds only (Linux: EINVAL for other files).
        sys("fcntl F_GET_SEALS of a file", SYS_FCNTL, &[fd, 1034, 0], inval),
        sys("fcntl F_ADD_SEALS of a file", SYS_FCNTL, &[fd, 1033, 1], inval),
        sys("memfd_create unknown flags", SYS_MEMFD_CREATE, &[x, 0x100], inval),
        sys("memfd_create MFD_HUGETLB", SYS_MEMFD_CREATE, &[x, 4], inval),
        sys("ioctl TCGETS on a file", SYS_IOCTL, &[fd, TCGETS, b], Errno::ENOTTY),
        sys("ioctl TCGETS on a file, NULL arg", SYS_IOCTL, &[fd, TCGETS, 0], Errno::ENOTTY),
        // Wrong kind of descriptor.
        sys("openat relative to a file fd", SYS_OPENAT, &[fd, x, 0, 0], notdir),
        sys("mkdirat relative to a file fd", SYS_MKDIRAT, &[fd, x, 0o755], notdir),
        sys("newfstatat relative to a file fd", SYS_NEWFSTATAT, &[fd, x, b, 0], notdir),
        sys("unlinkat relative to a file fd", SYS_UNLINKAT, &[fd, x, 0], notdir),
        sys("getdents64 on a file", SYS_GETDENTS64, &[fd, b, 4096], notdir),
        sys("fchdir to a file", SYS_FCHDIR, &[fd], notdir),
    ]);
    let dfd = fx.dir_fd as usize;
    let ro_fd = fx.ro_fd as usize;
    r.run(&[
        sys("read from a directory", SYS_READ, &[dfd, b, 16], Errno::EISDIR),
        sys("pread from a directory", SYS_PREAD64, &[dfd, b, 16, 0], Errno::EISDIR),
        sys("write to a directory fd", SYS_WRITE, &[dfd, b, 1], ebadf),
        sys("ftruncate a directory fd", SYS_FTRUNCATE, &[dfd, 0], inval),
        // Wrong access mode.
        sys("write to an O_RDONLY fd", SYS_WRITE, &[ro_fd, b, 1], ebadf),
        sys("pwrite to an O_RDONLY fd", SYS_PWRITE64, &[ro_fd, b, 1, 0], ebadf),
        sys("ftruncate an O_RDONLY fd", SYS_FTRUNCATE, &[ro_fd, 0], inval),
    ]);
    match sys::open(&fx.path("f"), O_WRONLY, 0) {
        Ok(wo) => {
            let wo_fd = wo as usize;
            r.run(&[
                sys("read from an O_WRONLY fd", SYS_READ, &[wo_fd, b, 1], ebadf),
                sys("getdents64 on an O_WRONLY file", SYS_GETDENTS64, &[wo_fd, b, 4096], notdir),
            ]);
            let _ = sys::close(wo);
        }
        Err(e) => r.check("open O_WRONLY", Err(e), Want::Ok),
    }
}

/// A successful open's answer, with the descriptor closed again.
fn close_opened(opened: SysResult<usize>) -> SysResult<usize> {
    if let Ok(fd) = opened {
        let _ = sys::close(fd as Fd);
    }
    opened
}
