//! `apptest DIR...`: what sqlite and fio need from the kernel beyond plain file I/O.
//!
//! - POSIX record locks (`fcntl F_GETLK / F_SETLK / F_SETLKW`) on a file in each DIR, between
//!   a parent and a forked child: a conflict is EAGAIN, F_GETLK names the holder and its
//!   (merged) range, a process replaces and splits its own locks, read locks share, closing
//!   *any* descriptor of the file drops the process's locks, exit drops them, F_SETLKW waits
//!   until the holder unlocks, a wait that would deadlock is EDEADLK, and bad requests get
//!   Linux's errno.
//! - Shared anonymous memory (`MAP_SHARED | MAP_ANONYMOUS`): pages written by a child after
//!   fork (also pages nobody had touched before the fork) are seen by the parent and the
//!   reverse, while a private mapping stays private.
//! - System V shared memory (what fio keeps its job table in): a segment from `shmget`, attached
//!   with `shmat`, is shared with a forked child, stays usable after `IPC_RMID`, `IPC_STAT`
//!   reports its size, `shmdt` unmaps it, and bad ids and addresses get EINVAL.
//! - Futexes between processes (glibc's process-shared mutexes and condition variables): a
//!   child sleeps in `FUTEX_WAIT` on a word of shared memory until the parent's `FUTEX_WAKE`;
//!   a changed word is EAGAIN, a timeout ETIMEDOUT.
//! - Nice values: `setpriority` / `getpriority` (fio calls `nice`).
//!
//! Prints one line per check and `N passed, N failed`; the exit status is the number of
//! failures. Runs unchanged on Linux (e.g. under `qemu-riscv64` in a scratch directory).
#![no_std]
#![no_main]

use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall2, syscall3, syscall4};
use user_tests::sys::AnonMap;
use user_tests::Report;

fn flock(l_type: i16, start: i64, len: i64) -> Flock {
    Flock {
        l_type,
        l_whence: SEEK_SET as i16,
        l_start: start,
        l_len: len,
        l_pid: 0,
    }
}

fn setlk(fd: i32, l_type: i16, start: i64, len: i64) -> SysResult<()> {
    sys::fcntl_lock(fd, F_SETLK, &mut flock(l_type, start, len))
}

fn setlkw(fd: i32, l_type: i16, start: i64, len: i64) -> SysResult<()> {
    sys::fcntl_lock(fd, F_SETLKW, &mut flock(l_type, start, len))
}

/// F_GETLK for a write lock on `start..start+len`: the conflicting lock, if any.
fn getlk(fd: i32, start: i64, len: i64) -> SysResult<Option<Flock>> {
    let mut l = flock(F_WRLCK, start, len);
    sys::fcntl_lock(fd, F_GETLK, &mut l)?;
    Ok((l.l_type != F_UNLCK).then_some(l))
}

/// Run `f` in a child with its own descriptor of `path`; the child's exit status is the
/// number of its checks that failed (each printed).
fn in_child(path: &str, f: impl FnOnce(i32) -> Vec<(&'static str, bool)>) -> i32 {
    match sys::fork() {
        Ok(0) => {
            let fd = match sys::open(path, O_RDWR, 0) {
                Ok(fd) => fd,
                Err(_) => sys::exit(100),
            };
            let mut bad = 0;
            for (what, ok) in f(fd) {
                if !ok {
                    println!("      child: {what} failed");
                    bad += 1;
                }
            }
            sys::exit(bad)
        }
        Ok(pid) => pid,
        Err(_) => -1,
    }
}

fn child_ok(pid: i32) -> bool {
    pid > 0 && matches!(sys::waitpid(pid), Ok((_, st)) if st.exited() && st.exit_code() == 0)
}

fn yield_a_while() {
    for _ in 0..50 {
        sys::sched_yield();
    }
}

/// Yield until `cond` holds or `secs` seconds passed (a child on another hart may need more
/// than [`yield_a_while`] to get somewhere); whether it holds.
fn yield_until(secs: i64, mut cond: impl FnMut() -> bool) -> bool {
    let now = || sys::clock_gettime(1).map_or(0, |t| t.tv_sec);
    let end = now() + secs;
    while !cond() {
        if now() > end {
            return false;
        }
        sys::sched_yield();
    }
    true
}

/// The state letter of process `pid` in /proc/PID/stat (`S` while it sleeps), if readable.
fn proc_state(pid: i32) -> Option<u8> {
    let fd = sys::open(&format!("/proc/{pid}/stat"), O_RDONLY, 0).ok()?;
    let mut buf = [0u8; 256];
    let n = sys::read(fd, &mut buf).unwrap_or(0);
    let _ = sys::close(fd);
    // "PID (COMM) S ...": the state follows the last ')'.
    let close = buf[..n].iter().rposition(|&b| b == b')')?;
    buf.get(close + 2).copied()
}

fn locks(r: &mut Report, dir: &str) -> SysResult<()> {
    let path = user_tests::path_join(dir, "apptest-locks");
    let _ = sys::unlink(&path);
    let fd = sys::open(&path, O_RDWR | O_CREAT | O_TRUNC, 0o644)?;
    let me = sys::getpid();

    r.check(
        setlk(fd, F_WRLCK, 0, 100).is_ok(),
        "F_SETLK write lock on bytes 0..100",
    );
    let c = in_child(&path, |fd| {
        let got = getlk(fd, 0, 1);
        vec![
            (
                "write lock inside is EAGAIN",
                setlk(fd, F_WRLCK, 50, 10) == Err(Errno::EAGAIN),
            ),
            (
                "read lock inside is EAGAIN",
                setlk(fd, F_RDLCK, 99, 1) == Err(Errno::EAGAIN),
            ),
            (
                "F_GETLK names the holder and its range",
                matches!(got, Ok(Some(l)) if l.l_type == F_WRLCK && l.l_start == 0
                    && l.l_len == 100 && l.l_pid == me),
            ),
            (
                "a lock after the range is granted",
                setlk(fd, F_WRLCK, 100, 0).is_ok(),
            ),
        ]
    });
    r.check(
        child_ok(c),
        "another process: conflicts EAGAIN, F_GETLK, disjoint range granted",
    );

    // Downgrade the middle to a read lock: a split into write / read / write.
    r.check(
        setlk(fd, F_RDLCK, 40, 20).is_ok(),
        "replace own bytes 40..60 with a read lock",
    );
    let c = in_child(&path, |fd| {
        vec![
            (
                "read lock in the read part",
                setlk(fd, F_RDLCK, 45, 5).is_ok(),
            ),
            (
                "write lock in the read part is EAGAIN",
                setlk(fd, F_WRLCK, 45, 5) == Err(Errno::EAGAIN),
            ),
            (
                "read lock in a write part is EAGAIN",
                setlk(fd, F_RDLCK, 0, 1) == Err(Errno::EAGAIN),
            ),
            (
                "F_GETLK reports the split range 60..100",
                matches!(getlk(fd, 70, 1), Ok(Some(l)) if l.l_start == 60 && l.l_len == 40),
            ),
        ]
    });
    r.check(
        child_ok(c),
        "split lock: read part shared, write parts exclusive",
    );

    // Unlock the middle, then back to one write lock: merged again.
    r.check(setlk(fd, F_UNLCK, 40, 20).is_ok(), "unlock bytes 40..60");
    r.check(
        setlk(fd, F_WRLCK, 40, 20).is_ok(),
        "write-lock 40..60 again",
    );
    let c = in_child(&path, |fd| {
        vec![(
            "F_GETLK reports the merged range 0..100",
            matches!(getlk(fd, 0, 0), Ok(Some(l)) if l.l_start == 0 && l.l_len == 100),
        )]
    });
    r.check(child_ok(c), "touching locks of one type merge");

    // Closing another descriptor of the same file drops every lock of this process on it.
    let other = sys::open(&path, O_RDONLY, 0)?;
    sys::close(other)?;
    let c = in_child(&path, |fd| {
        vec![
            ("nothing conflicts", matches!(getlk(fd, 0, 0), Ok(None))),
            ("whole-file write lock", setlk(fd, F_WRLCK, 0, 0).is_ok()),
        ]
    });
    r.check(
        child_ok(c),
        "close of any descriptor of the file releases the locks",
    );
    r.check(
        setlk(fd, F_WRLCK, 0, 0).is_ok(),
        "the exited child's locks are gone",
    );

    // F_SETLKW waits until the holder unlocks.
    let c = in_child(&path, |fd| {
        vec![("F_SETLKW granted", setlkw(fd, F_WRLCK, 10, 1).is_ok())]
    });
    yield_a_while();
    let waiting = matches!(sys::wait4(c, WNOHANG), Ok((0, _)));
    r.check(waiting, "F_SETLKW sleeps while the lock is held");
    r.check(setlk(fd, F_UNLCK, 0, 0).is_ok(), "unlock wakes it");
    r.check(child_ok(c), "the waiter gets the lock");

    // Deadlock: this process holds byte 0 and waits for byte 1, which the child holds while
    // it waits for byte 0.
    r.check(setlk(fd, F_WRLCK, 0, 1).is_ok(), "lock byte 0");
    let c = in_child(&path, |fd| {
        let b1 = setlk(fd, F_WRLCK, 1, 1).is_ok();
        vec![
            ("lock byte 1", b1),
            (
                "F_SETLKW on byte 0 granted",
                setlkw(fd, F_WRLCK, 0, 1).is_ok(),
            ),
        ]
    });
    r.check(
        yield_until(
            10,
            || matches!(getlk(fd, 1, 1), Ok(Some(l)) if l.l_pid == c),
        ),
        "the child holds byte 1",
    );
    // The cycle exists only once the child sleeps in its F_SETLKW on byte 0; before that,
    // ours would simply wait and the child's request would be the one to close the cycle.
    r.check(
        yield_until(10, || proc_state(c) == Some(b'S')),
        "the child sleeps in F_SETLKW on byte 0",
    );
    r.check(
        setlkw(fd, F_WRLCK, 1, 1) == Err(Errno::EDEADLK),
        "a waiting cycle is EDEADLK",
    );
    r.check(setlk(fd, F_UNLCK, 0, 1).is_ok(), "unlock byte 0");
    r.check(child_ok(c), "the child's wait ends with the lock");

    // Errors.
    let ro = sys::open(&path, O_RDONLY, 0)?;
    r.check(
        setlk(ro, F_WRLCK, 0, 1) == Err(Errno::EBADF),
        "write lock on a read-only descriptor: EBADF",
    );
    r.check(
        setlk(ro, F_RDLCK, 0, 1).is_ok(),
        "read lock on a read-only descriptor",
    );
    r.check(
        setlk(fd, 7, 0, 1) == Err(Errno::EINVAL),
        "bad l_type: EINVAL",
    );
    r.check(
        setlk(fd, F_WRLCK, -1, 1) == Err(Errno::EINVAL),
        "negative start: EINVAL",
    );
    r.check(
        setlk(fd, F_WRLCK, 5, -10) == Err(Errno::EINVAL),
        "length reaching before 0: EINVAL",
    );
    let mut l = flock(F_UNLCK, 0, 1);
    r.check(
        sys::fcntl_lock(fd, F_GETLK, &mut l) == Err(Errno::EINVAL),
        "F_GETLK of F_UNLCK: EINVAL",
    );
    r.check(
        setlk(99, F_WRLCK, 0, 1) == Err(Errno::EBADF),
        "bad descriptor: EBADF",
    );
    sys::close(ro)?;
    sys::close(fd)?;
    sys::unlink(&path)?;
    Ok(())
}

fn shared_memory(r: &mut Report) -> SysResult<()> {
    const PAGE: usize = 4096;
    let mut shared = AnonMap::new_shared(3 * PAGE)?;
    let mut private = AnonMap::new(PAGE)?;
    shared.as_mut_slice()[0] = 1;
    private.as_mut_slice()[0] = 1;
    match sys::fork()? {
        0 => {
            let s = shared.as_mut_slice();
            let ok = s[0] == 1 && private.as_mut_slice()[0] == 1;
            s[0] = 2;
            s[PAGE] = 3; // untouched before the fork
            s[2 * PAGE + 7] = 4;
            private.as_mut_slice()[0] = 9;
            sys::exit(if ok { 0 } else { 1 })
        }
        pid => {
            let inherited = child_ok(pid);
            r.check(inherited, "the child sees the memory as it was at fork");
            let s = shared.as_mut_slice();
            r.check(
                s[0] == 2,
                "a shared page written by the child is seen by the parent",
            );
            r.check(
                s[PAGE] == 3 && s[2 * PAGE + 7] == 4,
                "pages first touched by the child after fork are shared too",
            );
            r.check(
                private.as_mut_slice()[0] == 1,
                "a private page stays private",
            );
        }
    }
    // The other way round: the parent writes after the fork, the child sees it.
    let mut flag = AnonMap::new_shared(PAGE)?;
    match sys::fork()? {
        0 => {
            let f = flag.as_mut_slice();
            let p = f.as_ptr();
            for _ in 0..10_000 {
                // SAFETY: `p` points into the live mapping; volatile so the load is repeated.
                if unsafe { core::ptr::read_volatile(p) } == 7 {
                    sys::exit(0);
                }
                sys::sched_yield();
            }
            sys::exit(1)
        }
        pid => {
            let f = flag.as_mut_slice();
            // SAFETY: `f` is the live mapping; volatile so the store happens now.
            unsafe { core::ptr::write_volatile(f.as_mut_ptr(), 7) };
            r.check(
                child_ok(pid),
                "the parent's write after fork reaches the child",
            );
        }
    }
    Ok(())
}

fn ret(r: isize) -> SysResult<usize> {
    Errno::from_ret(r)
}

fn sysv_shm(r: &mut Report) -> SysResult<()> {
    use abi::syscall::{SYS_SHMAT, SYS_SHMCTL, SYS_SHMDT, SYS_SHMGET};
    const IPC_RMID: usize = 0;
    const IPC_STAT: usize = 2;
    const SIZE: usize = 3 * 4096 + 100;
    // SAFETY: no pointer arguments.
    let id = ret(unsafe { syscall3(SYS_SHMGET, 0, SIZE, 0o600) })?;
    // SAFETY: address 0: the kernel picks a free range; nothing of ours is there.
    let addr = ret(unsafe { syscall3(SYS_SHMAT, id, 0, 0) })?;
    let mut ds = [0u8; 112];
    // SAFETY: `ds` is valid for writes of its 112 bytes (struct shmid64_ds).
    let st = ret(unsafe { syscall3(SYS_SHMCTL, id, IPC_STAT, ds.as_mut_ptr() as usize) });
    let segsz = u64::from_le_bytes(ds[48..56].try_into().unwrap_or([0; 8]));
    r.check(
        st.is_ok() && segsz == SIZE as u64,
        "IPC_STAT reports the segment's size",
    );
    // SAFETY: no pointer arguments.
    let rm = ret(unsafe { syscall3(SYS_SHMCTL, id, IPC_RMID, 0) });
    r.check(rm.is_ok(), "IPC_RMID right after attaching (as fio does)");
    // SAFETY: `addr` maps SIZE bytes, readable and writable, until shmdt below.
    let seg = unsafe { core::slice::from_raw_parts_mut(addr as *mut u8, SIZE) };
    seg[0] = 5;
    match sys::fork()? {
        0 => {
            let ok = seg[0] == 5;
            seg[0] = 6;
            seg[SIZE - 1] = 7;
            sys::exit(if ok { 0 } else { 1 })
        }
        pid => {
            r.check(child_ok(pid), "the child sees the segment's contents");
            r.check(
                seg[0] == 6 && seg[SIZE - 1] == 7,
                "the child's writes reach the parent",
            );
        }
    }
    // SAFETY: `seg` is not used after this.
    r.check(ret(unsafe { syscall1(SYS_SHMDT, addr) }).is_ok(), "shmdt");
    // SAFETY: the same address, now unmapped: only the answer is looked at.
    r.check(
        ret(unsafe { syscall1(SYS_SHMDT, addr) }) == Err(Errno::EINVAL),
        "shmdt again: EINVAL",
    );
    // SAFETY: no pointer arguments (a removed id).
    r.check(
        ret(unsafe { syscall3(SYS_SHMAT, id, 0, 0) }) == Err(Errno::EINVAL),
        "shmat of a removed id: EINVAL",
    );
    // SAFETY: no pointer arguments.
    r.check(
        ret(unsafe { syscall3(SYS_SHMGET, 0, 0, 0o600) }) == Err(Errno::EINVAL),
        "size 0: EINVAL",
    );
    // SAFETY: no pointer arguments.
    r.check(
        ret(unsafe { syscall3(SYS_SHMGET, 0x5eed, 4096, 0o600) }) == Err(Errno::ENOENT),
        "unknown key without IPC_CREAT: ENOENT",
    );
    Ok(())
}

fn futex(r: &mut Report) -> SysResult<()> {
    use abi::syscall::SYS_FUTEX;
    const FUTEX_WAIT: usize = 0;
    const FUTEX_WAKE: usize = 1;
    let mut shared = AnonMap::new_shared(4096)?;
    let word = shared.as_mut_slice().as_mut_ptr() as usize;
    let word2 = word + 64;
    match sys::fork()? {
        0 => {
            // SAFETY: `word` is a 4-byte aligned word of the live shared mapping.
            let w = unsafe { syscall4(SYS_FUTEX, word, FUTEX_WAIT, 0, 0) };
            // SAFETY: as above; the parent set the word to 1 before waking.
            let v = unsafe { core::ptr::read_volatile(word as *const u32) };
            // Tell the parent we are past the wait.
            // SAFETY: as above, another word of the mapping.
            unsafe { core::ptr::write_volatile(word2 as *mut u32, 1) };
            sys::exit(if (w == 0 || w == -(Errno::EAGAIN.0 as isize)) && v == 1 {
                0
            } else {
                1
            })
        }
        pid => {
            // On another hart the child may take longer than a few yields to reach its wait:
            // wait until it sleeps (the futex wait is the only place it can).
            let asleep = yield_until(10, || proc_state(pid) == Some(b'S'));
            r.check(asleep, "the child sleeps in FUTEX_WAIT");
            // SAFETY: the mapping is live; volatile so the child sees it now.
            let past = unsafe { core::ptr::read_volatile(word2 as *const u32) };
            r.check(past == 0, "FUTEX_WAIT sleeps while the word is unchanged");
            // SAFETY: as above.
            unsafe { core::ptr::write_volatile(word as *mut u32, 1) };
            // SAFETY: `word` is an aligned word of the mapping.
            let woken = unsafe { syscall3(SYS_FUTEX, word, FUTEX_WAKE, 1) };
            r.check(
                woken == 1,
                "FUTEX_WAKE wakes the child sleeping in another process",
            );
            r.check(child_ok(pid), "the child saw the new value after its wait");
        }
    }
    // SAFETY: the word holds 1, not 0: the call returns at once.
    let e = unsafe { syscall4(SYS_FUTEX, word, FUTEX_WAIT, 0, 0) };
    r.check(
        e == -(Errno::EAGAIN.0 as isize),
        "FUTEX_WAIT on a changed word: EAGAIN",
    );
    let ts = Timespec {
        tv_sec: 0,
        tv_nsec: 20_000_000,
    }
    .as_bytes();
    // SAFETY: `ts` is a valid timespec for the duration of the call.
    let e = unsafe { syscall4(SYS_FUTEX, word, FUTEX_WAIT, 1, ts.as_ptr() as usize) };
    r.check(
        e == -(Errno::ETIMEDOUT.0 as isize),
        "FUTEX_WAIT with a timeout: ETIMEDOUT",
    );
    // SAFETY: a misaligned address: refused before it is touched.
    let e = unsafe { syscall3(SYS_FUTEX, word + 1, FUTEX_WAKE, 1) };
    r.check(e == -(Errno::EINVAL.0 as isize), "misaligned futex: EINVAL");
    Ok(())
}

fn priority(r: &mut Report) {
    use abi::syscall::{SYS_GETPRIORITY, SYS_SETPRIORITY};
    // SAFETY: no pointer arguments.
    let before = unsafe { syscall2(SYS_GETPRIORITY, 0, 0) };
    r.check(before == 20, "getpriority: nice 0 (as 20 - nice)");
    // SAFETY: no pointer arguments.
    let set = unsafe { syscall3(SYS_SETPRIORITY, 0, 0, 5) };
    // SAFETY: no pointer arguments.
    let after = unsafe { syscall2(SYS_GETPRIORITY, 0, 0) };
    r.check(set == 0 && after == 15, "setpriority to nice 5");
    // SAFETY: no pointer arguments (root may lower it again).
    unsafe { syscall3(SYS_SETPRIORITY, 0, 0, 0) };
    // SAFETY: no pointer arguments.
    let bad = unsafe { syscall2(SYS_GETPRIORITY, 7, 0) };
    r.check(
        bad == -(Errno::EINVAL.0 as isize),
        "getpriority with a bad `which`: EINVAL",
    );
}

fn main(argv: &[&str]) -> i32 {
    let mut r = Report::default();
    let dirs: Vec<&str> = argv.iter().skip(1).copied().collect();
    for dir in if dirs.is_empty() { vec!["/dbfs"] } else { dirs } {
        println!("== record locks on {dir}");
        if let Err(e) = locks(&mut r, dir) {
            r.check(false, &format!("lock test on {dir} stopped: {}", e.name()));
        }
    }
    println!("== shared anonymous memory");
    if let Err(e) = shared_memory(&mut r) {
        r.check(false, &format!("shared memory test stopped: {}", e.name()));
    }
    println!("== System V shared memory");
    if let Err(e) = sysv_shm(&mut r) {
        r.check(
            false,
            &format!("System V shared memory test stopped: {}", e.name()),
        );
    }
    println!("== futexes between processes");
    if let Err(e) = futex(&mut r) {
        r.check(false, &format!("futex test stopped: {}", e.name()));
    }
    println!("== nice values");
    priority(&mut r);
    println!("{} passed, {} failed", r.passed, r.failed);
    r.failed as i32
}
user_tests::entry!(main);
