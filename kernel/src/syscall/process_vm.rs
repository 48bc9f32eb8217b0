//! process_vm_readv and process_vm_writev: copy between the caller's memory and another
//! process's, described by two iovec arrays, without going through a file.
//!
//! Linux's checks: flags must be 0 and each array at most IOV_MAX long (EINVAL); the arrays
//! are read and their buffers checked as readv's (EFAULT, EINVAL for a negative length); a
//! pid that names no live process is ESRCH; the caller must be allowed to ptrace-attach the
//! target with its real ids (`PTRACE_MODE_ATTACH_REALCREDS`: its own thread group, the same
//! real uid and gid as every uid and gid of the target, or CAP_SYS_PTRACE), else EPERM. The
//! bytes go through a kernel buffer, one page at a time, so only one address space is
//! locked at once (the target may be the caller). The result is the number of bytes copied;
//! a fault ends the copy there, and is EFAULT only when nothing was copied.

use alloc::sync::Arc;
use alloc::vec;

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use super::io::iovecs;
use crate::mm::uaccess;
use crate::task::{self, Process};

const CAP_SYS_PTRACE: u32 = 19;
const CHUNK: usize = 4096;

/// May the caller read and write `target`'s memory (Linux's `__ptrace_may_access` for
/// PTRACE_MODE_ATTACH_REALCREDS, without the dumpable test)?
fn may_access(target: &Arc<Process>) -> bool {
    if Arc::ptr_eq(target, &task::current_process()) {
        return true;
    }
    let me = task::current_cred();
    if me.caps.has(CAP_SYS_PTRACE) {
        return true;
    }
    let t = target.inner.lock().cred.clone();
    [t.uid, t.euid, t.suid].iter().all(|&u| u == me.uid)
        && [t.gid, t.egid, t.sgid].iter().all(|&g| g == me.gid)
}

/// Copy between the caller's pieces `local` and `target`'s pieces `remote` (`write`: into
/// the target). Returns the bytes copied.
fn transfer(
    target: &Process,
    local: &[(usize, usize)],
    remote: &[(usize, usize)],
    write: bool,
) -> SysResult {
    let mut buf = vec![0u8; CHUNK];
    let (mut li, mut loff) = (0, 0);
    let mut done = 0;
    for &(rbase, rlen) in remote {
        let mut roff = 0;
        while roff < rlen {
            // The next local piece with room left.
            while li < local.len() && loff == local[li].1 {
                li += 1;
                loff = 0;
            }
            let Some(&(lbase, llen)) = local.get(li) else {
                return Ok(done);
            };
            let n = CHUNK.min(rlen - roff).min(llen - loff);
            let (ra, la) = (rbase + roff, lbase + loff);
            let chunk = &mut buf[..n];
            let r = if write {
                copy_in(la, chunk)
                    .and_then(|_| uaccess::copy_out(&mut target.inner.lock().space, ra, chunk))
            } else {
                uaccess::copy_in(&mut target.inner.lock().space, ra, chunk)
                    .and_then(|_| copy_out(la, chunk))
            };
            if let Err(e) = r {
                return if done > 0 { Ok(done) } else { Err(e) };
            }
            done += n;
            roff += n;
            loff += n;
        }
    }
    Ok(done)
}

fn process_vm(
    pid: isize,
    lvec: usize,
    lcnt: usize,
    rvec: usize,
    rcnt: usize,
    flags: usize,
    write: bool,
) -> SysResult {
    if flags != 0 {
        return Err(Errno::EINVAL);
    }
    let local = iovecs(lvec, lcnt)?;
    let remote = iovecs(rvec, rcnt)?;
    let target = usize::try_from(pid)
        .ok()
        .filter(|&p| p > 0)
        .and_then(task::find)
        .filter(|p| p.inner.lock().zombie.is_none())
        .ok_or(Errno::ESRCH)?;
    if !may_access(&target) {
        return Err(Errno::EPERM);
    }
    transfer(&target, &local, &remote, write)
}

/// process_vm_readv: from `pid`'s memory (`rvec`) into the caller's (`lvec`).
pub fn sys_process_vm_readv(
    pid: isize,
    lvec: usize,
    lcnt: usize,
    rvec: usize,
    rcnt: usize,
    flags: usize,
) -> SysResult {
    process_vm(pid, lvec, lcnt, rvec, rcnt, flags, false)
}

/// process_vm_writev: from the caller's memory (`lvec`) into `pid`'s (`rvec`).
pub fn sys_process_vm_writev(
    pid: isize,
    lvec: usize,
    lcnt: usize,
    rvec: usize,
    rcnt: usize,
    flags: usize,
) -> SysResult {
    process_vm(pid, lvec, lcnt, rvec, rcnt, flags, true)
}
