//! System V message queues and semaphores (msgget/msgsnd/msgrcv/msgctl,
//! semget/semop/semtimedop/semctl) and waitid, with Linux's semantics and errors.

use user_tests::prelude::*;
use user_tests::raw::{syscall2, syscall3, syscall4, syscall5};
use user_tests::time::now_ns;

use crate::{ensure, expect_errno, Check, Ctx, TestResult};

const IPC_PRIVATE: usize = 0;
const IPC_NOWAIT: usize = 0o4000;
const IPC_RMID: usize = 0;
const IPC_STAT: usize = 2;
const MSG_NOERROR: usize = 0o10000;
const MSG_EXCEPT: usize = 0o20000;
const GETVAL: usize = 12;
const GETNCNT: usize = 14;
const SETVAL: usize = 16;
const SEM_UNDO: i16 = 0x1000;
const SIGKILL: usize = 9;

fn ret(r: isize) -> SysResult<usize> {
    Errno::from_ret(r)
}

fn msgget() -> SysResult<usize> {
    // SAFETY: no pointer arguments.
    ret(unsafe { syscall2(abi::syscall::SYS_MSGGET, IPC_PRIVATE, 0o600) })
}

fn msgsnd(id: usize, mtype: i64, text: &[u8], flags: usize) -> SysResult<usize> {
    let mut buf = Vec::from(mtype.to_le_bytes());
    buf.extend_from_slice(text);
    // SAFETY: `buf` holds the mtype and `text.len()` bytes of text.
    ret(unsafe {
        syscall4(
            abi::syscall::SYS_MSGSND,
            id,
            buf.as_ptr() as usize,
            text.len(),
            flags,
        )
    })
}

/// msgrcv into a buffer of `room` text bytes: (mtype, text).
fn msgrcv(id: usize, room: usize, msgtyp: i64, flags: usize) -> SysResult<(i64, Vec<u8>)> {
    let mut buf = vec![0u8; 8 + room];
    // SAFETY: `buf` has room for the mtype and `room` bytes of text.
    let n = ret(unsafe {
        syscall5(
            abi::syscall::SYS_MSGRCV,
            id,
            buf.as_mut_ptr() as usize,
            room,
            msgtyp as usize,
            flags,
        )
    })?;
    let mtype = i64::from_le_bytes(buf[..8].try_into().unwrap_or([0; 8]));
    Ok((mtype, buf[8..8 + n].to_vec()))
}

fn msgctl_rmid(id: usize) -> SysResult<usize> {
    // SAFETY: IPC_RMID reads no buffer.
    ret(unsafe { syscall3(abi::syscall::SYS_MSGCTL, id, IPC_RMID, 0) })
}

fn sleep_ms(ms: u64) {
    let ts: [u64; 2] = [ms / 1000, (ms % 1000) * 1_000_000];
    // SAFETY: `ts` is a readable struct timespec; no remainder pointer.
    unsafe { syscall2(abi::syscall::SYS_NANOSLEEP, ts.as_ptr() as usize, 0) };
}

/// A forked child's exit code (255 when it did not exit normally).
fn child_code(pid: i32) -> Result<i32, String> {
    let (_, st) = sys::waitpid(pid).what("waitpid")?;
    Ok(if st.exited() { st.exit_code() } else { 255 })
}

/// Messages come out by type as msgrcv's `msgtyp` asks (first, first of a type, first of
/// another type, lowest type up to a bound); a short buffer is E2BIG unless MSG_NOERROR cuts
/// the message; an empty queue with IPC_NOWAIT is ENOMSG; IPC_STAT counts messages and
/// bytes; a receiver sleeps until a sender sends, and a sleeper gets EIDRM when the queue is
/// removed.
pub fn sysv_msg_queue(_cx: &Ctx) -> TestResult {
    let id = msgget().what("msgget")?;
    for (t, text) in [(3i64, &b"three"[..]), (1, b"one"), (2, b"two!")] {
        msgsnd(id, t, text, 0).what("msgsnd")?;
    }
    let mut ds = [0u8; 120];
    // SAFETY: `ds` is a writable struct msqid64_ds (120 bytes).
    ret(unsafe {
        syscall3(
            abi::syscall::SYS_MSGCTL,
            id,
            IPC_STAT,
            ds.as_mut_ptr() as usize,
        )
    })
    .what("IPC_STAT")?;
    let word = |at: usize| u64::from_le_bytes(ds[at..at + 8].try_into().unwrap_or([0; 8]));
    ensure!(
        word(80) == 3 && word(72) == 12,
        "IPC_STAT: qnum {} cbytes {}, expected 3 and 12",
        word(80),
        word(72)
    );
    expect_errno(
        msgrcv(id, 3, 3, 0),
        Errno::E2BIG,
        "5-byte message into 3 bytes",
    )?;
    ensure!(
        msgrcv(id, 64, -2, 0).what("msgrcv -2")? == (1, b"one".to_vec()),
        "msgtyp -2 did not take the lowest type (1)"
    );
    ensure!(
        msgrcv(id, 64, 3, MSG_EXCEPT).what("MSG_EXCEPT")? == (2, b"two!".to_vec()),
        "MSG_EXCEPT 3 did not take type 2"
    );
    ensure!(
        msgrcv(id, 3, 0, MSG_NOERROR).what("MSG_NOERROR")? == (3, b"thr".to_vec()),
        "MSG_NOERROR did not cut the message to 3 bytes"
    );
    expect_errno(
        msgrcv(id, 64, 0, IPC_NOWAIT),
        Errno::ENOMSG,
        "empty, IPC_NOWAIT",
    )?;
    expect_errno(msgsnd(id, 0, b"x", 0), Errno::EINVAL, "mtype 0")?;
    // A receiver asleep on the empty queue gets the message sent later.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let ok = msgrcv(id, 64, 7, 0) == Ok((7, b"late".to_vec()));
        sys::exit(if ok { 0 } else { 1 });
    }
    sleep_ms(50);
    msgsnd(id, 7, b"late", 0).what("msgsnd to the sleeper")?;
    ensure!(
        child_code(pid)? == 0,
        "the sleeping receiver did not get the message"
    );
    // A receiver asleep when the queue goes gets EIDRM.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let r = msgrcv(id, 64, 0, 0);
        sys::exit(if r == Err(Errno::EIDRM) { 0 } else { 1 });
    }
    sleep_ms(50);
    msgctl_rmid(id).what("IPC_RMID")?;
    ensure!(child_code(pid)? == 0, "the sleeper did not get EIDRM");
    expect_errno(
        msgsnd(id, 1, b"x", 0),
        Errno::EINVAL,
        "msgsnd to a removed id",
    )?;
    Ok(())
}

fn semget(nsems: usize) -> SysResult<usize> {
    // SAFETY: no pointer arguments.
    ret(unsafe { syscall3(abi::syscall::SYS_SEMGET, IPC_PRIVATE, nsems, 0o600) })
}

fn semctl(id: usize, num: usize, cmd: usize, arg: usize) -> SysResult<usize> {
    // SAFETY: the commands used here take an int (SETVAL) or nothing.
    ret(unsafe { syscall4(abi::syscall::SYS_SEMCTL, id, num, cmd, arg) })
}

/// semop (timeout None) or semtimedop of `(num, op, flags)` operations.
fn semop(id: usize, ops: &[(u16, i16, i16)], timeout_ms: Option<u64>) -> SysResult<usize> {
    let raw: Vec<u8> = ops
        .iter()
        .flat_map(|&(n, o, f)| [n.to_le_bytes(), o.to_le_bytes(), f.to_le_bytes()])
        .flatten()
        .collect();
    let ts: [u64; 2] = timeout_ms.map_or([0; 2], |ms| [ms / 1000, (ms % 1000) * 1_000_000]);
    let ts_ptr = if timeout_ms.is_some() {
        ts.as_ptr() as usize
    } else {
        0
    };
    // SAFETY: `raw` holds `ops.len()` struct sembuf; `ts` is a readable timespec.
    ret(unsafe {
        syscall4(
            abi::syscall::SYS_SEMTIMEDOP,
            id,
            raw.as_ptr() as usize,
            ops.len(),
            ts_ptr,
        )
    })
}

/// semop applies all of its operations or none; IPC_NOWAIT is EAGAIN, semtimedop's timeout
/// EAGAIN after the time; past SEMVMX is ERANGE, a counter past the set EFBIG; SEM_UNDO is
/// undone when the process exits; a sleeper counts in GETNCNT and wakes when the counter
/// grows; a removed set wakes its sleepers with EIDRM.
pub fn sysv_semaphores(_cx: &Ctx) -> TestResult {
    let id = semget(2).what("semget")?;
    semctl(id, 0, SETVAL, 1).what("SETVAL")?;
    // Both or neither: counter 1 is 0, so the decrement of counter 0 must not happen.
    expect_errno(
        semop(id, &[(0, -1, 0), (1, -1, IPC_NOWAIT as i16)], None),
        Errno::EAGAIN,
        "decrement of a zero counter with IPC_NOWAIT",
    )?;
    ensure!(
        semctl(id, 0, GETVAL, 0) == Ok(1),
        "a failed semop changed counter 0"
    );
    expect_errno(
        semop(id, &[(0, 32767, 0)], None),
        Errno::ERANGE,
        "past SEMVMX",
    )?;
    expect_errno(
        semop(id, &[(2, 1, 0)], None),
        Errno::EFBIG,
        "counter 2 of 2",
    )?;
    expect_errno(semop(id, &[], None), Errno::EINVAL, "no operations")?;
    let t0 = now_ns();
    expect_errno(
        semop(id, &[(1, -1, 0)], Some(100)),
        Errno::EAGAIN,
        "semtimedop 100 ms",
    )?;
    ensure!(
        now_ns() - t0 >= 90_000_000,
        "semtimedop returned before its timeout"
    );
    // SEM_UNDO: the child's +2 is taken back when it exits.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let ok = semop(id, &[(1, 2, SEM_UNDO)], None).is_ok();
        sys::exit(if ok { 0 } else { 1 });
    }
    ensure!(child_code(pid)? == 0, "the child's SEM_UNDO semop failed");
    ensure!(
        semctl(id, 1, GETVAL, 0) == Ok(0),
        "SEM_UNDO was not undone at exit"
    );
    // A sleeper waits for counter 1, counts in GETNCNT, and wakes when it grows.
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let ok = semop(id, &[(1, -1, 0)], None).is_ok();
        sys::exit(if ok { 0 } else { 1 });
    }
    sleep_ms(50);
    ensure!(
        semctl(id, 1, GETNCNT, 0) == Ok(1),
        "GETNCNT with one sleeper is not 1"
    );
    semop(id, &[(1, 1, 0)], None).what("increment")?;
    ensure!(child_code(pid)? == 0, "the sleeper did not get the counter");
    ensure!(
        semctl(id, 1, GETVAL, 0) == Ok(0),
        "counter 1 is not back to 0"
    );
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        let r = semop(id, &[(1, -1, 0)], None);
        sys::exit(if r == Err(Errno::EIDRM) { 0 } else { 1 });
    }
    sleep_ms(50);
    semctl(id, 0, IPC_RMID, 0).what("IPC_RMID")?;
    ensure!(child_code(pid)? == 0, "the sleeper did not get EIDRM");
    expect_errno(
        semctl(id, 0, GETVAL, 0),
        Errno::EINVAL,
        "GETVAL of a removed set",
    )?;
    Ok(())
}

/// waitid(P_PID, pid, &info, options): the siginfo's (si_signo, si_code, si_pid, si_status).
fn waitid(idtype: usize, id: usize, options: usize) -> SysResult<(i32, i32, i32, i32)> {
    let mut info = [0xffu8; 128];
    // SAFETY: `info` is a writable siginfo_t (128 bytes); rusage is NULL.
    ret(unsafe {
        syscall5(
            abi::syscall::SYS_WAITID,
            idtype,
            id,
            info.as_mut_ptr() as usize,
            options,
            0,
        )
    })?;
    let word = |at: usize| i32::from_le_bytes(info[at..at + 4].try_into().unwrap_or([0; 4]));
    Ok((word(0), word(8), word(16), word(24)))
}

/// waitid reports an exit in the siginfo_t (SIGCHLD, CLD_EXITED, pid, code); WNOWAIT leaves
/// the child to be waited for again; a kill is CLD_KILLED with the signal; WNOHANG with a
/// running child is 0 with si_pid 0; no WEXITED/WSTOPPED/WCONTINUED is EINVAL, a pid that is
/// not a child ECHILD.
pub fn waitid_semantics(_cx: &Ctx) -> TestResult {
    const P_PID: usize = 1;
    const P_PGID: usize = 2;
    const WNOHANG: usize = 1;
    const WEXITED: usize = 4;
    const WNOWAIT: usize = 0x0100_0000;
    const SIGCHLD: i32 = 17;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        sys::exit(42);
    }
    let want = (SIGCHLD, 1, pid, 42);
    let got = waitid(P_PID, pid as usize, WEXITED | WNOWAIT).what("waitid WNOWAIT")?;
    ensure!(
        got == want,
        "waitid WNOWAIT gave {got:?}, expected {want:?}"
    );
    // Our process group: the child is in it.
    let got = waitid(P_PGID, 0, WEXITED).what("waitid P_PGID")?;
    ensure!(
        got == want,
        "waitid after WNOWAIT gave {got:?}, expected {want:?}"
    );
    expect_errno(
        waitid(P_PID, pid as usize, WEXITED),
        Errno::ECHILD,
        "reaped child",
    )?;
    expect_errno(
        waitid(P_PID, pid as usize, WNOHANG),
        Errno::EINVAL,
        "no WEXITED",
    )?;
    let pid = sys::fork().what("fork")?;
    if pid == 0 {
        loop {
            sleep_ms(1000);
        }
    }
    let got = waitid(P_PID, pid as usize, WEXITED | WNOHANG).what("waitid WNOHANG")?;
    ensure!(
        got == (0, 0, 0, 0),
        "WNOHANG with a running child gave {got:?}"
    );
    // SAFETY: no pointer arguments; `pid` is our child.
    ret(unsafe { syscall2(abi::syscall::SYS_KILL, pid as usize, SIGKILL) }).what("kill")?;
    let got = waitid(P_PID, pid as usize, WEXITED).what("waitid killed")?;
    ensure!(
        got == (SIGCHLD, 2, pid, SIGKILL as i32),
        "a killed child gave {got:?}"
    );
    Ok(())
}
