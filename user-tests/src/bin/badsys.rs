//! `badsys DIR [summary=FILE] [qemu] [-v]`: throw bad arguments at every syscall the kernel
//! implements and check each answer is the errno Linux gives, and that the kernel keeps going.
//!
//! Classes of bad argument, each tried on every syscall it applies to:
//! - pointers: NULL, an address in the kernel image (0x8020_0000), a high kernel-half address,
//!   a page we unmapped ourselves, a range that starts mapped and runs into the unmapped page,
//!   a read-only page as an output buffer, a length that wraps the address space;
//! - paths: not NUL-terminated before the end of the mapping (EFAULT), `PATH_MAX` bytes with no
//!   NUL (ENAMETOOLONG), one component longer than `NAME_MAX` (ENAMETOOLONG), empty (ENOENT),
//!   and a 4095-byte path that is merely missing (ENOENT: the limit is exact);
//! - descriptors: never opened, negative, huge, closed, of the wrong kind (a file where a
//!   directory is needed and the reverse), of the wrong access mode;
//! - flags, whence, clocks, options, signals, lengths and times outside what Linux accepts;
//! - types: a directory where a file is expected and the reverse, for every call that cares.
//!
//! Every expectation is Linux's: the program runs unchanged under `qemu-riscv64` on a Linux
//! directory (`qemu-riscv64 badsys /tmp/x qemu`). The `qemu` argument accepts the few answers
//! where qemu-user itself differs from a Linux kernel (it checks whole buffers up front); each
//! such case is marked in the table. The closing line is `N passed, N failed` (also written to
//! FILE); the exit status is the number of failures (capped at 125).
//!
//! The bad addresses are ones this process never uses (see `user_tests::probe`), so a broken
//! kernel that wrote through one would corrupt nothing the program relies on.
#![no_std]
#![no_main]

use user_tests::abi::fcntl::*;
use user_tests::abi::stat::MSDOS_SUPER_MAGIC;
use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw::syscall6;
use user_tests::sys::{AnonMap, Fd};
use user_tests::PAGE_SIZE;

/// An address inside the kernel image on QEMU virt (below any user mapping).
const KERNEL_LOW: usize = 0x8020_0000;
/// An address in the upper (kernel) half of a 64-bit address space.
const KERNEL_HIGH: usize = 0xffff_ffc0_0000_1000;

const TCGETS: usize = 0x5401;

/// One raw syscall; the arguments may be anything (that is the point).
fn sc(n: usize, a: &[usize]) -> SysResult<usize> {
    let mut r = [0usize; 6];
    r[..a.len()].copy_from_slice(a);
    // SAFETY: every pointer passed is either valid memory of ours for the call, or an address
    // this process never uses (module docs); the kernel must reject the latter.
    Errno::from_ret(unsafe { syscall6(n, r[0], r[1], r[2], r[3], r[4], r[5]) })
}

/// The memory the cases point into.
struct Mem {
    /// Two read-write pages, then one unmapped page (`hole`).
    map: AnonMap,
    /// A read-only page.
    ro: usize,
}

impl Mem {
    fn new() -> SysResult<Mem> {
        // The read-only page first: a kernel may hand a freed range to the next mmap.
        let ro = sc(
            SYS_MMAP,
            &[
                0,
                PAGE_SIZE,
                PROT_READ as usize,
                (MAP_PRIVATE | MAP_ANONYMOUS) as usize,
                usize::MAX,
                0,
            ],
        )?;
        let mut map = AnonMap::new(3 * PAGE_SIZE)?;
        map.unmap_tail(2 * PAGE_SIZE)?;
        Ok(Mem { map, ro })
    }
    /// The first byte of the unmapped page right after the two mapped ones.
    fn hole(&self) -> usize {
        self.map.addr() + 2 * PAGE_SIZE
    }
    /// `n` mapped bytes ending exactly where the hole begins.
    fn tail(&self, n: usize) -> usize {
        self.hole() - n
    }
    fn bytes(&mut self) -> &mut [u8] {
        self.map.as_mut_slice()
    }
}

impl Drop for Mem {
    fn drop(&mut self) {
        let _ = sc(SYS_MUNMAP, &[self.ro, PAGE_SIZE]);
    }
}

/// A NUL-terminated string kept alive while cases use its address.
struct CStr(Vec<u8>);

impl CStr {
    fn new(s: &str) -> CStr {
        let mut v = Vec::with_capacity(s.len() + 1);
        v.extend_from_slice(s.as_bytes());
        v.push(0);
        CStr(v)
    }
    fn p(&self) -> usize {
        self.0.as_ptr() as usize
    }
}

/// What a case expects.
#[derive(Clone, Copy)]
enum Want {
    Err(Errno),
    /// Either errno (Linux versions or file systems differ; both are Linux answers).
    Either(Errno, Errno),
    /// Success with exactly this value.
    Val(usize),
    /// Success, any value.
    Ok,
}

struct Runner {
    passed: u32,
    failed: u32,
    verbose: bool,
    qemu: bool,
    fat: bool,
}

impl Runner {
    fn check(&mut self, name: &str, got: SysResult<usize>, want: Want) {
        let ok = match (want, got) {
            (Want::Err(e), Err(g)) => e == g,
            (Want::Either(a, b), Err(g)) => g == a || g == b,
            (Want::Val(v), Ok(g)) => v == g,
            (Want::Ok, Ok(_)) => true,
            _ => false,
        };
        let show = |r: SysResult<usize>| match r {
            Ok(v) => format!("{v}"),
            Err(e) => String::from(e.name()),
        };
        let wanted = match want {
            Want::Err(e) => String::from(e.name()),
            Want::Either(a, b) => format!("{} or {}", a.name(), b.name()),
            Want::Val(v) => format!("{v}"),
            Want::Ok => String::from("success"),
        };
        if ok {
            self.passed += 1;
            if self.verbose {
                println!("ok   {name}: {}", show(got));
            }
        } else {
            self.failed += 1;
            println!("FAIL {name}: got {}, want {wanted}", show(got));
        }
    }

    fn err(&mut self, name: &str, got: SysResult<usize>, e: Errno) {
        self.check(name, got, Want::Err(e));
    }

    /// A case where qemu-user answers `qemu` instead of Linux's `want`.
    fn qemu_differs(&mut self, name: &str, got: SysResult<usize>, want: Want, qemu: Want) {
        let want = if self.qemu { qemu } else { want };
        self.check(name, got, want);
    }
}

/// The bad pointers every pointer argument is tried with (a name, an address).
fn bad_ptrs(m: &Mem) -> [(&'static str, usize); 4] {
    [
        ("NULL", 0),
        ("kernel image", KERNEL_LOW),
        ("kernel half", KERNEL_HIGH),
        ("unmapped", m.hole()),
    ]
}

struct Fixture {
    dir: String,
    file: CStr,
    sub: CStr,
    missing: CStr,
    fd: Fd,
    ro_fd: Fd,
    dir_fd: Fd,
    link: Option<CStr>,
}

fn setup(base: &str, fat: bool) -> SysResult<Fixture> {
    let dir = user_tests::path_join(base, &format!("badsys.{}", sys::getpid()));
    let _ = sys::remove_tree(&dir);
    sys::mkdir(&dir, 0o755)?;
    let file = user_tests::path_join(&dir, "f");
    let data: Vec<u8> = (0..100u8).collect();
    let fd = sys::open(&file, O_RDWR | O_CREAT | O_TRUNC, 0o644)?;
    sys::write_all(fd, &data)?;
    sys::lseek(fd, 0, SEEK_SET)?;
    let ro_fd = sys::open(&file, O_RDONLY, 0)?;
    let sub = user_tests::path_join(&dir, "d");
    sys::mkdir(&sub, 0o755)?;
    sys::mkdir(&user_tests::path_join(&sub, "inner"), 0o755)?;
    let dir_fd = sys::open(&sub, O_RDONLY | O_DIRECTORY, 0)?;
    let link = if fat {
        None
    } else {
        let l = user_tests::path_join(&dir, "l");
        sys::symlink("f", &l)?;
        Some(CStr::new(&l))
    };
    Ok(Fixture {
        file: CStr::new(&file),
        sub: CStr::new(&sub),
        missing: CStr::new(&user_tests::path_join(&dir, "missing")),
        dir,
        fd,
        ro_fd,
        dir_fd,
        link,
    })
}

/// Bad pointers as buffers, structures and paths.
fn pointers(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let (fd, dfd) = (fx.fd, fx.dir_fd);
    let new = CStr::new(&user_tests::path_join(&fx.dir, "new"));
    let ts = [0u8; 16];
    for (what, p) in bad_ptrs(m) {
        let e = Errno::EFAULT;
        r.err(
            &format!("read into {what}"),
            sc(SYS_READ, &[fd as usize, p, 10]),
            e,
        );
        r.err(
            &format!("write from {what}"),
            sc(SYS_WRITE, &[fd as usize, p, 10]),
            e,
        );
        r.err(
            &format!("pread into {what}"),
            sc(SYS_PREAD64, &[fd as usize, p, 10, 0]),
            e,
        );
        r.err(
            &format!("pwrite from {what}"),
            sc(SYS_PWRITE64, &[fd as usize, p, 10, 0]),
            e,
        );
        r.err(
            &format!("readv iov array {what}"),
            sc(SYS_READV, &[fd as usize, p, 1]),
            e,
        );
        r.err(
            &format!("writev iov array {what}"),
            sc(SYS_WRITEV, &[fd as usize, p, 1]),
            e,
        );
        let iov = [p, 10usize];
        r.err(
            &format!("readv iov_base {what}"),
            sc(SYS_READV, &[fd as usize, iov.as_ptr() as usize, 1]),
            e,
        );
        r.err(
            &format!("writev iov_base {what}"),
            sc(SYS_WRITEV, &[fd as usize, iov.as_ptr() as usize, 1]),
            e,
        );
        r.err(
            &format!("fstat into {what}"),
            sc(SYS_FSTAT, &[fd as usize, p]),
            e,
        );
        r.err(
            &format!("fstatfs into {what}"),
            sc(SYS_FSTATFS, &[fd as usize, p]),
            e,
        );
        r.err(
            &format!("statfs into {what}"),
            sc(SYS_STATFS, &[fx.file.p(), p]),
            e,
        );
        r.err(
            &format!("newfstatat into {what}"),
            sc(SYS_NEWFSTATAT, &[AT_FDCWD as usize, fx.file.p(), p, 0]),
            e,
        );
        r.err(
            &format!("getdents64 into {what}"),
            sc(SYS_GETDENTS64, &[dfd as usize, p, 4096]),
            e,
        );
        r.err(
            &format!("getcwd into {what}"),
            sc(SYS_GETCWD, &[p, 4096]),
            e,
        );
        r.err(
            &format!("clock_gettime into {what}"),
            sc(SYS_CLOCK_GETTIME, &[CLOCK_MONOTONIC as usize, p]),
            e,
        );
        // NULL is allowed there (no time wanted / "now"): Linux answers 0.
        let null_ok = if p == 0 { Want::Val(0) } else { Want::Err(e) };
        r.check(
            &format!("gettimeofday into {what}"),
            sc(SYS_GETTIMEOFDAY, &[p, 0]),
            null_ok,
        );
        // qemu-user answers EINVAL when it cannot read the timespec.
        r.qemu_differs(
            &format!("nanosleep from {what}"),
            sc(SYS_NANOSLEEP, &[p, 0]),
            Want::Err(e),
            Want::Err(Errno::EINVAL),
        );
        r.err(&format!("uname into {what}"), sc(SYS_UNAME, &[p]), e);
        r.check(
            &format!("utimensat times {what}"),
            sc(SYS_UTIMENSAT, &[AT_FDCWD as usize, fx.file.p(), p, 0]),
            null_ok,
        );
        if let Some(l) = &fx.link {
            r.err(
                &format!("readlinkat into {what}"),
                sc(SYS_READLINKAT, &[AT_FDCWD as usize, l.p(), p, 64]),
                e,
            );
        }
        // Paths.
        let at = AT_FDCWD as usize;
        r.err(
            &format!("openat path {what}"),
            sc(SYS_OPENAT, &[at, p, O_RDONLY as usize, 0]),
            e,
        );
        r.err(
            &format!("openat O_CREAT path {what}"),
            sc(SYS_OPENAT, &[at, p, (O_WRONLY | O_CREAT) as usize, 0o644]),
            e,
        );
        r.err(
            &format!("mkdirat path {what}"),
            sc(SYS_MKDIRAT, &[at, p, 0o755]),
            e,
        );
        r.err(
            &format!("unlinkat path {what}"),
            sc(SYS_UNLINKAT, &[at, p, 0]),
            e,
        );
        r.err(
            &format!("rmdir path {what}"),
            sc(SYS_UNLINKAT, &[at, p, AT_REMOVEDIR as usize]),
            e,
        );
        r.err(
            &format!("newfstatat path {what}"),
            sc(SYS_NEWFSTATAT, &[at, p, ts.as_ptr() as usize, 0]),
            e,
        );
        r.err(
            &format!("statfs path {what}"),
            sc(SYS_STATFS, &[p, ts.as_ptr() as usize]),
            e,
        );
        r.err(
            &format!("truncate path {what}"),
            sc(SYS_TRUNCATE, &[p, 0]),
            e,
        );
        r.err(
            &format!("faccessat path {what}"),
            sc(SYS_FACCESSAT, &[at, p, 0]),
            e,
        );
        r.err(&format!("chdir path {what}"), sc(SYS_CHDIR, &[p]), e);
        r.err(
            &format!("fchmodat path {what}"),
            sc(SYS_FCHMODAT, &[at, p, 0o644]),
            e,
        );
        r.err(
            &format!("readlinkat path {what}"),
            sc(SYS_READLINKAT, &[at, p, ts.as_ptr() as usize, 16]),
            e,
        );
        r.err(
            &format!("utimensat path {what}"),
            sc(SYS_UTIMENSAT, &[at, p, 0, 0]),
            e,
        );
        r.err(
            &format!("linkat old {what}"),
            sc(SYS_LINKAT, &[at, p, at, new.p(), 0]),
            e,
        );
        r.err(
            &format!("linkat new {what}"),
            sc(SYS_LINKAT, &[at, fx.file.p(), at, p, 0]),
            e,
        );
        r.err(
            &format!("symlinkat target {what}"),
            sc(SYS_SYMLINKAT, &[p, at, new.p()]),
            e,
        );
        r.err(
            &format!("symlinkat link {what}"),
            sc(SYS_SYMLINKAT, &[fx.file.p(), at, p]),
            e,
        );
        r.err(
            &format!("renameat2 old {what}"),
            sc(SYS_RENAMEAT2, &[at, p, at, new.p(), 0]),
            e,
        );
        r.err(
            &format!("renameat2 new {what}"),
            sc(SYS_RENAMEAT2, &[at, fx.file.p(), at, p, 0]),
            e,
        );
        r.err(
            &format!("execve path {what}"),
            sc(SYS_EXECVE, &[p, 0, 0]),
            e,
        );
    }
    // The failed writes and opens must have changed nothing.
    r.err(
        "no file created by failed calls",
        sc(SYS_FACCESSAT, &[AT_FDCWD as usize, new.p(), 0]),
        Errno::ENOENT,
    );
    r.check(
        "offset unmoved by failed calls",
        sys::lseek(fd, 0, SEEK_CUR).map(|v| v as usize),
        Want::Val(0),
    );
    r.check(
        "size unchanged by failed calls",
        sys::fstat(fd).map(|s| s.st_size as usize),
        Want::Val(100),
    );

    // A range that starts mapped and runs into the unmapped page.
    let span = m.tail(8);
    r.err(
        "fstat into a struct spanning the hole",
        sc(SYS_FSTAT, &[fd as usize, span]),
        Errno::EFAULT,
    );
    r.err(
        "fstatfs spanning the hole",
        sc(SYS_FSTATFS, &[fd as usize, span]),
        Errno::EFAULT,
    );
    r.err(
        "clock_gettime spanning the hole",
        sc(SYS_CLOCK_GETTIME, &[CLOCK_MONOTONIC as usize, span]),
        Errno::EFAULT,
    );
    r.err(
        "uname spanning the hole",
        sc(SYS_UNAME, &[span]),
        Errno::EFAULT,
    );
    r.qemu_differs(
        "nanosleep timespec spanning the hole",
        sc(SYS_NANOSLEEP, &[span, 0]),
        Want::Err(Errno::EFAULT),
        Want::Err(Errno::EINVAL),
    );
    r.err(
        "readv iov array spanning the hole",
        sc(SYS_READV, &[fd as usize, span, 1]),
        Errno::EFAULT,
    );
    r.err(
        "getcwd into a buffer spanning the hole",
        sc(SYS_GETCWD, &[m.tail(1), 4096]),
        Errno::EFAULT,
    );
    r.err(
        "getdents64 into 8 mapped bytes",
        sc(SYS_GETDENTS64, &[dfd as usize, span, 4096]),
        Errno::EFAULT,
    );
    r.err(
        "utimensat times spanning the hole",
        sc(
            SYS_UTIMENSAT,
            &[AT_FDCWD as usize, fx.file.p(), m.tail(16), 0],
        ),
        Errno::EFAULT,
    );
    // The whole file fits in the mapped part: Linux copies it and never touches the hole
    // (qemu-user checks the whole buffer first).
    let (v, q) = (Want::Val(100), Want::Err(Errno::EFAULT));
    r.qemu_differs(
        "read of 100 bytes into 100 mapped + 4000 unmapped",
        sc(SYS_READ, &[fx.ro_fd as usize, m.tail(100), 4100]),
        v,
        q,
    );
    r.qemu_differs(
        "pread of the 100-byte file into 100 mapped + 100 unmapped",
        sc(SYS_PREAD64, &[fx.ro_fd as usize, m.tail(100), 200, 0]),
        v,
        q,
    );
    let _ = sys::lseek(fx.ro_fd, 0, SEEK_SET);

    // Read-only memory as an output buffer; as an input it is fine.
    let ro = m.ro;
    r.err(
        "read into a read-only page",
        sc(SYS_READ, &[fx.ro_fd as usize, ro, 10]),
        Errno::EFAULT,
    );
    r.err(
        "fstat into a read-only page",
        sc(SYS_FSTAT, &[fd as usize, ro]),
        Errno::EFAULT,
    );
    r.err(
        "clock_gettime into a read-only page",
        sc(SYS_CLOCK_GETTIME, &[CLOCK_MONOTONIC as usize, ro]),
        Errno::EFAULT,
    );
    r.err(
        "getdents64 into a read-only page",
        sc(SYS_GETDENTS64, &[dfd as usize, ro, 4096]),
        Errno::EFAULT,
    );
    r.err(
        "uname into a read-only page",
        sc(SYS_UNAME, &[ro]),
        Errno::EFAULT,
    );
    r.check(
        "nanosleep from a read-only page (zeros)",
        sc(SYS_NANOSLEEP, &[ro, 0]),
        Want::Val(0),
    );
    r.check(
        "pwrite from a read-only page",
        sc(SYS_PWRITE64, &[fd as usize, ro, 10, 200]),
        Want::Val(10),
    );
    let _ = sys::ftruncate(fd, 100);

    // Lengths that wrap around the address space, or are absurd.
    let buf = [0u8; 16];
    let b = buf.as_ptr() as usize;
    r.err(
        "read with count usize::MAX",
        sc(SYS_READ, &[fx.ro_fd as usize, b, usize::MAX]),
        Errno::EFAULT,
    );
    r.err(
        "write with count usize::MAX",
        sc(SYS_WRITE, &[fd as usize, b, usize::MAX]),
        Errno::EFAULT,
    );
    r.err(
        "pread with count usize::MAX",
        sc(SYS_PREAD64, &[fx.ro_fd as usize, b, usize::MAX, 0]),
        Errno::EFAULT,
    );
    r.err(
        "pwrite with count usize::MAX",
        sc(SYS_PWRITE64, &[fd as usize, b, usize::MAX, 0]),
        Errno::EFAULT,
    );
    r.err(
        "read with a buffer wrapping past the top",
        sc(SYS_READ, &[fx.ro_fd as usize, usize::MAX - 15, 32]),
        Errno::EFAULT,
    );
    r.qemu_differs(
        "read of a 100-byte file with count 1 GiB",
        sc(SYS_READ, &[fx.ro_fd as usize, m.map.addr(), 1 << 30]),
        Want::Val(100),
        Want::Err(Errno::EFAULT),
    );
    let _ = sys::lseek(fx.ro_fd, 0, SEEK_SET);
    let iov = [b, usize::MAX];
    r.err(
        "readv with iov_len -1",
        sc(SYS_READV, &[fd as usize, iov.as_ptr() as usize, 1]),
        Errno::EINVAL,
    );
    r.err(
        "writev with iov_len -1",
        sc(SYS_WRITEV, &[fd as usize, iov.as_ptr() as usize, 1]),
        Errno::EINVAL,
    );
    r.err(
        "readv with 1025 iovecs",
        sc(SYS_READV, &[fd as usize, b, 1025]),
        Errno::EINVAL,
    );
    r.err(
        "writev with -1 iovecs",
        sc(SYS_WRITEV, &[fd as usize, b, usize::MAX]),
        Errno::EINVAL,
    );
    r.check(
        "readv with 0 iovecs from NULL",
        sc(SYS_READV, &[fd as usize, 0, 0]),
        Want::Val(0),
    );
    r.check(
        "read of 0 bytes into NULL",
        sc(SYS_READ, &[fd as usize, 0, 0]),
        Want::Val(0),
    );
    r.check(
        "write of 0 bytes from NULL",
        sc(SYS_WRITE, &[fd as usize, 0, 0]),
        Want::Val(0),
    );
    r.err(
        "getcwd with size 0",
        sc(SYS_GETCWD, &[m.map.addr(), 0]),
        Errno::ERANGE,
    );
    r.err(
        "getcwd with size 1",
        sc(SYS_GETCWD, &[m.map.addr(), 1]),
        Errno::ERANGE,
    );
    let _ = sys::lseek(dfd, 0, SEEK_SET);
    r.err(
        "getdents64 with count 1",
        sc(SYS_GETDENTS64, &[dfd as usize, m.map.addr(), 1]),
        Errno::EINVAL,
    );
    if let Some(l) = &fx.link {
        r.err(
            "readlinkat with bufsiz 0",
            sc(SYS_READLINKAT, &[AT_FDCWD as usize, l.p(), m.map.addr(), 0]),
            Errno::EINVAL,
        );
        let w = Want::Err(Errno::EINVAL);
        r.qemu_differs(
            "readlinkat with bufsiz -1",
            sc(
                SYS_READLINKAT,
                &[AT_FDCWD as usize, l.p(), m.map.addr(), usize::MAX],
            ),
            w,
            Want::Err(Errno::EFAULT),
        );
    }
    r.check(
        "offset still 0",
        sys::lseek(fd, 0, SEEK_CUR).map(|v| v as usize),
        Want::Val(0),
    );
}

/// Path strings that are bad in themselves, tried on every path-taking call.
fn paths(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let at = AT_FDCWD as usize;
    let tmp = [0u8; 256];
    let t = tmp.as_ptr() as usize;
    // Fill both mapped pages with 'a' (no NUL anywhere up to the hole).
    m.bytes().fill(b'a');
    let unterminated = m.tail(100);
    // PATH_MAX bytes, then the hole: no NUL within PATH_MAX.
    let long_nonul = m.tail(PATH_MAX);
    // (what, address, errno, whether it is bad as a symlink *target* too: a target is any
    // string up to PATH_MAX - 1 bytes, so long components and missing names are fine there).
    let mut cases: Vec<(&str, usize, Errno, bool)> = vec![
        (
            "unterminated before the hole",
            unterminated,
            Errno::EFAULT,
            true,
        ),
        (
            "PATH_MAX bytes without NUL",
            long_nonul,
            Errno::ENAMETOOLONG,
            true,
        ),
    ];
    // Owned strings for the remaining classes.
    let long_name = CStr::new(&user_tests::path_join(&fx.dir, &"n".repeat(256)));
    let mut long_path = String::new();
    while long_path.len() < PATH_MAX {
        long_path.push_str("./");
    }
    long_path.truncate(PATH_MAX);
    let long_path = CStr::new(&long_path); // PATH_MAX bytes + NUL
                                           // PATH_MAX - 1 bytes under a missing directory: accepted, just missing (so nothing, not
                                           // even a creating call, can succeed).
    let mut max_ok = user_tests::path_join(&fx.dir, "nodir/");
    while max_ok.len() < PATH_MAX - 2 {
        max_ok.push_str("./");
    }
    max_ok.truncate(PATH_MAX - 2);
    max_ok.push('z');
    let max_ok = CStr::new(&max_ok);
    let empty = CStr::new("");
    cases.push((
        "component of 256 bytes",
        long_name.p(),
        Errno::ENAMETOOLONG,
        false,
    ));
    cases.push((
        "PATH_MAX bytes + NUL",
        long_path.p(),
        Errno::ENAMETOOLONG,
        true,
    ));
    cases.push((
        "PATH_MAX-1 bytes, missing",
        max_ok.p(),
        Errno::ENOENT,
        false,
    ));
    cases.push(("empty", empty.p(), Errno::ENOENT, true));
    let newp = CStr::new(&user_tests::path_join(&fx.dir, "new2"));
    for (what, p, e, bad_target) in cases {
        // qemu-user measures the string before the kernel would stop at PATH_MAX.
        let w = if r.qemu && p == long_nonul {
            Errno::EFAULT
        } else {
            e
        };
        let e = w;
        r.err(
            &format!("openat {what}"),
            sc(SYS_OPENAT, &[at, p, O_RDONLY as usize, 0]),
            e,
        );
        r.err(
            &format!("openat O_CREAT {what}"),
            sc(SYS_OPENAT, &[at, p, (O_RDWR | O_CREAT) as usize, 0o644]),
            e,
        );
        r.err(
            &format!("mkdirat {what}"),
            sc(SYS_MKDIRAT, &[at, p, 0o755]),
            e,
        );
        r.err(
            &format!("unlinkat {what}"),
            sc(SYS_UNLINKAT, &[at, p, 0]),
            e,
        );
        r.err(
            &format!("rmdir {what}"),
            sc(SYS_UNLINKAT, &[at, p, AT_REMOVEDIR as usize]),
            e,
        );
        r.err(
            &format!("newfstatat {what}"),
            sc(SYS_NEWFSTATAT, &[at, p, m.ro, 0]),
            e,
        );
        r.err(&format!("statfs {what}"), sc(SYS_STATFS, &[p, t]), e);
        r.err(&format!("truncate {what}"), sc(SYS_TRUNCATE, &[p, 0]), e);
        r.err(
            &format!("faccessat {what}"),
            sc(SYS_FACCESSAT, &[at, p, 0]),
            e,
        );
        r.err(&format!("chdir {what}"), sc(SYS_CHDIR, &[p]), e);
        r.err(
            &format!("fchmodat {what}"),
            sc(SYS_FCHMODAT, &[at, p, 0o644]),
            e,
        );
        r.err(
            &format!("readlinkat {what}"),
            sc(SYS_READLINKAT, &[at, p, t, 64]),
            e,
        );
        r.err(
            &format!("utimensat {what}"),
            sc(SYS_UTIMENSAT, &[at, p, 0, 0]),
            e,
        );
        r.err(
            &format!("linkat old {what}"),
            sc(SYS_LINKAT, &[at, p, at, newp.p(), 0]),
            e,
        );
        r.err(
            &format!("linkat new {what}"),
            sc(SYS_LINKAT, &[at, fx.file.p(), at, p, 0]),
            e,
        );
        if bad_target {
            r.err(
                &format!("symlinkat target {what}"),
                sc(SYS_SYMLINKAT, &[p, at, newp.p()]),
                e,
            );
        }
        r.err(
            &format!("symlinkat link {what}"),
            sc(SYS_SYMLINKAT, &[fx.file.p(), at, p]),
            e,
        );
        r.err(
            &format!("renameat2 old {what}"),
            sc(SYS_RENAMEAT2, &[at, p, at, newp.p(), 0]),
            e,
        );
        r.err(
            &format!("renameat2 new {what}"),
            sc(SYS_RENAMEAT2, &[at, fx.file.p(), at, p, 0]),
            e,
        );
        r.err(&format!("execve {what}"), sc(SYS_EXECVE, &[p, 0, 0]), e);
    }
    r.err(
        "nothing was created",
        sc(SYS_FACCESSAT, &[at, newp.p(), 0]),
        Errno::ENOENT,
    );
    r.check(
        "the file is intact",
        sys::stat(&user_tests::path_join(&fx.dir, "f")).map(|s| s.st_size as usize),
        Want::Val(100),
    );
}

/// Descriptors that are not open, negative, huge, closed, or of the wrong kind.
fn descriptors(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let b = m.map.addr();
    let name = CStr::new("x");
    let closed = sc(SYS_DUP, &[fx.fd as usize]).map_or(900, |d| {
        let _ = sys::close(d as Fd);
        d as Fd
    });
    for bad in [
        -1isize as usize,
        999,
        1 << 20,
        i32::MAX as usize,
        closed as usize,
    ] {
        let e = Errno::EBADF;
        let w = format!("fd {}", bad as isize);
        r.err(&format!("read {w}"), sc(SYS_READ, &[bad, b, 1]), e);
        r.err(&format!("write {w}"), sc(SYS_WRITE, &[bad, b, 1]), e);
        r.err(&format!("pread {w}"), sc(SYS_PREAD64, &[bad, b, 1, 0]), e);
        r.err(&format!("pwrite {w}"), sc(SYS_PWRITE64, &[bad, b, 1, 0]), e);
        let iov = [b, 1usize];
        r.err(
            &format!("readv {w}"),
            sc(SYS_READV, &[bad, iov.as_ptr() as usize, 1]),
            e,
        );
        r.err(
            &format!("writev {w}"),
            sc(SYS_WRITEV, &[bad, iov.as_ptr() as usize, 1]),
            e,
        );
        r.err(&format!("close {w}"), sc(SYS_CLOSE, &[bad]), e);
        r.err(&format!("fstat {w}"), sc(SYS_FSTAT, &[bad, b]), e);
        r.err(&format!("fstatfs {w}"), sc(SYS_FSTATFS, &[bad, b]), e);
        r.err(
            &format!("lseek {w}"),
            sc(SYS_LSEEK, &[bad, 0, SEEK_SET as usize]),
            e,
        );
        r.err(&format!("fsync {w}"), sc(SYS_FSYNC, &[bad]), e);
        r.err(&format!("fdatasync {w}"), sc(SYS_FDATASYNC, &[bad]), e);
        r.err(
            &format!("getdents64 {w}"),
            sc(SYS_GETDENTS64, &[bad, b, 4096]),
            e,
        );
        r.err(&format!("ftruncate {w}"), sc(SYS_FTRUNCATE, &[bad, 0]), e);
        r.err(&format!("fchdir {w}"), sc(SYS_FCHDIR, &[bad]), e);
        r.err(&format!("fchmod {w}"), sc(SYS_FCHMOD, &[bad, 0o644]), e);
        r.err(
            &format!("fcntl F_GETFL {w}"),
            sc(SYS_FCNTL, &[bad, 3, 0]),
            e,
        );
        r.err(&format!("ioctl {w}"), sc(SYS_IOCTL, &[bad, TCGETS, b]), e);
        r.err(&format!("dup {w}"), sc(SYS_DUP, &[bad]), e);
        r.err(&format!("dup3 from {w}"), sc(SYS_DUP3, &[bad, 50, 0]), e);
        if bad != AT_FDCWD as usize {
            r.err(
                &format!("openat relative to {w}"),
                sc(SYS_OPENAT, &[bad, name.p(), 0, 0]),
                e,
            );
            r.err(
                &format!("mkdirat relative to {w}"),
                sc(SYS_MKDIRAT, &[bad, name.p(), 0o755]),
                e,
            );
            r.err(
                &format!("unlinkat relative to {w}"),
                sc(SYS_UNLINKAT, &[bad, name.p(), 0]),
                e,
            );
            r.err(
                &format!("newfstatat relative to {w}"),
                sc(SYS_NEWFSTATAT, &[bad, name.p(), b, 0]),
                e,
            );
            r.err(
                &format!("faccessat relative to {w}"),
                sc(SYS_FACCESSAT, &[bad, name.p(), 0]),
                e,
            );
            r.err(
                &format!("fchmodat relative to {w}"),
                sc(SYS_FCHMODAT, &[bad, name.p(), 0o644]),
                e,
            );
            r.err(
                &format!("readlinkat relative to {w}"),
                sc(SYS_READLINKAT, &[bad, name.p(), b, 16]),
                e,
            );
            r.err(
                &format!("utimensat relative to {w}"),
                sc(SYS_UTIMENSAT, &[bad, name.p(), 0, 0]),
                e,
            );
            r.err(
                &format!("utimensat(fd, NULL) on {w}"),
                sc(SYS_UTIMENSAT, &[bad, 0, 0, 0]),
                e,
            );
            r.err(
                &format!("renameat2 relative to {w}"),
                sc(SYS_RENAMEAT2, &[bad, name.p(), bad, name.p(), 0]),
                e,
            );
            r.err(
                &format!("linkat relative to {w}"),
                sc(SYS_LINKAT, &[bad, name.p(), bad, name.p(), 0]),
                e,
            );
            r.err(
                &format!("symlinkat relative to {w}"),
                sc(SYS_SYMLINKAT, &[fx.file.p(), bad, name.p()]),
                e,
            );
            r.err(
                &format!("newfstatat AT_EMPTY_PATH on {w}"),
                sc(
                    SYS_NEWFSTATAT,
                    &[bad, CStr::new("").p(), b, AT_EMPTY_PATH as usize],
                ),
                e,
            );
        }
    }
    // An absolute path ignores a bad dirfd.
    match sc(SYS_OPENAT, &[999, fx.file.p(), O_RDONLY as usize, 0]) {
        Ok(fd) => {
            let _ = sys::close(fd as i32);
            r.check("openat(999, absolute path)", Ok(fd), Want::Ok)
        }
        Err(e) => r.check("openat(999, absolute path)", Err(e), Want::Ok),
    }
    // dup3 and fcntl bounds.
    r.err(
        "dup3 to itself",
        sc(SYS_DUP3, &[fx.fd as usize, fx.fd as usize, 0]),
        Errno::EINVAL,
    );
    r.err(
        "dup3 to fd -1",
        sc(SYS_DUP3, &[fx.fd as usize, usize::MAX, 0]),
        Errno::EBADF,
    );
    r.err(
        "dup3 to fd 1<<20",
        sc(SYS_DUP3, &[fx.fd as usize, 1 << 20, 0]),
        Errno::EBADF,
    );
    r.err(
        "dup3 with flag 0x1",
        sc(SYS_DUP3, &[fx.fd as usize, 60, 1]),
        Errno::EINVAL,
    );
    r.err(
        "fcntl F_DUPFD from 1<<20",
        sc(SYS_FCNTL, &[fx.fd as usize, 0, 1 << 20]),
        Errno::EINVAL,
    );
    r.err(
        "fcntl unknown command",
        sc(SYS_FCNTL, &[fx.fd as usize, 0xdead, 0]),
        Errno::EINVAL,
    );
    r.err(
        "ioctl TCGETS on a file",
        sc(SYS_IOCTL, &[fx.fd as usize, TCGETS, b]),
        Errno::ENOTTY,
    );
    r.err(
        "ioctl TCGETS on a file, NULL arg",
        sc(SYS_IOCTL, &[fx.fd as usize, TCGETS, 0]),
        Errno::ENOTTY,
    );
    // Wrong kind of descriptor.
    r.err(
        "openat relative to a file fd",
        sc(SYS_OPENAT, &[fx.fd as usize, name.p(), 0, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "mkdirat relative to a file fd",
        sc(SYS_MKDIRAT, &[fx.fd as usize, name.p(), 0o755]),
        Errno::ENOTDIR,
    );
    r.err(
        "newfstatat relative to a file fd",
        sc(SYS_NEWFSTATAT, &[fx.fd as usize, name.p(), b, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "unlinkat relative to a file fd",
        sc(SYS_UNLINKAT, &[fx.fd as usize, name.p(), 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "getdents64 on a file",
        sc(SYS_GETDENTS64, &[fx.fd as usize, b, 4096]),
        Errno::ENOTDIR,
    );
    r.err(
        "fchdir to a file",
        sc(SYS_FCHDIR, &[fx.fd as usize]),
        Errno::ENOTDIR,
    );
    r.err(
        "read from a directory",
        sc(SYS_READ, &[fx.dir_fd as usize, b, 16]),
        Errno::EISDIR,
    );
    r.err(
        "pread from a directory",
        sc(SYS_PREAD64, &[fx.dir_fd as usize, b, 16, 0]),
        Errno::EISDIR,
    );
    r.err(
        "write to a directory fd",
        sc(SYS_WRITE, &[fx.dir_fd as usize, b, 1]),
        Errno::EBADF,
    );
    r.err(
        "ftruncate a directory fd",
        sc(SYS_FTRUNCATE, &[fx.dir_fd as usize, 0]),
        Errno::EINVAL,
    );
    // Wrong access mode.
    r.err(
        "write to an O_RDONLY fd",
        sc(SYS_WRITE, &[fx.ro_fd as usize, b, 1]),
        Errno::EBADF,
    );
    r.err(
        "pwrite to an O_RDONLY fd",
        sc(SYS_PWRITE64, &[fx.ro_fd as usize, b, 1, 0]),
        Errno::EBADF,
    );
    r.err(
        "ftruncate an O_RDONLY fd",
        sc(SYS_FTRUNCATE, &[fx.ro_fd as usize, 0]),
        Errno::EINVAL,
    );
    match sys::open(&user_tests::path_join(&fx.dir, "f"), O_WRONLY, 0) {
        Ok(wo) => {
            r.err(
                "read from an O_WRONLY fd",
                sc(SYS_READ, &[wo as usize, b, 1]),
                Errno::EBADF,
            );
            r.err(
                "getdents64 on an O_WRONLY file",
                sc(SYS_GETDENTS64, &[wo as usize, b, 4096]),
                Errno::ENOTDIR,
            );
            let _ = sys::close(wo);
        }
        Err(e) => r.check("open O_WRONLY", Err(e), Want::Ok),
    }
}

/// Flags, modes, whence values, clocks, options, signals and times Linux refuses.
fn flags(r: &mut Runner, m: &mut Mem, fx: &Fixture) {
    let at = AT_FDCWD as usize;
    let (f, fd) = (fx.file.p(), fx.fd as usize);
    let b = m.map.addr();
    let new = CStr::new(&user_tests::path_join(&fx.dir, "new3"));
    r.err("lseek whence 5", sc(SYS_LSEEK, &[fd, 0, 5]), Errno::EINVAL);
    r.err(
        "lseek whence -1",
        sc(SYS_LSEEK, &[fd, 0, usize::MAX]),
        Errno::EINVAL,
    );
    r.err(
        "lseek to offset -1",
        sc(SYS_LSEEK, &[fd, usize::MAX, SEEK_SET as usize]),
        Errno::EINVAL,
    );
    r.err(
        "lseek SEEK_CUR to before 0",
        sc(SYS_LSEEK, &[fd, -10isize as usize, SEEK_CUR as usize]),
        Errno::EINVAL,
    );
    r.err(
        "lseek SEEK_DATA past EOF",
        sc(SYS_LSEEK, &[fd, 1000, SEEK_DATA as usize]),
        Errno::ENXIO,
    );
    r.err(
        "lseek SEEK_HOLE past EOF",
        sc(SYS_LSEEK, &[fd, 1000, SEEK_HOLE as usize]),
        Errno::ENXIO,
    );
    r.err(
        "lseek SEEK_END overflowing",
        sc(SYS_LSEEK, &[fd, i64::MAX as usize, SEEK_END as usize]),
        Errno::EINVAL,
    );
    r.err(
        "pread at offset -1",
        sc(SYS_PREAD64, &[fd, b, 1, usize::MAX]),
        Errno::EINVAL,
    );
    r.err(
        "pwrite at offset -1",
        sc(SYS_PWRITE64, &[fd, b, 1, usize::MAX]),
        Errno::EINVAL,
    );
    r.err(
        "pwrite whose end overflows loff_t",
        sc(SYS_PWRITE64, &[fd, b, 1, i64::MAX as usize]),
        Errno::EINVAL,
    );
    r.err(
        "ftruncate to -1",
        sc(SYS_FTRUNCATE, &[fd, usize::MAX]),
        Errno::EINVAL,
    );
    r.err(
        "truncate to -1",
        sc(SYS_TRUNCATE, &[f, usize::MAX]),
        Errno::EINVAL,
    );
    r.err(
        "ftruncate to 2^63-1",
        sc(SYS_FTRUNCATE, &[fd, i64::MAX as usize]),
        Errno::EFBIG,
    );
    r.err(
        "openat O_CREAT|O_DIRECTORY",
        sc(
            SYS_OPENAT,
            &[
                at,
                new.p(),
                (O_CREAT | O_DIRECTORY | O_RDWR) as usize,
                0o644,
            ],
        ),
        Errno::EINVAL,
    );
    r.err(
        "openat O_TMPFILE read-only",
        sc(
            SYS_OPENAT,
            &[at, fx.sub.p(), (O_TMPFILE | O_RDONLY) as usize, 0o600],
        ),
        Errno::EINVAL,
    );
    r.err(
        "openat O_EXCL on an existing file",
        sc(
            SYS_OPENAT,
            &[at, f, (O_CREAT | O_EXCL | O_RDWR) as usize, 0o644],
        ),
        Errno::EEXIST,
    );
    r.err(
        "unlinkat flag 0x1",
        sc(SYS_UNLINKAT, &[at, f, 1]),
        Errno::EINVAL,
    );
    r.err(
        "unlinkat flag 0x100",
        sc(SYS_UNLINKAT, &[at, f, 0x100]),
        Errno::EINVAL,
    );
    r.err(
        "newfstatat flag 0x1",
        sc(SYS_NEWFSTATAT, &[at, f, b, 1]),
        Errno::EINVAL,
    );
    r.err(
        "linkat flag 0x1",
        sc(SYS_LINKAT, &[at, f, at, new.p(), 1]),
        Errno::EINVAL,
    );
    r.err(
        "renameat2 flag 0x8",
        sc(SYS_RENAMEAT2, &[at, f, at, new.p(), 8]),
        Errno::EINVAL,
    );
    r.err(
        "renameat2 NOREPLACE|EXCHANGE",
        sc(
            SYS_RENAMEAT2,
            &[
                at,
                f,
                at,
                new.p(),
                (RENAME_NOREPLACE | RENAME_EXCHANGE) as usize,
            ],
        ),
        Errno::EINVAL,
    );
    r.err(
        "renameat2 NOREPLACE onto an existing name",
        sc(
            SYS_RENAMEAT2,
            &[at, f, at, fx.sub.p(), RENAME_NOREPLACE as usize],
        ),
        Errno::EEXIST,
    );
    r.err(
        "faccessat mode 8",
        sc(SYS_FACCESSAT, &[at, f, 8]),
        Errno::EINVAL,
    );
    r.err(
        "utimensat flag 0x1",
        sc(SYS_UTIMENSAT, &[at, f, 0, 1]),
        Errno::EINVAL,
    );
    let bad_ns: [i64; 4] = [0, 1_000_000_000, 0, 0];
    r.err(
        "utimensat tv_nsec 1e9",
        sc(SYS_UTIMENSAT, &[at, f, bad_ns.as_ptr() as usize, 0]),
        Errno::EINVAL,
    );
    let neg_ns: [i64; 4] = [0, 0, 0, -1];
    r.err(
        "utimensat tv_nsec -1",
        sc(SYS_UTIMENSAT, &[at, f, neg_ns.as_ptr() as usize, 0]),
        Errno::EINVAL,
    );
    r.err(
        "clock_gettime clock 100",
        sc(SYS_CLOCK_GETTIME, &[100, b]),
        Errno::EINVAL,
    );
    r.err(
        "clock_gettime clock -1 (a bad CPU clock)",
        sc(SYS_CLOCK_GETTIME, &[u32::MAX as usize, b]),
        Errno::EINVAL,
    );
    let ns: [i64; 2] = [0, 1_000_000_000];
    r.err(
        "nanosleep tv_nsec 1e9",
        sc(SYS_NANOSLEEP, &[ns.as_ptr() as usize, 0]),
        Errno::EINVAL,
    );
    let ns: [i64; 2] = [-1, 0];
    r.err(
        "nanosleep tv_sec -1",
        sc(SYS_NANOSLEEP, &[ns.as_ptr() as usize, 0]),
        Errno::EINVAL,
    );
    let ns: [i64; 2] = [0, -1];
    r.err(
        "nanosleep tv_nsec -1",
        sc(SYS_NANOSLEEP, &[ns.as_ptr() as usize, 0]),
        Errno::EINVAL,
    );
    r.err(
        "wait4 options 0x10000",
        sc(SYS_WAIT4, &[usize::MAX, 0, 0x10000, 0]),
        Errno::EINVAL,
    );
    r.err(
        "wait4 with no child",
        sc(SYS_WAIT4, &[usize::MAX, 0, 0, 0]),
        Errno::ECHILD,
    );
    r.err(
        "wait4 for pid 1 (not a child)",
        sc(SYS_WAIT4, &[1, 0, 0, 0]),
        Errno::ECHILD,
    );
    r.err(
        "kill signal 999",
        sc(SYS_KILL, &[sys::getpid() as usize, 999]),
        Errno::EINVAL,
    );
    r.err(
        "kill signal -1",
        sc(SYS_KILL, &[sys::getpid() as usize, usize::MAX]),
        Errno::EINVAL,
    );
    r.err(
        "kill a pid that does not exist",
        sc(SYS_KILL, &[0x3fff_fff0, 0]),
        Errno::ESRCH,
    );
    r.err(
        "reboot without the magic",
        sc(SYS_REBOOT, &[1, 2, 3, 0]),
        Errno::EINVAL,
    );
    // Memory calls.
    let rw = (PROT_READ | PROT_WRITE) as usize;
    let anon = (MAP_PRIVATE | MAP_ANONYMOUS) as usize;
    r.err(
        "mmap length 0",
        sc(SYS_MMAP, &[0, 0, rw, anon, usize::MAX, 0]),
        Errno::EINVAL,
    );
    r.err(
        "mmap length 2^64-4096",
        sc(SYS_MMAP, &[0, usize::MAX - 4095, rw, anon, usize::MAX, 0]),
        Errno::ENOMEM,
    );
    r.err(
        "mmap neither shared nor private",
        sc(
            SYS_MMAP,
            &[0, 4096, rw, MAP_ANONYMOUS as usize, usize::MAX, 0],
        ),
        Errno::EINVAL,
    );
    r.err(
        "mmap MAP_FIXED at an unaligned address",
        sc(
            SYS_MMAP,
            &[b + 1, 4096, rw, anon | MAP_FIXED as usize, usize::MAX, 0],
        ),
        Errno::EINVAL,
    );
    r.err(
        "mmap of a bad fd",
        sc(SYS_MMAP, &[0, 4096, rw, MAP_PRIVATE as usize, 999, 0]),
        Errno::EBADF,
    );
    r.err(
        "mmap of a directory fd",
        sc(
            SYS_MMAP,
            &[
                0,
                4096,
                PROT_READ as usize,
                MAP_PRIVATE as usize,
                fx.dir_fd as usize,
                0,
            ],
        ),
        Errno::ENODEV,
    );
    r.err(
        "munmap an unaligned address",
        sc(SYS_MUNMAP, &[b + 1, 4096]),
        Errno::EINVAL,
    );
    r.err("munmap length 0", sc(SYS_MUNMAP, &[b, 0]), Errno::EINVAL);
    r.err(
        "munmap a range wrapping the top",
        sc(SYS_MUNMAP, &[usize::MAX - 4095, 8192]),
        Errno::EINVAL,
    );
    r.check(
        "munmap an unmapped page",
        sc(SYS_MUNMAP, &[m.hole(), 4096]),
        Want::Val(0),
    );
    r.err(
        "mprotect an unaligned address",
        sc(SYS_MPROTECT, &[b + 1, 4096, PROT_READ as usize]),
        Errno::EINVAL,
    );
    r.err(
        "mprotect an unmapped page",
        sc(SYS_MPROTECT, &[m.hole(), 4096, PROT_READ as usize]),
        Errno::ENOMEM,
    );
    r.err(
        "mprotect prot 0x1000",
        sc(SYS_MPROTECT, &[b, 4096, 0x1000]),
        Errno::EINVAL,
    );
    let cur = sys::brk(0);
    r.check(
        "brk to 2^63 answers the old break",
        Ok(sys::brk(1 << 63)),
        Want::Val(cur),
    );
    r.check(
        "brk to the kernel image answers the old break",
        Ok(sys::brk(KERNEL_LOW)),
        Want::Val(cur),
    );
    r.err("syscall 5000", sc(5000, &[]), Errno::ENOSYS);
}

/// A directory where a file is expected, and the reverse.
fn types(r: &mut Runner, fx: &Fixture) {
    let at = AT_FDCWD as usize;
    let (f, d) = (fx.file.p(), fx.sub.p());
    let under_file = CStr::new(&user_tests::path_join(&fx.dir, "f/x"));
    let file_slash = CStr::new(&user_tests::path_join(&fx.dir, "f/"));
    let new_slash = CStr::new(&user_tests::path_join(&fx.dir, "newfile/"));
    let inner = CStr::new(&user_tests::path_join(&fx.dir, "d/inner"));
    let tmp = [0u8; 256];
    let t = tmp.as_ptr() as usize;
    r.err(
        "openat a directory O_WRONLY",
        sc(SYS_OPENAT, &[at, d, O_WRONLY as usize, 0]),
        Errno::EISDIR,
    );
    r.err(
        "openat a directory O_RDWR",
        sc(SYS_OPENAT, &[at, d, O_RDWR as usize, 0]),
        Errno::EISDIR,
    );
    r.err(
        "openat a directory O_CREAT",
        sc(SYS_OPENAT, &[at, d, (O_CREAT | O_RDWR) as usize, 0o644]),
        Errno::EISDIR,
    );
    r.err(
        "openat a file with O_DIRECTORY",
        sc(SYS_OPENAT, &[at, f, (O_DIRECTORY | O_RDONLY) as usize, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "openat file/x",
        sc(SYS_OPENAT, &[at, under_file.p(), O_RDONLY as usize, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "openat O_CREAT file/x",
        sc(
            SYS_OPENAT,
            &[at, under_file.p(), (O_CREAT | O_RDWR) as usize, 0o644],
        ),
        Errno::ENOTDIR,
    );
    r.err(
        "openat file/ (trailing slash)",
        sc(SYS_OPENAT, &[at, file_slash.p(), O_RDONLY as usize, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "openat O_CREAT newfile/",
        sc(
            SYS_OPENAT,
            &[at, new_slash.p(), (O_CREAT | O_RDWR) as usize, 0o644],
        ),
        Errno::EISDIR,
    );
    r.err(
        "mkdirat over a file",
        sc(SYS_MKDIRAT, &[at, f, 0o755]),
        Errno::EEXIST,
    );
    r.err(
        "mkdirat over a directory",
        sc(SYS_MKDIRAT, &[at, d, 0o755]),
        Errno::EEXIST,
    );
    r.err(
        "mkdirat file/x",
        sc(SYS_MKDIRAT, &[at, under_file.p(), 0o755]),
        Errno::ENOTDIR,
    );
    r.err(
        "unlinkat a directory",
        sc(SYS_UNLINKAT, &[at, d, 0]),
        Errno::EISDIR,
    );
    r.err(
        "rmdir a file",
        sc(SYS_UNLINKAT, &[at, f, AT_REMOVEDIR as usize]),
        Errno::ENOTDIR,
    );
    r.err(
        "rmdir a non-empty directory",
        sc(SYS_UNLINKAT, &[at, d, AT_REMOVEDIR as usize]),
        Errno::ENOTEMPTY,
    );
    r.err(
        "rmdir file/x",
        sc(SYS_UNLINKAT, &[at, under_file.p(), AT_REMOVEDIR as usize]),
        Errno::ENOTDIR,
    );
    r.err(
        "unlinkat file/ (trailing slash)",
        sc(SYS_UNLINKAT, &[at, file_slash.p(), 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "truncate a directory",
        sc(SYS_TRUNCATE, &[d, 0]),
        Errno::EISDIR,
    );
    r.err("chdir to a file", sc(SYS_CHDIR, &[f]), Errno::ENOTDIR);
    r.err(
        "chdir to file/x",
        sc(SYS_CHDIR, &[under_file.p()]),
        Errno::ENOTDIR,
    );
    r.err(
        "newfstatat file/x",
        sc(SYS_NEWFSTATAT, &[at, under_file.p(), t, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "statfs file/x",
        sc(SYS_STATFS, &[under_file.p(), t]),
        Errno::ENOTDIR,
    );
    r.err(
        "readlinkat a regular file",
        sc(SYS_READLINKAT, &[at, f, t, 64]),
        Errno::EINVAL,
    );
    r.err(
        "readlinkat a directory",
        sc(SYS_READLINKAT, &[at, d, t, 64]),
        Errno::EINVAL,
    );
    r.err(
        "readlinkat a missing name",
        sc(SYS_READLINKAT, &[at, fx.missing.p(), t, 64]),
        Errno::ENOENT,
    );
    r.err(
        "rename a directory over a file",
        sc(SYS_RENAMEAT2, &[at, d, at, f, 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "rename a file over a non-empty directory",
        sc(SYS_RENAMEAT2, &[at, f, at, d, 0]),
        Errno::EISDIR,
    );
    r.err(
        "rename a directory into itself",
        sc(SYS_RENAMEAT2, &[at, d, at, inner.p(), 0]),
        Errno::EINVAL,
    );
    r.err(
        "rename a missing name",
        sc(SYS_RENAMEAT2, &[at, fx.missing.p(), at, inner.p(), 0]),
        Errno::ENOENT,
    );
    r.err(
        "rename to file/x",
        sc(SYS_RENAMEAT2, &[at, d, at, under_file.p(), 0]),
        Errno::ENOTDIR,
    );
    r.err(
        "linkat a directory",
        sc(SYS_LINKAT, &[at, d, at, fx.missing.p(), 0]),
        Errno::EPERM,
    );
    r.err(
        "linkat onto an existing name",
        sc(SYS_LINKAT, &[at, f, at, d, 0]),
        Errno::EEXIST,
    );
    r.err(
        "symlinkat onto an existing name",
        sc(SYS_SYMLINKAT, &[f, at, d]),
        Errno::EEXIST,
    );
    r.err(
        "execve a directory",
        sc(SYS_EXECVE, &[d, 0, 0]),
        Errno::EACCES,
    );
    r.err(
        "execve a missing file",
        sc(SYS_EXECVE, &[fx.missing.p(), 0, 0]),
        Errno::ENOENT,
    );
    r.err(
        "execve file/x",
        sc(SYS_EXECVE, &[under_file.p(), 0, 0]),
        Errno::ENOTDIR,
    );
    // FAT stores no mode bits, so the file looks executable there and its bytes decide.
    let w = if r.fat {
        Want::Either(Errno::EACCES, Errno::ENOEXEC)
    } else {
        Want::Err(Errno::EACCES)
    };
    r.check(
        "execve a non-executable regular file",
        sc(SYS_EXECVE, &[f, 0, 0]),
        w,
    );
    r.check(
        "fcntl F_GETFL of a directory fd",
        sc(SYS_FCNTL, &[fx.dir_fd as usize, 3, 0]),
        Want::Ok,
    );
}

/// Calls that take a child process: done in children so a broken kernel cannot take this
/// process down with a bad exec.
fn processes(r: &mut Runner, m: &mut Mem, self_path: &str) {
    // execve of a real program with a bad argv / envp must fail in the caller (the child reports
    // the errno as its exit status; an exec that went through runs badsys with no arguments,
    // which exits 2).
    let me = CStr::new(self_path);
    let bad_argv = [KERNEL_LOW, 0usize];
    let argv0 = [me.p(), 0usize];
    let cases: [(&str, usize, usize, Errno); 5] = [
        (
            "execve with argv = kernel address",
            KERNEL_LOW,
            0,
            Errno::EFAULT,
        ),
        ("execve with argv = unmapped", m.hole(), 0, Errno::EFAULT),
        (
            "execve with argv[0] = kernel address",
            bad_argv.as_ptr() as usize,
            0,
            Errno::EFAULT,
        ),
        (
            "execve with envp = unmapped",
            argv0.as_ptr() as usize,
            m.hole(),
            Errno::EFAULT,
        ),
        (
            "execve with argv spanning the hole",
            m.tail(8),
            0,
            Errno::EFAULT,
        ),
    ];
    // argv spanning the hole: one valid pointer in the last mapped word, then the hole.
    m.bytes()[2 * PAGE_SIZE - 8..].copy_from_slice(&me.p().to_le_bytes());
    for (name, argv, envp, want) in cases {
        let got = match sys::fork() {
            Ok(0) => {
                let e = sc(SYS_EXECVE, &[me.p(), argv, envp])
                    .err()
                    .map_or(0, |e| e.0);
                sys::exit(e);
            }
            Ok(pid) => match sys::waitpid(pid) {
                Ok((_, st)) if st.exited() && st.exit_code() > 2 => Err(Errno(st.exit_code())),
                Ok((_, st)) => Ok(st.0 as usize),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        r.err(name, got, want);
    }
    // wait4 with a bad status pointer: EFAULT (Linux may reap the child anyway; reap it here).
    for (what, p) in [
        ("kernel address", KERNEL_LOW),
        ("unmapped", m.hole()),
        ("read-only page", m.ro),
    ] {
        match sys::fork() {
            Ok(0) => sys::exit(3),
            Ok(pid) => {
                // Let the child exit first, so wait4 has a status to store.
                let mut spins = 0;
                let got = loop {
                    let g = sc(SYS_WAIT4, &[pid as usize, p, WNOHANG as usize, 0]);
                    if g != Ok(0) || spins > 100_000 {
                        break g;
                    }
                    spins += 1;
                    sys::sched_yield();
                };
                r.err(&format!("wait4 status into {what}"), got, Errno::EFAULT);
                let _ = sys::waitpid(pid);
            }
            Err(e) => r.check("fork", Err(e), Want::Ok),
        }
    }
}

fn main(argv: &[&str]) -> i32 {
    let mut dir = None;
    let mut summary = None;
    let mut r = Runner {
        passed: 0,
        failed: 0,
        verbose: false,
        qemu: false,
        fat: false,
    };
    for &a in argv.iter().skip(1) {
        match a.split_once('=') {
            Some(("summary", v)) => summary = Some(v),
            _ if a == "qemu" => r.qemu = true,
            _ if a == "-v" => r.verbose = true,
            _ => dir = Some(a),
        }
    }
    let Some(dir) = dir else {
        println!("usage: badsys DIR [summary=FILE] [qemu] [-v]");
        return 2;
    };
    r.fat = sys::statfs(dir).is_ok_and(|s| s.f_type == MSDOS_SUPER_MAGIC);
    let fx = match setup(dir, r.fat) {
        Ok(fx) => fx,
        Err(e) => {
            println!("badsys: setting up in {dir}: {}", e.name());
            return 1;
        }
    };
    let mut m = match Mem::new() {
        Ok(m) => m,
        Err(e) => {
            println!("badsys: mmap: {}", e.name());
            return 1;
        }
    };
    println!("badsys: {dir}{}", if r.fat { " (FAT)" } else { "" });
    pointers(&mut r, &mut m, &fx);
    paths(&mut r, &mut m, &fx);
    descriptors(&mut r, &mut m, &fx);
    flags(&mut r, &mut m, &fx);
    types(&mut r, &fx);
    processes(&mut r, &mut m, argv[0]);
    // Still alive and still able to do real work.
    let data: Vec<u8> = (0..100u8).collect();
    let back = sys::pread(fx.fd, &mut [0u8; 100], 0);
    r.check("the fixture file reads back", back, Want::Val(100));
    let mut buf = [0u8; 100];
    let _ = sys::pread(fx.fd, &mut buf, 0);
    r.check(
        "with its contents",
        Ok(usize::from(buf[..] == data[..])),
        Want::Val(1),
    );
    for fd in [fx.fd, fx.ro_fd, fx.dir_fd] {
        let _ = sys::close(fd);
    }
    let cleanup = sys::remove_tree(&fx.dir).map(|_| 0);
    r.check("remove the scratch directory", cleanup, Want::Val(0));
    let line = format!("{} passed, {} failed", r.passed, r.failed);
    println!("{line}");
    if let Some(path) = summary {
        if let Ok(f) = File::create(path) {
            let _ = f.write_all(line.as_bytes());
        }
    }
    r.failed.min(125) as i32
}

user_tests::entry!(main);
