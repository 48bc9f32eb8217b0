//! Delivering signals (task layer): the default action, or a call of the handler with a
//! `rt_sigframe` pushed on the user stack, laid out as Linux riscv64 does (siginfo, then
//! ucontext with the saved mask and all registers), and `rt_sigreturn`.

use core::sync::atomic::Ordering::Relaxed;

use abi::Errno;

use super::exit::{exit_current, exit_fatal_signal, exit_thread};
use super::process::ExitStatus;
use super::sched::{current_pid, current_thread, with_current, with_thread};
use super::siginfo::SigInfo;
use super::sigstate::{
    bit, default_action, AltStack, Default_, SigAction, SA_NODEFER, SA_ONSTACK, SA_RESETHAND,
    SA_RESTART, SIGKILL, SIGSEGV, SIG_DFL, SIG_IGN,
};
use crate::arch::trap::TrapFrame;
use crate::mm::addr_space::AddrSpace;
use crate::mm::uaccess;

// The rt_sigframe layout (Linux riscv64): siginfo (128 bytes), then ucontext: uc_flags (8),
// uc_link (8), uc_stack (24), uc_sigmask (8, padded to 128 by glibc's larger sigset_t), then
// uc_mcontext at offset 176 (16-aligned): 32 registers (pc, x1..x31) and the FP state
// (f0..f31 as 64-bit, fcsr; 528 bytes for the largest variant).
pub(super) const SIGINFO_SIZE: usize = 128;

pub(super) const UC_SIGMASK: usize = 40;

pub(super) const UC_MCONTEXT: usize = 176;

pub(super) const MC_FP: usize = 256;

pub(super) const FP_STATE_SIZE: usize = 528;

pub(super) const UCONTEXT_SIZE: usize = UC_MCONTEXT + MC_FP + FP_STATE_SIZE;

pub(super) const FRAME_SIZE: usize = SIGINFO_SIZE + UCONTEXT_SIZE;

/// Deliver pending signals to the current thread before it returns to user mode. `restart`
/// is the original `a0` of a system call that returned [`ERESTARTSYS`]. A thread told to
/// exit (exit_group, execve in another thread) exits here.
pub fn deliver(tf: &mut TrapFrame, restart: Option<usize>) {
    let t = current_thread();
    let p = t.process.clone();
    loop {
        if t.must_exit() {
            drop(t);
            drop(p);
            exit_thread(ExitStatus::Signaled(SIGKILL as i32));
        }
        if p.stopped.load(Relaxed) {
            super::jobctl::wait_while_stopped(&p, &t);
        }
        let pend = t.sig_pending.load(Relaxed) | p.sig_pending.load(Relaxed);
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
        let info = super::signal::dequeue_for(&t, sig);
        let action = inner.sig.actions[sig - 1];
        if action.handler == SIG_IGN && sig != SIGKILL {
            continue;
        }
        if action.handler == SIG_DFL || sig == SIGKILL {
            match default_action(sig) {
                Default_::Ignore => continue,
                Default_::Stop => {
                    drop(ti);
                    drop(inner);
                    super::jobctl::stop(&p, sig);
                    continue;
                }
                _ => {}
            }
            drop(ti);
            drop(inner);
            drop(t);
            drop(p);
            // The default action ends the whole process (a fault in one thread too).
            exit_fatal_signal(sig, tf);
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
        let alt = ti.sig.alt;
        // SA_ONSTACK: the handler runs on the alternate stack unless the thread is on it
        // already; SS_AUTODISARM disables it until rt_sigreturn restores it from uc_stack.
        let stack_top = if action.flags & SA_ONSTACK != 0 && alt.size != 0 && !alt.on(tf.regs[2]) {
            if alt.autodisarm {
                ti.sig.alt = AltStack::default();
            }
            Some(alt.sp.wrapping_add(alt.size))
        } else {
            None
        };
        drop(ti);
        // SA_RESETHAND: the handler goes back to SIG_DFL; the flags and mask stay, as Linux
        // keeps them (sigaction01 reads SA_SIGINFO back after the first delivery).
        if action.flags & SA_RESETHAND != 0 {
            inner.sig.actions[sig - 1].handler = SigAction::default().handler;
        }
        let ok = push_frame(
            &mut inner.space,
            tf,
            &info,
            old_mask,
            &action,
            alt,
            stack_top,
        );
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
            exit_current(ExitStatus::Signaled(SIGSEGV as i32));
        }
        return;
    }
}

pub(super) fn restart_syscall(tf: &mut TrapFrame, a0: usize) {
    tf.regs[10] = a0;
    tf.sepc -= 4;
}

/// Push an rt_sigframe for `sig` and point the frame at the handler. False if the user stack
/// cannot take it.
pub(super) fn push_frame(
    space: &mut AddrSpace,
    tf: &mut TrapFrame,
    info: &SigInfo,
    old_mask: u64,
    action: &SigAction,
    alt: AltStack,
    stack_top: Option<usize>,
) -> bool {
    let sp = match stack_top.unwrap_or(tf.regs[2]).checked_sub(FRAME_SIZE) {
        Some(s) => s & !15,
        None => return false,
    };
    let mut frame = alloc::vec![0u8; FRAME_SIZE];
    frame[..SIGINFO_SIZE].copy_from_slice(&info.to_user());
    let uc = SIGINFO_SIZE;
    // uc_stack: the alternate stack as it was when the signal came (rt_sigreturn restores it).
    frame[uc + 16..uc + 40].copy_from_slice(&alt.to_user(tf.regs[2]));
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
    tf.regs[10] = info.signo as usize;
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
    let r = with_current(|p| uaccess::copy_in(&mut p.space, sp + SIGINFO_SIZE, &mut uc));
    if r.is_ok() {
        let mask = u64::from_le_bytes(uc[UC_SIGMASK..UC_SIGMASK + 8].try_into().unwrap_or([0; 8]));
        with_thread(|t| t.sig.set_blocked(mask));
    }
    if r.is_err() {
        crate::println!(
            "[kernel] pid {}: bad signal frame at {:#x}: killed",
            current_pid(),
            sp
        );
        exit_current(ExitStatus::Signaled(SIGSEGV as i32));
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
    // uc_stack: the alternate stack comes back as saved (or as the handler changed it), as
    // Linux's restore_altstack does; a stack_t sigaltstack would refuse is ignored, and
    // neither is it set while the restored sp is on the current one.
    let ss: [u8; 24] = uc[16..40].try_into().unwrap_or([0; 24]);
    if let Ok(alt) = AltStack::from_user(&ss) {
        with_thread(|t| {
            if !t.sig.alt.on(tf.regs[2]) {
                t.sig.alt = alt;
            }
        });
    }
    Ok(tf.regs[10])
}
