//! pidfd_open and pidfd_send_signal: descriptors on processes (`ipc::pidfd`, also made by
//! clone's `CLONE_PIDFD`); signals may
//! also go through a descriptor of a `/proc/<pid>` directory, as on Linux.
//!
//! pidfd_send_signal takes Linux's `siginfo_t` and checks it as Linux does (its signal
//! number must match; a process may send a code other than a kernel's or tkill's only to
//! itself), but only the signal is delivered: this kernel keeps no siginfo with a pending
//! signal, so the handler does not see the sender's `si_value`.

use alloc::sync::Arc;

use abi::Errno;

use super::args::{copy_in, SysResult};
use crate::ipc::pidfd::PidFd;
use crate::task::siginfo::SI_USER;
use crate::task::{self, signal, with_current};

const PIDFD_NONBLOCK: u32 = abi::fcntl::O_NONBLOCK;

pub fn sys_pidfd_open(pid: isize, flags: u32) -> SysResult {
    if flags & !PIDFD_NONBLOCK != 0 || pid <= 0 {
        return Err(Errno::EINVAL);
    }
    let process = match task::find(pid as usize) {
        Some(p) => p,
        // A thread that does not lead its process.
        None if task::find_thread(pid as usize).is_some() => return Err(Errno::EINVAL),
        None => return Err(Errno::ESRCH),
    };
    crate::ipc::pidfd::install(process, flags & PIDFD_NONBLOCK).map(|fd| fd as usize)
}

pub fn sys_pidfd_send_signal(fd: i32, sig: i32, info: usize, flags: u32) -> SysResult {
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let f = with_current(|p| p.files.fds().get(fd))?;
    // A pidfd, or (as Linux accepts) a descriptor of a /proc/<pid> directory.
    let target = match f.loc.node.as_any().downcast_ref::<PidFd>() {
        Some(p) => p.process.clone(),
        None => {
            let pid = crate::fs::procfs::pid_of_dir(&*f.loc.node).ok_or(Errno::EBADF)?;
            task::find(pid).ok_or(Errno::ESRCH)?
        }
    };
    let sig = usize::try_from(sig).map_err(|_| Errno::EINVAL)?;
    if sig > signal::NSIG {
        return Err(Errno::EINVAL);
    }
    let me = task::current_process();
    let info = if info != 0 {
        // Linux: the siginfo's signal must be the one sent.
        let mut head = [0u8; 4];
        copy_in(info, &mut head)?;
        if i32::from_le_bytes(head) as isize != sig as isize {
            return Err(Errno::EINVAL);
        }
        super::signal::user_siginfo(info, sig, Arc::ptr_eq(&me, &target))?
    } else {
        signal::from_current(sig, SI_USER)
    };
    if target.inner.lock().zombie.is_some() {
        return Err(Errno::ESRCH);
    }
    if !super::signal::may_signal(&target) {
        return Err(Errno::EPERM);
    }
    if sig != 0 {
        signal::send_info(&target, info)?;
    }
    Ok(0)
}
