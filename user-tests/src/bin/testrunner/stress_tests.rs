//! What stress-ng (`make stress`, tests/stress) found: the smallest reproducer of each
//! finding. Those that change process state (a resource limit, a signal mask) run in a forked
//! child, whose exit status says what it saw (0: as Linux does; any other number names the
//! first check that failed).

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw;

use crate::{ensure, Check, Ctx, TestResult};

const SIGXFSZ: i32 = 25;
const RLIMIT_FSIZE: usize = 1;
const INF: u64 = u64::MAX;

/// Run `body` in a forked child; its exit status must be 0 (otherwise the number of the
/// failed check is named) or, with `signal`, the child must have died of that signal.
pub fn in_child(what: &str, signal: Option<i32>, body: impl FnOnce() -> i32) -> TestResult {
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        sys::exit(body());
    }
    let (_, st) = sys::waitpid(pid).what("wait4")?;
    match signal {
        None => ensure!(
            st.exited() && st.exit_code() == 0,
            "{what}: the child's status {:#x} (exit code: the failed check's number)",
            st.0
        ),
        Some(s) => ensure!(
            st.signal() == Some(s),
            "{what}: the child's status {:#x}, expected death by signal {s}",
            st.0
        ),
    }
    Ok(())
}

/// prlimit64(0, RLIMIT_FSIZE, new, old).
fn fsize_limit(new: Option<(u64, u64)>) -> Result<(u64, u64), isize> {
    let n = new.map(|(s, h)| [s, h]);
    let mut old = [0u64; 2];
    let np = n.as_ref().map_or(0, |n| n.as_ptr() as usize);
    // SAFETY: `n` (if given) and `old` are 16-byte `struct rlimit64`s.
    let r = unsafe {
        raw::syscall4(
            SYS_PRLIMIT64,
            0,
            RLIMIT_FSIZE,
            np,
            old.as_mut_ptr() as usize,
        )
    };
    if r < 0 {
        return Err(r);
    }
    Ok((old[0], old[1]))
}

/// Is `sig` pending for the caller (rt_sigpending)?
fn pending(sig: i32) -> bool {
    let mut set = 0u64;
    // SAFETY: `set` is an 8-byte sigset.
    unsafe { raw::syscall2(SYS_RT_SIGPENDING, &mut set as *mut u64 as usize, 8) };
    set & (1 << (sig - 1)) != 0
}

fn block(sig: i32) {
    let set: u64 = 1 << (sig - 1);
    // SAFETY: `set` is an 8-byte sigset; no old set is asked for.
    unsafe { raw::syscall4(SYS_RT_SIGPROCMASK, 0, &set as *const u64 as usize, 0, 8) };
}

/// RLIMIT_FSIZE (stress-ng fsize: the limit was not enforced). With a soft limit of 8192: a
/// write crossing it is cut short at it, a write at or past it and a truncate that grows the
/// file past it fail with EFBIG and raise SIGXFSZ; shrinking, and growing to the limit, work.
/// The limit is inherited by fork, and SIGXFSZ's default action ends the process.
pub fn fsize_limit_efbig_sigxfsz(cx: &Ctx) -> TestResult {
    let path = cx.path("fsize");
    in_child("RLIMIT_FSIZE with SIGXFSZ blocked", None, || {
        block(SIGXFSZ);
        if fsize_limit(Some((8192, INF))) != Ok((INF, INF)) {
            return 1;
        }
        if fsize_limit(None) != Ok((8192, INF)) {
            return 2;
        }
        let Ok(f) = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644) else {
            return 3;
        };
        if f.pwrite(&[1u8; 4096], 6144) != Ok(2048) {
            return 4;
        }
        if pending(SIGXFSZ) {
            return 5;
        }
        if f.pwrite(&[1u8; 16], 8192) != Err(Errno::EFBIG) || !pending(SIGXFSZ) {
            return 6;
        }
        if sys::ftruncate(f.fd(), 8193) != Err(Errno::EFBIG) {
            return 7;
        }
        if sys::ftruncate(f.fd(), 100).is_err() || sys::ftruncate(f.fd(), 8192).is_err() {
            return 8;
        }
        // An empty write past the limit is no write at all.
        if f.pwrite(&[], 9000) != Ok(0) {
            return 9;
        }
        // Inherited by a child of this one.
        let Ok(pid) = sys::fork() else { return 10 };
        if pid == 0 {
            sys::exit(if fsize_limit(None) == Ok((8192, INF)) {
                0
            } else {
                1
            });
        }
        match sys::waitpid(pid) {
            Ok((_, st)) if st.exited() && st.exit_code() == 0 => {}
            _ => return 11,
        }
        // A caller without privilege (uid 65534) may lower its hard limit, not raise it.
        // SAFETY: no pointer arguments.
        if unsafe { raw::syscall3(SYS_SETRESUID, 65534, 65534, 65534) } != 0 {
            return 12;
        }
        if fsize_limit(Some((4096, 4096))).is_err() || fsize_limit(Some((4096, 8192))).is_ok() {
            return 13;
        }
        0
    })?;
    in_child("a write past RLIMIT_FSIZE", Some(SIGXFSZ), || {
        if fsize_limit(Some((1024, INF))).is_err() {
            return 1;
        }
        let Ok(f) = File::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644) else {
            return 2;
        };
        let _ = f.pwrite(b"x", 4096);
        3
    })
}

/// readahead(2) (stress-ng readahead: ENOSYS, which it reported as an ftruncate failure): 0 on
/// a file open for reading; EBADF for one open only for writing or a bad descriptor; EINVAL
/// for a pipe.
pub fn readahead_semantics(cx: &Ctx) -> TestResult {
    let readahead = |fd: i32| -> isize {
        // SAFETY: no pointer arguments.
        unsafe { raw::syscall3(SYS_READAHEAD, fd as usize, 0, 4096) }
    };
    let path = cx.path("ra");
    let w = File::open(&path, O_WRONLY | O_CREAT | O_TRUNC, 0o644).what("create")?;
    w.pwrite_all(&[5u8; 8192], 0).what("pwrite")?;
    let r = File::open(&path, O_RDONLY, 0).what("open")?;
    ensure!(
        readahead(r.fd()) == 0,
        "readahead of a readable file: {}",
        readahead(r.fd())
    );
    let e = readahead(w.fd());
    ensure!(
        e == -(Errno::EBADF.0 as isize),
        "readahead of an O_WRONLY file: {e}"
    );
    let e = readahead(999);
    ensure!(
        e == -(Errno::EBADF.0 as isize),
        "readahead of a bad descriptor: {e}"
    );
    let (pr, pw) = sys::pipe2(0).what("pipe2")?;
    let e = readahead(pr);
    ensure!(e == -(Errno::EINVAL.0 as isize), "readahead of a pipe: {e}");
    let _ = sys::close(pr);
    let _ = sys::close(pw);
    Ok(())
}

const SIGSEGV: i32 = 11;

extern "C" fn segv_handler(_sig: i32) {
    sys::exit(2);
}

/// A fault whose signal is blocked kills the process by that signal even with a handler
/// installed: Linux resets the action to the default (stress-ng vm-segv blocks SIGSEGV and
/// unmaps its own code; the kernel unblocked the signal but kept the handler, so a handler
/// that faults again looped for ever, and this one ran).
pub fn blocked_fault_signal_kills(_cx: &Ctx) -> TestResult {
    in_child(
        "a load from address 16 with SIGSEGV blocked and handled",
        Some(SIGSEGV),
        || {
            let act: [u64; 3] = [segv_handler as extern "C" fn(i32) as usize as u64, 0, 0];
            if sys::rt_sigaction_raw(SIGSEGV, Some(&act), None).is_err() {
                return 1;
            }
            block(SIGSEGV);
            // SAFETY: none: the load faults on purpose (nothing is mapped in the first page).
            let v = unsafe { core::ptr::read_volatile(16 as *const u8) };
            3 + i32::from(v)
        },
    )
}

/// What the fault handler must find: signo, si_code, si_addr.
static FAULT_WANT: [core::sync::atomic::AtomicU64; 3] = [
    core::sync::atomic::AtomicU64::new(0),
    core::sync::atomic::AtomicU64::new(0),
    core::sync::atomic::AtomicU64::new(0),
];

/// An SA_SIGINFO handler that compares the fault's siginfo with FAULT_WANT and exits: 0 when
/// all match, 10 for another signal, 100 + si_code for another code (SI_KERNEL: 228), 30 for
/// another address.
extern "C" fn fault_info_handler(_sig: i32, info: *const u8, _uc: *const u8) {
    use core::sync::atomic::Ordering::SeqCst;
    // SAFETY: the kernel passes a readable 128-byte siginfo_t to an SA_SIGINFO handler.
    let b = unsafe { &*(info as *const [u8; 128]) };
    let signo = i32::from_ne_bytes(b[0..4].try_into().unwrap());
    let code = i32::from_ne_bytes(b[8..12].try_into().unwrap());
    let addr = u64::from_ne_bytes(b[16..24].try_into().unwrap());
    let r = if signo as u64 != FAULT_WANT[0].load(SeqCst) {
        10
    } else if code as u64 != FAULT_WANT[1].load(SeqCst) {
        100 + code.clamp(0, 150)
    } else if addr != FAULT_WANT[2].load(SeqCst) {
        30
    } else {
        0
    };
    sys::exit(r);
}

/// In a child: handle `sig` with `fault_info_handler`, expect `code` at `addr` (set by
/// `fault` itself when it is 0), and run `fault`, which must not return.
fn expect_fault(what: &str, sig: i32, code: u64, addr: u64, fault: impl FnOnce()) -> TestResult {
    use core::sync::atomic::Ordering::SeqCst;
    in_child(what, None, || {
        const SA_SIGINFO: u64 = 4;
        let act: [u64; 3] = [
            fault_info_handler as extern "C" fn(i32, *const u8, *const u8) as usize as u64,
            SA_SIGINFO,
            0,
        ];
        if sys::rt_sigaction_raw(sig, Some(&act), None).is_err() {
            return 1;
        }
        FAULT_WANT[0].store(sig as u64, SeqCst);
        FAULT_WANT[1].store(code, SeqCst);
        FAULT_WANT[2].store(addr, SeqCst);
        fault();
        2
    })
}

/// A fault's signal carries Linux's si_code and si_addr (stress-ng's sigbus and sigill
/// stressors check them; the kernel sent SI_KERNEL and no address): SEGV_MAPERR at an
/// unmapped address, SEGV_ACCERR for a store to a read-only page, BUS_ADRERR past a mapped
/// file's end, ILL_ILLOPC and TRAP_BRKPT at the instruction's address.
pub fn fault_siginfo_codes(cx: &Ctx) -> TestResult {
    const SIGILL: i32 = 4;
    const SIGTRAP: i32 = 5;
    const SIGBUS: i32 = 7;
    expect_fault(
        "a load from address 16: SEGV_MAPERR",
        SIGSEGV,
        1,
        16,
        || {
            // SAFETY: none: the load faults on purpose (nothing is mapped in the first page).
            let _ = unsafe { core::ptr::read_volatile(16 as *const u8) };
        },
    )?;
    let ro = sys::mmap(0, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0).what("mmap")?;
    let at = ro.addr() + 8;
    expect_fault(
        "a store to a read-only page: SEGV_ACCERR",
        SIGSEGV,
        2,
        at as u64,
        || {
            // SAFETY: none: the store faults on purpose (the page is read-only).
            unsafe { core::ptr::write_volatile(at as *mut u8, 1) };
        },
    )?;
    drop(ro);
    let f = File::open(&cx.path("bus"), O_RDWR | O_CREAT | O_TRUNC, 0o644).what("create")?;
    f.pwrite_all(&[7u8; 100], 0).what("pwrite")?;
    let m = sys::mmap(0, 3 * 4096, PROT_READ, MAP_SHARED, f.fd(), 0).what("mmap")?;
    let past = m.addr() + 2 * 4096 + 5;
    expect_fault(
        "a load past the file's end: BUS_ADRERR",
        SIGBUS,
        2,
        past as u64,
        || {
            // SAFETY: none: the load faults on purpose (past the end of the file).
            let _ = unsafe { core::ptr::read_volatile(past as *const u8) };
        },
    )?;
    drop(m);
    expect_fault("an all-zero instruction: ILL_ILLOPC", SIGILL, 1, 0, || {
        trap_at!(".4byte 0")
    })?;
    expect_fault("ebreak: TRAP_BRKPT", SIGTRAP, 1, 0, || trap_at!("ebreak"))
}

/// Store the address of the instruction `$insn` in FAULT_WANT[2], then run it (it traps; the
/// handler exits, so this never returns).
macro_rules! trap_at {
    ($insn:literal) => {
        // SAFETY: the instruction's address goes to FAULT_WANT[2], then it traps.
        unsafe {
            core::arch::asm!(
                "la {t}, 2f",
                "sd {t}, 0({want})",
                concat!("2: ", $insn),
                t = out(reg) _,
                want = in(reg) FAULT_WANT[2].as_ptr(),
            )
        }
    };
}
use trap_at;

fn path_call(nr: usize, path: &str) -> isize {
    let mut p = Vec::from(path.as_bytes());
    p.push(0);
    // SAFETY: `p` is a NUL-terminated path.
    unsafe { raw::syscall1(nr, p.as_ptr() as usize) }
}

fn getcwd() -> String {
    let mut b = [0u8; 512];
    // SAFETY: `b` is 512 writable bytes.
    let n = unsafe { raw::syscall2(SYS_GETCWD, b.as_mut_ptr() as usize, b.len()) };
    if n <= 0 {
        return format!("getcwd failed: {n}");
    }
    String::from_utf8_lossy(&b[..n as usize - 1]).into_owned()
}

/// chroot (stress-ng's chroot stressor found it ENOSYS): absolute paths start at the new
/// root, `..` stops there, an absolute symbolic link resolves inside it, getcwd names the
/// cwd below it (or "(unreachable)" and its whole path when it was left outside), files
/// outside are out of reach; chroot of a file is ENOTDIR, of nothing ENOENT, and EPERM
/// without CAP_SYS_CHROOT. Each case runs in a child: a root cannot be given back.
pub fn chroot_semantics(cx: &Ctx) -> TestResult {
    let jail = cx.path("jail");
    sys::mkdir(&jail, 0o755).what("mkdir jail")?;
    sys::mkdir(&format!("{jail}/sub"), 0o755).what("mkdir jail/sub")?;
    crate::put_file(&format!("{jail}/inside"), b"in")?;
    crate::put_file(&cx.path("outside"), b"out")?;
    let symlinks = !cx.fat;
    if symlinks {
        sys::symlink("/inside", &format!("{jail}/abs")).what("symlink")?;
    }
    let inside = |path: &str| crate::get_file(path).ok().as_deref() == Some(&b"in"[..]);
    let (jail2, outside) = (jail.clone(), cx.path("outside"));
    in_child("chroot, then inside it", None, move || {
        if path_call(SYS_CHDIR, &format!("{jail2}/sub")) != 0 {
            return 1;
        }
        if path_call(SYS_CHROOT, &jail2) != 0 {
            return 2;
        }
        if getcwd() != "/sub" {
            return 3;
        }
        if !inside("/inside") || !inside("../inside") || !inside("/../../inside") {
            return 4;
        }
        if symlinks && !inside("/abs") {
            return 5;
        }
        if crate::get_file(&outside).is_ok() || path_call(SYS_CHDIR, "/..") != 0 {
            return 6;
        }
        if getcwd() != "/" {
            return 7;
        }
        0
    })?;
    let jail3 = jail.clone();
    let dir = cx.dir.clone();
    in_child("chroot with the cwd left outside", None, move || {
        if path_call(SYS_CHDIR, &dir) != 0 || path_call(SYS_CHROOT, &jail3) != 0 {
            return 1;
        }
        if getcwd() != format!("(unreachable){dir}") {
            return 2;
        }
        // Relative paths still start at the cwd.
        if crate::get_file("outside").ok().as_deref() != Some(&b"out"[..]) {
            return 3;
        }
        0
    })?;
    let e = path_call(SYS_CHROOT, &cx.path("outside"));
    ensure!(e == -(Errno::ENOTDIR.0 as isize), "chroot of a file: {e}");
    let e = path_call(SYS_CHROOT, &cx.path("missing"));
    ensure!(e == -(Errno::ENOENT.0 as isize), "chroot of nothing: {e}");
    let jail4 = jail.clone();
    in_child("chroot as uid 65534", None, move || {
        // SAFETY: no pointer arguments.
        if unsafe { raw::syscall3(SYS_SETRESUID, 65534, 65534, 65534) } != 0 {
            return 1;
        }
        let e = path_call(SYS_CHROOT, &jail4);
        if e != -(Errno::EPERM.0 as isize) {
            return 2;
        }
        0
    })
}
