//! Bad pointers as buffers, structures and paths: NULL, the kernel image, the kernel half, an
//! unmapped page; ranges that run from mapped memory into the unmapped page; a read-only page
//! as an output buffer; lengths that wrap the address space or are absurd.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;

use crate::case::{run, sys, Runner, Want};
use crate::fixture::{bad_ptrs, CStr, Fixture, Mem};

pub fn cases(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let (fd, ro_fd, dfd) = (fx.fd as usize, fx.ro_fd as usize, fx.dir_fd as usize);
    let (at, f) = (AT_FDCWD as usize, fx.file.p());
    let has_link = fx.link.is_some();
    // Rows using the link apply only when there is one.
    let l = fx.link.as_ref().map_or(0, CStr::p);
    let new_name = CStr::new(&fx.path("new"));
    let new = new_name.p();
    let stat_buf = [0u8; 16];
    let ts = stat_buf.as_ptr() as usize;
    let e = Errno::EFAULT;
    for (what, p) in bad_ptrs(m) {
        let n = |call: &str| format!("{call} {what}");
        let iov_p = [p, 10usize];
        let iov = iov_p.as_ptr() as usize;
        // NULL is allowed there (no time wanted / "now"): Linux answers 0.
        let null_ok = if p == 0 { Want::Val(0) } else { Want::Err(e) };
        let mono = CLOCK_MONOTONIC as usize;
        r.run(&[
            // Buffers and structures.
            sys(n("read into"), SYS_READ, &[fd, p, 10], e),
            sys(n("write from"), SYS_WRITE, &[fd, p, 10], e),
            sys(n("pread into"), SYS_PREAD64, &[fd, p, 10, 0], e),
            sys(n("pwrite from"), SYS_PWRITE64, &[fd, p, 10, 0], e),
            sys(n("readv iov array"), SYS_READV, &[fd, p, 1], e),
            sys(n("writev iov array"), SYS_WRITEV, &[fd, p, 1], e),
            sys(n("readv iov_base"), SYS_READV, &[fd, iov, 1], e),
            sys(n("writev iov_base"), SYS_WRITEV, &[fd, iov, 1], e),
            sys(n("preadv iov array"), SYS_PREADV, &[fd, p, 1, 0, 0], e),
            sys(n("pwritev iov array"), SYS_PWRITEV, &[fd, p, 1, 0, 0], e),
            sys(n("preadv2 iov_base"), SYS_PREADV2, &[fd, iov, 1, 0, 0, 0], e),
            sys(n("pwritev2 iov_base"), SYS_PWRITEV2, &[fd, iov, 1, 0, 0, 0], e),
            sys(n("sendfile offset"), SYS_SENDFILE, &[fd, ro_fd, p, 1], e).when(p != 0),
            sys(n("copy_file_range off_in"), SYS_COPY_FILE_RANGE, &[ro_fd, p, fd, 0, 1, 0], e)
                .when(p != 0),
            sys(n("openat2 how"), SYS_OPENAT2, &[at, f, p, 24], e),
            sys(n("fstat into"), SYS_FSTAT, &[fd, p], e),
            sys(n("fstatfs into"), SYS_FSTATFS, &[fd, p], e),
            sys(n("statfs into"), SYS_STATFS, &[f, p], e),
            sys(n("newfstatat into"), SYS_NEWFSTATAT, &[at, f, p, 0], e),
            sys(n("getdents64 into"), SYS_GETDENTS64, &[dfd, p, 4096], e),
            sys(n("getcwd into"), SYS_GETCWD, &[p, 4096], e),
            sys(n("clock_gettime into"), SYS_CLOCK_GETTIME, &[mono, p], e),
            sys(n("gettimeofday into"), SYS_GETTIMEOFDAY, &[p, 0], null_ok),
            // qemu-user answers EINVAL when it cannot read the timespec.
            sys(n("nanosleep from"), SYS_NANOSLEEP, &[p, 0], e).qemu(Errno::EINVAL),
            sys(n("uname into"), SYS_UNAME, &[p], e),
            sys(n("utimensat times"), SYS_UTIMENSAT, &[at, f, p, 0], null_ok),
            sys(n("readlinkat into"), SYS_READLINKAT, &[at, l, p, 64], e).when(has_link),
            // Paths.
            sys(n("openat path"), SYS_OPENAT, &[at, p, O_RDONLY as usize, 0], e),
            sys(
                n("openat O_CREAT path"),
                SYS_OPENAT,
                &[at, p, (O_WRONLY | O_CREAT) as usize, 0o644],
                e,
            ),
            sys(n("mkdirat path"), SYS_MKDIRAT, &[at, p, 0o755], e),
            sys(n("unlinkat path"), SYS_UNLINKAT, &[at, p, 0], e),
            sys(n("rmdir path"), SYS_UNLINKAT, &[at, p, AT_REMOVEDIR as usize], e),
            sys(n("newfstatat path"), SYS_NEWFSTATAT, &[at, p, ts, 0], e),
            sys(n("statfs path"), SYS_STATFS, &[p, ts], e),
            sys(n("truncate path"), SYS_TRUNCATE, &[p, 0], e),
            sys(n("faccessat path"), SYS_FACCESSAT, &[at, p, 0], e),
            sys(n("chdir path"), SYS_CHDIR, &[p], e),
            sys(n("chroot path"), SYS_CHROOT, &[p], e),
            sys(n("memfd_create name"), SYS_MEMFD_CREATE, &[p, 0], e),
            sys(n("adjtimex buf"), SYS_ADJTIMEX, &[p], e),
            sys(n("clock_adjtime buf"), SYS_CLOCK_ADJTIME, &[0, p], e),
            sys(n("fchmodat path"), SYS_FCHMODAT, &[at, p, 0o644], e),
            sys(n("readlinkat path"), SYS_READLINKAT, &[at, p, ts, 16], e),
            sys(n("utimensat path"), SYS_UTIMENSAT, &[at, p, 0, 0], e),
            sys(n("linkat old"), SYS_LINKAT, &[at, p, at, new, 0], e),
            sys(n("linkat new"), SYS_LINKAT, &[at, f, at, p, 0], e),
            sys(n("symlinkat target"), SYS_SYMLINKAT, &[p, at, new], e),
            sys(n("symlinkat link"), SYS_SYMLINKAT, &[f, at, p], e),
            sys(n("renameat2 old"), SYS_RENAMEAT2, &[at, p, at, new, 0], e),
            sys(n("renameat2 new"), SYS_RENAMEAT2, &[at, f, at, p, 0], e),
            sys(n("execve path"), SYS_EXECVE, &[p, 0, 0], e),
        ]);
    }

    let offset = || sys::lseek(fx.fd, 0, SEEK_CUR).map(|v| v as usize);
    let size = || sys::fstat(fx.fd).map(|s| s.st_size as usize);
    let span = m.tail(8);
    let mono = CLOCK_MONOTONIC as usize;
    r.run(&[
        // The failed writes and opens must have changed nothing.
        sys("no file created by failed calls", SYS_FACCESSAT, &[at, new, 0], Errno::ENOENT),
        run("offset unmoved by failed calls", &offset, Want::Val(0)),
        run("size unchanged by failed calls", &size, Want::Val(100)),
        // A range that starts mapped and runs into the unmapped page.
        sys("fstat into a struct spanning the hole", SYS_FSTAT, &[fd, span], e),
        sys("fstatfs spanning the hole", SYS_FSTATFS, &[fd, span], e),
        sys("clock_gettime spanning the hole", SYS_CLOCK_GETTIME, &[mono, span], e),
        sys("uname spanning the hole", SYS_UNAME, &[span], e),
        sys("nanosleep timespec spanning the hole", SYS_NANOSLEEP, &[span, 0], e)
            .qemu(Errno::EINVAL),
        sys("readv iov array spanning the hole", SYS_READV, &[fd, span, 1], e),
        sys("getcwd into a buffer spanning the hole", SYS_GETCWD, &[m.tail(1), 4096], e),
        sys("getdents64 into 8 mapped bytes", SYS_GETDENTS64, &[dfd, span, 4096], e),
        sys("utimensat times spanning the hole", SYS_UTIMENSAT, &[at, f, m.tail(16), 0], e),
        // The whole file fits in the mapped part: Linux copies it and never touches the hole
        // (qemu-user checks the whole buffer first).
        sys(
            "read of 100 bytes into 100 mapped + 4000 unmapped",
            SYS_READ,
            &[ro_fd, m.tail(100), 4100],
            Want::Val(100),
        )
        .qemu(e),
        sys(
            "pread of the 100-byte file into 100 mapped + 100 unmapped",
            SYS_PREAD64,
            &[ro_fd, m.tail(100), 200, 0],
            Want::Val(100),
        )
        .qemu(e),
    ]);
    let _ = sys::lseek(fx.ro_fd, 0, SEEK_SET);

    // Read-only memory as an output buffer; as an input it is fine.
    let ro = m.ro;
    r.run(&[
        sys("read into a read-only page", SYS_READ, &[ro_fd, ro, 10], e),
        sys("fstat into a read-only page", SYS_FSTAT, &[fd, ro], e),
        sys("clock_gettime into a read-only page", SYS_CLOCK_GETTIME, &[mono, ro], e),
        sys("getdents64 into a read-only page", SYS_GETDENTS64, &[dfd, ro, 4096], e),
        sys("uname into a read-only page", SYS_UNAME, &[ro], e),
        sys("nanosleep from a read-only page (zeros)", SYS_NANOSLEEP, &[ro, 0], Want::Val(0)),
        sys("pwrite from a read-only page", SYS_PWRITE64, &[fd, ro, 10, 200], Want::Val(10)),
    ]);
    let _ = sys::ftruncate(fx.fd, 100);

    // Lengths that wrap around the address space, or are absurd.
    let buf = [0u8; 16];
    let b = buf.as_ptr() as usize;
    let max = usize::MAX;
    r.run(&[
        sys("read with count usize::MAX", SYS_READ, &[ro_fd, b, max], e),
        sys("write with count usize::MAX", SYS_WRITE, &[fd, b, max], e),
        sys("pread with count usize::MAX", SYS_PREAD64, &[ro_fd, b, max, 0], e),
        sys("pwrite with count usize::MAX", SYS_PWRITE64, &[fd, b, max, 0], e),
        sys("read with a buffer wrapping past the top", SYS_READ, &[ro_fd, max - 15, 32], e),
        sys(
            "read of a 100-byte file with count 1 GiB",
            SYS_READ,
            &[ro_fd, m.map.addr(), 1 << 30],
            Want::Val(100),
        )
        .qemu(e),
    ]);
    let _ = sys::lseek(fx.ro_fd, 0, SEEK_SET);

    let iov_huge = [b, usize::MAX];
    let iov = iov_huge.as_ptr() as usize;
    let a = m.map.addr();
    let inval = Errno::EINVAL;
    r.run(&[
        sys("readv with iov_len -1", SYS_READV, &[fd, iov, 1], inval),
        sys("writev with iov_len -1", SYS_WRITEV, &[fd, iov, 1], inval),
        sys("readv with 1025 iovecs", SYS_READV, &[fd, b, 1025], inval),
        sys("writev with -1 iovecs", SYS_WRITEV, &[fd, b, max], inval),
        sys("readv with 0 iovecs from NULL", SYS_READV, &[fd, 0, 0], Want::Val(0)),
        sys("read of 0 bytes into NULL", SYS_READ, &[fd, 0, 0], Want::Val(0)),
        sys("write of 0 bytes from NULL", SYS_WRITE, &[fd, 0, 0], Want::Val(0)),
        sys("getcwd with size 0", SYS_GETCWD, &[a, 0], Errno::ERANGE),
        sys("getcwd with size 1", SYS_GETCWD, &[a, 1], Errno::ERANGE),
    ]);
    let _ = sys::lseek(fx.dir_fd, 0, SEEK_SET);
    r.run(&[
        sys("getdents64 with count 1", SYS_GETDENTS64, &[dfd, a, 1], inval),
        sys("readlinkat with bufsiz 0", SYS_READLINKAT, &[at, l, a, 0], inval).when(has_link),
        sys("readlinkat with bufsiz -1", SYS_READLINKAT, &[at, l, a, max], inval)
            .qemu(e)
            .when(has_link),
        run("offset still 0", &offset, Want::Val(0)),
    ]);
}
