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
pub(crate) fn in_child(what: &str, signal: Option<i32>, body: impl FnOnce() -> i32) -> TestResult {
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
