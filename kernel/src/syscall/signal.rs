//! Signal calls: rt_sigaction, rt_sigprocmask, rt_sigreturn, rt_sigsuspend, rt_sigpending,
//! sigaltstack, kill, tkill, tgkill. The signal machinery itself is `task::signal`.

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::arch::trap::TrapFrame;
use crate::task::signal::{self, bit, AltStack, SigAction, NSIG, SIGKILL, SIGSTOP};
use crate::task::{self, with_current, with_thread};

/// The kernel's `sigset_t` is 8 bytes; any other size is EINVAL (Linux).
const SIGSET_SIZE: usize = 8;

fn valid(sig: usize) -> bool {
    (1..=NSIG).contains(&sig)
}

pub fn sys_rt_sigaction(sig: usize, act: usize, oldact: usize, size: usize) -> SysResult {
    if size != SIGSET_SIZE || !valid(sig) {
        return Err(Errno::EINVAL);
    }
    let new = if act != 0 {
        let mut b = [0u8; 24];
        copy_in(act, &mut b)?;
        let w = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap_or([0; 8]));
        if sig == SIGKILL || sig == SIGSTOP {
            return Err(Errno::EINVAL);
        }
        Some(SigAction {
            handler: w(0) as usize,
            flags: w(8),
            mask: w(16),
        })
    } else {
        None
    };
    let old = with_current(|p| {
        let old = p.sig.actions[sig - 1];
        if let Some(a) = new {
            p.sig.actions[sig - 1] = a;
        }
        old
    });
    if let Some(a) = new {
        // Setting a signal to be ignored discards it if pending (POSIX).
        let ignored = a.handler == signal::SIG_IGN;
        if ignored {
            let p = task::current_process();
            p.sig_pending
                .fetch_and(!bit(sig), core::sync::atomic::Ordering::Relaxed);
            for t in p.inner.lock().threads.iter() {
                t.sig_pending
                    .fetch_and(!bit(sig), core::sync::atomic::Ordering::Relaxed);
            }
        }
    }
    if oldact != 0 {
        let mut b = [0u8; 24];
        b[0..8].copy_from_slice(&(old.handler as u64).to_le_bytes());
        b[8..16].copy_from_slice(&old.flags.to_le_bytes());
        b[16..24].copy_from_slice(&old.mask.to_le_bytes());
        copy_out(oldact, &b)?;
    }
    Ok(0)
}

pub fn sys_rt_sigprocmask(how: usize, set: usize, oldset: usize, size: usize) -> SysResult {
    const SIG_BLOCK: usize = 0;
    const SIG_UNBLOCK: usize = 1;
    const SIG_SETMASK: usize = 2;
    if size != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let new = if set != 0 {
        let mut b = [0u8; 8];
        copy_in(set, &mut b)?;
        if how > SIG_SETMASK {
            return Err(Errno::EINVAL);
        }
        Some(u64::from_le_bytes(b))
    } else {
        None
    };
    let old = with_thread(|p| {
        let old = p.sig.blocked;
        if let Some(s) = new {
            let m = match how {
                SIG_BLOCK => old | s,
                SIG_UNBLOCK => old & !s,
                _ => s,
            };
            p.sig.set_blocked(m);
        }
        old
    });
    if oldset != 0 {
        copy_out(oldset, &old.to_le_bytes())?;
    }
    Ok(0)
}

pub fn sys_rt_sigpending(set: usize, size: usize) -> SysResult {
    if size > SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let blocked = with_thread(|t| t.sig.blocked);
    copy_out(
        set,
        &(signal::pending_set() & blocked).to_le_bytes()[..size],
    )?;
    Ok(0)
}

pub fn sys_rt_sigreturn(tf: &mut TrapFrame) -> SysResult {
    crate::task::sigframe::sigreturn(tf)
}

/// Wait for a signal with `mask` blocked meanwhile; always EINTR (after the handler ran,
/// the old mask comes back: `SigState::saved_mask`).
pub fn sys_rt_sigsuspend(mask: usize, size: usize) -> SysResult {
    if size != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 8];
    copy_in(mask, &mut b)?;
    with_thread(|t| {
        t.sig.saved_mask = Some(t.sig.blocked);
        t.sig.set_blocked(u64::from_le_bytes(b));
    });
    while !signal::pending() {
        crate::task::block_current();
    }
    Err(Errno::EINTR)
}

/// sigaltstack: report (`old`) and set (`ss`) the calling thread's alternate signal stack,
/// where handlers installed with SA_ONSTACK run. EPERM while running on it, EINVAL for
/// unknown flags, ENOMEM below MINSIGSTKSZ, EFAULT for a bad pointer.
pub fn sys_sigaltstack(ss: usize, old: usize, tf: &TrapFrame) -> SysResult {
    let sp = tf.regs[2];
    let cur = with_thread(|t| t.sig.alt);
    let new = if ss != 0 {
        let mut b = [0u8; 24];
        copy_in(ss, &mut b)?;
        Some(b)
    } else {
        None
    };
    if old != 0 {
        copy_out(old, &cur.to_user(sp))?;
    }
    if let Some(b) = new {
        if cur.on(sp) {
            return Err(Errno::EPERM);
        }
        let alt = AltStack::from_user(&b)?;
        with_thread(|t| t.sig.alt = alt);
    }
    Ok(0)
}

/// May the current process signal `target` (Linux's `kill_ok_by_cred`)?
pub(super) fn may_signal(target: &crate::task::Process) -> bool {
    let me = with_current(|p| p.cred.clone());
    if me.euid == 0 {
        return true;
    }
    let t = target.inner.lock();
    [me.uid, me.euid].contains(&t.cred.uid) || [me.uid, me.euid].contains(&t.cred.suid)
}

pub fn sys_kill(pid: isize, sig: i32) -> SysResult {
    let sig = usize::try_from(sig).map_err(|_| Errno::EINVAL)?;
    if sig > NSIG {
        return Err(Errno::EINVAL);
    }
    let me = task::current_pid();
    let targets = if pid > 0 {
        // A thread's id names its process too, as on Linux.
        task::find(pid as usize)
            .or_else(|| task::find_thread(pid as usize).map(|t| t.process.clone()))
            .into_iter()
            .collect()
    } else if pid == 0 {
        task::processes_in_group(with_current(|p| p.pgid))
    } else if pid == -1 {
        task::all_processes()
            .into_iter()
            .filter(|p| p.pid != 1 && p.pid != me)
            .collect()
    } else {
        task::processes_in_group(pid.unsigned_abs())
    };
    if targets.is_empty() {
        return Err(Errno::ESRCH);
    }
    let mut sent = 0;
    for t in &targets {
        if may_signal(t) {
            sent += 1;
            if sig != 0 {
                signal::send(t, sig);
            }
        }
    }
    if sent == 0 {
        return Err(Errno::EPERM);
    }
    Ok(0)
}

/// tgkill: signal thread `tid` of process `tgid` (ESRCH if it is not one of its threads).
pub fn sys_tgkill(tgid: isize, tid: isize, sig: i32) -> SysResult {
    if tgid <= 0 {
        return Err(Errno::EINVAL);
    }
    thread_kill(Some(tgid as usize), tid, sig)
}

/// tkill: signal thread `tid`.
pub fn sys_tkill(tid: isize, sig: i32) -> SysResult {
    thread_kill(None, tid, sig)
}

fn thread_kill(tgid: Option<usize>, tid: isize, sig: i32) -> SysResult {
    let sig = usize::try_from(sig).map_err(|_| Errno::EINVAL)?;
    if tid <= 0 || sig > NSIG {
        return Err(Errno::EINVAL);
    }
    let t = task::find_thread(tid as usize).ok_or(Errno::ESRCH)?;
    if tgid.is_some_and(|g| g != t.process.pid) {
        return Err(Errno::ESRCH);
    }
    if !may_signal(&t.process) {
        return Err(Errno::EPERM);
    }
    if sig != 0 {
        signal::send_thread(&t, sig);
    }
    Ok(0)
}
