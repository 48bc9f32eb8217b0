//! Signal calls: rt_sigaction, rt_sigprocmask, rt_sigreturn, rt_sigsuspend, rt_sigpending,
//! rt_sigtimedwait, sigaltstack, kill, tkill, tgkill, rt_sigqueueinfo, rt_tgsigqueueinfo. The signal machinery itself is `task::signal`.

use abi::Errno;

use super::args::{copy_in, copy_out, SysResult};
use crate::arch::trap::TrapFrame;
use crate::task::siginfo::{SigInfo, SIGINFO_BYTES, SI_TKILL};
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
        if a.handler == signal::SIG_IGN {
            signal::discard(&task::current_process(), sig);
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
                signal::send_from_current(t, sig);
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
        signal::send_thread_info(&t, signal::from_current(sig, SI_TKILL))?;
    }
    Ok(0)
}

/// A `siginfo_t` a process sends with rt_sigqueueinfo, rt_tgsigqueueinfo or
/// pidfd_send_signal: EFAULT for a bad pointer; EPERM when it claims to come from kill(2) or
/// the kernel (`si_code` >= 0) or from tkill (SI_TKILL) and goes to another process
/// (`to_self` false), as Linux refuses a forged sender.
pub(super) fn user_siginfo(ptr: usize, sig: usize, to_self: bool) -> Result<SigInfo, Errno> {
    let mut b = [0u8; SIGINFO_BYTES];
    copy_in(ptr, &mut b)?;
    let mut info = SigInfo::from_user(&b);
    if (info.code >= 0 || info.code == SI_TKILL) && !to_self {
        return Err(Errno::EPERM);
    }
    info.signo = sig as i32;
    Ok(info)
}

/// rt_sigqueueinfo: signal process `tgid` with the caller's siginfo (sigqueue(3) sends
/// SI_QUEUE and a value). EAGAIN when a real-time signal's siginfo is over the receiver's
/// RLIMIT_SIGPENDING.
pub fn sys_rt_sigqueueinfo(tgid: isize, sig: i32, uinfo: usize) -> SysResult {
    // Linux finds the process through any of its threads' ids (rt_sigqueueinfo01 names a
    // thread's tid); the signal is still the process's.
    let target = usize::try_from(tgid)
        .ok()
        .filter(|&pid| pid > 0)
        .and_then(|id| task::find(id).or_else(|| task::find_thread(id).map(|t| t.process.clone())));
    let to_self = target
        .as_ref()
        .is_some_and(|p| p.pid == task::current_pid());
    let info = user_siginfo(uinfo, sig as u32 as usize, to_self)?;
    let p = target.ok_or(Errno::ESRCH)?;
    let sig = usize::try_from(sig).map_err(|_| Errno::EINVAL)?;
    if sig > NSIG {
        return Err(Errno::EINVAL);
    }
    if !may_signal(&p) {
        return Err(Errno::EPERM);
    }
    if sig != 0 {
        signal::send_info(&p, info)?;
    }
    Ok(0)
}

/// rt_tgsigqueueinfo: signal thread `tid` of process `tgid` with the caller's siginfo.
pub fn sys_rt_tgsigqueueinfo(tgid: isize, tid: isize, sig: i32, uinfo: usize) -> SysResult {
    if tgid <= 0 || tid <= 0 {
        return Err(Errno::EINVAL);
    }
    let info = user_siginfo(
        uinfo,
        sig as u32 as usize,
        tgid == task::current_pid() as isize,
    )?;
    let sig = usize::try_from(sig).map_err(|_| Errno::EINVAL)?;
    if sig > NSIG {
        return Err(Errno::EINVAL);
    }
    let t = task::find_thread(tid as usize)
        .filter(|t| t.process.pid == tgid as usize)
        .ok_or(Errno::ESRCH)?;
    if !may_signal(&t.process) {
        return Err(Errno::EPERM);
    }
    if sig != 0 {
        signal::send_thread_info(&t, info)?;
    }
    Ok(0)
}

/// rt_sigtimedwait (sigwaitinfo, sigtimedwait, sigwait): take a pending signal of `set`
/// with its siginfo (into `uinfo` if given), waiting for one while none is pending: at most
/// the `timeout` if given (EAGAIN after it), and EINTR when a signal outside the set is
/// delivered first. The waited-for signals are unblocked meanwhile (so their generation
/// wakes the thread) but count as blocked for the ignore test, as Linux's `real_blocked`.
pub fn sys_rt_sigtimedwait(set: usize, uinfo: usize, timeout: usize, size: usize) -> SysResult {
    if size != SIGSET_SIZE {
        return Err(Errno::EINVAL);
    }
    let mut b = [0u8; 8];
    copy_in(set, &mut b)?;
    let mask = u64::from_le_bytes(b) & !(bit(SIGKILL) | bit(SIGSTOP));
    let deadline = match timeout {
        0 => None,
        ptr => Some(
            crate::arch::time::monotonic_ns().saturating_add(super::misc::read_timespec_ns(ptr)?),
        ),
    };
    let old = with_thread(|t| {
        let old = t.sig.blocked;
        t.sig.real_blocked = old;
        t.sig.blocked = old & !mask;
        old
    });
    let got = loop {
        if let Some(info) = signal::take_pending(mask) {
            break Ok(info);
        }
        if signal::pending() {
            break Err(Errno::EINTR);
        }
        match deadline {
            Some(d) if crate::arch::time::monotonic_ns() >= d => break Err(Errno::EAGAIN),
            Some(d) => crate::task::wait::sleep_until(d),
            None => crate::task::block_current(),
        }
    };
    with_thread(|t| {
        t.sig.blocked = old;
        t.sig.real_blocked = 0;
    });
    let info = got?;
    if uinfo != 0 {
        copy_out(uinfo, &info.to_user())?;
    }
    Ok(info.signo as usize)
}
