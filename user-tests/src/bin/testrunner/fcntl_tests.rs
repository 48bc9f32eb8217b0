//! fcntl's owners and leases, open file description locks, packet pipes and the madvise
//! marks fork reads: OFD locks belong to the description (a second open conflicts, a dup
//! shares, the last close releases, F_OFD_GETLK's l_pid is -1); O_ASYNC on a pipe's read end
//! sends F_SETSIG's signal with the descriptor and POLL_IN; a lease is broken by a
//! conflicting open (EWOULDBLOCK with O_NONBLOCK, SIGIO to the holder, the opener waits
//! until it is given up); pipe2(O_DIRECT) reads one write at a time; MADV_WIPEONFORK and
//! MADV_DONTFORK change what a child gets; /dev/zero maps as anonymous memory with a file's
//! access rules; job control's stop and continue reach the parent.

use user_tests::abi::fcntl::{Flock, F_RDLCK, F_UNLCK, F_WRLCK};
use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::raw::{syscall1, syscall3};
use user_tests::sys::Fd;

use crate::anonfd_tests::ret;
use crate::sigqueue_tests::{wait, with_blocked};
use crate::stress_tests::in_child;
use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const F_SETLK: u32 = 6;
const F_SETOWN: usize = 8;
const F_SETSIG: usize = 10;
const F_GETSIG: usize = 11;
const F_GETOWN_EX: usize = 16;
const F_SETLEASE: usize = 1024;
const F_GETLEASE: usize = 1025;
const F_OFD_GETLK: u32 = 36;
const F_OFD_SETLK: u32 = 37;
const F_GETFL: usize = 3;
const F_SETFL: usize = 4;
const O_ASYNC: usize = 0o20000;
const O_DIRECT: u32 = 0o40000;
const SIGIO: usize = 29;
const SIGUSR1: usize = 10;
const POLL_IN: i32 = 1;
const MADV_DONTFORK: u32 = 10;
const MADV_WIPEONFORK: u32 = 18;
const MADV_KEEPONFORK: u32 = 19;

fn fcntl(fd: Fd, cmd: usize, arg: usize) -> SysResult<usize> {
    // SAFETY: the commands used here take an integer, or a pointer the caller owns.
    ret(unsafe { syscall3(SYS_FCNTL, fd as usize, cmd, arg) })
}

fn lock(l_type: i16, len: i64) -> Flock {
    Flock {
        l_type,
        l_whence: 0,
        l_start: 0,
        l_len: len,
        l_pid: 0,
    }
}

pub fn ofd_locks_belong_to_the_description(cx: &Ctx) -> TestResult {
    let path = cx.path("locked");
    let a = sys::open(&path, O_RDWR | O_CREAT, 0o644).what("open a")?;
    let b = sys::open(&path, O_RDWR, 0).what("open b")?;
    sys::fcntl_lock(a, F_OFD_SETLK, &mut lock(F_WRLCK, 10)).what("F_OFD_SETLK through a")?;
    // The same process and thread, another description: a conflict.
    expect_errno(
        sys::fcntl_lock(b, F_OFD_SETLK, &mut lock(F_RDLCK, 1)),
        Errno::EAGAIN,
        "F_OFD_SETLK through b",
    )?;
    // A POSIX lock of this very process conflicts with it as well.
    expect_errno(
        sys::fcntl_lock(b, F_SETLK, &mut lock(F_WRLCK, 1)),
        Errno::EAGAIN,
        "F_SETLK through b",
    )?;
    let mut q = lock(F_RDLCK, 0);
    sys::fcntl_lock(b, F_OFD_GETLK, &mut q).what("F_OFD_GETLK")?;
    ensure!(
        q.l_type == F_WRLCK && q.l_len == 10 && q.l_pid == -1,
        "F_OFD_GETLK reported type {} len {} pid {}, expected the write lock, 10, -1",
        q.l_type,
        q.l_len,
        q.l_pid
    );
    let mut asked = lock(F_RDLCK, 1);
    asked.l_pid = 1;
    expect_errno(
        sys::fcntl_lock(b, F_OFD_SETLK, &mut asked),
        Errno::EINVAL,
        "F_OFD_SETLK with l_pid 1",
    )?;
    // A dup shares the description: closing it leaves the lock (a POSIX lock would go).
    // SAFETY: no pointer arguments.
    let d = ret(unsafe { syscall1(SYS_DUP, a as usize) }).what("dup")? as Fd;
    sys::close(d).what("close the dup")?;
    expect_errno(
        sys::fcntl_lock(b, F_OFD_SETLK, &mut lock(F_RDLCK, 1)),
        Errno::EAGAIN,
        "F_OFD_SETLK after the dup's close",
    )?;
    // The description's last close releases it.
    sys::close(a).what("close a")?;
    sys::fcntl_lock(b, F_OFD_SETLK, &mut lock(F_WRLCK, 0)).what("F_OFD_SETLK after a's close")?;
    sys::close(b).what("close b")?;
    Ok(())
}

pub fn pipe_o_async_signals_the_owner(_cx: &Ctx) -> TestResult {
    let (r, w) = sys::pipe2(0).what("pipe2")?;
    let me = sys::getpid() as usize;
    let r1 = with_blocked(1 << (SIGUSR1 - 1) | 1 << (SIGIO - 1), || {
        fcntl(r, F_SETOWN, me).what("F_SETOWN")?;
        fcntl(r, F_SETSIG, SIGUSR1).what("F_SETSIG")?;
        ensure!(
            fcntl(r, F_GETSIG, 0).what("F_GETSIG")? == SIGUSR1,
            "F_GETSIG is not what F_SETSIG set"
        );
        let mut ex = [0u8; 8];
        fcntl(r, F_GETOWN_EX, ex.as_mut_ptr() as usize).what("F_GETOWN_EX")?;
        let kind = i32::from_le_bytes([ex[0], ex[1], ex[2], ex[3]]);
        let pid = i32::from_le_bytes([ex[4], ex[5], ex[6], ex[7]]);
        ensure!(
            kind == 1 && pid as usize == me,
            "F_GETOWN_EX gave type {kind} id {pid}, expected F_OWNER_PID (1) and {me}"
        );
        // Nothing is sent before O_ASYNC.
        sys::write(w, b"a").what("write before O_ASYNC")?;
        expect_errno(
            wait(1 << (SIGUSR1 - 1), 0),
            Errno::EAGAIN,
            "a signal before O_ASYNC",
        )?;
        let fl = fcntl(r, F_GETFL, 0).what("F_GETFL")?;
        fcntl(r, F_SETFL, fl | O_ASYNC).what("F_SETFL O_ASYNC")?;
        ensure!(
            fcntl(r, F_GETFL, 0).what("F_GETFL")? & O_ASYNC != 0,
            "F_GETFL does not show O_ASYNC"
        );
        sys::write(w, b"b").what("write")?;
        let info = wait(1 << (SIGUSR1 - 1), 2000).what("rt_sigtimedwait for SIGUSR1")?;
        ensure!(
            info.code == POLL_IN && info.value as u32 as i32 == r,
            "the signal's si_code {} and si_fd {}, expected POLL_IN ({POLL_IN}) and {r}",
            info.code,
            info.value as u32 as i32
        );
        Ok(())
    });
    sys::close(r).what("close r")?;
    sys::close(w).what("close w")?;
    r1
}

pub fn lease_break_waits_for_the_holder(cx: &Ctx) -> TestResult {
    let path = cx.path("leased");
    let f = sys::open(&path, O_RDWR | O_CREAT, 0o644).what("create")?;
    sys::close(f).what("close")?;
    let r = sys::open(&path, O_RDONLY, 0).what("open O_RDONLY")?;
    let w = sys::open(&path, O_WRONLY, 0).what("open O_WRONLY")?;
    // A read lease needs the file open for writing nowhere.
    expect_errno(
        fcntl(r, F_SETLEASE, F_RDLCK as usize),
        Errno::EAGAIN,
        "F_SETLEASE F_RDLCK with a writer",
    )?;
    sys::close(w).what("close the writer")?;
    let res = with_blocked(1 << (SIGIO - 1), || {
        fcntl(r, F_SETLEASE, F_RDLCK as usize).what("F_SETLEASE F_RDLCK")?;
        ensure!(
            fcntl(r, F_GETLEASE, 0).what("F_GETLEASE")? == F_RDLCK as usize,
            "F_GETLEASE is not F_RDLCK"
        );
        // Reading opens do not break a read lease.
        let r2 = sys::open(&path, O_RDONLY, 0).what("a second reader")?;
        sys::close(r2).what("close the second reader")?;
        let child = path.clone();
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            // O_NONBLOCK: EWOULDBLOCK at once, the break under way; then a waiting open.
            let code = match sys::open(&child, O_WRONLY | O_NONBLOCK, 0) {
                Err(Errno::EAGAIN) => match sys::open(&child, O_WRONLY, 0) {
                    Ok(_) => 0,
                    Err(_) => 2,
                },
                _ => 1,
            };
            sys::exit(code);
        }
        let got = wait(1 << (SIGIO - 1), 5000).what("rt_sigtimedwait for the break's SIGIO");
        let state = fcntl(r, F_GETLEASE, 0).what("F_GETLEASE while broken");
        let unlock = fcntl(r, F_SETLEASE, F_UNLCK as usize).what("F_SETLEASE F_UNLCK");
        let (_, st) = sys::waitpid(pid).what("wait4")?;
        got?;
        ensure!(
            state? == F_UNLCK as usize,
            "F_GETLEASE during the break is not F_UNLCK"
        );
        unlock?;
        ensure!(
            st.exited() && st.exit_code() == 0,
            "the breaking child: status {:#x} (1: its O_NONBLOCK open did not fail with \
             EWOULDBLOCK, 2: its waiting open failed)",
            st.0
        );
        Ok(())
    });
    sys::close(r).what("close r")?;
    res
}

pub fn packet_pipe_reads_one_write(_cx: &Ctx) -> TestResult {
    let (r, w) = sys::pipe2(O_DIRECT | O_NONBLOCK).what("pipe2 O_DIRECT")?;
    ensure!(
        fcntl(w, F_GETFL, 0).what("F_GETFL")? & O_DIRECT as usize != 0,
        "the write end's F_GETFL lacks O_DIRECT"
    );
    sys::write(w, b"abc").what("write 3")?;
    sys::write(w, b"defgh").what("write 5")?;
    let mut buf = [0u8; 100];
    let n = sys::read(r, &mut buf).what("read")?;
    ensure!(&buf[..n] == b"abc", "the first read got {:?}", &buf[..n]);
    let n = sys::read(r, &mut buf).what("read")?;
    ensure!(&buf[..n] == b"defgh", "the second read got {:?}", &buf[..n]);
    // A read shorter than the packet drops the rest of it.
    sys::write(w, b"0123456789").what("write 10")?;
    let n = sys::read(r, &mut buf[..4]).what("short read")?;
    ensure!(&buf[..n] == b"0123", "the short read got {:?}", &buf[..n]);
    expect_errno(
        sys::read(r, &mut buf),
        Errno::EAGAIN,
        "read after a short read",
    )?;
    sys::close(r).what("close r")?;
    sys::close(w).what("close w")?;
    Ok(())
}

pub fn madvise_marks_what_fork_copies(_cx: &Ctx) -> TestResult {
    const PAGE: usize = 4096;
    let m = sys::mmap(
        0,
        3 * PAGE,
        PROT_READ | PROT_WRITE,
        MAP_PRIVATE | MAP_ANONYMOUS,
        -1,
        0,
    )
    .what("mmap")?;
    m.write(0, b"wipe");
    m.write(PAGE, b"keep");
    m.write(2 * PAGE, b"drop");
    sys::madvise(m.addr(), PAGE, MADV_WIPEONFORK).what("MADV_WIPEONFORK")?;
    sys::madvise(m.addr() + 2 * PAGE, PAGE, MADV_DONTFORK).what("MADV_DONTFORK")?;
    let base = m.addr();
    in_child("the child's view", None, || {
        let mut v = [0u8; 1];
        if m.read(0, 4) != [0; 4] {
            return 1;
        }
        if m.read(PAGE, 4) != *b"keep" {
            return 2;
        }
        // The MADV_DONTFORK page is not mapped in the child.
        if sys::mincore(base + 2 * PAGE, PAGE, v.as_mut_ptr() as usize) != Err(Errno::ENOMEM) {
            return 3;
        }
        0
    })?;
    ensure!(
        m.read(0, 4) == *b"wipe",
        "MADV_WIPEONFORK changed the parent's page"
    );
    sys::madvise(base, PAGE, MADV_KEEPONFORK).what("MADV_KEEPONFORK")?;
    in_child("the child after MADV_KEEPONFORK", None, || {
        i32::from(m.read(0, 4) != *b"wipe")
    })?;
    // Only private anonymous memory can be wiped.
    let shared = sys::mmap(
        0,
        PAGE,
        PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS,
        -1,
        0,
    )
    .what("mmap shared")?;
    expect_errno(
        sys::madvise(shared.addr(), PAGE, MADV_WIPEONFORK),
        Errno::EINVAL,
        "MADV_WIPEONFORK of shared memory",
    )?;
    Ok(())
}

pub fn dev_zero_maps_anonymous_memory(_cx: &Ctx) -> TestResult {
    const PAGE: usize = 4096;
    let rw = sys::open("/dev/zero", O_RDWR, 0).what("open /dev/zero O_RDWR")?;
    let shared = sys::mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, rw, 0)
        .what("mmap /dev/zero MAP_SHARED")?;
    ensure!(
        shared.read(0, 4) == [0; 4],
        "a /dev/zero mapping is not zeroed"
    );
    // Shared: a child's store is the parent's.
    in_child("the child's store", None, || {
        shared.write(8, b"kid");
        0
    })?;
    ensure!(
        shared.read(8, 3) == *b"kid",
        "a MAP_SHARED /dev/zero page is not shared with a child"
    );
    let ro = sys::open("/dev/zero", O_RDONLY, 0).what("open /dev/zero O_RDONLY")?;
    expect_errno(
        sys::mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_SHARED, ro, 0),
        Errno::EACCES,
        "a writable shared mapping of a read-only /dev/zero",
    )?;
    let r = sys::mmap(0, PAGE, PROT_READ, MAP_SHARED, ro, 0).what("mmap read-only")?;
    expect_errno(
        crate::memfd_tests::mprotect(&r, PROT_READ | PROT_WRITE),
        Errno::EACCES,
        "mprotect to writable of a read-only shared /dev/zero mapping",
    )?;
    // A private mapping is the process's own memory: writable whatever the open.
    let p = sys::mmap(0, PAGE, PROT_READ | PROT_WRITE, MAP_PRIVATE, ro, 0)
        .what("mmap /dev/zero MAP_PRIVATE")?;
    p.write(0, b"own");
    ensure!(
        p.read(0, 3) == *b"own",
        "a private /dev/zero page did not keep a store"
    );
    sys::close(rw).what("close")?;
    sys::close(ro).what("close")?;
    Ok(())
}

/// Job control: SIGSTOP stops a child (it runs no more), its parent's wait4(WUNTRACED) and
/// SIGCHLD (CLD_STOPPED) say so once; SIGCONT continues it (WCONTINUED: 0xffff, CLD_CONTINUED)
/// and it runs again; SIGKILL ends a stopped child.
pub fn stop_and_continue_reach_the_parent(_cx: &Ctx) -> TestResult {
    use crate::proc_tests::{kill, sleep_ms};
    const SIGKILL: usize = 9;
    const SIGCONT: usize = 18;
    const SIGSTOP: usize = 19;
    const SIGCHLD: usize = 17;
    const WNOHANG: u32 = 1;
    const WUNTRACED: u32 = 2;
    const WCONTINUED: u32 = 8;
    const CLD_STOPPED: i32 = 5;
    const CLD_CONTINUED: i32 = 6;
    let counter = sys::mmap(
        0,
        4096,
        PROT_READ | PROT_WRITE,
        MAP_SHARED | MAP_ANONYMOUS,
        -1,
        0,
    )
    .what("mmap")?;
    let count = || u64::from_le_bytes(counter.read(0, 8).try_into().unwrap_or([0; 8]));
    with_blocked(1 << (SIGCHLD - 1), || {
        let pid = sys::fork().what("fork")?;
        if pid == 0 {
            let mut n = 0u64;
            loop {
                n += 1;
                counter.write(0, &n.to_le_bytes());
                sys::sched_yield();
            }
        }
        let result = (|| {
            sleep_ms(50);
            ensure!(count() > 0, "the child never ran");
            ensure!(kill(pid, SIGSTOP) == 0, "kill SIGSTOP failed");
            let (got, st) = sys::wait4(pid, WUNTRACED).what("wait4 WUNTRACED")?;
            ensure!(
                got == pid && st.0 == (SIGSTOP as i32) << 8 | 0x7f,
                "wait4(WUNTRACED) gave pid {got} status {:#x}, expected {pid} and 0x137f",
                st.0
            );
            let info = wait(1 << (SIGCHLD - 1), 2000).what("SIGCHLD of the stop")?;
            ensure!(
                info.code == CLD_STOPPED && info.pid == pid,
                "the stop's SIGCHLD: code {} pid {}",
                info.code,
                info.pid
            );
            // Reported once; and a stopped child runs no more.
            let (again, _) = sys::wait4(pid, WUNTRACED | WNOHANG).what("wait4 again")?;
            ensure!(again == 0, "a stop was reported twice");
            let before = count();
            sleep_ms(100);
            ensure!(count() == before, "the stopped child kept running");
            ensure!(kill(pid, SIGCONT) == 0, "kill SIGCONT failed");
            let (got, st) = sys::wait4(pid, WCONTINUED).what("wait4 WCONTINUED")?;
            ensure!(
                got == pid && st.0 == 0xffff,
                "wait4(WCONTINUED) gave pid {got} status {:#x}, expected 0xffff",
                st.0
            );
            let info = wait(1 << (SIGCHLD - 1), 2000).what("SIGCHLD of the continue")?;
            ensure!(
                info.code == CLD_CONTINUED,
                "the continue's SIGCHLD code {}",
                info.code
            );
            sleep_ms(50);
            ensure!(count() > before, "the continued child did not run");
            // SIGKILL ends a stopped child.
            ensure!(kill(pid, SIGSTOP) == 0, "kill SIGSTOP failed");
            sys::wait4(pid, WUNTRACED).what("wait4 the second stop")?;
            Ok(())
        })();
        kill(pid, SIGKILL);
        let (_, st) = sys::waitpid(pid).what("wait4 the killed child")?;
        result?;
        ensure!(
            st.signal() == Some(SIGKILL as i32),
            "the stopped child did not die of SIGKILL: status {:#x}",
            st.0
        );
        Ok(())
    })
}
