//! Process calls: clone (fork), execve, wait4, exit, kill, umask.

use alloc::string::String;
use alloc::vec::Vec;

use abi::Errno;

use super::{read_path, with_space, SysResult};
use crate::mm::uaccess;
use crate::task::{self, ExitStatus};
use crate::trap::TrapFrame;

pub fn sys_exit(code: i32) -> SysResult {
    task::exit_current(ExitStatus::Exited(code & 0xff))
}

pub fn sys_getppid() -> SysResult {
    Ok(task::with_current(|p| p.ppid))
}

pub fn sys_umask(mask: u32) -> SysResult {
    Ok(task::with_current(|p| core::mem::replace(&mut p.umask, mask & 0o777)) as usize)
}

pub fn sys_clone(flags: usize, stack: usize, tf: &TrapFrame) -> SysResult {
    let flags = flags as u64;
    let exit_signal = flags & 0xff;
    // Only process creation: fork, and vfork-style (CLONE_VM | CLONE_VFORK), which a copy
    // implements correctly. Threads (CLONE_VM without CLONE_VFORK) are not supported.
    let known = abi::fcntl::CLONE_VM | abi::fcntl::CLONE_VFORK;
    if flags & !0xff & !known != 0 {
        return Err(Errno::EINVAL);
    }
    if flags & abi::fcntl::CLONE_VM != 0 && flags & abi::fcntl::CLONE_VFORK == 0 {
        return Err(Errno::ENOSYS);
    }
    if exit_signal != 0 && exit_signal != abi::fcntl::SIGCHLD {
        return Err(Errno::EINVAL);
    }
    let mut child_tf = tf.clone();
    if stack != 0 {
        child_tf.regs[2] = stack;
    }
    task::fork(&child_tf)
}

/// Read a NULL-terminated array of string pointers (argv, envp).
fn read_str_array(ptr: usize) -> Result<Vec<String>, Errno> {
    let mut out = Vec::new();
    if ptr == 0 {
        return Ok(out);
    }
    let mut total = 0;
    loop {
        if out.len() >= 4096 {
            return Err(Errno::E2BIG);
        }
        let p = with_space(|s| uaccess::read_u64(s, ptr + out.len() * 8))? as usize;
        if p == 0 {
            return Ok(out);
        }
        let s = with_space(|s| uaccess::read_cstr(s, p, 128 * 1024))?;
        total += s.len() + 1;
        if total > 256 * 1024 {
            return Err(Errno::E2BIG);
        }
        out.push(s);
    }
}

pub fn sys_execve(path_ptr: usize, argv_ptr: usize, envp_ptr: usize) -> SysResult {
    let path = read_path(path_ptr)?;
    if path.is_empty() {
        return Err(Errno::ENOENT);
    }
    let argv = read_str_array(argv_ptr)?;
    let envp = read_str_array(envp_ptr)?;
    task::exec(&path, argv, envp)?;
    Ok(0)
}

pub fn sys_wait4(pid: isize, wstatus: usize, options: u32) -> SysResult {
    const WNOHANG: u32 = 1;
    const WUNTRACED: u32 = 2;
    const WCONTINUED: u32 = 8;
    const WALL: u32 = 0x4000_0000;
    const WCLONE: u32 = 0x8000_0000;
    if options & !(WNOHANG | WUNTRACED | WCONTINUED | WALL | WCLONE) != 0 {
        return Err(Errno::EINVAL);
    }
    if wstatus != 0 {
        // Check the status pointer before reaping, so a bad pointer loses no child.
        with_space(|s| uaccess::segments(s, wstatus, 4, crate::mm::addr_space::Access::Write))?;
    }
    match task::wait_child(pid, options & WNOHANG != 0)? {
        None => Ok(0),
        Some((cpid, status)) => {
            if wstatus != 0 {
                super::copy_out(wstatus, &status.wait_status().to_le_bytes())?;
            }
            Ok(cpid)
        }
    }
}

pub fn sys_kill(pid: isize, sig: i32) -> SysResult {
    if !(0..=64).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    if pid <= 0 {
        return Err(Errno::EINVAL);
    }
    if !task::exists(pid as usize) {
        return Err(Errno::ESRCH);
    }
    if sig == 0 {
        return Ok(0);
    }
    if pid as usize == task::current_pid() {
        task::exit_current(ExitStatus::Signaled(sig));
    }
    // Delivering signals to other processes is not implemented.
    Err(Errno::EPERM)
}
