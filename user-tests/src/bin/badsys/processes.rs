//! Calls about other processes, made in children so a broken kernel cannot take this process
//! down with a bad exec: `execve` of a real program with a bad `argv` or `envp`, and `wait4`
//! storing a child's status through a bad pointer.

use user_tests::abi::syscall::*;
use user_tests::prelude::*;
use user_tests::PAGE_SIZE;

use crate::case::{run, sc, Runner};
use crate::fixture::{CStr, Mem, KERNEL_LOW};

pub fn cases(r: &mut Runner, m: &mut Mem, self_path: &str) {
    // execve of a real program with a bad argv / envp must fail in the caller (the child reports
    // the errno as its exit status; an exec that went through runs badsys with no arguments,
    // which exits 2).
    let me = CStr::new(self_path);
    let bad_argv = [KERNEL_LOW, 0usize];
    let argv0 = [me.p(), 0usize];
    // argv spanning the hole: one valid pointer in the last mapped word, then the hole.
    m.bytes()[2 * PAGE_SIZE - 8..].copy_from_slice(&me.p().to_le_bytes());
    let path = me.p();
    let exec = |argv: usize, envp: usize| move || exec_in_child(path, argv, envp);
    let (argv_kernel, argv_unmapped) = (exec(KERNEL_LOW, 0), exec(m.hole(), 0));
    let argv0_kernel = exec(bad_argv.as_ptr() as usize, 0);
    let envp_unmapped = exec(argv0.as_ptr() as usize, m.hole());
    let argv_spanning = exec(m.tail(8), 0);
    // wait4 with a bad status pointer: EFAULT (Linux may reap the child anyway; reap it here).
    let wait_into = |status: usize| move || wait_status_into(status);
    let (wait_kernel, wait_unmapped) = (wait_into(KERNEL_LOW), wait_into(m.hole()));
    let wait_ro = wait_into(m.ro);
    let e = Errno::EFAULT;
    r.run(&[
        run("execve with argv = kernel address", &argv_kernel, e),
        run("execve with argv = unmapped", &argv_unmapped, e),
        run("execve with argv[0] = kernel address", &argv0_kernel, e),
        run("execve with envp = unmapped", &envp_unmapped, e),
        run("execve with argv spanning the hole", &argv_spanning, e),
        run("wait4 status into kernel address", &wait_kernel, e),
        run("wait4 status into unmapped", &wait_unmapped, e),
        run("wait4 status into read-only page", &wait_ro, e),
    ]);
}

/// Fork; the child execs `path` with `argv` and `envp` and exits with the errno. The answer is
/// that errno (an exit status above 2), else the child's raw wait status.
fn exec_in_child(path: usize, argv: usize, envp: usize) -> SysResult<usize> {
    match sys::fork()? {
        0 => {
            let e = sc(SYS_EXECVE, &[path, argv, envp]).err().map_or(0, |e| e.0);
            sys::exit(e);
        }
        pid => match sys::waitpid(pid)? {
            (_, st) if st.exited() && st.exit_code() > 2 => Err(Errno(st.exit_code())),
            (_, st) => Ok(st.0 as usize),
        },
    }
}

/// Fork a child that exits at once, then `wait4` for it with the status stored at `status`:
/// the answer of that `wait4` (the child is reaped either way).
fn wait_status_into(status: usize) -> SysResult<usize> {
    let pid = sys::fork()?;
    if pid == 0 {
        sys::exit(3);
    }
    // Let the child exit first, so wait4 has a status to store.
    let mut spins = 0;
    let got = loop {
        let g = sc(SYS_WAIT4, &[pid as usize, status, WNOHANG as usize, 0]);
        if g != Ok(0) || spins > 100_000 {
            break g;
        }
        spins += 1;
        sys::sched_yield();
    };
    let _ = sys::waitpid(pid);
    got
}
