//! Signals, with Linux's numbers, default actions, masks and user-stack frames.
//!
//! State: each process has a pending set of process-directed signals
//! (`Process::sig_pending`) and each thread one of thread-directed signals
//! (`Thread::sig_pending`), atomic words so the return-to-user path can test them without a
//! lock; the 64 actions are the process's (`sigstate::SigState`), the blocked set is each thread's
//! ([`SigMask`]). A signal is *generated* by [`send`] (the terminal's ^C, an interval
//! timer), [`send_from_current`] (kill, a write to a pipe without readers), [`send_info`]
//! (rt_sigqueueinfo, a POSIX timer, a child's exit) or [`send_thread_info`] (tgkill,
//! rt_tgsigqueueinfo; a fault is [`force_current`]): dropped at once if the target ignores
//! it, else marked pending with its siginfo queued beside the bit (`siginfo` says which are
//! kept and the RLIMIT_SIGPENDING rule), and sleeping threads that do not block it are
//! woken so their system calls can return `EINTR`. It is *delivered* just before a thread
//! that does not block it returns to user mode
//! (`sigframe::deliver`): the default action (terminate, ignore or stop), or a call of the handler
//! with a `rt_sigframe` pushed on the user stack, laid out as Linux riscv64 does (siginfo,
//! then ucontext with the saved mask and all registers), returning through a two-instruction
//! trampoline page (`rt_sigreturn`) the loader maps at `arch::vdso::SIGRETURN_TRAMPOLINE` (Linux uses
//! its vDSO; ours, `arch::vdso`, holds only the clock). Stop signals (SIGSTOP, SIGTSTP,
//! SIGTTIN, SIGTTOU) stop the process and SIGCONT continues it (`jobctl`).
//!
//! System calls that sleep return [`ERESTARTSYS`] when a signal interrupts them; delivery
//! turns that into a restart of the call (no handler ran, or the handler has `SA_RESTART`) or
//! into `EINTR`, as Linux does.
//!
//! Files: numbers, actions and masks are `sigstate` (re-exported here); generation and the
//! pending tests are here; delivery and `rt_sigreturn` are `sigframe`.

use alloc::sync::Arc;
use core::sync::atomic::AtomicU64;
use core::sync::atomic::Ordering::Relaxed;

use abi::Errno;

use super::process::{Process, Thread};
use super::sched::{current_thread, wake_or_kick};
use super::siginfo::{SigInfo, SigQueue, SIGRTMIN, SI_KERNEL, SI_USER};
use super::sigstate::{default_action, Default_};
use crate::arch::lockcheck::{rank, SpinLock};

pub use super::sigstate::{
    bit, AltStack, SigAction, SigMask, ERESTARTSYS, NSIG, SIGBUS, SIGILL, SIGINT, SIGKILL, SIGPIPE,
    SIGQUIT, SIGSEGV, SIGSTOP, SIGTRAP, SIGTSTP, SIG_DFL, SIG_IGN,
};

/// Generate signal `sig` (1..=64) for process `p` from the kernel (SI_KERNEL; a pipe's
/// SIGPIPE, the terminal's ^C, an interval timer).
pub fn send(p: &Arc<Process>, sig: usize) {
    if (1..=NSIG).contains(&sig) {
        let _ = send_info(p, SigInfo::kill(sig, SI_KERNEL, 0, 0));
    }
}

/// Generate signal `sig` for process `p` as sent by the current process (kill(2): SI_USER
/// with the sender's pid and real uid).
pub fn send_from_current(p: &Arc<Process>, sig: usize) {
    if (1..=NSIG).contains(&sig) {
        let _ = send_info(p, from_current(sig, SI_USER));
    }
}

/// The siginfo of signal `sig` with `code` sent by the current process.
pub fn from_current(sig: usize, code: i32) -> SigInfo {
    let me = current_thread();
    let uid = me.process.inner.lock().cred.uid;
    SigInfo::kill(sig, code, me.process.pid, uid)
}

/// The target's real uid and RLIMIT_SIGPENDING, or None when the signal is dropped at once:
/// the process is a zombie, or it ignores the signal and `blocked` (does the receiving
/// thread, or any thread, block it) is false.
fn admit(
    p: &Process,
    sig: usize,
    blocked: impl FnOnce(&[Arc<Thread>]) -> bool,
) -> Option<(u32, u64)> {
    let inner = p.inner.lock();
    if inner.zombie.is_some() {
        return None;
    }
    if sig != SIGKILL && inner.sig.ignores(sig) && !blocked(&inner.threads) {
        return None;
    }
    Some((inner.cred.uid, inner.limits.sigpending.0))
}

/// Whether a thread with mask `m` blocks `sig` for the ignore test (also while it waits for
/// it in rt_sigtimedwait).
fn blocks(m: &SigMask, sig: usize) -> bool {
    (m.blocked | m.real_blocked) & bit(sig) != 0
}

/// Make `info`'s signal pending in `word` with its siginfo in `queue` (see `siginfo`: a
/// standard signal already pending is dropped; past the limit a real-time signal with its
/// own siginfo is EAGAIN, any other stays pending without it).
fn enqueue(
    word: &AtomicU64,
    queue: &SpinLock<SigQueue, { rank::SIGQUEUE }>,
    info: SigInfo,
    (uid, limit): (u32, u64),
) -> Result<(), Errno> {
    let sig = info.signo as usize;
    let mut q = queue.lock();
    if sig < SIGRTMIN && word.load(Relaxed) & bit(sig) != 0 {
        return Ok(());
    }
    let force = sig < SIGRTMIN && info.code >= 0;
    if q.push(info, uid, limit, force).is_err() && sig >= SIGRTMIN && info.code != SI_USER {
        return Err(Errno::EAGAIN);
    }
    word.fetch_or(bit(sig), Relaxed);
    Ok(())
}

/// SIGCHLD's siginfo for child `p` of real user `uid` (`code` a CLD_* code, `status` its
/// exit code or signal), with its CPU time in clock ticks (USER_HZ 100).
pub(super) fn child_info(p: &Process, uid: u32, code: i32, status: i32) -> SigInfo {
    let cpu = p.cpu();
    let ticks = |ns: u64| ns / 10_000_000;
    SigInfo::child(
        code,
        p.pid,
        uid,
        status,
        ticks(cpu.user_ns()),
        ticks(cpu.sys_ns),
    )
}

/// Threads of stopped processes sleep here (`jobctl`); SIGCONT and SIGKILL wake them.
pub(super) static STOPPED: super::wait::WaitQueue = super::wait::WaitQueue::new();

/// The stop signals (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU).
const STOPS: u64 = bit(19) | bit(20) | bit(21) | bit(22);

/// Job control at `sig`'s generation for `p` (before it is made pending; `jobctl` has the
/// rules): SIGCONT continues a stopped process and drops its pending stop signals, a stop
/// signal drops a pending SIGCONT, SIGKILL wakes a stopped process so that it can die.
fn job_control(p: &Arc<Process>, sig: usize) {
    const SIGCONT: usize = 18;
    if bit(sig) & STOPS != 0 {
        discard(p, SIGCONT);
    } else if sig == SIGCONT {
        for s in 19..=22 {
            discard(p, s);
        }
        let continued = {
            let mut inner = p.inner.lock();
            let was = p.stopped.swap(false, Relaxed);
            if was {
                inner.job_report = Some(super::process::JobReport::Continued);
            }
            was
        };
        if continued {
            STOPPED.wake_all();
            notify_parent(p, super::siginfo::CLD_CONTINUED, SIGCONT as i32);
        }
    } else if sig == SIGKILL {
        STOPPED.wake_all();
    }
}

/// Tell `p`'s parent that `p` stopped or continued (`code` CLD_STOPPED or CLD_CONTINUED,
/// `status` the signal): its waits are woken, and it gets SIGCHLD unless its SIGCHLD action
/// has SA_NOCLDSTOP.
pub(super) fn notify_parent(p: &Arc<Process>, code: i32, status: i32) {
    let (ppid, uid) = {
        let i = p.inner.lock();
        (i.ppid, i.cred.uid)
    };
    let Some(parent) = super::sched::SCHED.lock().all.get(&ppid).cloned() else {
        return;
    };
    super::sched::wake_process(&parent);
    let quiet = parent.inner.lock().sig.actions[super::sigstate::SIGCHLD - 1].flags
        & super::sigstate::SA_NOCLDSTOP
        != 0;
    if !quiet {
        let _ = send_info(&parent, child_info(p, uid, code, status));
    }
}

/// Generate `info`'s signal (1..=64) for process `p` (process-directed: any thread that
/// does not block it may take it). EAGAIN when a real-time signal's siginfo is over the
/// limit.
pub fn send_info(p: &Arc<Process>, info: SigInfo) -> Result<(), Errno> {
    let sig = info.signo as usize;
    if !(1..=NSIG).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    let any_blocks =
        |threads: &[Arc<Thread>]| threads.iter().any(|t| blocks(&t.inner.lock().sig, sig));
    // Job control acts at generation, whether the signal is then kept or dropped.
    job_control(p, sig);
    let Some(charge) = admit(p, sig, any_blocks) else {
        return Ok(());
    };
    enqueue(&p.sig_pending, &p.sig_queue, info, charge)?;
    let threads = p.inner.lock().threads.clone();
    for t in &threads {
        if sig == SIGKILL || t.inner.lock().sig.blocked & bit(sig) == 0 {
            wake_or_kick(t);
        }
    }
    // A signalfd reader or poller waits for signals it blocks.
    super::wait::poll_wake();
    Ok(())
}

/// Generate `info`'s signal for one thread (tgkill, rt_tgsigqueueinfo, a timer).
pub fn send_thread_info(t: &Arc<Thread>, info: SigInfo) -> Result<(), Errno> {
    let sig = info.signo as usize;
    if !(1..=NSIG).contains(&sig) {
        return Err(Errno::EINVAL);
    }
    let blocked = |_: &[Arc<Thread>]| blocks(&t.inner.lock().sig, sig);
    job_control(&t.process, sig);
    let Some(charge) = admit(&t.process, sig, blocked) else {
        return Ok(());
    };
    enqueue(&t.sig_pending, &t.sig_queue, info, charge)?;
    wake_or_kick(t);
    super::wait::poll_wake();
    Ok(())
}

/// Take pending signal `sig` from `word` and `queue`: its oldest siginfo (SI_USER from pid 0
/// when it was lost to the limit).
fn dequeue(
    word: &AtomicU64,
    queue: &SpinLock<SigQueue, { rank::SIGQUEUE }>,
    sig: usize,
) -> SigInfo {
    let mut q = queue.lock();
    let (info, more) = q.take(sig);
    if !more {
        word.fetch_and(!bit(sig), Relaxed);
    }
    info.unwrap_or(SigInfo::kill(sig, SI_USER, 0, 0))
}

/// Take pending signal `sig` of thread `t`, its own before its process's.
pub(super) fn dequeue_for(t: &Thread, sig: usize) -> SigInfo {
    if t.sig_pending.load(Relaxed) & bit(sig) != 0 {
        dequeue(&t.sig_pending, &t.sig_queue, sig)
    } else {
        dequeue(&t.process.sig_pending, &t.process.sig_queue, sig)
    }
}

/// Drop every pending instance of `sig` of process `p` and its threads (it is now ignored).
pub fn discard(p: &Process, sig: usize) {
    let flush = |word: &AtomicU64, queue: &SpinLock<SigQueue, { rank::SIGQUEUE }>| {
        let mut q = queue.lock();
        q.discard(sig);
        word.fetch_and(!bit(sig), Relaxed);
    };
    flush(&p.sig_pending, &p.sig_queue);
    for t in p.inner.lock().threads.iter() {
        flush(&t.sig_pending, &t.sig_queue);
    }
}

/// Change the queued siginfo of `sig` that `pick` selects, in `p`'s queue or (`t`) one
/// thread's; whether there was one (a POSIX timer counts its overrun in its pending signal).
pub fn update_queued(
    p: &Process,
    t: Option<&Thread>,
    pick: impl Fn(&SigInfo) -> bool,
    change: impl FnOnce(&mut SigInfo),
) -> bool {
    let queue = t.map_or(&p.sig_queue, |t| &t.sig_queue);
    let mut q = queue.lock();
    match q.find_mut(pick) {
        Some(i) => {
            change(i);
            true
        }
        None => false,
    }
}

/// Generate a signal the current thread caused itself (a fault): if it is blocked or
/// ignored, it is unblocked and its action reset to the default first, even when a handler
/// is installed (Linux's `force_sig_info_to_task`), so a program that cannot take it dies of
/// it (the whole process, by the default action). With the handler kept, a process that
/// blocks SIGSEGV and unmaps its own code (stress-ng's vm-segv) did not die of SIGSEGV.
pub fn force_current(sig: usize) {
    force(SigInfo::kill(sig, SI_KERNEL, 0, 0));
}

/// A fault's signal, forced as [`force_current`] does, with Linux's `si_code` (SEGV_MAPERR,
/// BUS_ADRERR, ILL_ILLOPC...) and `si_addr` (the address the program touched, or the
/// instruction's for traps that have none), which a handler reads.
pub fn force_fault(sig: usize, code: i32, addr: usize) {
    force(SigInfo::fault(sig, code, addr));
}

fn force(info: SigInfo) {
    let sig = info.signo as usize;
    let t = current_thread();
    let blocked = t.inner.lock().sig.blocked & bit(sig) != 0;
    {
        let mut inner = t.process.inner.lock();
        let a = &mut inner.sig.actions[sig - 1];
        if a.handler == SIG_IGN || blocked {
            a.handler = SIG_DFL;
        }
    }
    t.inner.lock().sig.blocked &= !bit(sig);
    let _ = enqueue(&t.sig_pending, &t.sig_queue, info, (0, 0));
}

/// Whether the current thread has a signal that is pending and not blocked, or must exit (a
/// sleeping system call should give up with `EINTR`/[`ERESTARTSYS`]).
pub fn pending() -> bool {
    let t = current_thread();
    if t.must_exit() {
        return true;
    }
    let pend = t.sig_pending.load(Relaxed) | t.process.sig_pending.load(Relaxed);
    pend != 0 && pend & !t.inner.lock().sig.blocked != 0
}

/// Whether the current thread will die when it next returns to user mode: it must exit, or
/// SIGKILL is pending, or a pending signal it does not block has the default action
/// `Terminate` (Linux's `fatal_signal_pending`, for waits that only such a signal ends).
pub fn fatal_pending() -> bool {
    let t = current_thread();
    if t.must_exit() {
        return true;
    }
    let pend = t.sig_pending.load(Relaxed) | t.process.sig_pending.load(Relaxed);
    if pend & bit(SIGKILL) != 0 {
        return true;
    }
    let deliverable = pend & !t.inner.lock().sig.blocked;
    if deliverable == 0 {
        return false;
    }
    let inner = t.process.inner.lock();
    (1..=NSIG).any(|sig| {
        deliverable & bit(sig) != 0
            && inner.sig.actions[sig - 1].handler == SIG_DFL
            && default_action(sig) == Default_::Terminate
    })
}

/// The signals pending for the current thread, its own and its process's (rt_sigpending).
pub fn pending_set() -> u64 {
    let t = current_thread();
    t.sig_pending.load(Relaxed) | t.process.sig_pending.load(Relaxed)
}

/// Take the lowest signal of `mask` pending for the current thread, its own before its
/// process's, with its siginfo (what a signalfd read or sigtimedwait consumes instead of a
/// delivery).
pub fn take_pending(mask: u64) -> Option<SigInfo> {
    let t = current_thread();
    for word in [&t.sig_pending, &t.process.sig_pending] {
        let pend = word.load(Relaxed) & mask;
        if pend != 0 {
            return Some(dequeue_for(&t, pend.trailing_zeros() as usize + 1));
        }
    }
    None
}
