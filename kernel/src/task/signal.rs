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
//! ([`deliver`]): the default action (terminate, or ignore), or a call of the handler
//! with a `rt_sigframe` pushed on the user stack, laid out as Linux riscv64 does (siginfo,
//! then ucontext with the saved mask and all registers), returning through a two-instruction
//! trampoline page (`rt_sigreturn`) the loader maps at `arch::vdso::SIGRETURN_TRAMPOLINE` (Linux uses
//! its vDSO; ours, `arch::vdso`, holds only the clock). Stop signals (SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU) are accepted
//! but do not stop anything yet: there is no job control stop/continue.
//!
//! System calls that sleep return [`ERESTARTSYS`] when a signal interrupts them; delivery
//! turns that into a restart of the call (no handler ran, or the handler has `SA_RESTART`) or
//! into `EINTR`, as Linux does.

use alloc::sync::Arc;
use core::sync::atomic::Ordering::Relaxed;

use abi::Errno;

use super::{ExitStatus, Process, Thread};
use crate::arch::trap::TrapFrame;
use crate::mm::addr_space::AddrSpace;
use crate::mm::uaccess;

pub const NSIG: usize = 64;
pub const SIGINT: usize = 2;
pub const SIGQUIT: usize = 3;
pub const SIGILL: usize = 4;
pub const SIGTRAP: usize = 5;
pub const SIGBUS: usize = 7;
pub const SIGKILL: usize = 9;
pub const SIGSEGV: usize = 11;
pub const SIGPIPE: usize = 13;
pub const SIGCHLD: usize = 17;
pub const SIGCONT: usize = 18;
pub const SIGSTOP: usize = 19;
pub const SIGTSTP: usize = 20;
pub const SIGTTIN: usize = 21;
pub const SIGTTOU: usize = 22;
pub const SIGURG: usize = 23;
pub const SIGWINCH: usize = 28;

pub const SIG_DFL: usize = 0;
pub const SIG_IGN: usize = 1;
pub const SA_RESTART: u64 = 0x1000_0000;
pub const SA_NODEFER: u64 = 0x4000_0000;
pub const SA_RESETHAND: u64 = 0x8000_0000;

/// Kernel-internal: "interrupted, restart unless a handler without SA_RESTART runs".
pub const ERESTARTSYS: Errno = Errno(512);

/// The bit of signal `sig` (1..=64) in a mask.
pub const fn bit(sig: usize) -> u64 {
    1u64 << (sig - 1)
}

/// Signals that can be neither blocked, caught nor ignored.
const UNBLOCKABLE: u64 = bit(SIGKILL) | bit(SIGSTOP);

/// One signal's disposition (`struct sigaction` of asm-generic: handler, flags, mask).
#[derive(Clone, Copy, Debug, Default)]
pub struct SigAction {
    pub handler: usize,
    pub flags: u64,
    pub mask: u64,
}

/// What the default action of `sig` does.
#[derive(PartialEq, Eq)]
enum Default_ {
    Terminate,
    Ignore,
}

fn default_action(sig: usize) -> Default_ {
    match sig {
        SIGCHLD | SIGCONT | SIGURG | SIGWINCH => Default_::Ignore,
        // Stopping is not implemented: treated as ignored (see the module docs).
        SIGSTOP | SIGTSTP | SIGTTIN | SIGTTOU => Default_::Ignore,
        _ => Default_::Terminate,
    }
}

/// A process's signal actions, under its lock (shared by its threads).
#[derive(Clone)]
pub struct SigState {
    pub actions: [SigAction; NSIG],
}

impl Default for SigState {
    fn default() -> Self {
        SigState {
            actions: [SigAction::default(); NSIG],
        }
    }
}

/// A thread's signal mask, under the thread's lock.
#[derive(Clone, Default)]
pub struct SigMask {
    pub blocked: u64,
    /// The mask to restore after the handler that ends an `rt_sigsuspend`.
    pub saved_mask: Option<u64>,
}

impl SigMask {
    /// Set the blocked mask (SIGKILL and SIGSTOP can never be blocked).
    pub fn set_blocked(&mut self, mask: u64) {
        self.blocked = mask & !UNBLOCKABLE;
    }
}

impl SigState {
    /// Whether `sig` would be dropped at generation (ignored, explicitly or by default).
    fn ignores(&self, sig: usize) -> bool {
        let a = &self.actions[sig - 1];
        a.handler == SIG_IGN || (a.handler == SIG_DFL && default_action(sig) == Default_::Ignore)
    }

    /// execve: caught signals go back to their default action; ignored ones stay ignored;
    /// the mask stays.
    pub fn reset_for_exec(&mut self) {
        for a in self.actions.iter_mut() {
            if a.handler != SIG_IGN {
                *a = SigAction::default();
            }
        }
    }
}

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
            super::wake(t);
        }
    }
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
    super::wake(t);
}

/// Generate a signal the current thread caused itself (a fault): if it is blocked or
/// ignored, it is unblocked and reset to the default action first (Linux's `force_sig`), so
/// a program that cannot handle it dies of it (the whole process, by the default action).
pub fn force_current(sig: usize) {
    let t = super::current_thread();
    {
        let mut inner = t.process.inner.lock();
        let a = &mut inner.sig.actions[sig - 1];
        if a.handler == SIG_IGN {
            a.handler = SIG_DFL;
        }
    }
    t.inner.lock().sig.blocked &= !bit(sig);
    t.sig_pending.fetch_or(bit(sig), Relaxed);
}

/// Whether the current thread has a signal that is pending and not blocked, or must exit (a
/// sleeping system call should give up with `EINTR`/[`ERESTARTSYS`]).
pub fn pending() -> bool {
    let t = super::current_thread();
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
    let t = super::current_thread();
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
    let t = super::current_thread();
    t.sig_pending.load(Relaxed) | t.process.sig_pending.load(Relaxed)
}

// The rt_sigframe layout (Linux riscv64): siginfo (128 bytes), then ucontext: uc_flags (8),
// uc_link (8), uc_stack (24), uc_sigmask (8, padded to 128 by glibc's larger sigset_t), then
// uc_mcontext at offset 176 (16-aligned): 32 registers (pc, x1..x31) and the FP state
// (f0..f31 as 64-bit, fcsr; 528 bytes for the largest variant).
const SIGINFO_SIZE: usize = 128;
const UC_SIGMASK: usize = 40;
const UC_MCONTEXT: usize = 176;
const MC_FP: usize = 256;
const FP_STATE_SIZE: usize = 528;
const UCONTEXT_SIZE: usize = UC_MCONTEXT + MC_FP + FP_STATE_SIZE;
const FRAME_SIZE: usize = SIGINFO_SIZE + UCONTEXT_SIZE;

/// Deliver pending signals to the current thread before it returns to user mode. `restart`
/// is the original `a0` of a system call that returned [`ERESTARTSYS`]. A thread told to
/// exit (exit_group, execve in another thread) exits here.
pub fn deliver(tf: &mut TrapFrame, restart: Option<usize>) {
    let t = super::current_thread();
    let p = t.process.clone();
    loop {
        if t.must_exit() {
            drop(t);
            drop(p);
            super::exit_thread(ExitStatus::Signaled(SIGKILL as i32));
        }
        let own = t.sig_pending.load(Relaxed);
        let pend = own | p.sig_pending.load(Relaxed);
        let mut inner = p.inner.lock();
        let mut ti = t.inner.lock();
        let ready = pend & !ti.sig.blocked;
        if ready == 0 {
            if let Some(mask) = ti.sig.saved_mask.take() {
                ti.sig.blocked = mask;
            }
            drop(ti);
            drop(inner);
            if let Some(a0) = restart {
                restart_syscall(tf, a0);
            }
            return;
        }
        let sig = ready.trailing_zeros() as usize + 1;
        if own & bit(sig) != 0 {
            t.sig_pending.fetch_and(!bit(sig), Relaxed);
        } else {
            p.sig_pending.fetch_and(!bit(sig), Relaxed);
        }
        let action = inner.sig.actions[sig - 1];
        if action.handler == SIG_IGN && sig != SIGKILL {
            continue;
        }
        if action.handler == SIG_DFL || sig == SIGKILL {
            if default_action(sig) == Default_::Ignore {
                continue;
            }
            drop(ti);
            drop(inner);
            drop(t);
            drop(p);
            // The default action ends the whole process (a fault in one thread too).
            super::exit_current(ExitStatus::Signaled(sig as i32));
        }
        // A handler runs.
        match restart {
            Some(a0) if action.flags & SA_RESTART != 0 => restart_syscall(tf, a0),
            Some(_) => tf.regs[10] = (-(Errno::EINTR.0 as isize)) as usize,
            None => {}
        }
        let old_mask = ti.sig.saved_mask.take().unwrap_or(ti.sig.blocked);
        let mut new_mask = ti.sig.blocked | action.mask;
        if action.flags & SA_NODEFER == 0 {
            new_mask |= bit(sig);
        }
        ti.sig.set_blocked(new_mask);
        drop(ti);
        if action.flags & SA_RESETHAND != 0 {
            inner.sig.actions[sig - 1] = SigAction::default();
        }
        let ok = push_frame(&mut inner.space, tf, sig, old_mask, &action);
        drop(inner);
        if !ok {
            // No room for the frame: the program dies of SIGSEGV, as on Linux.
            crate::println!(
                "[kernel] pid {} tid {}: cannot deliver signal {} (bad stack {:#x}): killed",
                p.pid,
                t.tid,
                sig,
                tf.regs[2]
            );
            drop(t);
            drop(p);
            super::exit_current(ExitStatus::Signaled(SIGSEGV as i32));
        }
        return;
    }
}

fn restart_syscall(tf: &mut TrapFrame, a0: usize) {
    tf.regs[10] = a0;
    tf.sepc -= 4;
}

/// Push an rt_sigframe for `sig` and point the frame at the handler. False if the user stack
/// cannot take it.
fn push_frame(
    space: &mut AddrSpace,
    tf: &mut TrapFrame,
    sig: usize,
    old_mask: u64,
    action: &SigAction,
) -> bool {
    let sp = match tf.regs[2].checked_sub(FRAME_SIZE) {
        Some(s) => s & !15,
        None => return false,
    };
    let mut frame = alloc::vec![0u8; FRAME_SIZE];
    // siginfo: si_signo, si_errno, si_code (SI_USER = 0).
    frame[0..4].copy_from_slice(&(sig as i32).to_le_bytes());
    let uc = SIGINFO_SIZE;
    // uc_stack: ss_flags = SS_DISABLE (no alternate stack).
    frame[uc + 24..uc + 28].copy_from_slice(&2i32.to_le_bytes());
    frame[uc + UC_SIGMASK..uc + UC_SIGMASK + 8].copy_from_slice(&old_mask.to_le_bytes());
    let mc = uc + UC_MCONTEXT;
    frame[mc..mc + 8].copy_from_slice(&tf.sepc.to_le_bytes());
    for r in 1..32 {
        frame[mc + r * 8..mc + r * 8 + 8].copy_from_slice(&tf.regs[r].to_le_bytes());
    }
    let fp = mc + MC_FP;
    for r in 0..32 {
        frame[fp + r * 8..fp + r * 8 + 8].copy_from_slice(&tf.fregs[r].to_le_bytes());
    }
    frame[fp + 256..fp + 260].copy_from_slice(&(tf.fcsr as u32).to_le_bytes());
    if uaccess::copy_out(space, sp, &frame).is_err() {
        return false;
    }
    tf.regs[1] = crate::arch::vdso::SIGRETURN_TRAMPOLINE;
    tf.regs[2] = sp;
    tf.regs[10] = sig;
    tf.regs[11] = sp;
    tf.regs[12] = sp + uc;
    tf.sepc = action.handler;
    true
}

/// rt_sigreturn: restore the registers and mask saved by [`push_frame`]; the frame is at the
/// user's `sp`. Returns the restored `a0` (the dispatcher writes it back).
pub fn sigreturn(tf: &mut TrapFrame) -> Result<usize, Errno> {
    let sp = tf.regs[2];
    let mut uc = alloc::vec![0u8; UCONTEXT_SIZE];
    let r = super::with_current(|p| uaccess::copy_in(&mut p.space, sp + SIGINFO_SIZE, &mut uc));
    if r.is_ok() {
        let mask = u64::from_le_bytes(uc[UC_SIGMASK..UC_SIGMASK + 8].try_into().unwrap_or([0; 8]));
        super::with_thread(|t| t.sig.set_blocked(mask));
    }
    if r.is_err() {
        crate::println!(
            "[kernel] pid {}: bad signal frame at {:#x}: killed",
            super::current_pid(),
            sp
        );
        super::exit_current(ExitStatus::Signaled(SIGSEGV as i32));
    }
    let word =
        |off: usize| u64::from_le_bytes(uc[off..off + 8].try_into().unwrap_or([0; 8])) as usize;
    tf.sepc = word(UC_MCONTEXT);
    for r in 1..32 {
        tf.regs[r] = word(UC_MCONTEXT + r * 8);
    }
    let fp = UC_MCONTEXT + MC_FP;
    for r in 0..32 {
        tf.fregs[r] = word(fp + r * 8) as u64;
    }
    tf.fcsr = u32::from_le_bytes(uc[fp + 256..fp + 260].try_into().unwrap_or([0; 4])) as usize;
    crate::arch::trap::fp_state_changed(tf);
    Ok(tf.regs[10])
}
