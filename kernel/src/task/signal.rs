//! Signals, with Linux's numbers, default actions, masks and user-stack frames.
//!
//! State: each process has a pending set of process-directed signals
//! (`Process::sig_pending`) and each thread one of thread-directed signals
//! (`Thread::sig_pending`), atomic words so the return-to-user path can test them without a
//! lock; the 64 actions are the process's ([`SigState`]), the blocked set is each thread's
//! ([`SigMask`]). A signal is *generated* by [`send`] (kill, the terminal's ^C, a child's exit,
//! a write to a pipe without readers) or [`send_thread`] (tgkill, a fault): dropped at once if
//! the target ignores it, else marked pending, and sleeping threads that do not block it are
//! woken so their system calls can return `EINTR`. It is *delivered* just before a thread
//! that does not block it returns to user mode
//! (`sigframe::deliver`): the default action (terminate, or ignore), or a call of the handler
//! with a `rt_sigframe` pushed on the user stack, laid out as Linux riscv64 does (siginfo,
//! then ucontext with the saved mask and all registers), returning through a two-instruction
//! trampoline page (`rt_sigreturn`) the loader maps at `arch::vdso::SIGRETURN_TRAMPOLINE` (Linux uses
//! its vDSO; ours, `arch::vdso`, holds only the clock). Stop signals (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) are accepted
//! but do not stop anything yet: there is no job control stop/continue.
//!
//! System calls that sleep return [`ERESTARTSYS`] when a signal interrupts them; delivery
//! turns that into a restart of the call (no handler ran, or the handler has `SA_RESTART`) or
//! into `EINTR`, as Linux does.
//!
//! Files: numbers, actions and masks are `sigstate` (re-exported here); generation and the
//! pending tests are here; delivery and `rt_sigreturn` are `sigframe`.

use alloc::sync::Arc;
use core::sync::atomic::Ordering::Relaxed;

use super::process::{Process, Thread};
use super::sched::{current_thread, wake_or_kick};
use super::sigstate::{default_action, Default_};

pub use super::sigstate::{
    bit, AltStack, SigAction, SigMask, SigState, ERESTARTSYS, NSIG, SIGBUS, SIGCHLD, SIGILL,
    SIGINT, SIGKILL, SIGPIPE, SIGQUIT, SIGSEGV, SIGSTOP, SIGTRAP, SIGTSTP, SIG_DFL, SIG_IGN,
};

/// Generate signal `sig` (1..=64) for process `p` (process-directed: any thread that does not
/// block it may take it).
pub fn send(p: &Arc<Process>, sig: usize) {
    if sig == 0 || sig > NSIG {
        return;
    }
    let threads = {
        let inner = p.inner.lock();
        if inner.zombie.is_some() {
            return;
        }
        let blocked_somewhere = inner
            .threads
            .iter()
            .any(|t| t.inner.lock().sig.blocked & bit(sig) != 0);
        if sig != SIGKILL && inner.sig.ignores(sig) && !blocked_somewhere {
            return;
        }
        inner.threads.clone()
    };
    p.sig_pending.fetch_or(bit(sig), Relaxed);
    for t in &threads {
        if sig == SIGKILL || t.inner.lock().sig.blocked & bit(sig) == 0 {
            wake_or_kick(t);
        }
    }
    // A signalfd reader or poller waits for signals it blocks.
    super::wait::poll_wake();
}

/// Generate signal `sig` (1..=64) for one thread (tgkill).
pub fn send_thread(t: &Arc<Thread>, sig: usize) {
    if sig == 0 || sig > NSIG {
        return;
    }
    {
        let inner = t.process.inner.lock();
        if inner.zombie.is_some() {
            return;
        }
        if sig != SIGKILL && inner.sig.ignores(sig) && t.inner.lock().sig.blocked & bit(sig) == 0 {
            return;
        }
    }
    t.sig_pending.fetch_or(bit(sig), Relaxed);
    wake_or_kick(t);
    super::wait::poll_wake();
}

/// Generate a signal the current thread caused itself (a fault): if it is blocked or
/// ignored, it is unblocked and its action reset to the default first, even when a handler
/// is installed (Linux's `force_sig_info_to_task`), so a program that cannot take it dies of
/// it (the whole process, by the default action). With the handler kept, a process that
/// blocks SIGSEGV and unmaps its own code (stress-ng's vm-segv) did not die of SIGSEGV.
pub fn force_current(sig: usize) {
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
    t.sig_pending.fetch_or(bit(sig), Relaxed);
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
/// process's (what a signalfd read consumes instead of a delivery).
pub fn take_pending(mask: u64) -> Option<usize> {
    let t = current_thread();
    for word in [&t.sig_pending, &t.process.sig_pending] {
        loop {
            let pend = word.load(Relaxed) & mask;
            if pend == 0 {
                break;
            }
            let b = pend & pend.wrapping_neg();
            if word.fetch_and(!b, Relaxed) & b != 0 {
                return Some(b.trailing_zeros() as usize + 1);
            }
        }
    }
    None
}
