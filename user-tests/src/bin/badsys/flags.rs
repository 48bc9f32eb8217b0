//! Flags, modes, whence values, offsets, clocks, times, wait options, signals and syscall
//! numbers outside what Linux accepts.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;

use crate::case::{sys, Runner};
use crate::fixture::{CStr, Fixture, Mem};

pub fn cases(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let at = AT_FDCWD as usize;
    let (f, d, fd) = (fx.file.p(), fx.sub.p(), fx.fd as usize);
    let b = m.map.addr();
    let iov_one = [b, 1usize];
    let iov = iov_one.as_ptr() as usize;
    let new_name = CStr::new(&fx.path("new3"));
    let new = new_name.p();
    let (max, i64_max) = (usize::MAX, i64::MAX as usize);
    let (inval, nxio) = (Errno::EINVAL, Errno::ENXIO);
    let creat_dir = (O_CREAT | O_DIRECTORY | O_RDWR) as usize;
    let tmpfile_ro = (O_TMPFILE | O_RDONLY) as usize;
    let excl = (O_CREAT | O_EXCL | O_RDWR) as usize;
    let noreplace = RENAME_NOREPLACE as usize;
    let both = (RENAME_NOREPLACE | RENAME_EXCHANGE) as usize;
    // struct timespec pairs (utimensat: atime, mtime) and single ones (nanosleep).
    let nsec_1e9: [i64; 4] = [0, 1_000_000_000, 0, 0];
    let nsec_neg: [i64; 4] = [0, 0, 0, -1];
    let sleep_nsec_1e9: [i64; 2] = [0, 1_000_000_000];
    let sleep_sec_neg: [i64; 2] = [-1, 0];
    let sleep_nsec_neg: [i64; 2] = [0, -1];
    let pid = sys::getpid() as usize;
    r.run(&[
        // Offsets and whence.
        sys("lseek whence 5", SYS_LSEEK, &[fd, 0, 5], inval),
        sys("lseek whence -1", SYS_LSEEK, &[fd, 0, max], inval),
        sys("lseek to offset -1", SYS_LSEEK, &[fd, max, SEEK_SET as usize], inval),
        sys(
            "lseek SEEK_CUR to before 0",
            SYS_LSEEK,
            &[fd, -10isize as usize, SEEK_CUR as usize],
            inval,
        ),
        sys("lseek SEEK_DATA past EOF", SYS_LSEEK, &[fd, 1000, SEEK_DATA as usize], nxio),
        sys("lseek SEEK_HOLE past EOF", SYS_LSEEK, &[fd, 1000, SEEK_HOLE as usize], nxio),
        sys("lseek SEEK_END overflowing", SYS_LSEEK, &[fd, i64_max, SEEK_END as usize], inval),
        sys("pread at offset -1", SYS_PREAD64, &[fd, b, 1, max], inval),
        sys("pwrite at offset -1", SYS_PWRITE64, &[fd, b, 1, max], inval),
        sys("preadv at offset -1", SYS_PREADV, &[fd, iov, 1, max, 0], inval),
        sys("pwritev at offset -2", SYS_PWRITEV, &[fd, iov, 1, -2isize as usize, 0], inval),
        sys("preadv2 flag 0x8000", SYS_PREADV2, &[fd, iov, 1, 0, 0, 0x8000], Errno::EOPNOTSUPP),
        sys("pwritev2 APPEND|NOAPPEND", SYS_PWRITEV2, &[fd, iov, 1, 0, 0, 0x30], inval),
        sys("splice flag 0x10", SYS_SPLICE, &[fd, 0, fd, 0, 1, 0x10], inval),
        sys("splice file to file", SYS_SPLICE, &[fd, 0, fd, 0, 1, 0], inval),
        sys("tee of a file", SYS_TEE, &[fd, fd, 1, 0], inval),
        sys("copy_file_range flag 1", SYS_COPY_FILE_RANGE, &[fd, 0, fd, 0, 1, 1], inval),
        sys("sync_file_range flag 8", SYS_SYNC_FILE_RANGE, &[fd, 0, 0, 8], inval),
        sys("sync_file_range at -1", SYS_SYNC_FILE_RANGE, &[fd, max, 0, 0], inval),
        sys("close_range first > last", SYS_CLOSE_RANGE, &[4, 3, 0], inval),
        sys("close_range flag 1", SYS_CLOSE_RANGE, &[900, 901, 1], inval),
        sys("openat2 size 8", SYS_OPENAT2, &[at, f, b, 8], inval),
        sys("openat2 size 8192", SYS_OPENAT2, &[at, f, b, 8192], Errno::E2BIG),
        sys("pwrite whose end overflows loff_t", SYS_PWRITE64, &[fd, b, 1, i64_max], inval),
        sys("ftruncate to -1", SYS_FTRUNCATE, &[fd, max], inval),
        sys("truncate to -1", SYS_TRUNCATE, &[f, max], inval),
        sys("ftruncate to 2^63-1", SYS_FTRUNCATE, &[fd, i64_max], Errno::EFBIG),
        // Open, link and rename flags.
        sys("openat O_CREAT|O_DIRECTORY", SYS_OPENAT, &[at, new, creat_dir, 0o644], inval),
        sys("openat O_TMPFILE read-only", SYS_OPENAT, &[at, d, tmpfile_ro, 0o600], inval),
        sys("openat O_EXCL on an existing file", SYS_OPENAT, &[at, f, excl, 0o644], Errno::EEXIST),
        sys("unlinkat flag 0x1", SYS_UNLINKAT, &[at, f, 1], inval),
        sys("unlinkat flag 0x100", SYS_UNLINKAT, &[at, f, 0x100], inval),
        sys("newfstatat flag 0x1", SYS_NEWFSTATAT, &[at, f, b, 1], inval),
        sys("linkat flag 0x1", SYS_LINKAT, &[at, f, at, new, 1], inval),
        sys("renameat2 flag 0x8", SYS_RENAMEAT2, &[at, f, at, new, 8], inval),
        sys("renameat2 NOREPLACE|EXCHANGE", SYS_RENAMEAT2, &[at, f, at, new, both], inval),
        sys(
            "renameat2 NOREPLACE onto an existing name",
            SYS_RENAMEAT2,
            &[at, f, at, d, noreplace],
            Errno::EEXIST,
        ),
        sys("faccessat mode 8", SYS_FACCESSAT, &[at, f, 8], inval),
        // Times and clocks.
        sys("utimensat flag 0x1", SYS_UTIMENSAT, &[at, f, 0, 1], inval),
        sys("utimensat tv_nsec 1e9", SYS_UTIMENSAT, &[at, f, nsec_1e9.as_ptr() as usize, 0], inval),
        sys("utimensat tv_nsec -1", SYS_UTIMENSAT, &[at, f, nsec_neg.as_ptr() as usize, 0], inval),
        sys("clock_gettime clock 100", SYS_CLOCK_GETTIME, &[100, b], inval),
        sys(
            "clock_gettime clock -1 (a bad CPU clock)",
            SYS_CLOCK_GETTIME,
            &[u32::MAX as usize, b],
            inval,
        ),
        sys("nanosleep tv_nsec 1e9", SYS_NANOSLEEP, &[sleep_nsec_1e9.as_ptr() as usize, 0], inval),
        sys("nanosleep tv_sec -1", SYS_NANOSLEEP, &[sleep_sec_neg.as_ptr() as usize, 0], inval),
        sys("nanosleep tv_nsec -1", SYS_NANOSLEEP, &[sleep_nsec_neg.as_ptr() as usize, 0], inval),
        // Processes and signals.
        sys("wait4 options 0x10000", SYS_WAIT4, &[max, 0, 0x10000, 0], inval),
        sys("wait4 with no child", SYS_WAIT4, &[max, 0, 0, 0], Errno::ECHILD),
        sys("wait4 for pid 1 (not a child)", SYS_WAIT4, &[1, 0, 0, 0], Errno::ECHILD),
        sys("kill signal 999", SYS_KILL, &[pid, 999], inval),
        sys("kill signal -1", SYS_KILL, &[pid, max], inval),
        sys("kill a pid that does not exist", SYS_KILL, &[0x3fff_fff0, 0], Errno::ESRCH),
        sys("reboot without the magic", SYS_REBOOT, &[1, 2, 3, 0], inval),
    ]);
}

/// A syscall number no kernel implements.
pub fn unknown_number(r: &mut Runner) {
    r.run(&[sys("syscall 5000", 5000, &[], Errno::ENOSYS)]);
}
