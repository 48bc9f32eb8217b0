//! Path strings that are bad in themselves, each class tried on every path-taking call: not
//! NUL-terminated before the end of the mapping (EFAULT), `PATH_MAX` bytes with no NUL and
//! `PATH_MAX` bytes plus NUL (ENAMETOOLONG), one component longer than `NAME_MAX`
//! (ENAMETOOLONG), empty (ENOENT), and `PATH_MAX - 1` bytes that merely name nothing (ENOENT:
//! the limit is exact).

use user_tests::abi::syscall::*;
use user_tests::prelude::*;

use crate::case::{run, sys, Runner, Want};
use crate::fixture::{CStr, Fixture, Mem};

/// One class of bad path.
struct BadPath {
    what: &'static str,
    addr: usize,
    errno: Errno,
    /// Bad as a symlink *target* too: a target is any string up to `PATH_MAX - 1` bytes, so
    /// long components and missing names are fine there.
    bad_target: bool,
    /// What qemu-user answers instead (it measures the string before the kernel would stop
    /// at `PATH_MAX`).
    qemu: Option<Errno>,
}

pub fn cases(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let at = AT_FDCWD as usize;
    let f = fx.file.p();
    let out = [0u8; 256];
    let t = out.as_ptr() as usize;
    // Fill both mapped pages with 'a' (no NUL anywhere up to the hole).
    m.bytes().fill(b'a');
    let long_name = CStr::new(&fx.path(&"n".repeat(256)));
    let mut long_path = String::new();
    while long_path.len() < PATH_MAX {
        long_path.push_str("./");
    }
    long_path.truncate(PATH_MAX);
    let long_path = CStr::new(&long_path); // PATH_MAX bytes + NUL
                                           // PATH_MAX - 1 bytes under a missing directory: accepted, just missing (so nothing, not
                                           // even a creating call, can succeed).
    let mut max_ok = fx.path("nodir/");
    while max_ok.len() < PATH_MAX - 2 {
        max_ok.push_str("./");
    }
    max_ok.truncate(PATH_MAX - 2);
    max_ok.push('z');
    let max_ok = CStr::new(&max_ok);
    let empty = CStr::new("");
    let class =
        |what, addr, errno, bad_target| BadPath { what, addr, errno, bad_target, qemu: None };
    let classes = [
        class("unterminated before the hole", m.tail(100), Errno::EFAULT, true),
        BadPath {
            qemu: Some(Errno::EFAULT),
            ..class("PATH_MAX bytes without NUL", m.tail(PATH_MAX), Errno::ENAMETOOLONG, true)
        },
        class("component of 256 bytes", long_name.p(), Errno::ENAMETOOLONG, false),
        class("PATH_MAX bytes + NUL", long_path.p(), Errno::ENAMETOOLONG, true),
        class("PATH_MAX-1 bytes, missing", max_ok.p(), Errno::ENOENT, false),
        class("empty", empty.p(), Errno::ENOENT, true),
    ];
    let new_name = CStr::new(&fx.path("new2"));
    let new = new_name.p();
    for c in &classes {
        let (p, e, n) = (c.addr, c.errno, |call: &str| format!("{call} {}", c.what));
        let rw_creat = (O_RDWR | O_CREAT) as usize;
        let rows = [
            sys(n("openat"), SYS_OPENAT, &[at, p, O_RDONLY as usize, 0], e),
            sys(n("openat O_CREAT"), SYS_OPENAT, &[at, p, rw_creat, 0o644], e),
            sys(n("mkdirat"), SYS_MKDIRAT, &[at, p, 0o755], e),
            sys(n("unlinkat"), SYS_UNLINKAT, &[at, p, 0], e),
            sys(n("rmdir"), SYS_UNLINKAT, &[at, p, AT_REMOVEDIR as usize], e),
            sys(n("newfstatat"), SYS_NEWFSTATAT, &[at, p, m.ro, 0], e),
            sys(n("statfs"), SYS_STATFS, &[p, t], e),
            sys(n("truncate"), SYS_TRUNCATE, &[p, 0], e),
            sys(n("faccessat"), SYS_FACCESSAT, &[at, p, 0], e),
            sys(n("chdir"), SYS_CHDIR, &[p], e),
            sys(n("chroot"), SYS_CHROOT, &[p], e),
            sys(n("fchmodat"), SYS_FCHMODAT, &[at, p, 0o644], e),
            sys(n("readlinkat"), SYS_READLINKAT, &[at, p, t, 64], e),
            sys(n("utimensat"), SYS_UTIMENSAT, &[at, p, 0, 0], e),
            sys(n("linkat old"), SYS_LINKAT, &[at, p, at, new, 0], e),
            sys(n("linkat new"), SYS_LINKAT, &[at, f, at, p, 0], e),
            sys(n("symlinkat target"), SYS_SYMLINKAT, &[p, at, new], e).when(c.bad_target),
            sys(n("symlinkat link"), SYS_SYMLINKAT, &[f, at, p], e),
            sys(n("renameat2 old"), SYS_RENAMEAT2, &[at, p, at, new, 0], e),
            sys(n("renameat2 new"), SYS_RENAMEAT2, &[at, f, at, p, 0], e),
            sys(n("execve"), SYS_EXECVE, &[p, 0, 0], e),
        ];
        match c.qemu {
            Some(q) => r.run(&rows.map(|row| row.qemu(q))),
            None => r.run(&rows),
        }
    }
    let file_size = || sys::stat(&fx.path("f")).map(|s| s.st_size as usize);
    r.run(&[
        sys("nothing was created", SYS_FACCESSAT, &[at, new, 0], Errno::ENOENT),
        run("the file is intact", &file_size, Want::Val(100)),
    ]);
}
